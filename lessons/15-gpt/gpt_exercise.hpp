// Lesson 15's exercise: GPT-2's causal self-attention on its c_attn layout, and one GPT-2 block
// (pre-LN, the MLP with GELU's tanh form), as transformers' GPT2Attention and GPT2Block compute
// them. The structs hold transformers' weights under their state_dict keys; you write the bodies
// in gpt_exercise.cpp.
//
// Legend: B batch, T tokens, D n_embd, H n_head, hs = D/H head size, F n_inner (the MLP's width).
#pragma once

#include <cstddef>
#include <string>

#include "base/tensor.hpp"
#include "layer_norm.hpp"
#include "linear.hpp"

namespace attn::exercise {

// transformers' Conv1D: a Linear whose weight is stored (in, out), y = x W + b.
struct Conv1D {
  Tensor2 weight;  // (in, out)
  Tensor1 bias;    // (out)
};

// GPT2Attention: c_attn's (D, 3D) columns are [q | k | v]; head h of q is columns h·hs to
// (h+1)·hs - 1 of the q block (k and v the same in theirs). c_proj (D, D) mixes the heads.
struct GptAttention {
  std::size_t heads = 1;
  Conv1D c_attn, c_proj;
};

// GPT2MLP: c_fc (D, F), GELU's tanh form, c_proj (F, D).
struct GptMlp {
  Conv1D c_fc, c_proj;
};

// GPT2Block: ln_1, attn, ln_2, mlp.
struct GptBlock {
  LayerNorm ln_1;
  GptAttention attn;
  LayerNorm ln_2;
  GptMlp mlp;
};

// x (B,T,in) -> x W + b (B,T,out). Throws std::invalid_argument when W's rows are not x's width
// or b is not as long as W's columns.
Tensor3 conv1d(const Conv1D& layer, const Tensor3& x);

struct CausalAttentionSteps {
  Tensor4 query;    // (B,H,T,hs) the q block of c_attn(x), split into heads
  Tensor4 key;      // (B,H,T,hs)
  Tensor4 value;    // (B,H,T,hs)
  Tensor4 scores;   // (B,H,T,T) Q Kᵀ / √hs, -inf where the key comes after the query
  Tensor4 weights;  // (B,H,T,T) softmax over the keys: zero above the diagonal
  Tensor3 context;  // (B,T,D) weights V, the heads side by side again (head h in columns h·hs..)
  Tensor3 output;   // (B,T,D) c_proj(context)
};

// x (B,T,D) -> every step of GPT2Attention.forward. Throws std::invalid_argument when H does not
// divide D or c_attn's and c_proj's shapes do not fit x.
CausalAttentionSteps causal_self_attention(const GptAttention& attention, const Tensor3& x);

struct GptBlockSteps {
  Tensor3 ln_1;       // (B,T,D) ln_1(x)
  Tensor3 attention;  // (B,T,D) causal self-attention's output on ln_1
  Tensor3 residual;   // (B,T,D) the stream after the first residual connection
  Tensor3 ln_2;       // (B,T,D) ln_2(residual)
  Tensor3 hidden;     // (B,T,F) mlp.c_fc(ln_2)
  Tensor3 gelu;       // (B,T,F) GELU's tanh form of hidden
  Tensor3 mlp;        // (B,T,D) mlp.c_proj(gelu)
  Tensor3 output;     // (B,T,D) the stream after the second residual connection
};

// x (B,T,D) -> every step of GPT2Block.forward. Throws std::invalid_argument as
// causal_self_attention does, and when the MLP's shapes do not fit.
GptBlockSteps forward(const GptBlock& block, const Tensor3& x);

// The weights under transformers' keys ("ln_1.weight", "attn.c_attn.weight", ...), for the tests.
inline void visit_parameters(Conv1D& layer, const std::string& prefix,
                             const ParameterVisitor& visit) {
  visit(prefix + "weight", layer.weight.data(), {layer.weight.shape(0), layer.weight.shape(1)});
  visit(prefix + "bias", layer.bias.data(), {layer.bias.shape(0)});
}
inline void visit_parameters(GptBlock& block, const ParameterVisitor& visit) {
  attn::visit_parameters(block.ln_1, "ln_1.", visit);
  visit_parameters(block.attn.c_attn, "attn.c_attn.", visit);
  visit_parameters(block.attn.c_proj, "attn.c_proj.", visit);
  attn::visit_parameters(block.ln_2, "ln_2.", visit);
  visit_parameters(block.mlp.c_fc, "mlp.c_fc.", visit);
  visit_parameters(block.mlp.c_proj, "mlp.c_proj.", visit);
}
// A block of these sizes, every weight zero and the norms' eps GPT-2's 1e-5, to load into.
inline GptBlock gpt_block(std::size_t d_model, std::size_t heads, std::size_t d_inner) {
  const auto conv = [](std::size_t in, std::size_t out) {
    return Conv1D{Tensor2({in, out}, 0.0f), Tensor1({out}, 0.0f)};
  };
  return {init_layer_norm(d_model),
          {heads, conv(d_model, 3 * d_model), conv(d_model, d_model)},
          init_layer_norm(d_model),
          {conv(d_model, d_inner), conv(d_inner, d_model)}};
}

}  // namespace attn::exercise
