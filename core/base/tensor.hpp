// Fixed-rank float32 tensors (xt::xtensor<float, N>, row-major) and their conversion to and from
// Array. Legend used across core/: B batch, T tokens, D model width, H heads, hs head size,
// F feed-forward width, V vocabulary.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <xtensor/xtensor.hpp>

#include "base/array.hpp"
#include "base/error.hpp"

namespace attn {

using Tensor1 = xt::xtensor<float, 1>;
using Tensor2 = xt::xtensor<float, 2>;
using Tensor3 = xt::xtensor<float, 3>;
using Tensor4 = xt::xtensor<float, 4>;
// float64 twins, for references that show what a float32 result would be without round-off.
using Tensor3d = xt::xtensor<double, 3>;

// Largest |a - b| over two tensors of the same size, element by element in memory order. A NaN
// difference is returned as NaN, so that every `<= tolerance` check on the result fails.
template <class A, class B>
float max_difference(const A& a, const B& b) {
  float largest = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float d = std::fabs(a.data()[i] - b.data()[i]);
    if (std::isnan(d)) return d;
    if (d > largest) largest = d;
  }
  return largest;
}

// A tensor of x's shape whose rows along the last axis are `row(x_row, out_row, n)` of x's.
template <class Row>
Tensor3 map_rows(const Tensor3& x, Row row) {
  Tensor3 out(x.shape());
  const std::size_t n = x.shape(2);
  for (std::size_t r = 0; n != 0 && r < x.size() / n; ++r)
    row(x.data() + r * n, out.data() + r * n, n);
  return out;
}

// x (B,R,C) + table (R,C): the table added to every batch entry, element by element as floats.
// The caller checks that the table fits.
inline Tensor3 add_to_each(const Tensor3& x, const Tensor2& table) {
  Tensor3 out = x;
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t i = 0; i < x.shape(1); ++i)
      for (std::size_t j = 0; j < x.shape(2); ++j)
        out(b, i, j) += table(i, j);
  return out;
}

// Largest |sum - 1| over the rows (along the last axis) of a tensor of weights; NaN when a row's
// sum is NaN. Each row is summed in order, as a float.
template <class E>
float max_row_sum_error(const E& weights) {
  const std::size_t n = weights.shape().back();
  if (n == 0) return 0.0f;
  float largest = 0.0f;
  for (std::size_t r = 0; r < weights.size() / n; ++r) {
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j)
      sum += weights.data()[r * n + j];
    const float error = std::fabs(sum - 1.0f);
    if (std::isnan(error)) return error;
    if (error > largest) largest = error;
  }
  return largest;
}

// Float32's machine epsilon, 2^-23: the gap between 1 and the next float.
inline constexpr float kFloat32Epsilon = 0x1p-23f;

// How far round-off may move a float32 sum of `terms` values whose absolute values add up to at
// most `magnitude`, in any order: 2 (terms + 1) ε magnitude, twice the classical bound for a sum
// (a softmax's row, a dot product), so that the rounding of the terms themselves fits too.
inline float summation_tolerance(std::size_t terms, float magnitude = 1.0f) {
  return 2.0f * static_cast<float>(terms + 1) * kFloat32Epsilon * magnitude;
}

template <class E>
Shape shape_of(const E& tensor) {
  return Shape(tensor.shape().begin(), tensor.shape().end());
}

template <class E>
std::string shape_string_of(const E& tensor) {
  return shape_string(shape_of(tensor));
}

template <std::size_t N>
Array to_array(const xt::xtensor<float, N>& tensor) {
  Array a{Dtype::float32, shape_of(tensor),
          std::vector<unsigned char>(tensor.size() * sizeof(float))};
  if (tensor.size() != 0) std::memcpy(a.bytes.data(), tensor.data(), a.bytes.size());
  return a;
}

// A float32 array of rank N as a tensor. `what` names the array in the error, e.g. "the input".
template <std::size_t N>
xt::xtensor<float, N> to_tensor(const Array& array, std::string_view what) {
  if (array.rank() != N) {
    throw Error(ErrorKind::bad_size, "to_tensor",
                fmt::format("{} has shape {} (rank {}), expected rank {}", what,
                            shape_string(array.shape), array.rank(), N));
  }
  if (array.dtype != Dtype::float32) {
    throw Error(ErrorKind::bad_value, "to_tensor",
                fmt::format("{} has dtype {}, expected float32", what, dtype_name(array.dtype)));
  }
  std::array<std::size_t, N> shape;
  for (std::size_t i = 0; i < N; ++i)
    shape[i] = array.shape[i];
  xt::xtensor<float, N> tensor(shape);
  if (tensor.size() != 0)
    std::memcpy(tensor.data(), array.bytes.data(), tensor.size() * sizeof(float));
  return tensor;
}

}  // namespace attn
