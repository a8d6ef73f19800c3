#include "train/ablation.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

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
}  // namespace

void ablate_heads(TrainedModel& model, const std::vector<HeadRef>& heads, ViewPart part) {
  if (auto* classifier = std::get_if<TokenClassifier>(&model)) {
    if (part != ViewPart::encoder) {
      throw Error(ErrorKind::bad_value, "ablate_heads",
                  "an encoder has one attention per layer, its self-attention")
          .about("part");
    }
    for (const HeadRef& h : heads)
      ablate_head(attention_at(classifier->encoder.layers, h.layer,
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
    ablate_head(layer, h.head);
  }
}

TrainedModel ablated_copy(const TrainedModel& model, const std::vector<HeadRef>& heads,
                          ViewPart part) {
  TrainedModel copy = model;
  ablate_heads(copy, heads, part);
  return copy;
}

}  // namespace attn
