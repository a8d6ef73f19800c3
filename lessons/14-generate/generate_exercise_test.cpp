// Grades lesson 14's exercise: sampling against Hugging Face's warpers written out in torch, and
// the KV-cache step against seed 001's MultiHeadAttention on the whole prefix under the causal
// mask (data/generator/exercise_generate.py). Tags: [generate] the lesson, [points=N] the marks,
// [.hidden] shown after the due date. The student's functions are called only through
// STUDENT(...), and expected values are used only in checks (see course/harness/grading.hpp).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "generate_exercise.hpp"
#include "grading.hpp"

using attn::FusedMultiHead;
using attn::Tensor1;
using attn::Tensor3;
using attn::Tensor4;
using attn::exercise::CachedAttention;
using attn::exercise::SampledToken;
using attn::exercise::SamplingSettings;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;
using attn::grading::load_parameters;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

// One sampling case: its logits, special ids and settings, drawn once per u of its draws; the
// probabilities and every token against torch's.
void check_sampling(const std::string& name) {
  const std::string prefix = "generate/sample_" + name + "_";
  const Tensor1 logits = input<1>(prefix + "logits");
  const Tensor1 settings = input<1>(prefix + "settings"), draws = input<1>(prefix + "draws");
  std::vector<std::int64_t> special;
  for (const float id : input<1>(prefix + "special"))
    special.push_back(static_cast<std::int64_t>(id));
  const SamplingSettings sampling{settings(0), static_cast<std::size_t>(settings(1)), settings(2)};
  Tensor1 tokens = Tensor1::from_shape({draws.size()});  // as float, for check_close
  for (std::size_t i = 0; i < draws.size(); ++i) {
    const SampledToken sampled =
        STUDENT(attn::exercise::sample_next(logits, special, sampling, draws(i)));
    const std::string call =
        fmt::format("sample_next({} logits, temperature {:g}, top_k {}, top_p {:g}, uniform {:g})",
                    name, sampling.temperature, sampling.top_k, sampling.top_p, draws(i));
    check_close(call + ".probabilities", sampled.probabilities,
                expected<1>(prefix + "probabilities"), kTolerance);
    tokens(i) = static_cast<float>(sampled.token);
  }
  check_close("the tokens sample_next(" + name + ") drew, one per uniform", tokens,
              expected<1>(prefix + "tokens"), {0.0, 0.0});
}

// The layer PyTorch drew for `weights` (D, H), by state_dict key.
FusedMultiHead load_layer(const std::string& weights, std::size_t d_model, std::size_t heads) {
  attn::Rng rng(0);
  FusedMultiHead layer = std::get<FusedMultiHead>(
      attn::init_multi_head(rng, attn::MultiHeadVariant::fused, d_model, heads));
  load_parameters(layer, "generate/" + weights + ".");
  return layer;
}

struct Prefix {
  std::string weights;
  std::size_t d_model, heads, batch, tokens;
  std::string name() const {
    return "generate/" + weights + "_b" + std::to_string(batch) + "_t" + std::to_string(tokens);
  }
};

// Row t of x (B,T,D) as (B,1,D).
Tensor3 token_row(const Tensor3& x, std::size_t t) {
  Tensor3 row({x.shape(0), 1, x.shape(2)});
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t d = 0; d < x.shape(2); ++d)
      row(b, 0, d) = x(b, t, d);
  return row;
}

// Every token of the prefix in turn from an empty cache, each step fed the cache the last one
// returned: each step's output, weights and cache against the causal attention on the prefix.
void check_decoding(const Prefix& p) {
  const FusedMultiHead layer = load_layer(p.weights, p.d_model, p.heads);
  const Tensor3 x = input<3>(p.name() + "_x");
  const std::size_t size = p.d_model / p.heads;
  Tensor4 keys({p.batch, p.heads, 0, size}), values({p.batch, p.heads, 0, size});
  for (std::size_t t = 0; t < p.tokens; ++t) {
    const Tensor3 row = token_row(x, t);
    const CachedAttention step =
        STUDENT(attn::exercise::attend_with_cache(layer, keys, values, row));
    const std::string call = "attend_with_cache(step " + std::to_string(t) + ", cache " +
                             attn::shape_string_of(keys) + ")";
    const std::string step_name = p.name() + "_step" + std::to_string(t) + "_";
    check_close(call + ".output", step.output, expected<3>(step_name + "output"), kTolerance);
    check_close(call + ".weights", step.weights, expected<4>(step_name + "weights"), kTolerance);
    check_close(call + ".keys", step.keys, expected<4>(step_name + "keys"), kTolerance);
    check_close(call + ".values", step.values, expected<4>(step_name + "values"), kTolerance);
    keys = step.keys;
    values = step.values;
  }
}

const Prefix kSixTokens{"kv_d8_h2", 8, 2, 1, 6};

}  // namespace

TEST_CASE("sample_next with temperature 0.7 alone is the softmax of logits over 0.7",
          "[generate][points=2]") {
  check_sampling("temperature");
}

TEST_CASE("sample_next keeps the 4 most likely tokens and renormalises", "[generate][points=1]") {
  check_sampling("top_k");
}

TEST_CASE("sample_next keeps the smallest set of most likely tokens holding at least p",
          "[generate][points=1]") {
  check_sampling("top_p");
}

TEST_CASE("sample_next applies top-p to what top-k kept after renormalising it",
          "[generate][points=2]") {
  // Hugging Face's order: top-2 gives 0.706 and 0.294, and 0.706 >= 0.7 keeps one token.
  check_sampling("top_k_then_top_p");
}

TEST_CASE("sample_next never draws a special token even when it is the most likely",
          "[generate][points=1]") {
  check_sampling("special_most_likely");
}

TEST_CASE("sample_next refuses a temperature of 0 and a top_p above 1 or a uniform of 1",
          "[generate][points=1]") {
  const Tensor1 logits = input<1>("generate/sample_temperature_logits");
  const SampledToken fits =
      STUDENT(attn::exercise::sample_next(logits, {0, 1}, SamplingSettings{0.7f, 0, 1.0f}, 0.37f));
  check_close("sample_next(temperature logits, 0.7).probabilities", fits.probabilities,
              expected<1>("generate/sample_temperature_probabilities"), kTolerance);
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::sample_next(logits, {}, SamplingSettings{0.0f, 0, 1.0f}, 0.5f)),
      std::invalid_argument);
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::sample_next(logits, {}, SamplingSettings{1.0f, 0, 1.5f}, 0.5f)),
      std::invalid_argument);
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::sample_next(logits, {}, SamplingSettings{1.0f, 0, 1.0f}, 1.0f)),
      std::invalid_argument);
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::sample_next(logits, {}, SamplingSettings{1.0f, 0, 0.0f}, 0.5f)),
      std::invalid_argument);
}

TEST_CASE("sample_next with top_k 1 is greedy and top_p stops at the first set holding p",
          "[generate][points=1]") {
  const Tensor1 four{0.5f, 2.0f, 1.0f, -1.0f};
  const SampledToken greedy =
      STUDENT(attn::exercise::sample_next(four, {}, SamplingSettings{1.0f, 1, 1.0f}, 0.9f));
  check_close("sample_next((0.5, 2, 1, -1), top_k 1).probabilities", greedy.probabilities,
              Tensor1{0.0f, 1.0f, 0.0f, 0.0f}, kTolerance);
  CHECK(greedy.token == 1);
  // Two equal logits: 0.5 each, exactly. The first token alone holds p = 0.5: the second goes.
  const Tensor1 two{0.0f, 0.0f};
  const SampledToken half =
      STUDENT(attn::exercise::sample_next(two, {}, SamplingSettings{1.0f, 0, 0.5f}, 0.9f));
  check_close("sample_next((0, 0), top_p 0.5).probabilities", half.probabilities,
              Tensor1{1.0f, 0.0f}, kTolerance);
  CHECK(half.token == 0);
}

TEST_CASE("attend_with_cache on a cache of 5 tokens matches the last row of causal attention",
          "[generate][points=2]") {
  const std::string name = kSixTokens.name();
  const FusedMultiHead layer = load_layer(kSixTokens.weights, 8, 2);
  const Tensor3 x = input<3>(name + "_x");
  const CachedAttention step = STUDENT(attn::exercise::attend_with_cache(
      layer, input<4>(name + "_cached_keys"), input<4>(name + "_cached_values"), token_row(x, 5)));
  const std::string call = "attend_with_cache(cache (1,2,5,4), x_new (1,1,8))";
  check_close(call + ".output", step.output, expected<3>(name + "_step5_output"), kTolerance);
  check_close(call + ".weights", step.weights, expected<4>(name + "_step5_weights"), kTolerance);
  check_close(call + ".keys", step.keys, expected<4>(name + "_step5_keys"), kTolerance);
  check_close(call + ".values", step.values, expected<4>(name + "_step5_values"), kTolerance);
}

TEST_CASE("decoding 6 tokens from an empty cache equals recomputing the prefix at every step",
          "[generate][points=3]") {
  check_decoding(kSixTokens);
}

TEST_CASE("attend_with_cache refuses a cache of another head size and an x_new of two tokens",
          "[generate][points=1]") {
  const std::string name = kSixTokens.name();
  const FusedMultiHead layer = load_layer(kSixTokens.weights, 8, 2);
  const Tensor3 x = input<3>(name + "_x");
  const Tensor4 keys = input<4>(name + "_cached_keys"), values = input<4>(name + "_cached_values");
  const CachedAttention fits =
      STUDENT(attn::exercise::attend_with_cache(layer, keys, values, token_row(x, 5)));
  check_close("attend_with_cache(cache (1,2,5,4)).output", fits.output,
              expected<3>(name + "_step5_output"), kTolerance);
  const Tensor4 wide({1, 2, 5, 8}, 0.5f);
  const Tensor3 two_tokens({1, 2, 8}, 0.5f);
  CHECK_THROWS_AS(STUDENT(attn::exercise::attend_with_cache(layer, wide, wide, token_row(x, 5))),
                  std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::attend_with_cache(layer, keys, values, two_tokens)),
                  std::invalid_argument);
  const Tensor4 six_values({1, 2, 6, 4}, 0.5f);  // 6 cached values for 5 cached keys
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::attend_with_cache(layer, keys, six_values, token_row(x, 5))),
      std::invalid_argument);
}

// BEGIN HIDDEN TESTS
TEST_CASE("sample_next with every filter on 33 tokens and with a temperature of 0.05",
          "[generate][points=2][.hidden]") {
  check_sampling("all_of_them");
  check_sampling("cold");
}

TEST_CASE("decoding from an empty cache with two sequences and with one head",
          "[generate][points=2][.hidden]") {
  check_decoding({"kv_d6_h1", 6, 1, 2, 3});
  check_decoding({"kv_d12_h3", 12, 3, 2, 5});
}
// END HIDDEN TESTS
