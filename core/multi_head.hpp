// Multi-head attention, the four ways the notebooks write it. Legend: B batch, T tokens, D model
// width (seed 004 calls it k), H heads, hs head size.
//
//   wide   seed 004 MultiHeadAttention(k, heads): tokeys/toqueries/tovalues = Linear(k, k*H,
//          bias=False), unifyheads = Linear(k*H, k); every head has size k.
//   narrow the same class with Linear(k, k, bias=False) split into H chunks of k/H.
//   book   seeds 000/003 MultiHeadAttention(config): heads = ModuleList of H AttentionHead(D, D/H),
//          output_linear = Linear(D, D).
//   fused  seed 001 MultiHeadAttention(d_model, h): W_Q, W_K, W_V, W_O = Linear(D, D, bias=False),
//          one projection viewed as H heads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "attention.hpp"
#include "base/budget.hpp"
#include "module_size.hpp"
#include "trace.hpp"

namespace attn {

enum class MultiHeadVariant { narrow, wide, book, fused };
inline constexpr MultiHeadVariant kMultiHeadVariants[] = {
    MultiHeadVariant::narrow, MultiHeadVariant::wide, MultiHeadVariant::book,
    MultiHeadVariant::fused};
std::string_view variant_name(MultiHeadVariant variant);
// The variant of that name ("narrow", ...), or none.
std::optional<MultiHeadVariant> multi_head_variant(std::string_view name);

struct MultiHeadSteps {
  Tensor4 queries;       // (B,H,T,hs)
  Tensor4 keys;          // (B,H,T,hs)
  Tensor4 values;        // (B,H,T,hs)
  Tensor4 scores;        // (B,H,T,T) Q Kᵀ / sqrt(hs), plus the mask
  Tensor4 weights;       // (B,H,T,T)
  Tensor3 concatenated;  // (B,T,H*hs) the heads' outputs side by side
  Tensor3 output;        // (B,T,D) after the output projection
};

// Head ablation: ablated[h] zeroes head h's output, its slice of the concatenation, before the
// output projection (so the layer computes W_O applied to the other heads alone). Empty, or every
// entry false: every head kept. Not a parameter: it is in no state_dict.
using HeadMask = std::vector<bool>;

// Seed 004's class: one projection per role, H*hs wide, cut into H heads; unifyheads joins them.
// Narrow and wide are this class at two sizes, kept as two types so that a layer says which it is.
struct Seed004MultiHead {
  std::size_t heads = 0;
  Linear tokeys, toqueries, tovalues, unifyheads;
  HeadMask ablated = {};
};
struct NarrowMultiHead : Seed004MultiHead {};  // hs = D / H
struct WideMultiHead : Seed004MultiHead {};    // hs = D

// The book's class: a module per head, each with its own q, k, v (with biases), on the whole input.
struct BookMultiHead {
  std::vector<AttentionHead> heads;  // heads.N
  Linear output_linear;
  HeadMask ablated = {};
};

// Seed 001's class: W_Q, W_K, W_V, W_O, all D x D without bias; one projection viewed as H heads.
struct FusedMultiHead {
  std::size_t heads = 0;
  Linear W_Q, W_K, W_V, W_O;
  HeadMask ablated = {};
};

using MultiHeadAttention =
    std::variant<NarrowMultiHead, WideMultiHead, BookMultiHead, FusedMultiHead>;

MultiHeadVariant variant_of(const MultiHeadAttention& layer);
// D, H of a layer, read off its weights.
std::size_t model_width(const MultiHeadAttention& layer);
std::size_t head_count(const MultiHeadAttention& layer);

// hs for a variant: D for wide, D / H otherwise. Throws attn::Error when H does not divide D
// (narrow, book, fused) or a size is 0.
std::size_t head_size(MultiHeadVariant variant, std::size_t d_model, std::size_t heads);

MultiHeadAttention init_multi_head(Rng& rng, MultiHeadVariant variant, std::size_t d_model,
                                   std::size_t heads);
BookMultiHead init_book_multi_head(Rng& rng, std::size_t d_model, std::size_t heads);
Module describe_multi_head(MultiHeadVariant variant, std::size_t d_model, std::size_t heads);
// describe_multi_head's size, from one head for the book variant (whose tree has a module per
// head): for a memory budget without building the tree.
ModuleSize multi_head_size(MultiHeadVariant variant, std::size_t d_model, std::size_t heads);

// Each form's parameters, forward and backward. x (B,T,D); mask (B,T,T) additive or null.
// backward(layer, x, steps, dY, grad) is the backward of forward(layer, x, mask) from its steps
// (the mask is in the weights: a masked key has weight 0 and gets no gradient). It returns dX and
// adds every parameter's gradient into `grad`, a layer of the same form and sizes.
void visit_parameters(Seed004MultiHead& layer, const ParameterVisitor& visit);
MultiHeadSteps forward(const Seed004MultiHead& layer, const Tensor3& x, const Tensor3* mask);
Tensor3 backward(const Seed004MultiHead& layer, const Tensor3& x, const MultiHeadSteps& steps,
                 const Tensor3& d_output, Seed004MultiHead& grad);

void visit_parameters(BookMultiHead& layer, const ParameterVisitor& visit);
MultiHeadSteps forward(const BookMultiHead& layer, const Tensor3& x, const Tensor3* mask);
Tensor3 backward(const BookMultiHead& layer, const Tensor3& x, const MultiHeadSteps& steps,
                 const Tensor3& d_output, BookMultiHead& grad);

void visit_parameters(FusedMultiHead& layer, const ParameterVisitor& visit);
MultiHeadSteps forward(const FusedMultiHead& layer, const Tensor3& x, const Tensor3* mask);
Tensor3 backward(const FusedMultiHead& layer, const Tensor3& x, const MultiHeadSteps& steps,
                 const Tensor3& d_output, FusedMultiHead& grad);

// Seed 001's MultiHeadAttention.forward(x, memory, memory, mask): queries from x (B,T,D), keys and
// values from memory (B,S,D); its self-attention is memory = x. `mask` (B,H,T,S) as the seed
// applies it (masked_fill), or null. The steps' scores and weights are (B,H,T,S).
MultiHeadSteps forward(const FusedMultiHead& layer, const Tensor3& x, const Tensor3& memory,
                       const ScoreMask* mask);
struct CrossAttentionGradients {
  Tensor3 x;       // (B,T,D) through the queries
  Tensor3 memory;  // (B,S,D) through the keys and values
};
// Its backward: adds W_Q, W_K, W_V, W_O's gradients into `grad`. For self-attention the input's
// gradient is x + memory.
CrossAttentionGradients backward(const FusedMultiHead& layer, const Tensor3& x,
                                 const Tensor3& memory, const MultiHeadSteps& steps,
                                 const ScoreMask* mask, const Tensor3& d_output,
                                 FusedMultiHead& grad);

// Zeroes the ablated heads' slices of `concatenated` (B,T,H*hs) in place; throws attn::Error
// when the mask has more entries than H.
void zero_ablated_heads(Tensor3& concatenated, const HeadMask& ablated, std::size_t heads);
// Marks head `head` of a layer ablated; throws attn::Error about "ablate" when there is no such
// head.
void ablate_head(MultiHeadAttention& layer, std::size_t head);
void ablate_head(BookMultiHead& layer, std::size_t head);
void ablate_head(FusedMultiHead& layer, std::size_t head);

// (B,T,H*hs) -> (B*H,T,hs), torch's x.view(B,T,H,hs).transpose(1,2), and back.
Tensor3 split_into_heads(const Tensor3& x, std::size_t heads);
Tensor3 merge_from_heads(const Tensor3& y, std::size_t heads);

// Any form: the calls above for the form the layer holds (`grad` must hold the same form).
void visit_parameters(MultiHeadAttention& layer, const ParameterVisitor& visit);
MultiHeadSteps forward(const MultiHeadAttention& layer, const Tensor3& x, const Tensor3* mask);
Tensor3 backward(const MultiHeadAttention& layer, const Tensor3& x, const MultiHeadSteps& steps,
                 const Tensor3& d_output, MultiHeadAttention& grad);

// The output of forward() computed in float64 from the float32 weights and x: the output without
// float32's round-off, for checks that compare two float32 results.
Tensor3d forward_float64(const MultiHeadAttention& layer, const Tensor3& x, const Tensor3* mask);
// Seed 001's bug: `attention_weights @ key` instead of `@ value`.
Tensor3 forward_with_seed001_bug(const FusedMultiHead& layer, const Tensor3& x,
                                 const Tensor3* mask);
// For a memory budget (core/base/budget.hpp) on x (B,T,D): MultiHeadSteps' tensors; what forward()
// holds beside them at its peak (the heads' own steps it gathers them from, the projections, the
// mask repeated for each head); what forward_float64 holds.
MemoryPlan plan_multi_head(MultiHeadVariant variant, std::size_t batch, std::size_t tokens,
                           std::size_t d_model, std::size_t heads);
MemoryPlan plan_multi_head_temporaries(MultiHeadVariant variant, std::size_t batch,
                                       std::size_t tokens, std::size_t d_model, std::size_t heads,
                                       bool masked);
MemoryPlan plan_multi_head_float64(MultiHeadVariant variant, std::size_t batch, std::size_t tokens,
                                   std::size_t d_model, std::size_t heads);

// torchinfo's rows for the variant on an input of `shape` (B,T,D).
std::vector<LayerInfo> trace_multi_head(MultiHeadVariant variant, std::size_t d_model,
                                        std::size_t heads, const Shape& shape);

// The fused layer that computes the same function as a book layer whose biases are zero: each
// W_Q/W_K/W_V stacks the heads' weights, W_O is output_linear's weight.
FusedMultiHead stack_book_heads(const BookMultiHead& book);

}  // namespace attn
