// What the exercise tests share: PyTorch-made fixtures from data/fixtures/exercises/ and one
// closeness check whose failure says what was computed, what PyTorch expected and what came out.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "allclose.hpp"
#include "npy.hpp"
#include "tensor.hpp"

#ifndef ATTN_EXERCISE_FIXTURES_DIR
#error "ATTN_EXERCISE_FIXTURES_DIR must name data/fixtures/exercises"
#endif

namespace attn::grading {

// data/fixtures/exercises/<relative>.npy as a float32 tensor of rank N.
template <std::size_t N>
xt::xtensor<float, N> fixture(const std::string& relative) {
  const std::filesystem::path path =
      std::filesystem::path(ATTN_EXERCISE_FIXTURES_DIR) / (relative + ".npy");
  if (!std::filesystem::exists(path)) {
    FAIL("missing fixture " << path.string()
                            << "; regenerate with: /usr/bin/python3 data/generate_fixtures.py");
  }
  return to_tensor<N>(read_npy(path.string()), relative);
}

// Fails the test (and carries on) when got and expected differ in shape or in any element beyond
// atol + rtol * |expected|. `what` names the call, e.g. "softmax(scores (2,4,6))".
template <class Got, class Expected>
void check_close(const std::string& what, const Got& got, const Expected& expected,
                 testing::Tolerance tolerance = {}) {
  const testing::CloseReport report =
      testing::compare_close(to_array(got), to_array(expected), tolerance);
  if (!report.ok) {
    FAIL_CHECK(what << ": " << report.message);
  } else {
    SUCCEED(what << ": " << report.message);
  }
}

}  // namespace attn::grading
