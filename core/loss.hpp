// What training minimises: cross-entropy of a per-token classifier, as
// F.cross_entropy(logits.reshape(-1, C), labels.reshape(-1)) with the mean over every token.
// Legend: B batch, T tokens, C classes.
#pragma once

#include "embedding.hpp"
#include "tensor.hpp"

namespace attn {

struct CrossEntropySteps {
  Tensor3 probabilities;    // (B,T,C) softmax of the logits, computed in double
  double loss = 0.0;        // the mean over the B·T tokens of -log p[label]
  std::size_t correct = 0;  // tokens whose largest logit is their label
};

// logits (B,T,C), labels (B,T) in 0..C-1 (throws attn::Error naming the first outside).
CrossEntropySteps cross_entropy(const Tensor3& logits, const Ids& labels);
// dLoss/dlogits = (p - onehot(label)) / (B·T).
Tensor3 cross_entropy_backward(const CrossEntropySteps& steps, const Ids& labels);

}  // namespace attn
