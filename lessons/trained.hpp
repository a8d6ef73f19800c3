// What the attention lessons show of a model attn train trained: the input one layer's attention
// reads for a sequence of the task's tokens, that attention, and where it comes from.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/tensor.hpp"
#include "head_patterns.hpp"
#include "lesson.hpp"
#include "multi_head.hpp"
#include "train/trainer.hpp"

namespace attn::lessons {

struct TrainedAttention {
  Tensor3 x;                // (1,T,D) what layer `layer`'s attention reads
  BookMultiHead attention;  // that layer's attention, the book's form
  TrainedSource source;     // the checkpoint, its task and what a solving head shows
};
// Layer `layer` of an encoder trained on `config`'s task, on `ids` (1,T) of its tokens; throws
// attn::Error about "layer" when the model has no such layer.
TrainedAttention trained_attention(const TokenClassifier& model, const TrainConfig& config,
                                   const Ids& ids, std::size_t layer,
                                   const std::string& checkpoint);

}  // namespace attn::lessons

namespace attn::lessons {

// What the lessons say of a checkpoint's heads: its task and every layer's heads measured on the
// task's held-out sequences (TrainedSource; layer 0, no tokens).
TrainedSource measured_source(const TokenClassifier& model, const TrainConfig& config,
                              const std::string& checkpoint);

// Every head of every layer of `model` scored against the task's keys (task_targets) over the
// sequences of `set` (head_patterns.hpp): one PatternScores per layer.
std::vector<PatternScores> measure_heads(const TokenClassifier& model, Task task,
                                         const TaskBatch& set);

// Every decoder layer's cross-attention heads scored against the task's keys (cross_targets) over
// `examples`, the decoder reading <s> and each answer (teacher forcing): one PatternScores per
// layer.
std::vector<PatternScores> measure_cross_attention(const Transformer& model, Seq2SeqTask task,
                                                   const std::vector<Seq2SeqExample>& examples);

// Which heads a lesson shows: every head, one layer's, or one head of one layer.
struct HeadChoice {
  std::optional<std::size_t> layer, head;
};
// The measurement under every sentence about what the heads learned: a table of the chosen
// heads' weight on the pattern's `keys` ("the mirrored key") against uniform attention's, and
// their entropy against uniform's, then the claim as a check that fails when the measurement
// contradicts it. `sequences` says what was measured ("the 10,000 held-out sequences").
void show_head_patterns(LessonRun& run, const std::vector<PatternScores>& layers,
                        std::string_view keys, HeadsClaim claim, const std::string& sequences,
                        HeadChoice choice = {});

// The sequences the lessons measure a checkpoint's heads on: `count` of the task's held-out set
// (its seed's stream, as attn train draws it).
TaskBatch measured_sequences(const TrainConfig& config, std::size_t count);

}  // namespace attn::lessons
