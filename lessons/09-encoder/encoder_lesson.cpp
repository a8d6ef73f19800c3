// Lesson 09, the encoder. Legend: B batch, T tokens, D model width, H heads, F feed-forward width.
#include "09-encoder/encoder_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/count.hpp"
#include "base/random.hpp"
#include "encoder.hpp"
#include "io/shipped.hpp"
#include "module_size.hpp"
#include "state_dict.hpp"
#include "summary.hpp"
#include "trained.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kWeightsStream =
    0xe4c0deULL;  // the encoder's weights, apart from the input's draws

// Attention heatmaps for at most this many layers and heads per layer.
constexpr std::size_t kMapLayers = 12, kMapHeads = 12;

// Mean and largest L2 norm of the token vectors of x (B,T,D).
std::pair<double, double> token_norms(const Tensor3& x) {
  const std::size_t rows = x.shape(0) * x.shape(1), d = x.shape(2);
  double total = 0.0, largest = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    double sq = 0.0;
    for (std::size_t i = 0; i < d; ++i)
      sq += static_cast<double>(x.data()[r * d + i]) * x.data()[r * d + i];
    total += std::sqrt(sq);
    largest = std::max(largest, std::sqrt(sq));
  }
  return {total / static_cast<double>(rows), largest};
}

bool all_finite(const Tensor3& x) {
  for (float v : x)
    if (!std::isfinite(v)) return false;
  return true;
}

Ids to_ids(const std::vector<std::vector<std::int64_t>>& rows) {
  Ids ids({rows.size(), rows.front().size()});
  for (std::size_t b = 0; b < rows.size(); ++b)
    for (std::size_t t = 0; t < rows[b].size(); ++t)
      ids(b, t) = rows[b][t];
  return ids;
}

std::string count(const Module& m) {
  return with_commas(count_parameters(m));
}

// For check_budget, from one layer's size times L: the module tree, the weights and their copy in
// the run; the input; the hidden states, the embeddings' steps and one layer's at a time with
// its temporaries; the steps shown; a row of the norms table per layer, one of the tokens table
// per token.
MemoryPlan plan_encoder_lesson(const EncoderLessonOptions& o, std::size_t batch,
                               std::size_t tokens) {
  const EncoderConfig& c = o.config;
  const std::size_t d = c.hidden_size, layers = c.num_hidden_layers;
  encoder_size(c, o.embeddings);  // refuses more than 2^63-1 parameters
  const ModuleSize layer = encoder_layer_size(c, std::to_string(layers - 1));
  const ModuleSize embeddings =
      o.embeddings ? module_size(describe_embeddings(c, "embeddings")) : ModuleSize{};
  MemoryPlan plan = plan_weights_file(o.weights);
  // The model's layers, and the one the parameter table describes.
  plan.push_back(planned_tree("the module tree", layer, layers + 1, "L "));
  for (Held held : {Held::computing, Held::weights}) {
    plan.push_back(planned_weights("the weights", layer, layers, "L D/F", held));
    if (o.embeddings)
      plan.push_back(planned_weights("the embeddings' weights", embeddings, 1, " V/P/D", held));
  }
  const Shape btd = {batch, tokens, d};
  if (o.embeddings) {
    plan.push_back({"the ids", {2, batch, tokens}, " B T", 8, Held::kept});
    plan.push_back({"input_ids", {batch, tokens}, "B T", 8, Held::shown});
    append(plan, plan_embeddings(c, batch, tokens));
    for (const char* name : {"token_embeddings", "embeddings"})
      plan.push_back({name, btd, "B T D", 4, Held::shown});
    plan.push_back({"position_embeddings", {1, tokens, d}, " T D", 4, Held::shown});
    plan.push_back(planned_table_rows("the tokens table", o.tokens.size(), "T"));
  } else {
    append(plan, plan_lesson_input(o.common));
    plan.push_back({"X", btd, "B T D", 4, Held::shown});
  }
  plan.push_back({"the hidden states", btd, "B T D"});
  append(plan, plan_encoder_layer(c, batch, tokens));
  append(plan, plan_encoder_layer_temporaries(c, batch, tokens));
  const std::size_t shown =
      (o.placement == NormPlacement::pre ? 5 : 4) + (o.show_layer + 1 < layers) + 1;
  for (std::size_t i = 0; i < shown; ++i)
    plan.push_back({"a step shown", btd, "B T D", 4, Held::shown});
  plan.push_back(planned_table_rows("the norms table", layers + 1, "L"));
  if (tokens <= kHeatmapMaxTokens) {
    plan.push_back({"every layer's heads' heatmaps",
                    {2, std::min(layers, kMapLayers), std::min(c.num_attention_heads, kMapHeads),
                     tokens, tokens},
                    " L H T T",
                    4,
                    Held::kept});
  }
  return plan;
}
}  // namespace

LessonRun run_encoder(const EncoderLessonOptions& o) {
  const EncoderConfig& c = o.config;
  validate_config(c, o.config_name);
  const std::size_t d = c.hidden_size, layers = c.num_hidden_layers;
  if (o.show_layer >= layers) {
    throw Error(ErrorKind::bad_value, "encoder_lesson",
                fmt::format("layer {} does not exist: the encoder has {} layers, numbered 0 to {}",
                            o.show_layer, layers, layers - 1))
        .about("show_layer");
  }
  std::size_t batch = 0, tokens = 0;
  if (o.embeddings) {
    if (o.ids.empty() || o.ids.front().empty())
      throw Error(ErrorKind::bad_value, "encoder", "no tokens to encode: give <text> or <ids>");
    batch = o.ids.size();
    tokens = o.ids.front().size();
    for (const auto& row : o.ids) {
      if (row.size() != tokens)
        throw Error(ErrorKind::bad_value, "encoder_lesson",
                    "every sequence of ids must have the same length")
            .about("ids");
      for (std::int64_t id : row)
        if (id < 0 || static_cast<std::size_t>(id) >= c.vocab_size) {
          throw Error(
              ErrorKind::bad_value, "encoder_lesson",
              fmt::format("id {} is outside the vocabulary (0 to {}): use ids below vocab_size {}",
                          id, c.vocab_size - 1, c.vocab_size))
              .about("ids");
        }
    }
  } else {
    const Sizes3 s = lesson_sizes(o.common);
    batch = s.batch, tokens = s.seq;
    if (o.common.input && s.d_model != d) {
      throw Error(
          ErrorKind::bad_size, "encoder_lesson",
          fmt::format("the hidden states have width {}, the encoder {}: pass <d_model> {} or a "
                      "config with hidden_size {}",
                      s.d_model, d, s.d_model, s.d_model))
          .about("input");
    }
  }
  if (tokens > c.max_position_embeddings) {
    throw Error(
        ErrorKind::bad_size, "encoder_lesson",
        fmt::format(
            "{} tokens but the position table has {} (max_position_embeddings): use at most {} "
            "tokens",
            tokens, c.max_position_embeddings, c.max_position_embeddings))
        .about("seq");
  }
  check_budget("encoder", plan_encoder_lesson(o, batch, tokens));
  const Module model = describe_encoder(c, o.embeddings);

  Rng rng(o.common.seed ^ kWeightsStream);
  Encoder encoder = init_encoder(rng, c, o.placement, o.embeddings);
  if (o.weights) {
    check_state_dict(model, *o.weights, o.weights_name);
    visit_parameters(encoder, [&](const std::string& key, float* data, const Shape& shape) {
      copy_parameter_in(*o.weights, key, data, shape);
    });
  }

  LessonRun run("encoder");
  if (!o.embeddings) {
    record_settings(run, o.common, {{"batch", batch}, {"seq", tokens}});
  } else {
    run.setting("seed", std::to_string(o.common.seed));
    run.setting("tokens", std::to_string(tokens));
  }
  run.setting("config", o.config_name);
  run.setting("d-model", std::to_string(d));
  run.setting("heads", std::to_string(c.num_attention_heads));
  run.setting("d-ff", std::to_string(c.intermediate_size));
  run.setting("layers", std::to_string(layers));
  run.setting("norm", o.placement == NormPlacement::pre ? "pre" : "post");
  if (o.weights) run.setting("weights", o.weights_name);
  visit_parameters(encoder, [&](const std::string& key, float* data, const Shape& shape) {
    copy_parameter_out(run.state_dict, key, data, shape);
  });

  run.section(o.placement == NormPlacement::pre ? "intro" : "intro_post");
  if (o.trained) {
    run.setting("checkpoint", checkpoint_label(o.trained->checkpoint));
    run.section("intro_trained");
    run.prose(wrapped_prose(fmt::format(
        "This checkpoint was trained on the task `{}`: {}. Attention could solve it with {}; what "
        "its heads do, measured on the task's held-out sequences:",
        o.trained->task, o.trained->description, o.trained->pattern)));
    const TrainedSource& m = o.trained->measured;
    show_head_patterns(run, m.measured, m.keys, m.claim,
                       fmt::format("{} held-out sequences",
                                   with_commas(static_cast<std::int64_t>(m.measured_on))));
  }
  if (!o.ablated.empty()) run.prose(o.ablated);
  Table norms{"The residual stream: the size of each token's vector (L2 norm)",
              {"after", "mean", "largest"},
              {}};
  auto add_norm = [&](const std::string& where, const Tensor3& x) {
    const auto [mean, largest] = token_norms(x);
    norms.rows.push_back({where, fmt::format("{:.4f}", mean), fmt::format("{:.4f}", largest)});
  };

  Tensor3 x;
  if (o.embeddings) {
    const Ids ids = to_ids(o.ids);
    if (!o.tokens.empty()) {
      Table t{"The tokens (lesson 00)", {"position", "token", "id"}, {}};
      for (std::size_t i = 0; i < o.tokens.size(); ++i) {
        t.rows.push_back({fmt::format("{}", i), o.tokens[i], fmt::format("{}", o.ids.front()[i])});
      }
      run.table(std::move(t));
    }
    run.step("input", "input_ids, one id per token", to_array(ids));
    const EmbeddingsSteps e = forward(encoder.embeddings, ids);
    run.section("embeddings");
    run.step("token_embeddings",
             "token_embeddings(input_ids): one row of the (V, D) table per token",
             to_array(e.token));
    run.step("position_embeddings", "position_embeddings(0..T-1): one learned row per position",
             to_array(e.position));
    run.step("embeddings", "LayerNorm(token + position), eps 1e-12; dropout is off at inference",
             to_array(e.output));
    x = e.output;
    add_norm("embeddings", x);
  } else {
    x = lesson_input(o.common, "(B, T, D)", {batch, tokens, d});
    run.step("input", "X, the hidden states entering the first layer", to_array(x));
    add_norm("input", x);
  }

  std::vector<Heatmaps> maps;  // sequence 0, per layer
  const std::vector<std::string> map_labels =
      o.tokens.size() == tokens ? o.tokens : token_labels(tokens);
  for (std::size_t i = 0; i < layers; ++i) {
    const EncoderLayerSteps s = forward(encoder.layers[i], x);
    if (i < kMapLayers) {
      Heatmaps layer_maps{fmt::format("layer {}", i), {}};
      for (std::size_t h = 0; h < std::min(c.num_attention_heads, kMapHeads); ++h)
        layer_maps.maps.push_back(
            {fmt::format("head {}", h), head_matrix(s.weights, h), map_labels, map_labels});
      maps.push_back(std::move(layer_maps));
    }
    if (i == o.show_layer) {
      const std::string p = fmt::format("layer_{}_", i);
      const bool pre = o.placement == NormPlacement::pre;
      run.section(pre ? "layer_pre" : "layer_post");
      if (pre) {
        run.step(p + "norm_1", fmt::format("layers.{}.layer_norm_1(x)", i), to_array(s.norm_1));
        run.step(p + "attention", "attention(LN1(x)): multi-head attention, lesson 05",
                 to_array(s.attention));
        run.step(p + "residual_1", "x + attention(LN1(x))", to_array(s.residual_1));
        run.step(p + "norm_2", "layer_norm_2 of that", to_array(s.norm_2));
        run.step(p + "feed_forward", "feed_forward(LN2(x)): lesson 08", to_array(s.feed_forward));
      } else {
        run.step(p + "attention", "attention(x): multi-head attention, lesson 05",
                 to_array(s.attention));
        run.step(p + "norm_1", fmt::format("layers.{}.layer_norm_1(x + attention(x))", i),
                 to_array(s.norm_1));
        run.step(p + "feed_forward", "feed_forward of that: lesson 08", to_array(s.feed_forward));
        run.step(p + "norm_2", "layer_norm_2(x + feed_forward(x))", to_array(s.norm_2));
      }
      if (i + 1 < layers) {
        run.step(p + "output",
                 fmt::format("the output of layer {}, the input of layer {}", i, i + 1),
                 to_array(s.output));
      }
    }
    x = s.output;
    add_norm(fmt::format("layer {}", i), x);
  }
  run.section(o.trained ? "attention_maps_trained"
              : c.num_hidden_layers > kMapLayers || c.num_attention_heads > kMapHeads
                  ? "attention_maps_some"
                  : "attention_maps");
  for (Heatmaps& layer_maps : maps)
    run.heatmaps(std::move(layer_maps));
  run.section("norms");
  run.table(std::move(norms));
  run.section("output");
  run.step("output", "the encoder's output: one contextual vector per token", to_array(x));
  if (o.trained) {
    // The head on every token of sequence 0: the class with the largest logit.
    const Tensor3 logits = forward(o.trained->head, x);  // (B,T,C)
    const std::size_t classes = logits.shape(2);
    Table t{fmt::format("What the trained model outputs for sequence 0 (its head, Linear({}, {}), "
                        "on each token)",
                        d, classes),
            {"position", "token", "output", "expected"},
            {}};
    std::size_t right = 0, known = 0;
    for (std::size_t i = 0; i < tokens; ++i) {
      if (!o.trained->asked.empty() && !o.trained->asked.at(i)) {
        t.rows.push_back({fmt::format("{}", i), map_labels[i], "", ""});
        continue;
      }
      const float* z = logits.data() + i * classes;
      const auto best = static_cast<std::size_t>(std::max_element(z, z + classes) - z);
      const std::string& output = o.trained->class_names.at(best);
      const std::string& expected = o.trained->expected.at(i);
      if (expected.empty()) {  // the text does not say (a masked character)
        t.rows.push_back({fmt::format("{}", i), map_labels[i], output, ""});
        continue;
      }
      ++known;
      right += output == expected;
      t.rows.push_back({fmt::format("{}", i), map_labels[i], output,
                        expected + (output == expected ? "" : "  ✗")});
    }
    run.section("trained_output");
    run.table(std::move(t));
    if (known > 0) run.prose(fmt::format("{} of {} positions right.\n", right, known));
  }

  run.section("checks");
  run.check("every hidden state is finite", all_finite(x), "no inf or nan in the output");

  run.section("parameters");
  Table params{"Parameters by part", {"part", "parameters"}, {}};
  if (o.embeddings) {
    const Module& e = child(model, "embeddings");
    params.rows.push_back({"embeddings", count(e)});
    for (const Module& part : e.children)
      if (!part.parameters.empty()) params.rows.push_back({"  " + part.name, count(part)});
  }
  const Module one_layer = describe_encoder_layer(c);
  params.rows.push_back({fmt::format("each layer (x {})", layers), count(one_layer)});
  for (const Module& part : one_layer.children)
    params.rows.push_back({"  " + part.name, count(part)});
  params.rows.push_back({"total", count(model)});
  run.table(std::move(params));
  EncoderConfig bert;  // EncoderConfig's defaults are bert-base-uncased's
  EncoderConfig bert_layer = bert;
  bert_layer.num_hidden_layers = 1;
  run.table(
      {"The same model at BERT-base size (data/configs/bert-base.json)",
       {"part", "parameters"},
       {{"one TransformerEncoderLayer",
         with_commas(count_parameters(describe_encoder(bert_layer, false)))},
        {"Embeddings + 12 layers", with_commas(count_parameters(describe_encoder(bert, true)))}}});
  run.parameters = count_parameters(model);
  return run;
}

}  // namespace attn::lessons

namespace attn::lessons {

namespace {
// How many predictions a [MASK] shows.
constexpr std::size_t kPredictions = 5;

Array ids_array(const Ids& ids) {
  return make_int64({ids.shape(0), ids.shape(1)},
                    std::vector<std::int64_t>(ids.begin(), ids.end()));
}
}  // namespace

MemoryPlan plan_bert_lesson(const BertConfig& config, BertHeads heads, std::size_t tokens) {
  const EncoderConfig& c = config.sizes;
  const std::size_t d = c.hidden_size, layers = c.num_hidden_layers, h = c.num_attention_heads;
  MemoryPlan plan = plan_bert(config, heads, 1, tokens);
  plan.push_back({"input_ids, token_type_ids, attention_mask", {3, tokens}, " T", 8, Held::shown});
  plan.push_back({"the embeddings' steps", {4, tokens, d}, " T D", 4, Held::shown});
  plan.push_back({"hidden_states", {layers + 1, tokens, d}, "L T D", 4, Held::shown});
  plan.push_back({"attentions", {layers, h, tokens, tokens}, "L H T T", 4, Held::shown});
  if (heads != BertHeads::none)
    plan.push_back({"logits", {tokens, c.vocab_size}, "T V", 4, Held::shown});
  plan.push_back(planned_heatmap(tokens, tokens, "T T"));
  plan.push_back(planned_table_rows("the tables", 2 * tokens + layers, "T"));
  plan.push_back(planned_tree("the module tree", bert_size(config, heads, true), 1, " "));
  return plan;
}

LessonRun run_bert(const BertLessonOptions& o) {
  const Bert& model = *o.model;
  const EncoderConfig& c = model.config.sizes;
  const std::size_t layers = model.layers.size(), tokens = o.input.ids.shape(1);
  if (o.show_layer >= layers) {
    throw Error(ErrorKind::bad_value, "encoder_lesson",
                fmt::format("layer {} does not exist: the model has {} layers, numbered 0 to {}",
                            o.show_layer, layers, layers - 1))
        .about("show_layer");
  }
  const BertSteps s = forward(model, o.input);
  const Module tree = describe_bert(model.config, model.heads, model.pooler.has_value());

  LessonRun run("encoder");
  run.setting("pretrained", o.name);
  run.setting("model", std::string(bert_class_name(model.heads)));
  run.setting("layers", std::to_string(layers));
  run.setting("d-model", std::to_string(c.hidden_size));
  run.setting("heads", std::to_string(c.num_attention_heads));
  run.setting("d-ff", std::to_string(c.intermediate_size));
  run.setting("tokens", std::to_string(tokens));
  run.section("bert_intro");

  Table t{"The tokens (lesson 00), as the folder's tokenizer reads the text",
          {"position", "token", "id", "token type"},
          {}};
  const Ids types = o.input.token_types.size() > 0
                        ? o.input.token_types
                        : Ids(xt::zeros<std::int64_t>({std::size_t{1}, tokens}));
  for (std::size_t i = 0; i < tokens; ++i)
    t.rows.push_back({fmt::format("{}", i), o.tokens.at(i), fmt::format("{}", o.input.ids(0, i)),
                      fmt::format("{}", types(0, i))});
  run.table(std::move(t));
  run.step("input_ids", "input_ids, one id per token", ids_array(o.input.ids));
  run.step("token_type_ids", "token_type_ids: 0 for the first sentence, 1 for the second",
           ids_array(types));
  run.step("attention_mask", "attention_mask: 1 for every token (no padding)",
           ids_array(Ids(xt::ones<std::int64_t>({std::size_t{1}, tokens}))));

  run.section("bert_embeddings");
  run.step("word_embeddings", "embeddings.word_embeddings(input_ids): a row of (V, D) per token",
           to_array(s.embeddings.token));
  run.step("token_type_embeddings",
           "embeddings.token_type_embeddings(token_type_ids): a row of (Y, D) per token",
           to_array(s.token_type));
  run.step("position_embeddings", "embeddings.position_embeddings(0..T-1)",
           to_array(s.embeddings.position));
  run.step("hidden_states.0",
           fmt::format("LayerNorm(word + token type + position), eps {:g}: hidden_states[0]",
                       c.layer_norm_eps),
           to_array(s.hidden_states(0)));

  run.section("bert_layers");
  Table norms{"The residual stream: the size of each token's vector (L2 norm)",
              {"after", "mean", "largest"},
              {}};
  auto add_norm = [&](const std::string& where, const Tensor3& x) {
    const auto [mean, largest] = token_norms(x);
    norms.rows.push_back({where, fmt::format("{:.4f}", mean), fmt::format("{:.4f}", largest)});
  };
  add_norm("embeddings", s.hidden_states(0));
  float worst_sum = 0.0f;
  bool finite = all_finite(s.hidden_states(0));
  for (std::size_t l = 0; l < layers; ++l) {
    const Tensor4& w = s.layers[l].attention.weights;  // (1,H,T,T)
    for (std::size_t r = 0; r < w.size() / tokens; ++r) {
      double sum = 0.0;
      for (std::size_t k = 0; k < tokens; ++k)
        sum += w.data()[r * tokens + k];
      worst_sum = std::max(worst_sum, static_cast<float>(std::abs(sum - 1.0)));
    }
    const bool shown = l == o.show_layer || l + 1 == layers;
    run.step(fmt::format("attentions.{}", l),
             fmt::format("encoder.layer.{}: every head's softmax(Q Kᵀ / √{}), (B, H, T, T)", l,
                         c.hidden_size / c.num_attention_heads),
             to_array(w), false);
    run.step(fmt::format("hidden_states.{}", l + 1),
             fmt::format("the output of encoder.layer.{}: hidden_states[{}]{}", l, l + 1,
                         l + 1 == layers ? ", last_hidden_state" : ""),
             to_array(s.hidden_states(l + 1)), shown);
    finite = finite && all_finite(s.hidden_states(l + 1));
    add_norm(fmt::format("layer {}", l), s.hidden_states(l + 1));
  }
  run.section("bert_maps");
  Heatmaps maps{fmt::format("layer {} (--show-layer N picks another)", o.show_layer), {}};
  const Tensor4& shown_weights = s.layers[o.show_layer].attention.weights;
  for (std::size_t h = 0; h < std::min(c.num_attention_heads, kMapHeads); ++h)
    maps.maps.push_back(
        {fmt::format("head {}", h), head_matrix(shown_weights, h), o.tokens, o.tokens});
  run.heatmaps(std::move(maps));
  run.table(std::move(norms));

  if (model.pooler) {
    run.section("bert_pooler");
    run.step("pooler_output", "pooler: tanh(dense(hidden_states[L][:, 0])), the [CLS] vector",
             to_array(s.pooled));
  }
  if (model.masked_lm) {
    run.step("logits", "cls.predictions: LayerNorm(gelu(dense(x))) @ word_embeddingsᵀ + bias",
             to_array(s.logits), false);
    const std::size_t vocab = s.logits.shape(2);
    Table p{"What the MLM head predicts at each [MASK]",
            {"position", "rank", "token", "id", "probability"},
            {}};
    for (std::size_t i = 0; i < tokens; ++i) {
      if (o.tokens[i] != kMaskToken) continue;
      const std::vector<TokenPrediction> top =
          top_predictions(s.logits.data() + i * vocab, vocab, kPredictions);
      for (std::size_t r = 0; r < top.size(); ++r) {
        const auto id = static_cast<std::size_t>(top[r].id);
        p.rows.push_back({r == 0 ? fmt::format("{}", i) : "", fmt::format("{}", r + 1),
                          id < o.vocab->size() ? o.vocab->tokens[id] : "?",
                          fmt::format("{}", top[r].id), fmt::format("{:.4f}", top[r].probability)});
      }
    }
    if (p.rows.empty()) {
      run.section("bert_no_mask");
    } else {
      run.section("bert_predictions");
      run.table(std::move(p));
    }
  }

  run.section("checks");
  run.check("every hidden state is finite", finite, "no inf or nan in hidden_states");
  run.check("every attention row sums to 1", worst_sum <= summation_tolerance(tokens),
            roundoff_evidence("max |sum - 1|", worst_sum, summation_tolerance(tokens)));
  run.section("parameters");
  Table params{"Parameters by part", {"part", "parameters"}, {}};
  const Module& bert = model.heads == BertHeads::none ? tree : child(tree, "bert");
  for (const Module& part : bert.children)
    if (part.name != "encoder") params.rows.push_back({part.name, count(part)});
  const Module& list = child(child(bert, "encoder"), "layer");
  params.rows.push_back({fmt::format("each layer (x {})", layers), count(list.children.front())});
  if (model.heads != BertHeads::none)
    params.rows.push_back(
        {"cls (the word table is shared with the embeddings)", count(child(tree, "cls"))});
  params.rows.push_back({"total", count(tree)});
  run.table(std::move(params));
  run.parameters = count_parameters(tree);
  return run;
}

}  // namespace attn::lessons
