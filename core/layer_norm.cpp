#include "layer_norm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "encoder_fast.hpp"

namespace attn {

namespace {
constexpr std::size_t kLanes = 8;   // floats in an AVX2 register: ATen's Vectorized<float>
constexpr std::size_t kChunk = 16;  // ATen's kChunkSize: vectors per Welford chunk
using Lanes = std::array<float, kLanes>;

// ATen's utils::CeilLog2: 1 for x <= 2.
std::size_t ceil_log2(std::size_t x) {
  if (x <= 2) return 1;
  std::size_t bits = 0;
  for (std::size_t v = x - 1; v != 0; v >>= 1)
    ++bits;
  return bits;
}

struct LaneMoments {
  std::int64_t count = 0;  // per lane
  Lanes mean{}, m2{};
};

// AddMomentsVec: merge `count_add` values per lane with moments (mean_add, m2_add) into `into`.
void add_moments(std::int64_t count_add, const Lanes& mean_add, const Lanes& m2_add,
                 LaneMoments& into) {
  const std::int64_t n = into.count + count_add;
  const float c = n == 0 ? 0.0f : static_cast<float>(count_add) / static_cast<float>(n);
  const auto before = static_cast<float>(into.count);
  for (std::size_t l = 0; l < kLanes; ++l) {
    const float delta = mean_add[l] - into.mean[l];
    into.mean[l] += c * delta;
    into.m2[l] += m2_add[l] + delta * delta * c * before;
  }
  into.count = n;
}

// AddMoments: the same for one scalar accumulator.
void add_moments(std::int64_t count_add, float mean_add, float m2_add, std::int64_t& count,
                 float& mean, float& m2) {
  const std::int64_t n = count + count_add;
  const float c = n == 0 ? 0.0f : static_cast<float>(count_add) / static_cast<float>(n);
  const float delta = mean_add - mean;
  mean += c * delta;
  m2 += m2_add + delta * delta * c * static_cast<float>(count);
  count = n;
}

// multi_row_sum of SumKernel.cpp: `size` rows of 4 interleaved columns (column k of row i is item
// 4i + k), each item `width` lanes wide, summed in levels of 2^level_power rows.
template <std::size_t width>
std::array<std::array<float, width>, 4> multi_row_sum(const float* x, std::size_t size) {
  using Item = std::array<float, width>;
  auto add = [](Item& a, const Item& b) {
    for (std::size_t l = 0; l < width; ++l)
      a[l] += b[l];
  };
  auto item = [x](std::size_t index) {
    Item v;
    for (std::size_t l = 0; l < width; ++l)
      v[l] = x[index * width + l];
    return v;
  };
  constexpr std::size_t kLevels = 4;
  const std::size_t level_power = std::max<std::size_t>(4, ceil_log2(size) / kLevels);
  const std::size_t level_step = std::size_t{1} << level_power, level_mask = level_step - 1;
  std::array<std::array<Item, 4>, kLevels> acc{};
  std::size_t i = 0;
  while (i + level_step <= size) {
    for (std::size_t j = 0; j < level_step; ++j, ++i)
      for (std::size_t k = 0; k < 4; ++k)
        add(acc[0][k], item(i * 4 + k));
    for (std::size_t j = 1; j < kLevels; ++j) {
      for (std::size_t k = 0; k < 4; ++k) {
        add(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = Item{};
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (std::size_t k = 0; k < 4; ++k)
      add(acc[0][k], item(i * 4 + k));
  for (std::size_t j = 1; j < kLevels; ++j)
    for (std::size_t k = 0; k < 4; ++k)
      add(acc[0][k], acc[j][k]);
  return acc[0];
}

// row_sum of SumKernel.cpp: `size` items of `width` lanes, four partial sums, then the rest.
template <std::size_t width>
std::array<float, width> row_sum(const float* x, std::size_t size) {
  auto partial = multi_row_sum<width>(x, size / 4);
  for (std::size_t i = size / 4 * 4; i < size; ++i)
    for (std::size_t l = 0; l < width; ++l)
      partial[0][l] += x[i * width + l];
  for (std::size_t k = 1; k < 4; ++k)
    for (std::size_t l = 0; l < width; ++l)
      partial[0][l] += partial[k][l];
  return partial[0];
}

void check_width(std::string_view function, const Tensor3& x, std::size_t width) {
  if (x.shape(2) != width || width == 0) {
    throw Error(function, fmt::format("input {} does not end in D={}: the norm was made for "
                                      "tokens of width {}",
                                      shape_string_of(x), width, width));
  }
}

Tensor3 per_token(const Tensor3& x) {
  return Tensor3({x.shape(0), x.shape(1), 1});
}
}  // namespace

void check_eps(float eps, std::string_view function) {
  if (!(eps > 0.0f) || !std::isfinite(eps)) {
    throw Error(function, fmt::format("eps={} must be a positive, finite float32", eps));
  }
}

// Plain float operations, no fused multiply-adds: that is what matches torch's results (measured).
RowMoments torch_row_moments(const float* x, std::size_t n) {
  const std::size_t vectors = n / kLanes, chunks = (vectors + kChunk - 1) / kChunk;
  const std::size_t depth = ceil_log2(chunks);
  std::vector<LaneMoments> stack(depth);
  for (std::size_t i = 0; i < chunks; ++i) {
    const float* chunk = x + i * kChunk * kLanes;
    const std::size_t count = std::min(kChunk, vectors - i * kChunk);
    Lanes mean{}, m2{};
    for (std::size_t j = 0; j < count; ++j) {
      const float c = 1.0f / static_cast<float>(j + 1);
      for (std::size_t l = 0; l < kLanes; ++l) {
        const float v = chunk[j * kLanes + l];
        const float delta = v - mean[l];
        mean[l] += delta * c;
        m2[l] += delta * (v - mean[l]);
      }
    }
    add_moments(static_cast<std::int64_t>(count), mean, m2, stack[0]);
    // Cascade: after chunk i, merge level j-1 into level j for every trailing zero bit of i+1.
    std::size_t mask = i + 1;
    for (std::size_t j = 1; j < depth && (mask & 1) == 0; ++j) {
      add_moments(stack[j - 1].count, stack[j - 1].mean, stack[j - 1].m2, stack[j]);
      stack[j - 1] = LaneMoments{};
      mask >>= 1;
    }
  }
  for (std::size_t j = 1; j < depth; ++j)
    add_moments(stack[j].count, stack[j].mean, stack[j].m2, stack[0]);

  std::int64_t count = 0;
  float mean = 0.0f, m2 = 0.0f;
  for (std::size_t i = vectors * kLanes; i < n; ++i) {
    const float delta = x[i] - mean;
    ++count;
    mean += delta / static_cast<float>(count);
    m2 += delta * (x[i] - mean);
  }
  for (std::size_t l = 0; l < kLanes; ++l)
    add_moments(static_cast<std::int64_t>(vectors), stack[0].mean[l], stack[0].m2[l], count, mean,
                m2);
  return {mean, m2 / static_cast<float>(n)};
}

float torch_cascade_sum(const float* x, std::size_t n) {
  if (n < kLanes) return row_sum<1>(x, n)[0];  // scalar_inner_sum
  const std::size_t vectors = n / kLanes;      // vectorized_inner_sum
  const Lanes lanes = row_sum<kLanes>(x, vectors);
  float sum = 0.0f;
  for (std::size_t k = vectors * kLanes; k < n; ++k)
    sum += x[k];
  for (float lane : lanes)
    sum += lane;
  return sum;
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

LayerNormSteps forward(const LayerNorm& norm, const Tensor3& x) {
  const std::size_t width = norm.weight.size();
  check_width("layer_norm", x, width);
  check_eps(norm.eps, "layer_norm");
  LayerNormSteps s{per_token(x), per_token(x), Tensor3(x.shape()), Tensor3(x.shape())};
  // ATen's LayerNormKernelImplInternal: torch_row_moments, eps inside the root, then
  // y = (x * rstd - rstd * mean) * weight + bias as two fused multiply-adds: torch's AVX2 build
  // matches only that (measured). The kernels give the same bits in AVX2 lanes or scalar code.
  const FastKernels kernels = best_fast_kernels();
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const RowMoments m = fast_layer_norm_row_kept(
        kernels, x.data() + r * width, width, norm.weight.data(), norm.bias.data(), norm.eps,
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
    throw Error("layer_norm_backward", fmt::format("d_output {} or the gradient does not fit x {}",
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

Tensor3 layer_norm_reference(const LayerNorm& norm, const Tensor3& x) {
  const std::size_t width = norm.weight.size();
  check_width("layer_norm_reference", x, width);
  Tensor3 out(x.shape());
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const float* in = x.data() + r * width;
    double mean = 0.0, variance = 0.0;
    for (std::size_t j = 0; j < width; ++j)
      mean += in[j];
    mean /= static_cast<double>(width);
    for (std::size_t j = 0; j < width; ++j)
      variance += (in[j] - mean) * (in[j] - mean);
    variance /= static_cast<double>(width);  // biased
    const double root = std::sqrt(variance + static_cast<double>(norm.eps));
    for (std::size_t j = 0; j < width; ++j)
      out.data()[r * width + j] =
          static_cast<float>((in[j] - mean) / root * norm.weight(j) + norm.bias(j));
  }
  return out;
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

LayerNormalizationSteps forward(const LayerNormalization& norm, const Tensor3& x) {
  const std::size_t width = x.shape(2);
  check_width("layer_normalization", x, width);
  check_eps(norm.eps, "layer_normalization");
  if (norm.gamma.size() != 1 || norm.beta.size() != 1) {
    throw Error("layer_normalization",
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
    throw Error("layer_normalization_backward",
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

Tensor3 layer_normalization_reference(const LayerNormalization& norm, const Tensor3& x) {
  const std::size_t width = x.shape(2);
  Tensor3 out(x.shape());
  for (std::size_t r = 0; r < x.shape(0) * x.shape(1); ++r) {
    const float* in = x.data() + r * width;
    double mean = 0.0, squares = 0.0;
    for (std::size_t j = 0; j < width; ++j)
      mean += in[j];
    mean /= static_cast<double>(width);
    for (std::size_t j = 0; j < width; ++j)
      squares += (in[j] - mean) * (in[j] - mean);
    const double std = std::sqrt(squares / static_cast<double>(width - 1));  // NaN for D = 1
    for (std::size_t j = 0; j < width; ++j)
      out.data()[r * width + j] = static_cast<float>(
          norm.gamma(0) * (in[j] - mean) / (std + static_cast<double>(norm.eps)) + norm.beta(0));
  }
  return out;
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
