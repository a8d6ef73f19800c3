// Layer normalisation over each token's D numbers. Legend: B batch, T tokens, D model width.
//
//   nn.LayerNorm(D, eps)         y = (x - mean) / sqrt(var + eps) * weight + bias, with the mean
//                                and the biased variance (divided by D) of each token, weight and
//                                bias (D)
//   seed 001's LayerNormalization  y = gamma (x - mean) / (std + eps) + beta, with the unbiased
//                                std (divided by D - 1), eps outside the root, one scalar gamma
//                                and beta
//
// forward() computes both in the order torch 1.13 uses on an AVX2 CPU (kernels/rows.hpp), so the
// results are bit-identical to PyTorch's; the *_reference functions are the formulas as written.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/budget.hpp"
#include "base/tensor.hpp"
#include "kernels/rows.hpp"
#include "linear.hpp"
#include "module.hpp"
#include "trace.hpp"

namespace attn {

inline constexpr float kLayerNormEps = 1e-5f;           // nn.LayerNorm's default (BERT: 1e-12)
inline constexpr float kLayerNormalizationEps = 1e-6f;  // seed 001: self.eps = 10**-6

// A row's mean and Σ (x - mean)² in double, two passes: what the references compute the variance
// (divided by n) and the unbiased std (by n - 1) from.
struct RowSquares {
  double mean, squares;
};
RowSquares row_mean_squares(const float* x, std::size_t n);

// Throws attn::Error(function) unless eps is a positive, finite float32 (as the kernel adds it).
void check_eps(float eps, std::string_view function);

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

// The formula above in double, two passes, rounded once: the reference forward() is held to.
Tensor3 layer_norm_reference(const LayerNorm& norm, const Tensor3& x);

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
// LayerNormSteps' tensors on x (B,T,D), for a memory budget (core/base/budget.hpp).
MemoryPlan plan_layer_norm(std::size_t batch, std::size_t tokens, std::size_t width);
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

// Seed 001's formula in double, rounded once (NaN for D = 1, as the unbiased std).
Tensor3 layer_normalization_reference(const LayerNormalization& norm, const Tensor3& x);

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

// Where the norm sits in a residual block around `sublayer`:
//   pre  x + sublayer(LN(x))   the book (seed 000), seed 001's ResidualConnection
//   post LN(x + sublayer(x))   the original paper, BERT
enum class NormPlacement { pre, post };
Tensor3 residual_block(NormPlacement placement, const LayerNorm& norm, const Linear& sublayer,
                       const Tensor3& x);

}  // namespace attn
