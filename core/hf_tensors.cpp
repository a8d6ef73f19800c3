#include "hf_tensors.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "base/error.hpp"

namespace attn {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Array take(StateDict& weights, const std::string& key) {
  auto node = weights.extract(key);
  if (node.empty()) throw Error(ErrorKind::internal, "take", fmt::format("'{}' vanished", key));
  return std::move(node.mapped());
}

void transpose(const float* from, std::size_t rows, std::size_t cols, float* to) {
  constexpr std::size_t kBlock = 32;
  for (std::size_t r0 = 0; r0 < rows; r0 += kBlock) {
    const std::size_t r1 = std::min(rows, r0 + kBlock);
    for (std::size_t c0 = 0; c0 < cols; c0 += kBlock) {
      const std::size_t c1 = std::min(cols, c0 + kBlock);
      for (std::size_t c = c0; c < c1; ++c)
        for (std::size_t r = r0; r < r1; ++r)
          to[c * rows + r] = from[r * cols + c];
    }
  }
}

Array array_of(const float* data, Shape shape) {
  Array a{Dtype::float32, std::move(shape), {}};
  a.bytes.resize(element_count(a.shape) * sizeof(float));
  if (!a.bytes.empty()) std::memcpy(a.bytes.data(), data, a.bytes.size());
  return a;
}
Array array_of(const Tensor2& t) {
  return array_of(t.data(), {t.shape(0), t.shape(1)});
}
Array array_of(const Tensor1& t) {
  return array_of(t.data(), {t.shape(0)});
}
Tensor2 to_tensor2(const Array& a) {
  Tensor2 t = Tensor2::from_shape({a.shape.at(0), a.shape.at(1)});
  if (!a.bytes.empty()) std::memcpy(t.data(), a.bytes.data(), a.bytes.size());
  return t;
}
Tensor1 to_tensor1(const Array& a) {
  Tensor1 t = Tensor1::from_shape({a.shape.at(0)});
  if (!a.bytes.empty()) std::memcpy(t.data(), a.bytes.data(), a.bytes.size());
  return t;
}

void put(StateDict& out, const std::string& name, const Linear& linear) {
  out[name + ".weight"] = array_of(linear.weight);
  out[name + ".bias"] = array_of(linear.bias);
}
void put(StateDict& out, const std::string& name, const LayerNorm& norm) {
  out[name + ".weight"] = array_of(norm.weight);
  out[name + ".bias"] = array_of(norm.bias);
}

LayerNorm norm_from(StateDict& weights, const std::string& prefix, float eps) {
  LayerNorm n;
  n.weight = to_tensor1(take(weights, prefix + "weight"));
  n.bias = to_tensor1(take(weights, prefix + "bias"));
  n.eps = eps;
  return n;
}

BookMultiHead book_attention(const Linear& query, const Linear& key, const Linear& value,
                             std::size_t heads) {
  const std::size_t hs = query.weight.shape(0) / heads;
  BookMultiHead m;
  for (std::size_t h = 0; h < heads; ++h) {
    AttentionHead head;
    for (auto [part, from] : {std::pair{&head.q, &query}, {&head.k, &key}, {&head.v, &value}}) {
      part->weight = xt::view(from->weight, xt::range(h * hs, (h + 1) * hs), xt::all());
      part->bias = xt::view(from->bias, xt::range(h * hs, (h + 1) * hs));
      part->has_bias = true;
    }
    m.heads.push_back(std::move(head));
  }
  return m;
}

void check_tied(const Array& copy, const Array& original, const std::string& what,
                const std::string& of, std::string_view source, std::string_view function) {
  if (copy.shape != original.shape || copy.bytes != original.bytes) {
    throw Error(ErrorKind::bad_file, function,
                fmt::format("'{}': {} differs from {}, which it is tied to; attn reads tied "
                            "weights only (tie_word_embeddings)",
                            printable(std::string(source)), what, of));
  }
}

}  // namespace attn
