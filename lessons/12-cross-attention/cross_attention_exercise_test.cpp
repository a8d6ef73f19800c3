// Grades lesson 12's exercise against seed 001's MultiHeadAttention run by PyTorch as
// cross-attention (data/generator/exercise_cross_attention.py), loaded into attn's FusedMultiHead
// by state_dict key, and against what the padding mask must guarantee. Tags: [cross-attention]
// the lesson, [points=N] the marks, [.hidden] shown after the due date. The student's functions
// are called only through STUDENT(...), and expected values are used only in checks (see
// course/harness/grading.hpp).
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cross_attention_exercise.hpp"
#include "grading.hpp"

using attn::FusedMultiHead;
using attn::MultiHeadSteps;
using attn::Tensor2;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::ids_of;
using attn::grading::input;
using attn::grading::load_parameters;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

// The layer PyTorch drew for `weights` (D, H), by state_dict key.
FusedMultiHead load_layer(const std::string& weights, std::size_t d_model, std::size_t heads) {
  attn::Rng rng(0);
  FusedMultiHead layer = std::get<FusedMultiHead>(
      attn::init_multi_head(rng, attn::MultiHeadVariant::fused, d_model, heads));
  load_parameters(layer, "cross-attention/" + weights + ".");
  return layer;
}

// One case: weights e.g. "layer_d8_h2", sample e.g. "b2_t3_s5"; every step against PyTorch's.
void check_case(const std::string& weights, const std::string& sample, std::size_t d_model,
                std::size_t heads) {
  const std::string prefix = "cross-attention/" + weights + "_" + sample + "_";
  const Tensor3 x = input<3>(prefix + "x"), memory = input<3>(prefix + "memory");
  const Tensor2 keep = input<2>(prefix + "keep");
  const FusedMultiHead layer = load_layer(weights, d_model, heads);
  const MultiHeadSteps steps = STUDENT(attn::exercise::cross_attention(layer, x, memory, keep));
  const std::string call = "cross_attention(" + weights + ", x " + attn::shape_string_of(x) +
                           ", memory " + attn::shape_string_of(memory) + ", keep)";
  check_close(call + ".queries", steps.queries, expected<4>(prefix + "queries"), kTolerance);
  check_close(call + ".keys", steps.keys, expected<4>(prefix + "keys"), kTolerance);
  check_close(call + ".values", steps.values, expected<4>(prefix + "values"), kTolerance);
  check_close(call + ".scores", steps.scores, expected<4>(prefix + "scores"), kTolerance);
  check_close(call + ".weights", steps.weights, expected<4>(prefix + "weights"), kTolerance);
  check_close(call + ".concatenated", steps.concatenated, expected<3>(prefix + "concatenated"),
              kTolerance);
  check_close(call + ".output", steps.output, expected<3>(prefix + "output"), kTolerance);
}

}  // namespace

TEST_CASE("source_mask keeps the real tokens and drops the padding of ids 3x6",
          "[cross-attention][points=1]") {
  const attn::Ids ids = ids_of(input<2>("cross-attention/mask_b3_s6_ids"));
  const Tensor2 keep = STUDENT(attn::exercise::source_mask(ids, 0));
  check_close("source_mask(ids (3,6), pad 0)", keep, expected<2>("cross-attention/mask_b3_s6_keep"),
              kTolerance);
}

TEST_CASE("cross_attention matches PyTorch step by step with T 3 and S 5 and a padded source",
          "[cross-attention][points=3]") {
  check_case("layer_d8_h2", "b2_t3_s5", 8, 2);
}

TEST_CASE("cross_attention matches PyTorch on 4 queries and 7 keys with 3 heads",
          "[cross-attention][points=2]") {
  check_case("layer_d12_h3", "b1_t4_s7", 12, 3);
}

TEST_CASE("padded keys get weight 0 and each row sums to 1 over the real keys",
          "[cross-attention][points=1]") {
  const std::string prefix = "cross-attention/layer_d8_h2_b2_t3_s5_";
  const Tensor3 x = input<3>(prefix + "x"), memory = input<3>(prefix + "memory");
  const Tensor2 keep = input<2>(prefix + "keep");
  const MultiHeadSteps steps =
      STUDENT(attn::exercise::cross_attention(load_layer("layer_d8_h2", 8, 2), x, memory, keep));
  REQUIRE(steps.weights.dimension() == 4);
  REQUIRE(steps.weights.shape(0) == 2);
  REQUIRE(steps.weights.shape(3) == 5);
  for (std::size_t b = 0; b < steps.weights.shape(0); ++b)
    for (std::size_t h = 0; h < steps.weights.shape(1); ++h)
      for (std::size_t t = 0; t < steps.weights.shape(2); ++t) {
        double sum = 0.0;
        for (std::size_t s = 0; s < steps.weights.shape(3); ++s) {
          INFO("weights(" << b << ", " << h << ", " << t << ", " << s << ") with keep "
                          << keep(b, s));
          if (keep(b, s) == 0.0f) CHECK(steps.weights(b, h, t, s) == 0.0f);
          sum += steps.weights(b, h, t, s);
        }
        INFO("row (" << b << ", " << h << ", " << t << ") sums to " << sum);
        CHECK(std::abs(sum - 1.0) < 1e-5);
      }
}

TEST_CASE("the output does not move when the padded memory rows change",
          "[cross-attention][points=2]") {
  // Padding is not read: other numbers in the padded rows of the memory give the same output.
  const std::string prefix = "cross-attention/layer_d8_h2_b2_t3_s5_";
  const FusedMultiHead layer = load_layer("layer_d8_h2", 8, 2);
  const Tensor3 x = input<3>(prefix + "x");
  const Tensor2 keep = input<2>(prefix + "keep");
  const MultiHeadSteps first =
      STUDENT(attn::exercise::cross_attention(layer, x, input<3>(prefix + "memory"), keep));
  const MultiHeadSteps second = STUDENT(
      attn::exercise::cross_attention(layer, x, input<3>(prefix + "memory_repadded"), keep));
  check_close("cross_attention(memory with other padding).output", second.output, first.output,
              kTolerance);
  check_close("cross_attention(memory).output", first.output, expected<3>(prefix + "output"),
              kTolerance);
}

TEST_CASE("cross_attention refuses a memory of another width or batch and a keep of another shape",
          "[cross-attention][points=1]") {
  const std::string prefix = "cross-attention/layer_d8_h2_b2_t3_s5_";
  const FusedMultiHead layer = load_layer("layer_d8_h2", 8, 2);
  const Tensor3 x = input<3>(prefix + "x"), memory = input<3>(prefix + "memory");
  const Tensor2 keep = input<2>(prefix + "keep");
  const MultiHeadSteps fits = STUDENT(attn::exercise::cross_attention(layer, x, memory, keep));
  check_close("cross_attention(x (2,3,8), memory (2,5,8)).output", fits.output,
              expected<3>(prefix + "output"), kTolerance);
  const Tensor3 narrow({2, 5, 6}, 0.5f), one_batch({1, 5, 8}, 0.5f);
  const Tensor2 wrong_keep({2, 3}, 1.0f);
  CHECK_THROWS_AS(STUDENT(attn::exercise::cross_attention(layer, x, narrow, keep)),
                  std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::cross_attention(layer, x, one_batch, keep)),
                  std::invalid_argument);
  CHECK_THROWS_AS(STUDENT(attn::exercise::cross_attention(layer, x, memory, wrong_keep)),
                  std::invalid_argument);
}

// BEGIN HIDDEN TESTS
TEST_CASE("cross_attention matches PyTorch with one head on one key and on a mostly padded source",
          "[cross-attention][points=2][.hidden]") {
  check_case("layer_d6_h1", "b3_t1_s1", 6, 1);
  check_case("layer_d6_h1", "b2_t5_s4", 6, 1);
}

TEST_CASE("source_mask keeps every token of a source without padding",
          "[cross-attention][points=1][.hidden]") {
  attn::Ids ids({2, 4}, 7);
  ids(1, 3) = 3;
  const Tensor2 keep = STUDENT(attn::exercise::source_mask(ids, 3));
  Tensor2 want({2, 4}, 1.0f);
  want(1, 3) = 0.0f;  // pad 3 here, not 0
  check_close("source_mask(ids (2,4), pad 3)", keep, want, kTolerance);
}
// END HIDDEN TESTS
