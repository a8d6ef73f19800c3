// torchinfo's rows of transformers' GPT-2 classes on input_ids (B,T): one row per module call, in
// the order modeling_gpt2.py's eager forward makes them, on describe_gpt2's tree. torchinfo calls
// the model as it stands, with GPT2Config's use_cache true: GPT2Model and GPT2LMHeadModel return a
// ModelOutput ending with past_key_values, which torchinfo sizes by its first key (B,H,T,hs);
// a block and its attention return tuples sized by their first entry (B,T,D).
// Legend: B batch, T tokens, D n_embd, H n_head, hs = D/H, F n_inner, V vocab_size.
#include <string>
#include <vector>

#include "base/error.hpp"
#include "embedding.hpp"
#include "gpt2.hpp"
#include "layer_norm.hpp"
#include "summary.hpp"

namespace attn {
namespace {

struct ChildCall {
  const char* name;
  Shape input, output;
};
// A module on (B,T,D) that calls its children once each, in `calls`' order.
void trace_calls(Trace& trace, const Module& module, const Shape& hidden,
                 const std::vector<ChildCall>& calls) {
  trace.call(module, hidden, hidden);
  trace.enter();
  for (const ChildCall& c : calls)
    trace.call(child(module, c.name), c.input, c.output);
  trace.leave();
}

// GPT2Block on (B,T,D): ln_1, attn (c_attn, dropout on the probabilities, c_proj, resid_dropout),
// ln_2, mlp (c_fc, act, c_proj, dropout). Conv1D's weight is (in, out).
void trace_gpt2_block(Trace& trace, const Module& block, const Shape& hidden, std::size_t heads) {
  const Module& attention = child(block, "attn");
  const Module& mlp = child(block, "mlp");
  const Shape qkv = linear_output(hidden, child(attention, "c_attn").parameters.front().shape[1]);
  const Shape inner =
      linear_output(hidden, child(mlp, "c_fc").parameters.front().shape[1]);  // (B,T,F)
  const Shape probabilities = {hidden[0], heads, hidden[1], hidden[1]};       // (B,H,T,T)
  trace.call(block, hidden, hidden);
  trace.enter();
  trace_layer_norm(trace, child(block, "ln_1"), hidden);
  trace_calls(trace, attention, hidden,
              {{"c_attn", hidden, qkv},  // (B,T,D) -> (B,T,3D)
               {"attn_dropout", probabilities, probabilities},
               {"c_proj", hidden, hidden},
               {"resid_dropout", hidden, hidden}});
  trace_layer_norm(trace, child(block, "ln_2"), hidden);
  trace_calls(trace, mlp, hidden,
              {{"c_fc", hidden, inner},
               {"act", inner, inner},
               {"c_proj", inner, hidden},
               {"dropout", hidden, hidden}});
  trace.leave();
}

void trace_gpt2_model(Trace& trace, const Module& model, const EncoderConfig& c, const Shape& ids) {
  const std::size_t heads = c.num_attention_heads;
  const Shape hidden = {ids[0], ids[1], c.hidden_size};                   // (B,T,D)
  const Shape past_key = {ids[0], heads, ids[1], c.hidden_size / heads};  // (B,H,T,hs)
  trace.call(model, ids, past_key);
  trace.enter();
  trace_embedding(trace, child(model, "wte"), ids);
  trace_embedding(trace, child(model, "wpe"), {1, ids[1]});  // position_ids (1,T)
  trace.call(child(model, "drop"), hidden, hidden);
  const Module& blocks = child(model, "h");
  trace.container(blocks);
  trace.enter();
  for (const Module& block : blocks.children)
    trace_gpt2_block(trace, block, hidden, heads);
  trace.leave();
  trace_layer_norm(trace, child(model, "ln_f"), hidden);
  trace.leave();
}

}  // namespace

std::vector<LayerInfo> trace_gpt2(const Gpt2Config& config, Gpt2Heads heads, const Shape& ids) {
  if (ids.size() != 2)
    throw Error(ErrorKind::bad_size, "trace_gpt2",
                "input_ids have shape " + shape_string(ids) + ", expected (B,T)");
  check_budget("trace_gpt2", planned_summary(gpt2_size(config, heads), "L/H"));
  const Module model = describe_gpt2(config, heads);
  const EncoderConfig& c = config.sizes;
  Trace trace;
  if (heads == Gpt2Heads::none) {
    trace_gpt2_model(trace, model, c, ids);
    return trace.layers();
  }
  const Shape hidden = {ids[0], ids[1], c.hidden_size};           // (B,T,D)
  const Shape past_key = {ids[0], c.num_attention_heads, ids[1],  // (B,H,T,hs)
                          c.hidden_size / c.num_attention_heads};
  trace.call(model, ids, past_key);  // CausalLMOutputWithCrossAttentions(logits, past_key_values)
  trace.enter();
  const std::size_t word_row = trace.size() + 1;  // transformer, wte
  trace_gpt2_model(trace, child(model, "transformer"), c, ids);
  const Module& lm_head = child(model, "lm_head");
  trace.call(lm_head, hidden, linear_output(hidden, c.vocab_size));  // (B,T,D) -> (B,T,V)
  if (lm_head.parameters.empty())                                    // tied: its weight is wte's
    trace.last().tied = {{ParameterInfo{"weight", {c.vocab_size, c.hidden_size}}, word_row}};
  trace.leave();
  return trace.layers();
}

}  // namespace attn
