// Lesson 10, backpropagation. Legend: B batch, T tokens, D model width, hs head size.
#include "10-backward/backward_lesson.hpp"

#include <algorithm>
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

constexpr std::size_t kStackLayers = 12;    // the placement and residual stacks
constexpr std::size_t kStackWidth = 32;     // their D
constexpr std::size_t kStackTokens = 8;     // their T (batch 2)
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

// The residual stacks' block: GELU(Linear(LN(x))).
struct Block {
  LayerNorm norm;
  Linear linear;
};
}  // namespace

LessonRun run_backward(const LessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options);
  const std::size_t hs = width;
  MemoryPlan plan = plan_lesson_input(options);
  plan.push_back({"the head's steps, gradients and their copies",
                  {24, batch, tokens, std::max(tokens, width)},
                  "  B T T/D"});
  plan.push_back({"the scaling table's tensors", {12, 8, kScalingTokens, 1024}, "   "});
  plan.push_back(
      {"the stacks' tapes", {2 * kStackLayers * 40, 2, kStackTokens, 4 * kStackWidth}, "    "});
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
  const Tensor3 d_scores =
      softmax_backward(s.weights, d_weights) / std::sqrt(static_cast<float>(hs));
  run.section("d_values");
  run.step("d_values", "dV = Pᵀ G", to_array(a.values));
  run.section("d_weights");
  run.step("d_weights", "dP = G Vᵀ", to_array(d_weights));
  run.section("d_scores");
  run.step("d_scores", fmt::format("dS = P ⊙ (dP - rowsum(P ⊙ dP)) / √{}", hs), to_array(d_scores));
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
  Table scaling{fmt::format("A typical query's gradient (the median row of dQ, per entry), T = {}, "
                            "8 sequences",
                            kScalingTokens),
                {"hs", "scaled: dQ", "unscaled", "scaled: largest weight", "unscaled"},
                {}};
  double scaled_last = 0.0, unscaled_last = 0.0;
  for (std::size_t size : {8, 32, 128, 512, 1024}) {
    const Tensor3 q = normal(rng, 8, kScalingTokens, size),
                  k = normal(rng, 8, kScalingTokens, size),
                  v = normal(rng, 8, kScalingTokens, size),
                  gy = normal(rng, 8, kScalingTokens, size);
    const float root = std::sqrt(static_cast<float>(size));
    const AttentionSteps scaled = scaled_dot_product_attention(q, k, v, nullptr);
    const AttentionSteps unscaled = scaled_dot_product_attention(Tensor3(q * root), k, v, nullptr);
    const double d_scaled =
        median_row_norm(scaled_dot_product_attention_backward(scaled, gy).queries) / root;
    const double d_unscaled =
        median_row_norm(scaled_dot_product_attention_backward(unscaled, gy).queries);
    const auto largest = [](const Tensor3& w) {
      double sum = 0.0;
      const std::size_t n = w.shape(2);
      for (std::size_t r = 0; r < w.size() / n; ++r)
        sum += *std::max_element(w.data() + r * n, w.data() + (r + 1) * n);
      return sum / static_cast<double>(w.size() / n);
    };
    scaled_last = d_scaled, unscaled_last = d_unscaled;
    scaling.rows.push_back({fmt::format("{}", size), fmt::format("{:.3g}", d_scaled),
                            fmt::format("{:.3g}", d_unscaled),
                            fmt::format("{:.3f}", largest(scaled.weights)),
                            fmt::format("{:.3f}", largest(unscaled.weights))});
  }
  run.section("scaling");
  run.table(std::move(scaling));
  run.check("without the √hs, a typical query's gradient collapses as hs grows",
            unscaled_last < 0.1 * scaled_last,
            fmt::format("{:.2g} unscaled at hs = 1024, against {:.2g} scaled", unscaled_last,
                        scaled_last));

  // Pre-LN against post-LN: the same weights, a gradient from the top of 12 layers.
  EncoderConfig config;
  config.hidden_size = kStackWidth;
  config.num_attention_heads = 4;
  config.intermediate_size = 4 * kStackWidth;
  config.num_hidden_layers = kStackLayers;
  const Tensor3 stack_x = normal(rng, 2, kStackTokens, kStackWidth);
  const Tensor3 stack_g = normal(rng, 2, kStackTokens, kStackWidth);
  const auto layer_gradients = [&](NormPlacement placement) {
    Rng weights(options.seed ^ kStackStream);
    Encoder encoder = init_encoder(weights, config, placement, false);
    Encoder grads = zeros_like(encoder);
    const EncoderTape tape = forward_tape(encoder, stack_x);
    // Per layer: the gradient's rms at its input, and the Frobenius norm of the gradient of its
    // feed-forward's second weight (what Xiong et al. plot).
    std::vector<std::pair<double, double>> out(kStackLayers);
    Tensor3 d = stack_g;
    for (std::size_t i = kStackLayers; i-- > 0;) {
      d = backward(encoder.layers[i], tape.layers[i], d, grads.layers[i]);
      double w2 = 0.0;
      for (float v : grads.layers[i].feed_forward.linear_2.weight)
        w2 += static_cast<double>(v) * v;
      out[i] = {rms(d), std::sqrt(w2)};
    }
    return out;
  };
  const auto pre = layer_gradients(NormPlacement::pre);
  const auto post = layer_gradients(NormPlacement::post);
  Table placement{fmt::format("Gradients at initialisation, {} layers, D = {}: dx at each layer's "
                              "input (rms), ‖dW2‖",
                              kStackLayers, kStackWidth),
                  {"layer", "pre-LN: dx", "post-LN: dx", "pre-LN: ‖dW2‖", "post-LN: ‖dW2‖"},
                  {}};
  for (std::size_t i = kStackLayers; i-- > 0;)
    placement.rows.push_back({fmt::format("{}", i), fmt::format("{:.3g}", pre[i].first),
                              fmt::format("{:.3g}", post[i].first),
                              fmt::format("{:.3g}", pre[i].second),
                              fmt::format("{:.3g}", post[i].second)});
  run.section("placement");
  run.table(std::move(placement));
  const auto spread = [](const std::vector<double>& v) {
    return *std::max_element(v.begin(), v.end()) / *std::min_element(v.begin(), v.end());
  };
  const auto column = [](const std::vector<std::pair<double, double>>& v, bool second) {
    std::vector<double> c;
    for (const auto& [a, b] : v)
      c.push_back(second ? b : a);
    return c;
  };
  run.prose(fmt::format(
      "Largest over smallest across the layers: dx {:.2f} pre-LN, {:.2f} post-LN;\n‖dW2‖ {:.2f} "
      "pre-LN, {:.2f} post-LN.\n",
      spread(column(pre, false)), spread(column(post, false)), spread(column(pre, true)),
      spread(column(post, true))));

  // Residual connections: 12 blocks x + f(x) against f(x) alone.
  const auto block_gradients = [&](bool skip) {
    Rng weights(options.seed ^ kBlocksStream);
    std::vector<Block> blocks;
    for (std::size_t i = 0; i < kStackLayers; ++i)
      blocks.push_back(
          {init_layer_norm(kStackWidth), init_linear(weights, kStackWidth, kStackWidth, true)});
    std::vector<Tensor3> inputs, normed, hidden;
    std::vector<LayerNormSteps> norm_steps;
    Tensor3 h = stack_x;
    for (const Block& b : blocks) {
      inputs.push_back(h);
      norm_steps.push_back(forward(b.norm, h));
      hidden.push_back(forward(b.linear, norm_steps.back().output));
      const Tensor3 f = gelu(hidden.back(), GeluApproximation::none);
      h = skip ? Tensor3(h + f) : f;
    }
    std::vector<double> at_input(kStackLayers);
    Tensor3 d = stack_g;
    for (std::size_t i = kStackLayers; i-- > 0;) {
      Block grad{zeros_like(blocks[i].norm), zeros_like(blocks[i].linear)};
      const Tensor3 d_hidden = gelu_backward(hidden[i], d, GeluApproximation::none);
      const Tensor3 d_normed =
          backward(blocks[i].linear, norm_steps[i].output, d_hidden, grad.linear);
      Tensor3 d_in = backward(blocks[i].norm, inputs[i], norm_steps[i], d_normed, grad.norm);
      d = skip ? Tensor3(d + d_in) : d_in;
      at_input[i] = rms(d);
    }
    return at_input;
  };
  const std::vector<double> with_skip = block_gradients(true), without = block_gradients(false);
  Table residual{"The gradient at each block's input: rms of dL/dx, 12 blocks of LN, Linear, GELU",
                 {"block", "x + f(x)", "f(x) alone"},
                 {}};
  for (std::size_t i = kStackLayers; i-- > 0;)
    residual.rows.push_back({fmt::format("{}", i), fmt::format("{:.3g}", with_skip[i]),
                             fmt::format("{:.3g}", without[i])});
  run.section("residual");
  run.table(std::move(residual));
  run.prose(fmt::format(
      "Largest over smallest across the blocks: {:.2f} with the skip, {:.2f} without.\n",
      spread(with_skip), spread(without)));
  run.section("parameters");
  run.parameters = count_parameters(describe_attention_head(width, hs));
  return run;
}

}  // namespace attn::lessons
