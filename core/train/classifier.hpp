// What `attn train` trains: the book's TransformerEncoder with a Linear(D, C) head on every
// token, and cross-entropy against one label per token. Its state_dict keys are those of
//
//   class TokenClassifier(nn.Module):
//       def __init__(self, config, classes):
//           super().__init__()
//           self.encoder = TransformerEncoder(config)     # the book's classes
//           self.head = nn.Linear(config.hidden_size, classes)
//       def forward(self, ids):
//           return self.head(self.encoder(ids))
//
// Legend: B batch, T tokens, D model width, C classes.
#pragma once

#include <vector>

#include "encoder.hpp"
#include "loss.hpp"
#include "train/tasks.hpp"

namespace attn {

struct TokenClassifier {
  Encoder encoder;  // with embeddings
  Linear head;      // Linear(D, C)
};

// PyTorch's default initialisation: the encoder's modules in registration order, then the head.
TokenClassifier init_token_classifier(Rng& rng, const EncoderConfig& config,
                                      NormPlacement placement, std::size_t classes);
// Keys "encoder.<TransformerEncoder key>", then "head.weight" and "head.bias".
void visit_parameters(TokenClassifier& model, const ParameterVisitor& visit);

struct TokenClassifierTape {
  EncoderTape encoder;
  Tensor3 logits;  // (B,T,C)
  CrossEntropySteps loss;
};

// The hidden states layer `layer`'s attention reads for ids (B,T): LN1 of the layer's input in
// pre-LN, the input itself in post-LN. Throws attn::Error when the model has no such layer.
Tensor3 attention_input(const TokenClassifier& model, const Ids& ids, std::size_t layer);

// ids (B,T), labels (B,T); `mask` (B,T,T) additive or null; with `dropout`, train mode (the
// encoder's dropouts draw their masks from it).
TokenClassifierTape forward(const TokenClassifier& model, const Ids& ids, const Ids& labels,
                            const Tensor3* mask = nullptr, Rng* dropout = nullptr);
// The gradient of the mean loss, added into `grad`.
void backward(const TokenClassifier& model, const TokenClassifierTape& tape, const Ids& labels,
              TokenClassifier& grad);

struct Evaluation {
  double token_accuracy = 0.0;     // every labelled position of every sequence (masked: the "?"s)
  double sequence_accuracy = 0.0;  // sequences with every labelled position right
  std::size_t sequences = 0;
  std::size_t sequences_wrong = 0;
  // The first kWrongKept sequences not entirely right: their index in the set, and what the model
  // answered at every position.
  struct Wrong {
    std::size_t index = 0;
    std::vector<std::int64_t> answer;
  };
  std::vector<Wrong> wrong;
};
inline constexpr std::size_t kWrongKept = 8;
// The model's greedy answers on a set of sequences, scored against their labels.
Evaluation evaluate(const TokenClassifier& model, const TaskBatch& set);

}  // namespace attn
