// What `attn view` shows, apart from how it is drawn: every layer's and every head's attention
// weights over one sequence (bertviz's head and model views), and for one head and one query
// token the arithmetic that makes a row of them (bertviz's neuron view): the query, each key,
// their elementwise product, its sum, the scaling and the softmax.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/tensor.hpp"
#include "bert.hpp"
#include "encoder.hpp"
#include "gpt2.hpp"
#include "transformer.hpp"

namespace attn {

// Which attention of seed 001's encoder-decoder a view shows.
enum class ViewPart { encoder, decoder, cross };

struct AttentionView {
  std::string model;  // what computed it, e.g. "checkpoint reverse (the book's encoder)"
  std::string part;   // "self-attention", "decoder self-attention (causal)", "cross-attention"
  std::vector<std::string> rows, columns;  // the tokens: queries and keys (the same for self)
  std::size_t layers = 0, heads = 0, head_size = 0;
  bool causal = false;  // the decoder's self-attention: query t sees keys 0..t only
  Tensor4 weights;      // (L,H,T,S) softmax(Q Kᵀ / √hs) as each layer computed it
  Tensor4 queries;      // (L,H,T,hs) Q of each head, bias included
  Tensor4 keys;         // (L,H,S,hs)
  // A sentence pair ([CLS] A [SEP] B [SEP]): the index of B's first token; 0 for one sentence.
  std::size_t pair_split = 0;
  // Each head's best pattern on this sequence when it holds, "previous 0.93" (L*H entries, ""
  // for the others); empty when not marked (head_scan.hpp's mark_heads).
  std::vector<std::string> head_marks;
};

// The book's encoder on ids (1,T); `tokens` label them (T of them).
AttentionView encoder_view(const Encoder& encoder, const Ids& ids, std::vector<std::string> tokens,
                           std::string model);
// BERT on one sequence (input ids (1,T), its token types); `pair_split` is B's first token in a
// sentence pair, 0 for one sentence.
AttentionView bert_view(const Bert& model, const BertInput& input, std::vector<std::string> tokens,
                        std::string name, std::size_t pair_split);
// GPT-2 on one sequence (input ids (1,T)): each block's causal self-attention.
AttentionView gpt2_view(const Gpt2& model, const Gpt2Input& input, std::vector<std::string> tokens,
                        std::string name);
// Seed 001's encoder-decoder on source ids (1,S) and target ids (1,T) (the decoder's input, causal
// mask), one part: the encoder's self-attention (source x source), the decoder's masked
// self-attention (target x target) or its cross-attention (target x source).
AttentionView transformer_view(const Transformer& model, const Ids& source, const Ids& target,
                               ViewPart part, std::vector<std::string> source_tokens,
                               std::vector<std::string> target_tokens, std::string name);

// The view cut to a block of a sentence pair, as bertviz's "Sentence A -> Sentence B" filter:
// rows from `from` ('a' or 'b'), columns from `to`. Throws Error(bad_value) when the view holds
// one sentence.
AttentionView sentence_block(const AttentionView& view, char from, char to);

// bertviz's neuron view for one head and one query token.
struct NeuronView {
  std::size_t layer = 0, head = 0, token = 0;
  std::vector<float> query;                  // (hs)
  std::vector<std::vector<float>> keys;      // (S, hs)
  std::vector<std::vector<float>> products;  // (S, hs) query ∘ key, elementwise
  std::vector<float> dots;                   // (S) the products' sums, in float64 then float32
  std::vector<float> scaled;                 // (S) dots / √hs
  std::vector<float> softmax;                // (S) recomputed from `scaled`, float64
  std::vector<float> model_weights;          // (S) the row the model computed, to compare
};
// Throws Error(bad_size) for a layer, head or token out of range, naming the range.
NeuronView neuron_view(const AttentionView& view, std::size_t layer, std::size_t head,
                       std::size_t token);

}  // namespace attn
