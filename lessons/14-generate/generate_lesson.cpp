// Lesson 14, generation. Legend: S source tokens, V the target vocabulary, t the step, L decoder
// layers, D model width, H heads, hs head size.
#include "14-generate/generate_lesson.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "11-train/train_lesson.hpp"
#include "base/array.hpp"
#include "base/budget.hpp"
#include "base/count.hpp"
#include "io/shipped.hpp"

namespace attn::lessons {

namespace {
constexpr std::size_t kCandidates = 5;

std::string token(Seq2SeqTask task, std::int64_t id) {
  return target_tokens(task).at(static_cast<std::size_t>(id));
}

std::string words(Seq2SeqTask task, const std::vector<std::int64_t>& ids) {
  std::string s;
  for (std::int64_t id : ids) {
    if (!s.empty()) s += ' ';
    s += token(task, id);
  }
  return s;
}

// "c 0.97, b 0.02, ...": the most likely tokens of a distribution.
std::string candidates(Seq2SeqTask task, const std::vector<float>& p) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  std::string s;
  for (std::size_t i = 0; i < std::min(kCandidates, order.size()) && p[order[i]] > 0.0f; ++i)
    s += fmt::format("{}{} {:.3f}", s.empty() ? "" : ", ",
                     token(task, static_cast<std::int64_t>(order[i])), p[order[i]]);
  return s;
}

std::string count(std::uint64_t n) {
  return fmt::format("{}", n);
}

// The model's own distribution at a step: <pad> and <s> masked as decoding masks them, then
// only a temperature, or a top-p.
std::vector<float> filtered(const DecodeStep& s, float temperature, float top_p) {
  std::vector<float> scores = s.log_probs;
  scores[static_cast<std::size_t>(kPadId)] = scores[static_cast<std::size_t>(kStartId)] =
      -std::numeric_limits<float>::infinity();
  DecodeOptions o;
  o.sample = true;
  o.temperature = temperature;
  o.top_p = top_p;
  return sampling_distribution(scores, o);
}

// How sure the model is: its top token's probability at each temperature, and how many tokens
// top-p 0.9 keeps, each averaged over the steps.
void certainty(LessonRun& run, const Decoded& shown) {
  const std::size_t n = shown.steps.size();
  double top = 0.0, lowest = 1.0;
  for (const DecodeStep& s : shown.steps) {
    const std::vector<float> p = filtered(s, 1.0f, 1.0f);
    const double most = *std::max_element(p.begin(), p.end());
    top += most / static_cast<double>(n);
    lowest = std::min(lowest, most);
  }
  constexpr double kCertain = 0.99;
  const std::string measured = fmt::format(
      "its most likely token holds {:.4f} on average over the {} step{} (the lowest "
      "{:.4f})",
      top, n, n == 1 ? "" : "s", lowest);
  if (top >= kCertain)
    run.check("this model is certain", true, fmt::format("{} ✓ above {}", measured, kCertain));
  else
    run.prose(wrapped_prose(fmt::format(
        "This model is not certain here: {}, below {}, so temperature, top-k and top-p change "
        "what is drawn.",
        measured, kCertain)));
  Table sweep{"What sampling would draw from, averaged over the same steps",
              {"temperature", "the most likely token's probability", "tokens top-p 0.9 keeps"},
              {}};
  for (float temperature : {0.5f, 1.0f, 2.0f, 5.0f}) {
    double most = 0.0, kept = 0.0;
    for (const DecodeStep& s : shown.steps) {
      const std::vector<float> p = filtered(s, temperature, 1.0f);
      most += *std::max_element(p.begin(), p.end()) / static_cast<double>(n);
      const std::vector<float> nucleus = filtered(s, temperature, 0.9f);
      kept += static_cast<double>(
                  std::count_if(nucleus.begin(), nucleus.end(), [](float x) { return x > 0.0f; })) /
              static_cast<double>(n);
    }
    sweep.rows.push_back({fmt::format("{:g}", temperature), fmt::format("{:.4f}", most),
                          fmt::format("{:.1f}", kept)});
  }
  run.table(std::move(sweep));
}

std::string bytes(std::uint64_t floats) {
  const std::uint64_t b = floats * sizeof(float);
  const std::string n = with_commas(static_cast<std::int64_t>(b));
  if (b < 10 * 1024) return n;
  if (b < 10 * 1024 * 1024)
    return fmt::format("{} ({:.0f} KiB)", n, static_cast<double>(b) / 1024.0);
  return fmt::format("{} ({:.0f} MiB)", n, static_cast<double>(b) / (1024.0 * 1024.0));
}

// What the cache holds after the decoding, counted in a cache filled the way decode fills it,
// against 2 L t D; the shapes a step multiplies; and the same count at BERT-base's size.
void cache_memory_and_shapes(LessonRun& run, const Transformer& model, const Decoded& shown) {
  const TransformerConfig& c = model.config;
  DecoderCache cache = start_decoding(model, shown.memory, nullptr);
  std::int64_t last = kStartId;
  for (std::int64_t token : shown.tokens) {  // the last pick is never fed back
    decode_step(model, cache, {last});
    last = token;
  }
  std::uint64_t self_floats = 0, cross_floats = 0;
  for (std::size_t l = 0; l < c.layers; ++l) {
    self_floats += cache.self_keys[l].size() + cache.self_values[l].size();
    cross_floats += cache.cross_keys[l].size() + cache.cross_values[l].size();
  }
  const std::size_t t = cache.tokens, s = shown.memory.shape()[1], d = c.d_model,
                    hs = c.d_model / c.heads;
  const std::uint64_t formula = 2 * c.layers * t * d;
  run.check("the cache holds 2 · L · t · D floats of keys and values", self_floats == formula,
            fmt::format("counted {}; 2 · {} · {} · {} = {}",
                        with_commas(static_cast<std::int64_t>(self_floats)), c.layers, t, d,
                        with_commas(static_cast<std::int64_t>(formula))));
  Table memory{
      "What the cache keeps per sequence (float32)", {"keys and values of", "floats", "bytes"}, {}};
  memory.rows.push_back({fmt::format("this model: {} tokens fed in, {} layers", t, c.layers),
                         with_commas(static_cast<std::int64_t>(self_floats)), bytes(self_floats)});
  memory.rows.push_back({fmt::format("this model's cross-attention: {} source tokens", s),
                         with_commas(static_cast<std::int64_t>(cross_floats)),
                         bytes(cross_floats)});
  const EncoderConfig big = shipped_config("bert-base").value();
  const std::uint64_t big_floats =
      2 * big.num_hidden_layers * big.max_position_embeddings * big.hidden_size;
  memory.rows.push_back(
      {fmt::format("BERT-base's size at {} tokens: 2 · {} · {} · {}", big.max_position_embeddings,
                   big.num_hidden_layers, big.max_position_embeddings, big.hidden_size),
       with_commas(static_cast<std::int64_t>(big_floats)), bytes(big_floats)});
  run.table(std::move(memory));
  Table shapes{fmt::format("One head's self-attention at the last step (t = {})", t - 1),
               {"", "query", "keys", "scores"},
               {}};
  shapes.rows.push_back({"recomputing the prefix", fmt::format("({}, {})", t, hs),
                         fmt::format("({}, {})", t, hs), fmt::format("({}, {})", t, t)});
  shapes.rows.push_back(
      {"with the cache", fmt::format("(1, {})", hs),
       fmt::format("({}, {}) cached", cache.self_keys[0].shape()[1], cache.self_keys[0].shape()[2]),
       fmt::format("(1, {})", t)});
  run.table(std::move(shapes));
}
// For check_budget, with the model already loaded (its file was checked as it was read): the
// model's weights and positional encodings, and the file's bytes and tensors that reading held; two decodings (with the cache: each layer's keys and
// values of the source and of the tokens so far; without: the decoder's tensors on the whole
// prefix at each step) with each step's log-probabilities and probabilities; the steps shown and
// every layer's and head's cross-attention map of the answer.
MemoryPlan plan_generate(const GenerateLessonOptions& o) {
  const TransformerConfig& c = o.model.config;
  const std::size_t l = c.layers, h = c.heads, d = c.d_model, f = c.d_ff, v = c.target_vocab;
  const std::size_t s = o.source.size(),
                    t = o.decode.max_tokens > 0 ? o.decode.max_tokens : c.target_positions;
  const auto parameters = static_cast<std::size_t>(count_parameters(describe_transformer(c)));
  return {
      {"the model's weights", {parameters}, "", 4, Held::kept},
      // Reading the checkpoint held its bytes and its tensors beside the model being filled.
      {"the checkpoint's bytes and tensors", {2, parameters}, "", 4},
      {"the positional encodings",
       {c.source_positions + c.target_positions, d},
       "T D",
       4,
       Held::kept},
      {"the cache's keys and values", {l, 2, s + t, d}, "L  T D"},
      {"the decoder's tensors on a prefix", {l, t, 24 * d + 2 * f + 4 * h * (s + t)}, "L T D/F"},
      {"two decodings' steps", {2, t, 2 * v}, "  T V", 4, Held::kept},
      {"the memory", {2, s, d}, " T D", 4, Held::kept},
      {"the steps shown", {2, t, v}, " T V", 4, Held::shown},
      {"the cross-attention maps", {2, l, h, t, s}, " L H T T", 4, Held::kept},
  };
}

}  // namespace

LessonRun run_generate(const GenerateLessonOptions& o) {
  check_decode_options(o.decode);
  check_budget("generate", plan_generate(o));
  const Seq2SeqTask task = o.task;
  const TransformerConfig& c = o.model.config;
  LessonRun run("generate");
  run.setting("checkpoint", o.checkpoint_name);
  run.setting("task", std::string(seq2seq_task_info(task).name));
  run.setting("text", source_text(task, o.source));
  run.setting("decoding", o.decode.sample ? "sampled" : "greedy");
  if (o.decode.sample) {
    run.setting("temperature", fmt::format("{:g}", o.decode.temperature));
    run.setting("top-k", o.decode.top_k == 0 ? "all" : std::to_string(o.decode.top_k));
    run.setting("top-p", fmt::format("{:g}", o.decode.top_p));
    run.setting("seed", std::to_string(o.decode.seed));
  }
  run.setting("cache", o.decode.cache ? "on" : "off");

  run.section("intro");
  run.section("source");
  run.step("source", "the source's ids (1,S)", make_int64({1, o.source.size()}, o.source));
  DecodeOptions cached = o.decode, recomputed = o.decode;
  cached.cache = true;
  recomputed.cache = false;
  const Decoded with = decode(o.model, o.source, cached);
  const Decoded without = decode(o.model, o.source, recomputed);
  const Decoded& shown = o.decode.cache ? with : without;
  run.step("memory", "the encoder's output, the memory every cross-attention reads (1,S,D)",
           to_array(shown.memory));

  run.section("steps");
  Table steps{fmt::format("Each step: the prefix fed in, the {} most likely next tokens, the pick",
                          kCandidates),
              {"step", "prefix", "candidates (probability)", "pick"},
              {}};
  std::vector<std::int64_t> prefix{kStartId};
  std::vector<float> log_probs, probabilities;
  for (std::size_t t = 0; t < shown.steps.size(); ++t) {
    const DecodeStep& s = shown.steps[t];
    steps.rows.push_back({std::to_string(t), words(task, prefix), candidates(task, s.probabilities),
                          token(task, s.pick)});
    prefix.push_back(s.pick);
    log_probs.insert(log_probs.end(), s.log_probs.begin(), s.log_probs.end());
    probabilities.insert(probabilities.end(), s.probabilities.begin(), s.probabilities.end());
  }
  run.table(std::move(steps));
  const std::size_t n = shown.steps.size(), v = c.target_vocab;
  run.step("log_probs", "each step's log_softmax over the target vocabulary (steps, V)",
           make_float32({n, v}, log_probs));
  run.step("probabilities",
           "what each pick was drawn from: after temperature, top-k and top-p (steps, V)",
           make_float32({n, v}, probabilities));
  run.step("tokens", "the picks (steps)", make_int64({n}, shown.tokens));

  run.section("certainty");
  certainty(run, shown);

  run.section("cache");
  const bool same_tokens = with.tokens == without.tokens;
  // |a - b| over 1 + |b|: log-probabilities reach -20 and below, where a float's last bit is 2e-6.
  double largest = 0.0;
  for (std::size_t t = 0; t < std::min(with.steps.size(), without.steps.size()); ++t)
    for (std::size_t i = 0; i < v; ++i) {
      const double a = with.steps[t].log_probs[i], b = without.steps[t].log_probs[i];
      largest = std::max(largest, std::abs(a - b) / (1.0 + std::abs(b)));
    }
  run.check("the cache gives the tokens recomputing does", same_tokens,
            same_tokens
                ? fmt::format("{} token{}", with.tokens.size(), with.tokens.size() == 1 ? "" : "s")
                : "the two decodings differ");
  run.check(
      "and the same log-probabilities, up to round-off", largest <= 1e-5,
      fmt::format("largest |difference| / (1 + |log-probability|) {:.2g} (allowed 1e-5)", largest));
  Table cost{"Multiply-adds of each step", {"step", "with the cache", "recomputing", "saved"}, {}};
  std::uint64_t total_cached = 0, total_recomputed = 0;
  for (std::size_t t = 0; t < with.steps.size(); ++t) {
    const std::uint64_t a = with.steps[t].multiply_adds,
                        b = decode_cost(c, o.source.size(), t).recomputed;
    total_cached += a;
    total_recomputed += b;
    cost.rows.push_back(
        {std::to_string(t), count(a), count(b),
         fmt::format("{:.0f}%", 100.0 * (1.0 - static_cast<double>(a) / static_cast<double>(b)))});
  }
  cost.rows.push_back(
      {"all", count(total_cached), count(total_recomputed),
       fmt::format("{:.0f}%", 100.0 * (1.0 - static_cast<double>(total_cached) /
                                                 static_cast<double>(std::max<std::uint64_t>(
                                                     1, total_recomputed))))});
  run.table(std::move(cost));
  run.step("multiply_adds", "the decoding's multiply-adds with the cache and without (2)",
           make_float64(
               {2}, {static_cast<double>(total_cached), static_cast<double>(total_recomputed)}));
  cache_memory_and_shapes(run, o.model, shown);

  run.section("attention");
  run.heatmaps(cross_attention_maps(o.model, task, o.source, shown.tokens,
                                    fmt::format("decoder layer {}, cross-attention (rows: token "
                                                "read→token written, columns: source)",
                                                c.layers - 1)));

  run.section("output");
  std::vector<std::int64_t> expected = seq2seq_answer(task, o.source);
  expected.push_back(kEndId);
  Table answer{"The answer", {"", "tokens"}, {}};
  answer.rows.push_back({"source", source_text(task, o.source)});
  answer.rows.push_back({"decoded", words(task, shown.tokens)});
  answer.rows.push_back({"the task's answer", words(task, expected)});
  run.table(std::move(answer));
  const bool right = shown.tokens == expected;
  if (o.decode.sample) {
    run.prose(right ? "Sampling found the task's answer."
                    : "Sampling may pick a less likely token and go astray from there; greedy "
                      "decoding (no --temperature, --top-k or --top-p) takes the most likely one.");
  } else {
    run.prose(right ? "Greedy decoding gives the task's answer."
                    : "The model gets this source wrong: a checkpoint trained longer, or on "
                      "sources like this one, may not.");
  }
  run.parameters = 0;
  Transformer copy = o.model;
  visit_parameters(copy, [&](const std::string&, float*, const Shape& shape) {
    run.parameters += static_cast<std::int64_t>(element_count(shape));
  });
  return run;
}

}  // namespace attn::lessons
