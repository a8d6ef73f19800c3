// The AVX2 + FMA bodies of kernels/rows.hpp's kernels (rows_avx2.cpp, the one file compiled for
// those instructions, chosen at run time): kernels/torch_order.hpp's routines 8 lanes at a time,
// the same bits. Only kernels/rows.cpp calls them, and only where cpu_has_avx2().
#pragma once

#include <cstddef>

#include "kernels/torch_order.hpp"

namespace attn {

void softmax_row_avx2(float* x, std::size_t n, float divisor);
RowMoments layer_norm_row_avx2(const float* x, std::size_t n, const float* weight,
                               const float* bias, float eps, float* normalised, float* out);
void gelu_avx2(float* x, std::size_t n, GeluApproximation approximate);
void gelu_erf_backward_avx2(const float* x, const float* dy, float* dx, std::size_t n);

}  // namespace attn
