// Lesson 02, scaling. Legend: B batch, T tokens, D model width.
#include "02-scaling/scaling_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/random.hpp"
#include "dot_product.hpp"
#include "matmul.hpp"
#include "scaling.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kMeasureStream =
    0x5ca11e5ULL;  // the measurements' random vectors, apart from the input's

constexpr std::size_t kSpreadSamples = 2000;  // q·k pairs per width
constexpr std::size_t kPeakRows = 500;        // queries per width
constexpr std::size_t kSelfTokens = 64;       // tokens per sequence, at most, of the self table

std::vector<std::size_t> table_widths() {
  return {4, 8, 16, 32, 64, 128, 256, 512, 1024};
}

// Seed 002: "a vector in R^k with values all c has length k·sqrt(c)". It is sqrt(k c²) = c·sqrt(k).
Table length_table(bool& all_match) {
  Table t{"Length of a vector of D values all equal to c",
          {"D", "c", "seed 002: D·√c", "c·√D", "measured ‖x‖"},
          {}};
  all_match = true;
  for (std::size_t d : {256, 512}) {
    const float c = 10.0f;
    double squares = 0.0;
    for (std::size_t i = 0; i < d; ++i)
      squares += static_cast<double>(c) * c;
    const double measured = std::sqrt(squares), correct = c * std::sqrt(static_cast<double>(d));
    all_match = all_match && std::fabs(measured - correct) <= 1e-9 * correct;
    t.rows.push_back(
        {fmt::format("{}", d), fmt::format("{:g}", c),
         fmt::format("{:.2f}", static_cast<double>(d) * std::sqrt(static_cast<double>(c))),
         fmt::format("{:.2f}", correct), fmt::format("{:.2f}", measured)});
  }
  return t;
}
}  // namespace

LessonRun run_scaling(const LessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options);
  // The measurements come first; at the peak, the check: X Xᵀ, the scaled and the unscaled steps,
  // and the copies of X and the steps in the run.
  MemoryPlan plan = plan_lesson_input(options);
  plan.push_back({"the measurements' scores and weights",
                  {4, kPeakRows, std::max<std::size_t>(tokens, 2)},
                  "  T",
                  4,
                  Held::before_shown});
  plan.push_back(
      {"the self table's scores and weights",
       {4, kPeakRows + kSelfTokens, std::min(std::max<std::size_t>(tokens, 2), kSelfTokens)},
       "  T",
       4,
       Held::before_shown});
  const MemoryPlan steps = plan_dot_product_attention(batch, tokens, width);
  plan.push_back({"X Xᵀ", {batch, tokens, tokens}, "B T T"});
  append(plan, steps);
  append(plan, steps);
  plan.push_back({"X", {batch, tokens, width}, "B T D", 4, Held::shown});
  plan.push_back({"X Xᵀ", {batch, tokens, tokens}, "B T T", 4, Held::shown});
  append(plan, held_as(Held::shown, steps));
  plan.push_back(planned_heatmap(tokens, tokens, "T T"));
  plan.push_back(planned_heatmap(tokens, tokens, "T T"));
  check_budget("scaling", plan);
  const Tensor3 x = lesson_input(options, "(B, T, D)", {batch, tokens, width});  // (B,T,D)

  LessonRun run("scaling");
  record_settings(run, options, {{"batch", batch}, {"seq", tokens}, {"d-model", width}});
  run.section("intro");

  // The measurements use their own stream so that the input does not depend on them.
  Rng rng(options.seed ^ kMeasureStream);
  Table spread{
      fmt::format("Spread of q·k for q, k with N(0, 1) entries ({} pairs per row)", kSpreadSamples),
      {"D", "mean q·k", "Var(q·k)", "D", "Var(q·k / √D)"},
      {}};
  double worst_scaled = 0.0;
  for (std::size_t d : table_widths()) {
    const DotProductSpread s = measure_dot_product_spread(rng, d, kSpreadSamples);
    worst_scaled = std::max(worst_scaled, std::fabs(s.scaled_variance - 1.0));
    spread.rows.push_back({fmt::format("{}", d), fmt::format("{:.2f}", s.mean),
                           fmt::format("{:.1f}", s.variance), fmt::format("{}", d),
                           fmt::format("{:.3f}", s.scaled_variance)});
  }
  run.section("variance");
  run.table(std::move(spread));
  run.check("Var(q·k / √D) stays near 1 for every D", worst_scaled <= 0.25,
            fmt::format("largest |Var - 1| = {:.3f} over D = 4..1024", worst_scaled));

  const std::size_t keys = std::max<std::size_t>(tokens, 2);
  Table peak{
      fmt::format("Softmax of one query against {} keys (mean over {} queries)", keys, kPeakRows),
      {"D", "largest w, unscaled", "scaled", "entropy, unscaled", "scaled", "median ‖J‖, unscaled",
       "scaled"},
      {}};
  // The widest D's unscaled Jacobian against the smallest scaled one.
  double smallest_scaled_jacobian = INFINITY, largest_unscaled_jacobian = 0.0;
  for (std::size_t d : table_widths()) {
    const SoftmaxPeakComparison c = measure_softmax_peak(rng, d, keys, kPeakRows);
    peak.rows.push_back(
        {fmt::format("{}", d), fmt::format("{:.3f}", c.unscaled.max_weight),
         fmt::format("{:.3f}", c.scaled.max_weight), fmt::format("{:.3f}", c.unscaled.entropy),
         fmt::format("{:.3f}", c.scaled.entropy), fmt::format("{:.2g}", c.unscaled.jacobian_norm),
         fmt::format("{:.2g}", c.scaled.jacobian_norm)});
    smallest_scaled_jacobian = std::min(smallest_scaled_jacobian, c.scaled.jacobian_norm);
    if (d == table_widths().back()) largest_unscaled_jacobian = c.unscaled.jacobian_norm;
  }
  const std::string uniform_max = fmt::format("{:.3f}", 1.0 / static_cast<double>(keys));
  const std::string uniform_entropy = fmt::format("{:.3f}", std::log(static_cast<double>(keys)));
  std::vector<float> flat(keys, 1.0f / static_cast<float>(keys));
  const std::string uniform_jacobian =
      fmt::format("{:.2g}", softmax_jacobian_norm(flat.data(), keys));
  peak.rows.push_back({"uniform", uniform_max, uniform_max, uniform_entropy, uniform_entropy,
                       uniform_jacobian, uniform_jacobian});
  run.section("peaked");
  run.table(std::move(peak));
  run.check(
      "unscaled, the softmax's Jacobian collapses at large D; scaled, it does not",
      largest_unscaled_jacobian < 0.1 * smallest_scaled_jacobian,
      fmt::format("median ‖J‖ {:.2g} unscaled at D = {}, at least {:.2g} scaled at every D",
                  largest_unscaled_jacobian, table_widths().back(), smallest_scaled_jacobian));

  // Self-attention of the tokens themselves against separate projections, at a few widths.
  const std::size_t self_tokens = std::min(keys, kSelfTokens);
  const std::size_t sequences = (kPeakRows + self_tokens - 1) / self_tokens;
  Table self{fmt::format("A token's weight on itself: {} tokens, mean over {} sequences",
                         self_tokens, sequences),
             {"D", "X Xᵀ/√D: largest w", "on itself", "Q Kᵀ/√D: largest w", "on itself"},
             {}};
  double same_self_at_512 = 0.0, most_projected_self = 0.0;
  for (std::size_t d : {6, 16, 64, 256, 512}) {
    const SelfAttentionPeak p = measure_self_attention_peak(rng, d, self_tokens, sequences);
    self.rows.push_back({fmt::format("{}", d), fmt::format("{:.3f}", p.same.max_weight),
                         fmt::format("{:.3f}", p.same_self),
                         fmt::format("{:.3f}", p.projected.max_weight),
                         fmt::format("{:.3f}", p.projected_self)});
    if (d == 512) same_self_at_512 = p.same_self;
    most_projected_self = std::max(most_projected_self, p.projected_self);
  }
  const std::string self_uniform = fmt::format("{:.3f}", 1.0 / static_cast<double>(self_tokens));
  self.rows.push_back({"uniform", self_uniform, self_uniform, self_uniform, self_uniform});
  run.section("self");
  run.table(std::move(self));
  run.check("scaled X Xᵀ still turns one-hot on the diagonal as D grows", same_self_at_512 > 0.95,
            fmt::format("mean weight on itself {:.3f} at D = 512", same_self_at_512));
  // Within twice uniform at every D: a token's score with itself is an ordinary score again (a
  // little wider spread than the others, so a little above uniform, most at many tokens).
  const double uniform = 1.0 / static_cast<double>(self_tokens);
  run.check("separate projections W_q ≠ W_k take the self-preference away",
            most_projected_self < 2.0 * uniform,
            fmt::format("mean weight on itself at most {:.3f} at any D (uniform: {})",
                        most_projected_self, self_uniform));

  bool lengths_match = true;
  Table lengths = length_table(lengths_match);
  run.section("length");
  run.table(std::move(lengths));
  run.check("a vector of D values c has length c·√D", lengths_match,
            "measured ‖x‖ = c·√D for D = 256, 512");

  run.section("input");
  run.step("input", "X, one row of width D per token", to_array(x));
  const Tensor3 raw = batched_matmul_transposed(x, x);  // (B,T,D) @ (B,T,D)^T -> (B,T,T)
  run.section("raw_scores");
  run.step("raw_scores", "X Xᵀ, unscaled", to_array(raw));

  const float root = std::sqrt(static_cast<float>(width));
  const DotProductSteps s = dot_product_attention(x, root);
  run.section("scaled_scores");
  run.step("scaled_scores", fmt::format("X Xᵀ / √D, √{} = {:.4f}", width, root),
           to_array(s.raw_weights));
  run.section("weights");
  run.step("weights", "W = softmax(X Xᵀ / √D) over the last axis", to_array(s.weights));
  const DotProductSteps unscaled = dot_product_attention(x);
  run.heatmaps({"sequence 0, rows: queries, columns: keys",
                {{"softmax(X Xᵀ), lesson 01", first_matrix(unscaled.weights), token_labels(tokens),
                  token_labels(tokens)},
                 {"softmax(X Xᵀ / √D)", first_matrix(s.weights), token_labels(tokens),
                  token_labels(tokens)}}});
  run.section("output");
  run.step("output", "Y = W X", to_array(s.output));

  // Dividing by √D >= 1 is a softmax temperature >= 1: no row's largest weight may grow.
  std::size_t grown = 0;
  double unscaled_mean = 0.0, scaled_mean = 0.0;
  for (std::size_t r = 0; r < batch * tokens; ++r) {
    const float* a = unscaled.weights.data() + r * tokens;
    const float* b = s.weights.data() + r * tokens;
    const float max_a = *std::max_element(a, a + tokens), max_b = *std::max_element(b, b + tokens);
    grown += max_b > max_a + 1e-6f;
    unscaled_mean += max_a, scaled_mean += max_b;
  }
  const double rows = static_cast<double>(batch * tokens);
  run.section("checks");
  run.check("scaling never sharpens a row: its largest weight does not grow", grown == 0,
            fmt::format("mean largest weight {:.4f} unscaled, {:.4f} scaled; {} rows grew",
                        unscaled_mean / rows, scaled_mean / rows, grown));
  run.parameters = 0;
  return run;
}

}  // namespace attn::lessons
