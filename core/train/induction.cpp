#include "train/induction.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "train/tasks.hpp"
#include "train/trainer.hpp"

namespace attn {

namespace {

constexpr std::uint64_t kBatchStream = 0x696E6475637469ULL, kHeldOutStream = 0x68656C645F6F7574ULL,
                        kRuleStream = 0x72756C65ULL;

std::uint64_t batch_seed(std::uint64_t seed, std::size_t step) {
  return (seed ^ kBatchStream) + 0x9E3779B97F4A7C15ULL * (static_cast<std::uint64_t>(step) + 1);
}

}  // namespace

char token_letter(std::size_t id) {
  return id < 26 ? static_cast<char>('a' + id) : static_cast<char>('A' + (id - 26));
}

namespace {

std::vector<std::int64_t> wide(const std::vector<std::int32_t>& ids) {
  return std::vector<std::int64_t>(ids.begin(), ids.end());
}

// A (D, D) matrix, row-major.
using Square = std::vector<double>;

Square multiply(const Square& a, const Square& b, std::size_t d) {
  Square out(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t k = 0; k < d; ++k)
      for (std::size_t j = 0; j < d; ++j)
        out[i * d + j] += a[i * d + k] * b[k * d + j];
  return out;
}

Square transposed(const Square& a, std::size_t d) {
  Square out(d * d);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j)
      out[j * d + i] = a[i * d + j];
  return out;
}

double frobenius(const Square& a) {
  double sum = 0.0;
  for (double x : a)
    sum += x * x;
  return std::sqrt(sum);
}

// One head's four matrices in nn.Linear's (out, in) layout: q, k, v (hs, D) and o (D, hs).
struct HeadMatrices {
  std::vector<double> q, k, v, o;
};

// W_QK = W_qᵀ W_k (query x, key y: score xᵀ W_QK y) and W_OV = W_o W_v (output W_OV y).
Square qk_of(const HeadMatrices& h, std::size_t d, std::size_t hs) {
  Square out(d * d, 0.0);
  for (std::size_t r = 0; r < hs; ++r)
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t j = 0; j < d; ++j)
        out[i * d + j] += h.q[r * d + i] * h.k[r * d + j];
  return out;
}
Square ov_of(const HeadMatrices& h, std::size_t d, std::size_t hs) {
  Square out(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t r = 0; r < hs; ++r)
      for (std::size_t j = 0; j < d; ++j)
        out[i * d + j] += h.o[i * hs + r] * h.v[r * d + j];
  return out;
}

double ratio(const Square& a, const Square& b, std::size_t d) {
  return frobenius(multiply(a, b, d)) / (frobenius(a) * frobenius(b));
}

Composition compose(const HeadMatrices& first, const HeadMatrices& second, std::size_t d,
                    std::size_t hs) {
  const Square qk = qk_of(second, d, hs), ov1 = ov_of(first, d, hs), ov2 = ov_of(second, d, hs);
  return {ratio(transposed(ov1, d), qk, d), ratio(qk, ov1, d), ratio(ov2, ov1, d)};
}

HeadMatrices head_matrices(const GptModel& model, std::size_t layer, std::size_t head) {
  const std::size_t D = model.config.sizes.hidden_size, H = model.config.sizes.num_attention_heads;
  const std::size_t hs = D / H;
  // Block tensors: ln_1.weight, ln_1.bias, c_attn.weight (3D, D), c_attn.bias, c_proj.weight (D, D)
  const std::size_t first = 2 + layer * 12;
  const float* qkv = model.at(first + 2);
  const float* proj = model.at(first + 4);
  HeadMatrices m{std::vector<double>(hs * D), std::vector<double>(hs * D),
                 std::vector<double>(hs * D), std::vector<double>(D * hs)};
  for (std::size_t r = 0; r < hs; ++r)
    for (std::size_t j = 0; j < D; ++j) {
      m.q[r * D + j] = qkv[(head * hs + r) * D + j];
      m.k[r * D + j] = qkv[(D + head * hs + r) * D + j];
      m.v[r * D + j] = qkv[(2 * D + head * hs + r) * D + j];
    }
  for (std::size_t i = 0; i < D; ++i)
    for (std::size_t r = 0; r < hs; ++r)
      m.o[i * hs + r] = proj[i * D + head * hs + r];
  return m;
}

void check_head(const GptModel& model, std::size_t layer, std::size_t head,
                std::string_view function) {
  const EncoderConfig& s = model.config.sizes;
  if (layer >= s.num_hidden_layers || head >= s.num_attention_heads)
    throw Error(ErrorKind::bad_value, function,
                fmt::format("head {}.{} of a model of {} layers of {} heads", layer, head,
                            s.num_hidden_layers, s.num_attention_heads));
}

}  // namespace

void check_induction_config(const InductionConfig& c) {
  for (const auto& [name, value] : {std::pair{"vocab", c.vocab},
                                    {"tokens", c.tokens},
                                    {"layers", c.layers},
                                    {"heads", c.heads},
                                    {"d_model", c.d_model},
                                    {"batch", c.batch},
                                    {"steps", c.steps},
                                    {"eval_interval", c.eval_interval},
                                    {"eval_sequences", c.eval_sequences}})
    if (value == 0)
      throw Error(ErrorKind::bad_value, "check_induction_config",
                  fmt::format("{} is 0: it must be at least 1", name));
  if (c.vocab > 52)
    throw Error(ErrorKind::bad_value, "check_induction_config",
                fmt::format("a vocabulary of {} tokens: the tokens are the letters a to z and A "
                            "to Z, give 2 to 52",
                            c.vocab));
  if (c.vocab < 2)
    throw Error(ErrorKind::bad_value, "check_induction_config",
                fmt::format("a vocabulary of {} token repeats itself: give at least 2", c.vocab));
  if (c.min_period < 2 || c.min_period > c.max_period)
    throw Error(ErrorKind::bad_value, "check_induction_config",
                fmt::format("segments of {} to {} tokens: the shortest must be 2 to {}",
                            c.min_period, c.max_period, c.max_period));
  if (2 * c.max_period > c.tokens)
    throw Error(ErrorKind::bad_value, "check_induction_config",
                fmt::format("a segment of {} tokens and its copy do not fit in {} tokens: give at "
                            "least {} tokens",
                            c.max_period, c.tokens, 2 * c.max_period));
  if (!(c.rule >= 0.0f && c.rule <= 1.0f))
    throw Error(ErrorKind::bad_value, "check_induction_config",
                "the rule's probability must be from 0 to 1");
  if (c.d_model % c.heads != 0)
    throw Error(ErrorKind::bad_value, "check_induction_config",
                fmt::format("{} heads do not divide the width {}: choose H dividing D", c.heads,
                            c.d_model));
  if (!(c.lr > 0.0f) || !std::isfinite(c.lr))
    throw Error(ErrorKind::bad_value, "check_induction_config",
                "the learning rate must be a positive number");
}

Gpt2Config induction_model_config(const InductionConfig& c) {
  Gpt2Config config = default_gpt2_config();
  EncoderConfig& s = config.sizes;
  s.hidden_size = c.d_model;
  s.num_attention_heads = c.heads;
  s.intermediate_size = 4 * c.d_model;
  s.num_hidden_layers = c.layers;
  s.vocab_size = c.vocab + 1;
  s.max_position_embeddings = c.tokens;
  s.hidden_dropout_prob = s.attention_probs_dropout_prob = 0.0;
  config.bos_token_id = config.eos_token_id = static_cast<std::int64_t>(c.vocab);
  return config;
}

std::vector<std::int32_t> induction_rule(std::size_t vocab) {
  std::vector<std::int32_t> rule(vocab);
  for (std::size_t i = 0; i < vocab; ++i)
    rule[i] = static_cast<std::int32_t>(i);
  Rng rng(kRuleStream);
  for (std::size_t i = vocab; i > 1; --i)  // Fisher-Yates
    std::swap(rule[i - 1], rule[rng.next_u64() % i]);
  return rule;
}

double rule_probability(const InductionConfig& c, std::size_t step) {
  const double floor = c.rule_floor, start = c.rule;
  if (step >= c.rule_steps) return floor;
  const double done = static_cast<double>(step) / static_cast<double>(c.rule_steps);
  return std::max(floor, start + (floor - start) * done);
}

InductionSequence draw_induction_sequence(const InductionConfig& c, Rng& rng, double rule,
                                          bool held_out) {
  const std::vector<std::int32_t> next = induction_rule(c.vocab);
  InductionSequence s;
  s.ids.resize(c.tokens + 1);
  do {
    const std::size_t m =
        c.min_period + static_cast<std::size_t>(rng.next_u64() % (c.max_period - c.min_period + 1));
    s.period = m;
    s.start = 1 + static_cast<std::size_t>(rng.next_u64() % (c.tokens + 1 - 2 * m));
    s.ids[0] = static_cast<std::int32_t>(c.vocab);  // BOS
    for (std::size_t t = 1; t <= c.tokens; ++t) {
      if (t >= s.start + m && t < s.start + 2 * m) {
        s.ids[t] = s.ids[t - m];
        continue;
      }
      s.ids[t] = static_cast<std::int32_t>(rng.next_u64() % c.vocab);
      const bool outside = t < s.start || t >= s.start + 2 * m;
      if (rule > 0.0 && outside && t >= 3 && rng.uniform() < rule)
        s.ids[t] = next[static_cast<std::size_t>(s.ids[t - 2])];
    }
  } while (held_out_tokens(wide(s.ids)) != held_out);
  return s;
}

std::vector<InductionSequence> held_out_sequences(const InductionConfig& c) {
  Rng rng(c.seed ^ kHeldOutStream);
  std::vector<InductionSequence> out;
  for (std::size_t i = 0; i < c.eval_sequences; ++i)
    out.push_back(draw_induction_sequence(c, rng, 0.0, true));
  return out;
}

bool predicts_repeat(const InductionSequence& sequence, std::size_t position) {
  return position >= sequence.start + sequence.period &&
         position + 1 < sequence.start + 2 * sequence.period;
}

InductionReplay replay_induction_training(const InductionConfig& c) {
  std::set<std::vector<std::int32_t>> held;
  for (const InductionSequence& s : held_out_sequences(c))
    held.insert(s.ids);
  InductionReplay r;
  for (std::size_t step = 0; step < c.steps; ++step) {
    Rng rng(batch_seed(c.seed, step));
    const double rule = rule_probability(c, step);
    for (std::size_t b = 0; b < c.batch; ++b) {
      const InductionSequence s = draw_induction_sequence(c, rng, rule);
      ++r.drawn;
      r.on_held_out_side += held_out_tokens(wide(s.ids)) ? 1 : 0;
      r.equal_to_held_out += held.count(s.ids);
    }
  }
  return r;
}

InductionMeasure measure_induction(const GptModel& model,
                                   const std::vector<InductionSequence>& sequences) {
  const EncoderConfig& z = model.config.sizes;
  if (sequences.empty())
    throw Error(ErrorKind::bad_value, "measure_induction", "no sequences to measure on");
  const std::size_t T = sequences.front().ids.size() - 1, H = z.num_attention_heads,
                    L = z.num_hidden_layers, V = z.vocab_size;
  const std::size_t B = std::min<std::size_t>(64, sequences.size());
  GptEngine engine(model, B, T);
  std::vector<PatternScores> induction(L, PatternScores(H)), previous(L, PatternScores(H));
  double first = 0.0, repeat = 0.0;
  std::size_t firsts = 0, repeats = 0;
  std::vector<std::int32_t> x(B * T);
  for (std::size_t from = 0; from < sequences.size(); from += B) {
    const std::size_t n = std::min(B, sequences.size() - from);
    for (std::size_t b = 0; b < n; ++b)
      std::copy_n(sequences[from + b].ids.begin(), T, x.begin() + b * T);
    engine.forward(model, x.data(), nullptr, n, T);
    for (std::size_t b = 0; b < n; ++b) {
      const InductionSequence& s = sequences[from + b];
      for (std::size_t t = 0; t < T; ++t) {
        const float* row = engine.logits(b, t);
        const float max = *std::max_element(row, row + V);
        double sum = 0.0;
        for (std::size_t j = 0; j < V; ++j)
          sum += std::exp(static_cast<double>(row[j] - max));
        const double loss = std::log(sum) + max - row[s.ids[t + 1]];
        (predicts_repeat(s, t) ? repeat : first) += loss;
        ++(predicts_repeat(s, t) ? repeats : firsts);
      }
    }
    std::vector<SequenceTargets> induction_keys, previous_keys;
    for (std::size_t b = 0; b < n; ++b) {
      const std::vector<std::int32_t>& ids = sequences[from + b].ids;
      SequenceTargets keys =
          induction_targets(std::vector<std::int64_t>(ids.begin(), ids.begin() + T), true);
      for (std::size_t t = 0; t < T; ++t)  // scored where induction helps: the copy
        if (!predicts_repeat(sequences[from + b], t)) keys[t].keys.clear();
      induction_keys.push_back(std::move(keys));
      previous_keys.push_back(previous_targets(T, true));
    }
    for (std::size_t l = 0; l < L; ++l) {
      const float* att = engine.attention(l);
      Tensor4 weights = Tensor4::from_shape({n, H, T, T});  // (B,H,T,T)
      std::copy_n(att, n * H * T * T, weights.data());
      induction[l].add(weights, induction_keys);
      previous[l].add(weights, previous_keys);
    }
  }
  InductionMeasure m;
  m.first_loss = first / static_cast<double>(std::max<std::size_t>(firsts, 1));
  m.repeat_loss = repeat / static_cast<double>(std::max<std::size_t>(repeats, 1));
  for (std::size_t l = 0; l < L; ++l) {
    m.induction.emplace_back();
    m.previous.emplace_back();
    for (std::size_t h = 0; h < H; ++h) {
      m.induction.back().push_back(induction[l].head(h));
      m.previous.back().push_back(previous[l].head(h));
    }
  }
  return m;
}

GptModel ablate_head(GptModel model, std::size_t layer, std::size_t head) {
  check_head(model, layer, head, "ablate_head");
  const std::size_t D = model.config.sizes.hidden_size, H = model.config.sizes.num_attention_heads;
  const std::size_t hs = D / H;
  float* proj = model.at(2 + layer * 12 + 4);  // attn.c_proj.weight, (out, in) here
  for (std::size_t i = 0; i < D; ++i)
    std::fill_n(proj + i * D + head * hs, hs, 0.0f);
  return model;
}

Composition composition(const GptModel& model, std::size_t first, std::size_t second) {
  check_head(model, 0, first, "composition");
  check_head(model, 1, second, "composition");
  const std::size_t D = model.config.sizes.hidden_size, H = model.config.sizes.num_attention_heads;
  return compose(head_matrices(model, 0, first), head_matrices(model, 1, second), D, D / H);
}

Composition random_composition(std::size_t d_model, std::size_t head_size, std::size_t draws,
                               std::uint64_t seed) {
  Rng rng(seed);
  const auto draw = [&](std::size_t n) {
    std::vector<double> m(n);
    for (double& x : m)
      x = rng.normal();
    return m;
  };
  const std::size_t n = d_model * head_size;
  Composition mean;
  for (std::size_t i = 0; i < draws; ++i) {
    const HeadMatrices a{draw(n), draw(n), draw(n), draw(n)}, b{draw(n), draw(n), draw(n), draw(n)};
    const Composition c = compose(a, b, d_model, head_size);
    mean.q += c.q / static_cast<double>(draws);
    mean.k += c.k / static_cast<double>(draws);
    mean.v += c.v / static_cast<double>(draws);
  }
  return mean;
}

std::string induction_record(const InductionConfig& c,
                             const std::vector<InductionEvaluation>& history) {
  nlohmann::ordered_json j;
  j["vocab"] = c.vocab;
  j["tokens"] = c.tokens;
  j["min_period"] = c.min_period;
  j["max_period"] = c.max_period;
  j["rule"] = c.rule;
  j["rule_floor"] = c.rule_floor;
  j["rule_steps"] = c.rule_steps;
  j["layers"] = c.layers;
  j["heads"] = c.heads;
  j["d_model"] = c.d_model;
  j["batch"] = c.batch;
  j["steps"] = c.steps;
  j["lr"] = c.lr;
  j["eval_interval"] = c.eval_interval;
  j["eval_sequences"] = c.eval_sequences;
  j["seed"] = c.seed;
  nlohmann::ordered_json evaluations = nlohmann::ordered_json::array();
  const auto on_target = [](const std::vector<std::vector<HeadPatternScore>>& scores) {
    std::vector<std::vector<double>> out;
    for (const auto& layer : scores) {
      out.emplace_back();
      for (const HeadPatternScore& h : layer)
        out.back().push_back(h.on_target);
    }
    return out;
  };
  for (const InductionEvaluation& e : history)
    evaluations.push_back({{"step", e.step},
                           {"first_loss", e.measure.first_loss},
                           {"repeat_loss", e.measure.repeat_loss},
                           {"induction", on_target(e.measure.induction)},
                           {"previous", on_target(e.measure.previous)}});
  j["evaluations"] = evaluations;
  return j.dump();
}

InductionRecord read_induction_record(const Metadata& metadata, std::string_view source) {
  const auto refuse = [&](std::string_view what) {
    return Error(ErrorKind::bad_file, "read_induction_record",
                 fmt::format("{}/model.safetensors {}: give a folder attn train --task induction "
                             "--save-checkpoint wrote",
                             source, what));
  };
  const auto found = metadata.find("attn_induction");
  if (found == metadata.end()) throw refuse("has no attn_induction metadata");
  InductionRecord r;
  try {
    const nlohmann::json j = nlohmann::json::parse(found->second);
    InductionConfig& c = r.config;
    c.vocab = j.at("vocab").get<std::size_t>();
    c.tokens = j.at("tokens").get<std::size_t>();
    c.min_period = j.at("min_period").get<std::size_t>();
    c.max_period = j.at("max_period").get<std::size_t>();
    c.rule = j.at("rule").get<float>();
    c.rule_floor = j.at("rule_floor").get<float>();
    c.rule_steps = j.at("rule_steps").get<std::size_t>();
    c.layers = j.at("layers").get<std::size_t>();
    c.heads = j.at("heads").get<std::size_t>();
    c.d_model = j.at("d_model").get<std::size_t>();
    c.batch = j.at("batch").get<std::size_t>();
    c.steps = j.at("steps").get<std::size_t>();
    c.lr = j.at("lr").get<float>();
    c.eval_interval = j.at("eval_interval").get<std::size_t>();
    c.eval_sequences = j.at("eval_sequences").get<std::size_t>();
    c.seed = j.at("seed").get<std::uint64_t>();
    const auto scores = [](const nlohmann::json& a) {
      std::vector<std::vector<HeadPatternScore>> out;
      for (const auto& layer : a) {
        out.emplace_back();
        for (const auto& v : layer) {
          HeadPatternScore h;
          h.on_target = v.get<double>();
          out.back().push_back(h);
        }
      }
      return out;
    };
    for (const auto& e : j.at("evaluations")) {
      InductionEvaluation ev;
      ev.step = e.at("step").get<std::size_t>();
      ev.measure.first_loss = e.at("first_loss").get<double>();
      ev.measure.repeat_loss = e.at("repeat_loss").get<double>();
      ev.measure.induction = scores(e.at("induction"));
      ev.measure.previous = scores(e.at("previous"));
      r.history.push_back(std::move(ev));
    }
  } catch (const std::exception&) {
    throw refuse("has attn_induction metadata without the fields attn writes");
  }
  try {
    check_induction_config(r.config);
  } catch (const Error& e) {
    throw refuse(fmt::format("records a run attn cannot repeat ({})", e.detail()));
  }
  return r;
}

TextTokenizer induction_tokenizer(std::size_t vocab) {
  std::string characters;
  for (std::size_t i = 0; i < vocab; ++i)
    characters += token_letter(i);
  return character_tokenizer(characters + "|", "the induction task's tokens");
}

std::vector<NamedFile> induction_checkpoint_files(const GptModel& model,
                                                  const InductionConfig& config,
                                                  const std::vector<InductionEvaluation>& history) {
  return gpt_folder_files(model, induction_tokenizer(config.vocab),
                          {{"attn_induction", induction_record(config, history)}});
}

InductionTraining::InductionTraining(const InductionConfig& config)
    : config_((check_induction_config(config), config)),
      model_(init_gpt(induction_model_config(config), config.seed, true)),
      engine_(model_, config.batch, config.tokens),
      held_out_(held_out_sequences(config)) {
  optimizer_.beta2 = config_.beta2;
  optimizer_.weight_decay = config_.weight_decay;
  optimizer_.clip = config_.clip;
  x_.resize(config_.batch * config_.tokens);
  y_.resize(x_.size());
}

float InductionTraining::step() {
  const std::size_t B = config_.batch, T = config_.tokens;
  Rng rng(batch_seed(config_.seed, done_));
  const double rule = rule_probability(config_, done_);
  for (std::size_t b = 0; b < B; ++b) {
    const InductionSequence s = draw_induction_sequence(config_, rng, rule);
    std::copy_n(s.ids.begin(), T, x_.begin() + b * T);
    std::copy_n(s.ids.begin() + 1, T, y_.begin() + b * T);
  }
  const float loss = engine_.forward(model_, x_.data(), y_.data(), B, T);
  engine_.backward(model_, x_.data(), y_.data());
  ++done_;
  // A linear warm-up over the first 5% of the steps, then a constant rate: a cosine decay would
  // slow the late steps, where the phase change happens.
  const double warm = std::max(1.0, 0.05 * static_cast<double>(config_.steps));
  engine_.update(model_, optimizer_,
                 static_cast<float>(config_.lr * std::min(1.0, static_cast<double>(done_) / warm)));
  return loss;
}

InductionEvaluation InductionTraining::evaluate() {
  return {done_, measure_induction(model_, held_out_), 0.0};
}

}  // namespace attn
