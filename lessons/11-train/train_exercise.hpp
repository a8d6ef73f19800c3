// Lesson 11's exercise: the two pieces of a training step that are not a layer's backward, the
// gradient of the loss and the optimiser's update, as core/loss.hpp and core/train/optimizer.hpp have
// them. You write the bodies in train_exercise.cpp; the tests hold them to torch.
//
// Legend: B batch, T tokens, C classes.
#pragma once

#include <cstdint>

#include "base/tensor.hpp"
#include "embedding.hpp"

namespace attn::exercise {

// dL/dlogits of F.cross_entropy(logits.reshape(-1, C), labels.reshape(-1)), the mean over the N
// labels that are not -100 (ignore_index): (softmax(logits) - onehot(label)) / N on those rows,
// 0 on the ignored ones. logits (B,T,C), labels (B,T) in 0..C-1 or -100.
Tensor3 cross_entropy_backward(const Tensor3& logits, const Ids& labels);

// torch.optim.AdamW's hyperparameters.
struct AdamWSettings {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 1e-2f;
};

// One parameter tensor (flattened) and AdamW's two moments of it (exp_avg, exp_avg_sq).
struct AdamWState {
  Tensor1 value, first_moment, second_moment;
};

// The state after step number `step` (1 for the first) with gradient `grad`, as
// torch.optim.AdamW (foreach=False) updates one parameter.
AdamWState adamw_step(const AdamWState& state, const Tensor1& grad, std::int64_t step,
                      const AdamWSettings& settings);

}  // namespace attn::exercise
