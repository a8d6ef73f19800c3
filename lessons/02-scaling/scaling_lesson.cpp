// Lesson 02, scaling. Legend: B batch, T tokens, D model width.
#include "02-scaling/scaling_lesson.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "budget.hpp"
#include "dot_product.hpp"
#include "matmul.hpp"
#include "random.hpp"
#include "scaling.hpp"

namespace attn::lessons {

namespace {
constexpr std::size_t kSpreadSamples = 2000;  // q·k pairs per width
constexpr std::size_t kPeakRows = 500;        // queries per width

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
  const MemoryPlan steps = plan_dot_product_attention(batch, tokens, width);
  plan.push_back({"X Xᵀ", {batch, tokens, tokens}, "B T T"});
  append(plan, steps);
  append(plan, steps);
  plan.push_back({"X", {batch, tokens, width}, "B T D", 4, Held::shown});
  plan.push_back({"X Xᵀ", {batch, tokens, tokens}, "B T T", 4, Held::shown});
  append(plan, held_as(Held::shown, steps));
  check_budget("scaling", plan);
  const Tensor3 x = lesson_input(options, "(B, T, D)", {batch, tokens, width});  // (B,T,D)

  LessonRun run("scaling");
  record_settings(run, options, {{"batch", batch}, {"seq", tokens}, {"d-model", width}});
  run.section("intro");

  // The measurements use their own stream so that the input does not depend on them.
  Rng rng(options.seed ^ 0x5ca11e5ULL);
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
      {"D", "largest w, unscaled", "scaled", "entropy, unscaled", "scaled"},
      {}};
  for (std::size_t d : table_widths()) {
    const SoftmaxPeakComparison c = measure_softmax_peak(rng, d, keys, kPeakRows);
    peak.rows.push_back({fmt::format("{}", d), fmt::format("{:.3f}", c.unscaled.max_weight),
                         fmt::format("{:.3f}", c.scaled.max_weight),
                         fmt::format("{:.3f}", c.unscaled.entropy),
                         fmt::format("{:.3f}", c.scaled.entropy)});
  }
  const std::string uniform_max = fmt::format("{:.3f}", 1.0 / static_cast<double>(keys));
  const std::string uniform_entropy = fmt::format("{:.3f}", std::log(static_cast<double>(keys)));
  peak.rows.push_back({"uniform", uniform_max, uniform_max, uniform_entropy, uniform_entropy});
  run.section("peaked");
  run.table(std::move(peak));

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
  run.section("output");
  run.step("output", "Y = W X", to_array(s.output));

  // Dividing by √D >= 1 is a softmax temperature >= 1: no row's largest weight may grow.
  const DotProductSteps unscaled = dot_product_attention(x);
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
