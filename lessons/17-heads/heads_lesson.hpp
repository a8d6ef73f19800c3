#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/budget.hpp"
#include "head_scan.hpp"
#include "lesson.hpp"

namespace attn::lessons {

// What the model's own lessons claim of a pattern's heads, checked on the scan: `claim` over the
// heads of `layer` (every layer when unset).
struct PatternClaim {
  std::string pattern;  // a ScanPattern's name
  HeadsClaim claim = HeadsClaim::pattern;
  std::optional<std::size_t> layer;
  std::string source;  // who claims it: "lesson 11's reverse task"
};

// What one ablation did: the model's loss (or accuracy) on a probe set with every head, and with
// the ablated heads' outputs zeroed or replaced by their mean.
struct AblationRow {
  std::string measure;  // "next-token loss on the repeated half", "held-out token accuracy"
  double before = 0.0, after = 0.0;
  bool lower_is_better = true;
};

struct HeadsLessonOptions {
  std::string model;      // how the settings name the model
  std::string structure;  // "GPT-2, 12 blocks x 12 heads"
  std::int64_t parameters = 0;
  std::size_t layers = 0, heads = 0;
  bool causal = false;
  LayerWeights weights;  // every layer's attention on a batch
  std::vector<ScanPattern> patterns;
  std::vector<ProbeSet> sets;
  std::function<std::string(std::int64_t)> token_text;  // a token as the tables show it
  std::size_t batch = 8;                                // sequences per forward
  std::vector<PatternClaim> claims;
  std::string ablated;  // "layer 1 head 0 (zero)": what the ablation rows measure; empty: none
  std::vector<AblationRow> ablation;
};

// What run_heads holds beside the model: the scores, one forward's attention maps of `batch`
// sequences of `tokens` tokens, the probe sets.
MemoryPlan plan_heads_lesson(std::size_t layers, std::size_t heads, std::size_t patterns,
                             std::size_t sets, std::size_t batch, std::size_t tokens,
                             std::size_t sequences);

// `attn heads`: every head of every layer scored against the standard patterns on the probe sets,
// a table of each head's best pattern against uniform attention, a layers x heads heatmap per
// pattern, the heads of each pattern, the claims of the model's lessons checked, and the
// ablation's effect when one was asked for.
// `scan`, when given, receives the scan the run printed (for an exported page).
LessonRun run_heads(const HeadsLessonOptions& options, HeadScan* scan = nullptr);

}  // namespace attn::lessons
