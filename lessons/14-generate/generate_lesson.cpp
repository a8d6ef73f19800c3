// Lesson 14, generation. Legend: S source tokens, V the target vocabulary, t the step.
#include "14-generate/generate_lesson.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "11-train/train_lesson.hpp"
#include "base/array.hpp"

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
}  // namespace

LessonRun run_generate(const GenerateLessonOptions& o) {
  check_decode_options(o.decode);
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

  run.section("attention");
  run.heatmaps(cross_attention_maps(o.model, task, o.source, shown.tokens,
                                    fmt::format("decoder layer {}, cross-attention (rows: tokens "
                                                "written, columns: source)",
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
