// nn.Embedding as a plain struct: a (V, D) table whose row i is token i's vector; the forward
// pass picks rows by id. Legend: B batch, T tokens, V vocabulary (rows), D model width.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "base/random.hpp"
#include "base/tensor.hpp"
#include "linear.hpp"
#include "module.hpp"
#include "trace.hpp"

namespace attn {

using Ids = xt::xtensor<std::int64_t, 2>;  // (B,T) token ids, int64 as torch's input_ids

struct Embedding {
  Tensor2 weight;  // (V,D)
};

// N(0, 1) for every entry, in row-major order: nn.Embedding's default (init.normal_).
Embedding init_embedding(Rng& rng, std::size_t num_embeddings, std::size_t embedding_dim);
// nn.Embedding(V, D): one parameter, weight (V, D).
Module describe_embedding(std::size_t num_embeddings, std::size_t embedding_dim,
                          std::string name = "");
void visit_parameters(Embedding& layer, const std::string& prefix, const ParameterVisitor& visit);
inline void visit_parameters(Embedding& layer, const ParameterVisitor& visit) {
  visit_parameters(layer, "", visit);
}
// ids (B,T) -> (B,T,D): out[b, t] = weight[ids[b, t]]. Throws attn::Error naming the first id
// outside 0..V-1 (torch: "IndexError: index out of range in self").
Tensor3 forward(const Embedding& layer, const Ids& ids);
// A learned position table's ids for T tokens: (1,T) holding 0..T-1.
Ids position_ids(std::size_t tokens);
// The backward of forward(layer, ids): adds each dY[b, t] into grad.weight's row ids[b, t]
// (repeated ids add up). Ids have no gradient.
void backward(const Embedding& layer, const Ids& ids, const Tensor3& d_output, Embedding& grad);
// The first id outside 0..rows-1 (and its flat position), or nothing when all fit.
std::optional<std::int64_t> first_id_out_of_range(const Ids& ids, std::size_t rows,
                                                  std::size_t* position = nullptr);

// Adds the Embedding's call on `input` (B,T) to `trace`.
void trace_embedding(Trace& trace, const Module& embedding, const Shape& input);
// torchinfo's row for nn.Embedding(V, D) on ids of shape `input` (B,T).
std::vector<LayerInfo> trace_embedding(std::size_t num_embeddings, std::size_t embedding_dim,
                                       const Shape& input);

Array to_array(const Ids& ids);  // int64 (B,T)

}  // namespace attn
