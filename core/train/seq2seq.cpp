#include "train/seq2seq.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "gradients.hpp"
#include "loss.hpp"
#include "state_dict.hpp"
#include "train/training.hpp"

namespace attn {

namespace {

constexpr std::uint64_t kBatchStream = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kHeldOutStream = 0xd1b54a32d192ed03ULL;
constexpr std::uint64_t kInitStream = 0x94d049bb133111ebULL;
constexpr std::size_t kLetters = 8, kLongestLetters = 8, kLargestNumber = 9999;

const std::vector<std::string>& letters_source() {
  static const std::vector<std::string> tokens = [] {
    std::vector<std::string> t{"<pad>"};
    for (std::size_t i = 0; i < kLetters; ++i)
      t.push_back(std::string(1, static_cast<char>('a' + i)));
    return t;
  }();
  return tokens;
}
const std::vector<std::string>& letters_target() {
  static const std::vector<std::string> tokens = [] {
    std::vector<std::string> t{"<pad>", "<s>", "</s>"};
    for (std::size_t i = 0; i < kLetters; ++i)
      t.push_back(std::string(1, static_cast<char>('a' + i)));
    return t;
  }();
  return tokens;
}
const std::vector<std::string>& digits_source() {
  static const std::vector<std::string> tokens = [] {
    std::vector<std::string> t{"<pad>"};
    for (char c = '0'; c <= '9'; ++c)
      t.push_back(std::string(1, c));
    return t;
  }();
  return tokens;
}

const char* const kOnes[] = {"zero", "one", "two",   "three", "four",
                             "five", "six", "seven", "eight", "nine"};
const char* const kTeens[] = {"ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                              "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
const char* const kTens[] = {"twenty", "thirty",  "forty",  "fifty",
                             "sixty",  "seventy", "eighty", "ninety"};

const std::vector<std::string>& words_target() {
  static const std::vector<std::string> tokens = [] {
    std::vector<std::string> t{"<pad>", "<s>", "</s>"};
    for (const char* w : kOnes)
      t.push_back(w);
    for (const char* w : kTeens)
      t.push_back(w);
    for (const char* w : kTens)
      t.push_back(w);
    t.push_back("hundred");
    t.push_back("thousand");
    return t;
  }();
  return tokens;
}

std::int64_t word_id(const std::string& word) {
  const auto& t = words_target();
  return std::find(t.begin(), t.end(), word) - t.begin();
}

// 305 -> three hundred five; 0 -> zero.
std::vector<std::string> number_words(std::size_t n) {
  if (n == 0) return {"zero"};
  std::vector<std::string> w;
  if (n >= 1000) {
    w.push_back(kOnes[n / 1000]);
    w.push_back("thousand");
  }
  if ((n / 100) % 10 != 0) {
    w.push_back(kOnes[(n / 100) % 10]);
    w.push_back("hundred");
  }
  const std::size_t r = n % 100;
  if (r >= 20) {
    w.push_back(kTens[r / 10 - 2]);
    if (r % 10 != 0) w.push_back(kOnes[r % 10]);
  } else if (r >= 10) {
    w.push_back(kTeens[r - 10]);
  } else if (r > 0) {
    w.push_back(kOnes[r]);
  }
  return w;
}

// A tenth of the numbers, spread over every digit in every place (Knuth's multiplicative hash).
bool held_out_number(std::size_t n) {
  return ((static_cast<std::uint64_t>(n) * 2654435761ULL) >> 8) % 10 == 3;
}

std::size_t source_number(const std::vector<std::int64_t>& source) {
  std::size_t n = 0;
  for (std::int64_t id : source)
    n = n * 10 + static_cast<std::size_t>(id - 1);
  return n;
}

std::size_t draw(Rng& rng, std::size_t count) {  // uniform in 0..count-1
  return std::min(count - 1, static_cast<std::size_t>(rng.uniform() * static_cast<double>(count)));
}

}  // namespace

const std::vector<Seq2SeqTaskInfo>& seq2seq_task_list() {
  static const std::vector<Seq2SeqTaskInfo> tasks = {
      {Seq2SeqTask::reverse, "reverse", "the source's letters backwards",
       "output i reads source letter n-1-i: the anti-diagonal"},
      {Seq2SeqTask::sort, "sort", "the source's letters in alphabetical order",
       "output i reads wherever the i-th smallest letter stands"},
      {Seq2SeqTask::number_words, "number-words",
       "a number 0 to 9999 in English words: 305 -> three hundred five",
       "each word reads the digit it names: thousands, hundreds, tens, ones"},
  };
  return tasks;
}

std::optional<Seq2SeqTask> seq2seq_task_named(std::string_view name) {
  for (const Seq2SeqTaskInfo& t : seq2seq_task_list())
    if (t.name == name) return t.task;
  return std::nullopt;
}

const Seq2SeqTaskInfo& seq2seq_task_info(Seq2SeqTask task) {
  for (const Seq2SeqTaskInfo& t : seq2seq_task_list())
    if (t.task == task) return t;
  throw Error(ErrorKind::internal, "seq2seq", "a task outside the list");
}

const std::vector<std::string>& source_tokens(Seq2SeqTask task) {
  return task == Seq2SeqTask::number_words ? digits_source() : letters_source();
}
const std::vector<std::string>& target_tokens(Seq2SeqTask task) {
  return task == Seq2SeqTask::number_words ? words_target() : letters_target();
}
std::size_t max_source_length(Seq2SeqTask task) {
  return task == Seq2SeqTask::number_words ? 4 : kLongestLetters;
}
std::size_t max_target_length(Seq2SeqTask task) {
  return task == Seq2SeqTask::number_words ? 6 : kLongestLetters;  // 7777: six words
}

std::vector<std::int64_t> seq2seq_answer(Seq2SeqTask task,
                                         const std::vector<std::int64_t>& source) {
  if (source.empty())
    throw Error(ErrorKind::bad_value, "seq2seq", "the source is empty: give at least one token");
  switch (task) {
    case Seq2SeqTask::reverse: {
      std::vector<std::int64_t> out;
      for (auto it = source.rbegin(); it != source.rend(); ++it)
        out.push_back(*it + 2);  // a is 1 in the source, 3 in the target
      return out;
    }
    case Seq2SeqTask::sort: {
      std::vector<std::int64_t> out;
      for (std::int64_t id : source)
        out.push_back(id + 2);
      std::sort(out.begin(), out.end());
      return out;
    }
    case Seq2SeqTask::number_words:
      break;
  }
  std::vector<std::int64_t> out;
  for (const std::string& w : number_words(source_number(source)))
    out.push_back(word_id(w));
  return out;
}

std::vector<std::int64_t> parse_source(Seq2SeqTask task, std::string_view text) {
  const std::vector<std::string>& tokens = source_tokens(task);
  const bool digits = task == Seq2SeqTask::number_words;
  const std::string alphabet = digits ? "the digits 0 to 9" : "the letters a to h";
  std::vector<std::int64_t> ids;
  for (char ch : text) {
    if (ch == ' ') continue;
    const auto it = std::find(tokens.begin() + 1, tokens.end(), std::string(1, ch));
    if (it == tokens.end())
      throw Error(ErrorKind::bad_value, "seq2seq",
                  fmt::format("'{}' is not a token of the {} task: use {}", ch,
                              seq2seq_task_info(task).name, alphabet))
          .about("text");
    ids.push_back(it - tokens.begin());
  }
  if (ids.empty())
    throw Error(ErrorKind::bad_value, "seq2seq",
                fmt::format("the text has no tokens: give 1 to {} of {}", max_source_length(task),
                            alphabet))
        .about("text");
  if (ids.size() > max_source_length(task))
    throw Error(
        ErrorKind::bad_size, "seq2seq",
        fmt::format("{} tokens, more than the {} task's {}: give at most {}", ids.size(),
                    seq2seq_task_info(task).name, max_source_length(task), max_source_length(task)))
        .about("text");
  if (digits && ids.size() > 1 && ids.front() == 1)
    throw Error(ErrorKind::bad_value, "seq2seq",
                fmt::format("'{}' starts with 0: write the number without leading zeros", text))
        .about("text");
  return ids;
}

std::string source_text(Seq2SeqTask task, const std::vector<std::int64_t>& ids) {
  std::string out;
  for (std::int64_t id : ids)
    out += source_tokens(task).at(static_cast<std::size_t>(id));
  return out;
}

std::string target_text(Seq2SeqTask task, const std::vector<std::int64_t>& ids) {
  std::string out;
  const bool words = task == Seq2SeqTask::number_words;
  for (std::int64_t id : ids) {
    const std::string& token = target_tokens(task).at(static_cast<std::size_t>(id));
    if (!out.empty() && (words || token.size() > 1)) out += ' ';
    out += token;
  }
  return out;
}

std::string seq2seq_example(Seq2SeqTask task) {
  switch (task) {
    case Seq2SeqTask::reverse:
      return "abcdefgh";
    case Seq2SeqTask::sort:
      return "hadbgce";
    case Seq2SeqTask::number_words:
      break;
  }
  return "1305";
}

Seq2SeqExample make_example(Seq2SeqTask task, Rng& rng, Seq2SeqSplit split) {
  Seq2SeqExample e;
  if (task == Seq2SeqTask::number_words) {
    std::size_t n = 0;
    do {  // as many 1-digit as 4-digit numbers; each split keeps to its own numbers
      const std::size_t digits = 1 + draw(rng, 4);
      const std::size_t low = digits == 1 ? 0 : static_cast<std::size_t>(std::pow(10, digits - 1));
      const std::size_t high = static_cast<std::size_t>(std::pow(10, digits));
      n = low + draw(rng, high - low);
    } while (held_out_number(n) != (split == Seq2SeqSplit::held_out));
    for (char ch : std::to_string(n))
      e.source.push_back(ch - '0' + 1);
  } else {
    const std::size_t length = 1 + draw(rng, kLongestLetters);
    for (std::size_t i = 0; i < length; ++i)
      e.source.push_back(static_cast<std::int64_t>(1 + draw(rng, kLetters)));
  }
  e.target = seq2seq_answer(task, e.source);
  return e;
}

Seq2SeqBatch make_batch(const std::vector<Seq2SeqExample>& examples) {
  std::size_t s = 0, t = 0;
  std::vector<std::size_t> source_lengths, target_lengths;
  for (const Seq2SeqExample& e : examples) {
    s = std::max(s, e.source.size());
    t = std::max(t, e.target.size() + 1);
    source_lengths.push_back(e.source.size());
    target_lengths.push_back(e.target.size() + 1);
  }
  Seq2SeqBatch b;
  const std::size_t n = examples.size();
  b.source = xt::zeros<std::int64_t>({n, s});
  b.target_input = xt::zeros<std::int64_t>({n, t});
  b.labels = Ids({n, t});
  b.labels.fill(kIgnoredLabel);
  for (std::size_t i = 0; i < n; ++i) {
    const Seq2SeqExample& e = examples[i];
    std::copy(e.source.begin(), e.source.end(), &b.source(i, 0));
    b.target_input(i, 0) = kStartId;
    for (std::size_t j = 0; j < e.target.size(); ++j) {
      b.target_input(i, j + 1) = e.target[j];
      b.labels(i, j) = e.target[j];
    }
    b.labels(i, e.target.size()) = kEndId;
  }
  b.source_mask = source_padding_mask(source_lengths, s);
  b.target_mask = target_causal_mask(target_lengths, t);
  return b;
}

TransformerConfig seq2seq_model_config(Seq2SeqTask task, std::size_t layers, std::size_t d_model,
                                       std::size_t heads, std::size_t d_ff, NormPlacement norm) {
  TransformerConfig c;
  c.source_vocab = source_tokens(task).size();
  c.target_vocab = target_tokens(task).size();
  c.source_positions = max_source_length(task);
  c.target_positions = max_target_length(task) + 1;
  c.d_model = d_model;
  c.heads = heads;
  c.d_ff = d_ff;
  c.layers = layers;
  c.placement = norm;
  c.fill = MaskFill::seed;
  return c;
}

TransformerConfig model_config(const Seq2SeqTrainConfig& c) {
  return seq2seq_model_config(c.task, c.layers, c.d_model, c.heads, c.d_ff, c.norm);
}

void check_seq2seq_config(const Seq2SeqTrainConfig& c) {
  const auto positive = [](std::size_t v, const char* option) {
    if (v == 0)
      throw Error(ErrorKind::bad_value, "train", fmt::format("--{} is 0: give at least 1", option))
          .about(option);
  };
  positive(c.layers, "layers");
  positive(c.d_model, "d-model");
  positive(c.heads, "heads");
  positive(c.d_ff, "d-ff");
  positive(c.steps, "steps");
  positive(c.batch, "batch");
  if (c.d_model % c.heads != 0)
    throw Error(
        ErrorKind::bad_value, "train",
        fmt::format("--d-model {} is not divisible by --heads {}: pick heads that divide it",
                    c.d_model, c.heads))
        .about("heads");
  if (!(c.lr > 0.0f) || !std::isfinite(c.lr))
    throw Error(ErrorKind::bad_value, "train",
                fmt::format("--lr {} is not a positive number: try 3e-3", c.lr))
        .about("lr");
}

std::vector<Seq2SeqExample> held_out_examples(const Seq2SeqTrainConfig& c) {
  Rng rng(c.seed ^ kHeldOutStream);
  std::vector<Seq2SeqExample> out;
  for (std::size_t i = 0; i < c.held_out; ++i)
    out.push_back(make_example(c.task, rng, Seq2SeqSplit::held_out));
  return out;
}

Seq2SeqTrainer::Seq2SeqTrainer(const Seq2SeqTrainConfig& c)
    : config_(c), batches_(c.seed ^ kBatchStream) {
  check_seq2seq_config(c);
  Rng init(c.seed ^ kInitStream);
  model_ = init_transformer(init, model_config(c));
  grad_ = zeros_like(model_);
  slots_ = parameter_slots(model_, grad_);
  adamw_.weight_decay = c.weight_decay;
}

Seq2SeqStep Seq2SeqTrainer::step() {
  std::vector<Seq2SeqExample> examples;
  for (std::size_t i = 0; i < config_.batch; ++i)
    examples.push_back(make_example(config_.task, batches_, Seq2SeqSplit::train));
  const Seq2SeqBatch b = make_batch(examples);
  zero_grad(grad_);
  const TransformerTape tape =
      forward(model_, b.source, b.target_input, &b.source_mask, &b.target_mask);
  const CrossEntropySteps loss = cross_entropy(tape.logits, b.labels);
  backward(model_, tape, cross_entropy_backward(loss, b.labels), grad_);
  ++done_;
  adamw_.lr = warmup_cosine(config_.lr, config_.steps, done_);
  adamw_.step(slots_);
  return {done_, loss.loss,
          static_cast<double>(loss.correct) /
              static_cast<double>(std::max<std::size_t>(1, loss.scored)),
          adamw_.lr};
}

void check_decode_options(const DecodeOptions& o) {
  if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature))
    throw Error(ErrorKind::bad_value, "generate",
                fmt::format("--temperature {} is not a positive number: try 1 (0.5 sharpens, 2 "
                            "flattens)",
                            o.temperature))
        .about("temperature");
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    throw Error(
        ErrorKind::bad_value, "generate",
        fmt::format("--top-p {} is outside (0, 1]: try 0.9, or 1 to keep every token", o.top_p))
        .about("top-p");
}

namespace {
// The distribution a pick is drawn from: softmax(log_probs / temperature), top-k, top-p.
std::vector<float> sampling_distribution(const std::vector<float>& log_probs,
                                         const DecodeOptions& o) {
  const std::size_t v = log_probs.size();
  std::vector<double> p(v);
  const float largest = *std::max_element(log_probs.begin(), log_probs.end());
  double sum = 0.0;
  for (std::size_t i = 0; i < v; ++i)
    sum += p[i] = std::exp((static_cast<double>(log_probs[i]) - largest) / o.temperature);
  for (double& x : p)
    x /= sum;
  std::vector<std::size_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  std::size_t keep = o.top_k == 0 ? v : std::min(o.top_k, v);
  double cumulative = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    cumulative += p[order[i]];
    if (cumulative >= o.top_p) {
      keep = i + 1;
      break;
    }
  }
  double kept = 0.0;
  for (std::size_t i = 0; i < keep; ++i)
    kept += p[order[i]];
  std::vector<float> out(v, 0.0f);
  for (std::size_t i = 0; i < keep; ++i)
    out[order[i]] = static_cast<float>(p[order[i]] / kept);
  return out;
}
}  // namespace

Decoded decode(const Transformer& model, const std::vector<std::int64_t>& source,
               const DecodeOptions& o) {
  check_decode_options(o);
  const TransformerConfig& c = model.config;
  Ids ids({1, source.size()});
  std::copy(source.begin(), source.end(), ids.begin());
  Decoded out;
  out.memory = encode(model, ids, nullptr);
  const std::size_t limit =
      o.max_tokens == 0 ? c.target_positions : std::min(o.max_tokens, c.target_positions);
  DecoderCache cache = start_decoding(model, out.memory, nullptr);
  Rng rng(o.seed);
  std::vector<std::int64_t> prefix{kStartId};
  while (prefix.size() <= limit) {
    Tensor3 log_probs;
    if (o.cache) {
      log_probs = decode_step(model, cache, {prefix.back()});
    } else {
      Ids p({1, prefix.size()});
      std::copy(prefix.begin(), prefix.end(), p.begin());
      log_probs = decode_last(model, out.memory, nullptr, p);
    }
    DecodeStep step;
    step.log_probs.assign(log_probs.begin(), log_probs.end());
    const DecodeCost cost = decode_cost(c, source.size(), prefix.size() - 1);
    step.multiply_adds = o.cache ? cost.cached : cost.recomputed;
    DecodeOptions shown = o;
    if (!o.sample) shown = DecodeOptions{};  // greedy: show the plain softmax
    step.probabilities = sampling_distribution(step.log_probs, shown);
    if (o.sample) {
      double u = rng.uniform(), cumulative = 0.0;
      step.pick = static_cast<std::int64_t>(step.probabilities.size()) - 1;
      for (std::size_t i = 0; i < step.probabilities.size(); ++i) {
        cumulative += step.probabilities[i];
        if (step.probabilities[i] > 0.0f && u < cumulative) {
          step.pick = static_cast<std::int64_t>(i);
          break;
        }
      }
      while (step.probabilities[static_cast<std::size_t>(step.pick)] == 0.0f)
        --step.pick;
    } else {
      step.pick =
          std::max_element(step.log_probs.begin(), step.log_probs.end()) - step.log_probs.begin();
    }
    out.steps.push_back(step);
    out.tokens.push_back(step.pick);
    prefix.push_back(step.pick);
    if (step.pick == kEndId) break;
  }
  return out;
}

Seq2SeqEvaluation evaluate(const Transformer& model, Seq2SeqTask task,
                           const std::vector<Seq2SeqExample>& examples) {
  Seq2SeqEvaluation e;
  e.examples = examples.size();
  if (examples.empty()) return e;
  std::size_t exact = 0;
  for (const Seq2SeqExample& x : examples) {
    std::vector<std::int64_t> expected = x.target;
    expected.push_back(kEndId);
    if (decode(model, x.source, DecodeOptions{}).tokens == expected) ++exact;
  }
  e.exact_match = static_cast<double>(exact) / static_cast<double>(examples.size());
  const Seq2SeqBatch b = make_batch(examples);
  const TransformerTape tape =
      forward(model, b.source, b.target_input, &b.source_mask, &b.target_mask);
  const CrossEntropySteps loss = cross_entropy(tape.logits, b.labels);
  e.token_accuracy = static_cast<double>(loss.correct) /
                     static_cast<double>(std::max<std::size_t>(1, loss.scored));
  (void)task;
  return e;
}

Metadata seq2seq_metadata(const Seq2SeqTrainConfig& c, const Seq2SeqEvaluation& e) {
  const TransformerConfig m = model_config(c);
  nlohmann::ordered_json model = {{"kind", "transformer"},
                                  {"task", std::string(seq2seq_task_info(c.task).name)},
                                  {"source_vocab", m.source_vocab},
                                  {"target_vocab", m.target_vocab},
                                  {"source_positions", m.source_positions},
                                  {"target_positions", m.target_positions},
                                  {"layers", c.layers},
                                  {"d_model", c.d_model},
                                  {"heads", c.heads},
                                  {"d_ff", c.d_ff},
                                  {"norm", c.norm == NormPlacement::pre ? "pre" : "post"}};
  const TrainingRecord record{
      c.steps,    c.batch,
      c.lr,       c.weight_decay,
      0.0f,       c.seed,
      c.held_out, {{"exact_match", e.exact_match}, {"token_accuracy", e.token_accuracy}}};
  return {{"attn_model", model.dump()}, {"attn_training", training_record_json(record)}};
}

bool is_seq2seq_checkpoint(const Metadata& metadata) {
  const auto it = metadata.find("attn_model");
  if (it == metadata.end()) return false;
  const nlohmann::json m = nlohmann::json::parse(it->second, nullptr, false);
  return m.is_object() && m.value("kind", std::string()) == "transformer";
}

Seq2SeqTrainConfig seq2seq_config_from_metadata(const Metadata& metadata, std::string_view name) {
  const auto damaged = [&](const std::string& why) {
    return Error(ErrorKind::bad_file, "checkpoint",
                 fmt::format("'{}' is not an encoder-decoder checkpoint of attn train: {}; make "
                             "one with `attn train --model transformer --save-checkpoint "
                             "FILE.safetensors`",
                             name, why))
        .about("checkpoint");
  };
  const auto it = metadata.find("attn_model");
  if (it == metadata.end()) throw damaged("its metadata has no attn_model");
  const nlohmann::json m = nlohmann::json::parse(it->second, nullptr, false);
  if (!m.is_object() || m.value("kind", std::string()) != "transformer")
    throw damaged("it holds an encoder, not an encoder-decoder");
  const auto size = [&](const char* key) -> std::size_t {
    if (!m.contains(key) || !m[key].is_number_unsigned())
      throw damaged(fmt::format("attn_model has no whole number \"{}\"", key));
    return m[key].get<std::size_t>();
  };
  Seq2SeqTrainConfig c;
  const auto task = seq2seq_task_named(m.value("task", std::string()));
  if (!task) throw damaged("its task is not one attn knows");
  c.task = *task;
  c.layers = size("layers");
  c.d_model = size("d_model");
  c.heads = size("heads");
  c.d_ff = size("d_ff");
  c.norm = m.value("norm", std::string("pre")) == "post" ? NormPlacement::post : NormPlacement::pre;
  try {
    check_seq2seq_config(c);
  } catch (const Error& e) {
    throw damaged(e.detail());
  }
  const TransformerConfig expected = model_config(c);
  if (size("source_vocab") != expected.source_vocab ||
      size("target_vocab") != expected.target_vocab ||
      size("source_positions") != expected.source_positions ||
      size("target_positions") != expected.target_positions)
    throw damaged("its vocabularies or positions do not fit its task");
  return c;
}

StateDict transformer_state_dict(Transformer& model) {
  StateDict out = collect_state_dict(model);
  const auto pe = [](const Tensor2& table) {
    return make_float32({1, table.shape(0), table.shape(1)},
                        std::vector<float>(table.begin(), table.end()));
  };
  out["source_positional_encoding.pe"] = pe(model.source_pe);
  out["target_positional_encoding.pe"] = pe(model.target_pe);
  return out;
}

Transformer transformer_from_checkpoint(const Metadata& metadata, const StateDict& weights,
                                        std::string_view name) {
  const Seq2SeqTrainConfig c = seq2seq_config_from_metadata(metadata, name);
  Rng rng(0);
  Transformer model = init_transformer(rng, model_config(c));
  StateDict parameters = weights;
  for (const char* key : {"source_positional_encoding.pe", "target_positional_encoding.pe"}) {
    const Tensor2& table =
        std::string_view(key).starts_with("source") ? model.source_pe : model.target_pe;
    const auto it = parameters.find(key);
    if (it == parameters.end() || it->second.shape != Shape{1, table.shape(0), table.shape(1)})
      throw Error(ErrorKind::bad_file, "checkpoint",
                  fmt::format("'{}' has no {} of shape (1, {}, {}): save it again with attn train",
                              name, key, table.shape(0), table.shape(1)))
          .about("checkpoint");
    parameters.erase(it);
  }
  load_state_dict(model, describe_transformer(model.config), parameters, name);
  return model;
}

}  // namespace attn
