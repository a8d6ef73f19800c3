#include "softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/rows.hpp"

namespace attn {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One kernel call over every row of the last axis (kernels/rows.hpp).
template <class T>
T softmax_last_axis(const T& scores) {
  const std::size_t n = scores.shape(scores.dimension() - 1);
  T out = scores;
  if (n != 0) softmax_rows(out.data(), out.size() / n, n);
  return out;
}
}  // namespace

Tensor3 softmax_reference(const Tensor3& scores) {
  return map_rows(scores, [](const float* x, float* p, std::size_t n) {
    double max = -std::numeric_limits<double>::infinity(), sum = 0.0;
    for (std::size_t j = 0; j < n; ++j)
      max = std::max(max, static_cast<double>(x[j]));
    if (max == -std::numeric_limits<double>::infinity()) {  // fully masked: attends to nothing
      std::fill(p, p + n, 0.0f);
      return;
    }
    for (std::size_t j = 0; j < n; ++j)
      sum += std::exp(x[j] - max);
    for (std::size_t j = 0; j < n; ++j)
      p[j] = static_cast<float>(std::exp(x[j] - max) / sum);
  });
}

Tensor2 softmax(const Tensor2& scores) {
  return softmax_last_axis(scores);
}
Tensor3 softmax(const Tensor3& scores) {
  return softmax_last_axis(scores);
}
Tensor4 softmax(const Tensor4& scores) {
  return softmax_last_axis(scores);
}

Tensor3 softmax_backward(const Tensor3& weights, const Tensor3& d_weights) {
  if (weights.shape() != d_weights.shape()) {
    throw Error(ErrorKind::bad_size, "softmax_backward",
                fmt::format("weights {} and their gradient {} differ in shape",
                            shape_string_of(weights), shape_string_of(d_weights)));
  }
  const std::size_t n = weights.shape(2), rows = weights.size() / std::max<std::size_t>(n, 1);
  Tensor3 d_scores(weights.shape());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* p = weights.data() + r * n;
    const float* dp = d_weights.data() + r * n;
    double dot = 0.0;
    for (std::size_t j = 0; j < n; ++j)
      dot += static_cast<double>(p[j]) * dp[j];
    for (std::size_t j = 0; j < n; ++j)
      d_scores.data()[r * n + j] = static_cast<float>(p[j] * (dp[j] - dot));
  }
  return d_scores;
}

Tensor3 softmax_naive(const Tensor3& scores) {
  return map_rows(scores, [](const float* in, float* o, std::size_t n) {
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j)
      sum += (o[j] = torch_exp(in[j]));
    for (std::size_t j = 0; j < n; ++j)
      o[j] /= sum;
  });
}

std::size_t count_fully_masked_rows(const Tensor3& scores) {
  const std::size_t n = scores.shape(2);
  if (n == 0) return 0;
  std::size_t count = 0;
  for (std::size_t r = 0; r < scores.size() / n; ++r) {
    bool masked = true;
    for (std::size_t j = 0; j < n && masked; ++j)
      masked = scores.data()[r * n + j] == kNegInf;
    count += masked;
  }
  return count;
}

Tensor2 causal_mask(std::size_t tokens) {
  Tensor2 mask = xt::zeros<float>({tokens, tokens});
  for (std::size_t i = 0; i < tokens; ++i)
    for (std::size_t j = i + 1; j < tokens; ++j)
      mask(i, j) = kNegInf;
  return mask;
}

Tensor3 apply_mask(const Tensor3& scores, const Tensor2& mask) {
  if (mask.shape(0) != scores.shape(1) || mask.shape(1) != scores.shape(2)) {
    throw Error(
        ErrorKind::bad_size, "apply_mask",
        fmt::format("mask {} does not fit scores {}: expected ({}, {})", shape_string_of(mask),
                    shape_string_of(scores), scores.shape(1), scores.shape(2)));
  }
  return add_to_each(scores, mask);
}

}  // namespace attn
