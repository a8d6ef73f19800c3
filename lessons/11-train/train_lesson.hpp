#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "lesson.hpp"
#include "train/training.hpp"

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

// The curves of a training run (loss, accuracy in %, learning rate, one value a step), a table of
// every tenth step, and the check that every loss is finite. `loss_what` and `accuracy_what` say
// what the loss averages and what the accuracy counts.
void training_curves(LessonRun& run, const std::vector<double>& losses,
                     const std::vector<double>& accuracies, const std::vector<double>& rates,
                     std::string_view loss_what, std::string_view accuracy_what);

}  // namespace attn::lessons
