// What the attention lessons show of a model attn train trained: the input one layer's attention
// reads for a sequence of the task's tokens, that attention, and where it comes from.
#pragma once

#include <cstddef>
#include <string>

#include "base/tensor.hpp"
#include "lesson.hpp"
#include "multi_head.hpp"
#include "train/trainer.hpp"

namespace attn::lessons {

struct TrainedAttention {
  Tensor3 x;                // (1,T,D) what layer `layer`'s attention reads
  BookMultiHead attention;  // that layer's attention, the book's form
  TrainedSource source;     // the checkpoint, its task and what a solving head shows
};
// Layer `layer` of an encoder trained on `config`'s task, on `ids` (1,T) of its tokens; throws
// attn::Error about "layer" when the model has no such layer.
TrainedAttention trained_attention(const TokenClassifier& model, const TrainConfig& config,
                                   const Ids& ids, std::size_t layer,
                                   const std::string& checkpoint);

}  // namespace attn::lessons
