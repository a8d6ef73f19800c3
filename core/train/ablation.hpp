// Head ablation on a trained model: zero chosen heads' outputs (their slices of the concatenation,
// before the output projection; multi_head.hpp's HeadMask) and measure what the model loses.
#pragma once

#include <cstddef>
#include <vector>

#include "attention_view.hpp"
#include "train/trainer.hpp"

namespace attn {

// Head `head` of layer `layer`.
struct HeadRef {
  std::size_t layer = 0, head = 0;
};

// Marks the heads ablated in one attention of the model: an encoder's self-attention (`part`
// encoder), or the encoder-decoder's encoder, decoder self- or cross-attention. Throws
// attn::Error about "ablate" for a layer or head the model does not have, and about "part" for a
// decoder or cross part of an encoder.
void ablate_heads(TrainedModel& model, const std::vector<HeadRef>& heads,
                  ViewPart part = ViewPart::encoder);
// The same, on a copy.
TrainedModel ablated_copy(const TrainedModel& model, const std::vector<HeadRef>& heads,
                          ViewPart part = ViewPart::encoder);
// The same, and the heads also ablated in the weights: the output projection's columns that read
// their slices are zeroed, which gives the same outputs in every code path, including those that
// read only the weights (a state_dict, the decoding cache).
void ablate_heads_in_weights(TrainedModel& model, const std::vector<HeadRef>& heads,
                             ViewPart part = ViewPart::encoder);

// A model's held-out score with and without some heads, by name as a checkpoint records it: an
// encoder's token and sequence accuracy, an encoder-decoder's exact match and token accuracy, on
// `examples` held-out sequences (the encoder-decoder's: sources). Throws as ablate_heads.
struct AblationEffect {
  HeldOutResults before, after;
  std::size_t examples = 0;
};
AblationEffect measure_ablation(const TrainedModel& model, const TrainConfig& config,
                                const std::vector<HeadRef>& heads, ViewPart part,
                                std::size_t examples);

}  // namespace attn
