#include "train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/heads.hpp"
#include "gradients.hpp"
#include "io/config.hpp"
#include "loss.hpp"
#include "module_size.hpp"
#include "state_dict.hpp"

namespace attn {

namespace {

// The seeded streams of a run, each apart from the others (Rng(seed ^ stream)). The encoder's
// initial weights come from the seed itself.
constexpr std::uint64_t kEncoderHeldOutStream = 0x4e1d0ULL;
constexpr std::uint64_t kEncoderBatchStream = 0xba7c4ULL;
constexpr std::uint64_t kDropoutStream = 0xd2095ULL;
constexpr std::uint64_t kSeq2SeqBatchStream = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kSeq2SeqHeldOutStream = 0xd1b54a32d192ed03ULL;
constexpr std::uint64_t kSeq2SeqInitStream = 0x94d049bb133111ebULL;

Task encoder_task(const TrainConfig& c) {
  return std::get<Task>(c.task);
}
Seq2SeqTask seq2seq_task(const TrainConfig& c) {
  return std::get<Seq2SeqTask>(c.task);
}

std::string norm_word(NormPlacement norm) {
  return norm == NormPlacement::pre ? "pre" : "post";
}

// One step's loss on a batch, and the gradient it adds into `grad`.
struct BatchLoss {
  double loss = 0.0;
  std::size_t correct = 0, scored = 0;
};

BatchLoss batch_loss(const TrainConfig& c, const TokenClassifier& model, TokenClassifier& grad,
                     Rng& batches, Rng& dropout) {
  const TaskBatch b = make_task_batch(encoder_task(c), c.sizes, c.batch, batches);
  const TokenClassifierTape tape = forward(model, b.ids, b.labels, nullptr, &dropout);
  backward(model, tape, b.labels, grad);
  return {tape.loss.loss, tape.loss.correct, tape.loss.scored};
}

BatchLoss batch_loss(const TrainConfig& c, const Transformer& model, Transformer& grad,
                     Rng& batches, Rng&) {
  std::vector<Seq2SeqExample> examples;
  for (std::size_t i = 0; i < c.batch; ++i)
    examples.push_back(make_example(seq2seq_task(c), batches, Seq2SeqSplit::train));
  const Seq2SeqBatch b = make_batch(examples);
  const TransformerTape tape =
      forward(model, b.source, b.target_input, &b.source_mask, &b.target_mask);
  const CrossEntropySteps loss = cross_entropy(tape.logits, b.labels);
  backward(model, tape, cross_entropy_backward(loss, b.labels), grad);
  return {loss.loss, loss.correct, loss.scored};
}

}  // namespace

std::string_view task_name(const TrainTask& task) {
  if (const auto* t = std::get_if<Seq2SeqTask>(&task)) return seq2seq_task_info(*t).name;
  return task_info(std::get<Task>(task)).name;
}

bool is_seq2seq(const TrainTask& task) {
  return std::holds_alternative<Seq2SeqTask>(task);
}

std::size_t default_steps(const TrainTask& task) {
  return is_seq2seq(task) ? 4000 : 1000;
}

void check_train_config(const TrainConfig& c) {
  const auto refuse = [](const char* subject, const std::string& message) {
    throw Error(ErrorKind::bad_value, "train", message).about(subject);
  };
  for (const auto& [size, subject] :
       {std::pair{c.layers, "layers"}, std::pair{c.d_model, "d_model"}, std::pair{c.heads, "heads"},
        std::pair{c.d_ff, "d_ff"}, std::pair{c.steps, "steps"}, std::pair{c.batch, "batch"}})
    if (size == 0) refuse(subject, fmt::format("<{}> is 0: give at least 1", subject));
  head_size(c.d_model, c.heads, "train", fmt::format("give <heads> that divides {}", c.d_model));
  if (!(c.lr > 0.0f) || !std::isfinite(c.lr))
    refuse("lr",
           fmt::format("{} is not a learning rate: give a positive number such as 0.003", c.lr));
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f))
    refuse("dropout", fmt::format("{} is not a probability of dropping: give 0 (the default) to "
                                  "below 1, such as 0.1",
                                  c.dropout));
  if (!(c.weight_decay >= 0.0f) || !std::isfinite(c.weight_decay))
    refuse("weight_decay", "the weight decay must be 0 or more, such as 0.01");
  if (is_seq2seq(c.task)) return;
  const Task task = encoder_task(c);
  if (task == Task::masked && c.sizes.vocab != kTextTokens)
    refuse("vocab", fmt::format("the masked task's {} tokens are fixed (a to z, the space and the "
                                "mask): leave the vocabulary out",
                                kTextTokens));
  if (task != Task::masked && (c.sizes.vocab < 2 || c.sizes.vocab > 26))
    refuse("vocab",
           fmt::format("{} tokens: the tasks' tokens are letters, give 2 to 26", c.sizes.vocab));
  if (c.sizes.tokens < 2)
    refuse("tokens", fmt::format("{} tokens per sequence: give at least 2", c.sizes.tokens));
  check_task_split(task, c.sizes);
}

namespace {

// The tensors of one forward of seed 001's encoder-decoder on a batch of B (S source and T target
// tokens), as TransformerTape keeps them: the masks, each layer's blocks (their residual streams,
// norms, attentions and feed-forwards), the final norms and the log-probabilities.
MemoryPlan plan_seq2seq_tape(const TransformerConfig& t, std::size_t batch) {
  const std::size_t b = batch, s = t.source_positions, n = t.target_positions, d = t.d_model,
                    h = t.heads, f = t.d_ff, l = t.layers, v = t.target_vocab;
  const std::size_t post = t.placement == NormPlacement::post;
  return {
      {"the source and target ids, labels and masks", {b, s + 3 * n + n * n}, "B T", 8},
      {"the masks for each head", {b, h, s * s + n * s + n * n}, "B H T"},
      {"the embedded source and target", {b, s + n, d}, "B T D"},
      // An encoder block: 2 inputs, 2 norms' x̂ and output, Q K V, the heads side by side, the
      // attention's output, the feed-forward's projection and output, the block's output.
      {"the encoder blocks' streams", {l, b, s, 14 + 2 * post, d}, "L B T  D"},
      {"the encoder blocks' scores and weights", {l, b, h, 2 * s, s}, "L B H T T"},
      {"the encoder blocks' hidden layers", {l, b, s, 2 * f}, "L B T F"},
      // A decoder block: 3 inputs, 3 norms' x̂ and output, self-attention's Q K V, heads and
      // output, cross-attention's Q, heads and output, the feed-forward's two, the output.
      {"the decoder blocks' streams", {l, b, n, 20 + 3 * post, d}, "L B T  D"},
      {"the cross-attention's keys and values", {l, b, 2 * s, d}, "L B T D"},
      {"the decoder blocks' scores and weights", {l, b, h, 2 * n, n + s}, "L B H T T"},
      {"the decoder blocks' hidden layers", {l, b, n, 2 * f}, "L B T F"},
      {"the norms' means and deviations", {2 * l + 1, b, 3 * s + 4 * n}, "L B T"},
      {"the final norms", {b, 2 * (s + n), d}, "B T D"},
      {"the logits and log-probabilities", {2, b, n, v}, " B T"},
  };
}

// What a decoder block's backward holds beside the tapes: the gradients of its tensors (as many
// as the tape keeps), the attention's inputs folded by head, and the memory's gradient.
MemoryPlan plan_seq2seq_backward(const TransformerConfig& t, std::size_t batch) {
  const std::size_t b = batch, s = t.source_positions, n = t.target_positions, d = t.d_model,
                    h = t.heads, f = t.d_ff;
  return {{"a block's gradients", {b, n, 30, d}, "B T  D"},
          {"a block's score gradients", {b, h, 4 * n, n + s}, "B H T T"},
          {"a block's hidden gradients", {b, n, 2 * f}, "B T F"},
          {"the memory's gradients", {b, 6 * s, d}, "B T D"}};
}

// What a block's forward holds beside its tape while an attention runs: the projections before
// and after they are split into heads, the scores and weights before they are copied out, the
// heads' outputs before they are merged.
MemoryPlan plan_seq2seq_forward_temporaries(const TransformerConfig& t, std::size_t batch) {
  const std::size_t b = batch, s = t.source_positions, n = t.target_positions, d = t.d_model,
                    h = t.heads;
  return {
      {"an attention's projections and outputs", {b, 8, std::max(s, n), d}, "B  T D"},
      {"an attention's scores and weights", {b, h, 2 * std::max(s, n), std::max(s, n)}, "B H T T"}};
}

MemoryPlan plan_seq2seq_training(const TrainConfig& c) {
  const TransformerConfig t = transformer_config(c);
  const std::size_t parameters =
      static_cast<std::size_t>(
          ((module_size(describe_encoder_block(t)) + module_size(describe_decoder_block(t))) *
           Count(t.layers))
              .parameters.value()) +
      (t.source_vocab + 2 * t.target_vocab + 1) * t.d_model + t.target_vocab + 4;
  // The weights, their gradients, AdamW's two moments and the model returned.
  MemoryPlan plan = {
      {"the weights, gradients and AdamW's moments", {5, parameters}, "  D/L"},
      {"the positional encodings", {2, t.source_positions + t.target_positions, t.d_model}, " T D"},
      {"the held-out examples", {c.held_out}, "", 64, Held::computing, 4 * c.held_out},
      {"the loss curve", {c.steps, 4}, "", 8}};
  // A step: the batch's examples, the tape, the loss's probabilities and the gradient of the
  // logits, and a block's backward; or, after training, the held-out set's forward, a part at a
  // time.
  MemoryPlan step = {{"the batch's examples", {c.batch}, "B", 64, Held::computing, 2 * c.batch},
                     {"the softmax and the logits' gradient",
                      {2, c.batch, t.target_positions, t.target_vocab},
                      " B T",
                      8}};
  append(step, plan_seq2seq_tape(t, c.batch));
  append(step, larger_of(plan_seq2seq_forward_temporaries(t, c.batch),
                         plan_seq2seq_backward(t, c.batch)));
  const std::size_t evaluated = std::min(c.held_out, kEvaluationBatch);
  MemoryPlan evaluation = {
      {"the held-out softmax", {evaluated, t.target_positions, t.target_vocab}, "", 8}};
  append(evaluation, plan_seq2seq_tape(t, evaluated));
  append(evaluation, plan_seq2seq_forward_temporaries(t, evaluated));
  append(plan, larger_of(step, evaluation));
  return plan;
}

}  // namespace

MemoryPlan plan_training(const TrainConfig& c) {
  if (is_seq2seq(c.task)) return plan_seq2seq_training(c);
  const Task task = encoder_task(c);
  const EncoderConfig e = encoder_config(c);
  const std::size_t parameters =
      static_cast<std::size_t>(encoder_size(e, true).parameters.value()) +
      (c.d_model + 1) * task_classes(task, c.sizes);
  // The weights, their gradients, AdamW's two moments and the model returned.
  MemoryPlan plan = {{"the weights, gradients and AdamW's moments", {5, parameters}, "  D/L"}};
  plan.push_back({"the batch's ids and labels", {2, c.batch, c.sizes.tokens}, " B T", 8});
  for (std::size_t i = 0; i < c.layers; ++i)
    append(plan, plan_encoder_layer_tape(e, c.batch, c.sizes.tokens));
  append(plan, plan_embeddings(e, c.batch, c.sizes.tokens));
  // On top of the tapes, the larger of the last layer's forward with its attention's temporaries
  // and a layer's backward: gradients that mirror its tape, and the attention's gradients of the
  // weights and scores with the weights taken apart by head.
  MemoryPlan backward = plan_encoder_layer_tape(e, c.batch, c.sizes.tokens);
  backward.push_back({"the attention's score gradients",
                      {3, c.batch, c.heads, c.sizes.tokens, c.sizes.tokens},
                      " B H T T"});
  append(plan, larger_of(plan_multi_head_temporaries(MultiHeadVariant::book, c.batch,
                                                     c.sizes.tokens, c.d_model, c.heads, false),
                         backward));
  plan.push_back({"the logits, their softmax and gradient",
                  {3, c.batch, c.sizes.tokens, task_classes(task, c.sizes)},
                  " B T"});
  plan.push_back({"the held-out set", {2, c.held_out, c.sizes.tokens}, "  T", 8});
  plan.push_back({"the loss curve", {c.steps, 4}, "", 8});
  if (c.dropout > 0.0f)
    plan.push_back(
        {"the dropout masks", {c.layers + 1, c.batch, c.sizes.tokens, c.d_model}, "L B T D"});
  return plan;
}

EncoderConfig encoder_config(const TrainConfig& c) {
  EncoderConfig e;
  e.hidden_size = c.d_model;
  e.num_attention_heads = c.heads;
  e.intermediate_size = c.d_ff;
  e.num_hidden_layers = c.layers;
  e.vocab_size = task_vocabulary(encoder_task(c), c.sizes);
  e.max_position_embeddings = c.sizes.tokens;
  e.hidden_dropout_prob = c.dropout;
  e.attention_probs_dropout_prob = 0.0;
  return e;
}

TransformerConfig transformer_config(const TrainConfig& c) {
  const Seq2SeqTask task = seq2seq_task(c);
  TransformerConfig t;
  t.source_vocab = source_tokens(task).size();
  t.target_vocab = target_tokens(task).size();
  t.source_positions = max_source_length(task);
  t.target_positions = max_target_length(task) + 1;
  t.d_model = c.d_model;
  t.heads = c.heads;
  t.d_ff = c.d_ff;
  t.layers = c.layers;
  t.placement = c.norm;
  t.fill = MaskFill::seed;
  return t;
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

TrainedModel initial_model(const TrainConfig& c) {
  if (is_seq2seq(c.task)) {
    Rng init(c.seed ^ kSeq2SeqInitStream);
    return init_transformer(init, transformer_config(c));
  }
  Rng init(c.seed);
  return init_token_classifier(init, encoder_config(c), c.norm,
                               task_classes(encoder_task(c), c.sizes));
}

Trainer::Trainer(const TrainConfig& c)
    : config_(c),
      batches_(c.seed ^ (is_seq2seq(c.task) ? kSeq2SeqBatchStream : kEncoderBatchStream)),
      dropout_(c.seed ^ kDropoutStream) {  // draws nothing while the dropout is 0
  check_train_config(c);
  check_budget("train", plan_training(c));
  model_ = initial_model(c);
  grad_ = model_;
  std::visit(
      [&](auto& model) {
        auto& grad = std::get<std::decay_t<decltype(model)>>(grad_);
        zero_grad(grad);
        slots_ = parameter_slots(model, grad);
      },
      model_);
  adamw_.weight_decay = c.weight_decay;
}

TrainStep Trainer::step() {
  const BatchLoss b = std::visit(
      [&](auto& model) {
        auto& grad = std::get<std::decay_t<decltype(model)>>(grad_);
        zero_grad(grad);
        return batch_loss(config_, model, grad, batches_, dropout_);
      },
      model_);
  ++done_;
  adamw_.lr = learning_rate(config_, done_);
  adamw_.step(slots_);
  return {done_, b.loss,
          static_cast<double>(b.correct) / static_cast<double>(std::max<std::size_t>(1, b.scored)),
          adamw_.lr};
}

TrainedModel train(const TrainConfig& c, const std::function<void(const TrainStep&)>& on_step) {
  Trainer trainer(c);
  for (std::size_t step = 1; step <= c.steps; ++step) {
    const TrainStep s = trainer.step();
    if (on_step) on_step(s);
  }
  return trainer.model();
}

TaskBatch held_out_set(const TrainConfig& c) {
  Rng rng(c.seed ^ kEncoderHeldOutStream);
  return make_task_batch(encoder_task(c), c.sizes, c.held_out, rng, TaskSplit::held_out);
}

std::vector<Seq2SeqExample> held_out_examples(const TrainConfig& c) {
  Rng rng(c.seed ^ kSeq2SeqHeldOutStream);
  std::vector<Seq2SeqExample> out;
  for (std::size_t i = 0; i < c.held_out; ++i)
    out.push_back(make_example(seq2seq_task(c), rng, Seq2SeqSplit::held_out));
  return out;
}

namespace {
// A sequence's tokens as a masked window reads them: each "?" back to the character it hides.
std::vector<std::int64_t> unmasked_row(const TaskBatch& b, std::size_t row) {
  std::vector<std::int64_t> out(b.ids.shape(1));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = b.labels(row, i) != kIgnoredLabel && b.ids(row, i) == kTextMask ? b.labels(row, i)
                                                                             : b.ids(row, i);
  return out;
}
}  // namespace

HeldOutOverlap held_out_overlap(const TrainConfig& c) {
  std::set<std::vector<std::int64_t>> held_out;
  HeldOutOverlap o;
  std::set<std::vector<std::int64_t>> found;
  if (is_seq2seq(c.task)) {
    for (const Seq2SeqExample& e : held_out_examples(c))
      held_out.insert(e.source);
    Rng batches(c.seed ^ kSeq2SeqBatchStream);
    for (std::size_t step = 0; step < c.steps; ++step) {
      for (std::size_t i = 0; i < c.batch; ++i) {
        const Seq2SeqExample e = make_example(seq2seq_task(c), batches, Seq2SeqSplit::train);
        if (held_out.count(e.source) != 0) found.insert(e.source);
        ++o.drawn;
      }
    }
  } else {
    const TaskBatch h = held_out_set(c);
    for (std::size_t row = 0; row < h.ids.shape(0); ++row)
      held_out.insert(unmasked_row(h, row));
    Rng batches(c.seed ^ kEncoderBatchStream);
    for (std::size_t step = 0; step < c.steps; ++step) {
      const TaskBatch b = make_task_batch(encoder_task(c), c.sizes, c.batch, batches);
      for (std::size_t row = 0; row < b.ids.shape(0); ++row) {
        std::vector<std::int64_t> tokens = unmasked_row(b, row);
        if (held_out.count(tokens) != 0) found.insert(std::move(tokens));
        ++o.drawn;
      }
    }
  }
  o.held_out = held_out.size();
  o.found = found.size();
  return o;
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

Metadata checkpoint_metadata(const TrainConfig& c, const HeldOutResults& held_out) {
  nlohmann::ordered_json model;
  if (is_seq2seq(c.task)) {
    const TransformerConfig t = transformer_config(c);
    model = {{"kind", "transformer"},
             {"task", std::string(task_name(c.task))},
             {"source_vocab", t.source_vocab},
             {"target_vocab", t.target_vocab},
             {"source_positions", t.source_positions},
             {"target_positions", t.target_positions}};
  } else {
    model = {{"task", std::string(task_name(c.task))},
             {"vocab", c.sizes.vocab},
             {"tokens", c.sizes.tokens},
             {"classes", task_classes(encoder_task(c), c.sizes)}};
  }
  model["layers"] = c.layers;
  model["d_model"] = c.d_model;
  model["heads"] = c.heads;
  model["d_ff"] = c.d_ff;
  model["norm"] = norm_word(c.norm);
  const TrainingRecord record{c.steps,   c.batch, c.lr,       c.weight_decay,
                              c.dropout, c.seed,  c.held_out, held_out};
  return {{"attn_model", model.dump()}, {"attn_training", training_record_json(record)}};
}

namespace {

// attn_model is one flat object; JSON nested deeper than this is refused before it is parsed.
constexpr std::size_t kMaxMetadataDepth = 64;
// A checkpoint's sizes; larger ones are refused before any shape is built from them.
constexpr std::uint64_t kMaxCheckpointSize = std::uint64_t{1} << 24;

// The fields checkpoint_metadata writes, in its order: an encoder's, the encoder-decoder's.
const std::vector<std::string> kEncoderFields = {"task",    "vocab", "tokens", "classes", "layers",
                                                 "d_model", "heads", "d_ff",   "norm"};
const std::vector<std::string> kSeq2SeqFields = {"kind",
                                                 "task",
                                                 "source_vocab",
                                                 "target_vocab",
                                                 "source_positions",
                                                 "target_positions",
                                                 "layers",
                                                 "d_model",
                                                 "heads",
                                                 "d_ff",
                                                 "norm"};

// The byte where `text` first nests deeper than kMaxMetadataDepth, outside strings; npos if never.
std::size_t too_deep_at(std::string_view text) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      escaped = !escaped && c == '\\';
      if (!escaped && c == '"') in_string = false;
      if (c != '\\') escaped = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxMetadataDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

// A JSON value as a message shows it: compact, escaped, cut at 60 characters.
std::string shown(const nlohmann::json& value) {
  return printable(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 60);
}

}  // namespace

TrainConfig train_config_from_metadata(const Metadata& metadata, std::string_view name) {
  const auto damaged = [&](const std::string& why) {
    return Error(ErrorKind::bad_file, "train_config_from_metadata",
                 fmt::format("'{}' is not a checkpoint of attn train: {}", printable(name), why))
        .about("checkpoint");
  };
  const auto it = metadata.find("attn_model");
  if (it == metadata.end()) throw damaged("its metadata has no attn_model");
  if (const std::size_t at = too_deep_at(it->second); at != std::string_view::npos)
    throw damaged(
        fmt::format("its attn_model is not JSON attn reads: it nests deeper than {} "
                    "levels (at byte {}); attn train writes one flat object",
                    kMaxMetadataDepth, at));
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw damaged(
        fmt::format("its attn_model is not JSON ({})", printable(json_error_reason(e), 160)));
  }
  if (!m.is_object())
    throw damaged(fmt::format("its attn_model is a JSON {}, not the object attn train writes",
                              m.type_name()));

  const bool seq2seq = m.contains("kind");
  if (seq2seq && m["kind"] != "transformer")
    throw damaged(
        fmt::format("attn_model's \"kind\" is {}: it may be \"transformer\" (seed 001's "
                    "encoder-decoder), or absent (the book's encoder)",
                    shown(m["kind"])));
  const std::vector<std::string>& fields = seq2seq ? kSeq2SeqFields : kEncoderFields;
  const std::string field_list =
      fmt::format("{} and {}", fmt::join(fields.begin(), fields.end() - 1, ", "), fields.back());
  for (const std::string& field : fields)
    if (!m.contains(field))
      throw damaged(fmt::format("attn_model has no \"{}\": {}'s attn_model holds {}", field,
                                seq2seq ? "an encoder-decoder" : "an encoder", field_list));
  for (const auto& [field, value] : m.items())
    if (std::find(fields.begin(), fields.end(), field) == fields.end())
      throw damaged(fmt::format(
          "attn_model has a field \"{}\" that attn train does not write: "
          "{}'s attn_model holds {}",
          printable(field, 60), seq2seq ? "an encoder-decoder" : "an encoder", field_list));
  const auto word = [&](const char* field, const std::string& may_be) {
    if (!m[field].is_string())
      throw damaged(fmt::format("attn_model's \"{}\" is {}, not a string: it may be {}", field,
                                shown(m[field]), may_be));
    return m[field].get<std::string>();
  };
  const auto size = [&](const char* field) -> std::size_t {
    const nlohmann::json& v = m[field];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0 ||
        v.get<std::uint64_t>() > kMaxCheckpointSize)
      throw damaged(fmt::format("attn_model's \"{}\" is {}: it may be a whole number from 1 to {}",
                                field, shown(v), kMaxCheckpointSize));
    return v.get<std::size_t>();
  };

  TrainConfig c;
  std::vector<std::string> task_names;
  if (seq2seq) {
    for (const Seq2SeqTaskInfo& t : seq2seq_task_list())
      task_names.emplace_back(t.name);
  } else {
    for (const TaskInfo& t : task_list())
      task_names.emplace_back(t.name);
  }
  const std::string tasks = fmt::format("{}", fmt::join(task_names, ", "));
  const std::string task = word("task", tasks);
  if (seq2seq) {
    const auto known = seq2seq_task_named(task);
    if (!known)
      throw damaged(
          fmt::format("attn_model's \"task\" is {}: it may be {}", shown(m["task"]), tasks));
    c.task = *known;
  } else {
    const auto known = task_named(task);
    if (!known)
      throw damaged(
          fmt::format("attn_model's \"task\" is {}: it may be {}", shown(m["task"]), tasks));
    c.task = *known;
    c.sizes = {size("vocab"), size("tokens")};
  }
  c.layers = size("layers");
  c.d_model = size("d_model");
  c.heads = size("heads");
  c.d_ff = size("d_ff");
  const std::string norm = word("norm", "\"pre\" or \"post\"");
  if (norm != "pre" && norm != "post")
    throw damaged(fmt::format("attn_model's \"norm\" is {}: it may be \"pre\" or \"post\"",
                              shown(m["norm"])));
  c.norm = norm == "post" ? NormPlacement::post : NormPlacement::pre;
  try {
    check_train_config(c);
  } catch (const Error& e) {
    throw damaged(e.subject().empty()
                      ? e.detail()
                      : fmt::format("attn_model's \"{}\": {}", e.subject(), e.detail()));
  }
  if (seq2seq) {
    const TransformerConfig expected = transformer_config(c);
    if (size("source_vocab") != expected.source_vocab ||
        size("target_vocab") != expected.target_vocab ||
        size("source_positions") != expected.source_positions ||
        size("target_positions") != expected.target_positions)
      throw damaged(
          fmt::format("its vocabularies and positions do not fit its task {}: the task "
                      "has source_vocab {}, target_vocab {}, source_positions {} and "
                      "target_positions {}",
                      task, expected.source_vocab, expected.target_vocab, expected.source_positions,
                      expected.target_positions));
  } else if (const std::size_t classes = task_classes(encoder_task(c), c.sizes);
             size("classes") != classes) {
    throw damaged(fmt::format("its \"classes\" {} do not fit its task {}, which has {}",
                              m["classes"].get<std::size_t>(), task, classes));
  }
  return c;
}

namespace {
constexpr const char* kSourcePe = "source_positional_encoding.pe";
constexpr const char* kTargetPe = "target_positional_encoding.pe";

Array pe_buffer(const Tensor2& table) {
  return make_float32({1, table.shape(0), table.shape(1)},
                      std::vector<float>(table.begin(), table.end()));
}
}  // namespace

StateDict checkpoint_state_dict(TrainedModel& model) {
  if (auto* t = std::get_if<Transformer>(&model)) {
    StateDict out = collect_state_dict(*t);
    out[kSourcePe] = pe_buffer(t->source_pe);
    out[kTargetPe] = pe_buffer(t->target_pe);
    return out;
  }
  return collect_state_dict(std::get<TokenClassifier>(model));
}

namespace {
// The tensors a checkpoint of `c` holds, keyed as the model's state_dict: the encoder's and its
// head's, or the encoder-decoder's and its two pe buffers.
std::vector<StateDictEntry> checkpoint_entries(const TrainConfig& c) {
  if (is_seq2seq(c.task)) {
    const TransformerConfig t = transformer_config(c);
    std::vector<StateDictEntry> out = state_dict_entries(describe_transformer(t));
    out.push_back({kSourcePe, {1, t.source_positions, t.d_model}});
    out.push_back({kTargetPe, {1, t.target_positions, t.d_model}});
    return out;
  }
  Module encoder = describe_encoder(encoder_config(c), true);
  encoder.name = "encoder";
  const std::size_t classes = task_classes(encoder_task(c), c.sizes);
  return state_dict_entries(Module{
      "TokenClassifier", "", {}, {encoder, linear_module("head", c.d_model, classes, true)}});
}
}  // namespace

TrainedModel model_from_checkpoint(const TrainConfig& c, const StateDict& weights,
                                   std::string_view name) {
  const auto unfit = [&](const std::string& why) {
    return Error(ErrorKind::bad_file, "model_from_checkpoint",
                 fmt::format("'{}' does not fit its own attn_model (layers {}, d_model {}, "
                             "heads {}, d_ff {}): {}; save it again with attn train",
                             printable(name), c.layers, c.d_model, c.heads, c.d_ff, why))
        .about("checkpoint");
  };
  // Every layer holds tensors of its own heads: a larger count is refused before its shapes are.
  if (c.layers * c.heads > weights.size())
    throw unfit(fmt::format("{} layers of {} heads need more tensors than the file's {}", c.layers,
                            c.heads, weights.size()));
  const std::string mismatch = state_dict_mismatch(checkpoint_entries(c), weights);
  if (!mismatch.empty()) throw unfit(mismatch);

  TrainedModel model = initial_model(c);  // the shapes; every value is replaced below
  if (auto* t = std::get_if<Transformer>(&model)) {
    StateDict parameters = weights;  // the pe buffers' shapes are checked above, not read
    parameters.erase(kSourcePe);
    parameters.erase(kTargetPe);
    load_state_dict(*t, describe_transformer(t->config), parameters, name);
    return model;
  }
  visit_parameters(std::get<TokenClassifier>(model),
                   [&](const std::string& key, float* data, const Shape& shape) {
                     copy_parameter_in(weights, key, data, shape);
                   });
  return model;
}

bool is_shipped_checkpoint_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
}

CheckpointModel read_checkpoint(const StateDict& weights, const Metadata& metadata,
                                std::string_view name) {
  CheckpointModel out{train_config_from_metadata(metadata, name), {}};
  out.model = model_from_checkpoint(out.config, weights, name);
  return out;
}

}  // namespace attn
