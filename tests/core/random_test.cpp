// The seeded generator: the same numbers on every machine, and a standard normal.
#include "base/random.hpp"

#include <cmath>

#include <catch2/catch.hpp>

TEST_CASE("the generator's first numbers are pinned", "[random]") {
  // These values define every lesson's input: if they change, every golden file changes.
  attn::Rng rng(0);
  const attn::Tensor2 x = attn::randn_matrix(rng, 1, 4);
  CHECK(x(0, 0) == 0.5981026f);
  CHECK(x(0, 1) == 1.46346f);
  CHECK(x(0, 2) == -0.89505255f);
  CHECK(x(0, 3) == -0.18806277f);
}

TEST_CASE("the same seed gives the same numbers, another seed others", "[random]") {
  attn::Rng a(123), b(123), c(124);
  bool any_differs = false;
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t va = a.next_u64(), vc = c.next_u64();
    CHECK(va == b.next_u64());
    any_differs = any_differs || va != vc;
  }
  CHECK(any_differs);
}

TEST_CASE("uniform lies in [0, 1) and normal has mean 0 and variance 1", "[random]") {
  attn::Rng rng(5);
  const int n = 200000;
  double sum = 0.0, squares = 0.0, fourth = 0.0;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    const double z = rng.normal();
    sum += z, squares += z * z, fourth += z * z * z * z;
  }
  const double mean = sum / n, variance = squares / n - mean * mean;
  // Standard errors at n = 200000: mean 0.0022, variance 0.0032, fourth moment 0.023.
  CHECK(std::fabs(mean) < 0.015);
  CHECK(std::fabs(variance - 1.0) < 0.02);
  CHECK(std::fabs(fourth / n - 3.0) < 0.15);
}
