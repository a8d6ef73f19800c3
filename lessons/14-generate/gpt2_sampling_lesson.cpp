// Lesson 14's sampling on a decoder-only model. Legend: V the vocabulary, N new tokens.
#include "14-generate/gpt2_sampling_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "fast/gpt2_decode.hpp"

namespace attn::lessons {

double entropy(const std::vector<float>& probabilities) {
  double h = 0.0;
  for (float p : probabilities)
    if (p > 0.0f) h -= static_cast<double>(p) * std::log(static_cast<double>(p));
  return h;
}

namespace {

// Token ids, most probable first (ties: the lower id first).
std::vector<std::size_t> by_probability(const std::vector<float>& probabilities) {
  std::vector<std::size_t> order(probabilities.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return probabilities[a] > probabilities[b];
  });
  return order;
}

}  // namespace

std::size_t tokens_holding(const std::vector<float>& probabilities, double mass) {
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t id : by_probability(probabilities)) {
    if (sum >= mass || probabilities[id] <= 0.0f) break;
    sum += probabilities[id];
    ++n;
  }
  return n;
}

double repeated_window_fraction(std::string_view text, std::size_t width) {
  if (width == 0 || text.size() < width + 1) return 0.0;
  std::set<std::string_view> seen;
  std::size_t windows = 0, repeated = 0;
  for (std::size_t i = 0; i + width <= text.size(); ++i, ++windows)
    if (!seen.insert(text.substr(i, width)).second) ++repeated;
  return static_cast<double>(repeated) / static_cast<double>(windows);
}

std::size_t longest_repeat(std::string_view text) {
  // run[j]: the length of the common stretch ending at i and at j, for j < i.
  const std::size_t n = text.size();
  std::vector<std::size_t> run(n + 1, 0), next(n + 1, 0);
  std::size_t longest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      next[j + 1] = text[i] == text[j] ? run[j] + 1 : 0;
      longest = std::max(longest, next[j + 1]);
    }
    std::swap(run, next);
  }
  return longest;
}

double shared_ngram_fraction(const std::vector<std::string>& texts, std::size_t n) {
  std::vector<std::set<std::string_view>> grams;
  for (const std::string& t : texts) {
    std::set<std::string_view> g;
    for (std::size_t i = 0; i + n <= t.size(); ++i)
      g.insert(std::string_view(t).substr(i, n));
    grams.push_back(std::move(g));
  }
  double sum = 0.0;
  std::size_t pairs = 0;
  for (std::size_t a = 0; a < grams.size(); ++a)
    for (std::size_t b = a + 1; b < grams.size(); ++b, ++pairs) {
      std::size_t common = 0;
      for (std::string_view g : grams[a])
        common += grams[b].count(g);
      const std::size_t all = grams[a].size() + grams[b].size() - common;
      sum += all == 0 ? 0.0 : static_cast<double>(common) / static_cast<double>(all);
    }
  return pairs == 0 ? 0.0 : sum / static_cast<double>(pairs);
}

std::string one_line(std::string_view text, std::size_t limit) {
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = text.find('\n'); at != std::string_view::npos && out.size() < limit;
       from = at + 1, at = text.find('\n', from))
    out += printable(text.substr(from, at - from), limit) + "↵";
  return out + printable(text.substr(std::min(from, text.size())), limit);
}

namespace {

constexpr std::size_t kShown = 8;            // the most likely tokens listed
constexpr std::size_t kWindow = 8;           // repetition: windows of 8 bytes
constexpr std::size_t kGram = 4;             // diversity: 4-byte grams
constexpr double kMass = 0.9;                // "how many tokens hold 90%"
constexpr std::size_t kTopK = 5;             // the top-k shown
constexpr float kTopP = 0.9f;                // the top-p shown
constexpr std::size_t kFewestPositions = 8;  // a continuation shorter than this shows nothing

std::string token_of(const BpeTokenizer& tokenizer, std::size_t id) {
  return id < tokenizer.size() ? printable(tokenizer.tokens[id], 40) : std::to_string(id);
}

std::string text_of(const BpeTokenizer& tokenizer, const std::vector<std::int64_t>& ids,
                    std::int64_t end_of_text) {
  std::vector<std::int64_t> kept = ids;
  if (!kept.empty() && kept.back() == end_of_text) kept.pop_back();
  return decode(tokenizer, kept);
}

std::size_t kept_count(const std::vector<float>& p) {
  return static_cast<std::size_t>(std::count_if(p.begin(), p.end(), [](float x) { return x > 0; }));
}

// The mass the kept tokens (those above 0 in `filtered`) hold in `plain`.
double kept_mass(const std::vector<float>& filtered, const std::vector<float>& plain) {
  double sum = 0.0;
  for (std::size_t i = 0; i < plain.size(); ++i)
    if (filtered[i] > 0.0f) sum += plain[i];
  return sum;
}

// The next-token distribution after the prompt: what temperature, top-k and top-p make of it.
void show_distribution(LessonRun& run, const PackedGpt2& model, const SamplingDemoOptions& o) {
  const BpeTokenizer& tokenizer = *o.tokenizer;
  Gpt2Generator generator(model, o.prompt.size());
  const std::vector<float> logits = generator.prefill(o.prompt);  // (V)
  const auto at = [&](float temperature, std::size_t top_k, float top_p) {
    DecodeOptions d;
    d.sample = true;
    d.temperature = temperature;
    d.top_k = top_k;
    d.top_p = top_p;
    return sampling_distribution(logits, d);  // (V)
  };
  const std::vector<float> plain = at(1.0f, 0, 1.0f);
  run.section("gpt2_sampling");
  Table top{
      fmt::format("The {} most likely next tokens after the prompt, at temperature 1", kShown),
      {"rank", "token", "id", "probability", "cumulative"},
      {}};
  const std::vector<std::size_t> order = by_probability(plain);
  double cumulative = 0.0;
  for (std::size_t r = 0; r < std::min(kShown, order.size()); ++r) {
    cumulative += plain[order[r]];
    top.rows.push_back({std::to_string(r + 1), token_of(tokenizer, order[r]),
                        std::to_string(order[r]), fmt::format("{:.3f}", plain[order[r]]),
                        fmt::format("{:.3f}", cumulative)});
  }
  run.table(std::move(top));
  run.step("next_token_probabilities", "softmax(logits) after the prompt, temperature 1 (V)",
           make_float32({plain.size()}, plain), false);

  struct Measured {
    double top, entropy;
    std::size_t holding;
  };
  const auto measure = [](const std::vector<float>& p) {
    return Measured{*std::max_element(p.begin(), p.end()), entropy(p), tokens_holding(p, kMass)};
  };
  Table sweep{"What temperature does to it: softmax(logits / T)",
              {"temperature", "most likely", "entropy (nats)", "tokens holding 90%"},
              {}};
  std::vector<double> sweep_values;
  std::vector<Measured> measured;
  for (float temperature : {0.5f, 1.0f, 1.5f}) {
    const Measured m = measure(at(temperature, 0, 1.0f));
    measured.push_back(m);
    sweep.rows.push_back({fmt::format("{:g}", temperature), fmt::format("{:.3f}", m.top),
                          fmt::format("{:.3f}", m.entropy), std::to_string(m.holding)});
    sweep_values.insert(sweep_values.end(), {static_cast<double>(temperature), m.top, m.entropy,
                                             static_cast<double>(m.holding)});
  }
  run.table(std::move(sweep));
  run.step("temperature_sweep",
           "temperature, most likely probability, entropy in nats, tokens holding 90% (3, 4)",
           make_float64({3, 4}, sweep_values));
  const Measured &cold = measured[0], &plain_m = measured[1], &hot = measured[2];
  run.check("temperature 0.5 sharpens it: the most likely token gains, the entropy falls",
            cold.top > plain_m.top && cold.entropy < plain_m.entropy,
            fmt::format("most likely {:.3f} → {:.3f}, entropy {:.3f} → {:.3f} nats", plain_m.top,
                        cold.top, plain_m.entropy, cold.entropy));
  run.check("temperature 1.5 flattens it: the most likely token loses, the entropy rises",
            hot.top < plain_m.top && hot.entropy > plain_m.entropy,
            fmt::format("most likely {:.3f} → {:.3f}, entropy {:.3f} → {:.3f} nats", plain_m.top,
                        hot.top, plain_m.entropy, hot.entropy));

  const std::vector<float> top_k = at(1.0f, kTopK, 1.0f), top_p = at(1.0f, 0, kTopP);
  Table filters{"What top-k and top-p keep, at temperature 1",
                {"filter", "tokens kept", "their probability before", "the most likely after"},
                {}};
  const std::size_t k_kept = kept_count(top_k), p_kept = kept_count(top_p);
  const double k_mass = kept_mass(top_k, plain), p_mass = kept_mass(top_p, plain);
  filters.rows.push_back(
      {"none", std::to_string(kept_count(plain)), "1.000", fmt::format("{:.3f}", plain_m.top)});
  filters.rows.push_back({fmt::format("top-k {}", kTopK), std::to_string(k_kept),
                          fmt::format("{:.3f}", k_mass),
                          fmt::format("{:.3f}", *std::max_element(top_k.begin(), top_k.end()))});
  filters.rows.push_back({fmt::format("top-p {:g}", kTopP), std::to_string(p_kept),
                          fmt::format("{:.3f}", p_mass),
                          fmt::format("{:.3f}", *std::max_element(top_p.begin(), top_p.end()))});
  run.table(std::move(filters));
  run.step("filters_kept", "top-k 5 and top-p 0.9: tokens kept, their probability before (2, 2)",
           make_float64(
               {2, 2}, {static_cast<double>(k_kept), k_mass, static_cast<double>(p_kept), p_mass}));
  run.check(
      fmt::format("top-k {} keeps the {} most likely tokens", kTopK, kTopK),
      k_kept >= kTopK && k_mass <= 1.0,
      fmt::format("{} kept (ties with the {}th stay), holding {:.3f}", k_kept, kTopK, k_mass));
  const double smallest = p_kept == 0 ? 0.0 : plain[order[p_kept - 1]];
  run.check(
      fmt::format("top-p {:g} keeps the fewest most likely tokens that reach {:g}", kTopP, kTopP),
      p_kept == tokens_holding(plain, kTopP) && p_mass + 1e-6 >= kTopP && p_mass - smallest < kTopP,
      fmt::format("{} kept, holding {:.3f}; without the last ({:.3f}) {:.3f}", p_kept, p_mass,
                  smallest, p_mass - smallest));
}

struct Continuation {
  std::string text;
  double repeated = 0.0;
  std::size_t longest = 0;
};

Continuation continue_prompt(const PackedGpt2& model, const SamplingDemoOptions& o,
                             std::size_t length, const DecodeOptions& decode) {
  const Gpt2Decoded d = generate(model, o.prompt, length, decode, o.end_of_text, 1);
  Continuation c;
  c.text = text_of(*o.tokenizer, d.tokens, o.end_of_text);
  c.repeated = repeated_window_fraction(c.text, kWindow);
  c.longest = longest_repeat(c.text);
  return c;
}

}  // namespace

void show_sampling(LessonRun& run, const PackedGpt2& model, const SamplingDemoOptions& o) {
  if (o.tokenizer == nullptr || o.prompt.empty() || !o.sample.sample)
    throw Error(ErrorKind::internal, "show_sampling",
                "needs a tokenizer, a prompt and sampling options");
  show_distribution(run, model, o);

  run.section("gpt2_seeds");
  const std::size_t left = model.positions - std::min(model.positions, o.prompt.size());
  const std::size_t length = std::min(o.length, left);
  if (length < kFewestPositions) {
    run.prose(wrapped_prose(fmt::format(
        "The prompt leaves {} of the model's {} positions, too few for continuations worth "
        "comparing: give a shorter --text to see samples across seeds and the greedy one.",
        left, model.positions)));
    return;
  }
  const DecodeOptions& s = o.sample;
  const std::string how =
      fmt::format("temperature {:g}{}{}", s.temperature,
                  s.top_k == 0 ? std::string() : fmt::format(", top-k {}", s.top_k),
                  s.top_p >= 1.0f ? std::string() : fmt::format(", top-p {:g}", s.top_p));
  Table samples{fmt::format("{} continuations of {} tokens at most, {} (↵ is a newline)", o.seeds,
                            length, how),
                {"seed", "continuation", "repeated 8-byte windows", "longest repeat"},
                {}};
  std::vector<std::string> texts;
  std::vector<double> repetition;
  double sample_repeated = 0.0;
  std::size_t sample_longest = 0;
  for (std::size_t seed = 0; seed < o.seeds; ++seed) {
    DecodeOptions d = s;
    d.seed = seed;
    const Continuation c = continue_prompt(model, o, length, d);
    samples.rows.push_back({std::to_string(seed), one_line(c.text),
                            fmt::format("{:.3f}", c.repeated), std::to_string(c.longest)});
    texts.push_back(c.text);
    repetition.insert(repetition.end(), {c.repeated, static_cast<double>(c.longest)});
    sample_repeated += c.repeated / static_cast<double>(o.seeds);
    sample_longest = std::max(sample_longest, c.longest);
  }
  run.table(std::move(samples));
  const std::size_t distinct = std::set<std::string>(texts.begin(), texts.end()).size();
  const double shared = shared_ngram_fraction(texts, kGram);
  run.table(Table{
      "How different the seeds' continuations are",
      {"continuations", "distinct", "4-byte grams two share, of either's (mean)"},
      {{std::to_string(texts.size()), std::to_string(distinct), fmt::format("{:.3f}", shared)}}});
  run.step("sample_diversity", "continuations, distinct ones, mean shared 4-byte grams (3)",
           make_float64(
               {3}, {static_cast<double>(texts.size()), static_cast<double>(distinct), shared}));
  run.check("every seed draws its own continuation", distinct == texts.size(),
            fmt::format("{} distinct of {}; two share {:.3f} of their 4-byte grams on average",
                        distinct, texts.size(), shared));

  run.section("gpt2_greedy");
  const Continuation greedy = continue_prompt(model, o, length, DecodeOptions{});
  run.prose(fmt::format("The greedy continuation, {} tokens at most:\n\n    {}\n", length,
                        one_line(greedy.text)));
  run.table(
      Table{"Repetition: the share of 8-byte windows already seen earlier in the continuation",
            {"decoding", "repeated 8-byte windows", "longest repeat (bytes)"},
            {{"greedy", fmt::format("{:.3f}", greedy.repeated), std::to_string(greedy.longest)},
             {fmt::format("sampled, {} (mean; longest of any)", how),
              fmt::format("{:.3f}", sample_repeated), std::to_string(sample_longest)}}});
  std::vector<double> values{greedy.repeated, static_cast<double>(greedy.longest)};
  values.insert(values.end(), repetition.begin(), repetition.end());
  run.step("repetition",
           "repeated 8-byte windows and longest repeat: greedy, then each seed (1 + seeds, 2)",
           make_float64({1 + o.seeds, 2}, values));
  const std::string measured = fmt::format(
      "greedy {:.3f} of its windows repeated, longest repeat {}; the samples {:.3f} "
      "on average",
      greedy.repeated, greedy.longest, sample_repeated);
  if (greedy.repeated > sample_repeated)
    run.check("greedy decoding repeats itself more than sampling", true, measured);
  else
    run.prose(wrapped_prose(fmt::format(
        "Here greedy decoding does not repeat itself more than the samples: {}. A longer "
        "continuation (another --text) usually shows the loop.",
        measured)));
}

}  // namespace attn::lessons
