// Lesson 15, the GPT: GPT-2's decoder-only model step by step. Legend: T tokens, D n_embd,
// H n_head, hs = D/H, F n_inner, V vocab_size, L n_layer.
#include "15-gpt/gpt_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/random.hpp"

namespace attn::lessons {

namespace {

// Prefixes longer than this are not rerun one by one (the check takes the first ones).
constexpr std::size_t kPrefixesChecked = 16;

std::string token_of(const BpeTokenizer& tokenizer, std::int64_t id) {
  const auto i = static_cast<std::size_t>(id);
  return i < tokenizer.size() ? printable(tokenizer.tokens[i], 40) : std::to_string(id);
}

Gpt2Steps run_forward(const Gpt2& model, const std::vector<std::int64_t>& ids, std::size_t count) {
  Ids input = Ids::from_shape({1, count});
  std::copy(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(count), input.begin());
  return forward(model, Gpt2Input{input, {}});
}

Heatmaps head_maps(const Tensor4& weights, std::size_t layer,
                   const std::vector<std::string>& labels) {
  Heatmaps maps{fmt::format("h.{}: each head's weights (rows: queries, columns: keys)", layer), {}};
  for (std::size_t h = 0; h < weights.shape(1) && h < 4; ++h) {
    Heatmap map{fmt::format("head {}", h), head_matrix(weights, h), labels, labels};
    map.masked = true;
    maps.maps.push_back(std::move(map));
  }
  return maps;
}

// Each position's softmax over the vocabulary, in double: (T, V).
std::vector<std::vector<double>> probabilities(const Tensor3& logits) {
  const std::size_t tokens = logits.shape(1), vocab = logits.shape(2);
  std::vector<std::vector<double>> out(tokens, std::vector<double>(vocab));
  for (std::size_t t = 0; t < tokens; ++t) {
    double largest = -INFINITY;
    for (std::size_t v = 0; v < vocab; ++v)
      largest = std::max(largest, static_cast<double>(logits(0, t, v)));
    double sum = 0.0;
    for (std::size_t v = 0; v < vocab; ++v)
      sum += out[t][v] = std::exp(static_cast<double>(logits(0, t, v)) - largest);
    for (double& p : out[t])
      p /= sum;
  }
  return out;
}

// The largest |a - b| over positions 0..rows-1 of two (1,T,V) tensors.
double largest_difference(const Tensor3& a, const Tensor3& b, std::size_t rows) {
  double largest = 0.0;
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t v = 0; v < a.shape(2); ++v)
      largest = std::max(largest, static_cast<double>(std::abs(a(0, t, v) - b(0, t, v))));
  return largest;
}

void show_block(LessonRun& run, const Gpt2& model, const Gpt2Steps& s, std::size_t layer,
                const std::vector<std::string>& labels) {
  const EncoderConfig& c = model.config.sizes;
  const EncoderLayerTape& tape = s.layers[layer];
  const std::size_t hs = c.hidden_size / c.num_attention_heads;
  run.section("block");
  run.step(
      "ln_1",
      fmt::format("h.{}.ln_1(x): each token to mean 0, variance 1, then scaled (1, T, D)", layer),
      to_array(tape.norm_1.output));
  run.section("mask");
  run.step("mask",
           "the causal mask added to the scores: 0 where key ≤ query, float32's lowest "
           "after it (1, T, T)",
           to_array(s.mask));
  run.step("scores",
           fmt::format("h.{}.attn: Q Kᵀ / √{} + mask, every head (1, H, T, T)", layer, hs),
           to_array(tape.attention.scores));
  const Tensor4& w = tape.attention.weights;  // (1,H,T,T)
  run.step("weights", "softmax over the keys: zero above the diagonal (1, H, T, T)", to_array(w));
  const std::size_t tokens = w.shape(2);
  double above = 0.0, worst_sum = 0.0;
  for (std::size_t h = 0; h < w.shape(1); ++h)
    for (std::size_t q = 0; q < tokens; ++q) {
      double sum = 0.0;
      for (std::size_t k = 0; k < tokens; ++k) {
        sum += w(0, h, q, k);
        if (k > q) above = std::max(above, static_cast<double>(w(0, h, q, k)));
      }
      worst_sum = std::max(worst_sum, std::abs(sum - 1.0));
    }
  run.check("every weight above the diagonal is exactly 0: position t reads positions 0 to t",
            above == 0.0, fmt::format("largest weight above it {:g}", above));
  run.check("each row of weights sums to 1", worst_sum <= 1e-5,
            fmt::format("largest |sum - 1| {:.2g}", worst_sum));
  run.heatmaps(head_maps(w, layer, labels));
  run.section("residual");
  run.step("attention", "c_proj(the heads' weights · V, side by side) (1, T, D)",
           to_array(tape.attention.output));
  run.step("residual", "x + attention: the stream after the first residual connection (1, T, D)",
           to_array(tape.sum_1));
  run.section("mlp");
  run.step("ln_2", fmt::format("h.{}.ln_2(residual) (1, T, D)", layer),
           to_array(tape.norm_2.output));
  run.step("mlp_hidden", "mlp.c_fc: each token widened to F (1, T, F)",
           to_array(tape.feed_forward.hidden));
  run.step("gelu", "GELU's tanh form, 0.5 a (1 + tanh(√(2/π) (a + 0.044715 a³))) (1, T, F)",
           to_array(tape.feed_forward.activated));
  double tanh_form = 0.0, erf_form = 0.0;
  const Tensor3& a = tape.feed_forward.hidden;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], got = tape.feed_forward.activated.data()[i];
    const double by_tanh =
        0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (x + 0.044715 * x * x * x)));
    const double by_erf = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    tanh_form = std::max(tanh_form, std::abs(got - by_tanh) / (1.0 + std::abs(by_tanh)));
    erf_form = std::max(erf_form, std::abs(by_tanh - by_erf));
  }
  run.check("the MLP's GELU is the tanh form (gelu_new), not the exact erf form", tanh_form <= 1e-6,
            fmt::format("largest relative difference from the tanh form {:.2g}; the erf form "
                        "differs from it by up to {:.2g} on these inputs",
                        tanh_form, erf_form));
  run.step("mlp", "mlp.c_proj(gelu): back to D (1, T, D)", to_array(tape.feed_forward.output));
  run.step("block_output",
           fmt::format("residual + mlp: the output of h.{}, hidden_states[{}] (1, T, D)", layer,
                       layer + 1),
           to_array(tape.output));
}

// The tied LM head's table: what sharing wte saves.
Table tied_head_table(const Gpt2& model) {
  const EncoderConfig& c = model.config.sizes;
  const std::int64_t total = gpt2_size(model.config, model.heads).parameters.value();
  const std::int64_t table = static_cast<std::int64_t>(c.vocab_size * c.hidden_size);
  const bool tied = model.lm_head.size() == 0;
  Table out{tied ? "The LM head is wte itself: logits = ln_f(x) wteᵀ, no weight of its own"
                 : "This model's LM head is a table of its own (tie_word_embeddings false)",
            {"", "shape", "parameters"},
            {}};
  out.rows.push_back({"wte, the token table", fmt::format("({}, {})", c.vocab_size, c.hidden_size),
                      std::to_string(table)});
  out.rows.push_back({"lm_head.weight", fmt::format("({}, {})", c.vocab_size, c.hidden_size),
                      tied ? "0 (it is wte)" : std::to_string(table)});
  out.rows.push_back({"the model", "", std::to_string(total)});
  if (tied)
    out.rows.push_back(
        {"an untied head would add", "",
         fmt::format("{} (+{:.1f}%)", table,
                     100.0 * static_cast<double>(table) / static_cast<double>(total))});
  return out;
}

void show_predictions(LessonRun& run, const GptLessonOptions& o, const Tensor3& logits) {
  const BpeTokenizer& tokenizer = *o.tokenizer;
  const std::size_t tokens = o.ids.size(), vocab = logits.shape(2);
  const std::vector<std::vector<double>> p = probabilities(logits);
  run.section("predictions");
  Table table{"What each position predicts: the next token's most likely guesses",
              {"position", "reads", "next in the text", "guesses (probability)", "p(next)"},
              {}};
  for (std::size_t t = 0; t < tokens; ++t) {
    std::vector<std::size_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    const std::size_t shown = std::min(o.top, vocab);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown),
                      order.end(), [&](std::size_t a, std::size_t b) {
                        return p[t][a] > p[t][b] || (p[t][a] == p[t][b] && a < b);
                      });
    std::string guesses;
    for (std::size_t k = 0; k < shown; ++k)
      guesses +=
          fmt::format("{}{} {:.3f}", k == 0 ? "" : "  ",
                      token_of(tokenizer, static_cast<std::int64_t>(order[k])), p[t][order[k]]);
    const std::size_t first = t >= 7 ? t - 7 : 0;
    const std::vector<std::int64_t> prefix(o.ids.begin() + static_cast<std::ptrdiff_t>(first),
                                           o.ids.begin() + static_cast<std::ptrdiff_t>(t) + 1);
    const std::string reads = (first > 0 ? "…" : "") + printable(decode(tokenizer, prefix), 60);
    const bool last = t + 1 == tokens;
    table.rows.push_back(
        {std::to_string(t), reads, last ? "(to generate)" : token_of(tokenizer, o.ids[t + 1]),
         guesses, last ? "" : fmt::format("{:.3f}", p[t][static_cast<std::size_t>(o.ids[t + 1])])});
  }
  run.table(std::move(table));

  run.section("loss");
  if (tokens < 2) {
    run.prose("One token: the text has no next token to score. Give a longer --text.\n");
    return;
  }
  std::vector<std::int64_t> targets(o.ids.begin() + 1, o.ids.end());
  std::vector<float> losses;
  double sum = 0.0;
  for (std::size_t t = 0; t + 1 < tokens; ++t) {
    const double loss = -std::log(p[t][static_cast<std::size_t>(targets[t])]);
    losses.push_back(static_cast<float>(loss));
    sum += loss;
  }
  const double mean = sum / static_cast<double>(losses.size());
  run.step("targets", "the labels: input_ids shifted left by one (T - 1)",
           make_int64({targets.size()}, targets));
  run.step("losses", "-log softmax(logits[t])[input_ids[t + 1]], one per position (T - 1)",
           make_float32({losses.size()}, losses));
  run.step("loss", "their mean: the cross-entropy of the T - 1 predictions of one pass",
           make_float32({1}, {static_cast<float>(mean)}));
  run.prose(
      fmt::format("{} predictions from one forward pass, a loss of {:.4f} nats per token; a "
                  "uniform guess over the {} tokens of the vocabulary scores ln {} = "
                  "{:.4f}.\n",
                  losses.size(), mean, vocab, vocab, std::log(static_cast<double>(vocab))));
}

void show_causal(LessonRun& run, const GptLessonOptions& o, const Tensor3& logits) {
  const Gpt2& model = *o.model;
  const std::size_t tokens = o.ids.size();
  double scale = 0.0;
  for (float v : logits)
    scale = std::max(scale, static_cast<double>(std::abs(v)));
  run.section("causal");
  // One pass against one pass per prefix: the same logits at every position.
  const std::size_t prefixes = std::min(tokens, kPrefixesChecked);
  double worst = 0.0;
  for (std::size_t n = 1; n <= prefixes; ++n) {
    const Gpt2Steps part = run_forward(model, o.ids, n);
    for (std::size_t v = 0; v < logits.shape(2); ++v)
      worst = std::max(
          worst, static_cast<double>(std::abs(part.logits(0, n - 1, v) - logits(0, n - 1, v))));
  }
  const double allowed = 1e-5 * (1.0 + scale);
  run.check(fmt::format("one pass over the text gives position t the logits of a pass over "
                        "tokens 0 to t alone ({} prefixes rerun)",
                        prefixes),
            worst <= allowed, roundoff_evidence("max |difference|", worst, allowed));
  // A later token changed: no earlier position's logits move.
  if (tokens < 2) return;
  std::vector<std::int64_t> changed = o.ids;
  const auto vocab = static_cast<std::int64_t>(model.config.sizes.vocab_size);
  changed.back() = (changed.back() + 1) % vocab;
  const Gpt2Steps other = run_forward(model, changed, tokens);
  const double earlier = largest_difference(logits, other.logits, tokens - 1);
  const double last = largest_difference(logits, other.logits, tokens);
  run.check(
      fmt::format("changing the last token ({} to {}) moves no earlier position's logits",
                  token_of(*o.tokenizer, o.ids.back()), token_of(*o.tokenizer, changed.back())),
      earlier <= 1e-6 * (1.0 + last),
      fmt::format("positions 0 to {}: largest change {:.2g}; the last position: {:.3g}", tokens - 2,
                  earlier, last));
}

Table comparison_table() {
  return Table{"Three branches of the family",
               {"", "encoder (09)", "seed 001's decoder (13)", "GPT (15)"},
               {{"reads", "the whole text", "the target so far, the memory", "the text so far"},
                {"self-attention", "unmasked", "causal", "causal"},
                {"cross-attention", "none", "on the encoder's output", "none: no encoder"},
                {"block", "attention, FFN", "attention, cross-attention, FFN", "attention, MLP"},
                {"norms", "post-LN or pre-LN", "pre-LN, a final norm", "pre-LN, ln_f at the end"},
                {"positions", "learned or sinusoids", "sinusoids", "learned (wpe)"},
                {"activation", "GELU (erf)", "ReLU", "GELU (tanh form)"},
                {"output", "a head per token", "Linear(D, V), log_softmax", "wteᵀ (tied)"},
                {"trained on", "labels, masked tokens", "the next target token",
                 "the next token, everywhere"}}};
}

}  // namespace

CharacterGpt seeded_character_gpt(std::uint64_t seed) {
  Gpt2Config config = default_gpt2_config();
  EncoderConfig& c = config.sizes;
  c.hidden_size = 8;
  c.num_attention_heads = 2;
  c.intermediate_size = 32;
  c.num_hidden_layers = 2;
  c.vocab_size = kGptCharacters.size();
  c.max_position_embeddings = 32;
  config.bos_token_id = config.eos_token_id = 0;  // the newline: no end-of-text token
  Rng rng(seed);
  CharacterGpt out{init_gpt2(rng, config), {}};
  const std::vector<std::string>& symbols = byte_symbols();
  for (const char ch : kGptCharacters) {
    const std::string& symbol = symbols[static_cast<unsigned char>(ch)];
    out.tokenizer.ids[symbol] = static_cast<std::int64_t>(out.tokenizer.tokens.size());
    out.tokenizer.tokens.push_back(symbol);
  }
  return out;
}

MemoryPlan plan_gpt_lesson(const Gpt2Config& config, std::size_t tokens) {
  const EncoderConfig& c = config.sizes;
  const std::size_t d = c.hidden_size, f = c.intermediate_size, h = c.num_attention_heads,
                    v = c.vocab_size;
  MemoryPlan plan = plan_gpt2(config, 1, tokens, true);
  append(plan, plan_gpt2(config, 1, tokens, true));  // a prefix's, or the changed text's
  plan.push_back({"the steps shown", {tokens, 16 * d + 2 * f}, "T D/F", 4, Held::shown});
  plan.push_back(
      {"the mask, scores and weights shown", {2 * h + 1, tokens, tokens}, "H T T", 4, Held::shown});
  plan.push_back({"the logits shown", {tokens, v}, "T V", 4, Held::shown});
  plan.push_back({"the probabilities", {tokens, v}, "T V", 8});
  plan.push_back(planned_heatmap(tokens, tokens, "T T"));
  return plan;
}

LessonRun run_gpt(const GptLessonOptions& o) {
  const Gpt2& model = *o.model;
  const BpeTokenizer& tokenizer = *o.tokenizer;
  const EncoderConfig& c = model.config.sizes;
  const std::size_t tokens = o.ids.size(), layers = model.layers.size();
  if (tokens == 0 || layers == 0 || o.layer >= layers)
    throw Error(ErrorKind::internal, "gpt",
                fmt::format("{} tokens, block {} of {}", tokens, o.layer, layers));
  LessonRun run("gpt");
  run.parameters = gpt2_size(model.config, model.heads).parameters.value();
  run.setting("model", fmt::format("{} (GPT-2: {} blocks x {} heads, D = {}, F = {}, V = {})",
                                   o.name, layers, c.num_attention_heads, c.hidden_size,
                                   c.intermediate_size, c.vocab_size));
  run.setting("text", printable(o.text, 200));
  run.setting("T", std::to_string(tokens));
  run.setting("block shown", fmt::format("h.{}", o.layer));

  run.section("intro");
  std::vector<std::string> labels;
  Table input{"The text's tokens", {"position", "token", "id"}, {}};
  for (std::size_t t = 0; t < tokens; ++t) {
    labels.push_back(token_of(tokenizer, o.ids[t]));
    input.rows.push_back({std::to_string(t), labels.back(), std::to_string(o.ids[t])});
  }
  run.table(std::move(input));
  run.step("input_ids", "input_ids (B, T)", make_int64({1, tokens}, o.ids));

  const Gpt2Steps s = run_forward(model, o.ids, tokens);
  run.section("embeddings");
  run.step("token", "wte[input_ids]: each token's row of the token table (1, T, D)",
           to_array(s.token));
  run.step("position", "wpe[0..T-1]: each position's row of the learned position table (1, T, D)",
           to_array(s.position));
  run.step("hidden_states.0", "token + position: what h.0 reads (1, T, D)", to_array(s.embedded));

  show_block(run, model, s, o.layer, labels);

  run.section("stack");
  for (std::size_t l = 0; l < layers; ++l)
    run.step(fmt::format("h.{}.output", l), fmt::format("the output of h.{} (1, T, D)", l),
             to_array(s.layers[l].output), false);

  run.section("final");
  run.step("ln_f", "ln_f(the last block's output): transformers' last_hidden_state (1, T, D)",
           to_array(s.final_norm));
  run.step("logits", "ln_f · wteᵀ: a score for every token of the vocabulary (1, T, V)",
           to_array(s.logits));
  run.table(tied_head_table(model));

  show_predictions(run, o, s.logits);
  show_causal(run, o, s.logits);

  run.section("compare");
  run.table(comparison_table());
  return run;
}

}  // namespace attn::lessons
