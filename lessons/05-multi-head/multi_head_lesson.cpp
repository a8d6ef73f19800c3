// Lesson 05, multi-head attention. Legend: B batch, T tokens, D model width, H heads, hs head size.
#include "05-multi-head/multi_head_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "04-attention/attention_lesson.hpp"
#include "base/budget.hpp"
#include "base/count.hpp"
#include "base/names.hpp"
#include "base/random.hpp"
#include "module_size.hpp"
#include "multi_head.hpp"
#include "state_dict.hpp"
#include "summary.hpp"
#include "trace.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kVariantStream =
    0x3a17ULL;  // each variant's weights (with the variant's own offset), apart from the input's
constexpr std::uint64_t kRedrawStream = 0x5eed001ULL;  // the redrawn W_V of seed 001's bug

constexpr std::size_t kHeatmapHeads = 8;  // heads drawn as heatmaps

MultiHeadVariant parse_variant(const std::string& name) {
  if (const auto v = multi_head_variant(name)) return *v;
  throw Error(
      ErrorKind::bad_value, "multi_head_lesson",
      fmt::format("'{}' is not a multi-head variant: use narrow, wide, book, fused or compare",
                  name))
      .about("variant");
}

// torchinfo's mult-adds: every Linear's parameters times the rows it is applied to.
Count linear_mult_adds(const std::vector<LayerInfo>& rows) {
  Count total;
  for (const LayerInfo& row : rows) {
    if (row.class_name != "Linear" || row.output_shape.empty()) continue;
    Count count;
    for (const ParameterInfo& p : row.parameters)
      count += Count::product(p.shape);
    total += count * Count::product(row.output_shape, 0,
                                    row.output_shape.size() - 1);  // rows: all but the last axis
  }
  return total;
}

std::string_view formula(MultiHeadVariant v) {
  static constexpr Named<MultiHeadVariant> kFormulas[] = {
      {MultiHeadVariant::narrow, "3D² + D² + D"},
      {MultiHeadVariant::wide, "3D·DH + DH·D + D"},
      {MultiHeadVariant::book, "3H(D·D/H + D/H) + D² + D"},
      {MultiHeadVariant::fused, "4D²"}};
  return name_in(kFormulas, v, "");
}

void check_rows_sum_to_one(LessonRun& run, const Tensor4& weights) {
  const float worst = max_row_sum_error(weights);
  const float allowed = summation_tolerance(weights.shape(3));
  run.check("every head's rows of weights sum to 1", worst <= allowed,
            roundoff_evidence("max |sum - 1|", worst, allowed));
}

// Each variant's weights come from the seed and the variant alone, so that the compare view and
// `--variant NAME` (and every section below) use the same layer.
MultiHeadAttention seeded_layer(std::uint64_t seed, MultiHeadVariant v, std::size_t width,
                                std::size_t heads) {
  Rng rng(seed ^ kVariantStream ^ ((static_cast<std::uint64_t>(v) + 1) * 0x9e3779b97f4a7c15ULL));
  return init_multi_head(rng, v, width, heads);
}

// The fused layer with narrow's four matrices: toqueries, tokeys and tovalues are W_Q, W_K and
// W_V, unifyheads (without its bias) is W_O. Both cut the projections into the same H blocks.
FusedMultiHead fused_from_narrow(const NarrowMultiHead& narrow) {
  FusedMultiHead fused;
  fused.heads = narrow.heads;
  fused.W_Q = narrow.toqueries;
  fused.W_K = narrow.tokeys;
  fused.W_V = narrow.tovalues;
  fused.W_O = Linear{narrow.unifyheads.weight, Tensor1({0}), false};
  return fused;
}

// One form's layer from the seed, as seeded_layer draws it.
template <class Form>
Form seeded(std::uint64_t seed, MultiHeadVariant v, std::size_t width, std::size_t heads) {
  return std::get<Form>(seeded_layer(seed, v, width, heads));
}

// What attention costs as T grows, at this run's B, D and H (hs = D/H): the weights' size and
// the two products that are not modules, beside the projections torchinfo counts.
Table cost_table(std::size_t batch, std::size_t width, std::size_t heads, std::size_t tokens) {
  const std::size_t hs = width / heads;
  Table table{
      fmt::format("Attention's cost as T grows (B = {}, D = {}, H = {}, hs = {}): sizes and "
                  "multiply-adds",
                  batch, width, heads, hs),
      {"T", "weights B·H·T²", "bytes", "Q Kᵀ", "P V", "4 projections"},
      {}};
  // This run's T, the break-even T = 2D (2·B·T²·D = 4·B·T·D²), and longer contexts.
  std::vector<std::size_t> lengths = {tokens, 2 * width, 128, 512, 2048, 8192};
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  std::erase_if(lengths, [&](std::size_t length) {
    return length < tokens || (length > 2 * width && length > tokens && length < 128);
  });
  for (std::size_t length : lengths) {
    const Count weights = Count(batch) * Count(heads) * Count(length) * Count(length);
    const Count product = weights * Count(hs);  // each of Q Kᵀ and P V
    const Count projections = Count(4) * Count(batch) * Count(length) * Count(width) * Count(width);
    const std::string mark = length == tokens ? " (this run)" : length == 2 * width ? " (2D)" : "";
    table.rows.push_back({with_commas(static_cast<std::int64_t>(length)) + mark,
                          with_commas(weights.value()), with_commas((weights * Count(4)).value()),
                          with_commas(product.value()), with_commas(product.value()),
                          with_commas(projections.value())});
  }
  return table;
}

// The sizes a variant's weights grow with.
std::string axes(MultiHeadVariant v) {
  return v == MultiHeadVariant::wide ? " D/H" : " D";
}

// For check_budget, the pieces both forms hold: X and the mask; one variant's module tree, its
// weights and the peak of its forward.
MemoryPlan plan_input(const MultiHeadLessonOptions& o, bool masked) {
  const auto [batch, tokens, width] = lesson_sizes(o.common);
  MemoryPlan plan = plan_lesson_input(o.common);
  append(plan, plan_weights_file(o.weights));
  if (masked) plan.push_back({"the mask", {batch, tokens, tokens}, "B T T"});
  plan.push_back({"X", {batch, tokens, width}, "B T D", 4, Held::shown});
  return plan;
}

MemoryPlan plan_layer(const MultiHeadLessonOptions& o, MultiHeadVariant v) {
  const ModuleSize size = multi_head_size(v, lesson_sizes(o.common).d_model, o.heads);
  return {planned_tree("the module tree", size, 1, " H"),
          planned_weights("the weights", size, 1, axes(v))};
}

// A forward's peak: the steps it returns, and its temporaries, held as `temporaries`.
MemoryPlan plan_forward(const MultiHeadLessonOptions& o, MultiHeadVariant v, bool masked,
                        Held temporaries) {
  const auto [batch, tokens, width] = lesson_sizes(o.common);
  MemoryPlan plan = plan_multi_head(v, batch, tokens, width, o.heads);
  append(plan, held_as(temporaries,
                       plan_multi_head_temporaries(v, batch, tokens, width, o.heads, masked)));
  return plan;
}

// One variant: the layer, its weights' copy in the run and the parameter table; the steps, then
// their copies shown and up to four heatmaps; for fused, seed 001's forward beside them.
MemoryPlan plan_variant(const MultiHeadLessonOptions& o, MultiHeadVariant v, bool masked) {
  const auto [batch, tokens, width] = lesson_sizes(o.common);
  const ModuleSize size = multi_head_size(v, width, o.heads);
  MemoryPlan plan = plan_input(o, masked);
  append(plan, plan_layer(o, v));
  plan.push_back(planned_weights("the weights", size, 1, axes(v), Held::weights));
  plan.push_back(planned_table_rows("the parameter table",
                                    static_cast<std::size_t>(size.tensors.value()), "H"));
  append(plan, plan_forward(o, v, masked, Held::before_shown));
  append(plan, held_as(Held::shown, plan_multi_head(v, batch, tokens, width, o.heads)));
  for (std::size_t h = 0; h < std::min(o.heads, kHeatmapHeads); ++h)
    plan.push_back(planned_heatmap(tokens, tokens, "T T"));
  if (v == MultiHeadVariant::fused) {
    append(plan, plan_forward(o, v, masked, Held::computing));
    plan.push_back({"seed 001's output", {batch, tokens, width}, "B T D", 4, Held::shown});
  }
  return plan;
}

// Every variant in turn (its layer, forward and summary); then book and fused side by side with
// their float64 references; then fused's steps beside seed 001's forward. The outputs are shown.
MemoryPlan plan_compare(const MultiHeadLessonOptions& o, bool masked) {
  const auto [batch, tokens, width] = lesson_sizes(o.common);
  MemoryPlan plan = plan_input(o, masked);
  MemoryPlan one_variant;
  for (MultiHeadVariant v : kMultiHeadVariants) {
    MemoryPlan phase = plan_layer(o, v);
    append(phase, plan_forward(o, v, masked, Held::computing));
    append(phase, planned_summary(multi_head_size(v, width, o.heads),
                                  v == MultiHeadVariant::book ? "H" : ""));
    one_variant = larger_of(std::move(one_variant), std::move(phase));
  }
  MemoryPlan book_fused = plan_layer(o, MultiHeadVariant::book);
  append(book_fused, plan_forward(o, MultiHeadVariant::book, masked, Held::computing));
  book_fused.push_back(planned_weights("the stacked weights",
                                       multi_head_size(MultiHeadVariant::fused, width, o.heads), 1,
                                       axes(MultiHeadVariant::fused)));
  append(book_fused,
         plan_multi_head_float64(MultiHeadVariant::book, batch, tokens, width, o.heads));
  MemoryPlan narrow_fused = plan_layer(o, MultiHeadVariant::narrow);
  append(narrow_fused, plan_layer(o, MultiHeadVariant::fused));
  append(narrow_fused, plan_forward(o, MultiHeadVariant::narrow, masked, Held::computing));
  narrow_fused.push_back({"the two outputs", {2, batch, tokens, width}, " B T D"});
  append(narrow_fused,
         plan_multi_head_float64(MultiHeadVariant::narrow, batch, tokens, width, o.heads));
  book_fused = larger_of(std::move(book_fused), std::move(narrow_fused));
  MemoryPlan seed001 = plan_layer(o, MultiHeadVariant::fused);
  seed001.push_back({"the right and wrong outputs", {2, batch, tokens, width}, " B T D"});
  append(seed001, plan_multi_head(MultiHeadVariant::fused, batch, tokens, width, o.heads));
  append(seed001, plan_forward(o, MultiHeadVariant::fused, masked, Held::computing));
  append(plan,
         larger_of(larger_of(std::move(one_variant), std::move(book_fused)), std::move(seed001)));
  plan.push_back({"the outputs", {4, batch, tokens, width}, " B T D", 4, Held::shown});
  plan.push_back(planned_table_rows("the cost table", 6, ""));
  return plan;
}

void run_compare(LessonRun& run, const MultiHeadLessonOptions& o, const Tensor3& x,
                 const Tensor3* mask) {
  const std::size_t batch = x.shape(0), tokens = x.shape(1), width = x.shape(2), heads = o.heads;
  run.section("compare");
  Table t{fmt::format("Every variant at D = {}, H = {} on X {}", width, heads, shape_string_of(x)),
          {"variant", "hs", "Q, K, V", "parameters", "formula", "mult-adds"},
          {}};
  Tensor3 book_output;
  for (MultiHeadVariant v : kMultiHeadVariants) {
    const std::size_t hs = head_size(v, width, heads);
    const MultiHeadAttention layer = seeded_layer(o.common.seed, v, width, heads);
    const MultiHeadSteps s = forward(layer, x, mask);
    const Module model = describe_multi_head(v, width, heads);
    const Count attention_mult_adds = Count(2) * Count(batch) * Count(heads) * Count(tokens) *
                                      Count(tokens) * Count(hs);  // QKᵀ and WV
    t.rows.push_back(
        {std::string(variant_name(v)), fmt::format("{}", hs),
         fmt::format("{} x {}", heads, shape_string({batch, tokens, hs})),
         with_commas(count_parameters(model)), std::string(formula(v)),
         with_commas((linear_mult_adds(trace_multi_head(v, width, heads, shape_of(x))) +
                      attention_mult_adds)
                         .value())});
    if (v == MultiHeadVariant::book) {
      book_output = s.output;
    } else {
      run.step(fmt::format("{}_output", variant_name(v)),
               fmt::format("the {} variant's output", variant_name(v)), to_array(s.output));
    }
  }
  run.table(std::move(t));
  run.section("narrow_count");
  Table counts{
      "Parameters at k = 256 as H grows", {"H", "narrow", "seed 004's narrow formula", "wide"}, {}};
  bool narrow_constant = true;
  for (std::size_t h : {1, 2, 4, 8, 16}) {
    const std::int64_t narrow =
        count_parameters(describe_multi_head(MultiHeadVariant::narrow, 256, h));
    const std::int64_t wide = count_parameters(describe_multi_head(MultiHeadVariant::wide, 256, h));
    const std::int64_t seed =
        static_cast<std::int64_t>(3 * 256 * (256 / h) + (256 / h) * 256 + 256);
    narrow_constant = narrow_constant && narrow == 262400;
    counts.rows.push_back(
        {fmt::format("{}", h), with_commas(narrow), with_commas(seed), with_commas(wide)});
  }
  run.table(std::move(counts));
  run.check("narrow has 262,400 parameters at k = 256 for every H", narrow_constant,
            "H = 1, 2, 4, 8, 16");

  run.section("book_fused");
  BookMultiHead book = seeded<BookMultiHead>(o.common.seed, MultiHeadVariant::book, width, heads);
  for (AttentionHead& h : book.heads)
    h.q.bias.fill(0.0f), h.k.bias.fill(0.0f), h.v.bias.fill(0.0f);
  book.output_linear.bias.fill(0.0f);
  const MultiHeadAttention stacked = stack_book_heads(book);
  const MultiHeadAttention book_layer = book;
  const Tensor3 book_y = forward(book, x, mask).output, fused_y = forward(stacked, x, mask).output;
  check_same_up_to_roundoff(run, "book with zero biases = fused with the heads' weights stacked",
                            "max |book - fused|", max_difference(book_y, fused_y),
                            max_difference(book_y, forward_float64(book_layer, x, mask)),
                            max_difference(fused_y, forward_float64(stacked, x, mask)));

  NarrowMultiHead narrow_form =
      seeded<NarrowMultiHead>(o.common.seed, MultiHeadVariant::narrow, width, heads);
  narrow_form.unifyheads.bias.fill(0.0f);
  const MultiHeadAttention narrow = narrow_form;
  const MultiHeadAttention narrow_as_fused = fused_from_narrow(narrow_form);
  const Tensor3 narrow_y = forward(narrow, x, mask).output,
                narrow_fused_y = forward(narrow_as_fused, x, mask).output;
  check_same_up_to_roundoff(
      run, "narrow with a zero output bias = fused with narrow's four matrices",
      "max |narrow - fused|", max_difference(narrow_y, narrow_fused_y),
      max_difference(narrow_y, forward_float64(narrow, x, mask)),
      max_difference(narrow_fused_y, forward_float64(narrow_as_fused, x, mask)));

  run.section("seed001_bug");
  FusedMultiHead fused =
      seeded<FusedMultiHead>(o.common.seed, MultiHeadVariant::fused, width, heads);
  const Tensor3 right = forward(fused, x, mask).output;
  const Tensor3 wrong = forward_with_seed001_bug(fused, x, mask);
  const float bug = max_difference(right, wrong);
  run.check("seed 001's `@ key` computes something else than `@ value`", bug > 1e-4f,
            fmt::format("max |right - wrong| = {:.3g}", bug));
  // Redraw W_V: the right output moves, the wrong one does not move at all.
  Rng redraw(o.common.seed ^ kRedrawStream);
  for (float& w : fused.W_V.weight)
    w = static_cast<float>(redraw.normal());
  const float right_moved = max_difference(forward(fused, x, mask).output, right);
  const float wrong_moved = max_difference(forward_with_seed001_bug(fused, x, mask), wrong);
  run.check(
      "with `@ key`, W_V does not touch the output, so it gets no gradient",
      wrong_moved == 0.0f && right_moved > 1e-4f,
      fmt::format("W_V redrawn: `@ value` output moves by up to {:.3g}, `@ key` output by {:g}",
                  right_moved, wrong_moved));

  run.section("cost");
  run.table(cost_table(batch, width, heads, tokens));
  run.step("output", "the book variant's output (the one the encoder uses)", to_array(book_output));
  run.parameters = count_parameters(describe_multi_head(MultiHeadVariant::book, width, heads));
}

void run_variant(LessonRun& run, const MultiHeadLessonOptions& o, MultiHeadVariant v,
                 const Tensor3& x, const Tensor3* mask) {
  const std::size_t width = x.shape(2), heads = o.heads, tokens = x.shape(1);
  const Module model = describe_multi_head(v, width, heads);
  MultiHeadAttention layer = seeded_layer(o.common.seed, v, width, heads);
  if (o.weights) load_state_dict(layer, model, *o.weights, o.weights_name);
  run.state_dict = collect_state_dict(layer);
  const MultiHeadSteps s = forward(layer, x, mask);

  run.section("intro_variant");
  Table params{fmt::format("{}'s parameters (state_dict keys)", model.class_name),
               {"key", "shape", "count"},
               {}};
  for (const StateDictEntry& e : state_dict_entries(model)) {
    params.rows.push_back(
        {e.key, shape_string(e.shape), fmt::format("{}", element_count(e.shape))});
  }
  params.rows.push_back({"total", "", with_commas(count_parameters(model))});
  run.table(std::move(params));
  run.step("input", "X, one row of width D per token", to_array(x));
  const std::size_t hs = head_size(v, width, heads);
  run.step("queries", fmt::format("Q per head, hs = {}", hs), to_array(s.queries));
  run.step("keys", "K per head", to_array(s.keys));
  run.step("values", "V per head", to_array(s.values));
  run.section("scores");
  run.step("scores", fmt::format("Q Kᵀ / √{}{}", hs, mask != nullptr ? " + mask" : ""),
           to_array(s.scores));
  run.section("weights");
  run.step("weights", "softmax over the keys, per head", to_array(s.weights));
  Heatmaps maps{heads > kHeatmapHeads
                    ? fmt::format("the first {} of {} heads, sequence 0 (rows: queries, "
                                  "columns: keys)",
                                  kHeatmapHeads, heads)
                    : "every head, sequence 0 (rows: queries, columns: keys)",
                {}};
  const std::vector<std::string> labels = o.trained           ? o.trained->tokens
                                          : !o.tokens.empty() ? o.tokens
                                                              : token_labels(tokens);
  for (std::size_t h = 0; h < std::min(heads, kHeatmapHeads); ++h) {
    maps.maps.push_back({fmt::format("head {}", h), head_matrix(s.weights, h), labels, labels,
                         HeatmapKind::weights, mask != nullptr});
  }
  run.heatmaps(std::move(maps));
  if (!o.pretrained.empty())
    run.prose(pretrained_note(o.pretrained, "the heads", o.pretrained_gpt2));
  if (o.trained) {
    run.prose(trained_note(*o.trained, "the heads"));
    show_trained_heads(run, *o.trained);
  }
  run.section("concatenated");
  run.step("concatenated", "the heads' outputs side by side", to_array(s.concatenated));
  if (const auto* fused = std::get_if<FusedMultiHead>(&layer)) {
    const Tensor3 wrong = forward_with_seed001_bug(*fused, x, mask);
    run.section("seed001_bug");
    run.step("output_seed001_bug", "seed 001's version: attention_weights @ key", to_array(wrong));
    const float diff = max_difference(wrong, s.output);
    run.check("seed 001's `@ key` differs from `@ value`", diff > 1e-4f,
              fmt::format("max |right - wrong| = {:.3g}", diff));
  }
  run.section("output");
  run.step("output", "the output projection, back to width D", to_array(s.output));
  run.section("checks");
  check_rows_sum_to_one(run, s.weights);
  run.parameters = count_parameters(model);
}
}  // namespace

LessonRun run_multi_head(const MultiHeadLessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options.common);
  const bool compare = options.variant == "compare";
  const MultiHeadVariant variant =
      compare ? MultiHeadVariant::book : parse_variant(options.variant);
  if (compare && options.weights) {
    throw Error(ErrorKind::bad_value, "multi_head_lesson",
                "weights belong to one variant: add <variant> narrow, wide, book or fused")
        .about("weights");
  }
  for (MultiHeadVariant v : kMultiHeadVariants)
    if (compare || v == variant) head_size(v, width, options.heads);  // refuses D % H != 0 early
  const bool masked = options.causal || !options.lengths.empty();
  check_budget("multi-head",
               compare ? plan_compare(options, masked) : plan_variant(options, variant, masked));
  const Tensor3 x = lesson_input(options.common, "(B, T, D)", {batch, tokens, width});  // (B,T,D)
  const Tensor3 mask =
      masked ? attention_mask(batch, tokens, options.causal, options.lengths) : Tensor3();

  LessonRun run("multi-head");
  record_settings(
      run, options.common,
      {{"batch", batch}, {"seq", tokens}, {"d-model", width}, {"heads", options.heads}});
  run.setting("variant", options.variant);
  if (options.causal) run.setting("mask", "causal");
  if (!options.lengths.empty())
    run.setting("lengths", fmt::format("{}", fmt::join(options.lengths, ",")));
  if (options.weights) run.setting("weights", options.weights_name);
  record_trained(run, options.trained);
  run.section("intro");
  if (compare) {
    run.step("input", "X, one row of width D per token", to_array(x));
    run_compare(run, options, x, masked ? &mask : nullptr);
  } else {
    run_variant(run, options, variant, x, masked ? &mask : nullptr);
  }
  if (options.ablation) show_head_ablation(run, *options.ablation);
  run.section("parameters");
  return run;
}

}  // namespace attn::lessons
