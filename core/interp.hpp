// GPT-2's forward (core/gpt2.hpp) with interventions inside it, and what interpretability reads off
// it: activation patching (Meng et al. 2022, Wang et al. 2022; TransformerLens's
// patching.get_act_patch_resid_pre and get_act_patch_attn_head_out_all_pos) and direct logit
// attribution (Elhage et al. 2021; TransformerLens's cache.apply_ln_to_stack). Legend: B batch,
// T tokens, D n_embd, H n_head, hs = D/H, V vocab_size, L n_layer.
//
//   x_0        = wte[ids] + wpe[0..T-1]                                      (B,T,D)
//   block l    x_l ← R_l(x_l)                   resid_pre: a residual intervention
//              z_h = softmax(Q_h K_hᵀ / √hs + m) V_h,  Q, K, V from ln_1(x_l)  (B,T,hs) each head
//              z   ← Z_l([z_0 | ... | z_{H-1}])  the heads side by side       (B,T,H·hs)
//              a   = x_l + c_proj(z) = x_l + Σ_h z_h W_O[h] + b_O              (B,T,D)
//              x_{l+1} = a + mlp(ln_2(a))                                      (B,T,D)
//   final      logits = ln_f(x_L) wteᵀ
//
// R_l replaces one token's stream (one batch row, one position); Z_l replaces a head's slice
// (some rows and positions, or all): zeros are zero-ablation, a mean over a reference set is
// mean-ablation, another run's values are patching. Each batch row carries its own interventions,
// so that patching every position (or every head) of a layer is one batched forward.
//
// Direct logit attribution: x_L is a sum of parts (the embeddings, each head's z_h W_O[h], each
// layer's b_O, each MLP). With ln_f's scale s = 1/√(var(x_L) + eps) frozen at the run's,
// ln_f(x_L)·u = Σ_parts s (part - mean(part))·(γ ⊙ u) + β·u for an unembedding direction
// u = W_U[answer] - W_U[wrong], so the parts' shares sum to the logit difference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/budget.hpp"
#include "gpt2.hpp"

namespace attn {

// Head `head` of block `layer` outputs `values` instead of what it computed: in batch row `row`
// (none: every row), at position `position` (none: every position).
struct HeadIntervention {
  std::size_t layer = 0, head = 0;
  std::optional<std::size_t> row;
  std::optional<std::size_t> position;
  Tensor2 values;  // (T,hs): row t is put at position t (only `position`'s row is read when one)
};

// The residual stream entering block `layer` (TransformerLens's resid_pre; `layer` = L: ln_f's
// input) is `values` at one position of one batch row.
struct ResidualIntervention {
  std::size_t layer = 0;
  std::size_t row = 0, position = 0;
  Tensor1 values;  // (D)
};

struct Interventions {
  std::vector<HeadIntervention> heads;
  std::vector<ResidualIntervention> residual;
};

enum class InterpLogits {
  all,   // (B,T,V)
  last,  // (B,1,V): the last position only, what patching reads
  none,
};

// What a run computed. The caches are empty unless asked for.
struct InterpRun {
  std::vector<Tensor3> residual;       // L+1 of (B,T,D): x_l entering block l (after R_l); [L] x_L
  std::vector<Tensor3> heads;          // L of (B,T,H·hs): z after Z_l
  std::vector<Tensor4> attention;      // L of (B,H,T,T): the heads' weights
  std::vector<Tensor3> attention_out;  // L of (B,T,D): c_proj(z), bias included
  std::vector<Tensor3> mlp_out;        // L of (B,T,D)
  Tensor2 final_scale;                 // (B,T) ln_f's 1/√(var + eps) per token
  Tensor3 logits;                      // (B,T,V), (B,1,V) or empty
};

// The forward above on ids (B,T) (no padding). Throws attn::Error as forward(Gpt2) does, and for
// an intervention naming a layer, head, row or position the run does not have, or values of the
// wrong shape.
InterpRun forward_with_interventions(const Gpt2& model, const Ids& ids,
                                     const Interventions& interventions = {}, bool cache = true,
                                     InterpLogits logits = InterpLogits::all);
// What forward_with_interventions holds on ids (B,T) beside the weights.
MemoryPlan plan_interventions(const Gpt2Config& config, std::size_t batch, std::size_t tokens,
                              bool cache, InterpLogits logits);

// The logit difference logits[answer] - logits[wrong] at batch row `row`, the last position,
// for every row of a run's logits ((B,T,V) or (B,1,V)): (B).
std::vector<float> logit_differences(const Tensor3& logits, std::int64_t answer,
                                     std::int64_t wrong);

// Activation patching of a clean run into a corrupt one (ids (1,T) each, the same T): how much of
// the clean logit difference each patch restores, (patched - corrupt) / (clean - corrupt), 1 = all
// of it, 0 = none. One batched forward per layer: row p patches position p; row h patches head h.
struct Patching {
  float clean = 0, corrupt = 0;  // the logit differences at the last position
  Tensor2 residual;              // (L,T) the clean x_l at position p, in the corrupt run
  Tensor2 heads;                 // (L,H) the clean z_h at every position, in the corrupt run
  Tensor2 residual_difference;   // (L,T) the patched runs' logit differences
  Tensor2 heads_difference;      // (L,H)
};
// Throws attn::Error(bad_value) when the clean and corrupt logit differences are equal (nothing to
// restore), and as forward_with_interventions.
Patching activation_patching(const Gpt2& model, const Ids& clean, const Ids& corrupt,
                             std::int64_t answer, std::int64_t wrong);
// What activation_patching holds beside the weights.
MemoryPlan plan_patching(const Gpt2Config& config, std::size_t tokens);

// Each part's direct share of logits[answer] - logits[wrong] at (row, last position) of a cached
// run, through ln_f with the run's scale frozen. total = the sum of every share; difference = the
// run's own logit difference, which it equals up to float32 round-off.
struct LogitAttribution {
  float embeddings = 0;     // wte[ids] + wpe
  Tensor2 heads;            // (L,H) z_h W_O[h]
  std::vector<float> mlps;  // (L)
  float biases = 0;         // every c_proj's b_O, and ln_f's β
  float total = 0, difference = 0;
};
LogitAttribution direct_logit_attribution(const Gpt2& model, const InterpRun& run, std::size_t row,
                                          std::int64_t answer, std::int64_t wrong);

}  // namespace attn
