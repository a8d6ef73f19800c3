// Dot-product self-attention: PyTorch's numbers and the invariants lesson 01 teaches.
#include "dot_product.hpp"

#include <cmath>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/budget.hpp"
#include "base/random.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"

using attn::Tensor3;

TEST_CASE("dot_product_attention equals the notebooks' PyTorch code", "[dot-product]") {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("dot-product/cases.json")));
  REQUIRE(cases.size() >= 4);
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      const auto x = attn::to_tensor<3>(attn::read_npy(attn::testing::fixture_path(
                                            "dot-product/" + c["input"].get<std::string>())),
                                        "input");
      const auto expected = attn::read_npy(
          attn::testing::fixture_path("dot-product/" + c["output"].get<std::string>()));
      CHECK_ALLCLOSE(attn::to_array(attn::dot_product_attention(x).output), expected);
    }
  }
}

TEST_CASE("scaled attention equals PyTorch's division by sqrt(D)", "[dot-product][scaling]") {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("scaling/cases.json")));
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      const auto x = attn::to_tensor<3>(
          attn::read_npy(attn::testing::fixture_path("scaling/" + c["input"].get<std::string>())),
          "input");
      const auto expected =
          attn::read_npy(attn::testing::fixture_path("scaling/" + c["output"].get<std::string>()));
      const float root = std::sqrt(static_cast<float>(x.shape(2)));
      CHECK_ALLCLOSE(attn::to_array(attn::dot_product_attention(x, root).output), expected);
    }
  }
}

TEST_CASE("self-attention without positions is permutation-equivariant", "[dot-product]") {
  attn::Rng rng(11);
  const Tensor3 x = attn::randn(rng, 2, 5, 12);
  const std::vector<std::size_t> order = {3, 0, 4, 1, 2};
  const Tensor3 a = attn::dot_product_attention(attn::permute_tokens(x, order)).output;
  const Tensor3 b = attn::permute_tokens(attn::dot_product_attention(x).output, order);
  CHECK_ALLCLOSE(attn::to_array(a), attn::to_array(b), attn::testing::Tolerance{1e-5, 1e-4});
}

TEST_CASE("each output is a weighted average: rows of W sum to 1 and outputs stay in range",
          "[dot-product]") {
  attn::Rng rng(12);
  const Tensor3 x = attn::randn(rng, 2, 5, 12);
  const attn::DotProductSteps s = attn::dot_product_attention(x);
  REQUIRE(s.weights.shape(1) == 5);
  REQUIRE(s.weights.shape(2) == 5);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 5; ++i) {
      float sum = 0.0f;
      for (std::size_t j = 0; j < 5; ++j)
        sum += s.weights(b, i, j);
      CHECK(std::fabs(sum - 1.0f) <= 1e-6f);
      for (std::size_t d = 0; d < 12; ++d) {
        float lo = INFINITY, hi = -INFINITY;
        for (std::size_t j = 0; j < 5; ++j)
          lo = std::min(lo, x(b, j, d)), hi = std::max(hi, x(b, j, d));
        CHECK(s.output(b, i, d) >= lo - 1e-5f);
        CHECK(s.output(b, i, d) <= hi + 1e-5f);
      }
    }
}

TEST_CASE("permute_tokens refuses a bad order", "[dot-product]") {
  const Tensor3 x = xt::zeros<float>({1, 3, 2});
  CHECK_THROWS_WITH(attn::permute_tokens(x, {0, 1}), Catch::Contains("[permute_tokens]"));
  CHECK_THROWS_WITH(attn::permute_tokens(x, {0, 1, 3}), Catch::Contains("past T = 3"));
}

TEST_CASE("the memory limit refuses absurd sizes before anything is allocated", "[budget]") {
  constexpr std::size_t kGiB = std::size_t{1} << 30;
  CHECK_NOTHROW(attn::check_budget("test", {{"X", {1, 5, 6}}}, kGiB));
  CHECK_THROWS_WITH(
      attn::check_budget("test", {{"X", {1, 5, 6}}, {"scores", {64, 4096, 4096}}}, kGiB),
      Catch::Contains("[test]") && Catch::Contains("need about 4 GiB") &&
          Catch::Contains("scores (64, 4096, 4096)") && Catch::Contains("memory limit of 1 GiB") &&
          Catch::Contains("use smaller sizes"));
  // Exactly at the limit is allowed; one element more is not.
  CHECK_NOTHROW(attn::check_budget("test", {{"X", {256, 1024, 1024}}}, kGiB));
  CHECK_THROWS(attn::check_budget("test", {{"X", {256, 1024, 1024}}, {"one more", {1}}}, kGiB));
  // Sizes whose product overflows size_t are refused, not wrapped around.
  const std::size_t huge = std::size_t{1} << 40;
  CHECK_THROWS_WITH(attn::check_budget("test", {{"X", {huge, huge, huge}}}, kGiB),
                    Catch::Contains("more than 2^64"));
  CHECK_NOTHROW(attn::check_budget("test", {{"empty", {0, huge, huge}}}, kGiB));
}

TEST_CASE("memory sizes are read with binary units and refused with an example", "[budget]") {
  CHECK(attn::parse_memory_size("512M", "--max-memory") == std::size_t{512} << 20);
  CHECK(attn::parse_memory_size("2G", "--max-memory") == std::size_t{2} << 30);
  CHECK(attn::parse_memory_size("2gib", "--max-memory") == std::size_t{2} << 30);
  CHECK(attn::parse_memory_size("1.5GB", "--max-memory") == std::size_t{3} << 29);
  CHECK(attn::parse_memory_size("64k", "--max-memory") == std::size_t{64} << 10);
  CHECK(attn::parse_memory_size("100000", "--max-memory") == 100000);
  for (const char* bad : {"", "G", "-1G", "12X", "1.2.3M", "1e9", "2 G", "0", "0.1"}) {
    INFO(bad);
    CHECK_THROWS_WITH(attn::parse_memory_size(bad, "--max-memory"),
                      Catch::Contains("--max-memory") && Catch::Contains("512M or 2G"));
  }
  CHECK(attn::format_bytes(1536) == "1.5 KiB");
  CHECK(attn::format_bytes(3.0 * (1 << 30)) == "3 GiB");
  CHECK(attn::format_bytes(12) == "12 bytes");
  // The default is half of what this machine (or its cgroup) offers: never zero.
  CHECK(attn::default_memory_limit() > 0);
}
