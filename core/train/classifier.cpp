#include "train/classifier.hpp"

#include <algorithm>

namespace attn {

namespace {
constexpr std::size_t kEvaluationBatch = 256;  // sequences a forward pass scores at once
}  // namespace

TokenClassifier init_token_classifier(Rng& rng, const EncoderConfig& config,
                                      NormPlacement placement, std::size_t classes) {
  TokenClassifier model;
  model.encoder = init_encoder(rng, config, placement, true);
  model.head = init_linear(rng, config.hidden_size, classes, true);
  return model;
}

void visit_parameters(TokenClassifier& model, const ParameterVisitor& visit) {
  visit_parameters(model.encoder, [&](const std::string& key, float* data, const Shape& shape) {
    visit("encoder." + key, data, shape);
  });
  visit_parameters(model.head, "head.", visit);
}

Tensor3 attention_input(const TokenClassifier& model, const Ids& ids, std::size_t layer) {
  const std::size_t layers = model.encoder.layers.size();
  if (layer >= layers) {
    throw Error(ErrorKind::bad_value, "attention_input",
                fmt::format("layer {} does not exist: the model has {} layer{}, 0 to {}", layer,
                            layers, layers == 1 ? "" : "s", layers - 1))
        .about("layer");
  }
  Tensor3 x = forward(model.encoder.embeddings, ids).output;
  for (std::size_t i = 0; i < layer; ++i)
    x = forward(model.encoder.layers[i], x).output;
  const EncoderLayer& at = model.encoder.layers[layer];
  return at.placement == NormPlacement::pre ? forward(at.layer_norm_1, x).output : x;
}

TokenClassifierTape forward(const TokenClassifier& model, const Ids& ids, const Ids& labels,
                            const Tensor3* mask, Rng* dropout) {
  TokenClassifierTape tape;
  tape.encoder = forward_tape(model.encoder, ids, mask, dropout);
  tape.logits = forward(model.head, tape.encoder.output());
  tape.loss = cross_entropy(tape.logits, labels);
  return tape;
}

void backward(const TokenClassifier& model, const TokenClassifierTape& tape, const Ids& labels,
              TokenClassifier& grad) {
  const Tensor3 d_hidden = backward(model.head, tape.encoder.output(),
                                    cross_entropy_backward(tape.loss, labels), grad.head);
  backward(model.encoder, tape.encoder, d_hidden, grad.encoder);
}

Evaluation evaluate(const TokenClassifier& model, const TaskBatch& set) {
  Evaluation e;
  e.sequences = set.ids.shape(0);
  const std::size_t t = set.ids.shape(1);
  std::size_t right_tokens = 0, scored_tokens = 0, right_sequences = 0;
  for (std::size_t first = 0; first < e.sequences; first += kEvaluationBatch) {
    const std::size_t n = std::min(kEvaluationBatch, e.sequences - first);
    Ids ids({n, t}), labels({n, t});
    std::copy(set.ids.data() + first * t, set.ids.data() + (first + n) * t, ids.data());
    std::copy(set.labels.data() + first * t, set.labels.data() + (first + n) * t, labels.data());
    const Tensor3 logits = forward(model.head, forward_tape(model.encoder, ids).output());
    const std::size_t classes = logits.shape(2);
    for (std::size_t s = 0; s < n; ++s) {
      bool all = true;
      std::vector<std::int64_t> answer(t, kIgnoredLabel);
      for (std::size_t i = 0; i < t; ++i) {
        if (labels(s, i) == kIgnoredLabel) continue;
        const float* z = logits.data() + (s * t + i) * classes;
        const auto best = static_cast<std::int64_t>(std::max_element(z, z + classes) - z);
        answer[i] = best;
        const bool right = best == labels(s, i);
        right_tokens += right;
        ++scored_tokens;
        all = all && right;
      }
      right_sequences += all;
      e.sequences_wrong += all ? 0 : 1;
      if (!all && e.wrong.size() < kWrongKept) e.wrong.push_back({first + s, std::move(answer)});
    }
  }
  e.token_accuracy = scored_tokens > 0
                         ? static_cast<double>(right_tokens) / static_cast<double>(scored_tokens)
                         : 0.0;
  e.sequence_accuracy = static_cast<double>(right_sequences) / static_cast<double>(e.sequences);
  return e;
}

}  // namespace attn
