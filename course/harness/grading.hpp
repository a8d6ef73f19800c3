// What an exercise's tests are written with. A test file is compiled three ways:
//
//   - the probe (ATTN_GRADE_PROBE), linked with the student's code and run confined: it runs each
//     test's body, and every STUDENT(expr) evaluates expr and sends what it returned (or threw)
//     to the grader. Its assertions do nothing and expected values are empty: the probe never
//     sees them and decides nothing.
//   - the check (ATTN_GRADE_CHECK), built from the instructor's copy without the student's code:
//     it runs the same bodies under Catch2, each STUDENT(expr) gives back what the probe sent, and
//     its assertions decide pass or fail.
//   - directly (neither), with the solutions, as attn's own tests: STUDENT(expr) is expr.
//
// So a test calls the student's code only through STUDENT(...), never inside another STUDENT or
// an assertion other than CHECK_THROWS_AS/CHECK_NOTHROW, and uses expected values only in checks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "base/tensor.hpp"
#include "close.hpp"
#include "io/npy.hpp"
#include "values.hpp"

#if defined(ATTN_GRADE_PROBE)
#include "probe.hpp"
#else
#include <catch2/catch.hpp>
#endif
#if defined(ATTN_GRADE_CHECK)
#include "recording.hpp"
#endif

namespace attn::grading {

// Where the inputs (which the student's code may read) and the expected values (which it may
// not) are: ATTN_GRADE_INPUTS and ATTN_GRADE_EXPECTED, set by the grader; when run directly,
// the inputs/ and expected/ folders of the exercise fixtures the build names.
inline std::filesystem::path fixtures_dir(const char* variable) {
  if (const char* dir = std::getenv(variable); dir != nullptr && *dir != '\0') return dir;
#ifdef ATTN_EXERCISE_FIXTURES_DIR
  return std::filesystem::path(ATTN_EXERCISE_FIXTURES_DIR) /
         (std::string(variable) == "ATTN_GRADE_INPUTS" ? "inputs" : "expected");
#else
  throw std::runtime_error(std::string(variable) + " is not set: run the tests through attn grade");
#endif
}

template <std::size_t N>
xt::xtensor<float, N> read_fixture(const std::filesystem::path& dir, const std::string& relative) {
  const std::filesystem::path path = dir / (relative + ".npy");
  return to_tensor<N>(read_npy(path.string()), relative);
}

// An input of the test: <inputs>/<relative>.npy as a float32 tensor of rank N.
template <std::size_t N>
xt::xtensor<float, N> input(const std::string& relative) {
  return read_fixture<N>(fixtures_dir("ATTN_GRADE_INPUTS"), relative);
}

// What PyTorch computed: <expected>/<relative>.npy. Empty in the probe.
template <std::size_t N>
xt::xtensor<float, N> expected(const std::string& relative) {
#if defined(ATTN_GRADE_PROBE)
  (void)relative;
  return {};
#else
#if defined(ATTN_GRADE_CHECK)
  std::error_code ec;
  if (std::filesystem::exists(fixtures_dir("ATTN_GRADE_INPUTS") / (relative + ".npy"), ec)) {
    FAIL("the expected value " << relative
                               << " is among the inputs the student's code can read: list it "
                                  "as expected, not as an input, in data/fixtures/exercises");
  }
#endif
  return read_fixture<N>(fixtures_dir("ATTN_GRADE_EXPECTED"), relative);
#endif
}

// Copies <inputs>/<prefix><key>.npy into every parameter visit_parameters(layer, ...) offers (the
// state_dict's keys), requiring each file's shape to be the parameter's.
template <class Layer>
void load_parameters(Layer& layer, const std::string& prefix) {
  visit_parameters(layer, [&](const std::string& key, float* data, const Shape& shape) {
    const std::string name = prefix + key;
    const Array array = shape.size() == 1 ? to_array(input<1>(name)) : to_array(input<2>(name));
    INFO(name << " has shape " << shape_string(array.shape) << ", the struct expects "
              << shape_string(shape));
    REQUIRE(array.shape == shape);
    std::memcpy(data, array.bytes.data(), array.bytes.size());
  });
}

// Token ids saved as float (whole numbers) -> int64 ids of the same shape.
inline xt::xtensor<std::int64_t, 2> ids_of(const xt::xtensor<float, 2>& values) {
  xt::xtensor<std::int64_t, 2> ids = xt::xtensor<std::int64_t, 2>::from_shape(values.shape());
  for (std::size_t i = 0; i < values.size(); ++i)
    ids.data()[i] = static_cast<std::int64_t>(values.data()[i]);
  return ids;
}

// Fails the test (and carries on) when got and expected differ in shape or in any element beyond
// atol + rtol * |expected|. `what` names the call, e.g. "softmax(scores (2,4,6))".
template <class Got, class Expected>
void check_close(const std::string& what, const Got& got, const Expected& expected,
                 testing::Tolerance tolerance = {}) {
#if defined(ATTN_GRADE_PROBE)
  (void)what, (void)got, (void)expected, (void)tolerance;
#else
  const testing::CloseReport report =
      testing::compare_close(to_array(got), to_array(expected), tolerance);
  if (!report.ok) {
    FAIL_CHECK(what << ": " << report.message);
  } else {
    SUCCEED(what << ": " << report.message);
  }
#endif
}

// Predictions: the student writes a number in the exercise source before running the tests (a
// `const double ... = value;  // prediction` line, which the release sets to NaN), and a test
// compares it with the value its run measured in a WARN, which attn check prints under the test.
// A prediction earns and costs no points. The header declares the constant [[gnu::weak]], so that
// a file without it still links: prediction(&constant) is then NaN.
inline double prediction(const double* constant) {
  return constant != nullptr ? *constant : std::nan("");
}

// The note for a prediction not yet made (NaN), to be
// warned before the student's code runs, so that a stub that throws still shows it:
inline std::string not_predicted(const std::string& what, const std::string& constant) {
  return fmt::format("{}: not predicted yet; write your guess in {} and run attn check again", what,
                     constant);
}

// "<what>: your prediction 8, the run's value 1.02: off by 7.8x; see hint 2", or "within 3%" when
// the two are within 10% of each other.
inline std::string prediction_note(const std::string& what, double predicted, double value,
                                   int hint) {
  const std::string both =
      fmt::format("{}: your prediction {:.3g}, the run's value {:.3g}", what, predicted, value);
  const double difference = std::fabs(predicted - value);
  if (value != 0.0 && difference <= 0.1 * std::fabs(value))
    return fmt::format("{}: within {:.0f}%", both,
                       std::ceil(100.0 * difference / std::fabs(value)));
  if (predicted * value > 0.0) {
    const double ratio = std::max(std::fabs(predicted), std::fabs(value)) /
                         std::min(std::fabs(predicted), std::fabs(value));
    return fmt::format("{}: off by {:.2g}x; see hint {}", both, ratio, hint);
  }
  return fmt::format("{}: off by {:.3g}; see hint {}", both, difference, hint);
}

}  // namespace attn::grading

#if defined(ATTN_GRADE_PROBE)
#define STUDENT(...) \
  ::attn::grading::probe::student_call(#__VA_ARGS__, [&]() { return __VA_ARGS__; })
#elif defined(ATTN_GRADE_CHECK)
#define STUDENT(...) ::attn::grading::recorded<std::decay_t<decltype(__VA_ARGS__)>>(#__VA_ARGS__)
#else
#define STUDENT(...) (__VA_ARGS__)
#endif
