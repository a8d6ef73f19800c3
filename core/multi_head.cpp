#include "multi_head.hpp"

#include <cmath>

#include <xtensor/xview.hpp>

#include "count.hpp"
#include "matmul.hpp"
#include "softmax.hpp"

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

struct Projected {
  Tensor3 queries, keys, values;  // (B,T,H*hs)
  const Linear* output = nullptr;
};

// Projections for the variants that compute all heads at once (wide, narrow, fused).
Projected project(const MultiHeadAttention& m, const Tensor3& x) {
  if (m.variant == MultiHeadVariant::fused) {
    return {forward(m.W_Q, x), forward(m.W_K, x), forward(m.W_V, x), &m.W_O};
  }
  return {forward(m.toqueries, x), forward(m.tokeys, x), forward(m.tovalues, x), &m.unifyheads};
}

void check_input(const MultiHeadAttention& m, const Tensor3& x, const Tensor3* mask) {
  if (x.shape(2) != m.d_model) {
    throw Error("multi_head", fmt::format("x {} does not fit a layer of width D = {}",
                                          shape_string_of(x), m.d_model));
  }
  if (mask != nullptr && (mask->shape(0) != x.shape(0) || mask->shape(1) != x.shape(1) ||
                          mask->shape(2) != x.shape(1))) {
    throw Error("multi_head", fmt::format("mask {} does not fit x {}: expected ({}, {}, {})",
                                          shape_string_of(*mask), shape_string_of(x), x.shape(0),
                                          x.shape(1), x.shape(1)));
  }
}
}  // namespace

std::string_view variant_name(MultiHeadVariant variant) {
  switch (variant) {
    case MultiHeadVariant::narrow:
      return "narrow";
    case MultiHeadVariant::wide:
      return "wide";
    case MultiHeadVariant::book:
      return "book";
    case MultiHeadVariant::fused:
      return "fused";
  }
  return "?";
}

std::optional<MultiHeadVariant> multi_head_variant(std::string_view name) {
  for (MultiHeadVariant v : kMultiHeadVariants)
    if (variant_name(v) == name) return v;
  return std::nullopt;
}

std::size_t head_size(MultiHeadVariant variant, std::size_t d_model, std::size_t heads) {
  if (d_model == 0 || heads == 0) {
    throw Error("multi_head",
                fmt::format("d_model={} and heads={} must both be at least 1", d_model, heads));
  }
  if (variant == MultiHeadVariant::wide) return d_model;
  if (d_model % heads != 0) {
    throw Error(
        ErrorKind::bad_size, "multi_head",
        fmt::format(
            "d_model={} is not divisible by heads={}: the {} variant splits D into H heads of D/H; "
            "give <heads> that divides D, or <variant> wide, whose heads are D wide",
            d_model, heads, variant_name(variant)))
        .about("heads")
        .driven_by({"D", "H"});
  }
  return d_model / heads;
}

MultiHeadAttention init_multi_head(Rng& rng, MultiHeadVariant variant, std::size_t d_model,
                                   std::size_t heads) {
  const std::size_t hs = head_size(variant, d_model, heads);
  MultiHeadAttention m;
  m.variant = variant;
  m.d_model = d_model;
  m.heads = heads;
  switch (variant) {
    case MultiHeadVariant::wide:
    case MultiHeadVariant::narrow:
      m.tokeys = init_linear(rng, d_model, hs * heads, false);
      m.toqueries = init_linear(rng, d_model, hs * heads, false);
      m.tovalues = init_linear(rng, d_model, hs * heads, false);
      m.unifyheads = init_linear(rng, hs * heads, d_model, true);
      break;
    case MultiHeadVariant::book:
      for (std::size_t h = 0; h < heads; ++h)
        m.head_list.push_back(init_attention_head(rng, d_model, hs));
      m.output_linear = init_linear(rng, d_model, d_model, true);
      break;
    case MultiHeadVariant::fused:
      m.W_Q = init_linear(rng, d_model, d_model, false);
      m.W_K = init_linear(rng, d_model, d_model, false);
      m.W_V = init_linear(rng, d_model, d_model, false);
      m.W_O = init_linear(rng, d_model, d_model, false);
      break;
  }
  return m;
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

void visit_parameters(MultiHeadAttention& m, const ParameterVisitor& visit) {
  switch (m.variant) {
    case MultiHeadVariant::wide:
    case MultiHeadVariant::narrow:
      visit_parameters(m.tokeys, "tokeys.", visit);
      visit_parameters(m.toqueries, "toqueries.", visit);
      visit_parameters(m.tovalues, "tovalues.", visit);
      visit_parameters(m.unifyheads, "unifyheads.", visit);
      break;
    case MultiHeadVariant::book:
      for (std::size_t h = 0; h < m.head_list.size(); ++h) {
        visit_parameters(m.head_list[h], fmt::format("heads.{}.", h), visit);
      }
      visit_parameters(m.output_linear, "output_linear.", visit);
      break;
    case MultiHeadVariant::fused:
      visit_parameters(m.W_Q, "W_Q.", visit);
      visit_parameters(m.W_K, "W_K.", visit);
      visit_parameters(m.W_V, "W_V.", visit);
      visit_parameters(m.W_O, "W_O.", visit);
      break;
  }
}

MultiHeadSteps forward(const MultiHeadAttention& m, const Tensor3& x, const Tensor3* mask) {
  check_input(m, x, mask);
  const std::size_t heads = m.heads;
  MultiHeadSteps s;
  if (m.variant == MultiHeadVariant::book) {
    // Each head is its own module on the whole input; torch.cat puts their outputs side by side.
    std::vector<AttentionSteps> per_head;
    for (const AttentionHead& head : m.head_list)
      per_head.push_back(forward(head, x, mask));
    const std::size_t batch = x.shape(0), tokens = x.shape(1),
                      hs = per_head.front().output.shape(2);
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
    s.output = forward(m.output_linear, s.concatenated);  // (B,T,D)
    return s;
  }
  // wide, narrow, fused: one projection per role, viewed as H heads folded into the batch.
  const Projected p = project(m, x);
  const Tensor3 mask_per_head = mask != nullptr ? repeat_mask(*mask, heads) : Tensor3();
  const AttentionSteps a = scaled_dot_product_attention(
      split_heads(p.queries, heads), split_heads(p.keys, heads), split_heads(p.values, heads),
      mask != nullptr ? &mask_per_head : nullptr);
  s.queries = as_4d(a.queries, heads);
  s.keys = as_4d(a.keys, heads);
  s.values = as_4d(a.values, heads);
  s.scores = as_4d(a.scaled_scores, heads);
  s.weights = as_4d(a.weights, heads);
  s.concatenated = merge_heads(a.output, heads);  // (B*H,T,hs) -> (B,T,H*hs)
  s.output = forward(*p.output, s.concatenated);  // (B,T,H*hs) -> (B,T,D)
  return s;
}

namespace {
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
}  // namespace

Tensor3 backward(const MultiHeadAttention& m, const Tensor3& x, const MultiHeadSteps& s,
                 const Tensor3& d_output, MultiHeadAttention& grad) {
  check_input(m, x, nullptr);
  if (grad.variant != m.variant || grad.heads != m.heads || grad.d_model != m.d_model)
    throw Error("multi_head_backward", "the gradient is not a layer of the same variant and sizes");
  const std::size_t heads = m.heads;
  const bool book = m.variant == MultiHeadVariant::book;
  const bool fused = m.variant == MultiHeadVariant::fused;
  const Linear& output = book ? m.output_linear : fused ? m.W_O : m.unifyheads;
  Linear& d_output_linear = book ? grad.output_linear : fused ? grad.W_O : grad.unifyheads;
  const Tensor3 d_concatenated = backward(output, s.concatenated, d_output, d_output_linear);
  // Every head at once, folded into the batch: (B*H,T,hs).
  const AttentionGradients g =
      attention_backward(fold_heads(s.queries), fold_heads(s.keys), fold_heads(s.values),
                         fold_heads(s.weights), split_heads(d_concatenated, heads));
  if (book) {
    Tensor3 d_x = xt::zeros<float>(x.shape());
    for (std::size_t h = 0; h < heads; ++h) {
      const AttentionHead& head = m.head_list[h];
      AttentionHead& d_head = grad.head_list[h];
      d_x += backward(head.q, x, one_head(g.queries, heads, h), d_head.q);
      d_x += backward(head.k, x, one_head(g.keys, heads, h), d_head.k);
      d_x += backward(head.v, x, one_head(g.values, heads, h), d_head.v);
    }
    return d_x;
  }
  const auto role = [&](const Linear& fused_role, const Linear& split_role) -> const Linear& {
    return fused ? fused_role : split_role;
  };
  Linear& d_queries = fused ? grad.W_Q : grad.toqueries;
  Linear& d_keys = fused ? grad.W_K : grad.tokeys;
  Linear& d_values = fused ? grad.W_V : grad.tovalues;
  Tensor3 d_x = backward(role(m.W_Q, m.toqueries), x, merge_heads(g.queries, heads), d_queries);
  d_x += backward(role(m.W_K, m.tokeys), x, merge_heads(g.keys, heads), d_keys);
  d_x += backward(role(m.W_V, m.tovalues), x, merge_heads(g.values, heads), d_values);
  return d_x;
}

Tensor3d forward_float64(const MultiHeadAttention& m, const Tensor3& x, const Tensor3* mask) {
  check_input(m, x, mask);
  const std::size_t heads = m.heads;
  if (m.variant == MultiHeadVariant::book) {
    const std::size_t hs = m.head_list.front().k.weight.shape(0);
    Tensor3d concatenated({x.shape(0), x.shape(1), heads * hs});  // torch.cat of the heads
    for (std::size_t h = 0; h < heads; ++h) {
      const Tensor3d y = forward_float64(m.head_list[h], x, mask);  // (B,T,hs)
      xt::view(concatenated, xt::all(), xt::all(), xt::range(h * hs, (h + 1) * hs)) = y;
    }
    return forward_float64(m.output_linear, concatenated);
  }
  const Tensor3d x64 = xt::cast<double>(x);
  const bool fused = m.variant == MultiHeadVariant::fused;
  const Tensor3d queries = forward_float64(fused ? m.W_Q : m.toqueries, x64);  // (B,T,H*hs)
  const Tensor3d keys = forward_float64(fused ? m.W_K : m.tokeys, x64);
  const Tensor3d values = forward_float64(fused ? m.W_V : m.tovalues, x64);
  const Tensor3 mask_per_head = mask != nullptr ? repeat_mask(*mask, heads) : Tensor3();
  const double divisor = std::sqrt(static_cast<double>(queries.shape(2) / heads));  // √hs
  const Tensor3d y = attention_float64(split_heads(queries, heads), split_heads(keys, heads),
                                       split_heads(values, heads), divisor,
                                       mask != nullptr ? &mask_per_head : nullptr);
  return forward_float64(fused ? m.W_O : m.unifyheads,
                         merge_heads(y, heads));  // (B,T,H*hs) -> (B,T,D)
}

Tensor3 forward_with_seed001_bug(const MultiHeadAttention& m, const Tensor3& x,
                                 const Tensor3* mask) {
  if (m.variant != MultiHeadVariant::fused) {
    throw Error("forward_with_seed001_bug",
                fmt::format("the bug is seed 001's, in the fused variant, not {}",
                            variant_name(m.variant)));
  }
  check_input(m, x, mask);
  const Projected p = project(m, x);
  const Tensor3 mask_per_head = mask != nullptr ? repeat_mask(*mask, m.heads) : Tensor3();
  const Tensor3 keys = split_heads(p.keys, m.heads);
  const AttentionSteps a = scaled_dot_product_attention(split_heads(p.queries, m.heads), keys, keys,
                                                        mask != nullptr ? &mask_per_head : nullptr);
  return forward(*p.output, merge_heads(a.output, m.heads));  // attention_weights @ key
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

MultiHeadAttention stack_book_heads(const MultiHeadAttention& book) {
  if (book.variant != MultiHeadVariant::book) {
    throw Error("stack_book_heads",
                fmt::format("expected the book variant, got {}", variant_name(book.variant)));
  }
  const std::size_t d = book.d_model, hs = d / book.heads;
  MultiHeadAttention fused;
  fused.variant = MultiHeadVariant::fused;
  fused.d_model = d;
  fused.heads = book.heads;
  auto stack = [&](auto member) {
    Linear l{Tensor2({d, d}), Tensor1({0}), false};
    for (std::size_t h = 0; h < book.heads; ++h)
      for (std::size_t r = 0; r < hs; ++r)
        for (std::size_t c = 0; c < d; ++c)
          l.weight(h * hs + r, c) = (book.head_list[h].*member).weight(r, c);
    return l;
  };
  fused.W_Q = stack(&AttentionHead::q);
  fused.W_K = stack(&AttentionHead::k);
  fused.W_V = stack(&AttentionHead::v);
  fused.W_O = Linear{book.output_linear.weight, Tensor1({0}), false};
  return fused;
}

}  // namespace attn
