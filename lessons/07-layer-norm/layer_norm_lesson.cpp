// Lesson 07, layer normalisation. Legend: B batch, T tokens, D model width.
#include "07-layer-norm/layer_norm_lesson.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>
#include <xtensor/xmath.hpp>

#include "base/budget.hpp"
#include "base/random.hpp"
#include "layer_norm.hpp"
#include "state_dict.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kWidthsStream = 0x1a7e2c0dULL;  // the rows of the unbiased/biased table
constexpr std::uint64_t kPlacementStream =
    0x9e3779b97f4a7c15ULL;  // the sublayer of the pre-LN/post-LN comparison

constexpr std::size_t kCompareTokens = 64;  // random tokens per width in the seed 001 table

// Largest |a - b|; a NaN on one side only counts as infinitely far, NaN on both as equal.
double max_difference(const Tensor3& a, const Tensor3& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float x = a.data()[i], y = b.data()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    const double d = std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::infinity()
                                                    : std::fabs(static_cast<double>(x) - y);
    worst = std::max(worst, d);
  }
  return worst;
}

// --eps as the float32 the kernel adds, or the variant's default.
float lesson_eps(const std::optional<double>& eps, bool seed001) {
  if (!eps) return seed001 ? kLayerNormalizationEps : kLayerNormEps;
  const double e = *eps;
  constexpr const char* kFix =
      "give a small positive number such as 1e-5 (nn.LayerNorm's default) or 1e-12 (BERT)";
  if (std::isnan(e))
    throw Error(ErrorKind::bad_value, "layer_norm_lesson",
                fmt::format("nan is not a number: {}", kFix))
        .about("eps");
  if (e <= 0.0) {
    throw Error(
        ErrorKind::bad_value, "layer_norm_lesson",
        fmt::format("{:g} is not positive: eps keeps the division away from 0; {}", e, kFix))
        .about("eps");
  }
  if (e > static_cast<double>(FLT_MAX)) {
    throw Error(
        ErrorKind::bad_value, "layer_norm_lesson",
        fmt::format("{:g} is beyond float32 (max 3.4e38), the type eps is added in: {}", e, kFix))
        .about("eps");
  }
  const auto f = static_cast<float>(e);
  if (f == 0.0f) {
    throw Error(
        ErrorKind::bad_value, "layer_norm_lesson",
        fmt::format("{:g} rounds to 0 in float32, the type eps is added in: give 1e-45 or more", e))
        .about("eps");
  }
  return f;
}

// Per token: the largest |mean| and |variance - expected| of a normalised tensor, in double.
// `ddof` 0 for the biased variance, 1 for the unbiased one.
struct RowCheck {
  double mean = 0.0, variance = 0.0;
};
template <class Expected>
RowCheck check_rows(const Tensor3& normalised, std::size_t ddof, Expected expected) {
  const std::size_t width = normalised.shape(2);
  RowCheck worst;
  for (std::size_t r = 0; r < normalised.size() / width; ++r) {
    const auto [mean, squares] = row_mean_squares(normalised.data() + r * width, width);
    const double variance = squares / static_cast<double>(width - ddof);
    worst.mean = std::max(worst.mean, std::fabs(mean));
    worst.variance = std::max(worst.variance, std::fabs(variance - expected(r)));
  }
  return worst;
}

// How far float32 rounding may move a normalised value. PyTorch's x · rstd - mean · rstd rounds
// numbers as large as |x| / std, so the error grows with the largest such ratio of any token.
struct Slack {
  double ratio = 0.0;      // max |x| / √(var + 1e-5)
  double tolerance = 0.0;  // 1e-4, or 2^-20 of the ratio when that is larger
  std::string note() const {
    return tolerance > 1e-4
               ? fmt::format(" (float32 allows {:.2g} at {:.2g} stds)", tolerance, ratio)
               : "";
  }
};
Slack float_slack(const Tensor3& x, const Tensor3& variance) {
  const std::size_t width = x.shape(2);
  Slack slack;
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    const double rstd = 1.0 / std::sqrt(static_cast<double>(variance.data()[r]) + 1e-5);
    for (std::size_t j = 0; j < width; ++j)
      slack.ratio =
          std::max(slack.ratio, std::fabs(static_cast<double>(x.data()[r * width + j])) * rstd);
  }
  slack.tolerance = std::max(1e-4, std::ldexp(slack.ratio, -20));
  return slack;
}

// The per-token L2 norm, averaged over the B*T tokens.
double mean_token_norm(const Tensor3& x) {
  const std::size_t width = x.shape(2), tokens = x.size() / width;
  double total = 0.0;
  for (std::size_t r = 0; r < tokens; ++r) {
    double squares = 0.0;
    for (std::size_t j = 0; j < width; ++j)
      squares += static_cast<double>(x.data()[r * width + j]) * x.data()[r * width + j];
    total += std::sqrt(squares);
  }
  return total / static_cast<double>(tokens);
}

// Seed 001 against nn.LayerNorm (both at initialisation, their own default eps) on random
// N(0, 1) tokens of several widths.
Table compare_widths(std::uint64_t seed) {
  Table t{
      fmt::format("seed 001 against nn.LayerNorm on {} random tokens per width", kCompareTokens),
      {"D", "√(D/(D-1)): unbiased / biased std", "max |seed 001 - nn.LayerNorm|",
       "largest possible"},
      {}};
  Rng rng(seed ^ kWidthsStream);
  for (std::size_t width : {2, 6, 12, 64, 768}) {
    const Tensor3 x = randn(rng, 1, kCompareTokens, width);  // (1,64,D)
    const double diff = max_difference(forward(init_layer_normalization(), x).output,
                                       forward(init_layer_norm(width), x).output);
    const double w = static_cast<double>(width);
    const double ratio = std::sqrt(w / (w - 1.0));
    // A normalised value is at most √(D-1) in size (one value against D-1 equal ones), and seed
    // 001 shrinks it by the factor √((D-1)/D).
    const double bound = std::sqrt(w - 1.0) * (1.0 - std::sqrt((w - 1.0) / w));
    t.rows.push_back({fmt::format("{}", width), fmt::format("{:.4f}", ratio),
                      fmt::format("{:.4f}", diff), fmt::format("{:.4f}", bound)});
  }
  return t;
}
}  // namespace

LessonRun run_layer_norm(const LayerNormLessonOptions& options) {
  // Plain variables, not a structured binding: clang 14 cannot capture bindings in lambdas.
  const Sizes3 sizes = lesson_sizes(options.common);
  const std::size_t batch = sizes.batch, tokens = sizes.seq, width = sizes.d_model;
  const bool seed001 = options.variant == "seed001";
  if (!seed001 && options.variant != "torch") {
    throw Error(
        ErrorKind::bad_value, "layer_norm_lesson",
        fmt::format("'{}' is not a layer norm variant: use torch or seed001", options.variant))
        .about("variant");
  }
  const float eps = lesson_eps(options.eps, seed001);
  if (options.blocks == 0 || options.blocks > 1000) {
    throw Error(ErrorKind::bad_value, "layer_norm_lesson",
                fmt::format("{} blocks: give a whole number from 1 to 1000", options.blocks))
        .about("blocks");
  }
  // At the peak, the placement blocks: X, both norms' steps and the copies shown, the pre-LN and
  // post-LN streams with a block's sums and norms, its Linear(D, D); or, before them, the checks'
  // rescaled copy and reference.
  MemoryPlan plan = plan_lesson_input(options.common);
  append(plan, plan_weights_file(options.weights));
  const MemoryPlan steps = plan_layer_norm(batch, tokens, width);
  append(plan, steps);
  append(plan, steps);
  for (const Shape& shown : {Shape{batch, tokens}, Shape{batch, tokens}})
    plan.push_back({"the mean or spread", shown, "B T", 4, Held::shown});
  for (const char* name :
       {"X", "the normalised x", "the other variant's normalised x", "the output"})
    plan.push_back({name, {batch, tokens, width}, "B T D", 4, Held::shown});
  append(
      plan,
      larger_of(
          {{"the rescaled copy and the reference", {2, batch, tokens, width}, " B T D"}},
          {{"the streams, a block's sum and its norm's steps", {7, batch, tokens, width}, " B T D"},
           {"a block's Linear(D, D)", {width + 1, width}, "D D"},
           {"the seed 001 table's tokens", {4, kCompareTokens, 768}, "  "}}));
  check_budget("layer-norm", plan);
  const Tensor3 x = lesson_input(options.common, "(B, T, D)", {batch, tokens, width});  // (B,T,D)

  LessonRun run("layer-norm");
  record_settings(run, options.common, {{"batch", batch}, {"seq", tokens}, {"d-model", width}});
  run.setting("variant", options.variant);
  run.setting("eps", fmt::format("{:g}", eps));
  run.setting("blocks", std::to_string(options.blocks));
  if (options.weights) run.setting("weights", options.weights_name);

  const std::string eps_text = fmt::format("{:g}", eps);
  const double d = static_cast<double>(width);
  LayerNorm torch_norm = init_layer_norm(width, seed001 ? kLayerNormEps : eps);
  LayerNormalization seed_norm = init_layer_normalization(seed001 ? eps : kLayerNormalizationEps);
  const Module model = seed001 ? describe_layer_normalization() : describe_layer_norm(width);
  if (options.weights && seed001)
    load_state_dict(seed_norm, model, *options.weights, options.weights_name);
  if (options.weights && !seed001)
    load_state_dict(torch_norm, model, *options.weights, options.weights_name);
  run.state_dict = seed001 ? collect_state_dict(seed_norm) : collect_state_dict(torch_norm);
  run.parameters = count_parameters(model);
  const LayerNormSteps t = forward(torch_norm, x);
  const LayerNormalizationSteps s = forward(seed_norm, x);
  // Both compared at initialisation (weight 1, bias 0; gamma 1, beta 0): the normalised values.
  const Tensor3& torch_normalised = t.normalised;
  const Tensor3& seed_normalised = s.normalised;

  if (!seed001) {
    run.section("intro");
    run.table(parameter_table(model));
    run.step("input", "X, one row of width D per token", to_array(x));
    run.section("mean");
    run.step("mean", "mean over the last axis: each token's average of its D numbers",
             to_array(t.mean));
    run.section("variance");
    run.step("variance", "biased variance: the mean of (x - mean)², divided by D",
             to_array(t.variance));
    run.section("normalised");
    run.step("normalised",
             fmt::format("(x - mean) / √(variance + {}): mean 0, variance 1 per token", eps_text),
             to_array(t.normalised));
  } else {
    run.section("intro_seed001");
    run.table(parameter_table(model));
    run.step("input", "X, one row of width D per token", to_array(x));
    run.section("mean");
    run.step("mean", "x.mean(dim=-1): each token's average of its D numbers", to_array(s.mean));
    run.section("std");
    run.step("std", "x.std(dim=-1): unbiased, the root of Σ(x - mean)² / (D - 1)", to_array(s.std));
    run.section("normalised_seed001");
    run.step("normalised", fmt::format("(x - mean) / (std + {}): eps outside the root", eps_text),
             to_array(s.normalised));
  }
  const Slack slack = float_slack(x, t.variance);
  // The other normalisation on the same tokens, after this one's checks.
  const auto compare = [&] {
    if (!seed001) {
      run.section("compare");
      run.step("seed001_normalised", "seed 001: (x - mean) / (x.std() + 1e-06)",
               to_array(s.normalised));
    } else {
      run.section("compare_seed001");
      run.step("torch_normalised", "nn.LayerNorm(D): (x - mean) / √(biased variance + 1e-05)",
               to_array(t.normalised));
    }
    if (width <= 1) return;
    // Per token, seed 001 / nn.LayerNorm = √(var + eps) / (std + eps'): √((D-1)/D) when var ≫ eps.
    Tensor3 rescaled = torch_normalised;  // (B,T,D)
    for (std::size_t r = 0; r < batch * tokens; ++r) {
      const double k = std::sqrt(static_cast<double>(t.variance.data()[r]) + torch_norm.eps) /
                       (static_cast<double>(s.std.data()[r]) + seed_norm.eps);
      for (std::size_t j = 0; j < width; ++j)
        rescaled.data()[r * width + j] = static_cast<float>(rescaled.data()[r * width + j] * k);
    }
    const double off = max_difference(seed_normalised, rescaled);
    run.check(fmt::format("seed 001 = nn.LayerNorm · √(var + eps)/(std + {:g})", seed_norm.eps),
              off <= slack.tolerance,
              fmt::format("max |difference| {:.4f}, then {:.2g}{}",
                          max_difference(seed_normalised, torch_normalised), off, slack.note()));
  };

  // The normalisation's promise, then the other normalisation, then the scale and shift.
  if (!seed001) {
    run.section("checks");
    // normalised = (x - mean) rstd has biased variance v rstd² = v / (v + eps).
    const RowCheck rows = check_rows(t.normalised, 0, [&](std::size_t r) {
      const double v = t.variance.data()[r];
      return v / (v + static_cast<double>(eps));
    });
    run.check(
        "every token has mean 0 and variance var/(var + eps) ≈ 1",
        rows.mean <= slack.tolerance && rows.variance <= 2.0 * slack.tolerance,
        fmt::format("largest errors {:.2g} and {:.2g}{}", rows.mean, rows.variance, slack.note()));
    compare();
    run.table(compare_widths(options.common.seed));
    run.section("output");
    run.step("output", "normalised · weight + bias: a learned scale and shift per feature",
             to_array(t.output));
    const double weight = std::max(1.0f, xt::amax(xt::abs(torch_norm.weight))());
    const double diff = max_difference(t.output, layer_norm_reference(torch_norm, x));
    run.check("one pass in float (torch's order) agrees with two passes in double",
              diff <= slack.tolerance * weight,
              fmt::format("max |difference| = {:.3g}{}", diff, slack.note()));
  } else {
    run.section("checks_seed001");
    if (width > 1) {
      // normalised = (x - mean) / (std + eps) has unbiased std std / (std + eps).
      const RowCheck rows = check_rows(s.normalised, 1, [&](std::size_t r) {
        const double sd = s.std.data()[r], ratio = sd / (sd + static_cast<double>(eps));
        return ratio * ratio;
      });
      run.check("every token has mean 0, unbiased variance (std/(std+eps))²",
                rows.mean <= slack.tolerance && rows.variance <= 2.0 * slack.tolerance,
                fmt::format("largest errors {:.2g} and {:.2g}{}", rows.mean, rows.variance,
                            slack.note()));
    }
    compare();
    run.table(compare_widths(options.common.seed));
    run.section("output_seed001");
    run.step("output", "gamma · (x - mean) / (std + eps) + beta, scalar gamma and beta",
             to_array(s.output));
    const double gamma = std::max(1.0f, std::fabs(seed_norm.gamma(0)));
    const double diff = max_difference(s.output, layer_normalization_reference(seed_norm, x));
    run.check("float in torch's order agrees with the formula in double",
              diff <= slack.tolerance * gamma,
              fmt::format("max |difference| = {:.3g}{}", diff, slack.note()));
  }

  // Pre-LN against post-LN: the same random Linear(D, D) as each block's sublayer.
  run.section("placement");
  Rng rng(options.common.seed ^ kPlacementStream);
  const LayerNorm block_norm = init_layer_norm(width);  // nn.LayerNorm(D) at its defaults
  Tensor3 pre = x, post = x;
  Table table{fmt::format("residual stream: ‖x‖ per token (mean over the {} tokens), √D = {:.3f}",
                          batch * tokens, std::sqrt(d)),
              {"after block", "pre-LN: x + f(LN(x))", "post-LN: LN(x + f(x))"},
              {{"input", fmt::format("{:.3f}", mean_token_norm(x)),
                fmt::format("{:.3f}", mean_token_norm(x))}}};
  // A LayerNorm's output (weight 1, bias 0) has ‖x‖ = √(D v / (v + eps)) for its input's
  // variance v: √D up to eps. The largest distance from that over the tokens.
  const auto off_norm = [&](const LayerNormSteps& n) {
    double off = 0.0;
    for (std::size_t r = 0; r < batch * tokens; ++r) {
      double squares = 0.0;
      for (std::size_t j = 0; j < width; ++j)
        squares +=
            static_cast<double>(n.output.data()[r * width + j]) * n.output.data()[r * width + j];
      const double v = n.variance.data()[r];
      const double distance =
          std::fabs(std::sqrt(squares) - std::sqrt(d * v / (v + block_norm.eps)));
      if (!(distance <= off)) off = distance;  // a NaN stays, and fails the check
    }
    return off;
  };
  double post_off = 0.0;
  for (std::size_t b = 1; b <= options.blocks; ++b) {
    const Linear sublayer = init_linear(rng, width, width, true);
    pre = residual_block(NormPlacement::pre, block_norm, sublayer, pre);  // (B,T,D)
    // Post-LN as residual_block computes it, keeping the norm's steps: LN(x + f(x)).
    const LayerNormSteps post_norm_steps =
        forward(block_norm, Tensor3(post + forward(sublayer, post)));
    post = post_norm_steps.output;  // (B,T,D)
    post_off = std::max(post_off, off_norm(post_norm_steps));
    const double pre_norm = mean_token_norm(pre), post_norm = mean_token_norm(post);
    table.rows.push_back(
        {fmt::format("{}", b), fmt::format("{:.3f}", pre_norm), fmt::format("{:.3f}", post_norm)});
  }
  run.table(table);
  if (width > 1) {  // with D = 1 every token normalises to 0
    const LayerNormSteps final_steps = forward(block_norm, pre);
    const double final_norm = mean_token_norm(final_steps.output);
    run.check(
        fmt::format("post-LN: every token at ‖x‖ = √D = {:.3f} after every block", std::sqrt(d)),
        post_off <= 1e-3 * std::sqrt(d),
        fmt::format("max |‖x‖ - √(D v/(v + eps))| = {:.3g}", post_off));
    run.check("pre-LN gets there only with a final LayerNorm",
              off_norm(final_steps) <= 1e-3 * std::sqrt(d),
              fmt::format("‖x‖ {:.3f} after block {}, {:.3f} after it", mean_token_norm(pre),
                          options.blocks, final_norm));
  }
  run.section("parameters");
  return run;
}

}  // namespace attn::lessons
