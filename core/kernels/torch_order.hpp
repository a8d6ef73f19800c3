// PyTorch 1.13's CPU kernels, step for step: the order of operations that makes attn's float32
// results equal torch's, bit for bit, on an x86-64 CPU with AVX2 (Debian's python3-torch). One
// scalar copy of each; kernels/rows.hpp runs the row routines on whole tensors, in 8 AVX2 lanes
// where the CPU has them (the same bits). None of this is the transformer's math: the layers open
// with the textbook formulas and reach these through kernels/rows.hpp. Legend: n numbers in a row.
//
// Where each comes from:
//   SLEEF 3.5 (libsleef3, which libtorch_cpu links)  exp, tanh, sin and cos (u10, AVX2 with FMA)
//   ATen                                              vec::reduce_all's sum, cascade_sum
//                                                     (torch.sum), RowwiseMoments' Welford cascade,
//                                                     the GELU kernel's tail rule
//   oneDNN 2.6 (MKL-DNN inside torch)                 the erf GELU, its slope and its exp
#pragma once

#include <cstddef>
#include <cstdint>

namespace attn {

// nn.GELU(approximate='none') is x Φ(x) = 0.5 x (1 + erf(x / √2)); approximate='tanh' is
// 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
enum class GeluApproximation { none, tanh };

struct RowMoments {
  float mean;
  float variance;  // biased: divided by n
};

// ---- One number at a time

// SLEEF's expf_u10 with FMA (ATen's Vectorized<float>::exp): within 1 ulp of the true value, and
// not always equal to std::exp. 0 below -104, inf above 100.
float torch_exp(float x);
// SLEEF 3.5's tanhf_u10 with FMA (ATen's Vectorized<float>::tanh).
float tanh_sleef(float x);
// One lane of SLEEF 3.5's sinf_u10/cosf_u10 (AVX2 with FMA), within 1 ulp. `wide` is the
// group's choice of reduction: Cody-Waite (|x| < 125) or Payne-Hanek. Exact to torch for
// |x| < 2^33; beyond that std::sin/std::cos.
float sleef_sin_u10(float x, bool wide);
float sleef_cos_u10(float x, bool wide);
// oneDNN's exp (exp_compute_vector_fwd): a degree-5 polynomial; 0 below ln FLT_MIN.
float exp_onednn(float x);
// oneDNN's AVX2 gelu_erf: what nn.GELU() runs on float32 tensors of 2 or more elements.
float gelu_erf_onednn(float x);
// Its slope Φ(x) + x φ(x), as oneDNN's gelu_erf backward.
float gelu_erf_slope_onednn(float x);
// ATen's scalar lambdas: the erf GELU of a tensor of one element (libm's erff), and the tanh GELU
// with SLEEF's tanh (`sleef`) or, for a tensor's last n % 16 elements, libm's tanhf.
float gelu_erf_libm(float x);
float gelu_tanh_aten(float x, bool sleef);

// ---- Sums and moments of a row

// ATen's vec::reduce_all(+) on AVX2: 8 lane sums, then lanes (i, i+4), then (i, i+2), then the
// last pair. Rows shorter than 8 are summed left to right.
float torch_row_sum(const float* x, std::size_t n);
// torch.sum over one contiguous row (ATen's cascade_sum on AVX2: 8 lanes summed in four
// interleaved columns with 16-step levels, then the tail, then the lanes). n >= 1.
float torch_cascade_sum(const float* x, std::size_t n);
// One row's mean and biased variance in the order of ATen's RowwiseMoments (moments_utils.h):
// Welford in 8 float lanes over chunks of 16 vectors, chunks merged as a cascade, then the tail
// elements by scalar Welford, then the 8 lanes merged into it. n >= 1.
RowMoments torch_row_moments(const float* x, std::size_t n);
// The end of torch_row_moments: the tail x[8 vectors .. n) by scalar Welford, then the 8 lanes'
// moments (lane_mean, lane_m2, each over `vectors` values) merged into it by ATen's AddMoments.
RowMoments finish_row_moments(const float* x, std::size_t n, std::size_t vectors,
                              const float* lane_mean, const float* lane_m2);
// ATen's utils::CeilLog2: 1 for x <= 2.
std::size_t ceil_log2(std::size_t x);

// ---- Whole rows, in place

// softmax(x / divisor) of one row, the order of ATen's _vec_softmax_lastdim: the max, exp(x - max)
// by torch_exp, then times 1 / torch_row_sum. NaN spreads to the whole row; a row of -inf (fully
// masked) comes out zeros.
void torch_softmax_row(float* x, std::size_t n, float divisor);
// nn.LayerNorm over one row (ATen's LayerNormKernelImplInternal): torch_row_moments, eps inside the
// root, then y = (x rstd - rstd mean) weight + bias as two fused multiply-adds. `normalised` (the
// first FMA's results) may be null.
RowMoments torch_layer_norm_row(const float* x, std::size_t n, const float* weight,
                                const float* bias, float eps, float* normalised, float* out);
// GELU of elements from..n-1 of a tensor of n elements: the erf form by gelu_erf_onednn (a
// tensor of one element: gelu_erf_libm); the tanh form by gelu_tanh_aten, SLEEF's tanh for the
// first n - n % 16 elements.
void torch_gelu(float* x, std::size_t n, std::size_t from, GeluApproximation approximate);
// torch.sin and torch.cos on n contiguous values (one thread): SLEEF's sinf8_u10/cosf8_u10, 8
// lanes at a time. A group of 8 with any |x| >= 125 (or a NaN or inf) takes SLEEF's slower, wider
// argument reduction in every lane, which can change a lane's last bit: the result depends on the
// neighbours, as in torch.
void torch_sin(const float* in, float* out, std::size_t n);
void torch_cos(const float* in, float* out, std::size_t n);

}  // namespace attn
