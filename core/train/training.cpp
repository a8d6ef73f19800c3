#include "train/training.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "gradients.hpp"
#include "train/optimizer.hpp"

namespace attn {

namespace {
constexpr std::uint64_t kHeldOutStream = 0x4e1d0ULL;
constexpr std::uint64_t kBatchStream = 0xba7c4ULL;
constexpr std::uint64_t kDropoutStream = 0xd2095ULL;
constexpr std::size_t kEvaluationBatch = 256;
}  // namespace

void check_train_config(const TrainConfig& c) {
  const auto refuse = [](const char* subject, const std::string& message) {
    throw Error(ErrorKind::bad_value, "train", message).about(subject);
  };
  if (c.task == Task::masked && c.sizes.vocab != kTextTokens)
    refuse("vocab", fmt::format("the masked task's {} tokens are fixed (a to z, the space and the "
                                "mask): leave the vocabulary out",
                                kTextTokens));
  if (c.task != Task::masked && (c.sizes.vocab < 2 || c.sizes.vocab > 26))
    refuse("vocab",
           fmt::format("{} tokens: the tasks' tokens are letters, give 2 to 26", c.sizes.vocab));
  if (c.sizes.tokens < 2)
    refuse("tokens", fmt::format("{} tokens per sequence: give at least 2", c.sizes.tokens));
  if (c.heads == 0 || c.d_model % c.heads != 0)
    refuse("heads", fmt::format("{} heads do not divide the width {}: give a divisor of {}",
                                c.heads, c.d_model, c.d_model));
  if (!(c.lr > 0.0f) || !std::isfinite(c.lr))
    refuse("lr",
           fmt::format("{} is not a learning rate: give a positive number such as 0.003", c.lr));
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f))
    refuse("dropout", fmt::format("{} is not a probability of dropping: give 0 (the default) to "
                                  "below 1, such as 0.1",
                                  c.dropout));
  if (!(c.weight_decay >= 0.0f) || !std::isfinite(c.weight_decay))
    refuse("weight_decay", "the weight decay must be 0 or more, such as 0.01");
}

MemoryPlan plan_training(const TrainConfig& c) {
  const EncoderConfig e = model_config(c);
  const std::size_t parameters =
      static_cast<std::size_t>(encoder_size(e, true).parameters.value()) +
      (c.d_model + 1) * task_classes(c.task, c.sizes);
  MemoryPlan plan = {{"the weights, gradients and AdamW's moments", {4, parameters}, "  D/L"}};
  for (std::size_t i = 0; i < c.layers; ++i)
    append(plan, plan_encoder_layer_tape(e, c.batch, c.sizes.tokens));
  append(plan, plan_embeddings(e, c.batch, c.sizes.tokens));
  plan.push_back({"the logits and their gradient",
                  {2, c.batch, c.sizes.tokens, task_classes(c.task, c.sizes)},
                  " B T"});
  plan.push_back({"the held-out set", {2, c.held_out, c.sizes.tokens}, "  T", 8});
  if (c.dropout > 0.0f)
    plan.push_back(
        {"the dropout masks", {c.layers + 1, c.batch, c.sizes.tokens, c.d_model}, "L B T D"});
  return plan;
}

EncoderConfig model_config(const TrainConfig& c) {
  EncoderConfig e;
  e.hidden_size = c.d_model;
  e.num_attention_heads = c.heads;
  e.intermediate_size = c.d_ff;
  e.num_hidden_layers = c.layers;
  e.vocab_size = task_vocabulary(c.task, c.sizes);
  e.max_position_embeddings = c.sizes.tokens;
  e.hidden_dropout_prob = c.dropout;
  e.attention_probs_dropout_prob = 0.0;
  return e;
}

float warmup_cosine(float peak, std::size_t steps, std::size_t step) {
  const double warm = std::max(1.0, 0.05 * static_cast<double>(steps));
  const double s = static_cast<double>(step);
  if (s <= warm) return static_cast<float>(peak * s / warm);
  const double progress = (s - warm) / std::max(1.0, static_cast<double>(steps) - warm);
  return static_cast<float>(peak * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * progress))));
}

float learning_rate(const TrainConfig& c, std::size_t step) {
  return warmup_cosine(c.lr, c.steps, step);
}

std::string training_record_json(const TrainingRecord& r) {
  nlohmann::ordered_json training = {{"steps", r.steps},
                                     {"batch", r.batch},
                                     {"lr", r.lr},
                                     {"weight_decay", r.weight_decay},
                                     {"dropout", r.dropout},
                                     {"seed", r.seed},
                                     {"held_out", r.held_out},
                                     {"optimizer", "AdamW"},
                                     {"schedule", "5% warm-up, cosine"}};
  for (const auto& [name, value] : r.results)
    training[name] = value;
  return training.dump();
}

Metadata checkpoint_metadata(const TrainConfig& c, const Evaluation& e) {
  nlohmann::ordered_json config = {{"task", std::string(task_info(c.task).name)},
                                   {"vocab", c.sizes.vocab},
                                   {"tokens", c.sizes.tokens},
                                   {"classes", task_classes(c.task, c.sizes)},
                                   {"layers", c.layers},
                                   {"d_model", c.d_model},
                                   {"heads", c.heads},
                                   {"d_ff", c.d_ff},
                                   {"norm", c.norm == NormPlacement::pre ? "pre" : "post"}};
  const TrainingRecord record{
      c.steps,
      c.batch,
      c.lr,
      c.weight_decay,
      c.dropout,
      c.seed,
      c.held_out,
      {{"token_accuracy", e.token_accuracy}, {"sequence_accuracy", e.sequence_accuracy}}};
  return {{"attn_model", config.dump()}, {"attn_training", training_record_json(record)}};
}

TrainConfig train_config_from_metadata(const Metadata& metadata, std::string_view name) {
  const auto damaged = [&](const std::string& why) {
    return Error(ErrorKind::bad_file, "checkpoint",
                 fmt::format("'{}' is not a checkpoint of attn train: {}; make one with "
                             "`attn train --save-checkpoint FILE.safetensors`",
                             name, why))
        .about("checkpoint");
  };
  const auto it = metadata.find("attn_model");
  if (it == metadata.end()) throw damaged("its metadata has no attn_model");
  const nlohmann::json m = nlohmann::json::parse(it->second, nullptr, false);
  if (m.is_object() && m.value("kind", std::string()) == "transformer")
    throw Error(ErrorKind::bad_value, "checkpoint",
                fmt::format("'{}' holds seed 001's encoder-decoder, not an encoder: decode with "
                            "`attn generate --checkpoint {}`, or give an encoder's checkpoint "
                            "such as reverse",
                            name, name))
        .about("checkpoint");
  const auto size = [&](const char* key) -> std::size_t {
    if (!m.is_object() || !m.contains(key) || !m[key].is_number_unsigned())
      throw damaged(fmt::format("attn_model has no whole number \"{}\"", key));
    return m[key].get<std::size_t>();
  };
  TrainConfig c;
  const std::string task = m.is_object() ? m.value("task", std::string()) : std::string();
  const auto known = task_named(task);
  if (!known) throw damaged(fmt::format("its task '{}' is not one attn knows", task));
  c.task = *known;
  c.sizes = {size("vocab"), size("tokens")};
  c.layers = size("layers");
  c.d_model = size("d_model");
  c.heads = size("heads");
  c.d_ff = size("d_ff");
  c.norm = m.value("norm", std::string("pre")) == "post" ? NormPlacement::post : NormPlacement::pre;
  try {
    check_train_config(c);
  } catch (const Error& e) {
    throw damaged(e.detail());
  }
  if (size("classes") != task_classes(c.task, c.sizes))
    throw damaged("its classes do not fit its task");
  return c;
}

TaskBatch held_out_set(const TrainConfig& c) {
  Rng rng(c.seed ^ kHeldOutStream);
  return make_task_batch(c.task, c.sizes, c.held_out, rng, TaskSplit::held_out);
}

Evaluation evaluate(const TokenClassifier& model, const TaskBatch& set) {
  Evaluation e;
  e.sequences = set.ids.shape(0);
  const std::size_t t = set.ids.shape(1);
  std::size_t right_tokens = 0, scored_tokens = 0, right_sequences = 0;
  for (std::size_t first = 0; first < e.sequences; first += kEvaluationBatch) {
    const std::size_t n = std::min(kEvaluationBatch, e.sequences - first);
    Ids ids({n, t}), labels({n, t});
    std::copy(set.ids.data() + first * t, set.ids.data() + (first + n) * t, ids.data());
    std::copy(set.labels.data() + first * t, set.labels.data() + (first + n) * t, labels.data());
    const Tensor3 logits = forward(model.head, forward_tape(model.encoder, ids).output());
    const std::size_t classes = logits.shape(2);
    for (std::size_t s = 0; s < n; ++s) {
      bool all = true;
      for (std::size_t i = 0; i < t; ++i) {
        if (labels(s, i) == kIgnoredLabel) continue;
        const float* z = logits.data() + (s * t + i) * classes;
        const auto best = static_cast<std::int64_t>(std::max_element(z, z + classes) - z);
        const bool right = best == labels(s, i);
        right_tokens += right;
        ++scored_tokens;
        all = all && right;
      }
      right_sequences += all;
    }
  }
  e.token_accuracy = scored_tokens > 0
                         ? static_cast<double>(right_tokens) / static_cast<double>(scored_tokens)
                         : 0.0;
  e.sequence_accuracy = static_cast<double>(right_sequences) / static_cast<double>(e.sequences);
  return e;
}

TokenClassifier initial_model(const TrainConfig& c) {
  Rng init(c.seed);
  return init_token_classifier(init, model_config(c), c.norm, task_classes(c.task, c.sizes));
}

Trainer::Trainer(const TrainConfig& c)
    : config_(c),
      batches_(c.seed ^ kBatchStream),
      dropout_(c.seed ^ kDropoutStream) {  // draws nothing while the dropout is 0
  check_train_config(c);
  check_budget("train", plan_training(c));
  model_ = initial_model(c);
  grad_ = zeros_like(model_);
  slots_ = parameter_slots(model_, grad_);
  adamw_.weight_decay = c.weight_decay;
}

TrainStep Trainer::step() {
  const TaskBatch b = make_task_batch(config_.task, config_.sizes, config_.batch, batches_);
  zero_grad(grad_);
  const TokenClassifierTape tape = forward(model_, b.ids, b.labels, nullptr, &dropout_);
  backward(model_, tape, b.labels, grad_);
  ++done_;
  adamw_.lr = learning_rate(config_, done_);
  adamw_.step(slots_);
  return {done_, tape.loss.loss,
          static_cast<double>(tape.loss.correct) /
              static_cast<double>(std::max<std::size_t>(1, tape.loss.scored)),
          adamw_.lr};
}

TokenClassifier train(const TrainConfig& c, const std::function<void(const TrainStep&)>& on_step) {
  Trainer trainer(c);
  for (std::size_t step = 1; step <= c.steps; ++step) {
    const TrainStep s = trainer.step();
    if (on_step) on_step(s);
  }
  return trainer.model();
}

}  // namespace attn
