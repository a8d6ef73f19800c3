// Lesson 13's models for `attn summary`: seed 001's DecoderBlock, Decoder and Transformer
// (S = T = --seq).
#include "13-decoder/decoder_models.hpp"

#include "13-decoder/decoder_lesson.hpp"
#include "base/budget.hpp"
#include "models.hpp"
#include "module_size.hpp"
#include "summary.hpp"
#include "transformer.hpp"

namespace attn::lessons {

namespace {

TransformerConfig seed001_config(const ModelRequest& r) {
  const DecoderLessonOptions lesson;
  TransformerConfig c;
  c.d_model = or_default(r.d_model, LessonOptions{}.d_model);
  c.heads = or_default(r.heads, lesson.heads);
  c.d_ff = or_default(r.d_ff, lesson.d_ff);
  c.layers = or_default(r.layers, 2);
  c.source_vocab = c.target_vocab = or_default(r.vocab_size, lesson.vocab);
  c.source_positions = c.target_positions = or_default(r.max_positions, r.seq);
  if (!r.norm.empty() && r.norm != "pre" && r.norm != "post")
    throw Error(ErrorKind::bad_value, "describe",
                fmt::format("'{}' is not a placement: use pre or post", r.norm))
        .about("norm");
  c.placement = r.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  try {
    check_config(c);
  } catch (const Error& e) {
    throw Error(ErrorKind::bad_size, "describe", e.detail()).about("heads");
  }
  if (r.seq > c.target_positions)
    throw Error(ErrorKind::bad_size, "describe",
                fmt::format("--seq {} is past the positional encoding's {} positions: give "
                            "--max-positions {} or more",
                            r.seq, c.target_positions, r.seq))
        .about("seq");
  return c;
}

// The masks a decoder is trained with, as torchinfo counts them among the inputs: the source
// padding mask (B,1,1,S) and the causal target mask (B,1,T,T), int64 as the generator makes them.
SummaryInput source_mask_input(const ModelRequest& r) {
  return {Shape{r.batch, 1, 1, r.seq}, kInt64};
}

SummaryInput target_mask_input(const ModelRequest& r) {
  return {Shape{r.batch, 1, r.seq, r.seq}, kInt64};
}

// For check_budget before a tree is built: `blocks` decoder blocks' module trees (and as many
// encoder blocks for the Transformer), as a summary holds them.
void check_summary_budget(const TransformerConfig& c, bool with_encoder) {
  const std::string last = std::to_string(c.layers - 1);
  ModuleSize block = module_size(describe_decoder_block(c, last));
  if (with_encoder) block = block + module_size(describe_encoder_block(c, last));
  check_budget("summary", planned_summary(block * Count(c.layers), "L"));
}

}  // namespace

ModelDescription decoder_block_model(const ModelRequest& r) {
  const TransformerConfig c = seed001_config(r);
  const Shape x = hidden_states(r, c.d_model);
  return {describe_decoder_block(c),
          trace_decoder_block(c, r.batch, r.seq, r.seq),
          {{x, kFloat32}, {x, kFloat32}, source_mask_input(r), target_mask_input(r)}};
}

ModelDescription decoder_model(const ModelRequest& r) {
  const TransformerConfig c = seed001_config(r);
  check_summary_budget(c, false);
  const Shape x = hidden_states(r, c.d_model);
  return {describe_decoder(c),
          trace_decoder(c, r.batch, r.seq, r.seq),
          {{x, kFloat32}, {x, kFloat32}, source_mask_input(r), target_mask_input(r)}};
}

ModelDescription transformer_model(const ModelRequest& r) {
  const TransformerConfig c = seed001_config(r);
  check_summary_budget(c, true);
  const Shape ids{r.batch, r.seq};
  return {describe_transformer(c),
          trace_transformer(c, r.batch, r.seq, r.seq),
          {{ids, kInt64}, {ids, kInt64}, source_mask_input(r), target_mask_input(r)}};
}

}  // namespace attn::lessons
