#include "14-generate/gpt2_generate_lesson.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "14-generate/gpt2_sampling_lesson.hpp"
#include "base/error.hpp"
#include "fast/gpt2_decode.hpp"

namespace attn::lessons {

namespace {

std::string token_of(const BpeTokenizer& tokenizer, std::int64_t id) {
  const auto i = static_cast<std::size_t>(id);
  return i < tokenizer.size() ? printable(tokenizer.tokens[i], 40) : std::to_string(id);
}

// The prompt's forward through the readable model, as transformers returns it.
void show_forward(LessonRun& run, const Gpt2& model, const Ids& ids) {
  const Gpt2Steps s = forward(model, Gpt2Input{ids, {}});
  const EncoderConfig& c = model.config.sizes;
  const std::size_t layers = model.layers.size();
  run.section("gpt2_forward");
  run.step("input_ids", "input_ids (B, T)", make_int64({1, ids.size()}, {ids.begin(), ids.end()}));
  run.step("hidden_states.0", "wte(input_ids) + wpe(0..T-1): hidden_states[0]",
           to_array(s.hidden_states(0)), false);
  double worst_above = 0.0;
  for (std::size_t l = 0; l < layers; ++l) {
    const Tensor4& w = s.layers[l].attention.weights;  // (1,H,T,T)
    const std::size_t tokens = w.shape(2);
    for (std::size_t r = 0; r < w.size() / tokens; ++r)
      for (std::size_t k = r % tokens + 1; k < tokens; ++k)
        worst_above = std::max(worst_above, static_cast<double>(w.data()[r * tokens + k]));
    run.step(fmt::format("attentions.{}", l),
             fmt::format("h.{}: every head's softmax(Q Kᵀ / √{} + causal mask), (B, H, T, T)", l,
                         c.hidden_size / c.num_attention_heads),
             to_array(w), false);
    run.step(fmt::format("hidden_states.{}", l + 1),
             l + 1 == layers
                 ? fmt::format("ln_f of the output of h.{}: hidden_states[{}], last_hidden_state",
                               l, l + 1)
                 : fmt::format("the output of h.{}: hidden_states[{}]", l, l + 1),
             to_array(s.hidden_states(l + 1)), false);
  }
  run.step("logits", "lm_head(last_hidden_state) = last_hidden_state wteᵀ, (B, T, V)",
           to_array(s.logits), false);
  run.check("no weight above the diagonal: position t reads positions 0 to t only",
            worst_above == 0.0, fmt::format("largest weight above it {:g}", worst_above));
}

}  // namespace

MemoryPlan plan_gpt2_generate(const Gpt2Config& config, std::size_t prompt,
                              std::size_t max_new_tokens, bool forward) {
  const EncoderConfig& c = config.sizes;
  const std::size_t positions = prompt + max_new_tokens;
  MemoryPlan plan{
      {"the key/value cache", {2, c.num_hidden_layers, positions, c.hidden_size}, " L T D"},
      {"the prompt's pass (prefill)",
       {prompt, 3 * c.hidden_size + c.intermediate_size + 4 * c.hidden_size},
       "T D/F"},
      {"the prompt's attention scores", {c.num_attention_heads, prompt, prompt}, "H T T"},
      {"the logits and the sampling distribution", {4, c.vocab_size}, " V"}};
  if (forward) append(plan, plan_gpt2(config, 1, prompt, true));
  return plan;
}

namespace {

// The run's opening: its settings and the prompt's tokens.
Gpt2GenerateRun start(const Gpt2Config& config, Gpt2Heads heads, const Gpt2GenerateOptions& o) {
  const BpeTokenizer& tokenizer = *o.tokenizer;
  const EncoderConfig& c = config.sizes;
  Gpt2GenerateRun out{LessonRun("generate")};
  LessonRun& run = out.run;
  run.parameters = gpt2_size(config, heads).parameters.value();
  run.setting("model", fmt::format("{} (GPT-2, {} blocks x {} heads, D = {})", o.name,
                                   c.num_hidden_layers, c.num_attention_heads, c.hidden_size));
  run.setting(
      "decoding",
      o.decode.sample
          ? fmt::format("sampled: temperature {:g}, top-k {}, top-p {:g}, seed {}",
                        o.decode.temperature,
                        o.decode.top_k == 0 ? std::string("all") : std::to_string(o.decode.top_k),
                        o.decode.top_p, o.decode.seed)
          : std::string("greedy"));
  run.setting("max_new_tokens", std::to_string(o.max_new_tokens));

  run.section("gpt2_intro");
  Table prompt{"The prompt", {"position", "token", "id"}, {}};
  for (std::size_t t = 0; t < o.prompt.size(); ++t)
    prompt.rows.push_back(
        {std::to_string(t), token_of(tokenizer, o.prompt[t]), std::to_string(o.prompt[t])});
  run.table(std::move(prompt));

  return out;
}

// Generation on the packed model, and what it shows.
void finish(Gpt2GenerateRun& out, const Gpt2Config& config, const PackedGpt2& packed,
            const Gpt2GenerateOptions& o) {
  const BpeTokenizer& tokenizer = *o.tokenizer;
  const EncoderConfig& c = config.sizes;
  LessonRun& run = out.run;
  const Gpt2Decoded d = generate(packed, o.prompt, o.max_new_tokens, o.decode, config.eos_token_id);
  out.prefill_seconds = d.prefill_seconds;
  out.step_seconds = d.step_seconds;
  out.new_tokens = d.tokens.size();

  run.section("gpt2_steps");
  Table steps{"Each new token: the most likely candidates, and the pick",
              {"step", "candidates (probability)", "picked", "log p"},
              {}};
  std::vector<float> log_probs;
  for (std::size_t n = 0; n < d.steps.size(); ++n) {
    const Gpt2DecodeStep& s = d.steps[n];
    std::string candidates;
    for (const TokenPrediction& p : s.top)
      candidates += fmt::format("{}{} {:.3f}", candidates.empty() ? "" : "  ",
                                token_of(tokenizer, p.id), p.probability);
    if (s.candidates > s.top.size())
      candidates += fmt::format("  (+{} more)", s.candidates - s.top.size());
    steps.rows.push_back({std::to_string(n + 1), candidates, token_of(tokenizer, s.pick),
                          fmt::format("{:.4f}", s.log_prob)});
    log_probs.push_back(s.log_prob);
  }
  run.table(std::move(steps));
  run.step("generated_ids", "the new tokens' ids", make_int64({d.tokens.size()}, d.tokens));
  run.step("log_probs", "each pick's log-probability, log softmax(logits)[pick]",
           make_float32({log_probs.size()}, log_probs));
  std::vector<std::int64_t> all = o.prompt;
  all.insert(all.end(), d.tokens.begin(), d.tokens.end());
  run.prose(fmt::format("The text, prompt and {} new tokens{}:\n\n    {}\n", d.tokens.size(),
                        d.ended ? " (the last is the end of text)" : "",
                        one_line(decode(tokenizer, all))));

  run.section("gpt2_cache");
  const std::size_t positions = o.prompt.size() + o.max_new_tokens;
  const std::size_t expected = 2 * c.num_hidden_layers * positions * c.hidden_size * sizeof(float);
  run.table(Table{"The key/value cache",
                  {"blocks L", "positions T", "width D", "2 · L · T · D floats", "bytes"},
                  {{std::to_string(c.num_hidden_layers), std::to_string(positions),
                    std::to_string(c.hidden_size),
                    std::to_string(2 * c.num_hidden_layers * positions * c.hidden_size),
                    format_bytes(static_cast<double>(d.cache_bytes))}}});
  run.check("the cache holds 2 · L · T · D floats, no more", d.cache_bytes == expected,
            fmt::format("{} bytes allocated, {} from the formula", d.cache_bytes, expected));
  if (!o.sampling) return;
  SamplingDemoOptions demo;
  demo.tokenizer = &tokenizer;
  demo.prompt = o.prompt;
  demo.end_of_text = config.eos_token_id;
  // The run's own sampling settings when it samples, else temperature 0.8.
  demo.sample = o.decode;
  if (!o.decode.sample) {
    demo.sample = DecodeOptions{};
    demo.sample.sample = true;
    demo.sample.temperature = 0.8f;
  }
  show_sampling(run, packed, demo);
}

}  // namespace

Gpt2GenerateRun run_gpt2_generate(Gpt2&& model, const Gpt2GenerateOptions& o) {
  const Gpt2Config config = model.config;
  Gpt2GenerateRun out = start(config, model.heads, o);
  LessonRun& run = out.run;
  if (o.forward) {
    Ids ids({1, o.prompt.size()});
    std::copy(o.prompt.begin(), o.prompt.end(), ids.begin());
    show_forward(run, model, ids);
  }
  const PackedGpt2 packed = pack(std::move(model));
  finish(out, config, packed, o);
  return out;
}

Gpt2GenerateRun run_gpt2_generate(const Gpt2Config& config, Gpt2Heads heads,
                                  const PackedGpt2& model, const Gpt2GenerateOptions& o) {
  Gpt2GenerateRun out = start(config, heads, o);
  finish(out, config, model, o);
  return out;
}

}  // namespace attn::lessons
