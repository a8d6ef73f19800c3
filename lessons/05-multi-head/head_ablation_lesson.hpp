// Why several heads, measured on a trained encoder: where each head of a layer looks (its mean
// weight on the keys its task's relations name, against uniform 1/T) and what the held-out
// accuracy becomes with each head, and then every head, ablated (train/ablation.hpp).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "lesson.hpp"
#include "train/ablation.hpp"

namespace attn::lessons {

struct HeadAblationInput {
  TokenClassifier model;
  TrainConfig config;           // its task and sizes
  std::string checkpoint;       // as given
  std::size_t layer = 0;        // whose heads
  std::vector<HeadRef> ablate;  // heads asked for by name: their accuracy line
};

// The held-out measure with some of layer `layer`'s heads ablated.
struct AblationResult {
  std::vector<std::size_t> heads;  // ablated; empty: the whole model
  Evaluation evaluation;
};
// The model whole, each head alone ablated, then every head: on `set`.
std::vector<AblationResult> measure_ablations(const TokenClassifier& model, const TaskBatch& set,
                                              std::size_t layer);

// Layer `layer`'s heads' mean weight on key i-1 and on key T-1-i over `set`'s sequences, for
// the queries where the two keys differ (i-1 on queries 1.., T-1-i on every query): (H, 2).
std::vector<std::array<double, 2>> relation_weights(const TokenClassifier& model,
                                                    const TaskBatch& set, std::size_t layer);

// The steps lesson 05 shows with a checkpoint: the relation table and the ablation table, with
// check lines: on previous-minus-mirror, that each relation has a head that leans to it and either head alone
// ablated drops the accuracy below 0.5; on reverse and previous-token, that layer 0's heads are
// redundant (one ablated keeps the accuracy, every one drops it). With `ablate`, one line: the
// accuracy with and without those heads. Throws attn::Error about "ablate" for a head the model
// does not have.
void show_head_ablation(LessonRun& run, const HeadAblationInput& input);

}  // namespace attn::lessons
