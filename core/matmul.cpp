#include "matmul.hpp"

#include <algorithm>

namespace attn {

namespace {
// Checks (B,T,K) against (B,K,N), or (B,N,K) when `transposed`; returns N.
std::size_t check_shapes(const char* function, const Tensor3& a, const Tensor3& b,
                         bool transposed) {
  const std::size_t inner_b = transposed ? b.shape(2) : b.shape(1);
  if (a.shape(0) != b.shape(0) || a.shape(2) != inner_b) {
    throw Error(ErrorKind::bad_size, function,
                fmt::format("shapes do not match: {} @ {}{}", shape_string_of(a),
                            shape_string_of(b), transposed ? "^T" : ""));
  }
  return transposed ? b.shape(1) : b.shape(2);
}

// torch.bmm on CPU computes small products (K*T*N < 400) with its own loop, a float accumulator
// and no FMA (ATen's baddbmm_cpu_kernel); doing the same keeps small lessons bit-identical.
constexpr std::size_t kTorchSmallProduct = 400;

void small_product(const float* a, const float* b, float* c, std::size_t rows, std::size_t inner,
                   std::size_t cols, bool transposed) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t col = 0; col < cols; ++col) {
      float acc = 0.0f;
      for (std::size_t k = 0; k < inner; ++k) {
        acc += a[r * inner + k] * (transposed ? b[col * inner + k] : b[k * cols + col]);
      }
      c[r * cols + col] = acc;
    }
}

Tensor3 gemm(const char* function, const Tensor3& a, const Tensor3& b, bool transposed) {
  const std::size_t batch = a.shape(0), rows = a.shape(1), inner = a.shape(2);
  const std::size_t cols = check_shapes(function, a, b, transposed);
  Tensor3 c = xt::zeros<float>({batch, rows, cols});
  if (rows == 0 || cols == 0 || inner == 0) return c;
  if (inner * rows * cols < kTorchSmallProduct) {
    for (std::size_t i = 0; i < batch; ++i) {
      small_product(a.data() + i * rows * inner, b.data() + i * inner * cols,
                    c.data() + i * rows * cols, rows, inner, cols, transposed);
    }
    return c;
  }
  for (std::size_t i = 0; i < batch; ++i) {
    const float* pa = a.data() + i * rows * inner;
    const float* pb = b.data() + i * inner * cols;
    float* pc = c.data() + i * rows * cols;
    // Row-major C = A @ B (ldb = N) or A @ B^T (B stored (N,K), ldb = K).
    sgemm(false, transposed, rows, cols, inner, 1.0f, pa, inner, pb, transposed ? inner : cols,
          0.0f, pc, cols);
  }
  return c;
}

Tensor3 reference(const char* function, const Tensor3& a, const Tensor3& b, bool transposed) {
  const std::size_t batch = a.shape(0), rows = a.shape(1), inner = a.shape(2);
  const std::size_t cols = check_shapes(function, a, b, transposed);
  Tensor3 c({batch, rows, cols});
  for (std::size_t i = 0; i < batch; ++i)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t col = 0; col < cols; ++col) {
        double sum = 0.0;
        for (std::size_t k = 0; k < inner; ++k) {
          sum += static_cast<double>(a(i, r, k)) * (transposed ? b(i, col, k) : b(i, k, col));
        }
        c(i, r, col) = static_cast<float>(sum);
      }
  return c;
}
}  // namespace

Tensor3 batched_matmul(const Tensor3& a, const Tensor3& b) {
  return gemm("batched_matmul", a, b, false);
}
Tensor3 batched_matmul_transposed(const Tensor3& a, const Tensor3& b) {
  return gemm("batched_matmul_transposed", a, b, true);
}
Tensor3 batched_matmul_transposed_a(const Tensor3& a, const Tensor3& b) {
  if (a.shape(0) != b.shape(0) || a.shape(1) != b.shape(1)) {
    throw Error(
        ErrorKind::bad_size, "batched_matmul_transposed_a",
        fmt::format("shapes do not match: {}^T @ {}", shape_string_of(a), shape_string_of(b)));
  }
  const std::size_t batch = a.shape(0), inner = a.shape(1), rows = a.shape(2), cols = b.shape(2);
  Tensor3 c = xt::zeros<float>({batch, rows, cols});
  if (rows == 0 || cols == 0 || inner == 0) return c;
  for (std::size_t i = 0; i < batch; ++i) {
    sgemm(true, false, rows, cols, inner, 1.0f, a.data() + i * inner * rows, rows,
          b.data() + i * inner * cols, cols, 0.0f, c.data() + i * rows * cols, cols);
  }
  return c;
}

Tensor3 batched_matmul_reference(const Tensor3& a, const Tensor3& b) {
  return reference("batched_matmul_reference", a, b, false);
}
Tensor3 batched_matmul_transposed_reference(const Tensor3& a, const Tensor3& b) {
  return reference("batched_matmul_transposed_reference", a, b, true);
}

namespace {
std::size_t check_linear(const char* function, const Tensor3& x, const Tensor2& weight,
                         const Tensor1* bias) {
  if (x.shape(2) != weight.shape(1) || (bias != nullptr && bias->shape(0) != weight.shape(0))) {
    throw Error(
        ErrorKind::bad_size, function,
        fmt::format("x {} does not fit weight {}{}: expected x (B, T, {})", shape_string_of(x),
                    shape_string_of(weight),
                    bias != nullptr ? fmt::format(" and bias {}", shape_string_of(*bias)) : "",
                    weight.shape(1)));
  }
  return weight.shape(0);
}
}  // namespace

Tensor3 linear(const Tensor3& x, const Tensor2& weight, const Tensor1* bias) {
  const std::size_t out = check_linear("linear", x, weight, bias), in = x.shape(2);
  const std::size_t rows = x.shape(0) * x.shape(1);
  Tensor3 y = xt::zeros<float>({x.shape(0), x.shape(1), out});
  if (bias != nullptr)
    for (std::size_t r = 0; r < rows; ++r)
      std::copy(bias->begin(), bias->end(), y.data() + r * out);
  if (rows == 0 || out == 0 || in == 0) return y;
  // Row-major (rows,in) @ (out,in)^T -> (rows,out), beta = 1 keeps the preloaded bias.
  sgemm(false, true, rows, out, in, 1.0f, x.data(), in, weight.data(), in,
        bias != nullptr ? 1.0f : 0.0f, y.data(), out);
  return y;
}

Tensor3 linear_reference(const Tensor3& x, const Tensor2& weight, const Tensor1* bias) {
  const std::size_t out = check_linear("linear_reference", x, weight, bias), in = x.shape(2);
  Tensor3 y({x.shape(0), x.shape(1), out});
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t t = 0; t < x.shape(1); ++t)
      for (std::size_t o = 0; o < out; ++o) {
        double sum = bias != nullptr ? (*bias)(o) : 0.0;
        for (std::size_t i = 0; i < in; ++i)
          sum += static_cast<double>(x(b, t, i)) * weight(o, i);
        y(b, t, o) = static_cast<float>(sum);
      }
  return y;
}

}  // namespace attn
