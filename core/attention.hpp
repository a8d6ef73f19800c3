// One attention head with learned projections. Legend: B batch, T query tokens, S key tokens,
// D model width, hs head size.
//
// Two notebook classes: seed 004's SelfAttention(k) (tokeys, toqueries, tovalues =
// Linear(k, k, bias=False), scaled by sqrt(k)) and seed 000's AttentionHead(embed_dim, head_dim)
// (q, k, v = Linear(embed_dim, head_dim) with bias).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "base/budget.hpp"
#include "base/tensor.hpp"
#include "linear.hpp"
#include "module.hpp"
#include "trace.hpp"

namespace attn {

struct AttentionSteps {
  Tensor3 queries;        // (B,T,hs)
  Tensor3 keys;           // (B,S,hs)
  Tensor3 values;         // (B,S,hs)
  Tensor3 scores;         // (B,T,S) Q Kᵀ
  Tensor3 scaled_scores;  // (B,T,S) Q Kᵀ / sqrt(hs), plus the mask when there is one
  Tensor3 weights;        // (B,T,S) softmax over the keys
  Tensor3 output;         // (B,T,hs) weights @ V
};

// softmax(Q Kᵀ / sqrt(hs) + mask) V, with hs the keys' last size. `mask` is additive (B,T,S):
// 0 where a query may look, -inf where it may not; null for none.
AttentionSteps scaled_dot_product_attention(const Tensor3& queries, const Tensor3& keys,
                                            const Tensor3& values, const Tensor3* mask);

// The backward of scaled_dot_product_attention for the gradient d_output (B,T,hv), from its
// steps: dV = Pᵀ dY, dP = dY Vᵀ, dS = the softmax's backward, then through the division by √hs,
// dQ = dS K and dK = dSᵀ Q. A masked score gets no gradient.
struct AttentionGradients {
  Tensor3 queries;  // (B,T,hs)
  Tensor3 keys;     // (B,S,hs)
  Tensor3 values;   // (B,S,hv)
};
AttentionGradients scaled_dot_product_attention_backward(const AttentionSteps& steps,
                                                         const Tensor3& d_output);
// The same from the four tensors it needs: queries (B,T,hs), keys (B,S,hs), values (B,S,hv) and
// the weights (B,T,S).
// With `keep` (B,T,S), the scores replaced where keep is 0 (masked_fill) get no gradient.
AttentionGradients attention_backward(const Tensor3& queries, const Tensor3& keys,
                                      const Tensor3& values, const Tensor3& weights,
                                      const Tensor3& d_output, const Tensor3* keep = nullptr);

// Seed 001's masks: scores.masked_fill(mask == 0, fill), the mask broadcast against the scores
// (B,H,T,S) as torch broadcasts it. A masked score is replaced, not added to: with the seed's
// -1e9 a row masked everywhere gets uniform weights (every score equal); with PyTorch's -inf it
// gets none (zeros here; NaN in torch, whose softmax divides 0 by 0).
enum class MaskFill { seed, torch };
float fill_value(MaskFill fill);            // -1e9f, -inf
std::string_view fill_name(MaskFill fill);  // "seed", "torch"
std::string_view fill_text(MaskFill fill);  // "-1e9", "-inf"
struct ScoreMask {
  Tensor4 keep;  // (B,H,T,S): 1 where a query may look, 0 where its score is replaced
  MaskFill fill = MaskFill::seed;
};
// `mask` (1 to 4 axes, any dtype; nonzero keeps) broadcast to (B,H,T,S) by torch's rules: axes
// aligned from the right, each of size 1 or the scores' size. Throws Error(bad_size) naming both
// shapes when it does not broadcast.
ScoreMask broadcast_mask(const Array& mask, std::size_t batch, std::size_t heads,
                         std::size_t queries, std::size_t keys, MaskFill fill);
// The masks the seed's model is given, int64 0/1: the source's padding (B,1,1,S), 1 on the first
// lengths[b] keys; the target's (B,1,T,T), causal and 0 on keys at or past lengths[b]. Throws
// Error(bad_size) for a length of 0 or past the axis.
Array source_padding_mask(const std::vector<std::size_t>& lengths, std::size_t keys);
Array target_causal_mask(const std::vector<std::size_t>& lengths, std::size_t tokens);
// scores (B*H,T,S) with every score whose keep is 0 replaced by the fill (keep as (B*H,T,S)).
void apply_mask(const ScoreMask& mask, Tensor3& scores);

// softmax(Q Kᵀ / divisor + mask) V in float64: what a float32 attention would give without its
// round-off (to float64's), for checks that compare two float32 results. A fully masked row
// gives zeros, as softmax() does. Queries (B,T,hs), keys (B,S,hs), values (B,S,hv).
Tensor3d attention_float64(const Tensor3d& queries, const Tensor3d& keys, const Tensor3d& values,
                           double divisor, const Tensor3* mask);

// For a memory budget (core/base/budget.hpp) on (B,T,D): AttentionSteps' tensors; what the forward of
// SelfAttention or AttentionHead holds beside them at its peak (the three projections it copies
// into them); what forward_float64 holds (x, Q, K, V and the output in float64).
MemoryPlan plan_attention(std::size_t batch, std::size_t tokens, std::size_t head_size);
MemoryPlan plan_attention_temporaries(std::size_t batch, std::size_t tokens, std::size_t head_size);
MemoryPlan plan_attention_float64(std::size_t batch, std::size_t tokens, std::size_t width,
                                  std::size_t head_size);

// The additive (B,T,T) mask: -inf above the diagonal when `causal`, and -inf on the keys at or
// past lengths[b] (padding) when `lengths` is not empty. Throws attn::Error for a length of 0 or
// past T, or a lengths list that is not B long.
Tensor3 attention_mask(std::size_t batch, std::size_t tokens, bool causal,
                       const std::vector<std::size_t>& lengths);

// Seed 004: SelfAttention(k).
struct SelfAttention {
  Linear tokeys, toqueries, tovalues;  // Linear(k, k, bias=False)
};
SelfAttention init_self_attention(Rng& rng, std::size_t k);
Module describe_self_attention(std::size_t k);
void visit_parameters(SelfAttention& layer, const ParameterVisitor& visit);
AttentionSteps forward(const SelfAttention& layer, const Tensor3& x, const Tensor3* mask);
// Returns dX and adds the projections' gradients into `grad` (see Linear's backward).
Tensor3 backward(const SelfAttention& layer, const Tensor3& x, const AttentionSteps& steps,
                 const Tensor3& d_output, SelfAttention& grad);
// The output of forward() computed in float64 (see attention_float64), divided by √hs.
Tensor3d forward_float64(const SelfAttention& layer, const Tensor3& x, const Tensor3* mask);
// torchinfo's rows for SelfAttention(k) on an input of `shape` (B,T,k).
std::vector<LayerInfo> trace_self_attention(std::size_t k, const Shape& shape);

// Seed 000: AttentionHead(embed_dim, head_dim).
struct AttentionHead {
  Linear q, k, v;  // Linear(embed_dim, head_dim)
};
AttentionHead init_attention_head(Rng& rng, std::size_t embed_dim, std::size_t head_dim);
Module describe_attention_head(std::size_t embed_dim, std::size_t head_dim, std::string name = "");
void visit_parameters(AttentionHead& head, const std::string& prefix,
                      const ParameterVisitor& visit);
inline void visit_parameters(AttentionHead& head, const ParameterVisitor& visit) {
  visit_parameters(head, "", visit);
}
AttentionSteps forward(const AttentionHead& head, const Tensor3& x, const Tensor3* mask);
// Returns dX and adds the projections' gradients into `grad` (see Linear's backward).
Tensor3 backward(const AttentionHead& head, const Tensor3& x, const AttentionSteps& steps,
                 const Tensor3& d_output, AttentionHead& grad);
Tensor3d forward_float64(const AttentionHead& head, const Tensor3& x, const Tensor3* mask);
// Adds the rows of one AttentionHead call (the head, then q, k, v) to `trace`.
void trace_attention_head(Trace& trace, const Module& head, const Shape& shape);
std::vector<LayerInfo> trace_attention_head(std::size_t embed_dim, std::size_t head_dim,
                                            const Shape& shape);

}  // namespace attn
