// The one all-close check of the tests: |got - expected| <= atol + rtol * |expected|, element by
// element, NaN equal to NaN and infinities equal when their signs agree. On failure the message
// gives both shapes, the largest difference and where it is, and the first few mismatches.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/array.hpp"

namespace attn::testing {

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-4;
};

struct CloseReport {
  bool ok = true;
  std::string message;
};

inline std::string index_string(const Shape& shape, std::size_t flat) {
  std::vector<std::size_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

inline CloseReport compare_close(const Array& got, const Array& expected, Tolerance tol = {}) {
  CloseReport report;
  if (got.shape != expected.shape) {
    report.ok = false;
    report.message = fmt::format("shapes differ: got {}, expected {}", shape_string(got.shape),
                                 shape_string(expected.shape));
    return report;
  }
  const std::size_t n = got.size();
  double max_diff = 0.0;
  std::size_t max_at = 0, mismatches = 0;
  std::string examples;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got.real(i), e = expected.real(i);
    bool close;
    double diff;
    if (std::isnan(g) || std::isnan(e)) {
      close = std::isnan(g) && std::isnan(e);
      diff = close ? 0.0 : INFINITY;
    } else if (std::isinf(g) || std::isinf(e)) {
      close = g == e;
      diff = close ? 0.0 : INFINITY;
    } else {
      diff = std::fabs(g - e);
      close = diff <= tol.atol + tol.rtol * std::fabs(e);
    }
    if (diff > max_diff) max_diff = diff, max_at = i;
    if (!close) {
      if (++mismatches <= 5) {
        examples +=
            fmt::format("\n  at {}: got {:.9g}, expected {:.9g}", index_string(got.shape, i), g, e);
      }
    }
  }
  if (mismatches > 0) {
    report.ok = false;
    report.message = fmt::format(
        "{} of {} elements differ (shape {}, atol {:g}, rtol {:g}); max |diff| {:.3g} at {}{}",
        mismatches, n, shape_string(got.shape), tol.atol, tol.rtol, max_diff,
        index_string(got.shape, max_at), examples);
  } else {
    report.message = fmt::format("max |diff| {:.3g} over {} elements", max_diff, n);
  }
  return report;
}

}  // namespace attn::testing
