// Lesson 06, positional encoding. Legend: B batch, T tokens, D model width, P positions in the
// table, F frequencies = ceil(D/2).
#include "06-positional-encoding/positional_encoding_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/random.hpp"
#include "dot_product.hpp"
#include "matmul.hpp"
#include "positional_encoding.hpp"
#include "state_dict.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kProjectionStream =
    0x0ff5e7ULL;  // the random projections of the offsets table
constexpr std::uint64_t kTableStream =
    0x9051710eULL;  // the learned table's initial values, apart from the input's

// The heatmap shows at most this many positions (rows) and dimensions (columns); past that,
// evenly spaced ones (dimensions in sin/cos pairs, so both kinds of column stay in the picture).
constexpr std::size_t kHeatmapRows = 64, kHeatmapPairs = 45;
// The projected scores are measured over at most this many positions.
constexpr std::size_t kProjectedPositions = 64;

Heatmap table_heatmap(const Tensor2& pe, const std::string& what) {
  const std::size_t tokens = pe.shape(0), width = pe.shape(1);
  const std::size_t row_step = (tokens + kHeatmapRows - 1) / kHeatmapRows;
  const std::size_t pairs = (width + 1) / 2,
                    pair_step = (pairs + kHeatmapPairs - 1) / kHeatmapPairs;
  std::vector<std::size_t> rows, cols;
  for (std::size_t p = 0; p < tokens; p += row_step)
    rows.push_back(p);
  for (std::size_t i = 0; i < pairs; i += pair_step)
    for (std::size_t j = 2 * i; j < std::min(2 * i + 2, width); ++j)
      cols.push_back(j);
  std::vector<float> values;
  std::vector<std::string> row_labels, col_labels;
  for (std::size_t p : rows) {
    row_labels.push_back(std::to_string(p));
    for (std::size_t j : cols)
      values.push_back(pe(p, j));
  }
  for (std::size_t j : cols)
    col_labels.push_back(std::to_string(j));
  // "rows: positions 0, 8, 16, ...; columns: dimensions 0, 1, 18, 19, ..." when not all are shown
  const std::string rows_shown =
      row_step == 1 ? "positions" : fmt::format("positions 0, {}, {}, ...", row_step, 2 * row_step);
  const std::string cols_shown = pair_step == 1 ? "dimensions"
                                                : fmt::format("dimensions 0, 1, {}, {}, ...",
                                                              2 * pair_step, 2 * pair_step + 1);
  const std::string title = fmt::format("{} (rows: {}; columns: {})", what, rows_shown, cols_shown);
  return Heatmap{title, make_float32({rows.size(), cols.size()}, values), row_labels, col_labels,
                 HeatmapKind::signed_values};
}

// The largest spread (max - min) of PE[p]·PE[p+k] over p, for any offset k, in double, over the
// first `columns` columns.
double largest_diagonal_spread(const Tensor2& pe, std::size_t columns) {
  const std::size_t tokens = pe.shape(0);
  double worst = 0.0;
  for (std::size_t k = 0; k < tokens; ++k) {
    double low = 0.0, high = 0.0;
    for (std::size_t p = 0; p + k < tokens; ++p) {
      double dot = 0.0;
      for (std::size_t j = 0; j < columns; ++j)
        dot += static_cast<double>(pe(p, j)) * pe(p + k, j);
      low = p == 0 ? dot : std::min(low, dot);
      high = p == 0 ? dot : std::max(high, dot);
    }
    worst = std::max(worst, high - low);
  }
  return worst;
}

// The largest |PE[p + k] - R_k PE[p]| over every p of the table and every paired column, in
// double, where R_k rotates each (sin, cos) pair by the angle k·w:
//   sin((p + k) w) = sin(p w) cos(k w) + cos(p w) sin(k w)
//   cos((p + k) w) = cos(p w) cos(k w) - sin(p w) sin(k w)
double rotation_error(const Tensor2& pe, const Tensor1& div_term, std::size_t k) {
  const std::size_t positions = pe.shape(0), pairs = pe.shape(1) / 2;
  double worst = 0.0;
  for (std::size_t i = 0; i < pairs; ++i) {
    const double angle = static_cast<double>(k) * div_term(i);
    const double c = std::cos(angle), s = std::sin(angle);
    for (std::size_t p = 0; p + k < positions; ++p) {
      const double sin_p = pe(p, 2 * i), cos_p = pe(p, 2 * i + 1);
      worst = std::max(worst, std::fabs(pe(p + k, 2 * i) - (sin_p * c + cos_p * s)));
      worst = std::max(worst, std::fabs(pe(p + k, 2 * i + 1) - (cos_p * c - sin_p * s)));
    }
  }
  return worst;
}

// Rows of doubles, (rows, n).
using Rows = std::vector<std::vector<double>>;

// The largest spread over p of queries[p]·keys[p + k] for any offset k: 0 when the score depends
// on the offset alone.
double score_spread(const Rows& queries, const Rows& keys) {
  const std::size_t tokens = queries.size();
  double worst = 0.0;
  for (std::size_t k = 0; k < tokens; ++k) {
    double low = INFINITY, high = -INFINITY;
    for (std::size_t p = 0; p + k < tokens; ++p) {
      double score = 0.0;
      for (std::size_t a = 0; a < queries[p].size(); ++a)
        score += queries[p][a] * keys[p + k][a];
      low = std::min(low, score), high = std::max(high, score);
    }
    worst = std::max(worst, high - low);
  }
  return worst;
}

// W PE[p] for the first T rows and the n paired columns; W is (n, n) row-major.
Rows project(const Tensor2& pe, std::size_t tokens, std::size_t n, const std::vector<double>& w) {
  Rows out(tokens, std::vector<double>(n, 0.0));
  for (std::size_t p = 0; p < tokens; ++p)
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = 0; b < n; ++b)
        out[p][a] += w[a * n + b] * pe(p, b);
  return out;
}

// What survives of "depends on the distance only" when queries and keys are projected, on the
// paired columns: W_q = W_k = I (PE·PE), random W_q and W_k with N(0, 1/D) entries, and W_q = I
// with W_k a rotation and a scale in each pair, which commutes with every R_k.
Table projected_offsets(const Tensor2& pe, std::size_t tokens, std::uint64_t seed, double& identity,
                        double& random, double& rotating) {
  const std::size_t n = pe.shape(1) - pe.shape(1) % 2;
  Rng rng(seed ^ kProjectionStream);
  std::vector<double> eye(n * n, 0.0), wq(n * n), wk(n * n), r(n * n, 0.0);
  for (std::size_t a = 0; a < n; ++a)
    eye[a * n + a] = 1.0;
  for (double& v : wq)
    v = rng.normal() / std::sqrt(static_cast<double>(n));
  for (double& v : wk)
    v = rng.normal() / std::sqrt(static_cast<double>(n));
  for (std::size_t i = 0; i < n / 2; ++i) {
    const double scale = 0.5 + rng.uniform(), theta = 6.283185307179586 * rng.uniform();
    const std::size_t a = 2 * i, b = 2 * i + 1;
    r[a * n + a] = scale * std::cos(theta), r[a * n + b] = -scale * std::sin(theta);
    r[b * n + a] = scale * std::sin(theta), r[b * n + b] = scale * std::cos(theta);
  }
  const Rows plain = project(pe, tokens, n, eye);
  identity = score_spread(plain, plain);
  random = score_spread(project(pe, tokens, n, wq), project(pe, tokens, n, wk));
  rotating = score_spread(plain, project(pe, tokens, n, r));
  return Table{
      fmt::format("Scores of the position vectors alone over the first {} positions", tokens),
      {"queries · keys", "largest spread along a diagonal"},
      {{"PE[p] · PE[q]", fmt::format("{:.2g}", identity)},
       {"(W_q PE[p]) · (W_k PE[q]), random W_q, W_k", fmt::format("{:.2g}", random)},
       {"W_q = I, W_k a rotation and scale per pair", fmt::format("{:.2g}", rotating)}}};
}

}  // namespace

LessonRun run_positional_encoding(const PositionalEncodingLessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options.common);
  const bool learned = options.kind == "learned";
  if (!learned && options.kind != "sinusoidal") {
    throw Error(ErrorKind::bad_value, "positional_encoding_lesson",
                fmt::format("'{}' is not a kind of positional encoding: use sinusoidal or learned",
                            options.kind))
        .about("kind");
  }
  if (!learned && options.weights) {
    throw Error(ErrorKind::bad_value, "positional_encoding_lesson",
                "the sinusoidal table is computed, not learned, so there are no weights to load: "
                "add <kind> learned")
        .about("weights");
  }
  // P: --max-positions, else the rows of --weights' table, else BERT's 512.
  std::size_t positions = options.max_positions.value_or(kDefaultMaxPositions);
  if (!options.max_positions && options.weights) {
    const auto it = options.weights->find("weight");
    if (it != options.weights->end() && it->second.rank() == 2) positions = it->second.shape[0];
  }
  if (tokens > positions) {
    const std::string what = options.common.input
                                 ? fmt::format("the input has T={} tokens, more", tokens)
                                 : fmt::format("<seq> {} is more", tokens);
    throw Error(
        ErrorKind::bad_size, "positional_encoding_lesson",
        options.weights && !options.max_positions
            ? fmt::format("{} than the {} rows of the table in <weights>: use a table of at "
                          "least {} rows, or fewer tokens",
                          what, positions, tokens)
            : fmt::format("{} than the {} positions of the table: give <max_positions> {} "
                          "or more, or fewer tokens",
                          what, positions, tokens))
        .about("max_positions");
  }
  // The table first (the learned one also copied into the run), then the permutation checks: the
  // reordered X and outputs beside one attention's steps and a float64 reference. Shown: X, the
  // frequencies, PE, PE PEᵀ and X + PE.
  const std::size_t frequencies = (width + 1) / 2;
  MemoryPlan plan = plan_lesson_input(options.common);
  append(plan, plan_weights_file(options.weights));
  plan.push_back({"X + PE", {batch, tokens, width}, "B T D"});
  plan.push_back({"PE", {tokens, width}, "T D"});
  MemoryPlan table = {{"the table", {positions, width}, "P D"}};
  if (learned) {
    plan.push_back({"the table", {positions, width}, "P D", 4, Held::weights});
  } else {
    table = plan_sinusoidal_table(positions, width);
    table.push_back({"PE PEᵀ", {tokens, tokens + width}, "T T/D"});
    plan.push_back({"the frequencies", {frequencies}, "D", 4, Held::shown});
    plan.push_back({"PE PEᵀ", {tokens, tokens}, "T T", 4, Held::shown});
    table.push_back({"the projections", {4, width, width}, " D D", 8});
    table.push_back({"the projected positions", {5, kProjectedPositions, width}, " T D", 8});
  }
  plan.push_back({"X", {batch, tokens, width}, "B T D", 4, Held::shown});
  plan.push_back({"PE", {tokens, width}, "T D", 4, Held::shown});
  plan.push_back({"X + PE", {batch, tokens, width}, "B T D", 4, Held::shown});
  MemoryPlan permutation = {{"the reversed X and outputs", {6, batch, tokens, width}, " B T D"}};
  append(permutation, plan_dot_product_attention(batch, tokens, width));
  append(permutation, plan_dot_product_attention_float64(batch, tokens, width));
  append(plan, larger_of(std::move(table), std::move(permutation)));
  check_budget("positional-encoding", plan);
  const Tensor3 x = lesson_input(options.common, "(B, T, D)", {batch, tokens, width});  // (B,T,D)

  LessonRun run("positional-encoding");
  record_settings(run, options.common, {{"batch", batch}, {"seq", tokens}, {"d-model", width}});
  run.setting("kind", options.kind);
  run.setting("max-positions", std::to_string(positions));
  if (options.weights) run.setting("weights", options.weights_name);

  run.section("intro");
  Tensor2 pe;  // (T,D): what gets added
  if (learned) {
    // The table: from --weights, else nn.Embedding's N(0, 1) initialisation drawn from the seed.
    Rng rng(options.common.seed ^ kTableStream);
    const Module model = describe_position_embedding(positions, width);
    PositionEmbedding embedding = init_position_embedding(rng, positions, width);
    if (options.weights) load_state_dict(embedding, model, *options.weights, options.weights_name);
    run.state_dict = collect_state_dict(embedding);
    run.parameters = count_parameters(model);
    pe = first_positions(embedding.weight, tokens);

    run.section("intro_learned");
    run.table(parameter_table(model, false, false));
    run.step("input", "X, the token embeddings", to_array(x));
    run.section("pe_learned");
    run.step("pe",
             fmt::format("position_embeddings(arange(T)): rows 0..{} of the ({}, {}) table",
                         tokens - 1, positions, width),
             to_array(pe));
    run.heatmap(table_heatmap(pe, "position_embeddings(arange(T))"));
  } else {
    const SinusoidalTable table = sinusoidal_table(positions, width);
    pe = first_positions(table.pe, tokens);

    run.section("intro_sinusoidal");
    run.step("input", "X, the token embeddings", to_array(x));
    run.section("div_term");
    run.step("div_term",
             fmt::format("1/10000^(2i/D) for i = 0..{}, one per sin/cos pair",
                         table.div_term.size() - 1),
             to_array(table.div_term));
    run.section(width % 2 == 1 ? "pe_sinusoidal_odd" : "pe_sinusoidal");
    run.step(
        "pe",
        fmt::format("sin(p · div_term) in even columns, cos in odd ones, p = 0..{}", tokens - 1),
        to_array(pe));
    run.heatmap(table_heatmap(pe, "PE"));

    run.section(width % 2 == 1 ? "offsets_odd" : "offsets");
    Tensor3 pe3 = Tensor3::from_shape({1, tokens, width});
    std::copy(pe.begin(), pe.end(), pe3.begin());
    const Tensor3 gram = batched_matmul_transposed(pe3, pe3);  // (1,T,D) @ (1,T,D)^T -> (1,T,T)
    run.step("pe_dot", "PE PEᵀ: entry (p, q) is PE[p]·PE[q]",
             make_float32({tokens, tokens}, std::vector<float>(gram.begin(), gram.end())));
    const std::size_t paired = width - width % 2;
    const double spread = largest_diagonal_spread(pe, paired);
    // float32 rounds each angle p · div_term[i] by up to half an ulp, about 6e-8 · p · div_term[i]:
    // a pair's product moves by that much for each of its two rows, plus the rounding of the
    // values.
    double frequencies = 0.0;
    for (float w : table.div_term)
      frequencies += w;
    const double allowed =
        2.4e-7 * (static_cast<double>(tokens) * frequencies + static_cast<double>(width));
    run.check(
        "PE[p]·PE[q] depends only on q - p", spread <= allowed,
        fmt::format("largest diagonal spread {:.3g}, rounding allows {:.3g}", spread, allowed));

    // Both need two positions at least: the rotation an offset, the scores a distance.
    if (paired > 0 && table.pe.shape(0) >= 2) {
      // The rotation, over the whole table: R_k is the same map for every position p.
      const std::size_t rows = table.pe.shape(0);
      Table rotations{
          fmt::format("PE[p + k] against R_k PE[p], for every p of the {} positions", rows),
          {"k", "angle k·w, first pair", "last pair", "largest |PE[p + k] - R_k PE[p]|"},
          {}};
      double worst_rotation = 0.0;
      for (std::size_t k : {1, 2, 3, 10}) {
        if (k >= rows) break;
        const double error = rotation_error(table.pe, table.div_term, k);
        worst_rotation = std::max(worst_rotation, error);
        rotations.rows.push_back(
            {fmt::format("{}", k),
             fmt::format("{:.4f}", static_cast<double>(k) * table.div_term(0)),
             fmt::format("{:.4f}", static_cast<double>(k) * table.div_term(paired / 2 - 1)),
             fmt::format("{:.2g}", error)});
      }
      // Each value is off by its angle's float32 rounding, about 6e-8 · p · w, plus its own.
      const double rotation_allowed =
          2.4e-7 * (static_cast<double>(rows) * table.div_term(0) + 1.0);
      run.section("rotation");
      run.table(std::move(rotations));
      run.check("PE[p + k] = R_k PE[p] at every position p, one fixed rotation per offset k",
                worst_rotation <= rotation_allowed,
                fmt::format("largest error {:.2g}, float32 rounding of the angles allows {:.2g}",
                            worst_rotation, rotation_allowed));
    }
    if (paired > 0 && tokens >= 2) {
      double identity = 0.0, random = 0.0, rotating = 0.0;
      Table projected = projected_offsets(pe, std::min(tokens, kProjectedPositions),
                                          options.common.seed, identity, random, rotating);
      run.section("projected");
      run.table(std::move(projected));
      if (tokens > 2) {
        run.check(
            "random projections make the score depend on where the tokens are, not only "
            "on their distance",
            random > 1000.0 * std::max(identity, 1e-6),
            fmt::format("largest spread {:.2g}, against {:.2g} for PE·PE", random, identity));
        run.check("a projection that commutes with the rotations keeps the distance-only score",
                  rotating <= 1e-3 * std::max(random, 1e-3),
                  fmt::format("largest spread {:.2g}", rotating));
      }
    }
  }

  run.section("output");
  const Tensor3 output = add_positions(x, pe);  // (B,T,D) + (T,D)
  run.step("output", "X + PE: each token plus the row of its position", to_array(output));

  if (tokens < 2) {
    run.section("permutation_one_token");
  } else {
    run.section("permutation");
    std::vector<std::size_t> reverse(tokens);
    for (std::size_t i = 0; i < tokens; ++i)
      reverse[i] = tokens - 1 - i;
    // Lesson 02's scaled attention, no learned weights: seed 004's point holds for any attention.
    const float scale = std::sqrt(static_cast<float>(width));
    auto attend = [&](const Tensor3& input) { return dot_product_attention(input, scale).output; };
    const Tensor3 reversed = permute_tokens(x, reverse), reversed_output = attend(reversed),
                  output_x = attend(x);
    check_same_up_to_roundoff(
        run, "without positions, reversing X reverses the outputs", "max |difference|",
        max_difference(reversed_output, permute_tokens(output_x, reverse)),
        max_difference(reversed_output, dot_product_attention_float64(reversed, scale)),
        max_difference(output_x, dot_product_attention_float64(x, scale)));
    const float with = max_difference(attend(add_positions(permute_tokens(x, reverse), pe)),
                                      permute_tokens(attend(output), reverse));
    run.check("with positions, reversing X changes the outputs", with > 1e-3f,
              fmt::format("max |difference| = {:.3g}", with));
  }
  run.section(learned ? "parameters_learned" : "parameters_sinusoidal");
  return run;
}

}  // namespace attn::lessons
