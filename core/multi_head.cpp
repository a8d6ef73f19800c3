#include "multi_head.hpp"

#include <cmath>
#include <variant>

#include <xtensor/xview.hpp>

#include "base/count.hpp"
#include "base/heads.hpp"
#include "base/names.hpp"
#include "matmul.hpp"
#include "softmax.hpp"
#include "summary.hpp"

namespace attn {

namespace {
// (B,T,H*hs) -> (B*H,T,hs): torch's x.view(B,T,H,hs).transpose(1,2).reshape(B*H,T,hs).
template <class T>
xt::xtensor<T, 3> split_heads(const xt::xtensor<T, 3>& x, std::size_t heads) {
  const std::size_t batch = x.shape(0), tokens = x.shape(1), size = x.shape(2) / heads;
  xt::xtensor<T, 3> out({batch * heads, tokens, size});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t i = 0; i < size; ++i)
          out(b * heads + h, t, i) = x(b, t, h * size + i);
  return out;
}

// (B*H,T,hs) -> (B,T,H*hs): y.view(B,H,T,hs).transpose(1,2).reshape(B,T,H*hs).
template <class T>
xt::xtensor<T, 3> merge_heads(const xt::xtensor<T, 3>& y, std::size_t heads) {
  const std::size_t batch = y.shape(0) / heads, tokens = y.shape(1), size = y.shape(2);
  xt::xtensor<T, 3> out({batch, tokens, heads * size});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t i = 0; i < size; ++i)
          out(b, t, h * size + i) = y(b * heads + h, t, i);
  return out;
}

// Zeroes the ablated heads' slices of a (B,T,H*hs) tensor of either precision.
template <class T>
void zero_heads(xt::xtensor<T, 3>& concatenated, const HeadMask& ablated, std::size_t heads) {
  if (ablated.size() > heads) {
    throw Error(ErrorKind::bad_size, "multi_head",
                fmt::format("{} heads are marked ablated or kept, but the layer has {}",
                            ablated.size(), heads));
  }
  const std::size_t rows = concatenated.shape(0) * concatenated.shape(1),
                    hs = concatenated.shape(2) / heads;
  for (std::size_t h = 0; h < ablated.size(); ++h) {
    if (!ablated[h]) continue;
    for (std::size_t r = 0; r < rows; ++r)
      std::fill_n(concatenated.data() + r * heads * hs + h * hs, hs, T(0));
  }
}

// (B*H,T,X) viewed as (B,H,T,X).
Tensor4 as_4d(const Tensor3& x, std::size_t heads) {
  Tensor4 out({x.shape(0) / heads, heads, x.shape(1), x.shape(2)});
  std::copy(x.begin(), x.end(), out.begin());
  return out;
}

// The mask (B,T,T) repeated for each head: (B*H,T,T).
Tensor3 repeat_mask(const Tensor3& mask, std::size_t heads) {
  const std::size_t batch = mask.shape(0), t = mask.shape(1), s = mask.shape(2);
  Tensor3 out({batch * heads, t, s});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      std::copy(mask.data() + b * t * s, mask.data() + (b + 1) * t * s,
                out.data() + (b * heads + h) * t * s);
  return out;
}

// The forms that project every head at once (seed 004's, fused): one Linear per role.
struct Roles {
  const Linear &queries, &keys, &values, &output;
  std::size_t heads;
  const HeadMask& ablated;
};
struct GradRoles {
  Linear &queries, &keys, &values, &output;
};

Roles roles(const Seed004MultiHead& m) {
  return {m.toqueries, m.tokeys, m.tovalues, m.unifyheads, m.heads, m.ablated};
}
GradRoles roles(Seed004MultiHead& m) {
  return {m.toqueries, m.tokeys, m.tovalues, m.unifyheads};
}
Roles roles(const FusedMultiHead& m) {
  return {m.W_Q, m.W_K, m.W_V, m.W_O, m.heads, m.ablated};
}
GradRoles roles(FusedMultiHead& m) {
  return {m.W_Q, m.W_K, m.W_V, m.W_O};
}

void check_input(std::size_t d_model, const Tensor3& x, const Tensor3* mask) {
  if (x.shape(2) != d_model) {
    throw Error(
        ErrorKind::bad_size, "multi_head",
        fmt::format("x {} does not fit a layer of width D = {}", shape_string_of(x), d_model));
  }
  if (mask != nullptr && (mask->shape(0) != x.shape(0) || mask->shape(1) != x.shape(1) ||
                          mask->shape(2) != x.shape(1))) {
    throw Error(
        ErrorKind::bad_size, "multi_head",
        fmt::format("mask {} does not fit x {}: expected ({}, {}, {})", shape_string_of(*mask),
                    shape_string_of(x), x.shape(0), x.shape(1), x.shape(1)));
  }
}

void check_grad(std::size_t heads, std::size_t grad_heads) {
  if (heads != grad_heads)
    throw Error(ErrorKind::bad_size, "multi_head_backward",
                "the gradient is not a layer of the same form and sizes");
}
}  // namespace

namespace {
constexpr Named<MultiHeadVariant> kVariantNames[] = {{MultiHeadVariant::narrow, "narrow"},
                                                     {MultiHeadVariant::wide, "wide"},
                                                     {MultiHeadVariant::book, "book"},
                                                     {MultiHeadVariant::fused, "fused"}};
}  // namespace

std::string_view variant_name(MultiHeadVariant variant) {
  return name_in(kVariantNames, variant);
}

std::optional<MultiHeadVariant> multi_head_variant(std::string_view name) {
  return value_in(kVariantNames, name);
}

std::size_t head_size(MultiHeadVariant variant, std::size_t d_model, std::size_t heads) {
  if (d_model == 0 || heads == 0) {
    throw Error(ErrorKind::bad_size, "multi_head",
                fmt::format("d_model={} and heads={} must both be at least 1", d_model, heads));
  }
  if (variant == MultiHeadVariant::wide) return d_model;
  return head_size(d_model, heads, "multi_head",
                   fmt::format("the {} variant splits D into H heads of D/H; give <heads> that "
                               "divides D, or <variant> wide, whose heads are D wide",
                               variant_name(variant)));
}

namespace {
Seed004MultiHead init_seed004(Rng& rng, std::size_t d_model, std::size_t heads, std::size_t hs) {
  Seed004MultiHead m;
  m.heads = heads;
  m.tokeys = init_linear(rng, d_model, hs * heads, false);
  m.toqueries = init_linear(rng, d_model, hs * heads, false);
  m.tovalues = init_linear(rng, d_model, hs * heads, false);
  m.unifyheads = init_linear(rng, hs * heads, d_model, true);
  return m;
}
}  // namespace

BookMultiHead init_book_multi_head(Rng& rng, std::size_t d_model, std::size_t heads) {
  const std::size_t hs = head_size(MultiHeadVariant::book, d_model, heads);
  BookMultiHead m;
  for (std::size_t h = 0; h < heads; ++h)
    m.heads.push_back(init_attention_head(rng, d_model, hs));
  m.output_linear = init_linear(rng, d_model, d_model, true);
  return m;
}

MultiHeadAttention init_multi_head(Rng& rng, MultiHeadVariant variant, std::size_t d_model,
                                   std::size_t heads) {
  const std::size_t hs = head_size(variant, d_model, heads);
  switch (variant) {
    case MultiHeadVariant::narrow:
      return NarrowMultiHead{init_seed004(rng, d_model, heads, hs)};
    case MultiHeadVariant::wide:
      return WideMultiHead{init_seed004(rng, d_model, heads, hs)};
    case MultiHeadVariant::book:
      return init_book_multi_head(rng, d_model, heads);
    case MultiHeadVariant::fused:
      break;
  }
  FusedMultiHead m;
  m.heads = heads;
  m.W_Q = init_linear(rng, d_model, d_model, false);
  m.W_K = init_linear(rng, d_model, d_model, false);
  m.W_V = init_linear(rng, d_model, d_model, false);
  m.W_O = init_linear(rng, d_model, d_model, false);
  return m;
}

MultiHeadVariant variant_of(const MultiHeadAttention& layer) {
  constexpr MultiHeadVariant order[] = {MultiHeadVariant::narrow, MultiHeadVariant::wide,
                                        MultiHeadVariant::book, MultiHeadVariant::fused};
  return order[layer.index()];
}

namespace {
const Linear& output_projection(const Seed004MultiHead& m) {
  return m.unifyheads;
}
const Linear& output_projection(const BookMultiHead& m) {
  return m.output_linear;
}
const Linear& output_projection(const FusedMultiHead& m) {
  return m.W_O;
}
std::size_t heads_of(const Seed004MultiHead& m) {
  return m.heads;
}
std::size_t heads_of(const BookMultiHead& m) {
  return m.heads.size();
}
std::size_t heads_of(const FusedMultiHead& m) {
  return m.heads;
}
}  // namespace

std::size_t model_width(const MultiHeadAttention& layer) {
  return std::visit([](const auto& m) { return output_projection(m).weight.shape(0); }, layer);
}

std::size_t head_count(const MultiHeadAttention& layer) {
  return std::visit([](const auto& m) { return heads_of(m); }, layer);
}

namespace {
// The book variant's tree with its list of heads still empty.
Module book_without_heads(std::size_t d_model) {
  return Module{"MultiHeadAttention",
                "",
                {},
                {Module{"ModuleList", "heads", {}, {}},
                 linear_module("output_linear", d_model, d_model, true)}};
}
}  // namespace

Module describe_multi_head(MultiHeadVariant variant, std::size_t d_model, std::size_t heads) {
  const std::size_t hs = head_size(variant, d_model, heads);
  // torch counts parameters in int64: the wide variant's 4·D·D·H + D passes 2^63-1 first.
  const std::string what = fmt::format("the {} MultiHeadAttention with D = {} and H = {}",
                                       variant_name(variant), d_model, heads);
  const std::vector<std::string> sizes = variant == MultiHeadVariant::wide
                                             ? std::vector<std::string>{"D", "H"}
                                             : std::vector<std::string>{"D"};
  // hs·H first: a size_t that wrapped around would describe a smaller module.
  check_parameter_count(Count(hs) * Count(heads), "describe_multi_head", what, sizes);
  Module m{"MultiHeadAttention", "", {}, {}};
  switch (variant) {
    case MultiHeadVariant::wide:
    case MultiHeadVariant::narrow:
      m.children = {linear_module("tokeys", d_model, hs * heads, false),
                    linear_module("toqueries", d_model, hs * heads, false),
                    linear_module("tovalues", d_model, hs * heads, false),
                    linear_module("unifyheads", hs * heads, d_model, true)};
      break;
    case MultiHeadVariant::book: {
      // One module per head: the tree itself may not fit.
      const Module last = describe_attention_head(d_model, hs, std::to_string(heads - 1));
      check_budget("describe_multi_head",
                   {planned_tree("the heads' module tree", module_size(last), heads, "H ")});
      m = book_without_heads(d_model);
      for (std::size_t h = 0; h < heads; ++h)
        m.children.front().children.push_back(
            describe_attention_head(d_model, hs, std::to_string(h)));
      break;
    }
    case MultiHeadVariant::fused:
      // Seed 001 registers its dropout first; it has no parameters.
      m.children = {leaf_module("Dropout", "dropout"),
                    linear_module("W_Q", d_model, d_model, false),
                    linear_module("W_K", d_model, d_model, false),
                    linear_module("W_V", d_model, d_model, false),
                    linear_module("W_O", d_model, d_model, false)};
      break;
  }
  check_parameter_count(parameter_count(m), "describe_multi_head", what, sizes);
  return m;
}

ModuleSize multi_head_size(MultiHeadVariant variant, std::size_t d_model, std::size_t heads) {
  if (variant != MultiHeadVariant::book)
    return module_size(describe_multi_head(variant, d_model, heads));
  const std::size_t hs = head_size(variant, d_model, heads);
  return module_size(book_without_heads(d_model)) +
         module_size(describe_attention_head(d_model, hs, std::to_string(heads - 1))) *
             Count(heads);
}

void visit_parameters(Seed004MultiHead& m, const ParameterVisitor& visit) {
  visit_parameters(m.tokeys, "tokeys.", visit);
  visit_parameters(m.toqueries, "toqueries.", visit);
  visit_parameters(m.tovalues, "tovalues.", visit);
  visit_parameters(m.unifyheads, "unifyheads.", visit);
}

void visit_parameters(BookMultiHead& m, const ParameterVisitor& visit) {
  for (std::size_t h = 0; h < m.heads.size(); ++h)
    visit_parameters(m.heads[h], fmt::format("heads.{}.", h), visit);
  visit_parameters(m.output_linear, "output_linear.", visit);
}

void visit_parameters(FusedMultiHead& m, const ParameterVisitor& visit) {
  visit_parameters(m.W_Q, "W_Q.", visit);
  visit_parameters(m.W_K, "W_K.", visit);
  visit_parameters(m.W_V, "W_V.", visit);
  visit_parameters(m.W_O, "W_O.", visit);
}

namespace {
// Seed 004's and the fused form: every role projected once, viewed as H heads folded into the
// batch.
MultiHeadSteps forward_all_heads(const Roles& r, const Tensor3& x, const Tensor3* mask) {
  check_input(r.output.weight.shape(0), x, mask);
  const std::size_t heads = r.heads;
  const Tensor3 mask_per_head = mask != nullptr ? repeat_mask(*mask, heads) : Tensor3();
  const AttentionSteps a = scaled_dot_product_attention(
      split_heads(forward(r.queries, x), heads), split_heads(forward(r.keys, x), heads),
      split_heads(forward(r.values, x), heads), mask != nullptr ? &mask_per_head : nullptr);
  MultiHeadSteps s;
  s.queries = as_4d(a.queries, heads);
  s.keys = as_4d(a.keys, heads);
  s.values = as_4d(a.values, heads);
  s.scores = as_4d(a.scaled_scores, heads);
  s.weights = as_4d(a.weights, heads);
  s.concatenated = merge_heads(a.output, heads);  // (B*H,T,hs) -> (B,T,H*hs)
  zero_heads(s.concatenated, r.ablated, heads);
  s.output = forward(r.output, s.concatenated);  // (B,T,H*hs) -> (B,T,D)
  return s;
}

// (B,H,T,X) as (B*H,T,X).
Tensor3 fold_heads(const Tensor4& x) {
  Tensor3 out({x.shape(0) * x.shape(1), x.shape(2), x.shape(3)});
  std::copy(x.begin(), x.end(), out.begin());
  return out;
}

// Head h of (B*H,T,X): (B,T,X).
Tensor3 one_head(const Tensor3& folded, std::size_t heads, std::size_t h) {
  const std::size_t batch = folded.shape(0) / heads, rows = folded.shape(1) * folded.shape(2);
  Tensor3 out({batch, folded.shape(1), folded.shape(2)});
  for (std::size_t b = 0; b < batch; ++b)
    std::copy(folded.data() + (b * heads + h) * rows, folded.data() + (b * heads + h + 1) * rows,
              out.data() + b * rows);
  return out;
}

// The heads' attention backward, every head at once: dQ, dK, dV (B*H,T,hs) from dY through the
// output projection.
AttentionGradients backward_heads(const Linear& output, const MultiHeadSteps& s,
                                  const Tensor3& d_output, Linear& d_output_linear,
                                  std::size_t heads, const HeadMask& ablated) {
  Tensor3 d_concatenated = backward(output, s.concatenated, d_output, d_output_linear);
  zero_heads(d_concatenated, ablated, heads);  // an ablated head's output reaches nothing
  return attention_backward(fold_heads(s.queries), fold_heads(s.keys), fold_heads(s.values),
                            fold_heads(s.weights), split_heads(d_concatenated, heads));
}

Tensor3 backward_all_heads(const Roles& r, const Tensor3& x, const MultiHeadSteps& s,
                           const Tensor3& d_output, const GradRoles& d) {
  check_input(r.output.weight.shape(0), x, nullptr);
  const AttentionGradients g = backward_heads(r.output, s, d_output, d.output, r.heads, r.ablated);
  Tensor3 d_x = backward(r.queries, x, merge_heads(g.queries, r.heads), d.queries);
  d_x += backward(r.keys, x, merge_heads(g.keys, r.heads), d.keys);
  d_x += backward(r.values, x, merge_heads(g.values, r.heads), d.values);
  return d_x;
}
}  // namespace

MultiHeadSteps forward(const Seed004MultiHead& m, const Tensor3& x, const Tensor3* mask) {
  return forward_all_heads(roles(m), x, mask);
}

MultiHeadSteps forward(const FusedMultiHead& m, const Tensor3& x, const Tensor3* mask) {
  return forward_all_heads(roles(m), x, mask);
}

MultiHeadSteps forward(const BookMultiHead& m, const Tensor3& x, const Tensor3* mask) {
  check_input(m.output_linear.weight.shape(0), x, mask);
  if (m.heads.empty())
    throw Error(ErrorKind::bad_value, "multi_head", "the book's layer has no heads");
  // Each head is its own module on the whole input; torch.cat puts their outputs side by side.
  const std::size_t heads = m.heads.size();
  std::vector<AttentionSteps> per_head;
  for (const AttentionHead& head : m.heads)
    per_head.push_back(forward(head, x, mask));
  const std::size_t batch = x.shape(0), tokens = x.shape(1), hs = per_head.front().output.shape(2);
  MultiHeadSteps s;
  s.queries = Tensor4({batch, heads, tokens, hs});
  s.keys = s.values = s.queries;
  s.scores = s.weights = Tensor4({batch, heads, tokens, tokens});
  s.concatenated = Tensor3({batch, tokens, heads * hs});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t t = 0; t < tokens; ++t) {
        for (std::size_t i = 0; i < hs; ++i) {
          s.queries(b, h, t, i) = per_head[h].queries(b, t, i);
          s.keys(b, h, t, i) = per_head[h].keys(b, t, i);
          s.values(b, h, t, i) = per_head[h].values(b, t, i);
          s.concatenated(b, t, h * hs + i) = per_head[h].output(b, t, i);
        }
        for (std::size_t j = 0; j < tokens; ++j) {
          s.scores(b, h, t, j) = per_head[h].scaled_scores(b, t, j);
          s.weights(b, h, t, j) = per_head[h].weights(b, t, j);
        }
      }
  zero_heads(s.concatenated, m.ablated, heads);
  s.output = forward(m.output_linear, s.concatenated);  // (B,T,D)
  return s;
}

Tensor3 backward(const Seed004MultiHead& m, const Tensor3& x, const MultiHeadSteps& s,
                 const Tensor3& d_output, Seed004MultiHead& grad) {
  check_grad(m.heads, grad.heads);
  return backward_all_heads(roles(m), x, s, d_output, roles(grad));
}

Tensor3 backward(const FusedMultiHead& m, const Tensor3& x, const MultiHeadSteps& s,
                 const Tensor3& d_output, FusedMultiHead& grad) {
  check_grad(m.heads, grad.heads);
  return backward_all_heads(roles(m), x, s, d_output, roles(grad));
}

Tensor3 backward(const BookMultiHead& m, const Tensor3& x, const MultiHeadSteps& s,
                 const Tensor3& d_output, BookMultiHead& grad) {
  check_input(m.output_linear.weight.shape(0), x, nullptr);
  const std::size_t heads = m.heads.size();
  check_grad(heads, grad.heads.size());
  const AttentionGradients g =
      backward_heads(m.output_linear, s, d_output, grad.output_linear, heads, m.ablated);
  // Each head's q, k, v saw the whole input: their input gradients add up.
  Tensor3 d_x = xt::zeros<float>(x.shape());
  for (std::size_t h = 0; h < heads; ++h) {
    const AttentionHead& head = m.heads[h];
    AttentionHead& d_head = grad.heads[h];
    d_x += backward(head.q, x, one_head(g.queries, heads, h), d_head.q);
    d_x += backward(head.k, x, one_head(g.keys, heads, h), d_head.k);
    d_x += backward(head.v, x, one_head(g.values, heads, h), d_head.v);
  }
  return d_x;
}

void zero_ablated_heads(Tensor3& concatenated, const HeadMask& ablated, std::size_t heads) {
  zero_heads(concatenated, ablated, heads);
}

namespace {
void mark_ablated(HeadMask& ablated, std::size_t heads, std::size_t head) {
  if (head >= heads) {
    throw Error(ErrorKind::bad_value, "ablate_head",
                fmt::format("head {} does not exist: the layer has {} head{}, 0 to {}", head, heads,
                            heads == 1 ? "" : "s", heads - 1))
        .about("ablate");
  }
  ablated.resize(heads, false);
  ablated[head] = true;
}
}  // namespace

void ablate_head(BookMultiHead& layer, std::size_t head) {
  mark_ablated(layer.ablated, layer.heads.size(), head);
}
void ablate_head(FusedMultiHead& layer, std::size_t head) {
  mark_ablated(layer.ablated, layer.heads, head);
}
void ablate_head(MultiHeadAttention& layer, std::size_t head) {
  std::visit([&](auto& m) { mark_ablated(m.ablated, heads_of(m), head); }, layer);
}

Tensor3 split_into_heads(const Tensor3& x, std::size_t heads) {
  return split_heads(x, heads);
}
Tensor3 merge_from_heads(const Tensor3& y, std::size_t heads) {
  return merge_heads(y, heads);
}

MultiHeadSteps forward(const FusedMultiHead& m, const Tensor3& x, const Tensor3& memory,
                       const ScoreMask* mask) {
  const std::size_t d = m.W_O.weight.shape(0), heads = m.heads;
  if (x.shape(2) != d || memory.shape(2) != d || memory.shape(0) != x.shape(0)) {
    throw Error(ErrorKind::bad_size, "multi_head",
                fmt::format("x {} and memory {} do not fit a layer of width D = {}: give (B,T,{}) "
                            "and (B,S,{})",
                            shape_string_of(x), shape_string_of(memory), d, d, d));
  }
  const std::size_t batch = x.shape(0), t = x.shape(1), s_count = memory.shape(1);
  if (mask != nullptr && mask->keep.shape() != Tensor4::shape_type{batch, heads, t, s_count}) {
    throw Error(ErrorKind::bad_size, "multi_head",
                fmt::format("mask {} does not fit scores ({}, {}, {}, {})",
                            shape_string_of(mask->keep), batch, heads, t, s_count));
  }
  const Tensor3 queries = split_heads(forward(m.W_Q, x), heads);      // (B*H,T,hs)
  const Tensor3 keys = split_heads(forward(m.W_K, memory), heads);    // (B*H,S,hs)
  const Tensor3 values = split_heads(forward(m.W_V, memory), heads);  // (B*H,S,hs)
  // query @ key.transpose(-2, -1) / math.sqrt(d_k), masked_fill, softmax, @ value
  Tensor3 scores =
      batched_matmul_transposed(queries, keys) / std::sqrt(static_cast<float>(keys.shape(2)));
  if (mask != nullptr) apply_mask(*mask, scores);
  const Tensor3 weights = softmax(scores);
  MultiHeadSteps s;
  s.queries = as_4d(queries, heads);
  s.keys = as_4d(keys, heads);
  s.values = as_4d(values, heads);
  s.scores = as_4d(scores, heads);
  s.weights = as_4d(weights, heads);
  s.concatenated = merge_heads(Tensor3(batched_matmul(weights, values)), heads);
  zero_heads(s.concatenated, m.ablated, heads);
  s.output = forward(m.W_O, s.concatenated);
  return s;
}

CrossAttentionGradients backward(const FusedMultiHead& m, const Tensor3& x, const Tensor3& memory,
                                 const MultiHeadSteps& s, const ScoreMask* mask,
                                 const Tensor3& d_output, FusedMultiHead& grad) {
  check_grad(m.heads, grad.heads);
  Tensor3 d_concatenated = backward(m.W_O, s.concatenated, d_output, grad.W_O);
  zero_heads(d_concatenated, m.ablated, m.heads);
  const Tensor3 keep = mask != nullptr ? fold_heads(mask->keep) : Tensor3();
  const AttentionGradients g = attention_backward(
      fold_heads(s.queries), fold_heads(s.keys), fold_heads(s.values), fold_heads(s.weights),
      split_heads(d_concatenated, m.heads), mask != nullptr ? &keep : nullptr);
  CrossAttentionGradients out;
  out.x = backward(m.W_Q, x, merge_heads(g.queries, m.heads), grad.W_Q);
  out.memory = backward(m.W_K, memory, merge_heads(g.keys, m.heads), grad.W_K);
  out.memory += backward(m.W_V, memory, merge_heads(g.values, m.heads), grad.W_V);
  return out;
}

void visit_parameters(MultiHeadAttention& layer, const ParameterVisitor& visit) {
  std::visit([&](auto& m) { visit_parameters(m, visit); }, layer);
}

MultiHeadSteps forward(const MultiHeadAttention& layer, const Tensor3& x, const Tensor3* mask) {
  return std::visit([&](const auto& m) { return forward(m, x, mask); }, layer);
}

Tensor3 backward(const MultiHeadAttention& layer, const Tensor3& x, const MultiHeadSteps& steps,
                 const Tensor3& d_output, MultiHeadAttention& grad) {
  if (grad.index() != layer.index())
    throw Error(ErrorKind::bad_size, "multi_head_backward",
                "the gradient is not a layer of the same form and sizes");
  return std::visit(
      [&](const auto& m) {
        using Form = std::decay_t<decltype(m)>;
        return backward(m, x, steps, d_output, std::get<Form>(grad));
      },
      layer);
}

namespace {
Tensor3d forward_float64_all_heads(const Roles& r, const Tensor3& x, const Tensor3* mask) {
  const std::size_t heads = r.heads;
  const Tensor3d x64 = xt::cast<double>(x);
  const Tensor3d queries = forward_float64(r.queries, x64);  // (B,T,H*hs)
  const Tensor3d keys = forward_float64(r.keys, x64);
  const Tensor3d values = forward_float64(r.values, x64);
  const Tensor3 mask_per_head = mask != nullptr ? repeat_mask(*mask, heads) : Tensor3();
  const double divisor = std::sqrt(static_cast<double>(queries.shape(2) / heads));  // √hs
  const Tensor3d y = attention_float64(split_heads(queries, heads), split_heads(keys, heads),
                                       split_heads(values, heads), divisor,
                                       mask != nullptr ? &mask_per_head : nullptr);
  Tensor3d concatenated = merge_heads(y, heads);  // (B*H,T,hs) -> (B,T,H*hs)
  zero_heads(concatenated, r.ablated, heads);
  return forward_float64(r.output, concatenated);  // (B,T,H*hs) -> (B,T,D)
}

Tensor3d forward_float64_form(const Seed004MultiHead& m, const Tensor3& x, const Tensor3* mask) {
  return forward_float64_all_heads(roles(m), x, mask);
}

Tensor3d forward_float64_form(const FusedMultiHead& m, const Tensor3& x, const Tensor3* mask) {
  return forward_float64_all_heads(roles(m), x, mask);
}

Tensor3d forward_float64_form(const BookMultiHead& m, const Tensor3& x, const Tensor3* mask) {
  const std::size_t heads = m.heads.size(), hs = m.heads.front().k.weight.shape(0);
  Tensor3d concatenated({x.shape(0), x.shape(1), heads * hs});  // torch.cat of the heads
  for (std::size_t h = 0; h < heads; ++h) {
    const Tensor3d y = forward_float64(m.heads[h], x, mask);  // (B,T,hs)
    xt::view(concatenated, xt::all(), xt::all(), xt::range(h * hs, (h + 1) * hs)) = y;
  }
  zero_heads(concatenated, m.ablated, heads);
  return forward_float64(m.output_linear, concatenated);
}
}  // namespace

Tensor3d forward_float64(const MultiHeadAttention& layer, const Tensor3& x, const Tensor3* mask) {
  check_input(model_width(layer), x, mask);
  return std::visit([&](const auto& m) { return forward_float64_form(m, x, mask); }, layer);
}

Tensor3 forward_with_seed001_bug(const FusedMultiHead& m, const Tensor3& x, const Tensor3* mask) {
  check_input(m.W_O.weight.shape(0), x, mask);
  const Tensor3 mask_per_head = mask != nullptr ? repeat_mask(*mask, m.heads) : Tensor3();
  const Tensor3 keys = split_heads(forward(m.W_K, x), m.heads);
  const AttentionSteps a =
      scaled_dot_product_attention(split_heads(forward(m.W_Q, x), m.heads), keys, keys,
                                   mask != nullptr ? &mask_per_head : nullptr);
  return forward(m.W_O, merge_heads(a.output, m.heads));  // attention_weights @ key
}

MemoryPlan plan_multi_head(MultiHeadVariant variant, std::size_t batch, std::size_t tokens,
                           std::size_t d_model, std::size_t heads) {
  const std::size_t hs = head_size(variant, d_model, heads);
  return {{"Q", {batch, heads, tokens, hs}, "B H T hs"},
          {"K", {batch, heads, tokens, hs}, "B H T hs"},
          {"V", {batch, heads, tokens, hs}, "B H T hs"},
          {"the scores", {batch, heads, tokens, tokens}, "B H T T"},
          {"the weights", {batch, heads, tokens, tokens}, "B H T T"},
          {"the heads' outputs side by side", {batch, tokens, heads * hs}, "B T H/hs"},
          {"the output", {batch, tokens, d_model}, "B T D"}};
}

MemoryPlan plan_multi_head_temporaries(MultiHeadVariant variant, std::size_t batch,
                                       std::size_t tokens, std::size_t d_model, std::size_t heads,
                                       bool masked) {
  const std::size_t hs = head_size(variant, d_model, heads);
  // Every head's AttentionSteps: Q, K, V, the output, and three (T,T) tensors each.
  MemoryPlan plan = {{"the heads' Q, K, V and outputs", {4, batch, heads, tokens, hs}, " B H T hs"},
                     {"the heads' scores, scaled scores and weights",
                      {3, batch, heads, tokens, tokens},
                      " B H T T"}};
  if (variant == MultiHeadVariant::book) {
    plan.push_back({"one head's projections", {3, batch, tokens, hs}, " B T hs"});
  } else {
    plan.push_back({"the projections", {3, batch, tokens, heads * hs}, " B T H/hs"});
    plan.push_back(
        {"the projections split into heads", {3, batch, heads, tokens, hs}, " B H T hs"});
    if (masked)
      plan.push_back({"the mask for each head", {batch, heads, tokens, tokens}, "B H T T"});
  }
  return plan;
}

MemoryPlan plan_multi_head_float64(MultiHeadVariant variant, std::size_t batch, std::size_t tokens,
                                   std::size_t d_model, std::size_t heads) {
  const std::size_t hs = head_size(variant, d_model, heads);
  if (variant == MultiHeadVariant::book) {
    MemoryPlan plan = plan_attention_float64(batch, tokens, d_model, hs);  // one head at a time
    plan.push_back({"the heads' outputs and the output in float64",
                    {batch, tokens, heads * hs + d_model},
                    "B T H/hs/D",
                    8});
    return plan;
  }
  return {
      {"X and the output in float64", {2, batch, tokens, d_model}, " B T D", 8},
      {"Q, K, V, split and merged, in float64", {8, batch, tokens, heads * hs}, " B T H/hs", 8}};
}

std::vector<LayerInfo> trace_multi_head(MultiHeadVariant variant, std::size_t d_model,
                                        std::size_t heads, const Shape& shape) {
  const std::size_t hs = head_size(variant, d_model, heads);
  check_budget("trace_multi_head", planned_summary(multi_head_size(variant, d_model, heads),
                                                   variant == MultiHeadVariant::book ? "H" : ""));
  const Module m = describe_multi_head(variant, d_model, heads);
  const Shape projected =
      linear_output(shape, variant == MultiHeadVariant::fused ? d_model : hs * heads);
  Trace trace;
  trace.call(m, shape, shape);
  trace.enter();
  switch (variant) {
    case MultiHeadVariant::wide:
    case MultiHeadVariant::narrow:
      for (const char* name : {"toqueries", "tokeys", "tovalues"})
        trace.call(child(m, name), shape, projected);
      trace.call(child(m, "unifyheads"), projected, shape);
      break;
    case MultiHeadVariant::book: {
      const Module& list = child(m, "heads");
      trace.container(list);
      trace.enter();
      for (const Module& head : list.children)
        trace_attention_head(trace, head, shape);
      trace.leave();
      trace.call(child(m, "output_linear"), linear_output(shape, d_model), shape);
      break;
    }
    case MultiHeadVariant::fused: {
      for (const char* name : {"W_Q", "W_K", "W_V"})
        trace.call(child(m, name), shape, projected);
      const Shape weights = {shape[0], heads, shape[1], shape[1]};  // dropout(attention_weights)
      trace.call(child(m, "dropout"), weights, weights);
      trace.call(child(m, "W_O"), shape, shape);
      break;
    }
  }
  trace.leave();
  return trace.layers();
}

FusedMultiHead stack_book_heads(const BookMultiHead& book) {
  const std::size_t d = book.output_linear.weight.shape(0), heads = book.heads.size(),
                    hs = d / heads;
  FusedMultiHead fused;
  fused.heads = heads;
  auto stack = [&](auto member) {
    Linear l{Tensor2({d, d}), Tensor1({0}), false};
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t r = 0; r < hs; ++r)
        for (std::size_t c = 0; c < d; ++c)
          l.weight(h * hs + r, c) = (book.heads[h].*member).weight(r, c);
    return l;
  };
  fused.W_Q = stack(&AttentionHead::q);
  fused.W_K = stack(&AttentionHead::k);
  fused.W_V = stack(&AttentionHead::v);
  fused.W_O = Linear{book.output_linear.weight, Tensor1({0}), false};
  return fused;
}

}  // namespace attn
