// Softmax over the last axis: PyTorch's numbers, its invariants, masks and the exp it uses.
#include "softmax.hpp"

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/random.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "kernels/torch_order.hpp"

using attn::Tensor3;

TEST_CASE("softmax equals torch.softmax on the PyTorch-made fixtures", "[softmax]") {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("softmax/cases.json")));
  for (const auto& c : cases) {
    if (!c["args"].empty()) continue;  // temperature and mask cases run through the CLI tests
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      const auto input =
          attn::read_npy(attn::testing::fixture_path("softmax/" + c["input"].get<std::string>()));
      const auto expected =
          attn::read_npy(attn::testing::fixture_path("softmax/" + c["output"].get<std::string>()));
      CHECK_ALLCLOSE(attn::to_array(attn::softmax(attn::to_tensor<3>(input, "input"))), expected);
    }
  }
}

TEST_CASE("softmax is its definition, exp(x - max) / sum, within float32's rounding", "[softmax]") {
  // Row lengths on both sides of the kernels' 8 lanes, large scores, and a fully masked row.
  attn::Rng rng(17);
  for (std::size_t n : {1u, 7u, 8u, 9u, 33u, 130u}) {
    Tensor3 scores = attn::randn(rng, 2, 3, n, 30.0f);
    for (std::size_t j = 0; j < n; ++j)
      scores(1, 2, j) = -std::numeric_limits<float>::infinity();
    INFO("n = " << n);
    CHECK_ALLCLOSE(attn::to_array(attn::softmax(scores)),
                   attn::to_array(attn::softmax_reference(scores)),
                   attn::testing::Tolerance{1e-7, 1e-5});
  }
}

TEST_CASE("rows of a softmax sum to 1 and lie in [0, 1] on odd shapes", "[softmax]") {
  attn::Rng rng(3);
  const Tensor3 scores = attn::randn(rng, 2, 5, 12, 4.0f);
  const Tensor3 w = attn::softmax(scores);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 5; ++i) {
      float sum = 0.0f;
      for (std::size_t j = 0; j < 12; ++j) {
        CHECK(w(b, i, j) >= 0.0f);
        CHECK(w(b, i, j) <= 1.0f);
        sum += w(b, i, j);
      }
      CHECK(std::fabs(sum - 1.0f) <= 1e-6f);
    }
}

TEST_CASE("adding a constant to a row does not change its softmax", "[softmax]") {
  attn::Rng rng(4);
  const Tensor3 scores = attn::randn(rng, 1, 3, 7);
  const Tensor3 shifted = scores + 50.0f;
  CHECK_ALLCLOSE(attn::to_array(attn::softmax(shifted)), attn::to_array(attn::softmax(scores)),
                 attn::testing::Tolerance{1e-5, 1e-4});
}

TEST_CASE("large scores do not overflow, but the naive softmax does", "[softmax]") {
  Tensor3 scores({1, 1, 3});
  scores(0, 0, 0) = 88.0f, scores(0, 0, 1) = 89.0f, scores(0, 0, 2) = 90.0f;
  const Tensor3 stable = attn::softmax(scores), naive = attn::softmax_naive(scores);
  CHECK(stable(0, 0, 0) == Approx(0.0900306).epsilon(1e-5));
  CHECK(stable(0, 0, 2) == Approx(0.6652410).epsilon(1e-5));
  CHECK(std::isnan(naive(0, 0, 1)));
  CHECK(std::isnan(naive(0, 0, 2)));
}

TEST_CASE("a causal mask zeroes the upper triangle and a fully masked row is zeros, not NaN",
          "[softmax][mask]") {
  attn::Rng rng(9);
  const Tensor3 scores = attn::randn(rng, 2, 5, 5);
  const Tensor3 w = attn::softmax(attn::apply_mask(scores, attn::causal_mask(5)));
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = i + 1; j < 5; ++j)
        CHECK(w(b, i, j) == 0.0f);
  CHECK(w(0, 0, 0) == 1.0f);  // the first query sees only itself

  Tensor3 masked = scores;
  for (std::size_t j = 0; j < 5; ++j)
    masked(1, 2, j) = -std::numeric_limits<float>::infinity();
  CHECK(attn::count_fully_masked_rows(masked) == 1);
  const Tensor3 m = attn::softmax(masked);
  for (std::size_t j = 0; j < 5; ++j)
    CHECK(m(1, 2, j) == 0.0f);
  for (float v : m)
    CHECK_FALSE(std::isnan(v));
}

TEST_CASE("apply_mask refuses a mask of the wrong shape", "[softmax][mask]") {
  const Tensor3 scores = xt::zeros<float>({2, 4, 6});
  CHECK_THROWS_WITH(attn::apply_mask(scores, attn::causal_mask(4)),
                    Catch::Contains("[apply_mask]") && Catch::Contains("(2, 4, 6)"));
}

TEST_CASE("torch_exp stays within 1 ulp of exp and handles the edges", "[softmax][exp]") {
  for (float x = -103.0f; x < 88.0f; x += 0.0137f) {
    const double exact = std::exp(static_cast<double>(x));
    const float got = attn::torch_exp(x);
    const double ulp =
        std::nextafter(static_cast<float>(exact), INFINITY) - static_cast<float>(exact);
    REQUIRE(std::fabs(got - exact) <= 1.0 * ulp);
  }
  CHECK(attn::torch_exp(0.0f) == 1.0f);
  CHECK(attn::torch_exp(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(std::isinf(attn::torch_exp(89.0f)));
  CHECK(std::isnan(attn::torch_exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("a NaN score makes its whole row NaN, as in torch, and is not taken for a masked row",
          "[softmax]") {
  Tensor3 scores = xt::zeros<float>({1, 2, 3});
  scores(0, 0, 1) = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t j = 0; j < 3; ++j)
    scores(0, 1, j) = std::numeric_limits<float>::quiet_NaN();
  const Tensor3 w = attn::softmax(scores);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      CHECK(std::isnan(w(0, i, j)));
}
