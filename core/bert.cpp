#include "bert.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "base/error.hpp"
#include "hf_tensors.hpp"
#include "matmul.hpp"
#include "state_dict.hpp"

namespace attn {

namespace {

GeluApproximation gelu_of(const EncoderConfig& config) {
  return config.hidden_act == "gelu" ? GeluApproximation::none : GeluApproximation::tanh;
}

float eps_of(const EncoderConfig& config) {
  return static_cast<float>(config.layer_norm_eps);
}

Module layer_norm_named(std::size_t d) {
  return describe_layer_norm(d, "LayerNorm");
}

Module bert_layer(const EncoderConfig& c, std::string name) {
  const std::size_t d = c.hidden_size, f = c.intermediate_size;
  Module self{"BertSelfAttention",
              "self",
              {},
              {linear_module("query", d, d, true), linear_module("key", d, d, true),
               linear_module("value", d, d, true), leaf_module("Dropout", "dropout")}};
  Module self_output{
      "BertSelfOutput",
      "output",
      {},
      {linear_module("dense", d, d, true), layer_norm_named(d), leaf_module("Dropout", "dropout")}};
  Module attention{"BertAttention", "attention", {}, {std::move(self), std::move(self_output)}};
  Module intermediate{
      "BertIntermediate",
      "intermediate",
      {},
      {linear_module("dense", d, f, true), leaf_module("GELUActivation", "intermediate_act_fn")}};
  Module output{
      "BertOutput",
      "output",
      {},
      {linear_module("dense", f, d, true), layer_norm_named(d), leaf_module("Dropout", "dropout")}};
  return Module{"BertLayer",
                std::move(name),
                {},
                {std::move(attention), std::move(intermediate), std::move(output)}};
}

Module bert_embeddings(const BertConfig& config) {
  const EncoderConfig& c = config.sizes;
  return Module{
      "BertEmbeddings",
      "embeddings",
      {},
      {describe_embedding(c.vocab_size, c.hidden_size, "word_embeddings"),
       describe_embedding(c.max_position_embeddings, c.hidden_size, "position_embeddings"),
       describe_embedding(config.type_vocab_size, c.hidden_size, "token_type_embeddings"),
       layer_norm_named(c.hidden_size), leaf_module("Dropout", "dropout")}};
}

Module bert_model(const BertConfig& config, bool pooler, std::string name) {
  const EncoderConfig& c = config.sizes;
  const std::size_t layers = c.num_hidden_layers;
  Module layer = bert_layer(c, std::to_string(layers == 0 ? 0 : layers - 1));
  check_budget("describe_bert",
               {planned_tree("the layers' module tree", module_size(layer), layers, "L ")});
  Module list{"ModuleList", "layer", {}, {}};
  for (std::size_t i = 0; i < layers; ++i) {
    layer.name = std::to_string(i);
    list.children.push_back(layer);
  }
  Module model{"BertModel",
               std::move(name),
               {},
               {bert_embeddings(config), Module{"BertEncoder", "encoder", {}, {std::move(list)}}}};
  if (pooler) {
    model.children.push_back(Module{"BertPooler",
                                    "pooler",
                                    {},
                                    {linear_module("dense", c.hidden_size, c.hidden_size, true),
                                     leaf_module("Tanh", "activation")}});
  }
  return model;
}

// BertLMPredictionHead: its decoder is tied to the word table (a parameter of the embeddings, not
// of its own), its bias is the head's.
Module prediction_head(const EncoderConfig& c) {
  const std::size_t d = c.hidden_size;
  Module transform{"BertPredictionHeadTransform",
                   "transform",
                   {},
                   {linear_module("dense", d, d, true),
                    leaf_module("GELUActivation", "transform_act_fn"), layer_norm_named(d)}};
  return Module{"BertLMPredictionHead",
                "predictions",
                {ParameterInfo{"bias", {c.vocab_size}}},
                {std::move(transform), Module{"Linear", "decoder", {}, {}}}};
}

}  // namespace

std::string_view bert_class_name(BertHeads heads) {
  switch (heads) {
    case BertHeads::none:
      return "BertModel";
    case BertHeads::masked_lm:
      return "BertForMaskedLM";
    case BertHeads::pretraining:
      return "BertForPreTraining";
  }
  return "BertModel";
}

Module describe_bert(const BertConfig& config, BertHeads heads, bool pooler) {
  bert_size(config, heads, pooler);  // refuses more than 2^63-1 parameters before building
  if (heads == BertHeads::none) return bert_model(config, pooler, "");
  if (heads == BertHeads::masked_lm) {
    return Module{"BertForMaskedLM",
                  "",
                  {},
                  {bert_model(config, pooler, "bert"),
                   Module{"BertOnlyMLMHead", "cls", {}, {prediction_head(config.sizes)}}}};
  }
  return Module{"BertForPreTraining",
                "",
                {},
                {bert_model(config, pooler, "bert"),
                 Module{"BertPreTrainingHeads",
                        "cls",
                        {},
                        {prediction_head(config.sizes),
                         linear_module("seq_relationship", config.sizes.hidden_size, 2, true)}}}};
}

ModuleSize bert_size(const BertConfig& config, BertHeads heads, bool pooler) {
  const EncoderConfig& c = config.sizes;
  const std::size_t layers = c.num_hidden_layers;
  ModuleSize size =
      module_size(bert_layer(c, std::to_string(layers == 0 ? 0 : layers - 1))) * Count(layers);
  size = size + module_size(bert_embeddings(config)) +
         module_size(Module{"BertModel", "bert", {}, {}}) +
         module_size(Module{"BertEncoder", "encoder", {}, {Module{"ModuleList", "layer", {}, {}}}});
  if (pooler) {
    size = size + module_size(Module{"BertPooler",
                                     "pooler",
                                     {},
                                     {linear_module("dense", c.hidden_size, c.hidden_size, true),
                                      leaf_module("Tanh", "activation")}});
  }
  if (heads != BertHeads::none)
    size = size + module_size(prediction_head(c)) +
           module_size(Module{"BertOnlyMLMHead", "cls", {}, {}});
  if (heads == BertHeads::pretraining)
    size = size + module_size(linear_module("seq_relationship", c.hidden_size, 2, true));
  check_parameter_count(
      size.parameters, "describe_bert",
      fmt::format("BERT with L = {}, D = {}, F = {}, V = {}, P = {}", layers, c.hidden_size,
                  c.intermediate_size, c.vocab_size, c.max_position_embeddings),
      {"L", "D", "F", "V", "P"});
  return size;
}

namespace {

// The checkpoint's keys as describe_bert names them: the legacy LayerNorm.gamma/.beta renamed.
StateDict modern_names(StateDict&& weights) {
  StateDict out;
  while (!weights.empty()) {
    auto node = weights.extract(weights.begin());
    std::string key = node.key();
    if (ends_with(key, "LayerNorm.gamma")) key = key.substr(0, key.size() - 5) + "weight";
    if (ends_with(key, "LayerNorm.beta")) key = key.substr(0, key.size() - 4) + "bias";
    if (out.count(key) > 0) {
      throw Error(ErrorKind::bad_file, "load_bert",
                  fmt::format("holds both '{}' and its legacy name: keep one", printable(key)));
    }
    node.key() = key;
    out.insert(std::move(node));
  }
  return out;
}

Linear linear_from(StateDict& weights, const std::string& prefix) {
  Linear l;
  l.weight = to_tensor2(take(weights, prefix + "weight"));
  l.bias = to_tensor1(take(weights, prefix + "bias"));
  l.has_bias = true;
  return l;
}
}  // namespace

Bert load_bert(const BertConfig& config, StateDict&& file_weights, std::string_view source) {
  const EncoderConfig& c = config.sizes;
  const std::string shown = printable(std::string(source));
  StateDict weights = modern_names(std::move(file_weights));
  bool prefixed = false, pooler = false, predictions = false, next_sentence = false;
  for (const auto& [key, array] : weights) {
    prefixed = prefixed || starts_with(key, "bert.");
    pooler = pooler || starts_with(key, "pooler.") || starts_with(key, "bert.pooler.");
    predictions = predictions || starts_with(key, "cls.predictions.");
    next_sentence = next_sentence || starts_with(key, "cls.seq_relationship.");
  }
  Bert model;
  model.config = config;
  model.heads = next_sentence ? BertHeads::pretraining
                : predictions ? BertHeads::masked_lm
                              : BertHeads::none;
  const std::string base = prefixed ? "bert." : "";

  // Buffers and tied copies a checkpoint may carry: checked, then dropped.
  const std::string position_ids = base + "embeddings.position_ids";
  if (weights.count(position_ids) > 0) {
    const Array ids = take(weights, position_ids);
    bool counting = ids.rank() == 2 && ids.shape[0] == 1 &&
                    ids.shape[1] == c.max_position_embeddings &&
                    (ids.dtype == Dtype::int64 || ids.dtype == Dtype::int32);
    for (std::size_t i = 0; counting && i < ids.size(); ++i)
      counting = ids.integer(i) == static_cast<std::int64_t>(i);
    if (!counting) {
      throw Error(
          ErrorKind::bad_file, "load_bert",
          fmt::format("'{}': {} is not the integers 0..{} of shape (1, {})", shown, position_ids,
                      c.max_position_embeddings - 1, c.max_position_embeddings));
    }
  }
  std::optional<Array> decoder_weight, decoder_bias;
  if (weights.count("cls.predictions.decoder.weight") > 0)
    decoder_weight = take(weights, "cls.predictions.decoder.weight");
  if (weights.count("cls.predictions.decoder.bias") > 0)
    decoder_bias = take(weights, "cls.predictions.decoder.bias");

  std::vector<StateDictEntry> expected =
      state_dict_entries(describe_bert(config, model.heads, pooler));
  if (model.heads != BertHeads::none && !prefixed)
    for (StateDictEntry& e : expected)
      if (starts_with(e.key, "bert.")) e.key = e.key.substr(5);
  if (model.heads == BertHeads::none && prefixed)
    for (StateDictEntry& e : expected)
      e.key = "bert." + e.key;
  const std::string mismatch = state_dict_mismatch(expected, weights);
  if (!mismatch.empty()) {
    throw Error(
        ErrorKind::bad_file, "load_bert",
        fmt::format("'{}' does not fit {} with config.json's sizes (L {}, D {}, H {}, F {}, "
                    "V {}, P {}, Y {}): {}",
                    shown, bert_class_name(model.heads), c.num_hidden_layers, c.hidden_size,
                    c.num_attention_heads, c.intermediate_size, c.vocab_size,
                    c.max_position_embeddings, config.type_vocab_size, mismatch));
  }

  const std::string e = base + "embeddings.";
  const float eps = eps_of(c);
  model.embeddings.token_embeddings.weight =
      to_tensor2(take(weights, e + "word_embeddings.weight"));
  model.embeddings.position_embeddings.weight =
      to_tensor2(take(weights, e + "position_embeddings.weight"));
  model.token_type_embeddings.weight =
      to_tensor2(take(weights, e + "token_type_embeddings.weight"));
  model.embeddings.layer_norm = norm_from(weights, e + "LayerNorm.", eps);
  model.embeddings.dropout = 0.0f;
  for (std::size_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = fmt::format("{}encoder.layer.{}.", base, l);
    EncoderLayer layer;
    layer.placement = NormPlacement::post;
    {
      const Linear query = linear_from(weights, p + "attention.self.query.");
      const Linear key = linear_from(weights, p + "attention.self.key.");
      const Linear value = linear_from(weights, p + "attention.self.value.");
      layer.attention = book_attention(query, key, value, c.num_attention_heads);
    }
    layer.attention.output_linear = linear_from(weights, p + "attention.output.dense.");
    layer.layer_norm_1 = norm_from(weights, p + "attention.output.LayerNorm.", eps);
    layer.feed_forward.variant = FeedForwardVariant::book;
    layer.feed_forward.approximate = gelu_of(c);
    layer.feed_forward.linear_1 = linear_from(weights, p + "intermediate.dense.");
    layer.feed_forward.linear_2 = linear_from(weights, p + "output.dense.");
    layer.layer_norm_2 = norm_from(weights, p + "output.LayerNorm.", eps);
    model.layers.push_back(std::move(layer));
  }
  if (pooler) model.pooler = linear_from(weights, base + "pooler.dense.");
  if (model.heads != BertHeads::none) {
    BertMaskedLMHead head;
    head.transform = linear_from(weights, "cls.predictions.transform.dense.");
    head.transform_norm = norm_from(weights, "cls.predictions.transform.LayerNorm.", eps);
    head.bias = to_tensor1(take(weights, "cls.predictions.bias"));
    model.masked_lm = std::move(head);
  }
  if (model.heads == BertHeads::pretraining)
    model.next_sentence = linear_from(weights, "cls.seq_relationship.");
  if (decoder_weight) {
    if (!model.masked_lm)
      throw Error(ErrorKind::bad_file, "load_bert",
                  fmt::format("'{}' has cls.predictions.decoder.weight but no other part of the "
                              "MLM head (cls.predictions.bias, .transform)",
                              shown));
    check_tied(*decoder_weight, array_of(model.embeddings.token_embeddings.weight),
               "cls.predictions.decoder.weight", "the word embeddings", source, "load_bert");
  }
  if (decoder_bias) {
    if (!model.masked_lm)
      throw Error(ErrorKind::bad_file, "load_bert",
                  fmt::format("'{}' has cls.predictions.decoder.bias but no MLM head", shown));
    check_tied(*decoder_bias, array_of(model.masked_lm->bias), "cls.predictions.decoder.bias",
               "cls.predictions.bias", source, "load_bert");
  }
  return model;
}

std::vector<std::pair<std::string, Array>> bert_layer_parameters(const EncoderLayer& layer,
                                                                 const std::string& prefix) {
  std::vector<std::pair<std::string, Array>> out;
  const auto linear = [&](const std::string& name, const Linear& l) {
    out.emplace_back(prefix + name + ".weight", array_of(l.weight));
    out.emplace_back(prefix + name + ".bias", array_of(l.bias));
  };
  const auto norm = [&](const std::string& name, const LayerNorm& n) {
    out.emplace_back(prefix + name + ".weight", array_of(n.weight));
    out.emplace_back(prefix + name + ".bias", array_of(n.bias));
  };
  // query, key, value: (D, D) with head h's rows h·hs .. (h+1)·hs.
  for (auto [name, part] : {std::pair{"query", &AttentionHead::q},
                            {"key", &AttentionHead::k},
                            {"value", &AttentionHead::v}}) {
    Linear stacked;
    const std::size_t d = layer.attention.output_linear.weight.shape(1);
    stacked.weight = Tensor2::from_shape({d, d});
    stacked.bias = Tensor1::from_shape({d});
    std::size_t row = 0;
    for (const AttentionHead& head : layer.attention.heads) {
      const Linear& l = head.*part;
      std::copy(l.weight.begin(), l.weight.end(), stacked.weight.data() + row * d);
      std::copy(l.bias.begin(), l.bias.end(), stacked.bias.data() + row);
      row += l.weight.shape(0);
    }
    linear(std::string("attention.self.") + name, stacked);
  }
  linear("attention.output.dense", layer.attention.output_linear);
  norm("attention.output.LayerNorm", layer.layer_norm_1);
  linear("intermediate.dense", layer.feed_forward.linear_1);
  linear("output.dense", layer.feed_forward.linear_2);
  norm("output.LayerNorm", layer.layer_norm_2);
  return out;
}

StateDict bert_state_dict(const Bert& model) {
  const std::string base = model.heads == BertHeads::none ? "" : "bert.";
  StateDict out;
  const auto linear = [&](const std::string& name, const Linear& l) { put(out, name, l); };
  const auto norm = [&](const std::string& name, const LayerNorm& n) { put(out, name, n); };
  const std::string e = base + "embeddings.";
  out[e + "word_embeddings.weight"] = array_of(model.embeddings.token_embeddings.weight);
  out[e + "position_embeddings.weight"] = array_of(model.embeddings.position_embeddings.weight);
  out[e + "token_type_embeddings.weight"] = array_of(model.token_type_embeddings.weight);
  norm(e + "LayerNorm", model.embeddings.layer_norm);
  for (std::size_t l = 0; l < model.layers.size(); ++l)
    for (auto& [key, array] :
         bert_layer_parameters(model.layers[l], fmt::format("{}encoder.layer.{}.", base, l)))
      out[key] = std::move(array);
  if (model.pooler) linear(base + "pooler.dense", *model.pooler);
  if (model.masked_lm) {
    linear("cls.predictions.transform.dense", model.masked_lm->transform);
    norm("cls.predictions.transform.LayerNorm", model.masked_lm->transform_norm);
    out["cls.predictions.bias"] = array_of(model.masked_lm->bias);
  }
  if (model.next_sentence) linear("cls.seq_relationship", *model.next_sentence);
  return out;
}

Bert init_bert(Rng& rng, const BertConfig& config, BertHeads heads) {
  const EncoderConfig& c = config.sizes;
  Bert model;
  model.config = config;
  model.heads = heads;
  model.embeddings = init_embeddings(rng, c);
  model.embeddings.layer_norm.eps = eps_of(c);
  model.embeddings.dropout = 0.0f;
  model.token_type_embeddings = init_embedding(rng, config.type_vocab_size, c.hidden_size);
  for (std::size_t l = 0; l < c.num_hidden_layers; ++l) {
    EncoderLayer layer = init_encoder_layer(rng, c, NormPlacement::post);
    layer.layer_norm_1.eps = layer.layer_norm_2.eps = eps_of(c);
    layer.feed_forward.dropout = 0.0f;
    model.layers.push_back(std::move(layer));
  }
  if (heads != BertHeads::masked_lm)
    model.pooler = init_linear(rng, c.hidden_size, c.hidden_size, true);
  if (heads != BertHeads::none) {
    BertMaskedLMHead head;
    head.transform = init_linear(rng, c.hidden_size, c.hidden_size, true);
    head.transform_norm = init_layer_norm(c.hidden_size, eps_of(c));
    head.bias = xt::zeros<float>({c.vocab_size});
    model.masked_lm = std::move(head);
  }
  if (heads == BertHeads::pretraining)
    model.next_sentence = init_linear(rng, c.hidden_size, 2, true);
  return model;
}

namespace {

void check_ids(const Ids& ids, const Ids& other, std::string_view name, std::int64_t end,
               std::string_view range) {
  if (other.size() == 0) return;
  if (other.shape() != ids.shape()) {
    throw Error(ErrorKind::bad_size, "bert",
                fmt::format("{} is ({}, {}) but input_ids is ({}, {})", name, other.shape(0),
                            other.shape(1), ids.shape(0), ids.shape(1)));
  }
  for (std::size_t i = 0; i < other.size(); ++i) {
    if (other.flat(i) < 0 || other.flat(i) >= end) {
      throw Error(ErrorKind::bad_value, "bert",
                  fmt::format("{} holds {}: give {}", name, other.flat(i), range));
    }
  }
}

}  // namespace

BertSteps forward(const Bert& model, const BertInput& input, bool logits) {
  const Ids& ids = input.ids;
  if (ids.dimension() != 2 || ids.shape(0) == 0 || ids.shape(1) == 0)
    throw Error(ErrorKind::bad_size, "bert", "input_ids must be (B, T) with B, T > 0");
  const std::size_t batch = ids.shape(0), tokens = ids.shape(1);
  const std::size_t types = model.token_type_embeddings.weight.shape(0);
  check_ids(ids, input.token_types, "token_type_ids", static_cast<std::int64_t>(types),
            fmt::format("token types 0..{}", types - 1));
  check_ids(ids, input.attention_mask, "attention_mask", 2, "1 for a token, 0 for padding");

  BertSteps s;
  // Embeddings: (word + token type) + position, in transformers' order, then LayerNorm.
  s.embeddings.token = forward(model.embeddings.token_embeddings, ids);  // (B,T) -> (B,T,D)
  const Ids type_ids = input.token_types.size() > 0 ? input.token_types
                                                    : Ids(xt::zeros<std::int64_t>({batch, tokens}));
  s.token_type = forward(model.token_type_embeddings, type_ids);  // (B,T,D)
  const std::size_t positions = model.embeddings.position_embeddings.weight.shape(0);
  if (tokens > positions) {
    throw Error(ErrorKind::bad_size, "bert",
                fmt::format("{} tokens but only {} positions (max_position_embeddings): use at "
                            "most {} tokens",
                            tokens, positions, positions))
        .driven_by({"T"});
  }
  s.embeddings.position =
      forward(model.embeddings.position_embeddings, position_ids(tokens));  // (1,T,D)
  s.embeddings.sum = s.embeddings.token + s.token_type;                     // (B,T,D)
  for (std::size_t b = 0; b < batch; ++b)
    xt::view(s.embeddings.sum, b) += xt::view(s.embeddings.position, 0);
  s.embeddings.output = forward(model.embeddings.layer_norm, s.embeddings.sum).output;

  // The extended attention mask: float32's lowest added to the scores of every padding key.
  const Tensor3* mask = nullptr;
  if (input.attention_mask.size() > 0 &&
      std::any_of(input.attention_mask.begin(), input.attention_mask.end(),
                  [](std::int64_t m) { return m == 0; })) {
    s.mask = xt::zeros<float>({batch, tokens, tokens});
    for (std::size_t b = 0; b < batch; ++b) {
      bool any = false;
      for (std::size_t k = 0; k < tokens; ++k) {
        if (input.attention_mask(b, k) != 0) {
          any = true;
          continue;
        }
        for (std::size_t q = 0; q < tokens; ++q)
          s.mask(b, q, k) = std::numeric_limits<float>::lowest();
      }
      if (!any)
        throw Error(ErrorKind::bad_value, "bert",
                    fmt::format("attention_mask row {} masks every token: give at least one 1", b));
    }
    mask = &s.mask;
  }
  for (const EncoderLayer& layer : model.layers)
    s.layers.push_back(
        forward_tape(layer, s.layers.empty() ? s.embeddings.output : s.layers.back().output, mask));
  const Tensor3& last = s.hidden_states(model.layers.size());
  if (model.pooler) {
    // tanh(dense(x[:, 0])): the first token, [CLS], of each sequence.
    const std::size_t d = last.shape(2);
    Tensor3 first = xt::view(last, xt::all(), xt::range(0, 1), xt::all());  // (B,1,D)
    const Tensor3 dense = linear(first, model.pooler->weight, &model.pooler->bias);
    s.pooled = xt::tanh(xt::reshape_view(dense, {batch, d}));
  }
  if (model.masked_lm && logits) {
    const BertMaskedLMHead& head = *model.masked_lm;
    const Tensor3 dense = linear(last, head.transform.weight, &head.transform.bias);  // (B,T,D)
    s.transformed =
        forward(head.transform_norm, gelu(dense, gelu_of(model.config.sizes))).output;  // (B,T,D)
    const Tensor2& decoder =
        head.decoder.size() > 0 ? head.decoder : model.embeddings.token_embeddings.weight;
    s.logits = linear(s.transformed, decoder, &head.bias);  // (B,T,D) @ (V,D)ᵀ -> (B,T,V)
  }
  return s;
}

MemoryPlan plan_bert(const BertConfig& config, BertHeads heads, std::size_t batch,
                     std::size_t tokens, bool logits) {
  const EncoderConfig& c = config.sizes;
  MemoryPlan plan = plan_embeddings(c, batch, tokens);
  plan.push_back({"the token type embeddings", {batch, tokens, c.hidden_size}, "B T D"});
  plan.push_back({"the attention mask", {batch, tokens, tokens}, "B T T"});
  append(plan, plan_layer_tapes(c, batch, tokens));
  if (heads != BertHeads::none && logits) {
    plan.push_back({"the MLM head's transform", {3, batch, tokens, c.hidden_size}, " B T D"});
    plan.push_back({"the logits", {batch, tokens, c.vocab_size}, "B T V"});
  }
  return plan;
}

std::vector<TokenPrediction> top_predictions(const float* logits, std::size_t vocab,
                                             std::size_t k) {
  // softmax in float64 over the row, the row's max subtracted.
  const float top = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (std::size_t v = 0; v < vocab; ++v)
    sum += std::exp(static_cast<double>(logits[v]) - top);
  std::vector<std::int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, vocab);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::int64_t a, std::int64_t b) {
                      return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
                    });
  std::vector<TokenPrediction> out;
  for (std::size_t i = 0; i < k; ++i) {
    const std::int64_t id = order[i];
    out.push_back({id, static_cast<float>(std::exp(static_cast<double>(logits[id]) - top) / sum)});
  }
  return out;
}

}  // namespace attn
