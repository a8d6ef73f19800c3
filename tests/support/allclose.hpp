// The tests' all-close check: the exercise harness's comparison (course/harness/close.hpp) and a
// Catch2 assertion around it.
#pragma once

#include <catch2/catch.hpp>

#include "close.hpp"

// CHECK_ALLCLOSE(got, expected[, Tolerance{atol, rtol}]) on two attn::Array values.
#define CHECK_ALLCLOSE(got, expected, ...)                                           \
  do {                                                                               \
    const auto attn_report_ =                                                        \
        ::attn::testing::compare_close((got), (expected)__VA_OPT__(, ) __VA_ARGS__); \
    INFO(attn_report_.message);                                                      \
    CHECK(attn_report_.ok);                                                          \
  } while (false)
