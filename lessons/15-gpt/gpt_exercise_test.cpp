// Grades lesson 15's exercise against transformers' GPT2Block run by PyTorch
// (data/generator/exercise_gpt.py), loaded into the exercise's structs by state_dict key, and
// against what the causal mask must guarantee. Tags: [gpt] the lesson, [points=N] the marks,
// [.hidden] shown after the due date. The student's functions are called only through
// STUDENT(...), and expected values are used only in checks (see course/harness/grading.hpp).
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpt_exercise.hpp"
#include "grading.hpp"

using attn::Tensor3;
using attn::Tensor4;
using attn::exercise::CausalAttentionSteps;
using attn::exercise::GptBlock;
using attn::exercise::GptBlockSteps;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;
using attn::grading::load_parameters;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

struct Case {
  std::string weights, sample;
  std::size_t d_model, heads, d_inner;
  std::string prefix() const { return "gpt/" + weights + "_" + sample + "_"; }
};

// The block PyTorch drew for the case, by state_dict key.
GptBlock load_block(const Case& c) {
  GptBlock block = attn::exercise::gpt_block(c.d_model, c.heads, c.d_inner);
  load_parameters(block, "gpt/" + c.weights + ".");
  return block;
}

std::string call(const std::string& function, const Case& c, const Tensor3& x) {
  return function + "(" + c.weights + ", x " + attn::shape_string_of(x) + ")";
}

// Every step of the attention against PyTorch's.
void check_attention(const Case& c) {
  const GptBlock block = load_block(c);
  const Tensor3 x = input<3>(c.prefix() + "x");
  const CausalAttentionSteps steps = STUDENT(attn::exercise::causal_self_attention(block.attn, x));
  const std::string what = call("causal_self_attention", c, x);
  const std::vector<std::pair<std::string, const Tensor4*>> heads = {{"query", &steps.query},
                                                                     {"key", &steps.key},
                                                                     {"value", &steps.value},
                                                                     {"scores", &steps.scores},
                                                                     {"weights", &steps.weights}};
  for (const auto& [field, got] : heads)
    check_close(what + "." + field, *got, expected<4>(c.prefix() + "attention_" + field),
                kTolerance);
  check_close(what + ".context", steps.context, expected<3>(c.prefix() + "attention_context"),
              kTolerance);
  check_close(what + ".output", steps.output, expected<3>(c.prefix() + "attention_output"),
              kTolerance);
}

GptBlockSteps run_block(const Case& c, const Tensor3& x) {
  const GptBlock block = load_block(c);
  return STUDENT(attn::exercise::forward(block, x));
}

// Every step of the block against PyTorch's.
void check_block(const Case& c) {
  const Tensor3 x = input<3>(c.prefix() + "x");
  const GptBlockSteps steps = run_block(c, x);
  const std::string what = call("forward", c, x);
  const std::vector<std::pair<std::string, const Tensor3*>> fields = {
      {"ln_1", &steps.ln_1}, {"attention", &steps.attention}, {"residual", &steps.residual},
      {"ln_2", &steps.ln_2}, {"hidden", &steps.hidden},       {"gelu", &steps.gelu},
      {"mlp", &steps.mlp},   {"output", &steps.output}};
  for (const auto& [field, got] : fields)
    check_close(what + "." + field, *got, expected<3>(c.prefix() + "block_" + field), kTolerance);
}

// Changing the last token of x moves no earlier row of the block's output, and moves the last.
void check_causal(const Case& c) {
  const Tensor3 x = input<3>(c.prefix() + "x");
  const GptBlockSteps before = run_block(c, x);
  check_close(call("forward", c, x) + ".output", before.output,
              expected<3>(c.prefix() + "block_output"), kTolerance);
  const GptBlockSteps after = run_block(c, input<3>(c.prefix() + "x_last_changed"));
  REQUIRE(before.output.dimension() == 3);
  REQUIRE(after.output.shape() == before.output.shape());
  const std::size_t tokens = before.output.shape(1);
  REQUIRE(tokens >= 2);
  for (std::size_t b = 0; b < before.output.shape(0); ++b)
    for (std::size_t t = 0; t + 1 < tokens; ++t)
      for (std::size_t d = 0; d < before.output.shape(2); ++d) {
        INFO("output(" << b << ", " << t << ", " << d << ") moved from " << before.output(b, t, d)
                       << " to " << after.output(b, t, d) << " when token " << tokens - 1
                       << " changed");
        CHECK(after.output(b, t, d) == before.output(b, t, d));
      }
  double moved = 0.0;
  for (std::size_t b = 0; b < before.output.shape(0); ++b)
    for (std::size_t d = 0; d < before.output.shape(2); ++d)
      moved += std::abs(after.output(b, tokens - 1, d) - before.output(b, tokens - 1, d));
  INFO("the last row moved by " << moved << " in all");
  CHECK(moved > 1e-3);
}

const Case kSmall{"block_d8_h2_f16", "b2_t5", 8, 2, 16};
const Case kThreeHeads{"block_d12_h3_f20", "b1_t6", 12, 3, 20};

}  // namespace

TEST_CASE("conv1d matches the Conv1D of transformers on c_attn and x 2x5x8", "[gpt][points=1]") {
  const GptBlock block = load_block(kSmall);
  const Tensor3 x = input<3>(kSmall.prefix() + "x");
  const Tensor3 y = STUDENT(attn::exercise::conv1d(block.attn.c_attn, x));
  check_close("conv1d(c_attn (8,24), x (2,5,8))", y, expected<3>(kSmall.prefix() + "c_attn"),
              kTolerance);
}

TEST_CASE("causal_self_attention matches PyTorch step by step with D 8 and 2 heads",
          "[gpt][points=3]") {
  check_attention(kSmall);
}

TEST_CASE("causal attention weights are zero above the diagonal and each row sums to 1",
          "[gpt][points=1]") {
  const GptBlock block = load_block(kThreeHeads);
  const Tensor3 x = input<3>(kThreeHeads.prefix() + "x");
  const CausalAttentionSteps steps = STUDENT(attn::exercise::causal_self_attention(block.attn, x));
  check_close("causal_self_attention(x (1,6,12)).output", steps.output,
              expected<3>(kThreeHeads.prefix() + "attention_output"), kTolerance);
  REQUIRE(steps.weights.dimension() == 4);
  REQUIRE(steps.weights.shape(2) == 6);
  REQUIRE(steps.weights.shape(3) == 6);
  for (std::size_t h = 0; h < steps.weights.shape(1); ++h)
    for (std::size_t i = 0; i < 6; ++i) {
      double sum = 0.0;
      for (std::size_t j = 0; j < 6; ++j) {
        sum += steps.weights(0, h, i, j);
        if (j > i) {
          INFO("head " << h << ", query " << i << " puts weight " << steps.weights(0, h, i, j)
                       << " on the later key " << j);
          CHECK(steps.weights(0, h, i, j) == 0.0f);
        }
      }
      INFO("head " << h << ", query " << i << ": the weights sum to " << sum);
      CHECK(std::abs(sum - 1.0) <= 1e-5);
    }
}

TEST_CASE("forward matches PyTorch GPT2Block step by step with D 8 and 2 heads and F 16",
          "[gpt][points=3]") {
  check_block(kSmall);
}

TEST_CASE("forward matches PyTorch GPT2Block on 6 tokens with 3 heads", "[gpt][points=2]") {
  check_block(kThreeHeads);
}

TEST_CASE("no output row moves when a later token changes", "[gpt][points=2]") {
  check_causal(kSmall);
}

TEST_CASE("forward and causal_self_attention refuse weights that do not fit", "[gpt][points=1]") {
  const Tensor3 x = input<3>(kSmall.prefix() + "x");
  const GptBlockSteps fits = run_block(kSmall, x);
  check_close("forward(block, x (2,5,8)).output", fits.output,
              expected<3>(kSmall.prefix() + "block_output"), kTolerance);
  GptBlock three_heads = load_block(kSmall);
  three_heads.attn.heads = 3;  // 3 does not divide D = 8
  CHECK_THROWS_AS(STUDENT(attn::exercise::causal_self_attention(three_heads.attn, x)),
                  std::invalid_argument);
  const Tensor3 wider({2, 5, 9}, 0.5f);  // D = 9 for weights of D = 8
  const GptBlock block = load_block(kSmall);
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(block, wider)), std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::conv1d(block.mlp.c_proj, x)), std::invalid_argument);
}

// BEGIN HIDDEN TESTS
TEST_CASE("one head: attention and the block on one token and on 7 tokens",
          "[gpt][points=2][.hidden]") {
  const Case one{"block_d6_h1_f10", "b3_t1", 6, 1, 10};
  const Case seven{"block_d6_h1_f10", "b2_t7", 6, 1, 10};
  check_attention(one);
  check_block(one);
  check_attention(seven);
  check_block(seven);
  check_causal(seven);
}

TEST_CASE("causal_self_attention matches PyTorch with 3 heads of size 4",
          "[gpt][points=1][.hidden]") {
  check_attention(kThreeHeads);
}
// END HIDDEN TESTS
