#include "feed_forward.hpp"

#include "dropout.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/names.hpp"

namespace attn {

namespace {
constexpr Named<FeedForwardVariant> kVariantNames[] = {
    {FeedForwardVariant::book, "book"},
    {FeedForwardVariant::relu, "relu"},
    {FeedForwardVariant::gelu_last, "gelu-last"}};
}  // namespace

std::string_view variant_name(FeedForwardVariant variant) {
  return name_in(kVariantNames, variant, "");
}

std::optional<FeedForwardVariant> feed_forward_variant(std::string_view name) {
  return value_in(kVariantNames, name);
}

float gelu_reference(float x, GeluApproximation approximate) {
  const double v = x;
  if (approximate == GeluApproximation::none)
    return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  const double inner = std::sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v);
  return static_cast<float>(0.5 * v * (1.0 + std::tanh(inner)));
}

// torch 1.13 on this CPU (Debian's python3-torch, AVX2, built with MKL-DNN):
// - approximate='none': gelu_out_cpu hands every contiguous float32 tensor of 2 or more elements
//   to oneDNN's eltwise_gelu_erf; a one-element tensor goes to ATen's scalar kernel (libm's erff).
// - approximate='tanh': ATen's GeluKernel runs 16 elements at a time with SLEEF's tanh and the last
//   n % 16 with libm's tanhf; GCC contracts x + κx³ into an FMA in both paths.
// (Single-threaded torch; several threads split tensors over 16384 elements into chunks.)
Tensor3 gelu(const Tensor3& x, GeluApproximation approximate) {
  Tensor3 out = x;
  gelu_in_place(out.data(), out.size(), approximate);
  return out;
}

Tensor3 relu(const Tensor3& x) {
  Tensor3 out(x.shape());
  // clamp_min(x, 0) as _mm256_max_ps(0, x): x when 0 > x is false, so NaN and -0 pass through.
  for (std::size_t i = 0; i < x.size(); ++i)
    out.data()[i] = 0.0f > x.data()[i] ? 0.0f : x.data()[i];
  return out;
}

FeedForward init_feed_forward(Rng& rng, FeedForwardVariant variant, std::size_t d_model,
                              std::size_t d_ff, GeluApproximation approximate) {
  FeedForward layer;
  layer.variant = variant;
  layer.approximate = approximate;
  layer.linear_1 = init_linear(rng, d_model, d_ff, true);
  layer.linear_2 = init_linear(rng, d_ff, d_model, true);
  return layer;
}

Module describe_feed_forward(FeedForwardVariant variant, std::size_t d_model, std::size_t d_ff,
                             std::string name) {
  if (d_model == 0 || d_ff == 0) {
    throw Error(ErrorKind::bad_size, "feed_forward",
                fmt::format("D = {} and F = {}: both sizes must be at least 1", d_model, d_ff));
  }
  switch (variant) {
    case FeedForwardVariant::relu:
      return Module{"FeedForwardNeuralNetwork",
                    std::move(name),
                    {},
                    {linear_module("layer1", d_model, d_ff, true),
                     linear_module("layer2", d_ff, d_model, true),
                     leaf_module("Dropout", "dropout"), leaf_module("ReLU", "relu")}};
    case FeedForwardVariant::gelu_last: {
      Module net{"Sequential",
                 "net",
                 {},
                 {linear_module("0", d_model, d_ff, true), linear_module("1", d_ff, d_model, true),
                  leaf_module("GELU", "2"), leaf_module("Dropout", "3")}};
      return Module{"FeedForward", std::move(name), {}, {std::move(net)}};
    }
    case FeedForwardVariant::book:
      break;
  }
  return Module{"FeedForward",
                std::move(name),
                {},
                {linear_module("linear_1", d_model, d_ff, true),
                 linear_module("linear_2", d_ff, d_model, true), leaf_module("GELU", "gelu"),
                 leaf_module("Dropout", "dropout")}};
}

void visit_parameters(FeedForward& layer, const ParameterVisitor& visit) {
  switch (layer.variant) {
    case FeedForwardVariant::book:
      visit_parameters(layer.linear_1, "linear_1.", visit);
      visit_parameters(layer.linear_2, "linear_2.", visit);
      break;
    case FeedForwardVariant::relu:
      visit_parameters(layer.linear_1, "layer1.", visit);
      visit_parameters(layer.linear_2, "layer2.", visit);
      break;
    case FeedForwardVariant::gelu_last:
      visit_parameters(layer.linear_1, "net.0.", visit);
      visit_parameters(layer.linear_2, "net.1.", visit);
      break;
  }
}

namespace {
// t *= scale elementwise (a dropout mask), when there is one.
void scale_by(Tensor3& t, const Tensor3& scale) {
  if (scale.size() == 0) return;
  for (std::size_t i = 0; i < t.size(); ++i)
    t.data()[i] *= scale.data()[i];
}

// The forward of every mode: `scale` empty in eval mode.
FeedForwardSteps forward_scaled(const FeedForward& layer, const Tensor3& x, Tensor3 scale) {
  const std::size_t d_model = layer.linear_1.weight.shape(1);
  if (x.shape(2) != d_model) {
    throw Error(ErrorKind::bad_size, "feed_forward",
                fmt::format("x {} does not fit a block of width D = {}: the last axis must be {}",
                            shape_string_of(x), d_model, d_model));
  }
  FeedForwardSteps s;
  s.dropout_scale = std::move(scale);
  s.hidden = forward(layer.linear_1, x);  // (B,T,D) @ (D,F) -> (B,T,F)
  switch (layer.variant) {
    case FeedForwardVariant::book:
      s.activated = gelu(s.hidden, layer.approximate);
      break;
    case FeedForwardVariant::relu:
      s.activated = relu(s.hidden);
      scale_by(s.activated, s.dropout_scale);  // then dropout
      break;
    case FeedForwardVariant::gelu_last:
      s.activated = s.hidden;
      break;
  }
  s.projected = forward(layer.linear_2, s.activated);  // (B,T,F) @ (F,D) -> (B,T,D)
  s.output = layer.variant == FeedForwardVariant::gelu_last ? gelu(s.projected, layer.approximate)
                                                            : s.projected;
  if (layer.variant != FeedForwardVariant::relu) scale_by(s.output, s.dropout_scale);
  return s;
}

// The shape of the tensor the variant's dropout sits on, for x (B,T,D).
Shape dropout_shape(const FeedForward& layer, const Tensor3& x) {
  const std::size_t width = layer.variant == FeedForwardVariant::relu
                                ? layer.linear_1.weight.shape(0)
                                : layer.linear_2.weight.shape(0);
  return {x.shape(0), x.shape(1), width};
}
}  // namespace

FeedForwardSteps forward(const FeedForward& layer, const Tensor3& x) {
  return forward_scaled(layer, x, Tensor3());
}

FeedForwardSteps forward(const FeedForward& layer, const Tensor3& x, Rng& dropout) {
  if (layer.dropout == 0.0f) return forward(layer, x);  // nothing to draw: eval mode's numbers
  return forward_scaled(layer, x, dropout_scale(dropout, dropout_shape(layer, x), layer.dropout));
}

FeedForwardSteps forward(const FeedForward& layer, const Tensor3& x, const Tensor3& dropout_scale) {
  const Shape expected = dropout_shape(layer, x);
  if (dropout_scale.shape(0) != expected[0] || dropout_scale.shape(1) != expected[1] ||
      dropout_scale.shape(2) != expected[2]) {
    throw Error(ErrorKind::bad_size, "feed_forward",
                fmt::format("the dropout scale {} does not fit {}", shape_string_of(dropout_scale),
                            shape_string(expected)));
  }
  return forward_scaled(layer, x, dropout_scale);
}

Tensor3 gelu_backward(const Tensor3& x, const Tensor3& d_output, GeluApproximation approximate) {
  if (x.shape() != d_output.shape())
    throw Error(ErrorKind::bad_size, "gelu_backward",
                fmt::format("x {} and d_output {} differ in shape", shape_string_of(x),
                            shape_string_of(d_output)));
  Tensor3 d_x(x.shape());
  if (approximate == GeluApproximation::none) {
    gelu_erf_backward(x.data(), d_output.data(), d_x.data(), x.size());
    return d_x;
  }
  constexpr double kSqrt2OverPi = 0.79788456080286535588, kKappa = 0.044715;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x.data()[i];
    const double t = std::tanh(kSqrt2OverPi * (v + kKappa * v * v * v));
    const double slope =
        0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kKappa * v * v);
    d_x.data()[i] = static_cast<float>(d_output.data()[i] * slope);
  }
  return d_x;
}

Tensor3 relu_backward(const Tensor3& x, const Tensor3& d_output) {
  if (x.shape() != d_output.shape())
    throw Error(ErrorKind::bad_size, "relu_backward",
                fmt::format("x {} and d_output {} differ in shape", shape_string_of(x),
                            shape_string_of(d_output)));
  Tensor3 d_x(x.shape());
  for (std::size_t i = 0; i < x.size(); ++i)
    d_x.data()[i] = x.data()[i] > 0.0f ? d_output.data()[i] : 0.0f;
  return d_x;
}

Tensor3 backward(const FeedForward& layer, const Tensor3& x, const FeedForwardSteps& steps,
                 const Tensor3& d_output, FeedForward& grad) {
  Tensor3 d_projected = d_output;  // book, relu: the output is the projection
  if (layer.variant != FeedForwardVariant::relu) scale_by(d_projected, steps.dropout_scale);
  if (layer.variant == FeedForwardVariant::gelu_last)
    d_projected = gelu_backward(steps.projected, d_projected, layer.approximate);
  Tensor3 d_activated = backward(layer.linear_2, steps.activated, d_projected, grad.linear_2);
  if (layer.variant == FeedForwardVariant::relu) scale_by(d_activated, steps.dropout_scale);
  Tensor3 d_hidden;
  switch (layer.variant) {
    case FeedForwardVariant::book:
      d_hidden = gelu_backward(steps.hidden, d_activated, layer.approximate);
      break;
    case FeedForwardVariant::relu:
      d_hidden = relu_backward(steps.hidden, d_activated);
      break;
    case FeedForwardVariant::gelu_last:
      d_hidden = d_activated;  // nothing between the Linears
      break;
  }
  return backward(layer.linear_1, x, d_hidden, grad.linear_1);
}

MemoryPlan plan_feed_forward(std::size_t batch, std::size_t tokens, std::size_t d_model,
                             std::size_t d_ff) {
  return {{"the hidden layer, before and after its activation", {2, batch, tokens, d_ff}, " B T F"},
          {"the projection and the output", {2, batch, tokens, d_model}, " B T D"}};
}

void trace_feed_forward(Trace& trace, const Module& block, const Shape& shape) {
  const bool sequential = block.children.size() == 1;  // seed 000: everything inside `net`
  const Module& body = sequential ? block.children.front() : block;
  const std::size_t d_ff = body.children.at(0).parameters.at(0).shape.at(0);
  const Shape wide = linear_output(shape, d_ff);  // (B,T,F)
  trace.call(block, shape, shape);
  trace.enter();
  if (sequential) {
    trace.call(body, shape, shape);
    trace.enter();
    trace.call(child(body, "0"), shape, wide);
    trace.call(child(body, "1"), wide, shape);
    trace.call(child(body, "2"), shape, shape);
    trace.call(child(body, "3"), shape, shape);
    trace.leave();
  } else if (block.class_name ==
             "FeedForwardNeuralNetwork") {  // seed 001: layer1, relu, dropout, layer2
    trace.call(child(block, "layer1"), shape, wide);
    trace.call(child(block, "relu"), wide, wide);
    trace.call(child(block, "dropout"), wide, wide);
    trace.call(child(block, "layer2"), wide, shape);
  } else {
    trace.call(child(block, "linear_1"), shape, wide);
    trace.call(child(block, "gelu"), wide, wide);
    trace.call(child(block, "linear_2"), wide, shape);
    trace.call(child(block, "dropout"), shape, shape);
  }
  trace.leave();
}

std::vector<LayerInfo> trace_feed_forward(FeedForwardVariant variant, std::size_t d_model,
                                          std::size_t d_ff, const Shape& shape) {
  Trace trace;
  trace_feed_forward(trace, describe_feed_forward(variant, d_model, d_ff), shape);
  return trace.layers();
}

Linear compose_linears(const Linear& first, const Linear& second) {
  const std::size_t in = first.weight.shape(1), mid = first.weight.shape(0),
                    out = second.weight.shape(0);
  if (second.weight.shape(1) != mid) {
    throw Error(ErrorKind::bad_size, "compose_linears",
                fmt::format("Linear({}, {}) cannot follow Linear({}, {})", second.weight.shape(1),
                            out, in, mid));
  }
  Linear composed;
  composed.weight = Tensor2({out, in});
  composed.has_bias = first.has_bias || second.has_bias;
  composed.bias = Tensor1(std::array<std::size_t, 1>{composed.has_bias ? out : 0});
  std::vector<double> row(in);
  for (std::size_t o = 0; o < out; ++o) {
    std::fill(row.begin(), row.end(), 0.0);  // row o of (out,mid) @ (mid,in) -> (out,in)
    for (std::size_t k = 0; k < mid; ++k) {
      const double w = second.weight(o, k);
      const float* first_row = first.weight.data() + k * in;
      for (std::size_t i = 0; i < in; ++i)
        row[i] += w * first_row[i];
    }
    for (std::size_t i = 0; i < in; ++i)
      composed.weight(o, i) = static_cast<float>(row[i]);
    if (!composed.has_bias) continue;
    double b = second.has_bias ? second.bias(o) : 0.0;  // W2 b1 + b2
    if (first.has_bias)
      for (std::size_t k = 0; k < mid; ++k)
        b += static_cast<double>(second.weight(o, k)) * first.bias(k);
    composed.bias(o) = static_cast<float>(b);
  }
  return composed;
}

}  // namespace attn
