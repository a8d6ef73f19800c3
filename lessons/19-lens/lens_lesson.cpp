// Lesson 19, the logit lens. Legend: L n_layer, R = L + 1 rows of the lens (the embeddings, then
// each block's output), T tokens, V vocab_size, K the top tokens listed.
#include "19-lens/lens_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/utf8.hpp"
#include "logit_lens.hpp"

namespace attn::lessons {

namespace {

constexpr std::size_t kCellColumns = 6;  // a token in the picture's cells, at most
constexpr std::size_t kPictureWidth = 100;

// Text cut to `width` terminal columns, with … when cut.
std::string cut(const std::string& text, std::size_t width) {
  if (column_width(text) <= width) return text;
  std::string out;
  std::size_t used = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = std::max<std::size_t>(utf8_sequence_length(text, i), 1);
    const std::string one = text.substr(i, length);
    if (used + column_width(one) + 1 > width) break;
    out += one;
    used += column_width(one);
    i += length;
  }
  return out + "…";
}

std::string row_label(std::size_t row, std::size_t rows) {
  if (row == 0) return "embeddings";
  return row + 1 == rows ? fmt::format("h.{} (out)", row - 1) : fmt::format("h.{}", row - 1);
}

std::string row_words(std::size_t row, std::size_t rows) {
  if (row == 0) return "the embeddings";
  return row + 1 == rows ? fmt::format("h.{}, the output", row - 1) : fmt::format("h.{}", row - 1);
}

double mean(const std::vector<double>& values) {
  return values.empty() ? 0.0
                        : std::accumulate(values.begin(), values.end(), 0.0) /
                              static_cast<double>(values.size());
}

// The picture: rows x positions, each cell the top token on its probability, * where it is the
// text's next token; in chunks of positions that fit the terminal's width.
void show_picture(LessonRun& run, const LensPicture& p) {
  const std::size_t rows = p.rows(), tokens = p.tokens(), k = p.top;
  std::vector<std::string> cells(rows * tokens);
  std::size_t widest = 1;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t t = 0; t < tokens; ++t) {
      std::string cell = cut(p.top_tokens[(r * tokens + t) * k], kCellColumns);
      if (p.top_tokens[(r * tokens + t) * k] == p.next[t] && t + 1 < tokens) cell += "*";
      widest = std::max(widest, column_width(cell));
      cells[r * tokens + t] = std::move(cell);
    }
  std::size_t label = 0;
  for (const std::string& l : p.row_labels)
    label = std::max(label, column_width(l));
  const std::size_t cell_width = widest + 3;  // " ▓ tok" without colour; " tok " with
  const std::size_t per_chunk = std::max<std::size_t>(1, (kPictureWidth - label - 1) / cell_width);
  const std::size_t chunks = (tokens + per_chunk - 1) / per_chunk;
  const std::size_t each = (tokens + chunks - 1) / chunks;
  for (std::size_t first = 0; first < tokens; first += each) {
    const std::size_t end = std::min(tokens, first + each);
    Heatmap map;
    map.title = chunks == 1 ? "columns: the input tokens; rows: the lens after each block"
                            : fmt::format("positions {} to {}", first, end - 1);
    map.row_labels = p.row_labels;
    std::vector<float> values;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t t = first; t < end; ++t) {
        values.push_back(p.top_probabilities[(r * tokens + t) * k]);
        map.cell_text.push_back(cells[r * tokens + t]);
      }
    for (std::size_t t = first; t < end; ++t)
      map.col_labels.push_back(cut(p.inputs[t], kCellColumns));
    map.values = make_float32({rows, end - first}, values);
    run.heatmaps(Heatmaps{"", {std::move(map)}, WeightsScale::fixed});
  }
}

}  // namespace

std::size_t default_lens_position(std::size_t tokens) {
  return tokens >= 2 ? tokens - 2 : 0;
}

std::string lens_token(const BpeTokenizer& tokenizer, std::int64_t id, std::size_t width) {
  const auto i = static_cast<std::size_t>(id);
  if (id < 0 || i >= tokenizer.size()) return std::to_string(id);
  const std::string bytes = decode(tokenizer, {id});
  if (utf8_error(bytes) != std::string::npos) return printable(tokenizer.tokens[i], width);
  std::string shown;
  for (const char c : bytes) {
    if (c == ' ')
      shown += "␣";
    else if (c == '\n')
      shown += "↵";
    else if (c == '\t')
      shown += "⇥";
    else
      shown += c;
  }
  return cut(printable(shown, 4 * width), width);
}

MemoryPlan plan_lens_lesson(const Gpt2Config& config, std::size_t tokens, std::size_t top) {
  const EncoderConfig& c = config.sizes;
  const std::size_t rows = c.num_hidden_layers + 1;
  MemoryPlan plan = plan_gpt2(config, 1, tokens, true);
  append(plan, plan_logit_lens(config, tokens));
  plan.push_back({"the lens's logits and log-probabilities shown",
                  {2, rows, tokens, c.vocab_size},
                  " L T V",
                  4,
                  Held::shown});
  plan.push_back(
      {"the top tokens' ids and probabilities", {2, rows, tokens, top}, " L T K", 8, Held::shown});
  plan.push_back({"the ranks shown", {2, rows, tokens}, " L T", 8, Held::shown});
  plan.push_back({"a row's order when ranked", {c.vocab_size}, "V", 8});
  plan.push_back(planned_table_rows("the tables", 3 * tokens + 3 * rows, "T"));
  return plan;
}

LensLessonRun run_lens(const LensLessonOptions& o) {
  const Gpt2& model = *o.model;
  const BpeTokenizer& tokenizer = *o.tokenizer;
  const EncoderConfig& c = model.config.sizes;
  const std::size_t tokens = o.ids.size(), layers = model.layers.size(), rows = layers + 1;
  if (tokens == 0 || o.position >= tokens || o.top == 0 || o.top > c.vocab_size)
    throw Error(ErrorKind::internal, "lens",
                fmt::format("{} tokens, position {}, top {} of {}", tokens, o.position, o.top,
                            c.vocab_size));
  LensLessonRun out{LessonRun("lens"), {}};
  LessonRun& run = out.run;
  LensPicture& p = out.picture;
  run.parameters = gpt2_size(model.config, model.heads).parameters.value();
  run.setting("model", fmt::format("{} (GPT-2: {} blocks x {} heads, D = {}, V = {})", o.name,
                                   layers, c.num_attention_heads, c.hidden_size, c.vocab_size));
  run.setting("text", printable(o.text, 200));
  run.setting("T", std::to_string(tokens));
  run.setting("position", std::to_string(o.position));
  run.setting("top", std::to_string(o.top));

  run.section("intro");
  p.model = o.name;
  p.text = o.text;
  p.top = o.top;
  Table input{"The text's tokens: each position predicts the next",
              {"position", "token", "id", "next"},
              {}};
  for (std::size_t t = 0; t < tokens; ++t) {
    p.inputs.push_back(lens_token(tokenizer, o.ids[t]));
    p.next.push_back(t + 1 < tokens ? lens_token(tokenizer, o.ids[t + 1]) : "");
  }
  for (std::size_t t = 0; t < tokens; ++t)
    input.rows.push_back({std::to_string(t), p.inputs[t], std::to_string(o.ids[t]),
                          t + 1 < tokens ? p.next[t] : "(the text ends)"});
  run.table(std::move(input));
  run.step("input_ids", "input_ids (B, T)", make_int64({1, tokens}, o.ids));

  Ids ids = Ids::from_shape({1, tokens});
  std::copy(o.ids.begin(), o.ids.end(), ids.begin());
  const Gpt2Steps steps = forward(model, Gpt2Input{ids, {}});
  const LogitLens lens = logit_lens(model, steps);

  // Every cell's top K, and the ranks of the final prediction and of the next token.
  std::vector<std::int64_t> final_ids(tokens), top_ids;
  for (std::size_t r = 0; r < rows; ++r)
    p.row_labels.push_back(row_label(r, rows));
  for (std::size_t t = 0; t < tokens; ++t) {
    final_ids[t] = lens_top_tokens(lens, rows - 1, t, 1).front();
    p.final.push_back(lens_token(tokenizer, final_ids[t]));
  }
  std::vector<std::int64_t> final_rank, next_rank;
  std::vector<float> next_probability, final_probability;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t t = 0; t < tokens; ++t) {
      for (const std::int64_t id : lens_top_tokens(lens, r, t, o.top)) {
        top_ids.push_back(id);
        p.top_tokens.push_back(lens_token(tokenizer, id));
        p.top_probabilities.push_back(static_cast<float>(lens.probability(r, t, id)));
      }
      p.final_rank.push_back(lens_rank(lens, r, t, final_ids[t]));
      final_rank.push_back(static_cast<std::int64_t>(p.final_rank.back()));
      final_probability.push_back(static_cast<float>(lens.probability(r, t, final_ids[t])));
      if (t + 1 < tokens) {
        next_rank.push_back(static_cast<std::int64_t>(lens_rank(lens, r, t, o.ids[t + 1])));
        next_probability.push_back(static_cast<float>(lens.probability(r, t, o.ids[t + 1])));
      }
    }

  run.section("picture");
  show_picture(run, p);

  // The last row is the model's own output; every cell is a distribution.
  double worst = 0.0, scale = 0.0;
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t v = 0; v < lens.vocab(); ++v) {
      worst = std::max(worst, static_cast<double>(
                                  std::abs(lens.logits(rows - 1, t, v) - steps.logits(0, t, v))));
      scale = std::max(scale, static_cast<double>(std::abs(steps.logits(0, t, v))));
    }
  const double allowed = 1e-5 * (1.0 + scale);
  run.check(
      "the last row of the lens is the model's own logits (ln_f of the last block's output, "
      "times wteᵀ)",
      worst <= allowed, roundoff_evidence("max |lens - logits|", worst, allowed));
  const Tensor3 log_probs = lens_log_probs(lens);
  double sum_error = 0.0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t t = 0; t < tokens; ++t) {
      double sum = 0.0;
      for (std::size_t v = 0; v < lens.vocab(); ++v)
        sum += std::exp(static_cast<double>(log_probs(r, t, v)));
      sum_error = std::max(sum_error, std::abs(sum - 1.0));
    }
  run.check(
      fmt::format("every cell of the lens is a distribution over the {} tokens", lens.vocab()),
      sum_error <= 1e-5, fmt::format("largest |Σ p - 1| {:.2g}", sum_error));

  // The embeddings' row: with the head tied to wte, ln_f(wte[x]) · wte[x] is large, so the row
  // tends to echo the input token rather than predict the next one.
  std::size_t echoes = 0, echoes_by_ids = 0;
  double echo_probability = 0.0;
  for (std::size_t t = 0; t < tokens; ++t) {
    echoes += lens_rank(lens, 0, t, o.ids[t]) == 1 ? 1 : 0;
    echoes_by_ids += top_ids[t * o.top] == o.ids[t] ? 1 : 0;
    echo_probability += lens.probability(0, t, o.ids[t]) / static_cast<double>(tokens);
  }
  run.prose(wrapped_prose(fmt::format(
      "At the embeddings the lens's top token is the input token itself at {} of {} positions "
      "(its mean probability there {:.3f}): {}.",
      echoes_by_ids, tokens, echo_probability,
      model.lm_head.size() != 0 ? "this model's head is a table of its own, not wte"
      : 2 * echoes_by_ids > tokens
          ? "the head is wte itself, so ln_f(wte[x]) · wteᵀ tends to score x highest, and the "
            "first row mostly echoes the input rather than predicts"
          : "the head is wte itself, yet the first row does not mostly echo the input")));
  run.check("the count of echoes is the same read off the top ids and off the input's ranks",
            echoes == echoes_by_ids,
            fmt::format("{} by the top ids, {} by rank 1", echoes_by_ids, echoes));

  // Where the answer appears: per row, over the positions.
  run.section("depth");
  Table depth{"Per row, over the positions: the model's final prediction and the text's next token",
              {"row", "top-1 = final", "p(final)", "rank of final", "top-1 = next", "p(next)",
               "-log p(next)"},
              {}};
  std::vector<double> p_final_by_row, p_next_by_row;
  std::vector<std::size_t> next_top_by_row;
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> pf, rf, pn, loss;
    std::size_t final_top = 0, next_top = 0;
    for (std::size_t t = 0; t < tokens; ++t) {
      pf.push_back(final_probability[r * tokens + t]);
      rf.push_back(static_cast<double>(final_rank[r * tokens + t]));
      final_top += final_rank[r * tokens + t] == 1 ? 1 : 0;
      if (t + 1 < tokens) {
        const std::size_t k = r * (tokens - 1) + t;
        pn.push_back(next_probability[k]);
        loss.push_back(-std::log(std::max(static_cast<double>(next_probability[k]), 1e-300)));
        next_top += next_rank[k] == 1 ? 1 : 0;
      }
    }
    p_final_by_row.push_back(mean(pf));
    p_next_by_row.push_back(mean(pn));
    next_top_by_row.push_back(next_top);
    depth.rows.push_back({p.row_labels[r], fmt::format("{} of {}", final_top, tokens),
                          fmt::format("{:.3f}", mean(pf)), fmt::format("{:.1f}", mean(rf)),
                          tokens > 1 ? fmt::format("{} of {}", next_top, tokens - 1) : "-",
                          tokens > 1 ? fmt::format("{:.3f}", mean(pn)) : "-",
                          tokens > 1 ? fmt::format("{:.3f}", mean(loss)) : "-"});
  }
  run.table(std::move(depth));

  // Each position: the row from which the final prediction stays top-1.
  Table settle{
      "Each position: the row from which the model's final prediction is top-1 for good",
      {"position", "token", "next", "final prediction", "top-1 from", "p there", "p at the output"},
      {}};
  std::vector<double> settle_rows;
  std::size_t at_embeddings = 0, at_output = 0, disagree = 0;
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::size_t from = lens_settles_at(lens, t, final_ids[t]);
    // The same row read off the ranks above: the first of the last run of rank 1.
    std::size_t by_ranks = rows;
    while (by_ranks > 0 && final_rank[(by_ranks - 1) * tokens + t] == 1)
      --by_ranks;
    disagree += by_ranks == from ? 0 : 1;
    settle_rows.push_back(static_cast<double>(from));
    at_embeddings += from == 0 ? 1 : 0;
    at_output += from + 1 == rows ? 1 : 0;
    settle.rows.push_back(
        {std::to_string(t), p.inputs[t], t + 1 < tokens ? p.next[t] : "",
         p.final[t] + (t + 1 < tokens && final_ids[t] == o.ids[t + 1] ? " ✓" : ""),
         p.row_labels[from], fmt::format("{:.3f}", lens.probability(from, t, final_ids[t])),
         fmt::format("{:.3f}", lens.probability(rows - 1, t, final_ids[t]))});
  }
  run.table(std::move(settle));
  const double mean_settle = mean(settle_rows);
  run.prose(wrapped_prose(fmt::format(
      "Averaged over the {} positions, the model's final prediction becomes top-1 for good at row "
      "{:.2f} (0 the embeddings, {} the output): already at the embeddings at {} of {} "
      "positions, only at the output at {} of {}. The probability the lens gives it, averaged, is "
      "{:.3f} at the embeddings and {:.3f} at the output.",
      tokens, mean_settle, rows - 1, at_embeddings, tokens, at_output, tokens,
      p_final_by_row.front(), p_final_by_row.back())));
  run.check(
      "each position's row in the table is where the ranks above turn 1 for good", disagree == 0,
      fmt::format("{} of {} positions disagree; mean row {:.2f}", disagree, tokens, mean_settle));
  if (tokens > 1) {
    const std::size_t best = static_cast<std::size_t>(
        std::max_element(p_next_by_row.begin(), p_next_by_row.end()) - p_next_by_row.begin());
    run.prose(wrapped_prose(fmt::format(
        "The text's own next token is top-1 at {} of {} positions at the embeddings and {} of {} at "
        "the output; its mean probability is highest at {} ({:.3f}; {:.3f} at the embeddings, "
        "{:.3f} at the output).",
        next_top_by_row.front(), tokens - 1, next_top_by_row.back(), tokens - 1,
        row_words(best, rows), p_next_by_row[best], p_next_by_row.front(), p_next_by_row.back())));
    bool highest = true;
    for (const double q : p_next_by_row)
      highest = highest && q <= p_next_by_row[best];
    run.check("the row named has the highest mean p(next) of the table", highest,
              fmt::format("{} {:.3f}", p.row_labels[best], p_next_by_row[best]));
  }

  // One position's top K per row.
  run.section("position");
  const std::size_t t = o.position;
  const bool has_next = t + 1 < tokens;
  Table top{fmt::format("Position {} ('{}', next '{}'): the top {} per row", t, p.inputs[t],
                        has_next ? p.next[t] : "(the text ends)", o.top),
            {"row", fmt::format("top {} (probability)", o.top), "final prediction",
             has_next ? "next token" : "next token (none)"},
            {}};
  for (std::size_t r = 0; r < rows; ++r) {
    std::string list;
    for (std::size_t k = 0; k < o.top; ++k) {
      const std::size_t at = (r * tokens + t) * o.top + k;
      list +=
          fmt::format("{}{} {:.3f}", k == 0 ? "" : "  ", p.top_tokens[at], p.top_probabilities[at]);
    }
    const std::string final_cell =
        fmt::format("'{}' rank {}, p {:.3f}", p.final[t], final_rank[r * tokens + t],
                    final_probability[r * tokens + t]);
    const std::string next_cell =
        has_next ? fmt::format("'{}' rank {}, p {:.3f}", p.next[t], next_rank[r * (tokens - 1) + t],
                               next_probability[r * (tokens - 1) + t])
                 : "";
    top.rows.push_back({p.row_labels[r], list, final_cell, next_cell});
  }
  run.table(std::move(top));

  run.section("arrays");
  run.step("lens_logits", "ln_f(x_l) wteᵀ for every row l and position (R, T, V)",
           to_array(lens.logits), false);
  run.step("lens_log_probs", "their log_softmax over the vocabulary (R, T, V)", to_array(log_probs),
           false);
  run.step("top_ids", fmt::format("each cell's top {} token ids (R, T, K)", o.top),
           make_int64({rows, tokens, o.top}, top_ids), false);
  run.step("top_probabilities", "their probabilities (R, T, K)",
           make_float32({rows, tokens, o.top}, p.top_probabilities), false);
  run.step("final_rank", "the rank of the model's final prediction in every cell, 1 the top (R, T)",
           make_int64({rows, tokens}, final_rank));
  std::vector<std::int64_t> settles(settle_rows.begin(), settle_rows.end());
  run.step("final_settles_at",
           "the row from which each position's final prediction is top-1 for good, 0 the "
           "embeddings (T)",
           make_int64({tokens}, settles));
  if (tokens > 1)
    run.step("next_rank", "the rank of the text's next token in every cell (R, T - 1)",
             make_int64({rows, tokens - 1}, next_rank));
  run.listing("tokens", p.inputs);
  run.listing("top_tokens", p.top_tokens);

  run.section("reading");
  return out;
}

}  // namespace attn::lessons
