// Grades lesson 06's exercise against PyTorch (data/generator/exercise_positional_encoding.py) and
// against what any sinusoidal table must satisfy. Tags: [positional-encoding] the lesson,
// [points=N] the marks, [.hidden] shown after the due date. The student's functions are called only
// through STUDENT(...), and expected values are used only in checks (see
// course/harness/grading.hpp).
#include <cmath>
#include <stdexcept>
#include <string>

#include <xtensor/xbuilder.hpp>

#include "grading.hpp"
#include "positional_encoding_exercise.hpp"

using attn::SinusoidalTable;
using attn::Tensor2;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

// std::sin and torch's SLEEF sin differ in the last bit, and an angle p * div_term carries the
// rounding of div_term times p: a few 1e-6 at p = 160.
constexpr attn::testing::Tolerance kTableTolerance{2e-5, 1e-4};
constexpr attn::testing::Tolerance kSumTolerance{1e-6, 1e-6};

void check_table(std::size_t positions, std::size_t width) {
  const std::string name =
      "positional-encoding/p" + std::to_string(positions) + "_d" + std::to_string(width);
  const std::string call =
      "sinusoidal_table(" + std::to_string(positions) + ", " + std::to_string(width) + ")";
  const SinusoidalTable table = STUDENT(attn::exercise::sinusoidal_table(positions, width));
  check_close(call + ".div_term", table.div_term, expected<1>(name + "_div_term"), kTableTolerance);
  check_close(call + ".angles", table.angles, expected<2>(name + "_angles"), kTableTolerance);
  check_close(call + ".pe", table.pe, expected<2>(name + "_pe"), kTableTolerance);
}

}  // namespace

TEST_CASE("sinusoidal_table matches PyTorch for 6 positions of width 8",
          "[positional-encoding][points=2]") {
  check_table(6, 8);
}

TEST_CASE("sinusoidal_table matches PyTorch for odd widths 7 5 and 1",
          "[positional-encoding][points=2]") {
  check_table(5, 7);
  check_table(3, 5);
  check_table(4, 1);
}

TEST_CASE("sinusoidal_table row 0 alternates sin 0 and cos 0", "[positional-encoding][points=1]") {
  for (std::size_t width : {8u, 7u}) {
    const SinusoidalTable table = STUDENT(attn::exercise::sinusoidal_table(3, width));
    INFO("sinusoidal_table(3, " << width << ")");
    REQUIRE(table.div_term.shape(0) == (width + 1) / 2);
    REQUIRE(table.angles.shape(0) == 3);
    REQUIRE(table.angles.shape(1) == (width + 1) / 2);
    REQUIRE(table.pe.shape(0) == 3);
    REQUIRE(table.pe.shape(1) == width);
    for (std::size_t j = 0; j < width; ++j) {
      const float expected = j % 2 == 0 ? 0.0f : 1.0f;
      INFO("pe(0, " << j << ") = " << table.pe(0, j) << ", expected " << expected);
      CHECK(table.pe(0, j) == expected);
    }
  }
}

TEST_CASE("sinusoidal_table row dot products depend only on the offset",
          "[positional-encoding][points=1]") {
  // sin(pw) sin(qw) + cos(pw) cos(qw) = cos((q - p) w): summed over the D/2 frequencies.
  constexpr std::size_t kPositions = 12, kWidth = 10;
  const SinusoidalTable table = STUDENT(attn::exercise::sinusoidal_table(kPositions, kWidth));
  const Tensor2& pe = table.pe;  // (P,D)
  REQUIRE(pe.shape(0) == kPositions);
  REQUIRE(pe.shape(1) == kWidth);
  for (std::size_t p = 0; p < kPositions; ++p) {
    for (std::size_t q = p; q < kPositions; ++q) {
      double dot = 0.0, expected = 0.0;
      for (std::size_t j = 0; j < kWidth; ++j)
        dot += static_cast<double>(pe(p, j)) * pe(q, j);
      for (std::size_t i = 0; i < kWidth / 2; ++i) {
        const double frequency = std::pow(10000.0, -2.0 * static_cast<double>(i) / kWidth);
        expected += std::cos(static_cast<double>(q - p) * frequency);
      }
      INFO("pe(" << p << ", :) . pe(" << q << ", :) = " << dot << ", expected " << expected);
      CHECK(std::fabs(dot - expected) < 1e-4);
    }
  }
}

TEST_CASE("sinusoidal_table matches PyTorch for 64 positions of width 12",
          "[positional-encoding][points=2]") {
  check_table(64, 12);
}

TEST_CASE("sinusoidal_table refuses zero positions or zero width",
          "[positional-encoding][points=1]") {
  // One position and width one are sizes that fit.
  check_table(4, 1);
  const SinusoidalTable one = STUDENT(attn::exercise::sinusoidal_table(1, 8));
  check_close("sinusoidal_table(1, 8).pe", one.pe,
              Tensor2{{0.0f, 1.0f, 0.0f, 1.0f, 0.0f, 1.0f, 0.0f, 1.0f}});
  CHECK_THROWS_AS(STUDENT(attn::exercise::sinusoidal_table(0, 8)), std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::sinusoidal_table(5, 0)), std::invalid_argument);
}

TEST_CASE("add_positions matches PyTorch x plus pe for x of shape 2x5x7",
          "[positional-encoding][points=2]") {
  const Tensor3 x = input<3>("positional-encoding/b2_t5_d7_x");
  const Tensor2 pe = input<2>("positional-encoding/b2_t5_d7_pe");  // PyTorch's table (5,7)
  const Tensor3 out = STUDENT(attn::exercise::add_positions(x, pe));
  check_close("add_positions(x (2,5,7), pe (5,7))", out,
              expected<3>("positional-encoding/b2_t5_d7_out"), kSumTolerance);
}

TEST_CASE("add_positions adds the same rows to every sequence of the batch",
          "[positional-encoding][points=1]") {
  const Tensor3 x = input<3>("positional-encoding/b3_t4_d6_x");
  Tensor2 pe({4, 6});
  for (std::size_t t = 0; t < 4; ++t) {
    for (std::size_t d = 0; d < 6; ++d)
      pe(t, d) = 0.25f * static_cast<float>(t) - 0.125f * static_cast<float>(d);
  }
  const Tensor3 out = STUDENT(attn::exercise::add_positions(x, pe));
  Tensor3 sum(x.shape());
  for (std::size_t b = 0; b < 3; ++b) {
    for (std::size_t t = 0; t < 4; ++t) {
      for (std::size_t d = 0; d < 6; ++d)
        sum(b, t, d) = x(b, t, d) + pe(t, d);
    }
  }
  check_close("add_positions(x (3,4,6), pe (4,6))", out, sum, kSumTolerance);
  const Tensor3 zeros = xt::zeros<float>({2, 1, 6});
  Tensor2 first({1, 6});
  for (std::size_t d = 0; d < 6; ++d)
    first(0, d) = pe(0, d) + 1.0f;
  const Tensor3 only = STUDENT(attn::exercise::add_positions(zeros, first));
  Tensor3 broadcast({2, 1, 6});
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t d = 0; d < 6; ++d)
      broadcast(b, 0, d) = first(0, d);
  }
  check_close("add_positions(zeros (2,1,6), pe (1,6))", only, broadcast, kSumTolerance);
}

TEST_CASE("add_positions refuses a pe whose shape is not T by D",
          "[positional-encoding][points=1]") {
  const Tensor3 x = input<3>("positional-encoding/b3_t4_d6_x");
  const Tensor2 five_rows = xt::zeros<float>({5, 6});
  const Tensor2 seven_columns = xt::zeros<float>({4, 7});
  Tensor2 fits({4, 6});  // (T,D)
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t d = 0; d < 6; ++d)
      fits(t, d) = 0.5f * static_cast<float>(d) - 0.25f * static_cast<float>(t);
  Tensor3 sum(x.shape());
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t t = 0; t < 4; ++t)
      for (std::size_t d = 0; d < 6; ++d)
        sum(b, t, d) = x(b, t, d) + fits(t, d);
  const Tensor3 out = STUDENT(attn::exercise::add_positions(x, fits));
  check_close("add_positions(x (3,4,6), pe (4,6))", out, sum, kSumTolerance);
  CHECK_THROWS_AS(STUDENT(attn::exercise::add_positions(x, five_rows)), std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::add_positions(x, seven_columns)), std::invalid_argument);
}

// BEGIN HIDDEN TESTS
TEST_CASE("sinusoidal_table matches PyTorch for 160 positions of width 9",
          "[positional-encoding][points=2][.hidden]") {
  check_table(160, 9);
}

TEST_CASE("sinusoidal_table then add_positions gives seed 001 PositionalEncoding output",
          "[positional-encoding][points=2][.hidden]") {
  const Tensor3 x = input<3>("positional-encoding/b3_t4_d6_x");
  const SinusoidalTable sinusoidal = STUDENT(attn::exercise::sinusoidal_table(10, 6));
  const Tensor2& table = sinusoidal.pe;  // (P,D)
  REQUIRE(table.shape(0) == 10);
  REQUIRE(table.shape(1) == 6);
  Tensor2 pe({4, 6});  // pe[:T]
  for (std::size_t t = 0; t < 4; ++t) {
    for (std::size_t d = 0; d < 6; ++d)
      pe(t, d) = table(t, d);
  }
  const Tensor3 out = STUDENT(attn::exercise::add_positions(x, pe));
  check_close("add_positions(x (3,4,6), sinusoidal_table(10, 6).pe[:4])", out,
              expected<3>("positional-encoding/b3_t4_d6_p10_out"), kTableTolerance);
}
// END HIDDEN TESTS
