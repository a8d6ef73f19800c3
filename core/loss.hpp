// What training minimises: cross-entropy of a per-token classifier, as
// F.cross_entropy(logits.reshape(-1, C), labels.reshape(-1)) with the mean over every token whose
// label is not kIgnoredLabel (PyTorch's ignore_index, -100: a masked-token task scores only the
// masked positions).
// Legend: B batch, T tokens, C classes.
#pragma once

#include "base/tensor.hpp"
#include "embedding.hpp"

namespace attn {

inline constexpr std::int64_t kIgnoredLabel = -100;

struct CrossEntropySteps {
  Tensor3 probabilities;    // (B,T,C) softmax of the logits, computed in double
  double loss = 0.0;        // the mean over the N scored tokens of -log p[label]
  std::size_t scored = 0;   // N: tokens whose label is not kIgnoredLabel
  std::size_t correct = 0;  // scored tokens whose largest logit is their label
};

// logits (B,T,C), labels (B,T) in 0..C-1 or kIgnoredLabel (throws attn::Error naming the first
// other). With no token scored the loss is 0 (PyTorch's mean gives NaN).
CrossEntropySteps cross_entropy(const Tensor3& logits, const Ids& labels);
// dLoss/dlogits = (p - onehot(label)) / N on scored tokens, 0 on ignored ones.
Tensor3 cross_entropy_backward(const CrossEntropySteps& steps, const Ids& labels);

}  // namespace attn
