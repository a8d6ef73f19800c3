#include "attention_view.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "attention.hpp"
#include "base/error.hpp"

namespace attn {

namespace {

// Copies batch entry 0 of each layer's steps into the (L,H,·,·) tensors of the view.
void fill(AttentionView& view, const std::vector<const MultiHeadSteps*>& steps) {
  const std::size_t L = steps.size();
  const MultiHeadSteps& first = *steps.front();
  const std::size_t H = first.weights.shape(1), T = first.weights.shape(2),
                    S = first.weights.shape(3), hs = first.queries.shape(3);
  view.layers = L;
  view.heads = H;
  view.head_size = hs;
  view.weights = Tensor4::from_shape({L, H, T, S});
  view.queries = Tensor4::from_shape({L, H, T, hs});
  view.keys = Tensor4::from_shape({L, H, S, hs});
  for (std::size_t l = 0; l < L; ++l) {
    const MultiHeadSteps& s = *steps[l];
    std::copy(s.weights.data(), s.weights.data() + H * T * S, view.weights.data() + l * H * T * S);
    std::copy(s.queries.data(), s.queries.data() + H * T * hs,
              view.queries.data() + l * H * T * hs);
    std::copy(s.keys.data(), s.keys.data() + H * S * hs, view.keys.data() + l * H * S * hs);
  }
}

void check_labels(const AttentionView& view) {
  if (view.rows.size() != view.weights.shape(2) || view.columns.size() != view.weights.shape(3))
    throw Error(ErrorKind::bad_size, "attention_view",
                fmt::format("{} and {} token labels for a {} x {} view", view.rows.size(),
                            view.columns.size(), view.weights.shape(2), view.weights.shape(3)));
}

// The self-attention of every layer of an encoder's run.
AttentionView self_attention_view(const std::vector<EncoderLayerTape>& layers,
                                  std::vector<std::string> tokens, std::string model,
                                  std::size_t pair_split) {
  AttentionView view;
  view.model = std::move(model);
  view.part = "self-attention";
  std::vector<const MultiHeadSteps*> steps;
  for (const EncoderLayerTape& layer : layers)
    steps.push_back(&layer.attention);
  fill(view, steps);
  view.rows = tokens;
  view.columns = std::move(tokens);
  view.pair_split = pair_split;
  check_labels(view);
  return view;
}

}  // namespace

AttentionView encoder_view(const Encoder& encoder, const Ids& ids, std::vector<std::string> tokens,
                           std::string model) {
  if (ids.shape(0) != 1 || encoder.layers.empty())
    throw Error(ErrorKind::bad_value, "encoder_view",
                "a view shows one sequence through at least one layer");
  return self_attention_view(forward_tape(encoder, ids).layers, std::move(tokens), std::move(model),
                             0);
}

AttentionView bert_view(const Bert& model, const BertInput& input, std::vector<std::string> tokens,
                        std::string name, std::size_t pair_split) {
  if (input.ids.shape(0) != 1 || model.layers.empty())
    throw Error(ErrorKind::bad_value, "bert_view",
                "a view shows one sequence through at least one layer");
  return self_attention_view(forward(model, input, false).layers, std::move(tokens),
                             std::move(name), pair_split);
}

AttentionView gpt2_view(const Gpt2& model, const Gpt2Input& input, std::vector<std::string> tokens,
                        std::string name) {
  if (input.ids.shape(0) != 1 || model.layers.empty())
    throw Error(ErrorKind::bad_value, "gpt2_view",
                "a view shows one sequence through at least one block");
  AttentionView view = self_attention_view(forward(model, input, false).layers, std::move(tokens),
                                           std::move(name), 0);
  view.part = "self-attention (causal)";
  view.causal = true;
  return view;
}

AttentionView transformer_view(const Transformer& model, const Ids& source, const Ids& target,
                               ViewPart part, std::vector<std::string> source_tokens,
                               std::vector<std::string> target_tokens, std::string name) {
  if (source.shape(0) != 1 || target.shape(0) != 1)
    throw Error(ErrorKind::bad_value, "transformer_view", "a view shows one source and one target");
  const Array causal = target_causal_mask({target.shape(1)}, target.shape(1));
  const TransformerTape tape = forward(model, source, target, nullptr, &causal);
  AttentionView view;
  view.model = std::move(name);
  std::vector<const MultiHeadSteps*> steps;
  if (part == ViewPart::encoder) {
    view.part = "encoder self-attention";
    for (const EncoderBlockTape& layer : tape.encoder_layers)
      steps.push_back(&layer.attention);
    view.rows = source_tokens;
    view.columns = std::move(source_tokens);
  } else {
    view.part = part == ViewPart::decoder ? "decoder self-attention (causal)" : "cross-attention";
    view.causal = part == ViewPart::decoder;
    for (const DecoderBlockTape& layer : tape.decoder_layers)
      steps.push_back(part == ViewPart::decoder ? &layer.self_attention : &layer.cross_attention);
    view.rows = target_tokens;
    view.columns = part == ViewPart::decoder ? std::move(target_tokens) : std::move(source_tokens);
  }
  fill(view, steps);
  check_labels(view);
  return view;
}

AttentionView sentence_block(const AttentionView& view, char from, char to) {
  if (view.pair_split == 0)
    throw Error(ErrorKind::bad_value, "sentence_block",
                "the view holds one sentence, so it has no sentence A and B");
  const std::size_t T = view.rows.size(), S = view.columns.size(), split = view.pair_split;
  auto range = [&](char which, std::size_t n) {
    return which == 'a' ? std::pair<std::size_t, std::size_t>{0, std::min(split, n)}
                        : std::pair<std::size_t, std::size_t>{std::min(split, n), n};
  };
  const auto [r0, r1] = range(from, T);
  const auto [c0, c1] = range(to, S);
  AttentionView out = view;
  out.rows.assign(view.rows.begin() + static_cast<std::ptrdiff_t>(r0),
                  view.rows.begin() + static_cast<std::ptrdiff_t>(r1));
  out.columns.assign(view.columns.begin() + static_cast<std::ptrdiff_t>(c0),
                     view.columns.begin() + static_cast<std::ptrdiff_t>(c1));
  const std::size_t L = view.layers, H = view.heads, hs = view.head_size;
  out.weights = Tensor4::from_shape({L, H, r1 - r0, c1 - c0});
  out.queries = Tensor4::from_shape({L, H, r1 - r0, hs});
  out.keys = Tensor4::from_shape({L, H, c1 - c0, hs});
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t t = r0; t < r1; ++t) {
        for (std::size_t s = c0; s < c1; ++s)
          out.weights(l, h, t - r0, s - c0) = view.weights(l, h, t, s);
        for (std::size_t k = 0; k < hs; ++k)
          out.queries(l, h, t - r0, k) = view.queries(l, h, t, k);
      }
      for (std::size_t s = c0; s < c1; ++s)
        for (std::size_t k = 0; k < hs; ++k)
          out.keys(l, h, s - c0, k) = view.keys(l, h, s, k);
    }
  out.pair_split = 0;
  out.part =
      fmt::format("{}, sentence {} to sentence {}", view.part,
                  static_cast<char>(std::toupper(from)), static_cast<char>(std::toupper(to)));
  return out;
}

NeuronView neuron_view(const AttentionView& view, std::size_t layer, std::size_t head,
                       std::size_t token) {
  auto out_of_range = [](std::string_view what, std::size_t value, std::size_t count) {
    return Error(
        ErrorKind::bad_size, "neuron_view",
        fmt::format("{} {} does not exist: there are {}, 0 to {}", what, value, count, count - 1));
  };
  if (layer >= view.layers) throw out_of_range("layer", layer, view.layers);
  if (head >= view.heads) throw out_of_range("head", head, view.heads);
  if (token >= view.rows.size()) throw out_of_range("token", token, view.rows.size());
  const std::size_t S = view.columns.size(), hs = view.head_size;
  NeuronView n;
  n.layer = layer;
  n.head = head;
  n.token = token;
  for (std::size_t k = 0; k < hs; ++k)
    n.query.push_back(view.queries(layer, head, token, k));
  const double scale = std::sqrt(static_cast<double>(hs));
  std::vector<double> scaled(S);
  for (std::size_t s = 0; s < S; ++s) {
    std::vector<float> key(hs), product(hs);
    double dot = 0.0;
    for (std::size_t k = 0; k < hs; ++k) {
      key[k] = view.keys(layer, head, s, k);
      product[k] = n.query[k] * key[k];
      dot += static_cast<double>(n.query[k]) * key[k];
    }
    n.keys.push_back(std::move(key));
    n.products.push_back(std::move(product));
    n.dots.push_back(static_cast<float>(dot));
    scaled[s] = dot / scale;
    n.scaled.push_back(static_cast<float>(scaled[s]));
    n.model_weights.push_back(view.weights(layer, head, token, s));
  }
  // The causal mask keeps query t from keys after t: they get weight 0, as in the model.
  auto visible = [&](std::size_t s) { return !view.causal || s <= token; };
  double top = -INFINITY;
  for (std::size_t s = 0; s < S; ++s)
    if (visible(s)) top = std::max(top, scaled[s]);
  double total = 0.0;
  std::vector<double> e(S, 0.0);
  for (std::size_t s = 0; s < S; ++s) {
    e[s] = visible(s) ? std::exp(scaled[s] - top) : 0.0;
    total += e[s];
  }
  for (std::size_t s = 0; s < S; ++s)
    n.softmax.push_back(static_cast<float>(e[s] / total));
  return n;
}

}  // namespace attn
