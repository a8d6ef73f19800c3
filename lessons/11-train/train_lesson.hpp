#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lesson.hpp"
#include "train/trainer.hpp"

namespace attn::lessons {

struct TrainLessonOptions {
  TrainConfig config;
  std::function<void(const TrainStep&)> on_step;  // sees every step (the CLI's progress line)
};

// One measure of the trained model on its held-out set: its key in the checkpoint's metadata
// ("token_accuracy"), how a picture labels it ("held-out tokens right"), and the fraction.
struct HeldOutMeasure {
  std::string key, label;
  double value = 0.0;
};

struct TrainLessonResult {
  LessonRun run;
  TrainedModel model;  // the trained model, for --save-checkpoint
  std::vector<HeldOutMeasure> held_out;
};

// Lesson 11: the training loop on a task (core/train/trainer.hpp). An encoder task: the data, the
// model's attention before training, the loss at initialisation against ln C, the loss curve and
// the log, the held-out accuracy, and the trained model's attention and outputs on a held-out
// sequence. A sequence-to-sequence task, seed 001's encoder-decoder: the data framed for teacher
// forcing, the loss at initialisation against ln V, the curves, the held-out exact match by greedy
// decoding, and a held-out source decoded with its cross-attention.
TrainLessonResult run_train(const TrainLessonOptions& options);

// The held-out measures as a checkpoint's metadata records them.
HeldOutResults held_out_results(const std::vector<HeldOutMeasure>& measures);

// The last decoder layer's cross-attention while `decoded` was written: one heatmap per head,
// rows the written tokens, columns the source's; `title` heads the group.
Heatmaps cross_attention_maps(const Transformer& model, Seq2SeqTask task,
                              const std::vector<std::int64_t>& source,
                              const std::vector<std::int64_t>& decoded, const std::string& title);

}  // namespace attn::lessons
