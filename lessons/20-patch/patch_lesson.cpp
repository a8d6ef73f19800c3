// Lesson 20, activation patching: where in a GPT-2 the information that changes its answer
// lives. Legend: T tokens, D n_embd, H n_head, hs = D/H, V vocab_size, L n_layer.
#include "20-patch/patch_lesson.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "base/error.hpp"
#include "interp.hpp"

namespace attn::lessons {

namespace {

// Differences below this are float32 round-off of a logit difference of about 1 to 10.
constexpr float kRoundOff = 1e-4f;

Ids ids_of(const std::vector<std::int64_t>& values) {
  Ids ids = Ids::from_shape({1, values.size()});
  std::copy(values.begin(), values.end(), ids.begin());
  return ids;
}

std::int64_t top_token(const Tensor3& logits) {  // (1,1,V)
  const auto row = xt::view(logits, 0, 0, xt::all());
  return static_cast<std::int64_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

std::string number(float x) {
  return fmt::format("{:.3f}", x);
}

// "block l" for each block's input.
std::vector<std::string> block_labels(std::size_t layers) {
  std::vector<std::string> labels;
  for (std::size_t l = 0; l < layers; ++l)
    labels.push_back(fmt::format("h.{}", l));
  return labels;
}

// The (row, col) of a matrix's largest value.
std::pair<std::size_t, std::size_t> argmax(const Tensor2& m) {
  const auto best = std::max_element(m.begin(), m.end());
  const auto i = static_cast<std::size_t>(best - m.begin());
  return {i / m.shape(1), i % m.shape(1)};
}

Table matrix_table(std::string title, const Tensor2& m, const std::vector<std::string>& rows,
                   const std::vector<std::string>& cols, std::string corner) {
  Table table{std::move(title), {std::move(corner)}, {}};
  table.header.insert(table.header.end(), cols.begin(), cols.end());
  for (std::size_t i = 0; i < m.shape(0); ++i) {
    std::vector<std::string> row = {rows[i]};
    for (std::size_t j = 0; j < m.shape(1); ++j)
      row.push_back(number(m(i, j)));
    table.rows.push_back(std::move(row));
  }
  return table;
}

// A fraction that is 0 in exact arithmetic (a position where the texts agree) comes out as a few
// units of float32 round-off either side of 0, which differ between thread counts and GEMM
// kernels; the fractions shown (steps, pictures) hold anything within 1e-4 of 0 as the 0 it is,
// so that they print alike on every machine. The checks read the computed numbers.
constexpr float kShownAsZero = 1e-4f;

Tensor2 shown_fractions(Tensor2 m) {
  for (float& v : m)
    if (std::abs(v) < kShownAsZero) v = 0.0f;
  return m;
}

Heatmap signed_map(std::string title, const Tensor2& m, std::vector<std::string> rows,
                   std::vector<std::string> cols) {
  Heatmap map{std::move(title), to_array(m), std::move(rows), std::move(cols)};
  map.kind = HeatmapKind::signed_values;
  return map;
}

}  // namespace

MemoryPlan plan_patch_lesson(const Gpt2Config& config, std::size_t tokens) {
  const EncoderConfig& c = config.sizes;
  const std::size_t layers = c.num_hidden_layers, heads = c.num_attention_heads;
  MemoryPlan plan = plan_patching(config, tokens);
  append(plan, plan_interventions(config, 1, tokens, true, InterpLogits::last));
  plan.push_back({"the tables shown", {6 * layers, tokens + heads + 2}, "L T/H", 4, Held::shown});
  plan.push_back(planned_heatmap(layers, tokens, "L T"));
  plan.push_back(planned_heatmap(layers, heads, "L H"));
  return plan;
}

LessonRun run_patch(const PatchLessonOptions& o) {
  const Gpt2& model = *o.model;
  const EncoderConfig& c = model.config.sizes;
  const std::size_t tokens = o.clean.size(), layers = model.layers.size();
  const std::size_t heads = c.num_attention_heads;
  if (tokens == 0 || layers == 0 || o.corrupt.size() != tokens)
    throw Error(ErrorKind::internal, "patch",
                fmt::format("{} clean and {} corrupt tokens", tokens, o.corrupt.size()));
  const Ids clean = ids_of(o.clean), corrupt = ids_of(o.corrupt);
  const InterpRun clean_run =
      forward_with_interventions(model, clean, {}, true, InterpLogits::last);
  const InterpRun corrupt_run =
      forward_with_interventions(model, corrupt, {}, false, InterpLogits::last);
  const std::int64_t clean_top = top_token(clean_run.logits);
  const std::int64_t corrupt_top = top_token(corrupt_run.logits);
  const std::int64_t answer = o.answer.value_or(clean_top), wrong = o.wrong.value_or(corrupt_top);
  if (answer == wrong) {
    if (!o.answer && !o.wrong)
      throw Error(ErrorKind::bad_value, "patch",
                  fmt::format("the clean and the corrupt text both predict '{}' next: give a "
                              "corrupt text that changes the prediction, or --answer and --wrong",
                              o.token(answer)))
          .about("corrupt");
    throw Error(ErrorKind::bad_value, "patch",
                fmt::format("--answer and --wrong are both '{}': the logit difference of a token "
                            "with itself is 0; give two different tokens",
                            o.token(answer)))
        .about(o.wrong ? "wrong" : "answer");
  }
  const float clean_difference = logit_differences(clean_run.logits, answer, wrong)[0];
  const float corrupt_difference = logit_differences(corrupt_run.logits, answer, wrong)[0];
  if (clean_difference == corrupt_difference)
    throw Error(ErrorKind::bad_value, "patch",
                fmt::format("the clean and the corrupt text give the same logit difference "
                            "logit('{}') - logit('{}') = {:.4g}: there is nothing to restore; give "
                            "a corrupt text that changes the prediction",
                            o.token(answer), o.token(wrong), clean_difference))
        .about("corrupt");
  const Patching p = activation_patching(model, clean, corrupt, answer, wrong);

  LessonRun run("patch");
  run.parameters = gpt2_size(model.config, model.heads).parameters.value();
  run.setting("model", fmt::format("{} (GPT-2: {} blocks x {} heads, D = {}, V = {})", o.name,
                                   layers, heads, c.hidden_size, c.vocab_size));
  std::vector<std::string> labels;
  std::vector<std::size_t> differ;
  Table input{"The two texts' tokens", {"position", "clean", "corrupt", ""}, {}};
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::string a = o.token(o.clean[t]), b = o.token(o.corrupt[t]);
    labels.push_back(o.clean[t] == o.corrupt[t] ? a : a + "/" + b);
    if (o.clean[t] != o.corrupt[t]) differ.push_back(t);
    input.rows.push_back({std::to_string(t), a, b, o.clean[t] == o.corrupt[t] ? "" : "differs"});
  }
  run.setting("clean", printable(o.clean_text, 200));
  run.setting("corrupt", printable(o.corrupt_text, 200));
  run.setting("T", std::to_string(tokens));
  run.setting("answer", fmt::format("'{}' ({})", o.token(answer), answer));
  run.setting("wrong", fmt::format("'{}' ({})", o.token(wrong), wrong));

  run.section("intro");
  run.table(std::move(input));
  run.step("clean_ids", "the clean text's input_ids (1, T)", make_int64({1, tokens}, o.clean));
  run.step("corrupt_ids", "the corrupt text's input_ids (1, T)",
           make_int64({1, tokens}, o.corrupt));

  run.section("difference");
  Table runs{"The last position's logits",
             {"run", "top token", fmt::format("logit('{}')", o.token(answer)),
              fmt::format("logit('{}')", o.token(wrong)), "difference"},
             {}};
  const auto row_of = [&](const char* name, const InterpRun& r, std::int64_t top, float d) {
    const Tensor3& l = r.logits;
    runs.rows.push_back({name, fmt::format("'{}'", o.token(top)),
                         number(l(0, 0, static_cast<std::size_t>(answer))),
                         number(l(0, 0, static_cast<std::size_t>(wrong))), number(d)});
  };
  row_of("clean", clean_run, clean_top, p.clean);
  row_of("corrupt", corrupt_run, corrupt_top, p.corrupt);
  run.table(std::move(runs));
  run.check("the clean run prefers the answer more than the corrupt run does", p.clean > p.corrupt,
            fmt::format("clean {} > corrupt {}: patching has {} to restore", number(p.clean),
                        number(p.corrupt), number(p.clean - p.corrupt)));

  // Residual stream, per block and position.
  run.section("residual");
  const std::vector<std::string> blocks = block_labels(layers);
  const Tensor2 residual_shown = shown_fractions(p.residual);
  run.heatmap(
      signed_map("Fraction restored by the clean stream entering each block (rows) at "
                 "each position (columns)",
                 residual_shown, blocks, labels));
  run.step("residual_restored",
           "(patched - corrupt) / (clean - corrupt), patching the stream entering block l at "
           "position t (L, T)",
           to_array(residual_shown));
  run.step("residual_logit_difference", "the patched runs' logit differences (L, T)",
           to_array(p.residual_difference), false);
  float agreeing = 0;
  for (std::size_t t = 0; t < tokens; ++t)
    if (o.clean[t] == o.corrupt[t]) agreeing = std::max(agreeing, std::fabs(p.residual(0, t)));
  run.check("before block 0, a position where the texts agree restores nothing",
            agreeing <= kRoundOff,
            fmt::format("max |fraction| there = {:.2g} (the two streams are the same embeddings)",
                        agreeing));
  if (differ.size() == 1) {
    const float whole = p.residual(0, differ[0]);
    run.check(fmt::format("before block 0, the one differing position ({}) restores all of it",
                          differ[0]),
              std::fabs(whole - 1) <= kRoundOff,
              fmt::format("fraction {:.4f}: the patched run is the clean run", whole));
  }
  {
    // The last block's input: only the last position can still change the answer through its
    // own stream, unless the last block's attention moves something.
    std::string where;
    for (std::size_t l = 0; l < layers; ++l) {
      const auto row = xt::view(p.residual, l, xt::all());
      const std::size_t t =
          static_cast<std::size_t>(std::max_element(row.begin(), row.end()) - row.begin());
      where += fmt::format("{}h.{}: position {} ('{}') {}", l == 0 ? "" : "; ", l, t, labels[t],
                           number(p.residual(l, t)));
    }
    run.prose(wrapped_prose(fmt::format("The largest fraction entering each block: {}.", where)));
  }

  // Heads.
  run.section("heads");
  std::vector<std::string> head_labels;
  for (std::size_t h = 0; h < heads; ++h)
    head_labels.push_back(std::to_string(h));
  const Tensor2 heads_shown = shown_fractions(p.heads);
  run.heatmap(
      signed_map("Fraction restored by each head's clean output, at every position "
                 "(rows: blocks, columns: heads)",
                 heads_shown, blocks, head_labels));
  run.table(matrix_table("Fraction restored by each head's output (rows: blocks)", p.heads, blocks,
                         head_labels, "block"));
  run.step("heads_restored",
           "(patched - corrupt) / (clean - corrupt), patching head h of block l at every "
           "position (L, H)",
           to_array(heads_shown));
  run.step("heads_logit_difference", "the patched runs' logit differences (L, H)",
           to_array(p.heads_difference), false);
  const auto [best_layer, best_head] = argmax(p.heads);
  const float best = p.heads(best_layer, best_head);

  // Zero-ablating that head in the clean run: does the answer need it?
  Interventions ablate;
  ablate.heads.push_back({best_layer, best_head, std::nullopt, std::nullopt,
                          xt::zeros<float>({tokens, c.hidden_size / heads})});
  const float ablated = logit_differences(
      forward_with_interventions(model, clean, ablate, false, InterpLogits::last).logits, answer,
      wrong)[0];
  run.prose(wrapped_prose(fmt::format(
      "Head {}.{} restores the most: {} of the difference on its own. Zero-ablating it in the "
      "clean run moves the clean logit difference from {} to {} (the corrupt run's is {}).",
      best_layer, best_head, number(best), number(p.clean), number(ablated), number(p.corrupt))));

  // Direct logit attribution.
  run.section("attribution");
  const LogitAttribution a = direct_logit_attribution(model, clean_run, 0, answer, wrong);
  run.heatmap(signed_map(
      fmt::format("Each head's direct share of logit('{}') - logit('{}') in the clean run "
                  "(rows: blocks, columns: heads)",
                  o.token(answer), o.token(wrong)),
      a.heads, blocks, head_labels));
  Table parts{
      "Direct logit attribution of the clean run (ln_f's scale frozen)", {"part", "share"}, {}};
  parts.rows.push_back({"embeddings (wte + wpe)", number(a.embeddings)});
  for (std::size_t l = 0; l < layers; ++l) {
    for (std::size_t h = 0; h < heads; ++h)
      parts.rows.push_back({fmt::format("head {}.{}", l, h), number(a.heads(l, h))});
    parts.rows.push_back({fmt::format("h.{}.mlp", l), number(a.mlps[l])});
  }
  parts.rows.push_back({"biases (every attn.c_proj's, ln_f's)", number(a.biases)});
  parts.rows.push_back({"sum", number(a.total)});
  parts.rows.push_back({"the clean logit difference", number(a.difference)});
  run.table(std::move(parts));
  run.step("dla_heads", "each head's direct share of the clean logit difference (L, H)",
           to_array(a.heads));
  Tensor1 mlps = Tensor1::from_shape({layers});
  std::copy(a.mlps.begin(), a.mlps.end(), mlps.begin());
  run.step("dla_mlps", "each MLP's direct share (L)", to_array(mlps));
  const float allowed = kRoundOff * std::max(1.0f, std::fabs(a.difference)) * 10;
  run.check("the parts' shares sum to the clean logit difference",
            std::fabs(a.total - a.difference) <= allowed,
            fmt::format("sum {:.5f}, logit difference {:.5f}: |gap| = {:.2g} (round-off allows "
                        "{:.2g})",
                        a.total, a.difference, std::fabs(a.total - a.difference), allowed));
  const auto [dla_layer, dla_head] = argmax(a.heads);
  run.prose(wrapped_prose(fmt::format(
      "The head that writes the most towards '{}' over '{}' directly is {}.{} ({}); the one "
      "patching names is {}.{}. A head can matter without writing the answer itself: it moves "
      "information that a later head or MLP turns into logits.",
      o.token(answer), o.token(wrong), dla_layer, dla_head, number(a.heads(dla_layer, dla_head)),
      best_layer, best_head)));
  run.section("summary");
  return run;
}

}  // namespace attn::lessons
