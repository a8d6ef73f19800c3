#include "train/ablation.hpp"

#include <type_traits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "train/classifier.hpp"
#include "train/seq2seq.hpp"

namespace attn {

namespace {
// The attention layer `layer` of the part, or an error naming the layers there are.
template <class Layers, class Pick>
auto& attention_at(Layers& layers, std::size_t layer, Pick pick) {
  if (layer >= layers.size()) {
    throw Error(ErrorKind::bad_value, "ablate_heads",
                fmt::format("layer {} does not exist: the model has {} layer{}, 0 to {}", layer,
                            layers.size(), layers.size() == 1 ? "" : "s", layers.size() - 1))
        .about("ablate");
  }
  return pick(layers[layer]);
}

// Calls visit(attention, head) for each head's attention layer in the part.
template <class Visit>
void visit_heads(TrainedModel& model, const std::vector<HeadRef>& heads, ViewPart part,
                 Visit visit) {
  if (auto* classifier = std::get_if<TokenClassifier>(&model)) {
    if (part != ViewPart::encoder) {
      throw Error(ErrorKind::bad_value, "ablate_heads",
                  "an encoder has one attention per layer, its self-attention")
          .about("part");
    }
    for (const HeadRef& h : heads)
      visit(attention_at(classifier->encoder.layers, h.layer,
                         [](EncoderLayer& l) -> BookMultiHead& { return l.attention; }),
            h.head);
    return;
  }
  Transformer& t = std::get<Transformer>(model);
  for (const HeadRef& h : heads) {
    FusedMultiHead& layer =
        part == ViewPart::encoder ? attention_at(t.encoder.layers, h.layer,
                                                 [](EncoderBlock& b) -> FusedMultiHead& {
                                                   return b.multi_head_attention;
                                                 })
        : part == ViewPart::decoder
            ? attention_at(
                  t.decoder.layers, h.layer,
                  [](DecoderBlock& b) -> FusedMultiHead& { return b.multi_head_attention; })
            : attention_at(t.decoder.layers, h.layer,
                           [](DecoderBlock& b) -> FusedMultiHead& { return b.cross_attention; });
    visit(layer, h.head);
  }
}

// The output projection's columns that read head `head`'s slice of the concatenation (D, H*hs).
void zero_head_columns(Linear& projection, std::size_t heads, std::size_t head) {
  const std::size_t hs = projection.weight.shape(1) / heads;
  for (std::size_t row = 0; row < projection.weight.shape(0); ++row)
    for (std::size_t column = head * hs; column < (head + 1) * hs; ++column)
      projection.weight(row, column) = 0.0f;
}
}  // namespace

void ablate_heads(TrainedModel& model, const std::vector<HeadRef>& heads, ViewPart part) {
  visit_heads(model, heads, part, [](auto& layer, std::size_t head) { ablate_head(layer, head); });
}

TrainedModel ablated_copy(const TrainedModel& model, const std::vector<HeadRef>& heads,
                          ViewPart part) {
  TrainedModel copy = model;
  ablate_heads(copy, heads, part);
  return copy;
}

void ablate_heads_in_weights(TrainedModel& model, const std::vector<HeadRef>& heads,
                             ViewPart part) {
  visit_heads(model, heads, part, [](auto& layer, std::size_t head) {
    ablate_head(layer, head);  // checks the head exists
    if constexpr (std::is_same_v<std::decay_t<decltype(layer)>, BookMultiHead>)
      zero_head_columns(layer.output_linear, layer.heads.size(), head);
    else
      zero_head_columns(layer.W_O, layer.heads, head);
  });
}

AblationEffect measure_ablation(const TrainedModel& model, const TrainConfig& config,
                                const std::vector<HeadRef>& heads, ViewPart part,
                                std::size_t examples) {
  const TrainedModel ablated = ablated_copy(model, heads, part);  // checks the heads first
  TrainConfig c = config;
  c.held_out = examples;
  AblationEffect effect;
  if (const auto* classifier = std::get_if<TokenClassifier>(&model)) {
    const TaskBatch set = held_out_set(c);
    const Evaluation before = evaluate(*classifier, set),
                     after = evaluate(std::get<TokenClassifier>(ablated), set);
    effect.before = {{"token_accuracy", before.token_accuracy},
                     {"sequence_accuracy", before.sequence_accuracy}};
    effect.after = {{"token_accuracy", after.token_accuracy},
                    {"sequence_accuracy", after.sequence_accuracy}};
    effect.examples = set.ids.shape(0);
    return effect;
  }
  const Seq2SeqTask task = std::get<Seq2SeqTask>(c.task);
  const std::vector<Seq2SeqExample> set = held_out_examples(c);
  const Seq2SeqEvaluation before = evaluate(std::get<Transformer>(model), task, set),
                          after = evaluate(std::get<Transformer>(ablated), task, set);
  effect.before = {{"exact_match", before.exact_match}, {"token_accuracy", before.token_accuracy}};
  effect.after = {{"exact_match", after.exact_match}, {"token_accuracy", after.token_accuracy}};
  effect.examples = set.size();
  return effect;
}

}  // namespace attn
