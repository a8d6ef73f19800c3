#include "train/classifier.hpp"

namespace attn {

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

}  // namespace attn
