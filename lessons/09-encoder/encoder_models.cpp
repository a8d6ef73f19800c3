// Lesson 09's models for `attn summary` and `attn backward --model`: the book's Embeddings and
// TransformerEncoder, from a config.
#include "09-encoder/encoder_models.hpp"

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

}  // namespace attn::lessons
