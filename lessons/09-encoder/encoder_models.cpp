// Lesson 09's models for `attn summary` and `attn backward --model`: the book's Embeddings and
// TransformerEncoder, from a config.
#include "09-encoder/encoder_models.hpp"

#include "bert.hpp"
#include "encoder.hpp"
#include "io/shipped.hpp"
#include "models.hpp"
#include "trace.hpp"

namespace attn::lessons {

namespace {

EncoderConfig encoder_config(const ModelRequest& r) {
  EncoderConfig c = r.config ? *r.config : tiny_config();
  if (r.d_model != 0) c.hidden_size = r.d_model;
  if (r.heads != 0) c.num_attention_heads = r.heads;
  if (r.d_ff != 0) c.intermediate_size = r.d_ff;
  if (r.layers != 0) c.num_hidden_layers = r.layers;
  if (r.max_positions != 0) c.max_position_embeddings = r.max_positions;
  if (r.vocab_size != 0) c.vocab_size = r.vocab_size;
  validate_config(c, r.config ? "the config" : "the tiny config");
  return c;
}

// Parameters held as named arrays (transformers' keys), for gradient_run.
struct NamedArrays {
  std::vector<std::pair<std::string, Array>> entries;
};
void visit_parameters(NamedArrays& named, const ParameterVisitor& visit) {
  for (auto& [key, array] : named.entries)
    visit(key, reinterpret_cast<float*>(array.bytes.data()), array.shape);
}

}  // namespace

ModelDescription embeddings_model(const ModelRequest& r) {
  const EncoderConfig c = encoder_config(r);
  const Shape ids = {r.batch, r.seq};
  Module m = describe_embeddings(c);
  Trace trace;
  trace_embeddings(trace, m, ids);
  return {std::move(m), trace.layers(), {{ids, kInt64}}};
}

ModelDescription encoder_model(const ModelRequest& r) {
  const EncoderConfig c = encoder_config(r);
  const NormPlacement norm = r.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  if (!r.norm.empty() && r.norm != "pre" && r.norm != "post") {
    throw Error(ErrorKind::bad_value, "describe",
                fmt::format("'{}' is not a placement: use pre or post", r.norm))
        .about("norm");
  }
  const Shape input = r.embeddings ? Shape{r.batch, r.seq} : Shape{r.batch, r.seq, c.hidden_size};
  return {describe_encoder(c, r.embeddings),
          trace_encoder(c, r.embeddings, norm, input),
          {{input, r.embeddings ? kInt64 : kFloat32}}};
}

LessonRun embeddings_gradients(const ModelRequest& r, const GradientRequest& g) {
  const EncoderConfig c = encoder_config(r);
  Rng rng(g.seed);
  Embeddings layer = init_embeddings(rng, c);
  load_weights(layer, describe_embeddings(c), g);
  const Ids ids = id_input(r, g, rng, c.vocab_size);
  const EmbeddingsSteps s = forward(layer, ids);
  const Tensor3 dy = gradient_of(s.output, g, rng);
  Embeddings grad = zeros_like(layer);
  backward(layer, ids, s, dy, grad);
  return gradient_run("embeddings", g, to_array(ids), s.output, dy, nullptr, grad);
}

LessonRun encoder_gradients(const ModelRequest& r, const GradientRequest& g) {
  const EncoderConfig c = encoder_config(r);
  const NormPlacement norm = r.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  if (!r.norm.empty() && r.norm != "pre" && r.norm != "post")
    throw Error(ErrorKind::bad_value, "describe",
                fmt::format("'{}' is not a placement: use pre or post", r.norm))
        .about("norm");
  Rng rng(g.seed);
  Encoder layer = init_encoder(rng, c, norm, r.embeddings);
  load_weights(layer, describe_encoder(c, r.embeddings), g);
  Encoder grad = zeros_like(layer);
  if (r.embeddings) {
    const Ids ids = id_input(r, g, rng, c.vocab_size);
    const EncoderTape tape = forward_tape(layer, ids);
    const Tensor3 dy = gradient_of(tape.output(), g, rng);
    backward(layer, tape, dy, grad);
    return gradient_run("encoder", g, to_array(ids), tape.output(), dy, nullptr, grad);
  }
  const Tensor3 x = float_input(r, g, rng, c.hidden_size);
  const EncoderTape tape = forward_tape(layer, x);
  const Tensor3 dy = gradient_of(tape.output(), g, rng);
  const Tensor3 dx = backward(layer, tape, dy, grad);
  return gradient_run("encoder", g, to_array(x), tape.output(), dy, &dx, grad);
}

LessonRun bert_layer_gradients(const EncoderLayer& layer, std::size_t index, const Tensor3& x,
                               const GradientRequest& g) {
  Rng rng(g.seed);
  const EncoderLayerTape tape = forward_tape(layer, x);
  const Tensor3 dy = gradient_of(tape.output, g, rng);
  EncoderLayer grad = zeros_like(layer);
  const Tensor3 dx = backward(layer, tape, dy, grad);
  const std::string name = fmt::format("encoder.layer.{}", index);
  NamedArrays named{bert_layer_parameters(grad, name + ".")};
  return gradient_run(name, g, to_array(x), tape.output, dy, &dx, named);
}

MemoryPlan plan_bert_layer_gradients(const EncoderConfig& config, std::size_t tokens) {
  const std::size_t d = config.hidden_size, f = config.intermediate_size;
  MemoryPlan plan = plan_encoder_layer_tape(config, 1, tokens);
  append(plan, plan_multi_head_temporaries(MultiHeadVariant::book, 1, tokens, d,
                                           config.num_attention_heads, false));
  // The gradients, their copy under transformers' keys and in the run.
  plan.push_back(
      {"the layer's gradients", {3, 4 * d * d + 2 * d * f + 10 * d}, " D/F", 4, Held::shown, 48});
  plan.push_back({"x, y, G and dx", {4, tokens, d}, " T D", 4, Held::shown});
  return plan;
}

}  // namespace attn::lessons
