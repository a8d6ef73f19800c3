#include "embedding.hpp"

#include <cstring>

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn {

Embedding init_embedding(Rng& rng, std::size_t num_embeddings, std::size_t embedding_dim) {
  return Embedding{randn_matrix(rng, num_embeddings, embedding_dim)};  // (V,D)
}

Module describe_embedding(std::size_t num_embeddings, std::size_t embedding_dim, std::string name) {
  return Module{
      "Embedding", std::move(name), {{"weight", {num_embeddings, embedding_dim}, true}}, {}};
}

void visit_parameters(Embedding& layer, const std::string& prefix, const ParameterVisitor& visit) {
  visit(prefix + "weight", layer.weight.data(), shape_of(layer.weight));
}

std::optional<std::int64_t> first_id_out_of_range(const Ids& ids, std::size_t rows,
                                                  std::size_t* position) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = ids.data()[i];
    if (id < 0 || static_cast<std::uint64_t>(id) >= rows) {
      if (position != nullptr) *position = i;
      return id;
    }
  }
  return std::nullopt;
}

Tensor3 forward(const Embedding& layer, const Ids& ids) {
  const std::size_t rows = layer.weight.shape(0), width = layer.weight.shape(1);
  std::size_t position = 0;
  if (const auto bad = first_id_out_of_range(ids, rows, &position)) {
    throw Error(ErrorKind::bad_value, "embedding",
                fmt::format("id {} (sequence {}, token {}) is outside the table's {} rows: ids "
                            "must be 0..{}",
                            *bad, position / ids.shape(1), position % ids.shape(1), rows,
                            static_cast<std::int64_t>(rows) - 1));
  }
  Tensor3 out({ids.shape(0), ids.shape(1), width});  // (B,T,D)
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto row = static_cast<std::size_t>(ids.data()[i]);
    if (width != 0)
      std::memcpy(out.data() + i * width, layer.weight.data() + row * width, width * sizeof(float));
  }
  return out;
}

void trace_embedding(Trace& trace, const Module& embedding, const Shape& input) {
  Shape output = input;
  output.push_back(embedding.parameters.front().shape[1]);  // (B,T) -> (B,T,D)
  trace.call(embedding, input, output);
}

std::vector<LayerInfo> trace_embedding(std::size_t num_embeddings, std::size_t embedding_dim,
                                       const Shape& input) {
  Trace trace;
  trace_embedding(trace, describe_embedding(num_embeddings, embedding_dim), input);
  return trace.layers();
}

Array to_array(const Ids& ids) {
  Array a{Dtype::int64, shape_of(ids),
          std::vector<unsigned char>(ids.size() * sizeof(std::int64_t))};
  if (ids.size() != 0) std::memcpy(a.bytes.data(), ids.data(), a.bytes.size());
  return a;
}

void backward(const Embedding& layer, const Ids& ids, const Tensor3& d_output, Embedding& grad) {
  const std::size_t rows = layer.weight.shape(0), width = layer.weight.shape(1);
  if (d_output.shape(0) != ids.shape(0) || d_output.shape(1) != ids.shape(1) ||
      d_output.shape(2) != width || grad.weight.shape() != layer.weight.shape()) {
    throw Error(ErrorKind::bad_size, "embedding_backward",
                fmt::format("d_output {} or the gradient does not fit ids {} and weight {}",
                            shape_string_of(d_output), shape_string_of(ids),
                            shape_string_of(layer.weight)));
  }
  if (std::size_t at = 0; first_id_out_of_range(ids, rows, &at))
    throw Error(ErrorKind::bad_value, "embedding_backward",
                fmt::format("id {} is outside 0..{}", ids.data()[at], rows - 1));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto row = static_cast<std::size_t>(ids.data()[i]);
    for (std::size_t d = 0; d < width; ++d)
      grad.weight(row, d) += d_output.data()[i * width + d];
  }
}

Ids position_ids(std::size_t tokens) {
  Ids ids({1, tokens});
  for (std::size_t t = 0; t < tokens; ++t)
    ids(0, t) = static_cast<std::int64_t>(t);
  return ids;
}

}  // namespace attn
