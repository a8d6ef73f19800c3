// Lesson 01, dot-product self-attention. Legend: B batch, T tokens, D model width.
#include "01-dot-product/dot_product_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/random.hpp"
#include "dot_product.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kOrderStream =
    0x5eed0f0e11e5ULL;  // the permutation of the equivariance check

// A shuffled token order drawn from the seed (Fisher-Yates); never the identity when T > 1.
std::vector<std::size_t> shuffled_order(std::uint64_t seed, std::size_t tokens) {
  std::vector<std::size_t> order(tokens);
  for (std::size_t i = 0; i < tokens; ++i)
    order[i] = i;
  if (tokens < 2) return order;
  Rng rng(seed ^ kOrderStream);
  do {
    for (std::size_t i = tokens - 1; i > 0; --i) {
      std::swap(order[i],
                order[static_cast<std::size_t>(rng.uniform() * static_cast<double>(i + 1))]);
    }
  } while (std::is_sorted(order.begin(), order.end()));
  return order;
}

}  // namespace

LessonRun run_dot_product(const LessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options);
  // At the peak, the permutation check: X, the steps and their copies in the run, P X with its
  // own steps, P Y(X), and a float64 reference.
  MemoryPlan plan = plan_lesson_input(options);
  const MemoryPlan steps = plan_dot_product_attention(batch, tokens, width);
  append(plan, steps);
  plan.push_back({"X", {batch, tokens, width}, "B T D", 4, Held::shown});
  append(plan, held_as(Held::shown, steps));
  plan.push_back({"P X, P Y(X) and Y(P X)", {3, batch, tokens, width}, " B T D"});
  append(plan, steps);
  append(plan, plan_dot_product_attention_float64(batch, tokens, width));
  plan.push_back(planned_heatmap(tokens, tokens, "T T"));
  plan.push_back(planned_table_rows("the self table", tokens, "T"));
  check_budget("dot-product", plan);
  const Tensor3 x = lesson_input(options, "(B, T, D)", {batch, tokens, width});  // (B,T,D)

  LessonRun run("dot-product");
  record_settings(run, options, {{"batch", batch}, {"seq", tokens}, {"d-model", width}});
  run.section("intro");
  run.step("input", "X, one row of width D per token", to_array(x));

  const DotProductSteps s = dot_product_attention(x);
  run.section("raw_weights");
  run.step("raw_weights", "W' = X Xᵀ, every token's dot product with every token",
           to_array(s.raw_weights));
  // W' = X Xᵀ is symmetric: w'_ij and w'_ji sum the same D products, up to their round-off.
  float asymmetry = 0.0f, largest_score = 0.0f;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < tokens; ++i)
      for (std::size_t j = 0; j < tokens; ++j) {
        asymmetry = std::max(asymmetry, std::fabs(s.raw_weights(b, i, j) - s.raw_weights(b, j, i)));
        largest_score = std::max(largest_score, std::fabs(s.raw_weights(b, i, j)));
      }
  const float symmetry_allowed = summation_tolerance(width, largest_score);
  run.check("W' is symmetric: w'_ij = w'_ji", asymmetry <= symmetry_allowed,
            roundoff_evidence("max |w'_ij - w'_ji|", asymmetry, symmetry_allowed));

  run.section("weights");
  run.step("weights", "W = softmax(W') over the last axis", to_array(s.weights));
  run.heatmap({"W of sequence 0 (rows: queries, columns: keys)", first_matrix(s.weights),
               token_labels(tokens), token_labels(tokens)});
  // How much of each row the token itself takes, for sequence 0.
  Table self{"Sequence 0: each token against itself and its best other match",
             {"token", "‖x_i‖² = w'_ii", "largest w'_ij, j ≠ i", "w_ii", "largest w_ij, j ≠ i"},
             {}};
  std::size_t self_wins = 0;
  // The row whose best other score comes closest to (or beats) its own: Cauchy-Schwarz says only a
  // longer token can.
  std::size_t close_row = 0, close_other = 0;
  float close_gap = INFINITY;
  for (std::size_t i = 0; i < tokens; ++i) {
    float other_score = -INFINITY, other_weight = 0.0f;
    std::size_t other = i;
    for (std::size_t j = 0; j < tokens; ++j)
      if (j != i) {
        if (s.raw_weights(0, i, j) > other_score) other_score = s.raw_weights(0, i, j), other = j;
        other_weight = std::max(other_weight, s.weights(0, i, j));
      }
    self_wins += s.weights(0, i, i) > other_weight;
    if (tokens > 1 && s.raw_weights(0, i, i) - other_score < close_gap)
      close_gap = s.raw_weights(0, i, i) - other_score, close_row = i, close_other = other;
    self.rows.push_back({fmt::format("x{}", i), fmt::format("{:.4f}", s.raw_weights(0, i, i)),
                         tokens > 1 ? fmt::format("{:.4f}", other_score) : "-",
                         fmt::format("{:.4f}", s.weights(0, i, i)),
                         tokens > 1 ? fmt::format("{:.4f}", other_weight) : "-"});
  }
  self.title += fmt::format(" (itself largest in {} of {} rows)", self_wins, tokens);
  run.section("self");
  run.table(std::move(self));
  if (tokens > 1) {
    const std::size_t i = close_row, j = close_other;
    const double own = s.raw_weights(0, i, i), length = s.raw_weights(0, j, j);
    const double score = s.raw_weights(0, i, j), bound = std::sqrt(own * length);
    const std::string first =
        fmt::format("{} row x{}, where x{} scores {:.4f} against x{}'s own {:.4f}.",
                    close_gap < 0.0f ? "Beaten:" : "Closest:", i, j, score, i, own);
    const std::string why =
        length > own
            ? fmt::format(
                  "x{} is longer (‖x{}‖² = {:.4f}), so the Cauchy-Schwarz bound ‖x{}‖ ‖x{}‖ = "
                  "{:.4f} lies above the self-score; how near x{} comes depends on its direction "
                  "(cosine {:.2f} with x{}).",
                  j, j, length, i, j, bound, j, score / std::max(bound, 1e-30), i)
            : fmt::format(
                  "x{} is not longer (‖x{}‖² = {:.4f}), so its score cannot pass "
                  "‖x{}‖ ‖x{}‖ = {:.4f}, which is at most the self-score.",
                  j, j, length, i, j, bound);
    run.prose(wrapped_prose(first + " " + why));
  }
  run.section("output");
  run.step("output", "Y = W X, each row a weighted average of the rows of X", to_array(s.output));

  run.section("checks");
  // Rows of W sum to 1: weights.sum(dim=-1), up to the round-off of summing T floats.
  const float worst_sum = max_row_sum_error(s.weights);  // a NaN sum fails the check
  const float sum_allowed = summation_tolerance(tokens);
  run.check("every row of W sums to 1", worst_sum <= sum_allowed,
            roundoff_evidence("max |sum - 1|", worst_sum, sum_allowed));

  // A weighted average with non-negative weights lies between the smallest and largest input,
  // coordinate by coordinate, up to the round-off of its sum and of the weights' total.
  std::size_t outside = 0;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t d = 0; d < width; ++d) {
      float lo = INFINITY, hi = -INFINITY;
      for (std::size_t j = 0; j < tokens; ++j)
        lo = std::min(lo, x(b, j, d)), hi = std::max(hi, x(b, j, d));
      const float largest = std::max(std::fabs(lo), std::fabs(hi));
      const float slack = summation_tolerance(tokens, largest) + worst_sum * largest;
      for (std::size_t i = 0; i < tokens; ++i)
        outside += !(s.output(b, i, d) >= lo - slack && s.output(b, i, d) <= hi + slack);
    }
  run.check("every output lies between the smallest and largest input, coordinate by coordinate",
            outside == 0, fmt::format("{} of {} values outside", outside, batch * tokens * width));

  // Permutation equivariance: attention(P X) = P attention(X), up to the round-off of the two runs.
  const std::vector<std::size_t> order = shuffled_order(options.seed, tokens);
  const Tensor3 permuted = permute_tokens(x, order);
  const Tensor3 permuted_then_attended = dot_product_attention(permuted).output;
  const Tensor3 attended_then_permuted = permute_tokens(s.output, order);
  check_same_up_to_roundoff(
      run, "permuting the tokens permutes the outputs the same way",
      fmt::format("order ({}): max |Y(PX) - P Y(X)|", index_list(order)),
      max_difference(permuted_then_attended, attended_then_permuted),
      max_difference(permuted_then_attended, dot_product_attention_float64(permuted)),
      max_difference(s.output, dot_product_attention_float64(x)));

  run.section("parameters");
  run.parameters = 0;
  return run;
}

}  // namespace attn::lessons
