// Batched matrix products on (B, rows, cols) float32 tensors. The fast versions call sgemm
// (gemm.hpp: OpenBLAS or oneDNN) once per batch entry on the tensors' own storage (no copies); the reference versions
// are plain loops kept beside them, and a test holds the two equal.
#pragma once

#include "base/tensor.hpp"
#include "kernels/gemm.hpp"

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

}  // namespace attn
