// torchinfo's rows of transformers' BERT classes on input_ids (B,T): one row per module call, in
// the order modeling_bert.py's eager forward makes them, on describe_bert's tree.
// Legend: B batch, T tokens, D hidden_size, H heads, F intermediate_size, V vocabulary.
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "bert.hpp"
#include "embedding.hpp"
#include "layer_norm.hpp"
#include "summary.hpp"

namespace attn {
namespace {

bool has_child(const Module& module, const std::string& name) {
  return std::any_of(module.children.begin(), module.children.end(),
                     [&](const Module& c) { return c.name == name; });
}

// dense, a leaf (`middle`), LayerNorm: BertSelfOutput and BertOutput (dropout; the LayerNorm
// adds the block's input) and BertPredictionHeadTransform (its activation).
void trace_dense_block(Trace& trace, const Module& block, const Shape& input, const Shape& hidden,
                       const std::string& middle) {
  trace.call(block, input, hidden);
  trace.enter();
  trace.call(child(block, "dense"), input, hidden);
  trace.call(child(block, middle), hidden, hidden);
  trace_layer_norm(trace, child(block, "LayerNorm"), hidden);
  trace.leave();
}

// BertLayer on (B,T,D): attention (query, key, value, dropout on the probabilities; the
// output block), then feed_forward_chunk (intermediate, output).
void trace_bert_layer(Trace& trace, const Module& layer, const Shape& hidden, std::size_t heads) {
  const Module& intermediate = child(layer, "intermediate");
  const Module& up = child(intermediate, "dense");
  const Shape inner = linear_output(hidden, up.parameters.front().shape[0]);  // (B,T,F)
  const Shape probabilities = {hidden[0], heads, hidden[1], hidden[1]};       // (B,H,T,T)
  trace.call(layer, hidden, hidden);
  trace.enter();
  const Module& attention = child(layer, "attention");
  trace.call(attention, hidden, hidden);
  trace.enter();
  const Module& self = child(attention, "self");
  trace.call(self, hidden, hidden);
  trace.enter();
  for (const char* projection : {"query", "key", "value"})
    trace.call(child(self, projection), hidden, hidden);
  trace.call(child(self, "dropout"), probabilities, probabilities);
  trace.leave();
  trace_dense_block(trace, child(attention, "output"), hidden, hidden, "dropout");
  trace.leave();
  trace.call(intermediate, hidden, inner);
  trace.enter();
  trace.call(up, hidden, inner);
  trace.call(child(intermediate, "intermediate_act_fn"), inner, inner);
  trace.leave();
  trace_dense_block(trace, child(layer, "output"), inner, hidden, "dropout");
  trace.leave();
}

// BertModel: its output is a ModelOutput, which torchinfo sizes by its last field: pooler_output
// (B,D) with a pooler, last_hidden_state (B,T,D) without.
void trace_bert_model(Trace& trace, const Module& model, const BertConfig& config,
                      const Shape& ids) {
  const EncoderConfig& c = config.sizes;
  const Shape hidden = {ids[0], ids[1], c.hidden_size};  // (B,T,D)
  const Shape pooled = {ids[0], c.hidden_size};          // (B,D)
  const bool pooler = has_child(model, "pooler");
  trace.call(model, ids, pooler ? pooled : hidden);
  trace.enter();
  const Module& embeddings = child(model, "embeddings");
  trace.call(embeddings, ids, hidden);
  trace.enter();
  trace_embedding(trace, child(embeddings, "word_embeddings"), ids);
  trace_embedding(trace, child(embeddings, "token_type_embeddings"), ids);
  trace_embedding(trace, child(embeddings, "position_embeddings"), {1, ids[1]});  // position_ids
  trace_layer_norm(trace, child(embeddings, "LayerNorm"), hidden);
  trace.call(child(embeddings, "dropout"), hidden, hidden);
  trace.leave();
  const Module& encoder = child(model, "encoder");
  trace.call(encoder, hidden, hidden);
  trace.enter();
  const Module& layers = child(encoder, "layer");
  trace.container(layers);
  trace.enter();
  for (const Module& layer : layers.children)
    trace_bert_layer(trace, layer, hidden, c.num_attention_heads);
  trace.leave();
  trace.leave();
  if (pooler) {
    const Module& pool = child(model, "pooler");
    trace.call(pool, hidden, pooled);  // dense and tanh on the first token's (B,D)
    trace.enter();
    trace.call(child(pool, "dense"), pooled, pooled);
    trace.call(child(pool, "activation"), pooled, pooled);
    trace.leave();
  }
  trace.leave();
}

// BertLMPredictionHead: transform (dense, activation, LayerNorm), then decoder to (B,T,V). The
// decoder's weight is the word table and its bias the head's: it owns nothing of its own.
void trace_prediction_head(Trace& trace, const Module& head, const Shape& hidden,
                           std::size_t word_row, std::size_t vocab) {
  const Shape logits = linear_output(hidden, vocab);
  trace.call(head, hidden, logits);
  const std::size_t head_row = trace.size() - 1;
  trace.enter();
  trace_dense_block(trace, child(head, "transform"), hidden, hidden, "transform_act_fn");
  trace.call(child(head, "decoder"), hidden, logits);
  trace.last().tied = {{ParameterInfo{"weight", {vocab, hidden.back()}}, word_row},
                       {ParameterInfo{"bias", {vocab}}, head_row}};
  trace.leave();
}

}  // namespace

std::vector<LayerInfo> trace_bert(const BertConfig& config, BertHeads heads, const Shape& ids,
                                  bool pooler) {
  if (ids.size() != 2)
    throw Error(ErrorKind::bad_size, "trace_bert",
                "input_ids have shape " + shape_string(ids) + ", expected (B,T)");
  check_budget("trace_bert", planned_summary(bert_size(config, heads, pooler), "L/H"));
  const Module model = describe_bert(config, heads, pooler);
  Trace trace;
  if (heads == BertHeads::none) {
    trace_bert_model(trace, model, config, ids);
    return trace.layers();
  }
  const EncoderConfig& c = config.sizes;
  const Shape hidden = {ids[0], ids[1], c.hidden_size};      // (B,T,D)
  const Shape logits = linear_output(hidden, c.vocab_size);  // (B,T,V)
  const Shape next_sentence = {ids[0], 2};                   // (B,2)
  // BertForMaskedLM returns MaskedLMOutput(logits); BertForPreTraining's output ends with
  // seq_relationship_logits.
  trace.call(model, ids, heads == BertHeads::masked_lm ? logits : next_sentence);
  trace.enter();
  const std::size_t word_row = trace.size() + 2;  // bert, embeddings, word_embeddings
  trace_bert_model(trace, child(model, "bert"), config, ids);
  const Module& cls = child(model, "cls");
  trace.call(cls, hidden, logits);  // BertPreTrainingHeads returns a tuple: its first is sized
  trace.enter();
  trace_prediction_head(trace, child(cls, "predictions"), hidden, word_row, c.vocab_size);
  if (heads == BertHeads::pretraining) {
    const Shape pooled = {ids[0], c.hidden_size};
    trace.call(child(cls, "seq_relationship"), pooled, next_sentence);
  }
  trace.leave();
  trace.leave();
  return trace.layers();
}

}  // namespace attn
