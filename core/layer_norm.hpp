// Layer normalisation over each token's D numbers. Legend: B batch, T tokens, D model width.
//
// nn.LayerNorm(D, eps): mean and biased variance per token, (x - mean) / sqrt(variance + eps),
// times weight (D) plus bias (D). Seed 001's LayerNormalization: unbiased std, eps added outside
// the root, (x - mean) / (std + eps), one scalar gamma and beta. Both are computed in the order
// torch 1.13 uses on an AVX2 CPU, so the results are bit-identical to PyTorch's.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "linear.hpp"
#include "module.hpp"
#include "tensor.hpp"

namespace attn {

inline constexpr float kLayerNormEps = 1e-5f;           // nn.LayerNorm's default (BERT: 1e-12)
inline constexpr float kLayerNormalizationEps = 1e-6f;  // seed 001: self.eps = 10**-6

// Throws attn::Error(function) unless eps is a positive, finite float32 (as the kernel adds it).
void check_eps(float eps, std::string_view function);

struct RowMoments {
  float mean;
  float variance;  // biased: divided by n
};
// One row's mean and biased variance in the order of ATen's RowwiseMoments (moments_utils.h):
// Welford in 8 float lanes over chunks of 16 vectors, chunks merged as a cascade, then the tail
// elements by scalar Welford, then the 8 lanes merged into it. n >= 1.
RowMoments torch_row_moments(const float* x, std::size_t n);

// torch.sum over one contiguous row of float32 (ATen's cascade_sum on AVX2: 8 lanes summed in
// four interleaved columns with 16-step levels, then the tail, then the lanes). n >= 1.
float torch_cascade_sum(const float* x, std::size_t n);

// nn.LayerNorm(D, eps).
struct LayerNorm {
  Tensor1 weight;  // (D), init 1
  Tensor1 bias;    // (D), init 0
  float eps = kLayerNormEps;
};
LayerNorm init_layer_norm(std::size_t d_model, float eps = kLayerNormEps);
Module describe_layer_norm(std::size_t d_model, std::string name = "");
void visit_parameters(LayerNorm& norm, const std::string& prefix, const ParameterVisitor& visit);
inline void visit_parameters(LayerNorm& norm, const ParameterVisitor& visit) {
  visit_parameters(norm, "", visit);
}

struct LayerNormSteps {
  Tensor3 mean;        // (B,T,1)
  Tensor3 variance;    // (B,T,1) biased: the mean of (x - mean)^2
  Tensor3 normalised;  // (B,T,D) (x - mean) / sqrt(variance + eps)
  Tensor3 output;      // (B,T,D) normalised * weight + bias
};
LayerNormSteps forward(const LayerNorm& norm, const Tensor3& x);
// The backward of forward(norm, x) from its steps: returns dX and adds dweight = Σ dY ⊙ x̂ and
// dbias = Σ dY into `grad`. With x̂ = (x - mean) rstd and g = dY ⊙ weight, per token
// dX = rstd (g - mean(g) - x̂ mean(g ⊙ x̂)); in double, rounded once.
Tensor3 backward(const LayerNorm& norm, const Tensor3& x, const LayerNormSteps& steps,
                 const Tensor3& d_output, LayerNorm& grad);
// LayerNormSteps' tensors on x (B,T,D), for a memory budget (core/budget.hpp).
MemoryPlan plan_layer_norm(std::size_t batch, std::size_t tokens, std::size_t width);
// The textbook formula in double, two passes: the reference the fast path is held to.
Tensor3 layer_norm_reference(const LayerNorm& norm, const Tensor3& x);
// torchinfo's row of one LayerNorm call on an input of `shape`.
void trace_layer_norm(Trace& trace, const Module& norm, const Shape& shape);
std::vector<LayerInfo> trace_layer_norm(std::size_t d_model, const Shape& shape);

// Seed 001: LayerNormalization().
struct LayerNormalization {
  Tensor1 gamma;  // (1), nn.Parameter(torch.ones(1))
  Tensor1 beta;   // (1), nn.Parameter(torch.zeros(1))
  float eps = kLayerNormalizationEps;
};
LayerNormalization init_layer_normalization(float eps = kLayerNormalizationEps);
Module describe_layer_normalization(std::string name = "");
void visit_parameters(LayerNormalization& norm, const std::string& prefix,
                      const ParameterVisitor& visit);
inline void visit_parameters(LayerNormalization& norm, const ParameterVisitor& visit) {
  visit_parameters(norm, "", visit);
}

struct LayerNormalizationSteps {
  Tensor3 mean;        // (B,T,1) x.mean(-1)
  Tensor3 std;         // (B,T,1) x.std(-1): unbiased, divided by D - 1 (NaN when D = 1)
  Tensor3 normalised;  // (B,T,D) (x - mean) / (std + eps)
  Tensor3 output;      // (B,T,D) gamma * (x - mean) / (std + eps) + beta
};
LayerNormalizationSteps forward(const LayerNormalization& norm, const Tensor3& x);
// The backward of seed 001's forward: returns dX and adds dgamma, dbeta into `grad`. Through
// u = x - mean, s = std + eps, n = u / s with the unbiased std: du = gamma dY / s
// - (Σ gamma dY ⊙ u / s²) u / ((D - 1) std), then dX = du - mean(du). NaN when D = 1, as torch.
Tensor3 backward(const LayerNormalization& norm, const Tensor3& x,
                 const LayerNormalizationSteps& steps, const Tensor3& d_output,
                 LayerNormalization& grad);
Tensor3 layer_normalization_reference(const LayerNormalization& norm, const Tensor3& x);

// Where the norm sits in a residual block around `sublayer`:
//   pre  x + sublayer(LN(x))   the book (seed 000), seed 001's ResidualConnection
//   post LN(x + sublayer(x))   the original paper, BERT
enum class NormPlacement { pre, post };
Tensor3 residual_block(NormPlacement placement, const LayerNorm& norm, const Linear& sublayer,
                       const Tensor3& x);

}  // namespace attn
