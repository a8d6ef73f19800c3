#include "train/gpt_run.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/utf8.hpp"
#include "fast/gpt2_fast.hpp"
#include "train/seq2seq.hpp"
#include "train/trainer.hpp"

namespace attn {

namespace {

using ordered_json = nlohmann::ordered_json;

std::string byte_mapped(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes)
    out += byte_symbols()[b];
  return out;
}

// vocab.json's and merges.txt's texts for tokens in id order and merges in rank order.
void write_files(TextTokenizer& t) {
  ordered_json vocab = ordered_json::object();
  for (std::size_t i = 0; i < t.bpe.tokens.size(); ++i)
    vocab[t.bpe.tokens[i]] = static_cast<std::int64_t>(i);
  t.vocab_json = vocab.dump(2, ' ', false) + "\n";
  t.merges_txt = "#version: 0.2\n";
  for (const auto& [left, right] : t.bpe.merges)
    t.merges_txt += left + " " + right + "\n";
}

std::uint64_t batch_seed(std::uint64_t seed, std::size_t step) {
  return seed + 0x9E3779B97F4A7C15ULL * (static_cast<std::uint64_t>(step) + 1);
}

}  // namespace

TextTokenizer character_tokenizer(std::string_view text, std::string_view source) {
  if (text.empty())
    throw Error(ErrorKind::bad_value, "character_tokenizer",
                fmt::format("{} is empty: give a text to train on", source));
  if (const std::size_t bad = utf8_error(text); bad != std::string_view::npos)
    throw Error(
        ErrorKind::bad_value, "character_tokenizer",
        fmt::format("{} is not UTF-8 text (byte {} at offset {}): give a text file, or a "
                    "BPE with --tokenizer DIR, which reads any bytes",
                    source, fmt::format("0x{:02x}", static_cast<unsigned char>(text[bad])), bad));
  std::set<char32_t> chars;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = utf8_sequence_length(text, at);
    chars.insert(utf8_code_point(text, at, n));
    at += n;
  }
  TextTokenizer t;
  t.characters = true;
  t.characters_count = chars.size();
  for (char32_t c : chars) {
    std::string bytes;
    append_utf8(bytes, c);
    t.bpe.tokens.push_back(byte_mapped(bytes));
  }
  // A character of several bytes: its prefixes, each one byte longer, merged in order.
  std::set<std::string> prefixes;
  for (char32_t c : chars) {
    std::string bytes;
    append_utf8(bytes, c);
    for (std::size_t n = 2; n <= bytes.size(); ++n) {
      const std::string left = byte_mapped(bytes.substr(0, n - 1));
      const std::string right = byte_symbols()[static_cast<unsigned char>(bytes[n - 1])];
      const std::string result = byte_mapped(bytes.substr(0, n));
      if (!prefixes.insert(result).second) continue;
      t.bpe.merges.emplace_back(left, right);
      if (n < bytes.size()) t.bpe.tokens.push_back(result);
    }
  }
  write_files(t);
  t.bpe = parse_bpe(t.vocab_json, t.merges_txt, source);
  t.characters = true;
  t.characters_count = chars.size();
  return t;
}

TextTokenizer folder_tokenizer(const std::string& folder) {
  TextTokenizer t;
  t.bpe = read_bpe(folder);
  write_files(t);
  return t;
}

TextTokenizer saved_tokenizer(const std::string& folder, bool characters) {
  TextTokenizer t = folder_tokenizer(folder);
  if (!characters) return t;
  t.characters = true;
  for (std::size_t i = 0; i < t.bpe.size(); ++i) {
    const std::string bytes = decode(t.bpe, {static_cast<std::int64_t>(i)});
    if (bytes.empty() || utf8_error(bytes) != std::string_view::npos ||
        utf8_sequence_length(bytes, 0) != bytes.size())
      break;
    t.characters_count = i + 1;
  }
  return t;
}

std::vector<std::int32_t> encode_text(const TextTokenizer& tokenizer, std::string_view text) {
  std::vector<std::int32_t> ids;
  if (!tokenizer.characters) {
    for (std::int64_t id : encode(tokenizer.bpe, text))
      ids.push_back(static_cast<std::int32_t>(id));
    return ids;
  }
  std::unordered_map<char32_t, std::int32_t> id_of;
  for (std::size_t i = 0; i < tokenizer.characters_count; ++i) {
    const std::string& token = tokenizer.bpe.tokens[i];
    // The token's bytes back from GPT-2's byte map, then its one character.
    const std::string bytes = decode(tokenizer.bpe, {static_cast<std::int64_t>(i)});
    id_of[utf8_code_point(bytes, 0, bytes.size())] = static_cast<std::int32_t>(i);
    (void)token;
  }
  ids.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = utf8_sequence_length(text, at);
    const char32_t c = utf8_code_point(text, at, n);
    const auto found = id_of.find(c);
    if (found == id_of.end())
      throw Error(ErrorKind::bad_value, "encode_text",
                  fmt::format("the character '{}' at byte {} is not in the model's vocabulary of "
                              "{} characters: use characters the model was trained on",
                              printable(text.substr(at, n)), at, tokenizer.characters_count));
    ids.push_back(found->second);
    at += n;
  }
  return ids;
}

Corpus split_corpus(std::vector<std::int32_t> ids, std::size_t block, double train_fraction) {
  Corpus c;
  const std::size_t n = ids.size();
  c.train_tokens = static_cast<std::size_t>(static_cast<double>(n) * train_fraction);
  const std::size_t need = block + 1;
  if (c.train_tokens < need || n - c.train_tokens < need)
    throw Error(ErrorKind::bad_size, "split_corpus",
                fmt::format("the text has {} tokens: its training part ({}) and validation part "
                            "({}) each need a window of block + 1 = {} tokens; give a longer text "
                            "or a smaller --block",
                            n, c.train_tokens, n - c.train_tokens, need));
  c.ids = std::move(ids);
  return c;
}

std::size_t draw_window(const Corpus& corpus, CorpusPart part, std::size_t block, Rng& rng) {
  const std::size_t from = part == CorpusPart::train ? 0 : corpus.train_tokens;
  const std::size_t to = part == CorpusPart::train ? corpus.train_tokens : corpus.ids.size();
  const std::size_t starts = to - from - block;  // windows of block + 1 inside [from, to)
  return from + static_cast<std::size_t>(rng.next_u64() % starts);
}

GptWindowCheck training_windows(const GptTrainConfig& config, const Corpus& corpus) {
  GptWindowCheck check;
  for (std::size_t step = 0; step < config.steps; ++step) {
    Rng rng(batch_seed(config.seed, step));
    for (std::size_t b = 0; b < config.batch; ++b) {
      const std::size_t start = draw_window(corpus, CorpusPart::train, config.block, rng);
      check.reach = std::max(check.reach, start + config.block + 1);
      ++check.drawn;
    }
  }
  return check;
}

void check_gpt_train_config(const GptTrainConfig& c) {
  for (const auto& [name, value] : {std::pair{"layers", c.layers},
                                    {"heads", c.heads},
                                    {"d_model", c.d_model},
                                    {"d_ff", c.d_ff},
                                    {"block", c.block},
                                    {"batch", c.batch},
                                    {"steps", c.steps},
                                    {"eval_interval", c.eval_interval},
                                    {"eval_batches", c.eval_batches}})
    if (value == 0)
      throw Error(ErrorKind::bad_value, "check_gpt_train_config",
                  fmt::format("{} is 0: it must be at least 1", name));
  if (c.d_model % c.heads != 0)
    throw Error(ErrorKind::bad_value, "check_gpt_train_config",
                fmt::format("{} heads do not divide the width {}: each head has D / H numbers; "
                            "choose H dividing D",
                            c.heads, c.d_model));
  if (!(c.lr > 0.0f) || !std::isfinite(c.lr))
    throw Error(ErrorKind::bad_value, "check_gpt_train_config",
                "the learning rate must be a positive number");
}

Gpt2Config gpt_model_config(const GptTrainConfig& c, std::size_t vocab) {
  Gpt2Config config = default_gpt2_config();
  EncoderConfig& s = config.sizes;
  s.hidden_size = c.d_model;
  s.num_attention_heads = c.heads;
  s.intermediate_size = c.d_ff;
  s.num_hidden_layers = c.layers;
  s.vocab_size = vocab;
  s.max_position_embeddings = c.block;
  s.hidden_dropout_prob = s.attention_probs_dropout_prob = 0.0;
  config.bos_token_id = config.eos_token_id = static_cast<std::int64_t>(vocab) - 1;
  return config;
}

MemoryPlan plan_gpt_run(const GptTrainConfig& c, std::size_t vocab) {
  const Gpt2Config config = gpt_model_config(c, vocab);
  MemoryPlan plan = plan_gpt_training(config, c.batch, c.block);
  const std::size_t params = gpt_layout(config).params.size();
  plan.push_back({"the model saved and sampled from: its tensors and a packed copy",
                  {3, params},
                  "",
                  4,
                  Held::computing,
                  40});
  return plan;
}

GptTraining::GptTraining(const GptTrainConfig& config, Corpus corpus, std::size_t vocab)
    : GptTraining(config, std::move(corpus),
                  init_gpt(gpt_model_config(config, vocab), config.seed, config.attention_only),
                  GptOptimizer{}, 0, {}) {}

GptTraining::GptTraining(const GptTrainConfig& config, Corpus corpus, GptModel model,
                         GptOptimizer optimizer, std::size_t steps_done,
                         std::vector<GptEvaluation> history)
    : config_(config),
      corpus_(std::move(corpus)),
      model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      engine_(model_, config.batch, config.block),
      done_(steps_done),
      history_(std::move(history)) {
  check_gpt_train_config(config_);
  optimizer_.beta2 = config_.beta2;
  optimizer_.weight_decay = config_.weight_decay;
  optimizer_.clip = config_.clip;
  const std::size_t vocab = model_.config.sizes.vocab_size;
  for (std::int32_t id : corpus_.ids)
    if (id < 0 || static_cast<std::size_t>(id) >= vocab)
      throw Error(
          ErrorKind::bad_value, "GptTraining",
          fmt::format("the text has token {}, outside the model's vocabulary of {}", id, vocab));
  Rng train_rng(config_.seed ^ 0x7472616E5F65ULL), validation_rng(config_.seed ^ 0x76616C5F65ULL);
  for (std::size_t i = 0; i < config_.eval_batches * config_.batch; ++i) {
    train_windows_.push_back(draw_window(corpus_, CorpusPart::train, config_.block, train_rng));
    validation_windows_.push_back(
        draw_window(corpus_, CorpusPart::validation, config_.block, validation_rng));
  }
  x_.resize(config_.batch * config_.block);
  y_.resize(config_.batch * config_.block);
}

float GptTraining::step() {
  const std::size_t B = config_.batch, T = config_.block;
  Rng rng(batch_seed(config_.seed, done_));
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t start = draw_window(corpus_, CorpusPart::train, T, rng);
    std::copy_n(corpus_.ids.begin() + static_cast<std::ptrdiff_t>(start), T, x_.begin() + b * T);
    std::copy_n(corpus_.ids.begin() + static_cast<std::ptrdiff_t>(start + 1), T,
                y_.begin() + b * T);
  }
  const float loss = engine_.forward(model_, x_.data(), y_.data(), B, T);
  engine_.backward(model_, x_.data(), y_.data());
  ++done_;
  engine_.update(model_, optimizer_, warmup_cosine(config_.lr, config_.steps, done_));
  return loss;
}

double GptTraining::mean_loss(const std::vector<std::size_t>& starts) {
  const std::size_t B = config_.batch, T = config_.block;
  double total = 0.0;
  for (std::size_t from = 0; from < starts.size(); from += B) {
    const std::size_t n = std::min(B, starts.size() - from);
    for (std::size_t b = 0; b < n; ++b) {
      const std::size_t start = starts[from + b];
      std::copy_n(corpus_.ids.begin() + static_cast<std::ptrdiff_t>(start), T, x_.begin() + b * T);
      std::copy_n(corpus_.ids.begin() + static_cast<std::ptrdiff_t>(start + 1), T,
                  y_.begin() + b * T);
    }
    total += static_cast<double>(engine_.forward(model_, x_.data(), y_.data(), n, T)) *
             static_cast<double>(n);
  }
  return total / static_cast<double>(starts.size());
}

GptEvaluation GptTraining::evaluate() {
  GptEvaluation e;
  e.step = done_;
  e.train_loss = mean_loss(train_windows_);
  e.validation_loss = mean_loss(validation_windows_);
  return e;
}

std::vector<std::int64_t> sample_gpt(const GptModel& model, const std::vector<std::int64_t>& prompt,
                                     std::size_t tokens, float temperature, std::size_t top_k,
                                     std::uint64_t seed) {
  const std::size_t positions = model.config.sizes.max_position_embeddings;
  if (prompt.empty())
    throw Error(ErrorKind::bad_value, "sample_gpt", "sampling needs a prompt of a token at least");
  const PackedGpt2 packed =
      pack(model.config, check_gpt2_weights(model.config, gpt_state_dict(model), "the model"));
  DecodeOptions options;
  options.sample = true;
  options.temperature = temperature;
  options.top_k = top_k;
  Rng rng(seed);
  std::vector<std::int64_t> all = prompt;
  std::vector<std::int64_t> out;
  // The context slides past the model's positions: the cache restarts from the last half.
  auto context = [&] {
    const std::size_t keep = all.size() < positions ? all.size() : positions / 2 + 1;
    return std::vector<std::int64_t>(all.end() - static_cast<std::ptrdiff_t>(keep), all.end());
  };
  auto generator = std::make_unique<Gpt2Generator>(packed, positions);
  std::vector<float> logits = generator->prefill(context());
  while (out.size() < tokens) {
    const std::int64_t next = draw_token(sampling_distribution(logits, options), rng);
    out.push_back(next);
    all.push_back(next);
    if (out.size() == tokens) break;
    if (generator->cache().length < positions) {
      logits = generator->step(next);
    } else {
      generator = std::make_unique<Gpt2Generator>(packed, positions);
      logits = generator->prefill(context());
    }
  }
  return out;
}

const std::vector<std::string>& gpt_checkpoint_names() {
  static const std::vector<std::string> names = {
      "config.json", "model.safetensors",     "vocab.json",
      "merges.txt",  "tokenizer_config.json", "training_state.safetensors"};
  return names;
}

namespace {

std::vector<unsigned char> bytes_of(const std::string& text) {
  return std::vector<unsigned char>(text.begin(), text.end());
}

std::string config_json(const Gpt2Config& config, const TextTokenizer& tokenizer) {
  const EncoderConfig& s = config.sizes;
  ordered_json j;
  j["activation_function"] = "gelu_new";
  j["architectures"] = {"GPT2LMHeadModel"};
  j["attn_pdrop"] = 0.0;
  if (const auto eot = tokenizer.bpe.find(tokenizer.bpe.end_of_text)) {
    j["bos_token_id"] = *eot;
    j["eos_token_id"] = *eot;
  }
  j["embd_pdrop"] = 0.0;
  j["initializer_range"] = 0.02;
  j["layer_norm_epsilon"] = s.layer_norm_eps;
  j["model_type"] = "gpt2";
  j["n_embd"] = s.hidden_size;
  j["n_head"] = s.num_attention_heads;
  j["n_inner"] = s.intermediate_size;
  j["n_layer"] = s.num_hidden_layers;
  j["n_positions"] = s.max_position_embeddings;
  j["reorder_and_upcast_attn"] = false;
  j["resid_pdrop"] = 0.0;
  j["scale_attn_by_inverse_layer_idx"] = false;
  j["scale_attn_weights"] = true;
  j["tie_word_embeddings"] = true;
  j["torch_dtype"] = "float32";
  j["use_cache"] = true;
  j["vocab_size"] = s.vocab_size;
  return j.dump(2) + "\n";
}

ordered_json run_json(const GptTraining& run, const TextTokenizer& tokenizer) {
  const GptTrainConfig& c = run.config();
  ordered_json j;
  j["tokens"] = tokenizer.characters ? "characters" : "bpe";
  j["layers"] = c.layers;
  j["heads"] = c.heads;
  j["d_model"] = c.d_model;
  j["d_ff"] = c.d_ff;
  j["block"] = c.block;
  j["batch"] = c.batch;
  j["steps"] = c.steps;
  j["lr"] = c.lr;
  j["weight_decay"] = c.weight_decay;
  j["beta2"] = c.beta2;
  j["clip"] = c.clip;
  j["eval_interval"] = c.eval_interval;
  j["eval_batches"] = c.eval_batches;
  j["seed"] = c.seed;
  if (c.attention_only) j["attention_only"] = true;
  j["steps_done"] = run.steps_done();
  j["adamw_steps"] = run.optimizer().steps;
  j["corpus_tokens"] = run.corpus().ids.size();
  j["train_tokens"] = run.corpus().train_tokens;
  ordered_json history = ordered_json::array();
  for (const GptEvaluation& e : run.history())
    history.push_back(
        {{"step", e.step}, {"train_loss", e.train_loss}, {"validation_loss", e.validation_loss}});
  j["evaluations"] = history;
  return j;
}

}  // namespace

std::vector<NamedFile> gpt_folder_files(const GptModel& model, const TextTokenizer& tokenizer,
                                        const Metadata& metadata) {
  std::vector<NamedFile> files;
  Metadata marked = metadata;
  marked["written_by"] = "attn";
  files.push_back({"config.json", bytes_of(config_json(model.config, tokenizer))});
  files.push_back({"model.safetensors", serialize_safetensors(gpt_state_dict(model), marked)});
  files.push_back({"vocab.json", bytes_of(tokenizer.vocab_json)});
  files.push_back({"merges.txt", bytes_of(tokenizer.merges_txt)});
  ordered_json tokenizer_config;
  tokenizer_config["tokenizer_class"] = "GPT2Tokenizer";
  tokenizer_config["model_max_length"] = model.config.sizes.max_position_embeddings;
  tokenizer_config["add_prefix_space"] = false;
  if (tokenizer.bpe.find(tokenizer.bpe.end_of_text)) {
    for (const char* key : {"bos_token", "eos_token", "unk_token"})
      tokenizer_config[key] = tokenizer.bpe.end_of_text;
  }
  files.push_back({"tokenizer_config.json", bytes_of(tokenizer_config.dump(2) + "\n")});
  return files;
}

std::vector<NamedFile> gpt_checkpoint_files(const GptTraining& run,
                                            const TextTokenizer& tokenizer) {
  const GptModel& model = run.model();
  std::vector<NamedFile> files = gpt_folder_files(model, tokenizer);
  const GptOptimizer& o = run.optimizer();
  StateDict state;
  const std::size_t n = model.params.size();
  state["adamw.m"] = make_float32({n}, o.m.empty() ? std::vector<float>(n, 0.0f) : o.m);
  state["adamw.v"] = make_float32({n}, o.v.empty() ? std::vector<float>(n, 0.0f) : o.v);
  files.push_back(
      {"training_state.safetensors",
       serialize_safetensors(state, {{"written_by", "attn"},
                                     {"attn_gpt_training", run_json(run, tokenizer).dump()}})});
  return files;
}

GptResumed read_gpt_training_state(const Gpt2Config& config, Gpt2Weights&& weights,
                                   const StateDict& state, const Metadata& metadata,
                                   std::string_view source) {
  const auto refuse = [&](const std::string& what) {
    return Error(ErrorKind::bad_file, "read_gpt_training_state",
                 fmt::format("{}/training_state.safetensors {}: resume from a folder attn train "
                             "--model gpt --save-checkpoint wrote",
                             source, what));
  };
  const auto found = metadata.find("attn_gpt_training");
  if (found == metadata.end()) throw refuse("has no attn_gpt_training metadata");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(found->second);
  } catch (const std::exception&) {
    throw refuse("has attn_gpt_training metadata that is not JSON");
  }
  GptResumed r;
  try {
    GptTrainConfig& c = r.config;
    c.layers = j.at("layers").get<std::size_t>();
    c.heads = j.at("heads").get<std::size_t>();
    c.d_model = j.at("d_model").get<std::size_t>();
    c.d_ff = j.at("d_ff").get<std::size_t>();
    c.block = j.at("block").get<std::size_t>();
    c.batch = j.at("batch").get<std::size_t>();
    c.steps = j.at("steps").get<std::size_t>();
    c.lr = j.at("lr").get<float>();
    c.weight_decay = j.at("weight_decay").get<float>();
    c.beta2 = j.at("beta2").get<float>();
    c.clip = j.at("clip").get<float>();
    c.eval_interval = j.at("eval_interval").get<std::size_t>();
    c.eval_batches = j.at("eval_batches").get<std::size_t>();
    c.seed = j.at("seed").get<std::uint64_t>();
    c.attention_only = j.value("attention_only", false);
    r.steps_done = j.at("steps_done").get<std::size_t>();
    r.optimizer.steps = j.at("adamw_steps").get<std::int64_t>();
    r.characters = j.at("tokens").get<std::string>() == "characters";
    for (const auto& e : j.at("evaluations"))
      r.history.push_back({e.at("step").get<std::size_t>(), e.at("train_loss").get<double>(),
                           e.at("validation_loss").get<double>(), 0.0});
  } catch (const std::exception&) {
    throw refuse("has attn_gpt_training metadata without the fields attn writes");
  }
  const EncoderConfig& s = config.sizes;
  if (s.hidden_size != r.config.d_model || s.num_attention_heads != r.config.heads ||
      s.num_hidden_layers != r.config.layers || s.intermediate_size != r.config.d_ff ||
      s.max_position_embeddings != r.config.block)
    throw refuse("describes another model than config.json");
  r.model = gpt_from_weights(config, std::move(weights), source);
  r.model.attention_only = r.config.attention_only;
  const std::size_t n = r.model.params.size();
  for (const char* key : {"adamw.m", "adamw.v"}) {
    const auto t = state.find(key);
    if (t == state.end() || t->second.size() != n)
      throw refuse(fmt::format("has no {} of {} numbers", key, n));
    (std::string(key) == "adamw.m" ? r.optimizer.m : r.optimizer.v) = to_float_vector(t->second);
  }
  return r;
}

}  // namespace attn
