#include "attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "matmul.hpp"
#include "softmax.hpp"

namespace attn {

AttentionSteps scaled_dot_product_attention(const Tensor3& queries, const Tensor3& keys,
                                            const Tensor3& values, const Tensor3* mask) {
  if (keys.shape(0) != queries.shape(0) || keys.shape(2) != queries.shape(2) ||
      values.shape(0) != keys.shape(0) || values.shape(1) != keys.shape(1)) {
    throw Error(
        ErrorKind::bad_size, "scaled_dot_product_attention",
        fmt::format(
            "queries {}, keys {} and values {} do not fit: expected (B,T,hs), (B,S,hs), (B,S,hv)",
            shape_string_of(queries), shape_string_of(keys), shape_string_of(values)));
  }
  AttentionSteps s;
  s.queries = queries;
  s.keys = keys;
  s.values = values;
  s.scores = batched_matmul_transposed(queries, keys);  // (B,T,hs) @ (B,S,hs)^T -> (B,T,S)
  // A float division by sqrt(hs), as torch's `scores / sqrt(dim_k)`.
  s.scaled_scores = s.scores / std::sqrt(static_cast<float>(keys.shape(2)));
  if (mask != nullptr) {
    if (mask->shape() != s.scaled_scores.shape()) {
      throw Error(ErrorKind::bad_size, "scaled_dot_product_attention",
                  fmt::format("mask {} does not fit scores {}", shape_string_of(*mask),
                              shape_string_of(s.scaled_scores)));
    }
    s.scaled_scores += *mask;
  }
  s.weights = softmax(s.scaled_scores);          // (B,T,S)
  s.output = batched_matmul(s.weights, values);  // (B,T,S) @ (B,S,hv) -> (B,T,hv)
  return s;
}

AttentionGradients scaled_dot_product_attention_backward(const AttentionSteps& s,
                                                         const Tensor3& d_output) {
  if (d_output.shape() != s.output.shape()) {
    throw Error(ErrorKind::bad_size, "scaled_dot_product_attention_backward",
                fmt::format("d_output {} does not fit the output {}", shape_string_of(d_output),
                            shape_string_of(s.output)));
  }
  return attention_backward(s.queries, s.keys, s.values, s.weights, d_output);
}

AttentionGradients attention_backward(const Tensor3& queries, const Tensor3& keys,
                                      const Tensor3& values, const Tensor3& weights,
                                      const Tensor3& d_output, const Tensor3* keep) {
  AttentionGradients g;
  g.values = batched_matmul_transposed_a(weights, d_output);              // (B,T,S)ᵀ @ (B,T,hv)
  const Tensor3 d_weights = batched_matmul_transposed(d_output, values);  // (B,T,S)
  Tensor3 d_masked = softmax_backward(weights, d_weights);
  if (keep != nullptr) {
    if (keep->shape() != d_masked.shape())
      throw Error(ErrorKind::bad_size, "attention_backward",
                  fmt::format("keep {} does not fit the weights {}", shape_string_of(*keep),
                              shape_string_of(d_masked)));
    for (std::size_t i = 0; i < d_masked.size(); ++i)
      if (keep->data()[i] == 0.0f) d_masked.data()[i] = 0.0f;  // masked_fill's backward
  }
  // The forward divided each score by the float √hs; the gradient is divided the same way.
  const Tensor3 d_scores = d_masked / std::sqrt(static_cast<float>(keys.shape(2)));
  g.queries = batched_matmul(d_scores, keys);               // (B,T,S) @ (B,S,hs)
  g.keys = batched_matmul_transposed_a(d_scores, queries);  // (B,T,S)ᵀ @ (B,T,hs)
  return g;
}

Tensor3d attention_float64(const Tensor3d& queries, const Tensor3d& keys, const Tensor3d& values,
                           double divisor, const Tensor3* mask) {
  const std::size_t batch = queries.shape(0), t_count = queries.shape(1), s_count = keys.shape(1),
                    hs = keys.shape(2), hv = values.shape(2);
  if (keys.shape(0) != batch || keys.shape(2) != queries.shape(2) || values.shape(0) != batch ||
      values.shape(1) != s_count ||
      (mask != nullptr &&
       (mask->shape(0) != batch || mask->shape(1) != t_count || mask->shape(2) != s_count))) {
    throw Error(
        ErrorKind::bad_size, "attention_float64",
        fmt::format("queries {}, keys {} and values {} do not fit", shape_string_of(queries),
                    shape_string_of(keys), shape_string_of(values)));
  }
  Tensor3d out = xt::zeros<double>({batch, t_count, hv});
  std::vector<double> row(s_count);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < t_count; ++i) {
      double largest = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < s_count; ++j) {
        double score = 0.0;
        for (std::size_t d = 0; d < hs; ++d)
          score += queries(b, i, d) * keys(b, j, d);  // q · k
        row[j] = score / divisor + (mask != nullptr ? (*mask)(b, i, j) : 0.0f);
        largest = std::max(largest, row[j]);
      }
      if (std::isinf(largest) && largest < 0) continue;  // every key masked: zeros
      double total = 0.0;
      for (std::size_t j = 0; j < s_count; ++j)
        total += row[j] = std::exp(row[j] - largest);
      for (std::size_t j = 0; j < s_count; ++j)
        for (std::size_t d = 0; d < hv; ++d)
          out(b, i, d) += row[j] / total * values(b, j, d);
    }
  return out;
}

MemoryPlan plan_attention(std::size_t batch, std::size_t tokens, std::size_t head_size) {
  const Shape bthd = {batch, tokens, head_size}, btt = {batch, tokens, tokens};
  return {{"Q", bthd, "B T hs"},         {"K", bthd, "B T hs"},
          {"V", bthd, "B T hs"},         {"Q Kᵀ", btt, "B T T"},
          {"Q Kᵀ / √hs", btt, "B T T"},  {"the weights", btt, "B T T"},
          {"the output", bthd, "B T hs"}};
}

MemoryPlan plan_attention_temporaries(std::size_t batch, std::size_t tokens,
                                      std::size_t head_size) {
  return {{"the projections", {3, batch, tokens, head_size}, " B T hs"}};
}

MemoryPlan plan_attention_float64(std::size_t batch, std::size_t tokens, std::size_t width,
                                  std::size_t head_size) {
  return {{"X in float64", {batch, tokens, width}, "B T D", 8},
          {"Q, K, V and the output in float64", {4, batch, tokens, head_size}, " B T hs", 8}};
}

Tensor3 attention_mask(std::size_t batch, std::size_t tokens, bool causal,
                       const std::vector<std::size_t>& lengths) {
  if (!lengths.empty() && lengths.size() != batch) {
    throw Error(ErrorKind::bad_size, "attention_mask",
                fmt::format("{} lengths for a batch of {}: give one length per sequence",
                            lengths.size(), batch))
        .about("lengths");
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  Tensor3 mask = xt::zeros<float>({batch, tokens, tokens});
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t length = lengths.empty() ? tokens : lengths[b];
    if (length == 0 || length > tokens) {
      throw Error(
          ErrorKind::bad_size, "attention_mask",
          fmt::format(
              "length {} of sequence {} is outside 1..{} (T): give each length from 1 to T, the "
              "tokens per sequence",
              length, b, tokens))
          .about("lengths");
    }
    for (std::size_t i = 0; i < tokens; ++i)
      for (std::size_t j = 0; j < tokens; ++j)
        if ((causal && j > i) || j >= length) mask(b, i, j) = kNegInf;
  }
  return mask;
}

SelfAttention init_self_attention(Rng& rng, std::size_t k) {
  SelfAttention layer;  // registration order: tokeys, toqueries, tovalues
  layer.tokeys = init_linear(rng, k, k, false);
  layer.toqueries = init_linear(rng, k, k, false);
  layer.tovalues = init_linear(rng, k, k, false);
  return layer;
}

Module describe_self_attention(std::size_t k) {
  return Module{"SelfAttention",
                "",
                {},
                {linear_module("tokeys", k, k, false), linear_module("toqueries", k, k, false),
                 linear_module("tovalues", k, k, false)}};
}

void visit_parameters(SelfAttention& layer, const ParameterVisitor& visit) {
  visit_parameters(layer.tokeys, "tokeys.", visit);
  visit_parameters(layer.toqueries, "toqueries.", visit);
  visit_parameters(layer.tovalues, "tovalues.", visit);
}

AttentionSteps forward(const SelfAttention& layer, const Tensor3& x, const Tensor3* mask) {
  // Seed 004 divides by k ** 0.5 with k the model width, which is the head size here.
  return scaled_dot_product_attention(forward(layer.toqueries, x),  // (B,T,k)
                                      forward(layer.tokeys, x), forward(layer.tovalues, x), mask);
}

namespace {
// dX through the three projections Q = q(x), K = k(x), V = v(x), their gradients added into d*.
Tensor3 projections_backward(const Tensor3& x, const AttentionGradients& g, const Linear& q,
                             const Linear& k, const Linear& v, Linear& dq, Linear& dk, Linear& dv) {
  Tensor3 d_x = backward(q, x, g.queries, dq);
  d_x += backward(k, x, g.keys, dk);
  d_x += backward(v, x, g.values, dv);
  return d_x;
}
}  // namespace

Tensor3 backward(const SelfAttention& layer, const Tensor3& x, const AttentionSteps& steps,
                 const Tensor3& d_output, SelfAttention& grad) {
  return projections_backward(x, scaled_dot_product_attention_backward(steps, d_output),
                              layer.toqueries, layer.tokeys, layer.tovalues, grad.toqueries,
                              grad.tokeys, grad.tovalues);
}

Tensor3d forward_float64(const SelfAttention& layer, const Tensor3& x, const Tensor3* mask) {
  const Tensor3d x64 = xt::cast<double>(x);
  const double divisor = std::sqrt(static_cast<double>(layer.tokeys.weight.shape(0)));  // √hs
  return attention_float64(forward_float64(layer.toqueries, x64),
                           forward_float64(layer.tokeys, x64), forward_float64(layer.tovalues, x64),
                           divisor, mask);
}

std::vector<LayerInfo> trace_self_attention(std::size_t k, const Shape& shape) {
  const Module m = describe_self_attention(k);
  Trace trace;
  trace.call(m, shape, shape);
  trace.enter();
  for (const char* name : {"toqueries", "tokeys", "tovalues"})
    trace.call(child(m, name), shape, linear_output(shape, k));
  trace.leave();
  return trace.layers();
}

AttentionHead init_attention_head(Rng& rng, std::size_t embed_dim, std::size_t head_dim) {
  AttentionHead head;
  head.q = init_linear(rng, embed_dim, head_dim, true);
  head.k = init_linear(rng, embed_dim, head_dim, true);
  head.v = init_linear(rng, embed_dim, head_dim, true);
  return head;
}

Module describe_attention_head(std::size_t embed_dim, std::size_t head_dim, std::string name) {
  return Module{
      "AttentionHead",
      std::move(name),
      {},
      {linear_module("q", embed_dim, head_dim, true), linear_module("k", embed_dim, head_dim, true),
       linear_module("v", embed_dim, head_dim, true)}};
}

void visit_parameters(AttentionHead& head, const std::string& prefix,
                      const ParameterVisitor& visit) {
  visit_parameters(head.q, prefix + "q.", visit);
  visit_parameters(head.k, prefix + "k.", visit);
  visit_parameters(head.v, prefix + "v.", visit);
}

AttentionSteps forward(const AttentionHead& head, const Tensor3& x, const Tensor3* mask) {
  return scaled_dot_product_attention(forward(head.q, x), forward(head.k, x), forward(head.v, x),
                                      mask);
}

Tensor3 backward(const AttentionHead& head, const Tensor3& x, const AttentionSteps& steps,
                 const Tensor3& d_output, AttentionHead& grad) {
  return projections_backward(x, scaled_dot_product_attention_backward(steps, d_output), head.q,
                              head.k, head.v, grad.q, grad.k, grad.v);
}

Tensor3d forward_float64(const AttentionHead& head, const Tensor3& x, const Tensor3* mask) {
  const Tensor3d x64 = xt::cast<double>(x);
  const double divisor = std::sqrt(static_cast<double>(head.k.weight.shape(0)));  // √hs
  return attention_float64(forward_float64(head.q, x64), forward_float64(head.k, x64),
                           forward_float64(head.v, x64), divisor, mask);
}

void trace_attention_head(Trace& trace, const Module& head, const Shape& shape) {
  const std::size_t head_dim = head.children.front().parameters.front().shape[0];
  trace.call(head, shape, linear_output(shape, head_dim));
  trace.enter();
  for (const Module& projection : head.children)
    trace.call(projection, shape, linear_output(shape, head_dim));
  trace.leave();
}

std::vector<LayerInfo> trace_attention_head(std::size_t embed_dim, std::size_t head_dim,
                                            const Shape& shape) {
  Trace trace;
  trace_attention_head(trace, describe_attention_head(embed_dim, head_dim), shape);
  return trace.layers();
}

float fill_value(MaskFill fill) {
  return fill == MaskFill::seed ? -1e9f : -std::numeric_limits<float>::infinity();
}
std::string_view fill_name(MaskFill fill) {
  return fill == MaskFill::seed ? "seed" : "torch";
}
std::string_view fill_text(MaskFill fill) {
  return fill == MaskFill::seed ? "-1e9" : "-inf";
}

ScoreMask broadcast_mask(const Array& mask, std::size_t batch, std::size_t heads,
                         std::size_t queries, std::size_t keys, MaskFill fill) {
  const Shape target{batch, heads, queries, keys};
  const auto refuse = [&] {
    return Error(ErrorKind::bad_size, "mask",
                 fmt::format("a mask of shape {} does not broadcast against the scores (B,H,T,S) = "
                             "{}: give (B,1,1,S) for padding, (B,1,T,T) or (T,T) for a causal mask",
                             shape_string(mask.shape), shape_string(target)));
  };
  if (mask.rank() == 0 || mask.rank() > 4) throw refuse();
  Shape aligned(4 - mask.rank(), 1);
  aligned.insert(aligned.end(), mask.shape.begin(), mask.shape.end());
  for (std::size_t a = 0; a < 4; ++a)
    if (aligned[a] != 1 && aligned[a] != target[a]) throw refuse();
  ScoreMask out{Tensor4::from_shape(target), fill};
  std::size_t stride[4];
  std::size_t step = 1;
  for (std::size_t a = 4; a-- > 0;) {
    stride[a] = aligned[a] == 1 ? 0 : step;
    step *= aligned[a];
  }
  std::size_t i = 0;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < queries; ++t)
        for (std::size_t s = 0; s < keys; ++s, ++i)
          out.keep.data()[i] =
              mask.real(b * stride[0] + h * stride[1] + t * stride[2] + s * stride[3]) != 0.0
                  ? 1.0f
                  : 0.0f;
  return out;
}

namespace {
void check_lengths(const std::vector<std::size_t>& lengths, std::size_t axis, const char* what) {
  if (lengths.empty())
    throw Error(ErrorKind::bad_size, what, "give one length per sequence, at least one");
  for (std::size_t n : lengths)
    if (n == 0 || n > axis)
      throw Error(ErrorKind::bad_size, what,
                  fmt::format("a length of {} does not fit sequences of {} tokens: give 1 to {}", n,
                              axis, axis));
}
}  // namespace

Array source_padding_mask(const std::vector<std::size_t>& lengths, std::size_t keys) {
  check_lengths(lengths, keys, "source_padding_mask");
  std::vector<std::int64_t> v(lengths.size() * keys, 0);
  for (std::size_t b = 0; b < lengths.size(); ++b)
    std::fill(v.begin() + static_cast<std::ptrdiff_t>(b * keys),
              v.begin() + static_cast<std::ptrdiff_t>(b * keys + lengths[b]), 1);
  return make_int64({lengths.size(), 1, 1, keys}, v);
}

Array target_causal_mask(const std::vector<std::size_t>& lengths, std::size_t tokens) {
  check_lengths(lengths, tokens, "target_causal_mask");
  std::vector<std::int64_t> v(lengths.size() * tokens * tokens, 0);
  for (std::size_t b = 0; b < lengths.size(); ++b)
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t s = 0; s <= t && s < lengths[b]; ++s)
        v[(b * tokens + t) * tokens + s] = 1;
  return make_int64({lengths.size(), 1, tokens, tokens}, v);
}

void apply_mask(const ScoreMask& mask, Tensor3& scores) {
  if (mask.keep.size() != scores.size())
    throw Error(ErrorKind::bad_size, "apply_mask",
                fmt::format("a mask {} for scores {}", shape_string_of(mask.keep),
                            shape_string_of(scores)));
  const float fill = fill_value(mask.fill);
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (mask.keep.data()[i] == 0.0f) scores.data()[i] = fill;
}

}  // namespace attn
