// Lesson 10, backpropagation. Legend: B batch, T tokens, D model width, hs head size.
#include "10-backward/backward_lesson.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>

#include <fmt/format.h>

#include "attention.hpp"
#include "base/budget.hpp"
#include "base/random.hpp"
#include "encoder.hpp"
#include "feed_forward.hpp"
#include "gradients.hpp"
#include "layer_norm.hpp"
#include "loss.hpp"
#include "matmul.hpp"
#include "softmax.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kHeadStream =
    0xbac4ULL;  // the head's weights and the inputs of its gradient check
constexpr std::uint64_t kStackStream =
    0x57acULL;  // the stack's weights, the same for pre-LN and post-LN
constexpr std::uint64_t kBlocksStream =
    0x5c1bULL;  // the residual blocks' weights, the same with and without the skip

constexpr std::array<std::size_t, 4> kStackDepths = {2, 6, 12, 24};  // the placement stacks' L
constexpr std::array<std::size_t, 2> kBlockDepths = {12, 48};        // the residual stacks'
constexpr std::size_t kStackWidth = 32;                              // their D
constexpr std::size_t kStackTokens = 8;                              // their T (batch 2)
constexpr std::size_t kStackClasses = 16;   // C of the placement stacks' head
constexpr std::size_t kScalingTokens = 16;  // the scaling table's T (batch 8)

Tensor3 normal(Rng& rng, std::size_t b, std::size_t t, std::size_t d, double scale = 1.0) {
  Tensor3 x({b, t, d});
  for (float& v : x)
    v = static_cast<float>(rng.normal() * scale);
  return x;
}

// The median over rows (queries) of each row's norm.
double median_row_norm(const Tensor3& x) {
  const std::size_t n = x.shape(2), rows = x.size() / std::max<std::size_t>(n, 1);
  std::vector<double> norms(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (std::size_t j = 0; j < n; ++j)
      s += static_cast<double>(x.data()[r * n + j]) * x.data()[r * n + j];
    norms[r] = std::sqrt(s);
  }
  std::nth_element(norms.begin(), norms.begin() + static_cast<std::ptrdiff_t>(rows / 2),
                   norms.end());
  return norms[rows / 2];
}

// The root mean square of a tensor's entries.
double rms(const Tensor3& x) {
  double s = 0.0;
  for (float v : x)
    s += static_cast<double>(v) * v;
  return std::sqrt(s / static_cast<double>(std::max<std::size_t>(x.size(), 1)));
}

// L = Σ G ⊙ head(x) in float64, for finite differences.
double loss64(const AttentionHead& head, const Tensor3& x, const Tensor3& g) {
  const Tensor3d y = forward_float64(head, x, nullptr);
  double l = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i)
    l += y.data()[i] * g.data()[i];
  return l;
}

// The central difference of L for the float `v` (an entry of x or of the head), moved by ±h.
double central_difference(float& v, const std::function<double()>& loss) {
  const float keep = v;
  const float h = 1e-3f * std::max(1.0f, std::fabs(keep));
  v = keep + h;
  const float up_value = v;
  const double up = loss();
  v = keep - h;
  const float down_value = v;
  const double down = loss();
  v = keep;
  return (up - down) / (static_cast<double>(up_value) - down_value);
}

// The Frobenius norm of a tensor.
template <class T>
double frobenius(const T& x) {
  double s = 0.0;
  for (float v : x)
    s += static_cast<double>(v) * v;
  return std::sqrt(s);
}

// Xavier-normal weights, N(0, 2 / (in + out)), and zero biases: the initialisation Xiong et al.
// analyse. LayerNorms keep their ones and zeros.
template <class Layer>
void init_xavier_normal(Rng& rng, Layer& layer) {
  visit_parameters(layer, [&](const std::string& key, float* data, const Shape& shape) {
    const std::size_t n = element_count(shape);
    if (shape.size() == 2) {
      const double deviation = std::sqrt(2.0 / static_cast<double>(shape[0] + shape[1]));
      for (std::size_t i = 0; i < n; ++i)
        data[i] = static_cast<float>(rng.normal() * deviation);
    } else if (key.size() >= 4 && key.compare(key.size() - 4, 4, "bias") == 0) {
      std::fill(data, data + n, 0.0f);
    }
  });
}

// The residual stacks' block: GELU(Linear(x)), with a LayerNorm first or not.
struct Block {
  LayerNorm norm;
  Linear linear;
};
}  // namespace

DepthGradients depth_gradients(const DepthStack& stack, const Tensor3& x, const Ids& labels) {
  const bool pre =
      stack.encoder.layers.empty() || stack.encoder.layers.front().placement == NormPlacement::pre;
  DepthGradients out;
  out.grad = {zeros_like(stack.encoder), zeros_like(stack.final_norm), zeros_like(stack.head)};
  const EncoderTape tape = forward_tape(stack.encoder, x);
  const Tensor3& top = tape.output();  // (B,T,D)
  out.stream_rms = rms(top);
  LayerNormSteps norm;
  if (pre) norm = forward(stack.final_norm, top);
  const Tensor3& features = pre ? norm.output : top;     // (B,T,D)
  const Tensor3 logits = forward(stack.head, features);  // (B,T,D) @ (D,C) -> (B,T,C)
  const CrossEntropySteps loss = cross_entropy(logits, labels);
  out.loss = loss.loss;
  Tensor3 d = backward(stack.head, features, cross_entropy_backward(loss, labels), out.grad.head);
  if (pre) d = backward(stack.final_norm, top, norm, d, out.grad.final_norm);
  backward(stack.encoder, tape, d, out.grad.encoder);
  for (const EncoderLayer& layer : out.grad.encoder.layers)
    out.feed_forward_norms.push_back(frobenius(layer.feed_forward.linear_2.weight));
  return out;
}

LessonRun run_backward(const LessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options);
  const std::size_t hs = width;
  MemoryPlan plan = plan_lesson_input(options);
  plan.push_back({"the head's steps, gradients and their copies",
                  {24, batch, tokens, std::max(tokens, width)},
                  "  B T T/D"});
  plan.push_back({"the scaling table's tensors", {12, 8, kScalingTokens, 1024}, "   "});
  plan.push_back(
      {"the stacks' tapes", {2 * kBlockDepths[1] * 40, 2, kStackTokens, 4 * kStackWidth}, "    "});
  check_budget("backward", plan);
  const Tensor3 x = lesson_input(options, "(B, T, D)", {batch, tokens, width});  // (B,T,D)

  LessonRun run("backward");
  record_settings(run, options, {{"batch", batch}, {"seq", tokens}, {"d-model", width}});
  Rng rng(options.seed ^ kHeadStream);
  AttentionHead head = init_attention_head(rng, width, hs);
  const AttentionSteps s = forward(head, x, nullptr);
  const Tensor3 g = normal(rng, batch, tokens, hs);  // dL/dY

  run.section("intro");
  run.step("input", "X, one row of width D per token", to_array(x));
  run.section("forward");
  run.step("weights", "P = softmax(Q Kᵀ / √hs)", to_array(s.weights));
  run.step("y", "Y = P V, the head's output", to_array(s.output));
  run.section("d_output");
  run.step("d_output", "G = dL/dY", to_array(g));

  const AttentionGradients a = scaled_dot_product_attention_backward(s, g);
  const Tensor3 d_weights = batched_matmul_transposed(g, s.values);  // (B,T,T)
  const Tensor3 d_softmax = softmax_backward(s.weights, d_weights);  // (B,T,T)
  const Tensor3 d_scores = d_softmax / std::sqrt(static_cast<float>(hs));
  run.section("d_values");
  run.step("d_values", "dV = Pᵀ G", to_array(a.values));
  run.section("d_weights");
  run.step("d_weights", "dP = G Vᵀ", to_array(d_weights));
  run.section("d_scores");
  run.step("d_softmax", "P ⊙ (dP - rowsum(P ⊙ dP)): through the softmax", to_array(d_softmax));
  run.step("d_scores", fmt::format("dS = P ⊙ (dP - rowsum(P ⊙ dP)) / √{}: through the scaling", hs),
           to_array(d_scores));
  run.section("d_queries");
  run.step("d_queries", "dQ = dS K", to_array(a.queries));
  run.section("d_keys");
  run.step("d_keys", "dK = dSᵀ Q", to_array(a.keys));
  AttentionHead grad = zeros_like(head);
  const Tensor3 d_x = backward(head, x, s, g, grad);
  run.section("d_weight");
  run.step("d_q_weight", "q.weight.grad = dQᵀ X, summed over every token", to_array(grad.q.weight));
  run.section("d_input");
  run.step("output", "dX = dQ W_q + dK W_k + dV W_v: what the head passes down", to_array(d_x));

  // Finite differences on a few entries of X and of each weight.
  Tensor3 x_moved = x;
  const auto loss = [&] { return loss64(head, x_moved, g); };
  struct Entry {
    std::string name;
    float* value;
    float gradient;
  };
  std::vector<Entry> entries = {
      {"X[0, 0, 0]", &x_moved(0, 0, 0), d_x(0, 0, 0)},
      {fmt::format("X[0, {}, {}]", tokens - 1, width - 1), &x_moved(0, tokens - 1, width - 1),
       d_x(0, tokens - 1, width - 1)},
      {"q.weight[0, 0]", &head.q.weight(0, 0), grad.q.weight(0, 0)},
      {fmt::format("k.weight[{}, 0]", hs - 1), &head.k.weight(hs - 1, 0), grad.k.weight(hs - 1, 0)},
      {"v.weight[0, 1 % D]", &head.v.weight(0, 1 % width), grad.v.weight(0, 1 % width)},
      {"q.bias[0]", &head.q.bias(0), grad.q.bias(0)},
      {"v.bias[0]", &head.v.bias(0), grad.v.bias(0)},
  };
  Table fd{"Backpropagation against finite differences (L = Σ G ⊙ Y, in double precision)",
           {"entry", "backpropagation", "finite difference", "difference"},
           {}};
  double worst = 0.0;
  for (Entry& e : entries) {
    const double numeric = central_difference(*e.value, loss);
    const double off = std::fabs(numeric - e.gradient) / std::max(1.0, std::fabs(numeric));
    worst = std::max(worst, off);
    fd.rows.push_back({e.name, fmt::format("{:.6f}", e.gradient), fmt::format("{:.6f}", numeric),
                       fmt::format("{:.1e}", std::fabs(numeric - e.gradient))});
  }
  run.section("finite_differences");
  run.table(std::move(fd));
  run.check("every gradient equals its finite difference", worst <= 1e-3,
            fmt::format("largest difference {:.1e}, relative to max(1, |gradient|)", worst));

  double key_bias = 0.0, query_bias = 0.0;
  for (std::size_t i = 0; i < hs; ++i) {
    key_bias = std::max(key_bias, static_cast<double>(std::fabs(grad.k.bias(i))));
    query_bias = std::max(query_bias, static_cast<double>(std::fabs(grad.q.bias(i))));
  }
  run.section("key_bias");
  run.check(
      "the key bias gets no gradient, up to round-off", key_bias <= 1e-5 * (1.0 + query_bias),
      fmt::format("largest |k.bias.grad| {:.1e}, against {:.3f} for q.bias", key_bias, query_bias));

  // Scaling: random Q, K, V with N(0, 1) entries; unscaled is the same attention on Q √hs.
  Table scaling{fmt::format("dQ: its median row's norm per entry; dV: its rms. T = {}, 8 sequences",
                            kScalingTokens),
                {"hs", "scaled: dQ", "unscaled", "scaled: dV", "unscaled", "scaled: largest weight",
                 "unscaled"},
                {}};
  struct ScalingRow {
    std::size_t size;
    double scaled, unscaled, scaled_values, unscaled_values;
  };
  std::vector<ScalingRow> measured;
  for (std::size_t size : {8, 32, 128, 512, 1024}) {
    const Tensor3 q = normal(rng, 8, kScalingTokens, size),
                  k = normal(rng, 8, kScalingTokens, size),
                  v = normal(rng, 8, kScalingTokens, size),
                  gy = normal(rng, 8, kScalingTokens, size);
    const float root = std::sqrt(static_cast<float>(size));
    const AttentionSteps scaled = scaled_dot_product_attention(q, k, v, nullptr);
    const AttentionSteps unscaled = scaled_dot_product_attention(Tensor3(q * root), k, v, nullptr);
    const AttentionGradients d_scaled = scaled_dot_product_attention_backward(scaled, gy);
    const AttentionGradients d_unscaled = scaled_dot_product_attention_backward(unscaled, gy);
    const auto largest = [](const Tensor3& w) {
      double sum = 0.0;
      const std::size_t n = w.shape(2);
      for (std::size_t r = 0; r < w.size() / n; ++r)
        sum += *std::max_element(w.data() + r * n, w.data() + (r + 1) * n);
      return sum / static_cast<double>(w.size() / n);
    };
    const ScalingRow row{size, median_row_norm(d_scaled.queries) / root,
                         median_row_norm(d_unscaled.queries), rms(d_scaled.values),
                         rms(d_unscaled.values)};
    measured.push_back(row);
    scaling.rows.push_back(
        {fmt::format("{}", size), fmt::format("{:.3g}", row.scaled),
         fmt::format("{:.3g}", row.unscaled), fmt::format("{:.3g}", row.scaled_values),
         fmt::format("{:.3g}", row.unscaled_values), fmt::format("{:.3f}", largest(scaled.weights)),
         fmt::format("{:.3f}", largest(unscaled.weights))});
  }
  run.section("scaling");
  run.table(std::move(scaling));
  const ScalingRow &narrow = measured[1], &wide = measured.back();
  run.check("without the √hs, dQ is at first larger",
            measured[0].unscaled > measured[0].scaled && narrow.unscaled > narrow.scaled,
            fmt::format("at hs = {}: {:.3g} unscaled, {:.3g} scaled; at hs = {}: {:.3g}, {:.3g}",
                        measured[0].size, measured[0].unscaled, measured[0].scaled, narrow.size,
                        narrow.unscaled, narrow.scaled));
  run.check("then it collapses", wide.unscaled < 0.1 * wide.scaled,
            fmt::format("{:.2g} unscaled at hs = {}, against {:.2g} scaled", wide.unscaled,
                        wide.size, wide.scaled));
  run.check("the values' gradient does not collapse", wide.unscaled_values >= wide.scaled_values,
            fmt::format("rms of dV {:.3g} unscaled at hs = {}, {:.3g} scaled", wide.unscaled_values,
                        wide.size, wide.scaled_values));

  // Pre-LN against post-LN as the stack deepens: the same weights for both at each depth, a
  // cross-entropy on top.
  EncoderConfig config;
  config.hidden_size = kStackWidth;
  config.num_attention_heads = 4;
  config.intermediate_size = 4 * kStackWidth;
  const Tensor3 stack_x = normal(rng, 2, kStackTokens, kStackWidth);  // (B,T,D)
  const Tensor3 stack_g = normal(rng, 2, kStackTokens, kStackWidth);  // (B,T,D)
  Ids labels({2, kStackTokens});                                      // (B,T)
  for (std::int64_t& label : labels)
    label = static_cast<std::int64_t>(rng.next_u64() % kStackClasses);
  const auto deepest = [&](NormPlacement placement, std::size_t layers) {
    Rng weights(options.seed ^ kStackStream);
    config.num_hidden_layers = layers;
    DepthStack stack{init_encoder(weights, config, placement, false), init_layer_norm(kStackWidth),
                     init_linear(weights, kStackWidth, kStackClasses, true)};
    init_xavier_normal(weights, stack.encoder);
    init_xavier_normal(weights, stack.head);
    return depth_gradients(stack, stack_x, labels);
  };
  Table placement{fmt::format("The last layer's ‖dW2‖ at initialisation as the stack deepens, "
                              "D = {}, cross-entropy over {} classes",
                              kStackWidth, kStackClasses),
                  {"layers L", "pre-LN: stream rms", "pre-LN: ‖dW2‖", "÷ at L = 2", "√(2/L)",
                   "post-LN: ‖dW2‖", "÷ at L = 2"},
                  {}};
  double pre_first = 0.0, post_first = 0.0, pre_ratio = 0.0, post_ratio = 0.0;
  for (std::size_t layers : kStackDepths) {
    const DepthGradients pre = deepest(NormPlacement::pre, layers);
    const DepthGradients post = deepest(NormPlacement::post, layers);
    const double pre_last = pre.feed_forward_norms.back(),
                 post_last = post.feed_forward_norms.back();
    if (layers == kStackDepths.front()) pre_first = pre_last, post_first = post_last;
    pre_ratio = pre_last / pre_first, post_ratio = post_last / post_first;
    placement.rows.push_back(
        {fmt::format("{}", layers), fmt::format("{:.3g}", pre.stream_rms),
         fmt::format("{:.3g}", pre_last), fmt::format("{:.2f}", pre_ratio),
         fmt::format("{:.2f}", std::sqrt(static_cast<double>(kStackDepths.front()) / layers)),
         fmt::format("{:.3g}", post_last), fmt::format("{:.2f}", post_ratio)});
  }
  run.section("placement");
  run.table(std::move(placement));
  const std::size_t most = kStackDepths.back(), fewest = kStackDepths.front();
  run.check("pre-LN's last-layer gradient shrinks with depth, post-LN's does not",
            pre_ratio < 0.6 && post_ratio > 0.8 && pre_ratio < 0.5 * post_ratio,
            fmt::format("at L = {} pre-LN's is {:.2f}x its L = {} value (√({}/{}) = {:.2f}); "
                        "post-LN's {:.2f}x",
                        most, pre_ratio, fewest, fewest, most,
                        std::sqrt(static_cast<double>(fewest) / most), post_ratio));

  // Residual connections: blocks x + f(x) against f(x) alone, f with and without a LayerNorm.
  const auto block_gradient = [&](std::size_t count, bool skip, bool norm) {
    Rng weights(options.seed ^ kBlocksStream);
    std::vector<Block> blocks;
    for (std::size_t i = 0; i < count; ++i)
      blocks.push_back(
          {init_layer_norm(kStackWidth), init_linear(weights, kStackWidth, kStackWidth, true)});
    std::vector<Tensor3> inputs, hidden;
    std::vector<LayerNormSteps> norm_steps(count);
    Tensor3 h = stack_x;
    for (std::size_t i = 0; i < count; ++i) {
      inputs.push_back(h);
      if (norm) norm_steps[i] = forward(blocks[i].norm, h);
      hidden.push_back(forward(blocks[i].linear, norm ? norm_steps[i].output : h));  // (B,T,D)
      const Tensor3 f = gelu(hidden.back(), GeluApproximation::none);
      h = skip ? Tensor3(h + f) : f;
    }
    Tensor3 d = stack_g;
    for (std::size_t i = count; i-- > 0;) {
      Block grad{zeros_like(blocks[i].norm), zeros_like(blocks[i].linear)};
      const Tensor3 d_hidden = gelu_backward(hidden[i], d, GeluApproximation::none);
      Tensor3 d_in = backward(blocks[i].linear, norm ? norm_steps[i].output : inputs[i], d_hidden,
                              grad.linear);
      if (norm) d_in = backward(blocks[i].norm, inputs[i], norm_steps[i], d_in, grad.norm);
      d = skip ? Tensor3(d + d_in) : d_in;
    }
    return rms(d);
  };
  Table residual{fmt::format("The gradient reaching the first block's input: rms of dL/dx (it "
                             "enters the top at {:.3g})",
                             rms(stack_g)),
                 {"block y", fmt::format("{} blocks", kBlockDepths[0]),
                  fmt::format("{} blocks", kBlockDepths[1])},
                 {}};
  double grid[2][2][2] = {};  // [skip][LayerNorm][depth]
  for (int skip = 1; skip >= 0; --skip)
    for (int norm = 1; norm >= 0; --norm) {
      for (std::size_t k = 0; k < 2; ++k)
        grid[skip][norm][k] = block_gradient(kBlockDepths[k], skip == 1, norm == 1);
      residual.rows.push_back(
          {fmt::format("{}, {}", skip ? "x + f(x)" : "f(x) alone",
                       norm ? "f = GELU(Linear(LN(x)))" : "f = GELU(Linear(x))"),
           fmt::format("{:.3g}", grid[skip][norm][0]), fmt::format("{:.3g}", grid[skip][norm][1])});
    }
  run.section("residual");
  run.table(std::move(residual));
  const double top = rms(stack_g);
  run.check("without the skip the gradient vanishes", grid[0][0][0] < 1e-3 * grid[1][0][0],
            fmt::format("{:.2g} at the first of {} blocks without it, {:.3g} with it",
                        grid[0][0][0], kBlockDepths[0], grid[1][0][0]));
  run.check("with the skip but no LayerNorm it grows with depth",
            grid[1][0][1] > 10.0 * grid[1][0][0],
            fmt::format("{:.3g} at {} blocks, {:.3g} at {}", grid[1][0][1], kBlockDepths[1],
                        grid[1][0][0], kBlockDepths[0]));
  run.check("with both it stays within 10x of what enters the top",
            grid[1][1][1] < 10.0 * top && grid[1][1][1] > 0.1 * top,
            fmt::format("{:.3g} at {} blocks, against {:.3g} at the top", grid[1][1][1],
                        kBlockDepths[1], top));
  run.section("parameters");
  run.parameters = count_parameters(describe_attention_head(width, hs));
  return run;
}

}  // namespace attn::lessons
