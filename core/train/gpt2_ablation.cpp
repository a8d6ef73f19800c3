#include "train/gpt2_ablation.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "base/error.hpp"
#include "interp.hpp"
#include "loss.hpp"

namespace attn {

namespace {

// labels[b, t] = ids[b, t+1]; the last position scores nothing.
Ids next_tokens(const Ids& ids) {
  Ids labels = Ids::from_shape(ids.shape());
  labels.fill(kIgnoredLabel);
  xt::view(labels, xt::all(), xt::range(0, ids.shape(1) - 1)) =
      xt::view(ids, xt::all(), xt::range(1, ids.shape(1)));
  return labels;
}

}  // namespace

HeadAblationEffect measure_head_ablation(const Gpt2& model, const Ids& ids,
                                         const std::vector<HeadRef>& heads, AblationMode mode,
                                         std::size_t from) {
  if (ids.dimension() != 2 || ids.shape(0) == 0 || ids.shape(1) < 2)
    throw Error(ErrorKind::bad_size, "measure_head_ablation",
                "ids must be (B, T) with B >= 1 and T >= 2: the loss predicts each next token");
  const std::size_t batch = ids.shape(0), tokens = ids.shape(1);
  const std::size_t layers = model.layers.size();
  const std::size_t count = layers > 0 ? model.layers[0].attention.heads.size() : 0;
  for (const HeadRef& h : heads)
    if (h.layer >= layers || h.head >= count)
      throw Error(ErrorKind::bad_value, "measure_head_ablation",
                  fmt::format("head {}.{} but the model has {} layers of {} heads (0.0 .. {}.{})",
                              h.layer, h.head, layers, count, layers - 1, count - 1))
          .about("ablate");
  if (mode == AblationMode::mean && batch < 2)
    throw Error(ErrorKind::bad_value, "measure_head_ablation",
                "mean-ablation averages each head over the probe set's sequences, per position: "
                "give at least 2 sequences")
        .about("ablate-with");

  if (from + 1 >= tokens)
    throw Error(ErrorKind::bad_size, "measure_head_ablation",
                fmt::format("scoring from position {} of {} tokens leaves no prediction: score "
                            "from an earlier position",
                            from, tokens));
  Ids labels = next_tokens(ids);
  xt::view(labels, xt::all(), xt::range(0, std::min(from, tokens))) = kIgnoredLabel;
  const InterpRun before = forward_with_interventions(model, ids, {}, mode == AblationMode::mean);
  const std::size_t head_size = model.wte.weight.shape(1) / count;
  Interventions ablate;
  for (const HeadRef& h : heads) {
    Tensor2 values = xt::zeros<float>({tokens, head_size});  // (T,hs)
    if (mode == AblationMode::mean)
      values = xt::mean(xt::view(before.heads[h.layer], xt::all(), xt::all(),
                                 xt::range(h.head * head_size, (h.head + 1) * head_size)),
                        {0});
    ablate.heads.push_back({h.layer, h.head, std::nullopt, std::nullopt, std::move(values)});
  }
  const InterpRun after = forward_with_interventions(model, ids, ablate, false);

  HeadAblationEffect effect;
  const CrossEntropySteps b = cross_entropy(before.logits, labels);
  const CrossEntropySteps a = cross_entropy(after.logits, labels);
  effect.tokens = b.scored;
  effect.loss_before = b.loss;
  effect.loss_after = a.loss;
  effect.accuracy_before = double(b.correct) / double(b.scored);
  effect.accuracy_after = double(a.correct) / double(a.scored);
  return effect;
}

MemoryPlan plan_head_ablation(const Gpt2Config& config, std::size_t batch, std::size_t tokens) {
  MemoryPlan plan = plan_interventions(config, batch, tokens, true, InterpLogits::all);
  append(plan, plan_interventions(config, batch, tokens, false, InterpLogits::all));
  plan.push_back({"the losses' softmaxes", {2, batch, tokens, config.sizes.vocab_size}, " B T V"});
  return plan;
}

}  // namespace attn
