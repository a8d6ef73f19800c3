// `attn train`'s loop: a TokenClassifier on a toy task (core/tasks.hpp), AdamW with a linear
// warm-up and a cosine decay, a held-out set drawn from its own stream. Everything is seeded:
// the same options on the same machine and thread count give the same checkpoint bits.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/budget.hpp"
#include "io/weights.hpp"
#include "train/classifier.hpp"
#include "train/optimizer.hpp"
#include "train/tasks.hpp"

namespace attn {

struct TrainConfig {
  Task task = Task::reverse;
  TaskSizes sizes;
  std::size_t layers = 2, d_model = 32, heads = 2, d_ff = 64;
  NormPlacement norm = NormPlacement::pre;
  std::size_t steps = 1000, batch = 32;
  float lr = 3e-3f, weight_decay = 0.01f;
  float dropout = 0.0f;  // p of the embeddings' and every feed-forward's nn.Dropout
  std::uint64_t seed = 0;
  std::size_t held_out = 512;  // sequences in the held-out set
};

// Throws attn::Error(bad_value) about the option at fault: sizes of 0, H not dividing D, a
// vocabulary outside 2..26 letters, a learning rate that is not a positive number, a dropout
// outside [0, 1).
void check_train_config(const TrainConfig& config);
// What training holds at its peak, for check_budget: the weights, their gradients and AdamW's two
// moments; every layer's tape for one batch, and the logits; the held-out set.
MemoryPlan plan_training(const TrainConfig& config);

// The encoder's config for a TrainConfig: V = the task's tokens, P = T, eps 1e-12 in the
// embeddings as the book's.
EncoderConfig model_config(const TrainConfig& config);

struct TrainStep {
  std::size_t step = 0;   // 1-based
  double loss = 0.0;      // the batch's mean cross-entropy, before the update
  double accuracy = 0.0;  // the batch's labelled tokens predicted right, before the update
  float lr = 0.0f;        // the learning rate the update used
};

struct Evaluation {
  double token_accuracy = 0.0;     // every labelled position of every sequence (masked: the "?"s)
  double sequence_accuracy = 0.0;  // sequences with every labelled position right
  std::size_t sequences = 0;
};

// The learning rate at `step` (1-based) of `steps`: linear warm-up over the first 5%, then a
// cosine decay to a tenth.
float learning_rate(const TrainConfig& config, std::size_t step);
// The same schedule for any peak rate and length.
float warmup_cosine(float peak, std::size_t steps, std::size_t step);

// The held-out set: `config.held_out` sequences from a stream of their own.
TaskBatch held_out_set(const TrainConfig& config);
Evaluation evaluate(const TokenClassifier& model, const TaskBatch& set);

// A checkpoint's "attn_training" metadata: how the run was made, and what it measured.
struct TrainingRecord {
  std::size_t steps = 0, batch = 0;
  float lr = 0.0f, weight_decay = 0.0f, dropout = 0.0f;
  std::uint64_t seed = 0;
  std::size_t held_out = 0;
  std::vector<std::pair<std::string, double>> results;  // {"token_accuracy", 0.99}, ...
};
std::string training_record_json(const TrainingRecord& record);
// What `attn train --save-checkpoint` writes beside the weights: everything needed to rebuild the
// model and read its tokens ("attn_model"), and the run ("attn_training").
Metadata checkpoint_metadata(const TrainConfig& config, const Evaluation& held_out);

// The model and task a checkpoint's metadata describes (what `attn train --save-checkpoint`
// writes); throws attn::Error(bad_file) about "checkpoint" when it is missing or damaged.
TrainConfig train_config_from_metadata(const Metadata& metadata, std::string_view name);

// The model train() starts from: PyTorch-style initial weights drawn from the seed.
TokenClassifier initial_model(const TrainConfig& config);

// train()'s loop one step at a time: the model, its gradient, AdamW's state and the seeded
// streams of batches and dropout masks. step() draws a batch, runs forward, backward and the
// update, and says what it saw.
class Trainer {
 public:
  // Checks the config and its memory budget first (attn::Error).
  explicit Trainer(const TrainConfig& config);
  Trainer(const Trainer&) = delete;  // the optimiser points into the model
  Trainer& operator=(const Trainer&) = delete;
  TrainStep step();
  const TokenClassifier& model() const { return model_; }
  const TrainConfig& config() const { return config_; }

 private:
  TrainConfig config_;
  TokenClassifier model_, grad_;
  std::vector<ParameterSlot> slots_;
  AdamW adamw_;
  Rng batches_, dropout_;
  std::size_t done_ = 0;
};

// Trains from initial_model(config); `on_step` sees every step (for progress).
TokenClassifier train(const TrainConfig& config,
                      const std::function<void(const TrainStep&)>& on_step);

}  // namespace attn
