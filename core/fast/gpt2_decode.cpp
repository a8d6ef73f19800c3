#include "fast/gpt2_decode.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// log softmax(logits)[id], the row's max subtracted, summed in float64.
float log_probability(const std::vector<float>& logits, std::int64_t id) {
  const float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float v : logits)
    sum += std::exp(static_cast<double>(v) - top);
  return static_cast<float>(static_cast<double>(logits[static_cast<std::size_t>(id)]) - top -
                            std::log(sum));
}

}  // namespace

Gpt2Decoded generate(const PackedGpt2& model, const std::vector<std::int64_t>& prompt,
                     std::size_t max_new_tokens, const DecodeOptions& options,
                     std::int64_t end_of_text, std::size_t top) {
  check_decode_options(options);
  if (prompt.empty())
    throw Error(ErrorKind::bad_value, "generate", "the prompt has no token: give at least one");
  if (prompt.size() + max_new_tokens > model.positions) {
    throw Error(
        ErrorKind::bad_size, "generate",
        fmt::format("{} prompt tokens and {} new ones need {} positions, but the model has "
                    "{} (n_positions): lower --max-new-tokens to at most {}",
                    prompt.size(), max_new_tokens, prompt.size() + max_new_tokens, model.positions,
                    prompt.size() < model.positions ? model.positions - prompt.size() : 0))
        .driven_by({"T"});
  }
  Gpt2Decoded out;
  Gpt2Generator generator(model, prompt.size() + max_new_tokens);
  out.cache_bytes = cache_bytes(generator.cache());
  out.workspace_bytes = generator.workspace_bytes();
  Rng rng(options.seed);
  DecodeOptions shown = options.sample ? options : DecodeOptions{};  // greedy: the plain softmax
  const auto start = std::chrono::steady_clock::now();
  const std::vector<float>* logits = &generator.prefill(prompt);
  out.prefill_seconds = seconds_since(start);
  const auto later = std::chrono::steady_clock::now();
  for (std::size_t n = 0; n < max_new_tokens; ++n) {
    if (n > 0) logits = &generator.step(out.tokens.back());
    Gpt2DecodeStep step;
    const std::vector<float> probabilities = sampling_distribution(*logits, shown);
    step.pick = options.sample ? draw_token(probabilities, rng)
                               : std::max_element(logits->begin(), logits->end()) - logits->begin();
    step.log_prob = log_probability(*logits, step.pick);
    step.candidates = static_cast<std::size_t>(std::count_if(
        probabilities.begin(), probabilities.end(), [](float p) { return p > 0.0f; }));
    // The most probable of the distribution drawn from, most probable first (ties: lower id).
    std::vector<std::int64_t> order(probabilities.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      order[i] = static_cast<std::int64_t>(i);
    const std::size_t k = std::min(top, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](std::int64_t a, std::int64_t b) {
                        const float pa = probabilities[static_cast<std::size_t>(a)];
                        const float pb = probabilities[static_cast<std::size_t>(b)];
                        return pa != pb ? pa > pb : a < b;
                      });
    for (std::size_t i = 0; i < k; ++i)
      step.top.push_back({order[i], probabilities[static_cast<std::size_t>(order[i])]});
    out.tokens.push_back(step.pick);
    out.steps.push_back(std::move(step));
    if (out.tokens.back() == end_of_text) {
      out.ended = true;
      break;
    }
  }
  out.step_seconds = seconds_since(later);
  return out;
}

}  // namespace attn
