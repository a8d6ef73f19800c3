// Head ablation on a GPT-2 model (core/interp.hpp's interventions): the next-token loss and top-1
// accuracy on a probe set, before and after some heads' outputs are replaced, for `attn heads
// --ablate L.H,... --ablate-with zero|mean`.
//
//   zero  the head's output z_h (its hs numbers before the output projection) is 0 everywhere.
//   mean  z_h at position t is its mean over the probe set's sequences at position t, from the
//         unablated run (TransformerLens's cache[hook_z].mean(0)): per position, over the batch.
//         It needs at least 2 sequences (with one, the mean is the run itself).
// The loss is transformers' GPT2LMHeadModel loss: the mean over B·(T-1) tokens of -log p of the
// next token; accuracy counts the tokens whose largest logit is the next token.
#pragma once

#include <cstddef>
#include <vector>

#include "gpt2.hpp"
#include "train/ablation.hpp"

namespace attn {

enum class AblationMode { zero, mean };

struct HeadAblationEffect {
  double loss_before = 0, loss_after = 0;
  double accuracy_before = 0, accuracy_after = 0;  // fractions in [0, 1]
  std::size_t tokens = 0;                          // B·(T-1) scored tokens
};

// ids (B,T), T >= 2; only the predictions of positions `from` and later are scored (the repeated
// half of a probe, where induction can help). Throws attn::Error about "ablate" for a head the
// model does not have, and (bad_value) for mean with fewer than 2 sequences; otherwise as
// forward(Gpt2).
HeadAblationEffect measure_head_ablation(const Gpt2& model, const Ids& ids,
                                         const std::vector<HeadRef>& heads, AblationMode mode,
                                         std::size_t from = 0);
// What measure_head_ablation holds on ids (B,T) beside the weights.
MemoryPlan plan_head_ablation(const Gpt2Config& config, std::size_t batch, std::size_t tokens);

}  // namespace attn
