// Grades lesson 13's exercise against seed 001's DecoderBlock run by PyTorch
// (data/generator/exercise_decoder.py), loaded into attn's struct by state_dict key, and against
// what the causal mask must guarantee. Tags: [decoder] the lesson, [points=N] the marks,
// [.hidden] shown after the due date. The student's functions are called only through
// STUDENT(...), and expected values are used only in checks (see course/harness/grading.hpp).
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "decoder_exercise.hpp"
#include "grading.hpp"

using attn::DecoderBlock;
using attn::Tensor2;
using attn::Tensor3;
using attn::exercise::DecoderBlockSteps;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::ids_of;
using attn::grading::input;
using attn::grading::load_parameters;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

// The block PyTorch drew for `weights` (D, H, F), by state_dict key.
DecoderBlock load_block(const std::string& weights, std::size_t d_model, std::size_t heads,
                        std::size_t d_ff) {
  attn::TransformerConfig config;
  config.d_model = d_model;
  config.heads = heads;
  config.d_ff = d_ff;
  attn::Rng rng(0);
  DecoderBlock block = attn::init_decoder_block(rng, config);
  load_parameters(block, "decoder/" + weights + ".");
  return block;
}

struct Case {
  std::string weights, sample;
  std::size_t d_model, heads, d_ff;
  std::string prefix() const { return "decoder/" + weights + "_" + sample + "_"; }
};

DecoderBlockSteps run(const Case& c, const Tensor3& x) {
  const DecoderBlock block = load_block(c.weights, c.d_model, c.heads, c.d_ff);
  const Tensor3 memory = input<3>(c.prefix() + "memory");
  const Tensor3 target_keep = input<3>(c.prefix() + "target_keep");
  const Tensor2 source_keep = input<2>(c.prefix() + "source_keep");
  return STUDENT(attn::exercise::forward(block, x, memory, target_keep, source_keep));
}

// Every step against PyTorch's.
void check_case(const Case& c) {
  const Tensor3 x = input<3>(c.prefix() + "x");
  const DecoderBlockSteps steps = run(c, x);
  const std::string call = "forward(block " + c.weights + ", x " + attn::shape_string_of(x) + ")";
  const std::vector<std::pair<std::string, const Tensor3*>> fields = {
      {"norm_1", &steps.norm_1},
      {"self_attention", &steps.self_attention},
      {"residual_1", &steps.residual_1},
      {"norm_2", &steps.norm_2},
      {"cross_attention", &steps.cross_attention},
      {"residual_2", &steps.residual_2},
      {"norm_3", &steps.norm_3},
      {"feed_forward", &steps.feed_forward},
      {"output", &steps.output}};
  for (const auto& [field, got] : fields)
    check_close(call + "." + field, *got, expected<3>(c.prefix() + field), kTolerance);
}

// Changing the last token of x moves no earlier row of the output.
void check_causal(const Case& c) {
  const DecoderBlockSteps before = run(c, input<3>(c.prefix() + "x"));
  const DecoderBlockSteps after = run(c, input<3>(c.prefix() + "x_last_changed"));
  REQUIRE(before.output.dimension() == 3);
  REQUIRE(after.output.shape() == before.output.shape());
  const std::size_t tokens = before.output.shape(1);
  REQUIRE(tokens >= 2);
  for (std::size_t b = 0; b < before.output.shape(0); ++b) {
    for (std::size_t t = 0; t + 1 < tokens; ++t) {
      for (std::size_t d = 0; d < before.output.shape(2); ++d) {
        INFO("output(" << b << ", " << t << ", " << d << ") moved from " << before.output(b, t, d)
                       << " to " << after.output(b, t, d) << " when token " << tokens - 1
                       << " changed");
        CHECK(after.output(b, t, d) == before.output(b, t, d));
      }
    }
  }
  // and the last row does move: it reads its own token
  double moved = 0.0;
  for (std::size_t b = 0; b < before.output.shape(0); ++b)
    for (std::size_t d = 0; d < before.output.shape(2); ++d)
      moved += std::abs(after.output(b, tokens - 1, d) - before.output(b, tokens - 1, d));
  INFO("the last row moved by " << moved << " in all");
  CHECK(moved > 1e-3);
}

const Case kSmall{"block_d8_h2_f16", "b2_t4_s6", 8, 2, 16};
const Case kThreeHeads{"block_d12_h3_f24", "b1_t5_s3", 12, 3, 24};

}  // namespace

TEST_CASE("target_mask is causal and blind to padding on ids 2x5", "[decoder][points=1]") {
  const attn::Ids ids = ids_of(input<2>("decoder/mask_b2_t5_ids"));
  const Tensor3 keep = STUDENT(attn::exercise::target_mask(ids, 0));
  check_close("target_mask(ids (2,5), pad 0)", keep, expected<3>("decoder/mask_b2_t5_keep"),
              kTolerance);
}

TEST_CASE("forward matches PyTorch's DecoderBlock step by step with T 4 and S 6 and padding",
          "[decoder][points=3]") {
  check_case(kSmall);
}

TEST_CASE("forward matches PyTorch on 5 target and 3 source tokens with 3 heads",
          "[decoder][points=2]") {
  check_case(kThreeHeads);
}

TEST_CASE("no output row moves when a later target token changes", "[decoder][points=2]") {
  check_causal(kSmall);
}

TEST_CASE("forward refuses masks that do not fit x and the memory", "[decoder][points=1]") {
  const Tensor3 x = input<3>(kSmall.prefix() + "x");
  const DecoderBlockSteps fits = run(kSmall, x);
  check_close("forward(block, x (2,4,8)).output", fits.output,
              expected<3>(kSmall.prefix() + "output"), kTolerance);
  const DecoderBlock block = load_block(kSmall.weights, 8, 2, 16);
  const Tensor3 memory = input<3>(kSmall.prefix() + "memory");
  const Tensor3 target_keep = input<3>(kSmall.prefix() + "target_keep");
  const Tensor2 source_keep = input<2>(kSmall.prefix() + "source_keep");
  const Tensor3 square_of_three({2, 3, 3}, 1.0f);
  const Tensor2 four_sources({2, 4}, 1.0f);
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(block, x, memory, square_of_three, source_keep)),
                  std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(block, x, memory, target_keep, four_sources)),
                  std::invalid_argument);
  const Tensor3 one_key_more({2, 4, 5}, 1.0f);  // 5 keys for 4 target tokens
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(block, x, memory, one_key_more, source_keep)),
                  std::invalid_argument);
}

// BEGIN HIDDEN TESTS
TEST_CASE("forward matches PyTorch with one head on one token and on 6 padded target tokens",
          "[decoder][points=2][.hidden]") {
  check_case({"block_d6_h1_f8", "b3_t1_s1", 6, 1, 8});
  check_case({"block_d6_h1_f8", "b2_t6_s5", 6, 1, 8});
  check_causal({"block_d6_h1_f8", "b2_t6_s5", 6, 1, 8});
}

TEST_CASE("target_mask of one token keeps it", "[decoder][points=1][.hidden]") {
  const attn::Ids ids = ids_of(input<2>("decoder/mask_b1_t1_ids"));
  const Tensor3 keep = STUDENT(attn::exercise::target_mask(ids, 0));
  check_close("target_mask(ids (1,1), pad 0)", keep, expected<3>("decoder/mask_b1_t1_keep"),
              kTolerance);
}
// END HIDDEN TESTS
