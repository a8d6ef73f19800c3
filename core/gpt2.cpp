#include "gpt2.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "base/error.hpp"
#include "hf_tensors.hpp"
#include "matmul.hpp"
#include "state_dict.hpp"

namespace attn {

namespace {

using json = nlohmann::json;

constexpr const char* kGpt2Activations = "\"gelu_new\", \"gelu_pytorch_tanh\" or \"gelu\"";

GeluApproximation gelu_of(const EncoderConfig& config) {
  return config.hidden_act == "gelu" ? GeluApproximation::none : GeluApproximation::tanh;
}

float eps_of(const EncoderConfig& config) {
  return static_cast<float>(config.layer_norm_eps);
}

[[noreturn]] void refuse_config(const std::string& shown, const std::string& what) {
  throw Error(ErrorKind::bad_file, "gpt2_config", fmt::format("'{}': {}", shown, what))
      .about("pretrained");
}

bool flag(const json& doc, const char* key, bool fallback, const std::string& shown) {
  if (!doc.contains(key) || doc[key].is_null()) return fallback;
  if (!doc[key].is_boolean())
    refuse_config(shown, fmt::format("\"{}\" is {}, expected true or false", key,
                                     printable(doc[key].dump(), 60)));
  return doc[key].get<bool>();
}

std::int64_t token_id(const json& doc, const char* key, std::int64_t fallback, std::size_t vocab,
                      const std::string& shown) {
  if (!doc.contains(key) || doc[key].is_null()) return fallback;
  const json& v = doc[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::uint64_t>() >= vocab)
    refuse_config(shown, fmt::format("\"{}\" is {}, expected an id from 0 to {} (vocab_size - 1)",
                                     key, printable(v.dump(), 60), vocab - 1));
  return v.get<std::int64_t>();
}

// transformers' class of each activation_function GPT-2 may name (ACT2CLS).
std::string activation_class(const std::string& name) {
  if (name == "gelu_new") return "NewGELUActivation";
  if (name == "gelu_pytorch_tanh") return "PytorchGELUTanh";
  return "GELUActivation";
}

Module conv1d_module(std::string name, std::size_t in, std::size_t out) {
  return Module{
      "Conv1D", std::move(name), {{"weight", {in, out}, true}, {"bias", {out}, true}}, {}};
}

Module gpt2_block(const EncoderConfig& c, std::string name) {
  const std::size_t d = c.hidden_size, f = c.intermediate_size;
  Module attention{
      "GPT2Attention",
      "attn",
      {},
      {conv1d_module("c_attn", d, 3 * d), conv1d_module("c_proj", d, d),
       leaf_module("Dropout", "attn_dropout"), leaf_module("Dropout", "resid_dropout")}};
  Module mlp{
      "GPT2MLP",
      "mlp",
      {},
      {conv1d_module("c_fc", d, f), conv1d_module("c_proj", f, d),
       leaf_module(activation_class(c.hidden_act), "act"), leaf_module("Dropout", "dropout")}};
  return Module{"GPT2Block",
                std::move(name),
                {},
                {describe_layer_norm(d, "ln_1"), std::move(attention),
                 describe_layer_norm(d, "ln_2"), std::move(mlp)}};
}

// GPT2Model's own modules around the blocks: wte, wpe, drop, h (empty), ln_f.
Module gpt2_shell(const EncoderConfig& c, std::string name) {
  return Module{"GPT2Model",
                std::move(name),
                {},
                {describe_embedding(c.vocab_size, c.hidden_size, "wte"),
                 describe_embedding(c.max_position_embeddings, c.hidden_size, "wpe"),
                 leaf_module("Dropout", "drop"), Module{"ModuleList", "h", {}, {}},
                 describe_layer_norm(c.hidden_size, "ln_f")}};
}

// The LM head: tied to wte, it has no parameter of its own.
Module lm_head_module(const Gpt2Config& config) {
  if (config.tie_word_embeddings) return Module{"Linear", "lm_head", {}, {}};
  return linear_module("lm_head", config.sizes.hidden_size, config.sizes.vocab_size, false);
}

}  // namespace

Gpt2Config default_gpt2_config() {
  Gpt2Config config;
  EncoderConfig& c = config.sizes;
  c.hidden_size = 768;
  c.num_attention_heads = 12;
  c.intermediate_size = 3072;
  c.num_hidden_layers = 12;
  c.vocab_size = 50257;
  c.max_position_embeddings = 1024;
  c.hidden_dropout_prob = 0.1;
  c.attention_probs_dropout_prob = 0.1;
  c.layer_norm_eps = 1e-5;
  c.hidden_act = "gelu_new";
  return config;
}

Gpt2Config gpt2_config(const PretrainedFolder& folder) {
  const std::string shown = printable(folder.shown) + "/config.json";
  if (folder.model_type != "gpt2") {
    refuse_config(shown, fmt::format("model_type '{}' is not GPT-2 (\"gpt2\"): give a GPT-2 "
                                     "checkpoint such as gpt2 or distilgpt2",
                                     printable(folder.model_type)));
  }
  const json doc = parse_config_object(folder.config_text, shown);
  Gpt2Config config = default_gpt2_config();
  EncoderConfig& c = config.sizes;
  c.hidden_size = config_size(doc, "n_embd", c.hidden_size, shown);
  c.num_attention_heads = config_size(doc, "n_head", c.num_attention_heads, shown);
  c.num_hidden_layers = config_size(doc, "n_layer", c.num_hidden_layers, shown);
  c.vocab_size = config_size(doc, "vocab_size", c.vocab_size, shown);
  c.max_position_embeddings = config_size(doc, "n_positions", c.max_position_embeddings, shown);
  c.intermediate_size = doc.contains("n_inner") && !doc["n_inner"].is_null()
                            ? config_size(doc, "n_inner", c.intermediate_size, shown)
                            : 4 * c.hidden_size;
  if (c.hidden_size % c.num_attention_heads != 0)
    refuse_config(shown, fmt::format("n_embd {} is not divisible by n_head {}: each head has "
                                     "n_embd / n_head numbers",
                                     c.hidden_size, c.num_attention_heads));
  c.layer_norm_eps = config_real(doc, "layer_norm_epsilon", c.layer_norm_eps, shown);
  c.hidden_dropout_prob = config_real(doc, "resid_pdrop", c.hidden_dropout_prob, shown);
  c.attention_probs_dropout_prob =
      config_real(doc, "attn_pdrop", c.attention_probs_dropout_prob, shown);
  if (doc.contains("activation_function")) {
    const json& act = doc["activation_function"];
    if (!act.is_string() || (act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu"))
      refuse_config(shown, fmt::format("\"activation_function\" is {}: attn computes {}",
                                       printable(act.dump(), 60), kGpt2Activations));
    c.hidden_act = act.get<std::string>();
  }
  for (const auto& [key, refused, why] :
       {std::tuple{"add_cross_attention", true,
                   "a GPT-2 with cross-attention (an encoder-decoder)"},
        {"scale_attn_by_inverse_layer_idx", true, "scores scaled by 1 / (layer + 1)"},
        {"scale_attn_weights", false, "unscaled attention scores"}}) {
    if (flag(doc, key, !refused, shown) == refused)
      refuse_config(shown,
                    fmt::format("\"{}\" is {}: attn does not compute {}; give a GPT-2 checkpoint "
                                "with transformers' default",
                                key, refused ? "true" : "false", why));
  }
  config.tie_word_embeddings = flag(doc, "tie_word_embeddings", true, shown);
  config.bos_token_id = token_id(doc, "bos_token_id", config.bos_token_id, c.vocab_size, shown);
  config.eos_token_id = token_id(doc, "eos_token_id", config.eos_token_id, c.vocab_size, shown);
  if (!doc.contains("bos_token_id") &&
      config.bos_token_id >= static_cast<std::int64_t>(c.vocab_size))
    config.bos_token_id = config.eos_token_id = static_cast<std::int64_t>(c.vocab_size) - 1;
  validate_config(c, "'" + shown + "'");
  return config;
}

std::string_view gpt2_class_name(Gpt2Heads heads) {
  return heads == Gpt2Heads::none ? "GPT2Model" : "GPT2LMHeadModel";
}

Gpt2Heads gpt2_heads(const PretrainedFolder& folder) {
  for (const std::string& name : folder.architectures)
    if (name == "GPT2Model") return Gpt2Heads::none;
  return Gpt2Heads::lm_head;
}

Module describe_gpt2(const Gpt2Config& config, Gpt2Heads heads) {
  gpt2_size(config, heads);  // refuses more than 2^63-1 parameters before building
  const EncoderConfig& c = config.sizes;
  const std::size_t layers = c.num_hidden_layers;
  Module block = gpt2_block(c, std::to_string(layers == 0 ? 0 : layers - 1));
  check_budget("describe_gpt2",
               {planned_tree("the blocks' module tree", module_size(block), layers, "L ")});
  Module model = gpt2_shell(c, heads == Gpt2Heads::none ? "" : "transformer");
  Module& h = model.children[3];
  for (std::size_t i = 0; i < layers; ++i) {
    block.name = std::to_string(i);
    h.children.push_back(block);
  }
  if (heads == Gpt2Heads::none) return model;
  return Module{"GPT2LMHeadModel", "", {}, {std::move(model), lm_head_module(config)}};
}

ModuleSize gpt2_size(const Gpt2Config& config, Gpt2Heads heads) {
  const EncoderConfig& c = config.sizes;
  const std::size_t layers = c.num_hidden_layers;
  ModuleSize size =
      module_size(gpt2_block(c, std::to_string(layers == 0 ? 0 : layers - 1))) * Count(layers);
  size = size + module_size(gpt2_shell(c, "transformer"));
  if (heads == Gpt2Heads::lm_head)
    size = size + module_size(Module{"GPT2LMHeadModel", "", {}, {lm_head_module(config)}});
  check_parameter_count(
      size.parameters, "describe_gpt2",
      fmt::format("GPT-2 with L = {}, D = {}, F = {}, V = {}, P = {}", layers, c.hidden_size,
                  c.intermediate_size, c.vocab_size, c.max_position_embeddings),
      {"L", "D", "F", "V", "P"});
  return size;
}

bool gpt2_reads(std::string_view key) {
  return !ends_with(key, ".attn.bias") && !ends_with(key, ".attn.masked_bias");
}

namespace {

// Conv1D's (in, out) weight as a Linear's (out, in), and its bias.
Linear linear_from_conv1d(StateDict& weights, const std::string& prefix) {
  const Array w = take(weights, prefix + "weight");
  const std::size_t in = w.shape.at(0), out = w.shape.at(1);
  const float* from = reinterpret_cast<const float*>(w.bytes.data());
  Linear l;
  l.weight = Tensor2::from_shape({out, in});
  float* to = l.weight.data();
  transpose(from, in, out, to);
  l.bias = to_tensor1(take(weights, prefix + "bias"));
  l.has_bias = true;
  return l;
}

// A Linear's (out, in) weight back as Conv1D's (in, out).
Array conv1d_weight(const Tensor2& weight) {
  const std::size_t out = weight.shape(0), in = weight.shape(1);
  Tensor2 t = Tensor2::from_shape({in, out});
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t i = 0; i < in; ++i)
      t(i, o) = weight(o, i);
  return array_of(t);
}

Linear rows(const Linear& l, std::size_t first, std::size_t count) {
  Linear out;
  out.weight = xt::view(l.weight, xt::range(first, first + count), xt::all());
  out.bias = xt::view(l.bias, xt::range(first, first + count));
  out.has_bias = true;
  return out;
}

}  // namespace

Gpt2Weights check_gpt2_weights(const Gpt2Config& config, StateDict&& file_weights,
                               std::string_view source) {
  const EncoderConfig& c = config.sizes;
  const std::string shown = printable(std::string(source));
  Gpt2Weights out;
  StateDict& weights = out.tensors;
  bool prefixed = false;
  while (!file_weights.empty()) {
    auto node = file_weights.extract(file_weights.begin());
    if (!gpt2_reads(node.key())) continue;
    prefixed = prefixed || starts_with(node.key(), "transformer.");
    if (node.key() == "lm_head.weight")
      out.lm_head = std::move(node.mapped());
    else
      weights.insert(std::move(node));
  }
  out.heads = prefixed || out.lm_head ? Gpt2Heads::lm_head : Gpt2Heads::none;
  const std::string base = prefixed ? "transformer." : "";
  std::vector<StateDictEntry> expected = state_dict_entries(describe_gpt2(config, Gpt2Heads::none));
  for (StateDictEntry& e : expected)
    e.key = base + e.key;
  const std::string mismatch = state_dict_mismatch(expected, weights);
  const auto does_not_fit = [&](const std::string& why) {
    return Error(ErrorKind::bad_file, "load_gpt2",
                 fmt::format("'{}' does not fit {} with config.json's sizes (L {}, D {}, H {}, "
                             "F {}, V {}, P {}): {}",
                             shown, gpt2_class_name(out.heads), c.num_hidden_layers, c.hidden_size,
                             c.num_attention_heads, c.intermediate_size, c.vocab_size,
                             c.max_position_embeddings, why))
        .about("pretrained");
  };
  if (!mismatch.empty()) throw does_not_fit(mismatch);
  // GPT2Model's keys: the prefix removed (the nodes move; no tensor is copied).
  if (prefixed) {
    StateDict renamed;
    while (!weights.empty()) {
      auto node = weights.extract(weights.begin());
      node.key() = node.key().substr(base.size());
      renamed.insert(std::move(node));
    }
    weights = std::move(renamed);
  }
  const std::size_t d = c.hidden_size;
  if (out.lm_head) {
    if (config.tie_word_embeddings) {
      check_tied(*out.lm_head, weights.at("wte.weight"), "lm_head.weight", "wte.weight", source,
                 "load_gpt2");
      out.lm_head.reset();
    } else if (out.lm_head->shape != Shape{c.vocab_size, d}) {
      throw does_not_fit(fmt::format("lm_head.weight is ({}) but the model's is ({}, {})",
                                     fmt::join(out.lm_head->shape, ", "), c.vocab_size, d));
    }
  } else if (!config.tie_word_embeddings) {
    throw does_not_fit(
        "missing lm_head.weight, which config.json's \"tie_word_embeddings\": false "
        "says is not wte");
  }
  return out;
}

Gpt2 load_gpt2(const Gpt2Config& config, StateDict&& file_weights, std::string_view source) {
  Gpt2Weights checked = check_gpt2_weights(config, std::move(file_weights), source);
  StateDict& weights = checked.tensors;
  const EncoderConfig& c = config.sizes;
  Gpt2 model;
  model.config = config;
  model.heads = checked.heads;
  model.wte.weight = to_tensor2(take(weights, "wte.weight"));
  model.wpe.weight = to_tensor2(take(weights, "wpe.weight"));
  const float eps = eps_of(c);
  const std::size_t d = c.hidden_size;
  for (std::size_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = fmt::format("h.{}.", l);
    EncoderLayer layer;
    layer.placement = NormPlacement::pre;
    layer.layer_norm_1 = norm_from(weights, p + "ln_1.", eps);
    {
      const Linear qkv = linear_from_conv1d(weights, p + "attn.c_attn.");  // (3D, D)
      layer.attention = book_attention(rows(qkv, 0, d), rows(qkv, d, d), rows(qkv, 2 * d, d),
                                       c.num_attention_heads);
    }
    layer.attention.output_linear = linear_from_conv1d(weights, p + "attn.c_proj.");
    layer.layer_norm_2 = norm_from(weights, p + "ln_2.", eps);
    layer.feed_forward.variant = FeedForwardVariant::book;
    layer.feed_forward.approximate = gelu_of(c);
    layer.feed_forward.dropout = 0.0f;
    layer.feed_forward.linear_1 = linear_from_conv1d(weights, p + "mlp.c_fc.");
    layer.feed_forward.linear_2 = linear_from_conv1d(weights, p + "mlp.c_proj.");
    model.layers.push_back(std::move(layer));
  }
  model.ln_f = norm_from(weights, "ln_f.", eps);
  if (checked.lm_head) model.lm_head = to_tensor2(*checked.lm_head);
  return model;
}

StateDict gpt2_state_dict(const Gpt2& model) {
  const std::string base = model.heads == Gpt2Heads::none ? "" : "transformer.";
  StateDict out;
  const auto conv1d = [&](const std::string& name, const Linear& l) {
    out[name + ".weight"] = conv1d_weight(l.weight);
    out[name + ".bias"] = array_of(l.bias);
  };
  const auto norm = [&](const std::string& name, const LayerNorm& n) { put(out, name, n); };
  out[base + "wte.weight"] = array_of(model.wte.weight);
  out[base + "wpe.weight"] = array_of(model.wpe.weight);
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    const EncoderLayer& layer = model.layers[l];
    const std::string p = fmt::format("{}h.{}.", base, l);
    norm(p + "ln_1", layer.layer_norm_1);
    // c_attn's rows [q heads | k heads | v heads] of the (3D, D) Linear it stands for.
    const std::size_t d = layer.attention.output_linear.weight.shape(1);
    Linear qkv;
    qkv.weight = Tensor2::from_shape({3 * d, d});
    qkv.bias = Tensor1::from_shape({3 * d});
    std::size_t row = 0;
    for (Linear AttentionHead::*part : {&AttentionHead::q, &AttentionHead::k, &AttentionHead::v})
      for (const AttentionHead& head : layer.attention.heads) {
        const Linear& one = head.*part;
        std::copy(one.weight.begin(), one.weight.end(), qkv.weight.data() + row * d);
        std::copy(one.bias.begin(), one.bias.end(), qkv.bias.data() + row);
        row += one.weight.shape(0);
      }
    conv1d(p + "attn.c_attn", qkv);
    conv1d(p + "attn.c_proj", layer.attention.output_linear);
    norm(p + "ln_2", layer.layer_norm_2);
    conv1d(p + "mlp.c_fc", layer.feed_forward.linear_1);
    conv1d(p + "mlp.c_proj", layer.feed_forward.linear_2);
  }
  norm(base + "ln_f", model.ln_f);
  if (model.lm_head.size() > 0) out["lm_head.weight"] = array_of(model.lm_head);
  return out;
}

Gpt2 init_gpt2(Rng& rng, const Gpt2Config& config, Gpt2Heads heads) {
  const EncoderConfig& c = config.sizes;
  Gpt2 model;
  model.config = config;
  model.heads = heads;
  model.wte = init_embedding(rng, c.vocab_size, c.hidden_size);
  model.wpe = init_embedding(rng, c.max_position_embeddings, c.hidden_size);
  for (std::size_t l = 0; l < c.num_hidden_layers; ++l)
    model.layers.push_back(init_gpt2_block(rng, config));
  model.ln_f = init_layer_norm(c.hidden_size, eps_of(c));
  if (!config.tie_word_embeddings)
    model.lm_head = init_embedding(rng, c.vocab_size, c.hidden_size).weight;
  return model;
}

EncoderLayer init_gpt2_block(Rng& rng, const Gpt2Config& config) {
  EncoderLayer layer = init_encoder_layer(rng, config.sizes, NormPlacement::pre);
  layer.layer_norm_1.eps = layer.layer_norm_2.eps = eps_of(config.sizes);
  layer.feed_forward.approximate = gelu_of(config.sizes);
  layer.feed_forward.dropout = 0.0f;
  return layer;
}

Gpt2Steps forward(const Gpt2& model, const Gpt2Input& input, bool logits) {
  const Ids& ids = input.ids;
  if (ids.dimension() != 2 || ids.shape(0) == 0 || ids.shape(1) == 0)
    throw Error(ErrorKind::bad_size, "gpt2", "input_ids must be (B, T) with B, T > 0");
  const std::size_t batch = ids.shape(0), tokens = ids.shape(1);
  const std::size_t positions = model.wpe.weight.shape(0);
  if (tokens > positions) {
    throw Error(ErrorKind::bad_size, "gpt2",
                fmt::format("{} tokens but only {} positions (n_positions): use at most {} tokens",
                            tokens, positions, positions))
        .driven_by({"T"});
  }
  const Ids& mask_ids = input.attention_mask;
  if (mask_ids.size() > 0) {
    if (mask_ids.shape() != ids.shape())
      throw Error(ErrorKind::bad_size, "gpt2",
                  fmt::format("attention_mask is ({}, {}) but input_ids is ({}, {})",
                              mask_ids.shape(0), mask_ids.shape(1), batch, tokens));
    for (std::int64_t m : mask_ids)
      if (m != 0 && m != 1)
        throw Error(ErrorKind::bad_value, "gpt2",
                    fmt::format("attention_mask holds {}: give 1 for a token, 0 for padding", m));
  }

  Gpt2Steps s;
  s.token = forward(model.wte, ids);  // (B,T) -> (B,T,D); refuses an id outside the vocabulary
  s.position = forward(model.wpe, position_ids(tokens));  // (1,T,D)
  s.embedded = s.token;
  for (std::size_t b = 0; b < batch; ++b)
    xt::view(s.embedded, b) += xt::view(s.position, 0);

  // transformers' order: a key after the query is replaced by float32's lowest, then a padding
  // key gets float32's lowest added (-inf where both apply: lowest + lowest overflows).
  constexpr float lowest = std::numeric_limits<float>::lowest();
  constexpr float infinity = std::numeric_limits<float>::infinity();
  s.mask = xt::zeros<float>({batch, tokens, tokens});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t q = 0; q < tokens; ++q)
      for (std::size_t k = 0; k < tokens; ++k) {
        const bool padding = mask_ids.size() > 0 && mask_ids(b, k) == 0;
        if (k > q)
          s.mask(b, q, k) = padding ? -infinity : lowest;
        else if (padding)
          s.mask(b, q, k) = lowest;
      }
  for (const EncoderLayer& layer : model.layers)
    s.layers.push_back(
        forward_tape(layer, s.layers.empty() ? s.embedded : s.layers.back().output, &s.mask));
  s.final_norm = forward(model.ln_f, s.layers.empty() ? s.embedded : s.layers.back().output).output;
  if (logits) {
    const Tensor2& head = model.lm_head.size() > 0 ? model.lm_head : model.wte.weight;
    s.logits = linear(s.final_norm, head, nullptr);  // (B,T,D) @ (V,D)ᵀ -> (B,T,V)
  }
  return s;
}

MemoryPlan plan_gpt2(const Gpt2Config& config, std::size_t batch, std::size_t tokens, bool logits) {
  const EncoderConfig& c = config.sizes;
  MemoryPlan plan;
  plan.push_back({"the token and summed embeddings", {2, batch, tokens, c.hidden_size}, " B T D"});
  plan.push_back({"the position embeddings", {tokens, c.hidden_size}, "T D"});
  plan.push_back({"the attention mask", {batch, tokens, tokens}, "B T T"});
  append(plan, plan_layer_tapes(c, batch, tokens));
  plan.push_back({"ln_f's steps", {3, batch, tokens, c.hidden_size}, " B T D"});
  if (logits) plan.push_back({"the logits", {batch, tokens, c.vocab_size}, "B T V"});
  return plan;
}

}  // namespace attn
