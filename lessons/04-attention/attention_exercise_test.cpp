// Grades lesson 04's exercise against PyTorch (data/generator/exercise_attention.py) and against
// what any attention must satisfy. Tags: [attention] the lesson, [points=N] the marks, [.hidden]
// shown after the due date. The student's functions are called only through STUDENT(...), and
// expected values are used only in checks (see course/harness/grading.hpp).
//
// Legend: B batch, T queries, S keys, D model width, hs head size, hv value size.
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_exercise.hpp"
#include "grading.hpp"

using attn::AttentionSteps;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

// A tensor the test gives the student's code, and one PyTorch computed, of the case `name`.
Tensor3 given(const std::string& name, const std::string& what) {
  return input<3>("attention/" + name + "_" + what);
}
Tensor3 computed(const std::string& name, const std::string& what) {
  return expected<3>("attention/" + name + "_" + what);
}

// Compares the steps after the inputs (scores, scaled scores, weights, output) with PyTorch's.
void check_steps(const std::string& call, const AttentionSteps& got, const std::string& name) {
  check_close(call + ".scores", got.scores, computed(name, "scores"), kTolerance);
  check_close(call + ".scaled_scores", got.scaled_scores, computed(name, "scaled_scores"),
              kTolerance);
  check_close(call + ".weights", got.weights, computed(name, "weights"), kTolerance);
  check_close(call + ".output", got.output, computed(name, "output"), kTolerance);
}

// scaled_dot_product_attention on the fixture's queries, keys and values (and its mask if `masked`).
AttentionSteps check_case(const std::string& name, bool masked = false) {
  const Tensor3 queries = given(name, "queries"), keys = given(name, "keys"),
                values = given(name, "values");
  const Tensor3 mask = masked ? given(name, "mask") : Tensor3();
  const Tensor3* mask_or_null = masked ? &mask : nullptr;
  const std::string call = "scaled_dot_product_attention(queries " +
                           attn::shape_string_of(queries) + ", keys " +
                           attn::shape_string_of(keys) + ", values " +
                           attn::shape_string_of(values) + (masked ? ", mask)" : ", no mask)");
  const AttentionSteps got =
      STUDENT(attn::exercise::scaled_dot_product_attention(queries, keys, values, mask_or_null));
  check_close(call + ".queries", got.queries, queries, kTolerance);
  check_close(call + ".keys", got.keys, keys, kTolerance);
  check_close(call + ".values", got.values, values, kTolerance);
  check_steps(call, got, name);
  return got;
}

attn::Linear projection(const std::string& name, const std::string& role) {
  return attn::Linear{input<2>("attention/" + name + "_" + role + "_weight"),
                      input<1>("attention/" + name + "_" + role + "_bias"), true};
}

attn::AttentionHead head_of(const std::string& name) {
  return attn::AttentionHead{projection(name, "q"), projection(name, "k"), projection(name, "v")};
}

// forward(head, x) against PyTorch's nn.Linear projections and attention, every step.
void check_head(const std::string& name, const Tensor3* mask) {
  const Tensor3 x = given(name, "x");
  const attn::AttentionHead head = head_of(name);
  const std::string call = "forward(AttentionHead " + name + ", x " + attn::shape_string_of(x) +
                           (mask != nullptr ? ", mask)" : ", no mask)");
  const AttentionSteps got = STUDENT(attn::exercise::forward(head, x, mask));
  check_close(call + ".queries", got.queries, computed(name, "queries"), kTolerance);
  check_close(call + ".keys", got.keys, computed(name, "keys"), kTolerance);
  check_close(call + ".values", got.values, computed(name, "values"), kTolerance);
  check_steps(call, got, name);
}

}  // namespace

TEST_CASE("scaled_dot_product_attention matches PyTorch with 4 queries and 5 keys (B=2 hs=6)",
          "[attention][points=2]") {
  check_case("b2_t4_s5");
}

TEST_CASE("scaled_dot_product_attention matches PyTorch at T=1 with wider values and at B=3 T=S=5",
          "[attention][points=2]") {
  check_case("b1_t1_s7_hv5");
  check_case("b3_t5_s5");
}

TEST_CASE("identical keys give uniform weights and the mean of the values",
          "[attention][points=2]") {
  const Tensor3 queries = given("b2_t4_s5", "queries"), values = given("b2_t4_s5", "values");
  Tensor3 keys = given("b2_t4_s5", "keys");  // (2,5,6): every key of a sequence set to its first
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 1; s < 5; ++s)
      for (std::size_t i = 0; i < 6; ++i)
        keys(b, s, i) = keys(b, 0, i);
  Tensor3 scores({2, 4, 5}), uniform({2, 4, 5}), mean({2, 4, 6});
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t t = 0; t < 4; ++t) {
      float dot = 0.0f;  // the same score against every key
      for (std::size_t i = 0; i < 6; ++i)
        dot += queries(b, t, i) * keys(b, 0, i);
      for (std::size_t s = 0; s < 5; ++s) {
        scores(b, t, s) = dot;
        uniform(b, t, s) = 0.2f;
      }
      for (std::size_t j = 0; j < 6; ++j) {
        float sum = 0.0f;
        for (std::size_t s = 0; s < 5; ++s)
          sum += values(b, s, j);
        mean(b, t, j) = sum / 5.0f;
      }
    }
  }
  const AttentionSteps got =
      STUDENT(attn::exercise::scaled_dot_product_attention(queries, keys, values, nullptr));
  check_close("scaled_dot_product_attention(queries (2,4,6), 5 equal keys, values (2,5,6)).scores",
              got.scores, scores, kTolerance);
  check_close("scaled_dot_product_attention(queries (2,4,6), 5 equal keys, values (2,5,6)).weights",
              got.weights, uniform, kTolerance);
  check_close(
      "scaled_dot_product_attention(queries (2,4,6), 5 equal keys, values (2,5,6)).output (the mean value)",
      got.output, mean, kTolerance);
}

TEST_CASE("a causal mask gives the future keys zero weight and rows still sum to one",
          "[attention][points=2]") {
  const AttentionSteps got = check_case("causal_b2_t5", true);
  REQUIRE(got.weights.shape() == (std::array<std::size_t, 3>{2, 5, 5}));
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t t = 0; t < 5; ++t) {
      double sum = 0.0;
      for (std::size_t s = 0; s < 5; ++s) {
        sum += got.weights(b, t, s);
        if (s > t) {
          INFO("weights(" << b << ", " << t << ", " << s << ") = " << got.weights(b, t, s)
                          << ", expected 0");
          CHECK(got.weights(b, t, s) == 0.0f);
        }
      }
      INFO("row (" << b << ", " << t << ", :) sums to " << sum << ", expected 1");
      CHECK(std::fabs(sum - 1.0) < 1e-5);
    }
  }
}

TEST_CASE("scaled_dot_product_attention adds a float mask after the scaling",
          "[attention][points=1]") {
  check_case("float_mask_b2_t3_s4", true);
}

TEST_CASE("scaled_dot_product_attention refuses shapes that do not fit", "[attention][points=1]") {
  const Tensor3 queries = given("b2_t4_s5", "queries"),
                keys = given("b2_t4_s5", "keys");            // (2,4,6) (2,5,6)
  const Tensor3 values = given("b2_t4_s5", "values");        // (2,5,6)
  const Tensor3 other_size = given("b3_t5_s5", "keys");      // (3,5,4)
  const Tensor3 wrong_mask = given("causal_b2_t5", "mask");  // (2,5,5)
  // The same queries, keys and values without a mask fit: every step as PyTorch's.
  check_case("b2_t4_s5");
  INFO("keys (3,5,4) for queries (2,4,6)");
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::scaled_dot_product_attention(queries, other_size, values, nullptr)),
      std::invalid_argument);
  INFO("values (2,4,6): 4 values for 5 keys");
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::scaled_dot_product_attention(queries, keys, queries, nullptr)),
      std::invalid_argument);
  INFO("mask (2,5,5) for scores (2,4,5)");
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::scaled_dot_product_attention(queries, keys, values, &wrong_mask)),
      std::invalid_argument);
  const Tensor3 narrow_keys = xt::zeros<float>({2, 5, 4});  // hs 4 for queries of hs 6
  INFO("keys (2,5,4) for queries (2,4,6)");
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::scaled_dot_product_attention(queries, narrow_keys, values, nullptr)),
      std::invalid_argument);
  const Tensor3 wide_mask = xt::zeros<float>({2, 4, 6});  // 6 keys for scores (2,4,5)
  INFO("mask (2,4,6) for scores (2,4,5)");
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::scaled_dot_product_attention(queries, keys, values, &wide_mask)),
      std::invalid_argument);
}

TEST_CASE("attention_mask matches PyTorch for causal and padding masks and both",
          "[attention][points=2]") {
  const Tensor3 causal = STUDENT(attn::exercise::attention_mask(2, 5, true, {}));
  const Tensor3 padding = STUDENT(attn::exercise::attention_mask(2, 5, false, {3, 5}));
  const Tensor3 both = STUDENT(attn::exercise::attention_mask(3, 4, true, {2, 4, 1}));
  check_close("attention_mask(2, 5, causal, no lengths)", causal,
              expected<3>("attention/mask_causal_b2_t5"));
  check_close("attention_mask(2, 5, not causal, lengths {3, 5})", padding,
              expected<3>("attention/mask_padding_b2_t5"));
  check_close("attention_mask(3, 4, causal, lengths {2, 4, 1})", both,
              expected<3>("attention/mask_both_b3_t4"));
}

TEST_CASE("attention_mask refuses lengths of zero or past T and a list of the wrong size",
          "[attention][points=1]") {
  // Lengths from 1 to T fit.
  const Tensor3 padding = STUDENT(attn::exercise::attention_mask(2, 5, false, {3, 5}));
  const Tensor3 shortest = STUDENT(attn::exercise::attention_mask(1, 3, false, {1}));
  check_close("attention_mask(2, 5, not causal, lengths {3, 5})", padding,
              expected<3>("attention/mask_padding_b2_t5"));
  const float hidden = -std::numeric_limits<float>::infinity();
  check_close("attention_mask(1, 3, not causal, lengths {1})", shortest,
              Tensor3{{{0.0f, hidden, hidden}, {0.0f, hidden, hidden}, {0.0f, hidden, hidden}}});
  INFO("attention_mask(2, 5, causal, lengths {0, 5})");
  CHECK_THROWS_AS(STUDENT(attn::exercise::attention_mask(2, 5, true, {0, 5})),
                  std::invalid_argument);
  INFO("attention_mask(2, 5, not causal, lengths {3, 6})");
  CHECK_THROWS_AS(STUDENT(attn::exercise::attention_mask(2, 5, false, {3, 6})),
                  std::invalid_argument);
  INFO("attention_mask(3, 4, causal, lengths {2, 4}): 2 lengths for a batch of 3");
  CHECK_THROWS_AS(STUDENT(attn::exercise::attention_mask(3, 4, true, {2, 4})),
                  std::invalid_argument);
  INFO("attention_mask(1, 3, not causal, lengths {2, 3}): 2 lengths for a batch of 1");
  CHECK_THROWS_AS(STUDENT(attn::exercise::attention_mask(1, 3, false, {2, 3})),
                  std::invalid_argument);
}

TEST_CASE("forward of an AttentionHead matches PyTorch with D=7 and hs=3",
          "[attention][points=3]") {
  check_head("head_d7_hs3", nullptr);
}

TEST_CASE("forward of an AttentionHead commutes with shuffling the tokens",
          "[attention][points=1]") {
  const std::array<std::size_t, 5> order{3, 0, 4, 1,
                                         2};    // token t of the shuffled x is token order[t]
  const Tensor3 x = given("head_d7_hs3", "x");  // (2,5,7)
  Tensor3 shuffled(x.shape());
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 5; ++t)
      for (std::size_t d = 0; d < 7; ++d)
        shuffled(b, t, d) = x(b, order[t], d);
  const attn::AttentionHead head = head_of("head_d7_hs3");
  const AttentionSteps got = STUDENT(attn::exercise::forward(head, shuffled, nullptr));
  // PyTorch's output (2,5,3) with its rows, and weights (2,5,5) with its rows and columns, in
  // that order
  check_close("forward(AttentionHead, x (2,5,7) with tokens in order 3 0 4 1 2).output", got.output,
              computed("head_d7_hs3", "shuffled_output"), kTolerance);
  check_close("forward(AttentionHead, x (2,5,7) with tokens in order 3 0 4 1 2).weights",
              got.weights, computed("head_d7_hs3", "shuffled_weights"), kTolerance);
}

// BEGIN HIDDEN TESTS
TEST_CASE("scaled_dot_product_attention matches PyTorch with padding keys and T different from S",
          "[attention][points=2][.hidden]") {
  const AttentionSteps got = check_case("padded_b2_t3_s6", true);
  REQUIRE(got.weights.shape() == (std::array<std::size_t, 3>{2, 3, 6}));
  for (std::size_t t = 0; t < 3; ++t) {
    for (std::size_t s = 4; s < 6; ++s) {
      INFO("weights(0, " << t << ", " << s << ") = " << got.weights(0, t, s)
                         << " on a padding key, expected 0");
      CHECK(got.weights(0, t, s) == 0.0f);
    }
  }
}

TEST_CASE("forward of an AttentionHead matches PyTorch with a causal and padding mask",
          "[attention][points=2][.hidden]") {
  const Tensor3 mask = STUDENT(attn::exercise::attention_mask(2, 6, true, {6, 3}));
  check_close("attention_mask(2, 6, causal, lengths {6, 3})", mask,
              computed("head_masked_d5_hs2", "mask"));
  check_head("head_masked_d5_hs2", &mask);
}
// END HIDDEN TESTS
