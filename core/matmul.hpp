// Batched matrix products on (B, rows, cols) float32 tensors. The fast versions call OpenBLAS's
// cblas_sgemm once per batch entry on the tensors' own storage (no copies); the reference versions
// are plain loops kept beside them, and a test holds the two equal.
#pragma once

#include "tensor.hpp"

namespace attn {

// (B,T,K) @ (B,K,N) -> (B,T,N), like torch.matmul / torch.bmm.
Tensor3 batched_matmul(const Tensor3& a, const Tensor3& b);
// (B,T,K) @ (B,N,K)^T -> (B,T,N): a @ b.transpose(1, 2) without materialising the transpose.
Tensor3 batched_matmul_transposed(const Tensor3& a, const Tensor3& b);

// (B,K,T)^T @ (B,K,N) -> (B,T,N): a.transpose(1, 2) @ b, the product backward passes need
// (dV = Pᵀ dY, dK = dSᵀ Q), by sgemm.
Tensor3 batched_matmul_transposed_a(const Tensor3& a, const Tensor3& b);
Tensor3 batched_matmul_reference(const Tensor3& a, const Tensor3& b);
Tensor3 batched_matmul_transposed_reference(const Tensor3& a, const Tensor3& b);

// nn.Linear: x (B,T,in) @ weight(out,in)^T + bias(out) -> (B,T,out), as torch computes it: one
// sgemm over the B*T rows with the bias preloaded into the output (addmm with beta = 1).
// `bias` may be null (bias=False).
Tensor3 linear(const Tensor3& x, const Tensor2& weight, const Tensor1* bias);
// The plain-loop reference for linear().
Tensor3 linear_reference(const Tensor3& x, const Tensor2& weight, const Tensor1* bias);

// Row-major C (m,n) = alpha op(A) op(B) + beta C on raw storage, op(X) = X or Xᵀ: a thin
// cblas_sgemm wrapper for the fast paths, which multiply strided blocks of larger buffers in
// place. lda, ldb, ldc are the row strides of A, B, C as stored. beta = 0 ignores C's contents.
void sgemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
           float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
           float beta, float* c, std::size_t ldc);

// OpenBLAS's own thread pool is the only one; this sets its size.
void set_blas_threads(int threads);

}  // namespace attn
