// Lesson 03, softmax. Legend: B batch, T query tokens, S key tokens (S = T for self-attention).
#include "03-softmax/softmax_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "io/print.hpp"
#include "kernels/torch_order.hpp"
#include "scaling.hpp"
#include "softmax.hpp"

namespace attn::lessons {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

std::string number(float v) {
  if (std::isnan(v)) return "nan";  // fmt would print the sign of a negative nan
  return std::isfinite(v) ? fmt::format("{:.4f}", v) : fmt::format("{}", v);
}

std::string row_string(const float* w, std::size_t n, int digits = 4) {
  std::vector<std::string> parts;
  for (std::size_t j = 0; j < n; ++j)
    parts.push_back(std::isnan(w[j]) ? "nan" : fmt::format("{:.{}f}", w[j], digits));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

Tensor3 one_row(std::initializer_list<float> values) {
  Tensor3 t({1, 1, values.size()});
  std::copy(values.begin(), values.end(), t.begin());
  return t;
}

// Scores near 89 overflow exp in float32 (FLT_MAX is about 3.4e38 = e^88.72).
Table overflow_table() {
  const Tensor3 scores = one_row({88.0f, 89.0f, 90.0f});
  const Tensor3 naive = softmax_naive(scores), stable = softmax(scores);
  Table t{"Scores near 89 in float32",
          {"score", "exp(score)", "naive softmax", "exp(score - max)", "softmax"},
          {}};
  for (std::size_t j = 0; j < 3; ++j) {
    const float s = scores(0, 0, j);
    t.rows.push_back({fmt::format("{:g}", s), fmt::format("{:.4e}", torch_exp(s)),
                      number(naive(0, 0, j)), number(torch_exp(s - 90.0f)),
                      number(stable(0, 0, j))});
  }
  return t;
}

// -inf versus seed 001's masked_fill(mask == 0, -1e9), on a row whose last two keys are padding
// and on a row where everything is masked.
Table mask_table() {
  const std::initializer_list<float> partly_inf{2.0f, 1.0f, -kInf, -kInf},
      partly_big{2.0f, 1.0f, -1e9f, -1e9f};
  const std::initializer_list<float> all_inf{-kInf, -kInf, -kInf, -kInf},
      all_big{-1e9f, -1e9f, -1e9f, -1e9f};
  Table t{"Masking the scores [2, 1, 0.5, 3]: keys 3 and 4 are padding",
          {"mask", "attn softmax", "torch.softmax"},
          {}};
  auto row = [&](const char* mask, std::initializer_list<float> values) {
    const Tensor3 w = softmax(one_row(values));
    // torch: the shift -inf - (-inf) is nan
    const bool torch_nan = count_fully_masked_rows(one_row(values)) > 0;
    t.rows.push_back(
        {mask, row_string(w.data(), 4, 3),
         torch_nan ? std::string("[nan, nan, nan, nan]") : row_string(w.data(), 4, 3)});
  };
  row("-inf, keys 3-4", partly_inf);
  row("-1e9, keys 3-4", partly_big);
  row("-inf, all keys", all_inf);
  row("-1e9, all keys", all_big);
  return t;
}

Table temperature_table() {
  Table t{"softmax([2, 1, 0.5, 3] / τ)", {"τ", "weights", "entropy"}, {}};
  for (float tau : {0.25f, 0.5f, 1.0f, 2.0f, 4.0f}) {
    Tensor3 scores = one_row({2.0f, 1.0f, 0.5f, 3.0f});
    scores /= tau;
    const Tensor3 w = softmax(scores);
    t.rows.push_back({fmt::format("{:g}", tau), row_string(w.data(), 4),
                      fmt::format("{:.3f}", entropy(w.data(), 4))});
  }
  return t;
}

// keepdim reductions over the last axis: (B,T,S) -> (B,T,1).
template <class Reduce>
Tensor3 reduce_rows(const Tensor3& x, float init, Reduce reduce) {
  const std::size_t n = x.shape(2);
  Tensor3 out({x.shape(0), x.shape(1), 1});
  for (std::size_t r = 0; r < out.size(); ++r) {
    float acc = init;
    for (std::size_t j = 0; j < n; ++j)
      acc = reduce(acc, x.data()[r * n + j]);
    out.data()[r] = acc;
  }
  return out;
}
}  // namespace

LessonRun run_softmax_lesson(const SoftmaxLessonOptions& options) {
  const LessonOptions& common = options.common;
  Sizes3 sizes{common.batch, common.seq, common.seq};
  if (common.input && common.input->rank() == 3)
    sizes = {common.input->shape[0], common.input->shape[1], common.input->shape[2]};
  const auto [batch, tokens, keys] = sizes;
  // At the peak, the checks: S and its tempered or masked copy, the steps (S - m, exp(S - m), the
  // weights), their copies in the run, and exp(S - m) / sums.
  const Shape btt = {batch, tokens, keys};
  MemoryPlan plan = {
      {"S", btt, "B T T"},
      {"S tempered or masked", btt, "B T T"},
      {"S - m, exp(S - m), the weights and their quotient", {4, batch, tokens, keys}, " B T T"},
      {"m", {batch, tokens}, "B T", 4, Held::shown},
      {"the row sums", {batch, tokens}, "B T", 4, Held::shown}};
  std::vector<std::string> shown = {"S"};
  if (options.temperature != 1.0f) shown.push_back("S / τ");
  if (options.causal) shown.push_back("S + mask");
  for (const char* name : {"S - m", "exp(S - m)", "the weights"})
    shown.push_back(name);
  for (std::string& name : shown)
    plan.push_back({std::move(name), btt, "B T T", 4, Held::shown});
  if (common.input) plan.push_back({"the input array", btt, "B T T", 4, Held::kept});
  if (options.causal)
    plan.push_back({"the mask and the masked S", {tokens * keys + batch * tokens * keys}, "B/T"});
  plan.push_back(planned_heatmap(tokens, keys, "T S"));
  check_budget("softmax", plan);
  if (options.causal && tokens != keys) {
    throw Error(
        ErrorKind::bad_size, "softmax_lesson",
        fmt::format(
            "a causal mask needs square scores (B, T, T); the input has shape ({}, {}, {}): "
            "pass scores with as many keys as queries, or drop <mask> causal",
            batch, tokens, keys))
        .about("mask");
  }
  if (!(options.temperature > 0.0f) || !std::isfinite(options.temperature)) {
    throw Error(ErrorKind::bad_value, "softmax_lesson",
                fmt::format("{} is not a temperature: use a positive number such as 0.5 or 2",
                            options.temperature))
        .about("temperature");
  }
  // Outside this range S / τ overflows or the weights are one-hot or uniform to float precision.
  if (options.temperature < 1e-3f || options.temperature > 1e3f) {
    throw Error(ErrorKind::bad_value, "softmax_lesson",
                fmt::format("{:g} is outside 0.001 to 1000: S / τ would overflow or flatten "
                            "to uniform; use a value such as 0.5 or 2",
                            options.temperature))
        .about("temperature");
  }
  const Tensor3 scores = lesson_input(common, "(B, T, S)", sizes);  // (B,T,S)

  LessonRun run("softmax");
  record_settings(run, common, {{"batch", batch}, {"seq", tokens}});
  if (options.temperature != 1.0f)
    run.setting("temperature", fmt::format("{:g}", options.temperature));
  if (options.causal) run.setting("mask", "causal");

  run.section("intro");
  run.step("input", "S, the scores: row i holds query i's score for every key", to_array(scores));

  Tensor3 s = scores;
  if (options.temperature != 1.0f) {
    s = scores / options.temperature;
    run.section("temperature_step");
    run.step("tempered", fmt::format("S / τ with τ = {:g}", options.temperature), to_array(s));
  }
  if (options.causal) {
    s = apply_mask(s, causal_mask(tokens));
    run.section("masked_step");
    run.step("masked", "S + causal mask: -inf above the diagonal", to_array(s));
  }

  const Tensor3 row_max =
      reduce_rows(s, -kInf, [](float a, float b) { return std::max(a, b); });  // (B,T,1)
  const Tensor3 shifted = s - row_max;                                         // (B,T,S)
  Tensor3 exponentials(shifted.shape());                                       // (B,T,S)
  std::transform(shifted.begin(), shifted.end(), exponentials.begin(), torch_exp);
  const Tensor3 sums =
      reduce_rows(exponentials, 0.0f, [](float a, float b) { return a + b; });  // (B,T,1)
  const Tensor3 weights = softmax(s);                                           // (B,T,S)

  run.section("row_max");
  run.step("row_max", "m = S.max(dim=-1, keepdim=True)", to_array(row_max));
  run.section("shifted");
  run.step("shifted", "S - m: every row's largest entry becomes 0", to_array(shifted));
  run.section("exponentials");
  run.step("exponentials",
           options.causal ? "exp(S - m), each in [0, 1]: exactly 0 where masked"
                          : "exp(S - m), each in (0, 1]",
           to_array(exponentials));
  run.section("row_sums");
  run.step("row_sums", "exp(S - m).sum(dim=-1, keepdim=True)", to_array(sums));
  run.section("output");
  run.step("output", "softmax(S) = exp(S - m) / sums", to_array(weights));
  run.heatmap({options.causal ? "the weights of sequence 0 with the causal mask (rows: queries, "
                                "columns: keys)"
                              : "the weights of sequence 0 (rows: queries, columns: keys)",
               first_matrix(weights), token_labels(tokens), token_labels(keys),
               HeatmapKind::weights, options.causal});

  run.section("checks");
  Tensor2 row_totals({batch, tokens});
  for (std::size_t r = 0; r < batch * tokens; ++r) {
    float total = 0.0f;
    for (std::size_t j = 0; j < keys; ++j)
      total += weights.data()[r * keys + j];
    row_totals.data()[r] = total;
  }
  const float worst = max_row_sum_error(weights);  // a NaN sum makes the check fail
  const float allowed = summation_tolerance(keys);
  run.check("weights.sum(dim=-1) is all ones", worst <= allowed,
            fmt::format("{}\n{}", roundoff_evidence("max |sum - 1|", worst, allowed),
                        format_torch(to_array(row_totals))));
  const Tensor3 divided = exponentials / sums;
  const float step_diff = max_difference(divided, weights);
  // The steps sum the exponentials in another order than softmax(): the sums, and so the weights
  // (at most 1), differ by round-off.
  run.check("the steps above give the same weights as softmax()", step_diff <= allowed,
            roundoff_evidence("max difference", step_diff, allowed));
  if (options.causal) {
    float above = 0.0f;
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < tokens; ++i)
        for (std::size_t j = i + 1; j < keys; ++j)
          above = std::max(above, weights(b, i, j));
    run.check("the causal mask zeroes the upper triangle", above == 0.0f,
              fmt::format("largest weight above the diagonal {:g}", above));
  }

  run.section("overflow");
  run.table(overflow_table());
  run.section("masking");
  run.table(mask_table());
  run.section("temperature");
  run.table(temperature_table());
  run.section("parameters");
  run.parameters = 0;
  return run;
}

}  // namespace attn::lessons
