// Row kernels: the loops the layers run over their tensors' rows (softmax, LayerNorm, GELU), in
// torch 1.13's order of operations (kernels/torch_order.hpp). Each runs in 8 AVX2 + FMA lanes
// where the CPU has them and in the portable scalar code otherwise: the two give the same bits,
// so a layer calls one kernel and never asks which CPU it is on. Where the pool is OpenMP's (a
// build with oneDNN: kernels/gemm.hpp), large calls share their rows out on it; no result depends
// on the thread count. Legend: rows x n numbers, row-major.
#pragma once

#include <cstddef>
#include <string_view>

#include "kernels/torch_order.hpp"

namespace attn {

// Which code runs the rows: AVX2 + FMA (8 lanes) or portable scalar code (the same bits).
enum class FastKernels { scalar, avx2 };
// Whether this CPU has AVX2 and FMA.
bool cpu_has_avx2();
// avx2 when this CPU has AVX2 and FMA, scalar otherwise or when the environment variable
// ATTN_FAST_KERNELS is "scalar" (so that the whole suite can run on the portable code).
FastKernels best_fast_kernels();
std::string_view kernels_name(FastKernels kernels);  // "avx2+fma", "scalar"

// softmax(x / divisor) of each row, in place (torch_softmax_row: NaN spreads to its row; a row of
// -inf comes out zeros).
void softmax_rows(float* x, std::size_t rows, std::size_t n, float divisor = 1.0f,
                  FastKernels kernels = best_fast_kernels());
// nn.LayerNorm over each row: x (rows, n) -> out (rows, n); weight and bias (n).
void layer_norm_rows(const float* x, std::size_t rows, std::size_t n, const float* weight,
                     const float* bias, float eps, float* out,
                     FastKernels kernels = best_fast_kernels());
// One row of nn.LayerNorm with what its backward needs: the moments (returned), the normalised
// row and the output (n numbers each; `normalised` may be null).
RowMoments layer_norm_row(const float* x, std::size_t n, const float* weight, const float* bias,
                          float eps, float* normalised, float* out,
                          FastKernels kernels = best_fast_kernels());
// GELU of one tensor of n numbers, in place (torch_gelu: torch's tail rules depend on n).
void gelu_in_place(float* x, std::size_t n, GeluApproximation approximate,
                   FastKernels kernels = best_fast_kernels());
// x (rows, cols) = gelu(x + bias) in place, bias (cols) added to every row: the bits of adding the
// bias and then calling gelu_in_place on the whole tensor, in one pass over cache-sized blocks.
void bias_gelu_rows(float* x, std::size_t rows, std::size_t cols, const float* bias,
                    GeluApproximation approximate, FastKernels kernels = best_fast_kernels());
// dx = dy ⊙ GELU'(x) of the erf form (gelu_erf_slope_onednn) on n numbers.
void gelu_erf_backward(const float* x, const float* dy, float* dx, std::size_t n,
                       FastKernels kernels = best_fast_kernels());

}  // namespace attn
