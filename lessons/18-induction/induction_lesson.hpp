#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lesson.hpp"
#include "train/induction.hpp"

namespace attn::lessons {

struct InductionLessonOptions {
  InductionConfig config;
  // A trained model (attn induction: the shipped checkpoint, or a folder attn train --task
  // induction saved) with its run's record; nullopt: train one from `config` (attn train).
  std::optional<GptModel> trained;
  std::vector<InductionEvaluation> history;  // the trained model's recorded evaluations
  std::string name;                          // as shown: "induction (shipped)"
  std::function<void(std::size_t step, float loss)> on_step;
  std::function<void(const InductionEvaluation&)> on_evaluation;
};

struct InductionLessonResult {
  LessonRun run;
  GptModel model;
  std::vector<InductionEvaluation> history;
  std::vector<double> losses;  // every step's batch loss (trained here), for --export
  std::size_t induction_head = 0, previous_head = 0;  // 1.I and 0.P, as found
};

// The task and its held-out proof, the attention-only model, the loss on each copy at every
// evaluation (the plateau and the drop), every head's induction and previous-token scores, the
// circuit (0.P's output read by 1.I's keys: Elhage et al.'s composition scores) and the ablations
// that show each part is needed. Every sentence about the model is a check on a measured number.
InductionLessonResult run_induction(InductionLessonOptions options);

}  // namespace attn::lessons
