#include "05-multi-head/head_ablation_lesson.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace attn::lessons {

namespace {
constexpr std::size_t kMeasuredSequences = 2000;  // held-out sequences the tables score

std::string heads_text(const std::vector<std::size_t>& heads, std::size_t count) {
  if (heads.empty()) return "none (the whole model)";
  if (heads.size() == count && count > 1) return "every head";
  std::string out = heads.size() == 1 ? "head " : "heads ";
  for (std::size_t i = 0; i < heads.size(); ++i)
    out += (i > 0 ? ", " : "") + std::to_string(heads[i]);
  return out;
}
}  // namespace

std::vector<AblationResult> measure_ablations(const TokenClassifier& model, const TaskBatch& set,
                                              std::size_t layer) {
  const std::size_t heads = model.encoder.layers.at(layer).attention.heads.size();
  std::vector<std::vector<std::size_t>> choices = {{}};
  for (std::size_t h = 0; h < heads; ++h)
    choices.push_back({h});
  if (heads > 1) {
    choices.emplace_back();
    for (std::size_t h = 0; h < heads; ++h)
      choices.back().push_back(h);
  }
  std::vector<AblationResult> out;
  for (const std::vector<std::size_t>& choice : choices) {
    std::vector<HeadRef> refs;
    for (std::size_t h : choice)
      refs.push_back({layer, h});
    const TrainedModel ablated = ablated_copy(TrainedModel(model), refs);
    out.push_back({choice, evaluate(std::get<TokenClassifier>(ablated), set)});
  }
  return out;
}

std::vector<std::array<double, 2>> relation_weights(const TokenClassifier& model,
                                                    const TaskBatch& set, std::size_t layer) {
  const Tensor3 x = attention_input(model, set.ids, layer);  // (N,T,D)
  const Tensor4 w =
      forward(model.encoder.layers[layer].attention, x, nullptr).weights;  // (N,H,T,T)
  const std::size_t n = w.shape(0), heads = w.shape(1), t = w.shape(2);
  std::vector<std::array<double, 2>> out(heads, {0.0, 0.0});
  for (std::size_t h = 0; h < heads; ++h) {
    double previous = 0.0, mirror = 0.0;
    std::size_t previous_count = 0, mirror_count = 0;
    for (std::size_t s = 0; s < n; ++s)
      for (std::size_t i = 0; i < t; ++i) {
        const std::size_t m = t - 1 - i;
        if (i >= 1 && i - 1 == m) continue;  // both relations name the same key
        if (i >= 1) previous += w(s, h, i, i - 1), ++previous_count;
        mirror += w(s, h, i, m), ++mirror_count;
      }
    out[h] = {previous / static_cast<double>(previous_count),
              mirror / static_cast<double>(mirror_count)};
  }
  return out;
}

void show_head_ablation(LessonRun& run, const HeadAblationInput& in) {
  TrainConfig c = in.config;
  c.held_out = kMeasuredSequences;
  const TrainedModel chosen = ablated_copy(TrainedModel(in.model), in.ablate);  // checks them first
  const TaskBatch set = held_out_set(c);
  const std::size_t t = c.sizes.tokens, v = c.sizes.vocab;
  const Task task = std::get<Task>(c.task);
  const double uniform = 1.0 / static_cast<double>(t);
  if (!in.ablate.empty()) {
    run.section("ablate");
    std::string which;
    for (const HeadRef& h : in.ablate)
      which += fmt::format("{}layer {} head {}", which.empty() ? "" : ", ", h.layer, h.head);
    const Evaluation before = evaluate(in.model, set),
                     after = evaluate(std::get<TokenClassifier>(chosen), set);
    run.prose(
        fmt::format("ablating {}: held-out token accuracy {:.3f} -> {:.3f}, sequence "
                    "accuracy {:.3f} -> {:.3f} ({} sequences)",
                    which, before.token_accuracy, after.token_accuracy, before.sequence_accuracy,
                    after.sequence_accuracy, set.ids.shape(0)));
  }

  run.section("relations");
  const std::vector<std::array<double, 2>> weights = relation_weights(in.model, set, in.layer);
  const std::size_t heads = weights.size();
  Table where{fmt::format("layer {}: each head's mean weight on the keys the relations name ({} "
                          "held-out sequences; uniform 1/T = {:.3f})",
                          in.layer, set.ids.shape(0), uniform),
              {"head", "on key i-1", "on key T-1-i"},
              {}};
  for (std::size_t h = 0; h < heads; ++h)
    where.rows.push_back({std::to_string(h), fmt::format("{:.3f}", weights[h][0]),
                          fmt::format("{:.3f}", weights[h][1])});
  run.table(std::move(where));

  run.section("ablation");
  const std::vector<AblationResult> results = measure_ablations(in.model, set, in.layer);
  Table table{fmt::format("held-out accuracy with layer {}'s heads ablated (their outputs zeroed "
                          "before the output projection; {} sequences, chance 1/V = {:.3f})",
                          in.layer, set.ids.shape(0), 1.0 / static_cast<double>(v)),
              {"ablated", "tokens right", "sequences right"},
              {}};
  for (const AblationResult& r : results)
    table.rows.push_back({heads_text(r.heads, heads),
                          fmt::format("{:.3f}", r.evaluation.token_accuracy),
                          fmt::format("{:.3f}", r.evaluation.sequence_accuracy)});
  run.table(std::move(table));

  const double whole = results.front().evaluation.token_accuracy;
  double worst_single = 1.0, best_single = 0.0;
  for (std::size_t h = 1; h <= heads; ++h) {
    worst_single = std::min(worst_single, results[h].evaluation.token_accuracy);
    best_single = std::max(best_single, results[h].evaluation.token_accuracy);
  }
  run.check("the whole model solves the task", whole >= 0.95,
            fmt::format("held-out token accuracy {:.3f}, at least 0.95", whole));
  if (task == Task::previous_minus_mirror && heads >= 2) {
    // The head that looks most at key i-1 and the one that looks most at key T-1-i.
    std::size_t previous = 0, mirror = 0;
    for (std::size_t h = 1; h < heads; ++h) {
      if (weights[h][0] > weights[previous][0]) previous = h;
      if (weights[h][1] > weights[mirror][1]) mirror = h;
    }
    const bool split =
        previous != mirror && weights[previous][0] >= 0.5 && weights[mirror][1] >= 0.5;
    run.check("each relation has a head that leans to it", split,
              fmt::format("head {} puts {:.3f} on key i-1, head {} puts {:.3f} on key T-1-i; "
                          "each at least 0.5 (uniform {:.3f}), and two different heads",
                          previous, weights[previous][0], mirror, weights[mirror][1], uniform));
    run.check("either head alone ablated: accuracy below 0.5", best_single < 0.5,
              fmt::format("token accuracy {:.3f} at best with one head ablated, against {:.3f} "
                          "whole and chance {:.3f}",
                          best_single, whole, 1.0 / static_cast<double>(v)));
  } else if ((task == Task::reverse || task == Task::previous_token) && in.layer == 0 &&
             heads >= 2) {
    const double none = results.back().evaluation.sequence_accuracy;
    run.check("the heads are redundant: one ablated, the accuracy stays", worst_single >= 0.9,
              fmt::format("token accuracy {:.3f} at worst with one head ablated, at least 0.9",
                          worst_single));
    run.check("every head ablated: the accuracy drops", none < 0.5,
              fmt::format("sequence accuracy {:.3f} with every head of layer {} ablated, below 0.5",
                          none, in.layer));
  }
}

}  // namespace attn::lessons
