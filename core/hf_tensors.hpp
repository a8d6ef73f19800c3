// Moving tensors between a Hugging Face checkpoint's StateDict and the book's structs: what the
// readers of transformers' models (bert.cpp, gpt2.cpp) share.
#pragma once

#include <string>
#include <string_view>

#include "base/tensor.hpp"
#include "io/weights.hpp"
#include "layer_norm.hpp"
#include "linear.hpp"
#include "multi_head.hpp"

namespace attn {

bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);

// The tensor under `key`, taken out of `weights` (the caller checked that it is there).
Array take(StateDict& weights, const std::string& key);

// to (cols, rows) = from (rows, cols) transposed, both row-major, in cache-sized blocks: Conv1D's
// (in, out) weights as a Linear's (out, in).
void transpose(const float* from, std::size_t rows, std::size_t cols, float* to);

Array array_of(const float* data, Shape shape);
Array array_of(const Tensor2& t);
Array array_of(const Tensor1& t);
Tensor2 to_tensor2(const Array& a);
Tensor1 to_tensor1(const Array& a);

// `name`.weight and `name`.bias into a state dict.
void put(StateDict& out, const std::string& name, const Linear& linear);
void put(StateDict& out, const std::string& name, const LayerNorm& norm);

// LayerNorm `prefix`weight and `prefix`bias, taken out of `weights`, at `eps`.
LayerNorm norm_from(StateDict& weights, const std::string& prefix, float eps);

// Three (D, D) projections with biases as the book's heads: head h takes rows h·hs..(h+1)·hs of
// each (hs = D / heads).
BookMultiHead book_attention(const Linear& query, const Linear& key, const Linear& value,
                             std::size_t heads);

// A tied copy in a checkpoint is dropped only when it equals what it is tied to. Throws
// attn::Error(bad_file) from `function` naming `source` otherwise.
void check_tied(const Array& copy, const Array& original, const std::string& what,
                const std::string& of, std::string_view source, std::string_view function);

}  // namespace attn
