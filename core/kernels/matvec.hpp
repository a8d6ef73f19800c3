// A matrix times one vector, the product that decides how fast a model generates: one token needs
// every weight once and does two flops per weight, so its time is the time to read the weights.
// y = W x (+ bias), W (rows, cols) row-major: one dot product per row, the rows in order, so that
// a block of rows is one sequential stream of weights; 8 AVX2 + FMA lanes where the CPU has them
// (portable scalar code otherwise). The dot products' sums are in another order than torch's, so
// results differ from a GEMM's in the last bits.
//
// stream_sum reads n floats once in order, the streaming read the benchmark times to measure the memory
// bandwidth that bounds the products above.
#pragma once

#include <cstddef>

#include "kernels/rows.hpp"

namespace attn {

// Rows [first, last) of y = W x + bias (bias may be null).
void matvec_rows(const float* w, std::size_t cols, const float* x, const float* bias, float* y,
                 std::size_t first, std::size_t last, FastKernels kernels = best_fast_kernels());
// The AVX2 + FMA body (kernels/matvec_avx2.cpp), called only where cpu_has_avx2().
void matvec_rows_avx2(const float* w, std::size_t cols, const float* x, const float* bias, float* y,
                      std::size_t first, std::size_t last);

float stream_sum(const float* data, std::size_t n, FastKernels kernels = best_fast_kernels());
float stream_sum_avx2(const float* data, std::size_t n);

}  // namespace attn
