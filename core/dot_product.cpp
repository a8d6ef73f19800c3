#include "dot_product.hpp"

#include <algorithm>

#include "attention.hpp"
#include "matmul.hpp"
#include "softmax.hpp"

namespace attn {

DotProductSteps dot_product_attention(const Tensor3& x, float divisor) {
  DotProductSteps s;
  s.raw_weights = batched_matmul_transposed(x, x);  // (B,T,D) @ (B,T,D)^T -> (B,T,T)
  if (divisor != 1.0f) s.raw_weights /= divisor;
  s.weights = softmax(s.raw_weights);       // (B,T,T), rows sum to 1
  s.output = batched_matmul(s.weights, x);  // (B,T,T) @ (B,T,D) -> (B,T,D)
  return s;
}

Tensor3d dot_product_attention_float64(const Tensor3& x, float divisor) {
  const Tensor3d x64 = xt::cast<double>(x);
  return attention_float64(x64, x64, x64, divisor, nullptr);  // softmax(X Xᵀ / divisor) X
}

MemoryPlan plan_dot_product_attention(std::size_t batch, std::size_t tokens, std::size_t width) {
  return {{"W'", {batch, tokens, tokens}, "B T T"},
          {"W", {batch, tokens, tokens}, "B T T"},
          {"Y", {batch, tokens, width}, "B T D"}};
}

MemoryPlan plan_dot_product_attention_float64(std::size_t batch, std::size_t tokens,
                                              std::size_t width) {
  return {{"X and Y in float64", {2, batch, tokens, width}, " B T D", 8}};
}

Tensor3 permute_tokens(const Tensor3& x, const std::vector<std::size_t>& order) {
  if (order.size() != x.shape(1)) {
    throw Error(ErrorKind::bad_size, "permute_tokens",
                fmt::format("order has {} entries for x {}", order.size(), shape_string_of(x)));
  }
  Tensor3 out(x.shape());
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t i = 0; i < x.shape(1); ++i) {
      if (order[i] >= x.shape(1)) {
        throw Error(ErrorKind::bad_size, "permute_tokens",
                    fmt::format("order[{}] = {} is past T = {}", i, order[i], x.shape(1)));
      }
      for (std::size_t d = 0; d < x.shape(2); ++d)
        out(b, i, d) = x(b, order[i], d);
    }
  return out;
}

Tensor3 mean_over_tokens(const Tensor3& x) {
  Tensor3 out({x.shape(0), 1, x.shape(2)});
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t d = 0; d < x.shape(2); ++d) {
      double sum = 0.0;
      for (std::size_t i = 0; i < x.shape(1); ++i)
        sum += x(b, i, d);
      out(b, 0, d) =
          static_cast<float>(sum / static_cast<double>(std::max<std::size_t>(x.shape(1), 1)));
    }
  return out;
}

}  // namespace attn
