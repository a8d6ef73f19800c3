#pragma once

#include <functional>

#include "lesson.hpp"
#include "training.hpp"

namespace attn::lessons {

struct TrainLessonOptions {
  TrainConfig config;
  std::function<void(const TrainStep&)> on_step;  // sees every step (the CLI's progress line)
};

struct TrainLessonResult {
  LessonRun run;
  TokenClassifier model;  // the trained model, for --save-checkpoint
  Evaluation held_out;
};

// Lesson 11: the training loop on a toy task (core/tasks.hpp): the data, the model's attention
// before training, the loss at initialisation against ln C, the loss curve and the log, the
// held-out accuracy, and the trained model's attention and outputs on a held-out sequence.
TrainLessonResult run_train(const TrainLessonOptions& options);

}  // namespace attn::lessons
