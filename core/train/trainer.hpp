// `attn train`'s one training loop, for every model it trains. The task decides the model:
//
//   an encoder task (train/tasks.hpp)           the book's encoder with a head on every token
//                                               (train/classifier.hpp), one label per token
//   a sequence-to-sequence task                 seed 001's encoder-decoder (transformer.hpp),
//   (train/seq2seq.hpp)                         teacher-forced on the target's next tokens
//
// Each step draws a seeded batch of the task, runs the model forward to its cross-entropy and
// back, and updates every parameter with AdamW, at a learning rate warmed up over the first 5% of
// the steps and then decayed along a cosine to a tenth. Everything is seeded: the same config on
// the same machine and thread count gives the same checkpoint bits. A checkpoint's metadata holds
// the config ("attn_model") and the run ("attn_training"); it is written and read here alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/budget.hpp"
#include "io/weights.hpp"
#include "train/classifier.hpp"
#include "train/optimizer.hpp"
#include "train/seq2seq.hpp"
#include "train/tasks.hpp"
#include "transformer.hpp"

namespace attn {

// The task, and with it the model family.
using TrainTask = std::variant<Task, Seq2SeqTask>;
std::string_view task_name(const TrainTask& task);  // "reverse", "number-words", ...
// Whether the task trains seed 001's encoder-decoder.
bool is_seq2seq(const TrainTask& task);
// The steps a task trains for unless told: 1000 for an encoder task, 4000 for the encoder-decoder.
std::size_t default_steps(const TrainTask& task);

struct TrainConfig {
  TrainTask task = Task::reverse;
  TaskSizes sizes;  // an encoder task's letters V and tokens T
  std::size_t layers = 2, d_model = 32, heads = 2, d_ff = 64;
  NormPlacement norm = NormPlacement::pre;
  std::size_t steps = 1000, batch = 32;
  float lr = 3e-3f, weight_decay = 0.01f;
  float dropout = 0.0f;  // p of the encoder's nn.Dropout layers (the encoder-decoder has none)
  std::uint64_t seed = 0;
  std::size_t held_out = 10000;  // sequences in the held-out set
};

// Throws attn::Error about the value at fault: a size of 0, H not dividing D, a learning rate
// that is not a positive number, a weight decay below 0, a dropout outside [0, 1); for an encoder
// task, a vocabulary outside 2..26 letters (the masked task's is fixed) or fewer than 2 tokens.
void check_train_config(const TrainConfig& config);
// What training holds at its peak, for check_budget: the weights, their gradients, AdamW's two
// moments and the model returned; every layer's tape for one batch with the larger of a layer's
// forward temporaries and its backward, and the logits; the held-out set (for the
// encoder-decoder, the larger of a step and the held-out set's forward); the loss curve.
MemoryPlan plan_training(const TrainConfig& config);

// The models' configs for a TrainConfig: the encoder's (V = the task's tokens, P = T, eps 1e-12 in
// the embeddings as the book's) and the encoder-decoder's (the task's vocabularies and lengths).
EncoderConfig encoder_config(const TrainConfig& config);
TransformerConfig transformer_config(const TrainConfig& config);

// The learning rate at `step` (1-based) of `steps`: linear warm-up over the first 5%, then a
// cosine decay to a tenth.
float learning_rate(const TrainConfig& config, std::size_t step);
// The same schedule for any peak rate and length.
float warmup_cosine(float peak, std::size_t steps, std::size_t step);

// A model being trained or read from a checkpoint: the variant follows the task.
using TrainedModel = std::variant<TokenClassifier, Transformer>;
// The model training starts from: PyTorch-style initial weights drawn from the seed.
TrainedModel initial_model(const TrainConfig& config);

struct TrainStep {
  std::size_t step = 0;   // 1-based
  double loss = 0.0;      // the batch's mean cross-entropy, before the update
  double accuracy = 0.0;  // the batch's labelled tokens predicted right, before the update
  float lr = 0.0f;        // the learning rate the update used
};

// The loop one step at a time: the model, its gradient, AdamW's state and the seeded streams of
// batches (and of an encoder's dropout masks). step() draws a batch, runs forward, the loss,
// backward and the update, and says what it saw.
class Trainer {
 public:
  // Checks the config and an encoder's memory budget first (attn::Error).
  explicit Trainer(const TrainConfig& config);
  Trainer(const Trainer&) = delete;  // the optimiser points into the model
  Trainer& operator=(const Trainer&) = delete;
  TrainStep step();
  const TrainedModel& model() const { return model_; }
  const TrainConfig& config() const { return config_; }
  // AdamW's state and every parameter beside its gradient, as the last step() left them.
  const AdamW& optimizer() const { return adamw_; }
  const std::vector<ParameterSlot>& parameters() const { return slots_; }

 private:
  TrainConfig config_;
  TrainedModel model_, grad_;
  std::vector<ParameterSlot> slots_;
  AdamW adamw_;
  Rng batches_, dropout_;
  std::size_t done_ = 0;
};

// Trains from initial_model(config); `on_step` sees every step (for progress).
TrainedModel train(const TrainConfig& config, const std::function<void(const TrainStep&)>& on_step);

// The held-out sets, each from a stream of its own: an encoder task's `held_out` sequences, the
// encoder-decoder's `held_out` examples of its held-out split.
TaskBatch held_out_set(const TrainConfig& config);
std::vector<Seq2SeqExample> held_out_examples(const TrainConfig& config);

// The proof that held out means never trained on: training's batch stream replayed, step by step
// as Trainer draws it, and every drawn sequence (an encoder task's tokens, a masked window's
// characters, an encoder-decoder's source) looked up among the held-out set's.
struct HeldOutOverlap {
  std::size_t held_out = 0;  // distinct sequences in the held-out set
  std::size_t found = 0;     // of them, those training draws
  std::size_t drawn = 0;     // sequences training draws, config.steps x config.batch
};
HeldOutOverlap held_out_overlap(const TrainConfig& config);

// What a trained model scored on its held-out set, by name, in the order the checkpoint records
// them: {"token_accuracy", 0.99}, {"sequence_accuracy", 0.97} for an encoder; {"exact_match", ...},
// {"token_accuracy", ...} for the encoder-decoder.
using HeldOutResults = std::vector<std::pair<std::string, double>>;

// A checkpoint's "attn_training" metadata: how the run was made, and what it measured.
struct TrainingRecord {
  std::size_t steps = 0, batch = 0;
  float lr = 0.0f, weight_decay = 0.0f, dropout = 0.0f;
  std::uint64_t seed = 0;
  std::size_t held_out = 0;
  HeldOutResults results;
};
std::string training_record_json(const TrainingRecord& record);
// What a checkpoint holds beside the weights: everything needed to rebuild the
// model and read its tokens ("attn_model"), and the run ("attn_training").
Metadata checkpoint_metadata(const TrainConfig& config, const HeldOutResults& held_out);
// The model and task a checkpoint's metadata describes, read strictly: attn_model is the JSON
// object checkpoint_metadata writes, with every field it writes, no other, and each value one it
// may have. Throws attn::Error(bad_file) about "checkpoint" naming the field and what it may be.
TrainConfig train_config_from_metadata(const Metadata& metadata, std::string_view name);
// The state_dict a checkpoint holds: the model's parameters, and the encoder-decoder's pe buffers
// ((1,P,D)), as PyTorch's model.state_dict() holds them.
StateDict checkpoint_state_dict(TrainedModel& model);
// A checkpoint's model: its tensors exactly the config's (no key missing or extra, every shape
// the config's, float32), every value from `weights` (the encoder-decoder's pe buffers are
// checked, not read); throws attn::Error(bad_file) about "checkpoint" naming `name` and the
// file's keys.
TrainedModel model_from_checkpoint(const TrainConfig& config, const StateDict& weights,
                                   std::string_view name);

// Whether --checkpoint NAME names a shipped checkpoint: a bare name (letters, digits, '-' and '_'
// only) always does, and never a file; anything else ("./reverse", "mine.safetensors") is a path.
bool is_shipped_checkpoint_name(std::string_view name);

// A checkpoint of attn train from its tensors and metadata (read_weights or parse_safetensors):
// train_config_from_metadata, then model_from_checkpoint.
struct CheckpointModel {
  TrainConfig config;
  TrainedModel model;
};
CheckpointModel read_checkpoint(const StateDict& weights, const Metadata& metadata,
                                std::string_view name);

}  // namespace attn
