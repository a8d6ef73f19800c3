#include "layer_norm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace attn {

namespace {
void check_width(std::string_view function, const Tensor3& x, std::size_t width) {
  if (x.shape(2) != width || width == 0) {
    throw Error(ErrorKind::bad_size, function,
                fmt::format("input {} does not end in D={}: the norm was made for "
                            "tokens of width {}",
                            shape_string_of(x), width, width));
  }
}

Tensor3 per_token(const Tensor3& x) {
  return Tensor3({x.shape(0), x.shape(1), 1});
}
}  // namespace

RowSquares row_mean_squares(const float* x, std::size_t n) {
  double mean = 0.0, squares = 0.0;
  for (std::size_t j = 0; j < n; ++j)
    mean += x[j];
  mean /= static_cast<double>(n);
  for (std::size_t j = 0; j < n; ++j)
    squares += (x[j] - mean) * (x[j] - mean);
  return {mean, squares};
}

void check_eps(float eps, std::string_view function) {
  if (!(eps > 0.0f) || !std::isfinite(eps)) {
    throw Error(ErrorKind::bad_value, function,
                fmt::format("eps={} must be a positive, finite float32", eps));
  }
}

LayerNorm init_layer_norm(std::size_t d_model, float eps) {
  check_eps(eps, "init_layer_norm");
  return LayerNorm{xt::ones<float>({d_model}), xt::zeros<float>({d_model}), eps};
}

Module describe_layer_norm(std::size_t d_model, std::string name) {
  return Module{
      "LayerNorm", std::move(name), {{"weight", {d_model}, true}, {"bias", {d_model}, true}}, {}};
}

void visit_parameters(LayerNorm& norm, const std::string& prefix, const ParameterVisitor& visit) {
  visit(prefix + "weight", norm.weight.data(), shape_of(norm.weight));
  visit(prefix + "bias", norm.bias.data(), shape_of(norm.bias));
}

Tensor3 layer_norm_reference(const LayerNorm& norm, const Tensor3& x) {
  const std::size_t width = norm.weight.size();
  check_width("layer_norm_reference", x, width);
  Tensor3 out(x.shape());
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const float* in = x.data() + r * width;
    const auto [mean, squares] = row_mean_squares(in, width);
    const double variance = squares / static_cast<double>(width);  // biased
    const double root = std::sqrt(variance + static_cast<double>(norm.eps));
    for (std::size_t j = 0; j < width; ++j)
      out.data()[r * width + j] =
          static_cast<float>((in[j] - mean) / root * norm.weight(j) + norm.bias(j));
  }
  return out;
}

LayerNormSteps forward(const LayerNorm& norm, const Tensor3& x) {
  const std::size_t width = norm.weight.size();
  check_width("layer_norm", x, width);
  check_eps(norm.eps, "layer_norm");
  LayerNormSteps s{per_token(x), per_token(x), Tensor3(x.shape()), Tensor3(x.shape())};
  // One kernel call per token (torch_layer_norm_row: torch's order, two fused multiply-adds).
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const RowMoments m =
        layer_norm_row(x.data() + r * width, width, norm.weight.data(), norm.bias.data(), norm.eps,
                       s.normalised.data() + r * width, s.output.data() + r * width);
    s.mean.data()[r] = m.mean;
    s.variance.data()[r] = m.variance;
  }
  return s;
}

Tensor3 backward(const LayerNorm& norm, const Tensor3& x, const LayerNormSteps& steps,
                 const Tensor3& d_output, LayerNorm& grad) {
  const std::size_t width = norm.weight.size();
  check_width("layer_norm_backward", x, width);
  check_width("layer_norm_backward", d_output, width);
  if (d_output.shape() != x.shape() || grad.weight.size() != width || grad.bias.size() != width)
    throw Error(ErrorKind::bad_size, "layer_norm_backward",
                fmt::format("d_output {} or the gradient does not fit x {}",
                            shape_string_of(d_output), shape_string_of(x)));
  Tensor3 d_x(x.shape());
  std::vector<double> d_weight(width, 0.0), d_bias(width, 0.0), normalised(width), g(width);
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const float* in = x.data() + r * width;
    const float* dy = d_output.data() + r * width;
    const double mean = steps.mean.data()[r];
    const double rstd = 1.0 / std::sqrt(static_cast<double>(steps.variance.data()[r]) +
                                        static_cast<double>(norm.eps));
    double g_mean = 0.0, gx_mean = 0.0;
    for (std::size_t j = 0; j < width; ++j) {
      normalised[j] = (in[j] - mean) * rstd;
      g[j] = static_cast<double>(dy[j]) * norm.weight(j);
      g_mean += g[j];
      gx_mean += g[j] * normalised[j];
      d_weight[j] += static_cast<double>(dy[j]) * normalised[j];
      d_bias[j] += dy[j];
    }
    g_mean /= static_cast<double>(width);
    gx_mean /= static_cast<double>(width);
    for (std::size_t j = 0; j < width; ++j)
      d_x.data()[r * width + j] =
          static_cast<float>(rstd * (g[j] - g_mean - normalised[j] * gx_mean));
  }
  for (std::size_t j = 0; j < width; ++j) {
    grad.weight(j) += static_cast<float>(d_weight[j]);
    grad.bias(j) += static_cast<float>(d_bias[j]);
  }
  return d_x;
}

MemoryPlan plan_layer_norm(std::size_t batch, std::size_t tokens, std::size_t width) {
  return {{"the mean and variance", {2, batch, tokens}, " B T"},
          {"the normalised x and the output", {2, batch, tokens, width}, " B T D"}};
}

void trace_layer_norm(Trace& trace, const Module& norm, const Shape& shape) {
  trace.call(norm, shape, shape);
}

std::vector<LayerInfo> trace_layer_norm(std::size_t d_model, const Shape& shape) {
  Trace trace;
  trace_layer_norm(trace, describe_layer_norm(d_model), shape);
  return trace.layers();
}

LayerNormalization init_layer_normalization(float eps) {
  check_eps(eps, "init_layer_normalization");
  return LayerNormalization{xt::ones<float>({1}), xt::zeros<float>({1}), eps};
}

Module describe_layer_normalization(std::string name) {
  return Module{
      "LayerNormalization", std::move(name), {{"gamma", {1}, true}, {"beta", {1}, true}}, {}};
}

void visit_parameters(LayerNormalization& norm, const std::string& prefix,
                      const ParameterVisitor& visit) {
  visit(prefix + "gamma", norm.gamma.data(), shape_of(norm.gamma));
  visit(prefix + "beta", norm.beta.data(), shape_of(norm.beta));
}

Tensor3 layer_normalization_reference(const LayerNormalization& norm, const Tensor3& x) {
  const std::size_t width = x.shape(2);
  Tensor3 out(x.shape());
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const float* in = x.data() + r * width;
    const auto [mean, squares] = row_mean_squares(in, width);
    const double std = std::sqrt(squares / static_cast<double>(width - 1));  // NaN for D = 1
    for (std::size_t j = 0; j < width; ++j)
      out.data()[r * width + j] = static_cast<float>(
          norm.gamma(0) * (in[j] - mean) / (std + static_cast<double>(norm.eps)) + norm.beta(0));
  }
  return out;
}

LayerNormalizationSteps forward(const LayerNormalization& norm, const Tensor3& x) {
  const std::size_t width = x.shape(2);
  check_width("layer_normalization", x, width);
  check_eps(norm.eps, "layer_normalization");
  if (norm.gamma.size() != 1 || norm.beta.size() != 1) {
    throw Error(ErrorKind::bad_size, "layer_normalization",
                fmt::format("gamma {} and beta {} must both be (1,)", shape_string_of(norm.gamma),
                            shape_string_of(norm.beta)));
  }
  const float gamma = norm.gamma(0), beta = norm.beta(0);
  LayerNormalizationSteps s{per_token(x), per_token(x), Tensor3(x.shape()), Tensor3(x.shape())};
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const float* in = x.data() + r * width;
    // x.mean(): torch.sum then a float division by D.
    const float mean = torch_cascade_sum(in, width) / static_cast<float>(width);
    // x.std(): Welford in double, divided by D - 1 (0 when D = 1: 0/0 = NaN, as torch).
    double running = 0.0, m2 = 0.0;
    for (std::size_t j = 0; j < width; ++j) {
      const double delta = in[j] - running;
      running += delta / static_cast<double>(j + 1);
      m2 += delta * (in[j] - running);
    }
    const double divisor = width > 1 ? static_cast<double>(width - 1) : 0.0;
    const auto std = static_cast<float>(std::sqrt(m2 / divisor));
    s.mean.data()[r] = mean;
    s.std.data()[r] = std;
    const float denominator = std + norm.eps;  // eps outside the root
    for (std::size_t j = 0; j < width; ++j) {
      const float centred = in[j] - mean;
      s.normalised.data()[r * width + j] = centred / denominator;
      // self.gamma * (x - mean) / (std + self.eps) + self.beta, one torch op at a time
      s.output.data()[r * width + j] = gamma * centred / denominator + beta;
    }
  }
  return s;
}

Tensor3 backward(const LayerNormalization& norm, const Tensor3& x,
                 const LayerNormalizationSteps& steps, const Tensor3& d_output,
                 LayerNormalization& grad) {
  const std::size_t width = x.shape(2);
  if (d_output.shape() != x.shape() || grad.gamma.size() != 1 || grad.beta.size() != 1)
    throw Error(ErrorKind::bad_size, "layer_normalization_backward",
                fmt::format("d_output {} or the gradient does not fit x {}",
                            shape_string_of(d_output), shape_string_of(x)));
  const double gamma = norm.gamma(0), eps = norm.eps;
  const double divisor = width > 1 ? static_cast<double>(width - 1) : 0.0;
  Tensor3 d_x(x.shape());
  double d_gamma = 0.0, d_beta = 0.0;
  std::vector<double> centred(width), d_centred(width);
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const float* in = x.data() + r * width;
    const float* dy = d_output.data() + r * width;
    const double mean = steps.mean.data()[r], std = steps.std.data()[r], s = std + eps;
    double through_std = 0.0;  // Σ gamma dY ⊙ u, what moves with s
    for (std::size_t j = 0; j < width; ++j) {
      centred[j] = in[j] - mean;
      d_gamma += static_cast<double>(dy[j]) * centred[j] / s;
      d_beta += dy[j];
      through_std += gamma * dy[j] * centred[j];
    }
    double d_mean = 0.0;
    for (std::size_t j = 0; j < width; ++j) {
      d_centred[j] = gamma * dy[j] / s - through_std / (s * s) * centred[j] / (divisor * std);
      d_mean += d_centred[j];
    }
    d_mean /= static_cast<double>(width);
    for (std::size_t j = 0; j < width; ++j)
      d_x.data()[r * width + j] = static_cast<float>(d_centred[j] - d_mean);
  }
  grad.gamma(0) += static_cast<float>(d_gamma);
  grad.beta(0) += static_cast<float>(d_beta);
  return d_x;
}

Tensor3 residual_block(NormPlacement placement, const LayerNorm& norm, const Linear& sublayer,
                       const Tensor3& x) {
  if (placement == NormPlacement::pre) {
    const Tensor3 update = forward(sublayer, forward(norm, x).output);  // (B,T,D)
    return x + update;
  }
  const Tensor3 sum = x + forward(sublayer, x);  // (B,T,D)
  return forward(norm, sum).output;
}

}  // namespace attn
