// Grades lesson 17's exercise against PyTorch (data/generator/exercise_heads.py: causal weights
// with a planted induction head and a planted previous-token head, and TransformerLens's hook_z
// ablations) and against the measurement `attn heads` prints (core/head_patterns.hpp's
// PatternScores over its induction_targets). Tags: [heads] the lesson, [points=N] the marks,
// [.hidden] shown after the due date. The student's functions are called only through
// STUDENT(...), and expected values are used only in checks (see course/harness/grading.hpp).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "grading.hpp"
#include "head_patterns.hpp"
#include "heads_exercise.hpp"

using attn::Tensor1;
using attn::Tensor3;
using attn::exercise::Ablation;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-6, 1e-5};

using Targets = std::vector<std::vector<std::size_t>>;

std::vector<std::int64_t> sequence(const std::string& name) {
  const Tensor1 values = input<1>("heads/" + name + "_ids");
  std::vector<std::int64_t> ids;
  for (float v : values)
    ids.push_back(static_cast<std::int64_t>(v));
  return ids;
}

std::string ids_text(const std::vector<std::int64_t>& ids) {
  std::string text;
  for (std::int64_t id : ids)
    text += (text.empty() ? "" : ", ") + std::to_string(id);
  return "{" + text + "}";
}

std::string targets_text(const Targets& targets) {
  std::string text;
  for (const auto& keys : targets) {
    std::string row;
    for (std::size_t key : keys)
      row += (row.empty() ? "" : ", ") + std::to_string(key);
    text += (text.empty() ? "{" : ", {") + row + "}";
  }
  return "{" + text + "}";
}

// What `attn heads` measures: PatternScores over core's induction targets, one score per head.
Tensor1 measured_by_attn(const Tensor3& weights, const std::vector<std::int64_t>& ids) {
  const std::size_t heads = weights.shape(0), tokens = weights.shape(1);
  attn::Tensor4 batch({1, heads, tokens, tokens});
  for (std::size_t i = 0; i < weights.size(); ++i)
    batch.data()[i] = weights.data()[i];
  attn::PatternScores scores(heads);
  scores.add(batch, {attn::induction_targets(ids, true)});
  Tensor1 out({heads}, 0.0f);
  for (std::size_t h = 0; h < heads; ++h)
    out(h) = static_cast<float>(scores.head(h).on_target);
  return out;
}

// The student's score on a fixture sequence against PyTorch's and against attn's measurement.
void check_score(const std::string& name) {
  const std::vector<std::int64_t> ids = sequence(name);
  const Tensor3 weights = input<3>("heads/" + name + "_weights");
  const Tensor1 score = STUDENT(attn::exercise::induction_score(weights, ids));
  const std::string what =
      "induction_score(weights " + attn::shape_string_of(weights) + ", ids " + ids_text(ids) + ")";
  check_close(what, score, expected<1>("heads/" + name + "_induction_score"), kTolerance);
  check_close(what + " against attn heads' measurement", score, measured_by_attn(weights, ids),
              kTolerance);
}

void check_targets(const std::vector<std::int64_t>& ids, const Targets& want) {
  const Targets got = STUDENT(attn::exercise::induction_targets(ids));
  INFO("induction_targets(" << ids_text(ids) << ") gave " << targets_text(got) << ", expected "
                            << targets_text(want));
  CHECK(got == want);
}

// The ablated head's slice against PyTorch's, and every other column untouched.
void check_ablation(const std::string& name, std::size_t head, std::size_t heads, Ablation mode) {
  const Tensor3 z = input<3>("heads/ablate_" + name + "_concatenated");
  const Tensor3 out = STUDENT(attn::exercise::ablate_head(z, head, heads, mode));
  const std::string how = mode == Ablation::zero ? "zero" : "mean";
  const std::string what = "ablate_head(concatenated " + attn::shape_string_of(z) + ", head " +
                           std::to_string(head) + ", heads " + std::to_string(heads) + ", " + how +
                           ")";
  check_close(what, out,
              expected<3>("heads/ablate_" + name + "_head" + std::to_string(head) + "_" + how),
              kTolerance);
  REQUIRE(out.shape() == z.shape());
  const std::size_t head_size = z.shape(2) / heads;
  for (std::size_t b = 0; b < z.shape(0); ++b)
    for (std::size_t t = 0; t < z.shape(1); ++t)
      for (std::size_t c = 0; c < z.shape(2); ++c) {
        if (c / head_size == head) continue;
        INFO(what << " changed column " << c << " (head " << c / head_size << ") at (" << b << ", "
                  << t << "): " << z(b, t, c) << " became " << out(b, t, c));
        CHECK(out(b, t, c) == z(b, t, c));
      }
}

}  // namespace

TEST_CASE("induction_targets names the key after every earlier copy of the query's token",
          "[heads][points=2]") {
  check_targets({5, 7, 5, 7, 5}, {{}, {}, {1}, {2}, {1, 3}});
  check_targets({4, 4}, {{}, {1}});
  // TransformerLens's probe: the second half repeats the first, query t reads key t - 5
  check_targets(sequence("repeated"), {{}, {}, {}, {}, {}, {}, {1}, {2}, {3}, {4}, {5}, {6}});
}

TEST_CASE("induction_score matches PyTorch on repeated random tokens with 3 heads",
          "[heads][points=3]") {
  check_score("repeated");
}

TEST_CASE("induction_score averages over the queries that have a target and only those",
          "[heads][points=2]") {
  // ids {1, 2, 3, 4, 5, 1}: only the last query has a target (key 1), so each head's score is
  // its last row's weight on key 1
  check_score("one_target");
  const std::vector<std::int64_t> ids = sequence("one_target");
  const Tensor3 weights = input<3>("heads/one_target_weights");
  const Tensor1 score = STUDENT(attn::exercise::induction_score(weights, ids));
  REQUIRE(score.size() == weights.shape(0));
  for (std::size_t h = 0; h < weights.shape(0); ++h) {
    INFO("head " << h << ": the score " << score(h) << ", the last query's weight on key 1 "
                 << weights(h, 5, 1));
    CHECK(std::abs(score(h) - weights(h, 5, 1)) <= 1e-5);
  }
}

TEST_CASE("a head that attends only to the induction targets scores 1 and uniform attention less",
          "[heads][points=2]") {
  // repeated tokens of half length 3: query t >= 3 targets t - 2
  const std::vector<std::int64_t> ids = {8, 1, 6, 8, 1, 6};
  Tensor3 weights({2, 6, 6}, 0.0f);
  for (std::size_t t = 0; t < 6; ++t) {
    weights(0, t, t >= 3 ? t - 2 : 0) = 1.0f;  // head 0: an induction head
    for (std::size_t j = 0; j <= t; ++j)
      weights(1, t, j) = 1.0f / static_cast<float>(t + 1);  // head 1: uniform causal attention
  }
  const Tensor1 score = STUDENT(attn::exercise::induction_score(weights, ids));
  // uniform: (1/4 + 1/5 + 1/6) / 3 over the three scored queries
  const Tensor1 want = {1.0f, (1.0f / 4 + 1.0f / 5 + 1.0f / 6) / 3};
  check_close("induction_score(an induction head and uniform attention, ids {8, 1, 6, 8, 1, 6})",
              score, want, kTolerance);
}

TEST_CASE("zero ablation sets one head's slice to 0 and leaves the other heads' columns",
          "[heads][points=2]") {
  check_ablation("b3_t4_h3_hs2", 1, 3, Ablation::zero);
}

TEST_CASE("mean ablation puts the slice's mean over the batch at each position",
          "[heads][points=3]") {
  check_ablation("b3_t4_h3_hs2", 1, 3, Ablation::mean);
  check_ablation("b4_t3_h2_hs3", 0, 2, Ablation::mean);
}

TEST_CASE("induction_score and ablate_head refuse sizes that do not fit", "[heads][points=1]") {
  const Tensor3 z = input<3>("heads/ablate_b3_t4_h3_hs2_concatenated");
  check_close("ablate_head(concatenated (3,4,6), head 1, heads 3, zero)",
              STUDENT(attn::exercise::ablate_head(z, 1, 3, Ablation::zero)),
              expected<3>("heads/ablate_b3_t4_h3_hs2_head1_zero"), kTolerance);
  CHECK_THROWS_AS(STUDENT(attn::exercise::ablate_head(z, 3, 3, Ablation::zero)),
                  std::invalid_argument);  // heads 0 to 2
  CHECK_THROWS_AS(STUDENT(attn::exercise::ablate_head(z, 0, 4, Ablation::mean)),
                  std::invalid_argument);  // 4 heads do not divide 6 columns
  const std::vector<std::int64_t> ids = sequence("repeated");
  const Tensor3 weights = input<3>("heads/repeated_weights");
  CHECK_THROWS_AS(STUDENT(attn::exercise::induction_score(
                      weights, std::vector<std::int64_t>(ids.begin(), ids.end() - 1))),
                  std::invalid_argument);  // 11 tokens for weights over 12
  CHECK_THROWS_AS(
      STUDENT(attn::exercise::induction_score(weights, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})),
      std::invalid_argument);  // no token occurs twice
}

// BEGIN HIDDEN TESTS
TEST_CASE("induction_score with tokens seen three times and a token repeated at once",
          "[heads][points=2][.hidden]") {
  // ids {7, 2, 7, 7, 4, 2, 9, 7, 4, 2}: query 3 targets keys 1 and 3 (itself), query 7 keys 1, 3
  // and 4
  check_targets(sequence("repeats"), {{}, {}, {1}, {1, 3}, {}, {2}, {}, {1, 3, 4}, {5}, {2, 6}});
  check_score("repeats");
}

TEST_CASE("both ablations of the last head of four and of the first of two",
          "[heads][points=2][.hidden]") {
  check_ablation("b2_t5_h4_hs2", 3, 4, Ablation::zero);
  check_ablation("b2_t5_h4_hs2", 3, 4, Ablation::mean);
  check_ablation("b4_t3_h2_hs3", 0, 2, Ablation::zero);
}
// END HIDDEN TESTS
