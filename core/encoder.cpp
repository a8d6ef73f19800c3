#include "encoder.hpp"

#include "dropout.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "summary.hpp"

namespace attn {

namespace {
GeluApproximation gelu_of(const EncoderConfig& config) {
  return config.hidden_act == "gelu" ? GeluApproximation::none : GeluApproximation::tanh;
}

Tensor3 add(const Tensor3& a, const Tensor3& b) {
  return a + b;
}  // (B,T,D) + (B,T,D)
}  // namespace

EncoderLayer init_encoder_layer(Rng& rng, const EncoderConfig& config, NormPlacement placement) {
  EncoderLayer layer;  // registration order: layer_norm_1, layer_norm_2, attention, feed_forward
  layer.placement = placement;
  layer.layer_norm_1 = init_layer_norm(config.hidden_size);
  layer.layer_norm_2 = init_layer_norm(config.hidden_size);
  layer.attention = init_book_multi_head(rng, config.hidden_size, config.num_attention_heads);
  layer.feed_forward = init_feed_forward(rng, FeedForwardVariant::book, config.hidden_size,
                                         config.intermediate_size, gelu_of(config));
  layer.feed_forward.dropout = static_cast<float>(config.hidden_dropout_prob);
  return layer;
}

namespace {
Module layer_with(const EncoderConfig& config, std::string name, Module attention) {
  attention.name = "attention";
  return Module{"TransformerEncoderLayer",
                std::move(name),
                {},
                {describe_layer_norm(config.hidden_size, "layer_norm_1"),
                 describe_layer_norm(config.hidden_size, "layer_norm_2"), std::move(attention),
                 describe_feed_forward(FeedForwardVariant::book, config.hidden_size,
                                       config.intermediate_size, "feed_forward")}};
}
}  // namespace

Module describe_encoder_layer(const EncoderConfig& config, std::string name) {
  return layer_with(
      config, std::move(name),
      describe_multi_head(MultiHeadVariant::book, config.hidden_size, config.num_attention_heads));
}

ModuleSize encoder_layer_size(const EncoderConfig& config, std::string name) {
  return module_size(layer_with(config, std::move(name), Module{})) +
         multi_head_size(MultiHeadVariant::book, config.hidden_size, config.num_attention_heads);
}

void visit_parameters(EncoderLayer& layer, const std::string& prefix,
                      const ParameterVisitor& visit) {
  visit_parameters(layer.layer_norm_1, prefix + "layer_norm_1.", visit);
  visit_parameters(layer.layer_norm_2, prefix + "layer_norm_2.", visit);
  visit_parameters(layer.attention, [&](const std::string& key, float* data, const Shape& shape) {
    visit(prefix + "attention." + key, data, shape);
  });
  visit_parameters(layer.feed_forward,
                   [&](const std::string& key, float* data, const Shape& shape) {
                     visit(prefix + "feed_forward." + key, data, shape);
                   });
}

EncoderLayerSteps forward(const EncoderLayer& layer, const Tensor3& x) {
  // The lesson's view of the tape: each sublayer's output.
  EncoderLayerTape t = forward_tape(layer, x);
  EncoderLayerSteps s;
  s.input = std::move(t.input);
  s.norm_1 = std::move(t.norm_1.output);
  s.attention = std::move(t.attention.output);
  s.weights = std::move(t.attention.weights);
  s.residual_1 = layer.placement == NormPlacement::pre ? std::move(t.sum_1) : s.norm_1;
  s.norm_2 = std::move(t.norm_2.output);
  s.feed_forward = std::move(t.feed_forward.output);
  s.output = std::move(t.output);
  return s;
}

EncoderLayerTape forward_tape(const EncoderLayer& layer, const Tensor3& x, const Tensor3* mask,
                              Rng* dropout) {
  // The feed-forward's dropout, in train mode; the book's layer has no other.
  const auto feed_forward = [&](const Tensor3& in) {
    return dropout != nullptr ? forward(layer.feed_forward, in, *dropout)
                              : forward(layer.feed_forward, in);
  };
  EncoderLayerTape t;
  t.input = x;
  if (layer.placement == NormPlacement::pre) {
    t.norm_1 = forward(layer.layer_norm_1, x);
    t.attention = forward(layer.attention, t.norm_1.output, mask);
    t.sum_1 = add(x, t.attention.output);
    t.norm_2 = forward(layer.layer_norm_2, t.sum_1);
    t.feed_forward = feed_forward(t.norm_2.output);
    t.sum_2 = add(t.sum_1, t.feed_forward.output);
    t.output = t.sum_2;
  } else {
    t.attention = forward(layer.attention, x, mask);
    t.sum_1 = add(x, t.attention.output);
    t.norm_1 = forward(layer.layer_norm_1, t.sum_1);
    t.feed_forward = feed_forward(t.norm_1.output);
    t.sum_2 = add(t.norm_1.output, t.feed_forward.output);
    t.norm_2 = forward(layer.layer_norm_2, t.sum_2);
    t.output = t.norm_2.output;
  }
  return t;
}

Tensor3 backward(const EncoderLayer& layer, const EncoderLayerTape& t, const Tensor3& d_output,
                 EncoderLayer& grad) {
  if (layer.placement == NormPlacement::pre) {
    // out = s1 + FF(LN2(s1)), s1 = x + MHA(LN1(x)): each residual passes its gradient straight on.
    Tensor3 d_sum_1 = d_output;
    const Tensor3 d_norm_2 =
        backward(layer.feed_forward, t.norm_2.output, t.feed_forward, d_output, grad.feed_forward);
    d_sum_1 += backward(layer.layer_norm_2, t.sum_1, t.norm_2, d_norm_2, grad.layer_norm_2);
    const Tensor3 d_norm_1 =
        backward(layer.attention, t.norm_1.output, t.attention, d_sum_1, grad.attention);
    return d_sum_1 + backward(layer.layer_norm_1, t.input, t.norm_1, d_norm_1, grad.layer_norm_1);
  }
  // out = LN2(n1 + FF(n1)), n1 = LN1(x + MHA(x)).
  const Tensor3 d_sum_2 =
      backward(layer.layer_norm_2, t.sum_2, t.norm_2, d_output, grad.layer_norm_2);
  Tensor3 d_norm_1 = d_sum_2;
  d_norm_1 +=
      backward(layer.feed_forward, t.norm_1.output, t.feed_forward, d_sum_2, grad.feed_forward);
  const Tensor3 d_sum_1 =
      backward(layer.layer_norm_1, t.sum_1, t.norm_1, d_norm_1, grad.layer_norm_1);
  return d_sum_1 + backward(layer.attention, t.input, t.attention, d_sum_1, grad.attention);
}

MemoryPlan plan_encoder_layer_tape(const EncoderConfig& config, std::size_t batch,
                                   std::size_t tokens) {
  const std::size_t d = config.hidden_size, heads = config.num_attention_heads;
  MemoryPlan plan = {{"the layer's input, sums and output", {4, batch, tokens, d}, " B T D"}};
  append(plan, plan_layer_norm(batch, tokens, d));
  append(plan, plan_layer_norm(batch, tokens, d));
  append(plan, plan_multi_head(MultiHeadVariant::book, batch, tokens, d, heads));
  append(plan, plan_feed_forward(batch, tokens, d, config.intermediate_size));
  return plan;
}

MemoryPlan plan_encoder_layer(const EncoderConfig& config, std::size_t batch, std::size_t tokens) {
  return {
      {"the layer's steps", {7, batch, tokens, config.hidden_size}, " B T D"},
      {"the attention weights", {batch, config.num_attention_heads, tokens, tokens}, "B H T T"}};
}

MemoryPlan plan_encoder_layer_temporaries(const EncoderConfig& config, std::size_t batch,
                                          std::size_t tokens) {
  MemoryPlan plan = plan_encoder_layer_tape(config, batch, tokens);
  append(plan, plan_multi_head_temporaries(MultiHeadVariant::book, batch, tokens,
                                           config.hidden_size, config.num_attention_heads, false));
  return plan;
}

void trace_encoder_layer(Trace& trace, const Module& layer, const Shape& shape,
                         NormPlacement placement) {
  trace.call(layer, shape, shape);
  trace.enter();
  const Module& norm_1 = child(layer, "layer_norm_1");
  const Module& norm_2 = child(layer, "layer_norm_2");
  const Module& attention = child(layer, "attention");
  const std::size_t d_model = shape.back();
  auto attention_rows = [&] {
    const Module& heads = child(attention, "heads");
    trace.call(attention, shape, shape);
    trace.enter();
    trace.container(heads);
    trace.enter();
    for (const Module& head : heads.children)
      trace_attention_head(trace, head, shape);
    trace.leave();
    trace.call(child(attention, "output_linear"), linear_output(shape, d_model), shape);
    trace.leave();
  };
  if (placement == NormPlacement::pre) {
    trace_layer_norm(trace, norm_1, shape);
    attention_rows();
    trace_layer_norm(trace, norm_2, shape);
    trace_feed_forward(trace, child(layer, "feed_forward"), shape);
  } else {
    attention_rows();
    trace_layer_norm(trace, norm_1, shape);
    trace_feed_forward(trace, child(layer, "feed_forward"), shape);
    trace_layer_norm(trace, norm_2, shape);
  }
  trace.leave();
}

Embeddings init_embeddings(Rng& rng, const EncoderConfig& config) {
  Embeddings e;
  e.token_embeddings = init_embedding(rng, config.vocab_size, config.hidden_size);
  e.position_embeddings = init_embedding(rng, config.max_position_embeddings, config.hidden_size);
  e.layer_norm = init_layer_norm(config.hidden_size, kEmbeddingsLayerNormEps);
  e.dropout = static_cast<float>(config.hidden_dropout_prob);
  return e;
}

Module describe_embeddings(const EncoderConfig& config, std::string name) {
  return Module{
      "Embeddings",
      std::move(name),
      {},
      {describe_embedding(config.vocab_size, config.hidden_size, "token_embeddings"),
       describe_embedding(config.max_position_embeddings, config.hidden_size,
                          "position_embeddings"),
       describe_layer_norm(config.hidden_size, "layer_norm"), leaf_module("Dropout", "dropout")}};
}

void visit_parameters(Embeddings& e, const std::string& prefix, const ParameterVisitor& visit) {
  visit_parameters(e.token_embeddings, prefix + "token_embeddings.", visit);
  visit_parameters(e.position_embeddings, prefix + "position_embeddings.", visit);
  visit_parameters(e.layer_norm, prefix + "layer_norm.", visit);
}

EmbeddingsSteps forward(const Embeddings& e, const Ids& ids, Rng* dropout) {
  const std::size_t batch = ids.shape(0), tokens = ids.shape(1),
                    positions = e.position_embeddings.weight.shape(0);
  if (tokens > positions) {
    throw Error(
        ErrorKind::bad_size, "Embeddings",
        fmt::format("{} tokens but only {} positions (max_position_embeddings): use at most {} "
                    "tokens",
                    tokens, positions, positions));
  }
  EmbeddingsSteps s;
  s.token = forward(e.token_embeddings, ids);                         // (B,T) -> (B,T,D)
  s.position = forward(e.position_embeddings, position_ids(tokens));  // (1,T,D)
  s.sum = s.token;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t d = 0; d < s.sum.shape(2); ++d)
        s.sum(b, t, d) += s.position(0, t, d);
  s.output = forward(e.layer_norm, s.sum).output;
  if (dropout != nullptr && e.dropout > 0.0f) {
    DropoutSteps d = attn::dropout(*dropout, s.output, e.dropout);
    s.dropout_scale = std::move(d.scale);
    s.output = std::move(d.output);
  }
  return s;
}

void backward(const Embeddings& e, const Ids& ids, const EmbeddingsSteps& s,
              const Tensor3& d_output, Embeddings& grad) {
  const Tensor3 d_normalised =
      s.dropout_scale.size() == 0 ? d_output : dropout_backward({s.dropout_scale, {}}, d_output);
  const Tensor3 d_sum =
      backward(e.layer_norm, s.sum, forward(e.layer_norm, s.sum), d_normalised, grad.layer_norm);
  backward(e.token_embeddings, ids, d_sum, grad.token_embeddings);
  // Every sequence adds the same position rows: their gradient is the sum over the batch.
  const std::size_t tokens = ids.shape(1), width = d_sum.shape(2);
  Tensor3 d_position = xt::zeros<float>({std::size_t{1}, tokens, width});
  for (std::size_t b = 0; b < d_sum.shape(0); ++b)
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t d = 0; d < width; ++d)
        d_position(0, t, d) += d_sum(b, t, d);
  Ids position_ids({1, tokens});
  for (std::size_t t = 0; t < tokens; ++t)
    position_ids(0, t) = static_cast<std::int64_t>(t);
  backward(e.position_embeddings, position_ids, d_position, grad.position_embeddings);
}

MemoryPlan plan_embeddings(const EncoderConfig& config, std::size_t batch, std::size_t tokens) {
  MemoryPlan plan = {{"the token embeddings, their sum with the positions and the output",
                      {3, batch, tokens, config.hidden_size},
                      " B T D"},
                     {"the position embeddings", {tokens, config.hidden_size}, "T D"}};
  append(plan, plan_layer_norm(batch, tokens, config.hidden_size));
  return plan;
}

void trace_embeddings(Trace& trace, const Module& e, const Shape& input) {
  const Shape hidden = {input[0], input[1], child(e, "layer_norm").parameters.front().shape[0]};
  trace.call(e, input, hidden);
  trace.enter();
  trace_embedding(trace, child(e, "token_embeddings"), input);
  trace_embedding(trace, child(e, "position_embeddings"), {1, input[1]});
  trace_layer_norm(trace, child(e, "layer_norm"), hidden);
  trace.call(child(e, "dropout"), hidden, hidden);
  trace.leave();
}

Encoder init_encoder(Rng& rng, const EncoderConfig& config, NormPlacement placement,
                     bool with_embeddings) {
  Encoder encoder;
  encoder.with_embeddings = with_embeddings;
  if (with_embeddings) encoder.embeddings = init_embeddings(rng, config);
  for (std::size_t i = 0; i < config.num_hidden_layers; ++i)
    encoder.layers.push_back(init_encoder_layer(rng, config, placement));
  return encoder;
}

Module describe_encoder(const EncoderConfig& config, bool with_embeddings) {
  encoder_size(config, with_embeddings);  // refuses more than 2^63-1 parameters before building
  Module encoder;
  if (!with_embeddings && config.num_hidden_layers == 1) {
    encoder = describe_encoder_layer(config);
  } else {
    // One module per layer: the tree itself may not fit.
    const std::size_t layers = config.num_hidden_layers;
    Module layer = describe_encoder_layer(config, std::to_string(layers - 1));
    check_budget("describe_encoder",
                 {planned_tree("the layers' module tree", module_size(layer), layers, "L ")});
    Module list{"ModuleList", "layers", {}, {}};
    for (std::size_t i = 0; i < layers; ++i) {
      layer.name = std::to_string(i);
      list.children.push_back(layer);
    }
    encoder = Module{"TransformerEncoder", "", {}, {}};
    if (with_embeddings) encoder.children.push_back(describe_embeddings(config, "embeddings"));
    encoder.children.push_back(std::move(list));
  }
  return encoder;
}

ModuleSize encoder_size(const EncoderConfig& config, bool with_embeddings) {
  const std::size_t layers = config.num_hidden_layers;
  ModuleSize size = encoder_layer_size(config, std::to_string(layers - 1)) * Count(layers);
  if (with_embeddings || layers > 1) {
    size = size + module_size(Module{"TransformerEncoder", "", {}, {}}) +
           module_size(Module{"ModuleList", "layers", {}, {}});
  }
  if (with_embeddings) size = size + module_size(describe_embeddings(config, "embeddings"));
  // L layers may pass 2^63-1 parameters where one does not (torch counts in int64).
  std::vector<std::string> sizes = {"L", "D", "F"};
  if (with_embeddings) sizes.insert(sizes.end(), {"V", "P"});
  check_parameter_count(
      size.parameters, "describe_encoder",
      fmt::format(
          "the {} with L = {}, D = {}, F = {}{}",
          !with_embeddings && layers == 1 ? "TransformerEncoderLayer" : "TransformerEncoder",
          layers, config.hidden_size, config.intermediate_size,
          with_embeddings
              ? fmt::format(", V = {}, P = {}", config.vocab_size, config.max_position_embeddings)
              : ""),
      std::move(sizes));
  return size;
}

void visit_parameters(Encoder& encoder, const ParameterVisitor& visit) {
  if (encoder.with_embeddings) visit_parameters(encoder.embeddings, "embeddings.", visit);
  if (!encoder.with_embeddings && encoder.layers.size() == 1) {
    visit_parameters(encoder.layers.front(), "", visit);
    return;
  }
  for (std::size_t i = 0; i < encoder.layers.size(); ++i) {
    visit_parameters(encoder.layers[i], fmt::format("layers.{}.", i), visit);
  }
}

std::vector<LayerInfo> trace_encoder(const EncoderConfig& config, bool with_embeddings,
                                     NormPlacement placement, const Shape& input) {
  check_budget("trace_encoder", planned_summary(encoder_size(config, with_embeddings), "L/H"));
  const Module model = describe_encoder(config, with_embeddings);
  Trace trace;
  if (!with_embeddings && config.num_hidden_layers == 1) {
    trace_encoder_layer(trace, model, input, placement);
    return trace.layers();
  }
  const Shape hidden = with_embeddings ? Shape{input[0], input[1], config.hidden_size} : input;
  trace.call(model, input, hidden);
  trace.enter();
  if (with_embeddings) trace_embeddings(trace, child(model, "embeddings"), input);
  const Module& layers = child(model, "layers");
  trace.container(layers);
  trace.enter();
  for (const Module& layer : layers.children)
    trace_encoder_layer(trace, layer, hidden, placement);
  trace.leave();
  trace.leave();
  return trace.layers();
}

EncoderTape forward_tape(const Encoder& encoder, const Ids& ids, const Tensor3* mask,
                         Rng* dropout) {
  if (!encoder.with_embeddings)
    throw Error(ErrorKind::bad_value, "encoder",
                "this encoder has no embeddings: give it hidden states, not ids");
  EncoderTape tape;
  tape.ids = ids;
  tape.embeddings = forward(encoder.embeddings, ids, dropout);
  for (const EncoderLayer& layer : encoder.layers)
    tape.layers.push_back(forward_tape(layer, tape.output(), mask, dropout));
  return tape;
}

EncoderTape forward_tape(const Encoder& encoder, const Tensor3& x, const Tensor3* mask,
                         Rng* dropout) {
  if (encoder.layers.empty())
    throw Error(ErrorKind::bad_value, "encoder", "an encoder without layers has nothing to run");
  EncoderTape tape;
  for (const EncoderLayer& layer : encoder.layers)
    tape.layers.push_back(
        forward_tape(layer, tape.layers.empty() ? x : tape.output(), mask, dropout));
  return tape;
}

Tensor3 backward(const Encoder& encoder, const EncoderTape& tape, const Tensor3& d_output,
                 Encoder& grad) {
  Tensor3 d = d_output;
  for (std::size_t i = encoder.layers.size(); i-- > 0;)
    d = backward(encoder.layers[i], tape.layers[i], d, grad.layers[i]);
  if (!encoder.with_embeddings) return d;
  backward(encoder.embeddings, tape.ids, tape.embeddings, d, grad.embeddings);
  return Tensor3();
}

MemoryPlan plan_layer_tapes(const EncoderConfig& c, std::size_t batch, std::size_t tokens) {
  MemoryPlan plan;
  MemoryPlan layer = plan_encoder_layer_tape(c, batch, tokens);
  for (PlannedTensor& t : layer) {
    t.shape.insert(t.shape.begin(), c.num_hidden_layers);
    t.axes = "L " + t.axes;
  }
  append(plan, layer);
  append(plan, plan_multi_head_temporaries(MultiHeadVariant::book, batch, tokens, c.hidden_size,
                                           c.num_attention_heads, true));
  return plan;
}

}  // namespace attn
