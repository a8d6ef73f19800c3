// The measurement under every sentence about what a trained head does (core/head_patterns.hpp):
// weight on a pattern's keys against uniform attention's, entropy against ln(visible keys), on
// weights made by hand, and the claims' thresholds.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "head_patterns.hpp"

namespace {
// (1,2,T,T): head 0 one-hot on the mirrored key, head 1 uniform over every key.
attn::Tensor4 mirror_and_uniform(std::size_t t) {
  attn::Tensor4 w = xt::zeros<float>({std::size_t{1}, std::size_t{2}, t, t});
  for (std::size_t q = 0; q < t; ++q) {
    w(0, 0, q, t - 1 - q) = 1.0f;
    for (std::size_t k = 0; k < t; ++k)
      w(0, 1, q, k) = 1.0f / static_cast<float>(t);
  }
  return w;
}
}  // namespace

TEST_CASE("a head on the pattern scores 1, a uniform head scores uniform's share", "[patterns]") {
  const std::size_t t = 8;
  attn::PatternScores scores(2);
  scores.add(mirror_and_uniform(t), {attn::mirror_targets(t)});
  const attn::HeadPatternScore on = scores.head(0), even = scores.head(1);
  CHECK(on.queries == t);
  CHECK(on.on_target == Approx(1.0));
  CHECK(on.uniform == Approx(1.0 / 8));
  CHECK(on.entropy == Approx(0.0).margin(1e-12));
  CHECK(on.max_entropy == Approx(std::log(8.0)));
  CHECK(even.on_target == Approx(even.uniform));
  CHECK(even.entropy == Approx(std::log(8.0)).epsilon(1e-6));
  CHECK(attn::claim_holds(attn::HeadsClaim::pattern, {on, even}));
  CHECK_FALSE(attn::claim_holds(attn::HeadsClaim::pattern, {even}));
  CHECK(attn::claim_holds(attn::HeadsClaim::reads, {on}));
  CHECK_FALSE(attn::claim_holds(attn::HeadsClaim::reads, {even}));
  CHECK(attn::claim_holds(attn::HeadsClaim::spread, {even}));
  CHECK_FALSE(attn::claim_holds(attn::HeadsClaim::spread, {on}));
}

TEST_CASE("queries without a target are left out, and a causal query sees keys up to itself",
          "[patterns]") {
  const attn::SequenceTargets previous = attn::previous_targets(5, true);
  CHECK(previous[0].keys.empty());  // the first token has no previous one
  CHECK(previous[3].keys == std::vector<std::size_t>{2});
  CHECK(previous[3].visible == 4);
  // Uniform causal attention: row t spreads 1/(t+1) over keys 0..t.
  attn::Tensor4 w =
      xt::zeros<float>({std::size_t{1}, std::size_t{1}, std::size_t{5}, std::size_t{5}});
  for (std::size_t q = 0; q < 5; ++q)
    for (std::size_t k = 0; k <= q; ++k)
      w(0, 0, q, k) = 1.0f / static_cast<float>(q + 1);
  attn::PatternScores scores(1);
  scores.add(w, {previous});
  const attn::HeadPatternScore s = scores.head(0);
  CHECK(s.queries == 4);
  const double uniform = (1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5) / 4;
  CHECK(s.uniform == Approx(uniform));
  CHECK(s.on_target == Approx(uniform).epsilon(1e-6));
  const std::vector<std::int64_t> ids{1, 2, 1, 1};
  const attn::SequenceTargets same = attn::same_token_targets(ids);
  CHECK(same[0].keys == std::vector<std::size_t>{0, 2, 3});
  CHECK(same[1].keys == std::vector<std::size_t>{1});
}

TEST_CASE("duplicate, induction and diagonal keys on a repeated sequence", "[patterns]") {
  // A B C A B C: the second half repeats the first.
  const std::vector<std::int64_t> ids{7, 8, 9, 7, 8, 9};
  const attn::SequenceTargets induction = attn::induction_targets(ids, true);
  CHECK(induction[0].keys.empty());
  CHECK(induction[2].keys.empty());
  CHECK(induction[3].keys == std::vector<std::size_t>{1});  // A finds the B after the first A
  CHECK(induction[5].keys == std::vector<std::size_t>{3});  // C finds the A after the first C
  CHECK(induction[5].visible == 6);
  const attn::SequenceTargets duplicate = attn::duplicate_targets(ids, true);
  CHECK(duplicate[3].keys == std::vector<std::size_t>{0});
  CHECK(duplicate[1].keys.empty());
  const attn::SequenceTargets twice = attn::induction_targets({5, 5, 5});
  CHECK(twice[2].keys == std::vector<std::size_t>{1, 2});  // after each earlier 5
  const attn::SequenceTargets diagonal = attn::diagonal_targets(4);
  CHECK(diagonal[2].keys == std::vector<std::size_t>{2});
  CHECK(diagonal[2].visible == 4);
}

TEST_CASE("patterns that do not fit the weights are refused", "[patterns]") {
  attn::PatternScores scores(2);
  CHECK_THROWS_AS(scores.add(mirror_and_uniform(4), {attn::mirror_targets(5)}), attn::Error);
  CHECK_THROWS_AS(scores.add(mirror_and_uniform(4), {}), attn::Error);
  CHECK_THROWS_AS(scores.head(2), attn::Error);
}

TEST_CASE("entropies computed once for several patterns give the same scores", "[patterns]") {
  attn::Tensor4 w =
      xt::zeros<float>({std::size_t{2}, std::size_t{2}, std::size_t{4}, std::size_t{4}});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t q = 0; q < 4; ++q) {
        float sum = 0.0f;
        for (std::size_t k = 0; k <= q; ++k)
          sum += w(b, h, q, k) = static_cast<float>(1 + (b + 2 * h + 3 * q + 5 * k) % 7);
        for (std::size_t k = 0; k <= q; ++k)
          w(b, h, q, k) /= sum;
      }
  const std::vector<std::int64_t> ids{3, 1, 3, 1};
  const std::vector<attn::SequenceTargets> targets = {attn::induction_targets(ids, true),
                                                      attn::previous_targets(4, true)};
  attn::PatternScores inline_scores(2), shared(2);
  inline_scores.add(w, targets);
  const attn::Tensor3 entropies = attn::row_entropies(w);
  shared.add(w, targets, &entropies);
  for (std::size_t h = 0; h < 2; ++h) {
    CHECK(shared.head(h).on_target == inline_scores.head(h).on_target);
    CHECK(shared.head(h).entropy == Approx(inline_scores.head(h).entropy).epsilon(1e-6));
    CHECK(shared.head(h).queries == inline_scores.head(h).queries);
  }
}
