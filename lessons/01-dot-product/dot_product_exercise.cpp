// Lesson 01's exercise. Fill in each function where it says TODO, then run
//
//     attn check dot-product        (the tests, with what was expected and what came out)
//     attn hint dot-product         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(0) is its first size, x(b, t, d) an element, and
// Tensor3({B, T, N}) a new tensor of that shape (its elements are not set: write every one).
#include "dot_product_exercise.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "softmax.hpp"

namespace attn::exercise {

Tensor3 batched_matmul_transposed(const Tensor3& a, const Tensor3& b) {
  // TODO(lesson 01): the product of a with b transposed, batch entry by batch entry: entry (t, n)
  // is the dot product of row t of a with row n of b. a (B,T,K), b (B,N,K) -> (B,T,N). Throws
  // std::invalid_argument when the batch sizes or the inner sizes K differ.
  // PyTorch: torch.bmm(a, b.transpose(1, 2)), that is a @ b.transpose(-2, -1)
  // BEGIN SOLUTION
  if (a.shape(0) != b.shape(0) || a.shape(2) != b.shape(2)) {
    throw std::invalid_argument(
        fmt::format("batched_matmul_transposed: shapes do not match: {} @ {}^T", shape_string_of(a),
                    shape_string_of(b)));
  }
  const std::size_t batch = a.shape(0), rows = a.shape(1), inner = a.shape(2), cols = b.shape(1);
  Tensor3 out({batch, rows, cols});  // (B,T,N)
  for (std::size_t i = 0; i < batch; ++i) {
    for (std::size_t t = 0; t < rows; ++t) {
      for (std::size_t n = 0; n < cols; ++n) {
        float sum = 0.0f;
        for (std::size_t k = 0; k < inner; ++k)
          sum += a(i, t, k) * b(i, n, k);
        out(i, t, n) = sum;
      }
    }
  }
  return out;
  // END SOLUTION
}

Tensor3 batched_matmul(const Tensor3& a, const Tensor3& b) {
  // TODO(lesson 01): the matrix product of a and b, batch entry by batch entry. a (B,T,K),
  // b (B,K,N) -> (B,T,N). Throws std::invalid_argument when the batch sizes or the inner sizes K
  // differ. PyTorch: torch.bmm(a, b), that is a @ b
  // BEGIN SOLUTION
  if (a.shape(0) != b.shape(0) || a.shape(2) != b.shape(1)) {
    throw std::invalid_argument(fmt::format("batched_matmul: shapes do not match: {} @ {}",
                                            shape_string_of(a), shape_string_of(b)));
  }
  const std::size_t batch = a.shape(0), rows = a.shape(1), inner = a.shape(2), cols = b.shape(2);
  Tensor3 out({batch, rows, cols});  // (B,T,N)
  for (std::size_t i = 0; i < batch; ++i) {
    for (std::size_t t = 0; t < rows; ++t) {
      for (std::size_t n = 0; n < cols; ++n) {
        float sum = 0.0f;
        for (std::size_t k = 0; k < inner; ++k)
          sum += a(i, t, k) * b(i, k, n);
        out(i, t, n) = sum;
      }
    }
  }
  return out;
  // END SOLUTION
}

DotProductSteps dot_product_attention(const Tensor3& x, float divisor) {
  // TODO(lesson 01): self-attention with no parameters, every step kept in DotProductSteps: the raw
  // weights compare each token of x with every token by a dot product, divided by divisor; the
  // weights are their softmax over the last axis; each output token is the average of the tokens of
  // x weighted by its row of weights. x (B,T,D) -> raw_weights (B,T,T), weights (B,T,T), output
  // (B,T,D). The core's attn::softmax(scores), over the last axis, is available (lesson 03's).
  // PyTorch: raw = torch.bmm(x, x.transpose(1, 2)) / divisor; w = torch.softmax(raw, dim=-1);
  // output = torch.bmm(w, x)
  // BEGIN SOLUTION
  DotProductSteps steps;
  steps.raw_weights = batched_matmul_transposed(x, x);  // (B,T,D) @ (B,T,D)^T -> (B,T,T)
  for (float& w : steps.raw_weights)
    w /= divisor;
  steps.weights = attn::softmax(steps.raw_weights);  // (B,T,T), rows sum to 1
  steps.output = batched_matmul(steps.weights, x);   // (B,T,T) @ (B,T,D) -> (B,T,D)
  return steps;
  // END SOLUTION
}

}  // namespace attn::exercise
