// Lesson 00, tokens. Legend: T tokens, V vocabulary (rows of the table), D model width.
#include "00-tokens/tokens_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/count.hpp"
#include "base/random.hpp"
#include "embedding.hpp"
#include "io/shipped.hpp"
#include "matmul.hpp"
#include "state_dict.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kTableStream =
    0x70ce45ULL;  // the embedding table, apart from any other draw

// Past this many numbers the table is shown by its first rows only (BERT-base's has 23 million).
constexpr std::size_t kLargestShownTable = std::size_t{1} << 20;
constexpr std::size_t kShownRows = 8;

std::string in_quotes(std::string_view text) {
  return fmt::format("\"{}\"", escape_invisible(text));
}

std::string words(const std::vector<std::string>& list) {
  if (list.empty()) return "(none)";
  std::vector<std::string> shown;
  for (const std::string& w : list)
    shown.push_back(escape_invisible(w));
  return fmt::format("{}", fmt::join(shown, " · "));
}

Table stage_table(const std::string& text, const BasicTokens& b) {
  return Table{"BasicTokenizer, stage by stage (· between words)",
               {"stage", "result"},
               {{"the text", in_quotes(text)},
                {"lower-case (special tokens kept)", in_quotes(b.lowered)},
                {"clean: no NUL, U+FFFD, controls; spaces -> ' '", in_quotes(b.cleaned)},
                {"a space around each CJK ideograph", in_quotes(b.spaced)},
                {"split on whitespace", words(b.words)},
                {"strip accents: NFD, drop marks (Mn)", words(b.stripped)},
                {"split off punctuation: the words", words(b.split)}}};
}

Table wordpiece_table(const Encoding& e) {
  Table t{
      "WordPiece: each word as vocabulary tokens, and their ids", {"word", "tokens", "ids"}, {}};
  if (!e.tokens.empty() && e.word.front() == -1)
    t.rows.push_back({"(added)", e.tokens.front(), std::to_string(e.ids.front())});
  for (std::size_t w = 0; w < e.basic.split.size(); ++w) {
    std::vector<std::string> tokens, ids;
    for (std::size_t i = e.word_tokens[w].start; i < e.word_tokens[w].end; ++i) {
      tokens.push_back(escape_invisible(e.tokens[i]));
      ids.push_back(std::to_string(e.ids[i]));
    }
    t.rows.push_back({escape_invisible(e.basic.split[w]), fmt::format("{}", fmt::join(tokens, " ")),
                      fmt::format("{}", fmt::join(ids, " "))});
  }
  if (e.tokens.size() > 1 && e.word.back() == -1)
    t.rows.push_back({"(added)", e.tokens.back(), std::to_string(e.ids.back())});
  return t;
}

// Root mean square of every number in `values`, in double.
double rms(const float* values, std::size_t count) {
  double sum = 0.0;
  for (std::size_t i = 0; i < count; ++i)
    sum += static_cast<double>(values[i]) * values[i];
  return count == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(count));
}

// The sinusoidal encoding's rms over positions 0..T-1 (PE[p, 2i] = sin(p / 10000^(2i/D)),
// PE[p, 2i+1] = cos(...)), for comparing scales.
double positional_rms(std::size_t tokens, std::size_t width) {
  double sum = 0.0;
  for (std::size_t p = 0; p < tokens; ++p) {
    for (std::size_t j = 0; j < width; ++j) {
      const double angle =
          static_cast<double>(p) /
          std::pow(10000.0, static_cast<double>(j - j % 2) / static_cast<double>(width));
      const double v = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
      sum += v * v;
    }
  }
  return std::sqrt(sum / static_cast<double>(tokens * width));
}

// The table's size from --weights: its `weight` must be a matrix.
std::pair<std::size_t, std::size_t> weights_shape(const StateDict& weights,
                                                  const std::string& name) {
  const auto it = weights.find("weight");
  if (it == weights.end() || it->second.rank() != 2 || it->second.shape[0] == 0 ||
      it->second.shape[1] == 0) {
    throw Error(ErrorKind::bad_value, "tokens_lesson",
                fmt::format("'{}' has no {}: nn.Embedding's state_dict has one key, weight, of "
                            "shape (V, D); save it with attn tokens <save_weights> or "
                            "safetensors.torch.save_file(token_emb.state_dict(), path)",
                            name,
                            it == weights.end() ? std::string("key weight")
                                                : fmt::format("non-empty 2-D weight (it is {})",
                                                              shape_string(it->second.shape))))
        .about("weights");
  }
  return {it->second.shape[0], it->second.shape[1]};
}

}  // namespace

LessonRun run_tokens(const TokensLessonOptions& options) {
  const Vocabulary& vocab = options.vocab ? *options.vocab : lesson_vocabulary();
  // The file's name without its folder: the same output from any directory.
  const std::string vocab_name = options.vocab
                                     ? std::filesystem::path(options.vocab_name).filename().string()
                                     : "lesson-vocab.txt";
  if (std::size_t bad = 0; !is_valid_utf8(options.text, &bad)) {
    throw Error(ErrorKind::bad_value, "tokens_lesson",
                fmt::format("the text is not valid UTF-8: byte 0x{:02x} at offset {} does not "
                            "start a UTF-8 character; pass UTF-8 text (a terminal with "
                            "LANG=C.UTF-8 sends it)",
                            static_cast<unsigned char>(options.text[bad]), bad))
        .about("text");
  }
  if (options.add_special_tokens) {
    for (std::string_view token : {kClassifierToken, kSeparatorToken}) {
      if (!vocab.find(token)) {
        throw Error(ErrorKind::bad_value, "tokens_lesson",
                    fmt::format("the vocabulary {} has no {} line: add one, or leave out "
                                "<add_special_tokens>",
                                vocab_name, token))
            .about("add_special_tokens");
      }
    }
  }
  const Encoding e = encode(options.text, vocab, options.add_special_tokens, options.tokenizer);
  if (e.tokens.empty()) {
    throw Error(ErrorKind::bad_value, "tokens_lesson",
                fmt::format("{} has no tokens: it is empty or only spaces and control "
                            "characters; give some words, e.g. <text> \"time flies like "
                            "an arrow\"",
                            in_quotes(options.text)))
        .about("text");
  }
  const std::size_t tokens = e.tokens.size();
  const auto [rows, width] = options.weights ? weights_shape(*options.weights, options.weights_name)
                                             : std::pair{vocab.size(), options.d_model};
  // At the peak, the one-hot check: the table, its copy in the run and the copy the check
  // multiplies, the one-hot rows and their product, the lookups, the steps shown and a table row
  // per word.
  MemoryPlan plan = plan_weights_file(options.weights);
  plan.push_back({"the embedding table", {rows, width}, "V D"});
  plan.push_back({"the embedding table", {rows, width}, "V D", 4, Held::weights});
  plan.push_back({"the one-hot check's copy of the table", {rows, width}, "V D"});
  plan.push_back({"the one-hot check", {tokens, rows}, "T V"});
  plan.push_back({"the lookups and the check's product", {3, tokens, width}, " T D"});
  plan.push_back({"input_ids", {1, tokens}, " T", 8, Held::shown});
  plan.push_back({"the table shown",
                  {rows * width <= kLargestShownTable ? rows : std::min(rows, kShownRows), width},
                  "V D",
                  4,
                  Held::shown});
  for (int i = 0; i < 1 + options.scale_by_sqrt_d; ++i)
    plan.push_back({"a lookup", {1, tokens, width}, " T D", 4, Held::shown});
  plan.push_back(planned_table_rows("the tokenizer's tables", tokens + 8, "T"));
  check_budget("tokens", plan);
  Ids ids({1, tokens});  // (1,T)
  std::copy(e.ids.begin(), e.ids.end(), ids.begin());
  if (std::size_t at = 0; first_id_out_of_range(ids, rows, &at)) {
    throw Error(
        ErrorKind::bad_value, "tokens_lesson",
        fmt::format("'{}' has {} rows, but the token '{}' has id {} in {}: the table needs a "
                    "row for every id, at least {} rows (this vocabulary has {} tokens)",
                    options.weights_name, rows, e.tokens[at], e.ids[at], vocab_name, e.ids[at] + 1,
                    vocab.size()))
        .about("weights");
  }

  const Module model = describe_embedding(rows, width);
  Embedding table;
  if (options.weights) {
    table.weight = Tensor2({rows, width});
    load_state_dict(table, model, *options.weights, options.weights_name);
  } else {
    Rng rng(options.seed ^ kTableStream);
    table = init_embedding(rng, rows, width);
  }
  const Tensor3 lookup = forward(table, ids);  // (1,T) -> (1,T,D)
  // torch's `x * math.sqrt(d)`: the double scalar is rounded to float, then one float product.
  const float factor = static_cast<float>(std::sqrt(static_cast<double>(width)));
  const Tensor3 output = options.scale_by_sqrt_d ? Tensor3(lookup * factor) : lookup;  // (1,T,D)

  LessonRun run("tokens");
  run.listing("tokens", e.tokens);  // the WordPiece tokens and their ids, also in JSON
  run.listing("ids", e.ids);
  run.setting("text", in_quotes(options.text));
  run.setting("vocab", options.vocab ? vocab_name : "lesson");  // the built-in lesson-vocab.txt
  run.setting("vocab-size", std::to_string(vocab.size()));
  if (options.weights) {
    run.setting("weights", options.weights_name);
  } else {
    run.setting("seed", std::to_string(options.seed));
  }
  run.setting("d-model", std::to_string(width));
  if (options.add_special_tokens) run.setting("add-special-tokens", "yes");
  if (options.scale_by_sqrt_d) run.setting("scale-by-sqrt-d", "yes");
  run.state_dict = collect_state_dict(table);

  run.section("intro");
  run.section("basic");
  run.table(stage_table(options.text, e.basic));
  run.section("wordpiece");
  run.table(wordpiece_table(e));
  run.section("ids");
  run.step(
      "input",
      fmt::format("input_ids: each token's line in the vocabulary, from 0 ({} tokens)", tokens),
      to_array(ids));
  run.section("table");
  if (rows * width <= kLargestShownTable) {
    run.step("weight",
             fmt::format("token_emb.weight (V, D): row i is token i's vector{}",
                         options.weights ? "" : ", N(0, 1) at first"),
             to_array(table.weight));
  } else {
    const std::size_t shown = std::min(rows, kShownRows);
    Tensor2 first({shown, width});
    std::copy(table.weight.data(), table.weight.data() + shown * width, first.data());
    run.step("weight_first_rows",
             fmt::format("the first {} of token_emb.weight's {} rows (the table has {} numbers)",
                         shown, rows, rows * width),
             to_array(first));
  }
  run.section("lookup");
  if (options.scale_by_sqrt_d) {
    run.step("lookup", "token_emb(input_ids): row input_ids[t] of the table for each token",
             to_array(lookup));
    run.section("scale");
    run.step("output",
             fmt::format("token_emb(input_ids) * sqrt({}): seed 001's InputEmbedding, × {:.4f}",
                         width, factor),
             to_array(output));
    const double pe = positional_rms(tokens, width);
    const double before = rms(lookup.data(), lookup.size()),
                 after = rms(output.data(), output.size());
    run.table({"how large the vectors are: the root mean square (rms) of their numbers",
               {"vectors", "rms", "relative to the encoding"},
               {{"token_emb(input_ids)", fmt::format("{:.4f}", before),
                 fmt::format("{:.2f}", before / pe)},
                {fmt::format("× √{} (seed 001)", width), fmt::format("{:.4f}", after),
                 fmt::format("{:.2f}", after / pe)},
                {fmt::format("sinusoidal encoding, positions 0..{}", tokens - 1),
                 fmt::format("{:.4f}", pe), "1.00"}}});
  } else {
    run.step("output", "token_emb(input_ids): row input_ids[t] of the table for each token",
             to_array(output));
  }

  // One-hot rows times the table: the lookup is a matrix product that skips the zeros.
  Tensor3 one_hot = xt::zeros<float>({std::size_t{1}, tokens, rows});  // (1,T,V)
  for (std::size_t t = 0; t < tokens; ++t)
    one_hot(0, t, static_cast<std::size_t>(e.ids[t])) = 1.0f;
  Tensor3 weight3({1, rows, width});  // (1,V,D)
  std::copy(table.weight.begin(), table.weight.end(), weight3.begin());
  const float diff = max_difference(batched_matmul(one_hot, weight3), lookup);  // (1,T,V) @ (1,V,D)
  run.section("checks");
  run.check("token_emb(input_ids) equals one_hot(input_ids) @ weight", diff == 0.0f,
            fmt::format("max |difference| = {:g} over {} × {} numbers", diff, tokens, width));
  std::map<std::int64_t, std::vector<std::size_t>> places;
  for (std::size_t t = 0; t < tokens; ++t)
    places[e.ids[t]].push_back(t);
  for (const auto& [id, at] : places) {
    if (at.size() < 2) continue;
    float most = 0.0f;
    for (std::size_t k = 1; k < at.size(); ++k)
      for (std::size_t d = 0; d < width; ++d) {
        const float gap = std::fabs(output(0, at[k], d) - output(0, at[0], d));
        if (!std::isnan(most) && (std::isnan(gap) || gap > most)) most = gap;
      }
    run.check(fmt::format("'{}' gets the same vector at positions {}",
                          escape_invisible(e.tokens[at[0]]), index_list(at)),
              most == 0.0f, fmt::format("max |difference| = {:g}: no context yet", most));
  }

  run.section("parameters");
  const std::int64_t count = count_parameters(model);
  run.table(
      {"nn.Embedding's parameters: V × D",
       {"table", "V", "D", "parameters"},
       {{"this run: weight", fmt::format("{}", rows), fmt::format("{}", width), with_commas(count)},
        {"BERT-base (seed 000's token_emb)", "30,522", "768",
         with_commas(count_parameters(describe_embedding(30522, 768)))}}});
  run.parameters = count;
  return run;
}

}  // namespace attn::lessons
