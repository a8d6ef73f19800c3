#include "trained.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/count.hpp"

namespace attn::lessons {

namespace {
constexpr std::size_t kMeasuredSequences = 2000;  // what a checkpoint's heads are measured on
}  // namespace

TrainedAttention trained_attention(const TokenClassifier& model, const TrainConfig& config,
                                   const Ids& ids, std::size_t layer,
                                   const std::string& checkpoint) {
  TrainedAttention a;
  a.x = attention_input(model, ids, layer);
  a.attention = model.encoder.layers[layer].attention;
  a.source = measured_source(model, config, checkpoint);
  a.source.layer = layer;
  for (std::int64_t id : ids)
    a.source.tokens.push_back(token_text(id));
  return a;
}

}  // namespace attn::lessons

namespace attn::lessons {

namespace {
constexpr std::size_t kMeasureBatch = 500;  // sequences per forward while measuring
}  // namespace

std::vector<PatternScores> measure_heads(const TokenClassifier& model, Task task,
                                         const TaskBatch& set) {
  const std::size_t count = set.ids.shape(0), tokens = set.ids.shape(1);
  std::vector<PatternScores> layers;
  for (const EncoderLayer& layer : model.encoder.layers)
    layers.emplace_back(layer.attention.heads.size());
  for (std::size_t first = 0; first < count; first += kMeasureBatch) {
    const std::size_t n = std::min(kMeasureBatch, count - first);
    Ids ids({n, tokens});
    std::vector<SequenceTargets> targets;
    for (std::size_t s = 0; s < n; ++s) {
      std::vector<std::int64_t> row(tokens);
      for (std::size_t i = 0; i < tokens; ++i)
        row[i] = ids(s, i) = set.ids(first + s, i);
      targets.push_back(task_targets(task, row));
    }
    const EncoderTape tape = forward_tape(model.encoder, ids);
    for (std::size_t l = 0; l < layers.size(); ++l)
      layers[l].add(tape.layers[l].attention.weights, targets);
  }
  return layers;
}

std::vector<PatternScores> measure_cross_attention(const Transformer& model, Seq2SeqTask task,
                                                   const std::vector<Seq2SeqExample>& examples) {
  std::vector<PatternScores> layers(model.config.layers, PatternScores(model.config.heads));
  for (std::size_t first = 0; first < examples.size(); first += kMeasureBatch) {
    const std::vector<Seq2SeqExample> part(
        examples.begin() + static_cast<std::ptrdiff_t>(first),
        examples.begin() +
            static_cast<std::ptrdiff_t>(std::min(examples.size(), first + kMeasureBatch)));
    const Seq2SeqBatch b = make_batch(part);
    const TransformerTape tape =
        forward(model, b.source, b.target_input, &b.source_mask, &b.target_mask);
    std::vector<SequenceTargets> targets;
    for (const Seq2SeqExample& e : part)
      targets.push_back(cross_targets(task, e.source, e.target, b.target_input.shape(1)));
    // A shorter source's padded keys are visible to nothing: the weights there are 0.
    for (std::size_t l = 0; l < layers.size(); ++l)
      layers[l].add(tape.decoder_layers[l].cross_attention.weights, targets);
  }
  return layers;
}

void show_head_patterns(LessonRun& run, const std::vector<PatternScores>& layers,
                        std::string_view keys, HeadsClaim claim, const std::string& sequences,
                        HeadChoice choice) {
  Table table{
      fmt::format("What each head attends to, measured on {}", sequences),
      {"layer", "head", fmt::format("weight on {}", keys), "uniform's", "entropy / uniform's"},
      {}};
  // The table shows the chosen heads; the claim is the model's, so it weighs every head.
  std::vector<HeadPatternScore> all;
  std::size_t best_layer = 0, best_head = 0;
  double entropy = 0.0, uniform_entropy = 0.0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    for (std::size_t h = 0; h < layers[l].heads(); ++h) {
      const HeadPatternScore s = layers[l].head(h);
      if ((!choice.layer || *choice.layer == l) && (!choice.head || *choice.head == h))
        table.rows.push_back({std::to_string(l), std::to_string(h),
                              fmt::format("{:.2f}", s.on_target), fmt::format("{:.2f}", s.uniform),
                              fmt::format("{:.2f} / {:.2f}", s.entropy, s.max_entropy)});
      if (all.empty() || s.on_target > layers[best_layer].head(best_head).on_target)
        best_layer = l, best_head = h;
      entropy += s.entropy;
      uniform_entropy += s.max_entropy;
      all.push_back(s);
    }
  }
  run.table(std::move(table));
  if (all.empty()) return;
  const HeadPatternScore best = layers[best_layer].head(best_head);
  const std::string strongest =
      fmt::format("layer {} head {} puts {:.2f} of each query's weight on {} (uniform {:.2f})",
                  best_layer, best_head, best.on_target, keys, best.uniform);
  const bool holds = claim_holds(claim, all);
  switch (claim) {
    case HeadsClaim::pattern:
      run.check("heads_pattern", holds,
                fmt::format("a head of the model reads {}: {}, {} 0.5", keys, strongest,
                            holds ? "above" : "not above"));
      break;
    case HeadsClaim::reads:
      run.check("heads_read", holds,
                fmt::format("a head of the model reads {}: {}, {:.1f} times uniform's (at least "
                            "2)",
                            keys, strongest, best.on_target / best.uniform));
      break;
    case HeadsClaim::spread:
      run.check("heads_spread", holds,
                fmt::format("no head of the model reads {} alone, the heads spread their weight: "
                            "{}; the heads' entropy {:.2f} of uniform's (the claim: at most 0.5 "
                            "on the keys, entropy at least 0.75)",
                            keys, strongest, entropy / uniform_entropy));
      break;
    case HeadsClaim::none:
      run.prose(wrapped_prose(fmt::format("Measured, with nothing claimed: {}.", strongest)));
      break;
  }
}

TrainedSource measured_source(const TokenClassifier& model, const TrainConfig& config,
                              const std::string& checkpoint) {
  const Task task = std::get<Task>(config.task);
  const TaskInfo& info = task_info(task);
  TrainedSource source;
  source.checkpoint = checkpoint;
  source.task = info.name;
  source.pattern = info.pattern;
  source.measured_on = kMeasuredSequences;
  source.measured = measure_heads(model, task, measured_sequences(config, kMeasuredSequences));
  source.keys = info.keys;
  source.claim = info.claim;
  return source;
}

void show_trained_heads(LessonRun& run, const TrainedSource& source,
                        std::optional<std::size_t> head) {
  show_head_patterns(run, source.measured, source.keys, source.claim,
                     fmt::format("{} held-out sequences",
                                 with_commas(static_cast<std::int64_t>(source.measured_on))),
                     {source.layer, head});
}

TaskBatch measured_sequences(const TrainConfig& config, std::size_t count) {
  TrainConfig c = config;
  c.held_out = count;
  return held_out_set(c);
}

}  // namespace attn::lessons
