// Batched matmul: the BLAS path and the small-product path against the plain-loop reference.
#include "matmul.hpp"

#include <catch2/catch.hpp>

#include "allclose.hpp"
#include "base/random.hpp"

using attn::Tensor3;
using attn::to_array;
using attn::testing::Tolerance;

namespace {
const Tolerance kTolerance{1e-5, 1e-4};

struct Case {
  std::size_t batch, rows, inner, cols;
};
}  // namespace

TEST_CASE("batched_matmul equals the plain-loop reference", "[matmul]") {
  // Odd sizes, 31/32/33 edges, and sizes on both sides of torch's small-product threshold.
  const Case cases[] = {{1, 1, 1, 1},    {1, 5, 6, 5},    {2, 5, 12, 7},
                        {3, 7, 4, 7},    {2, 31, 32, 33}, {1, 33, 31, 32},
                        {2, 64, 16, 64}, {1, 3, 100, 2},  {4, 1, 128, 1}};
  attn::Rng rng(42);
  for (const Case& c : cases) {
    DYNAMIC_SECTION("(" << c.batch << "," << c.rows << "," << c.inner << ") @ (" << c.batch << ","
                        << c.inner << "," << c.cols << ")") {
      const Tensor3 a = attn::randn(rng, c.batch, c.rows, c.inner);
      const Tensor3 b = attn::randn(rng, c.batch, c.inner, c.cols);
      const Tensor3 bt = attn::randn(rng, c.batch, c.cols, c.inner);
      CHECK_ALLCLOSE(to_array(attn::batched_matmul(a, b)),
                     to_array(attn::batched_matmul_reference(a, b)), kTolerance);
      CHECK_ALLCLOSE(to_array(attn::batched_matmul_transposed(a, bt)),
                     to_array(attn::batched_matmul_transposed_reference(a, bt)), kTolerance);
    }
  }
}

TEST_CASE("the transposed product equals the product with an explicit transpose", "[matmul]") {
  attn::Rng rng(7);
  const Tensor3 a = attn::randn(rng, 2, 9, 13), b = attn::randn(rng, 2, 11, 13);
  Tensor3 bt({2, 13, 11});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t r = 0; r < 11; ++r)
      for (std::size_t k = 0; k < 13; ++k)
        bt(i, k, r) = b(i, r, k);
  CHECK_ALLCLOSE(to_array(attn::batched_matmul_transposed(a, b)),
                 to_array(attn::batched_matmul(a, bt)), kTolerance);
}

TEST_CASE("a product with an empty axis is an empty or zero result", "[matmul]") {
  const Tensor3 a = xt::zeros<float>({2, 3, 0}), b = xt::zeros<float>({2, 0, 4});
  const Tensor3 c = attn::batched_matmul(a, b);
  REQUIRE(c.shape(0) == 2);
  REQUIRE(c.shape(2) == 4);
  for (float v : c)
    CHECK(v == 0.0f);
}

TEST_CASE("mismatched shapes throw attn::Error naming the function and the shapes", "[matmul]") {
  const Tensor3 a = xt::zeros<float>({2, 5, 12}), b = xt::zeros<float>({2, 6, 5});
  CHECK_THROWS_WITH(attn::batched_matmul(a, b), Catch::Contains("[batched_matmul]") &&
                                                    Catch::Contains("(2, 5, 12) @ (2, 6, 5)"));
  const Tensor3 other_batch = xt::zeros<float>({3, 12, 5});
  CHECK_THROWS_AS(attn::batched_matmul(a, other_batch), attn::Error);
  CHECK_THROWS_WITH(attn::batched_matmul_transposed(a, b),
                    Catch::Contains("[batched_matmul_transposed]"));
}
