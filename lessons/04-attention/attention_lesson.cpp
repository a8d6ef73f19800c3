// Lesson 04, attention. Legend: B batch, T tokens, D model width, hs head size.
#include "04-attention/attention_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "attention.hpp"
#include "base/budget.hpp"
#include "base/random.hpp"
#include "dot_product.hpp"
#include "module_size.hpp"
#include "state_dict.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kWeightsStream =
    0xa77e4710ULL;  // the head's weights, apart from the input's draws

struct SelfPreference {
  float asymmetry = 0.0f;  // max |s_ij - s_ji|
  double self_weight = 0.0;
  std::size_t self_wins = 0;  // rows whose largest weight is on the token itself
  double largest = 0.0;       // mean largest weight
};

// For sequence 0 of (B, T, T) scores and weights.
SelfPreference self_preference(const Tensor3& scores, const Tensor3& weights) {
  SelfPreference p;
  const std::size_t t = scores.shape(1);
  for (std::size_t i = 0; i < t; ++i) {
    float best = 0.0f;
    std::size_t best_j = 0;
    for (std::size_t j = 0; j < t; ++j) {
      p.asymmetry = std::max(p.asymmetry, std::fabs(scores(0, i, j) - scores(0, j, i)));
      if (weights(0, i, j) > best) best = weights(0, i, j), best_j = j;
    }
    p.self_weight += weights(0, i, i);
    p.largest += best;
    p.self_wins += best_j == i;
  }
  p.self_weight /= static_cast<double>(t);
  p.largest /= static_cast<double>(t);
  return p;
}

// Lesson 02's softmax(X Xᵀ / √D) beside this head's softmax(Q Kᵀ / √hs), on the same X.
Table projection_payoff(const Tensor3& same_scores, const Tensor3& same_weights,
                        const Tensor3& scores, const Tensor3& weights) {
  const SelfPreference a = self_preference(same_scores, same_weights),
                       b = self_preference(scores, weights);
  const std::size_t t = scores.shape(1);
  return Table{
      "Sequence 0, the same tokens scored two ways",
      {"", "lesson 02: X Xᵀ / √D", "this head: Q Kᵀ / √hs"},
      {{"max |s_ij - s_ji|", fmt::format("{:.4f}", a.asymmetry),
        fmt::format("{:.4f}", b.asymmetry)},
       {"mean weight on itself", fmt::format("{:.4f}", a.self_weight),
        fmt::format("{:.4f}", b.self_weight)},
       {"rows whose largest weight is on itself", fmt::format("{} of {}", a.self_wins, t),
        fmt::format("{} of {}", b.self_wins, t)},
       {"mean largest weight", fmt::format("{:.4f}", a.largest), fmt::format("{:.4f}", b.largest)},
       {"uniform weight", fmt::format("{:.4f}", 1.0 / static_cast<double>(t)),
        fmt::format("{:.4f}", 1.0 / static_cast<double>(t))}}};
}

}  // namespace

LessonRun run_attention(const AttentionLessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options.common);
  const bool head = options.variant == "head";
  if (!head && options.variant != "self-attention") {
    throw Error(ErrorKind::bad_value, "attention_lesson",
                fmt::format("'{}' is not an attention variant: use self-attention or head",
                            options.variant))
        .about("variant");
  }
  if (!head && options.head_size) {
    throw Error(ErrorKind::bad_value, "attention_lesson",
                "only the head variant has a head size (SelfAttention's is D): add <variant> head")
        .about("head_size");
  }
  const std::size_t hs = head ? options.head_size.value_or(width) : width;
  const Module model = head ? describe_attention_head(width, hs) : describe_self_attention(width);
  const bool masked = options.causal || !options.lengths.empty();
  // At the peak, the permutation check: X, the mask, the weights and their copy in the run, the
  // steps and their copies, the heatmap, the reversed X with its own forward, and a float64
  // reference.
  MemoryPlan plan = plan_lesson_input(options.common);
  append(plan, plan_weights_file(options.weights));
  if (masked) plan.push_back({"the mask", {batch, tokens, tokens}, "B T T"});
  plan.push_back(planned_weights("the weights", module_size(model), 1, " D/hs"));
  plan.push_back(planned_weights("the weights", module_size(model), 1, " D/hs", Held::weights));
  const MemoryPlan steps = plan_attention(batch, tokens, hs);
  append(plan, steps);
  append(plan, held_as(Held::before_shown, plan_attention_temporaries(batch, tokens, hs)));
  plan.push_back({"X", {batch, tokens, width}, "B T D", 4, Held::shown});
  append(plan, held_as(Held::shown, steps));
  plan.push_back(planned_heatmap(tokens, tokens, "T T"));
  if (!masked) append(plan, plan_dot_product_attention(batch, tokens, width));  // lesson 02's
  if (!masked || (options.causal && options.lengths.empty())) {
    plan.push_back({"the reversed X", {batch, tokens, width}, "B T D"});
    plan.push_back({"its output and the output reversed", {2, batch, tokens, hs}, " B T hs"});
    append(plan, steps);
    append(plan, plan_attention_temporaries(batch, tokens, hs));
    append(plan, plan_attention_float64(batch, tokens, width, hs));
  }
  check_budget("attention", plan);
  const Tensor3 x = lesson_input(options.common, "(B, T, D)", {batch, tokens, width});  // (B,T,D)
  const Tensor3 mask =
      masked ? attention_mask(batch, tokens, options.causal, options.lengths) : Tensor3();

  LessonRun run("attention");
  record_settings(run, options.common, {{"batch", batch}, {"seq", tokens}, {"d-model", width}});
  run.setting("variant", options.variant);
  if (head) run.setting("head-size", std::to_string(hs));
  if (options.causal) run.setting("mask", "causal");
  if (!options.lengths.empty())
    run.setting("lengths", fmt::format("{}", fmt::join(options.lengths, ",")));
  if (options.weights) run.setting("weights", options.weights_name);
  record_trained(run, options.trained);
  if (options.trained) run.setting("head", std::to_string(options.trained_head));

  // The weights: from --weights, else PyTorch-style random initialisation from the seed.
  Rng rng(options.common.seed ^ kWeightsStream);
  SelfAttention self_attention;
  AttentionHead attention_head;
  if (head) {
    attention_head = init_attention_head(rng, width, hs);
    if (options.weights)
      load_state_dict(attention_head, model, *options.weights, options.weights_name);
    run.state_dict = collect_state_dict(attention_head);
  } else {
    self_attention = init_self_attention(rng, width);
    if (options.weights)
      load_state_dict(self_attention, model, *options.weights, options.weights_name);
    run.state_dict = collect_state_dict(self_attention);
  }
  auto attend = [&](const Tensor3& input, const Tensor3* m) {
    return head ? forward(attention_head, input, m) : forward(self_attention, input, m);
  };
  const AttentionSteps s = attend(x, masked ? &mask : nullptr);

  run.section(!head                        ? "intro"
              : options.pretrained.empty() ? "intro_head"
                                           : "intro_head_pretrained");
  if (!options.pretrained.empty())
    run.prose(pretrained_note(options.pretrained, "one head", options.pretrained_gpt2));
  run.table(parameter_table(model));
  run.step("input", "X, one row of width D per token", to_array(x));
  run.section("projections");
  const char* bias = head ? " + b" : "";
  run.step("queries", fmt::format("Q = X W_qᵀ{}: what each token looks for", bias),
           to_array(s.queries));
  run.step("keys", fmt::format("K = X W_kᵀ{}: what each token offers to be found by", bias),
           to_array(s.keys));
  run.step("values", fmt::format("V = X W_vᵀ{}: what each token passes on", bias),
           to_array(s.values));
  run.section("scores");
  run.step("scores", "Q Kᵀ: query i against key j", to_array(s.scores));
  run.section(masked ? "scaled_scores_masked" : "scaled_scores");
  run.step("scaled_scores",
           fmt::format("Q Kᵀ / √{}{}", hs, masked ? " + mask (-inf where hidden)" : ""),
           to_array(s.scaled_scores));
  run.section("weights");
  run.step("weights", "softmax over the keys (last axis)", to_array(s.weights));
  const std::vector<std::string> labels = options.trained           ? options.trained->tokens
                                          : !options.tokens.empty() ? options.tokens
                                                                    : token_labels(tokens);
  run.heatmap({"weights of sequence 0 (rows: queries, columns: keys)", first_matrix(s.weights),
               labels, labels, HeatmapKind::weights, masked});
  if (options.trained) {
    run.prose(trained_note(*options.trained, fmt::format("head {}", options.trained_head)));
    show_trained_heads(run, *options.trained, options.trained_head);
  }
  run.section("output");
  run.step("output", "weights @ V: each token's mix of the values", to_array(s.output));

  if (!masked) {
    // The payoff of lessons 01 and 02: the same tokens, scored against themselves.
    const DotProductSteps same = dot_product_attention(x, std::sqrt(static_cast<float>(width)));
    run.section("payoff");
    run.table(projection_payoff(same.raw_weights, same.weights, s.scaled_scores, s.weights));
  }

  run.section(masked ? "checks_masked" : "checks");
  const float worst = max_row_sum_error(s.weights);
  const float sum_allowed = summation_tolerance(tokens);
  run.check("every row of weights sums to 1", worst <= sum_allowed,
            roundoff_evidence("max |sum - 1|", worst, sum_allowed));
  const std::vector<std::size_t> order = [&,
                                          tokens = tokens] {  // clang 14 cannot capture a binding
    std::vector<std::size_t> o(tokens);
    for (std::size_t i = 0; i < tokens; ++i)
      o[i] = tokens - 1 - i;
    return o;
  }();
  auto exact = [&](const Tensor3& input, const Tensor3* m) {  // the same layer in float64
    return head ? forward_float64(attention_head, input, m)
                : forward_float64(self_attention, input, m);
  };
  if (masked) {
    float hidden = 0.0f;
    std::size_t count = 0;
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < tokens; ++i)
        for (std::size_t j = 0; j < tokens; ++j)
          if (std::isinf(mask(b, i, j))) hidden = std::max(hidden, s.weights(b, i, j)), ++count;
    run.check("every masked key gets weight exactly 0", hidden == 0.0f,
              fmt::format("{} masked entries, largest weight {:g}", count, hidden));
    if (options.causal && options.lengths.empty() && tokens > 1) {
      // The mask stays where it is while the tokens move: the first token now sees only itself.
      const Tensor3 reversed = permute_tokens(x, order);
      const Tensor3 reversed_output = attend(reversed, &mask).output;
      const float difference = max_difference(reversed_output, permute_tokens(s.output, order));
      const float roundoff = max_difference(reversed_output, exact(reversed, &mask)) +
                             max_difference(s.output, exact(x, &mask));
      run.section("checks_causal_order");
      run.check(
          "the causal mask breaks permutation equivariance: reversing the tokens does not "
          "reverse the outputs",
          difference > 1000.0f * roundoff,
          fmt::format("max |Y(reversed X) - reversed Y(X)| = {:.4f}, against round-off of "
                      "{:.1e}",
                      difference, roundoff));
    }
  } else {
    const Tensor3 reversed = permute_tokens(x, order);
    const Tensor3 reversed_output = attend(reversed, nullptr).output;
    const Tensor3 reversed_exact = exact(reversed, nullptr), output_exact = exact(x, nullptr);
    check_same_up_to_roundoff(
        run, "still permutation-equivariant: reversing the tokens reverses the outputs",
        "max |difference|", max_difference(reversed_output, permute_tokens(s.output, order)),
        max_difference(reversed_output, reversed_exact), max_difference(s.output, output_exact));
    check_same_up_to_roundoff(
        run, "mean pooling is permutation-invariant: the mean output over the tokens is unchanged",
        "max |mean Y(reversed X) - mean Y(X)|",
        max_difference(mean_over_tokens(reversed_output), mean_over_tokens(s.output)),
        // Each pooled output's distance from its float64 mean; the two float64 means differ
        // only in the order of their sums.
        max_difference(mean_over_tokens(reversed_output), mean_over_tokens(reversed_exact)) +
            max_difference(mean_over_tokens(reversed_exact), mean_over_tokens(output_exact)),
        max_difference(mean_over_tokens(s.output), mean_over_tokens(output_exact)));
  }
  run.section("parameters");
  run.parameters = count_parameters(model);
  return run;
}

}  // namespace attn::lessons
