// Every backward() against finite differences in double precision, independently of PyTorch: a
// plain double-precision forward written here from the formulas, the scalar L = Σ G ⊙ f(x; θ)
// for the fixture's gradient G, and central differences (L(θ + h) - L(θ - h)) / 2h for a spread
// of entries of every input and parameter. attn's float32 backward must agree with them.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "encoder.hpp"
#include "fixtures.hpp"
#include "gradients.hpp"
#include "io/weights.hpp"
#include "loss.hpp"
#include "transformer.hpp"

namespace {

// ---- A double-precision forward, straight from the formulas

struct T {  // a row-major tensor of doubles
  std::vector<std::size_t> shape;
  std::vector<double> v;
  std::size_t rows() const { return v.size() / shape.back(); }
  std::size_t cols() const { return shape.back(); }
};

using Params = std::map<std::string, T>;

T of(const attn::Array& a) {
  T t{a.shape, {}};
  for (float f : attn::to_float_vector(a))
    t.v.push_back(f);
  return t;
}

// x (..., in) @ W (out, in)ᵀ + b
T linear(const T& x, const T& w, const T* b) {
  const std::size_t in = w.shape[1], out = w.shape[0];
  T y{x.shape, std::vector<double>(x.rows() * out, 0.0)};
  y.shape.back() = out;
  for (std::size_t r = 0; r < x.rows(); ++r)
    for (std::size_t o = 0; o < out; ++o) {
      double s = b != nullptr ? b->v[o] : 0.0;
      for (std::size_t i = 0; i < in; ++i)
        s += x.v[r * in + i] * w.v[o * in + i];
      y.v[r * out + o] = s;
    }
  return y;
}

// Row r's mean and Σ (x - mean)² / divisor.
std::pair<double, double> moments(const T& x, std::size_t r, double divisor) {
  const std::size_t d = x.cols();
  double mean = 0.0, var = 0.0;
  for (std::size_t j = 0; j < d; ++j)
    mean += x.v[r * d + j] / static_cast<double>(d);
  for (std::size_t j = 0; j < d; ++j)
    var += std::pow(x.v[r * d + j] - mean, 2) / divisor;
  return {mean, var};
}

T layer_norm(const T& x, const T& w, const T& b, double eps) {
  T y = x;
  const std::size_t d = x.cols();
  for (std::size_t r = 0; r < x.rows(); ++r) {
    const auto [mean, var] = moments(x, r, static_cast<double>(d));
    for (std::size_t j = 0; j < d; ++j)
      y.v[r * d + j] = (x.v[r * d + j] - mean) / std::sqrt(var + eps) * w.v[j] + b.v[j];
  }
  return y;
}

T layer_normalization(const T& x, double gamma, double beta, double eps) {  // seed 001
  T y = x;
  const std::size_t d = x.cols();
  for (std::size_t r = 0; r < x.rows(); ++r) {
    const auto [mean, var] = moments(x, r, static_cast<double>(d - 1));  // unbiased
    for (std::size_t j = 0; j < d; ++j)
      y.v[r * d + j] = gamma * (x.v[r * d + j] - mean) / (std::sqrt(var) + eps) + beta;
  }
  return y;
}

double gelu(double x, bool tanh_form) {
  if (!tanh_form) return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

T add(T a, const T& b) {
  for (std::size_t i = 0; i < a.v.size(); ++i)
    a.v[i] += b.v[i];
  return a;
}

// softmax(q kᵀ / √hs, masked) v for one (B,T,hs) head; mask (B,T,T) of 0/1 or empty.
T attention(const T& q, const T& k, const T& v, const T& mask) {
  const std::size_t batch = q.shape[0], t = q.shape[1], hs = q.shape[2], hv = v.shape[2];
  T out{{batch, t, hv}, std::vector<double>(batch * t * hv, 0.0)};
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < t; ++i) {
      std::vector<double> w(t, -std::numeric_limits<double>::infinity());
      double top = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < t; ++j) {
        if (!mask.v.empty() && mask.v[(b * t + i) * t + j] == 0.0) continue;
        double s = 0.0;
        for (std::size_t c = 0; c < hs; ++c)
          s += q.v[(b * t + i) * hs + c] * k.v[(b * t + j) * hs + c];
        w[j] = s / std::sqrt(static_cast<double>(hs));
        top = std::max(top, w[j]);
      }
      double sum = 0.0;
      for (double& x : w)
        sum += (x = std::isinf(x) ? 0.0 : std::exp(x - top));
      for (std::size_t j = 0; j < t; ++j)
        for (std::size_t c = 0; c < hv; ++c)
          out.v[(b * t + i) * hv + c] += w[j] / sum * v.v[(b * t + j) * hv + c];
    }
  return out;
}

// The book's multi-head attention: heads.N.{q,k,v}, output_linear.
T multi_head(const Params& p, const std::string& at, const T& x, std::size_t heads, const T& mask) {
  std::vector<T> outs;
  for (std::size_t h = 0; h < heads; ++h) {
    const std::string hp = at + "heads." + std::to_string(h) + ".";
    outs.push_back(attention(linear(x, p.at(hp + "q.weight"), &p.at(hp + "q.bias")),
                             linear(x, p.at(hp + "k.weight"), &p.at(hp + "k.bias")),
                             linear(x, p.at(hp + "v.weight"), &p.at(hp + "v.bias")), mask));
  }
  const std::size_t hs = outs[0].cols();
  T cat{x.shape, std::vector<double>(x.rows() * heads * hs)};
  cat.shape.back() = heads * hs;
  for (std::size_t r = 0; r < x.rows(); ++r)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t c = 0; c < hs; ++c)
        cat.v[r * heads * hs + h * hs + c] = outs[h].v[r * hs + c];
  return linear(cat, p.at(at + "output_linear.weight"), &p.at(at + "output_linear.bias"));
}

T feed_forward(const Params& p, const std::string& at, const T& x, bool tanh_form) {
  T h = linear(x, p.at(at + "linear_1.weight"), &p.at(at + "linear_1.bias"));
  for (double& v : h.v)
    v = gelu(v, tanh_form);
  return linear(h, p.at(at + "linear_2.weight"), &p.at(at + "linear_2.bias"));
}

T encoder_layer(const Params& p, const T& x, std::size_t heads, bool post) {
  const auto norm = [&](const std::string& name, const T& in) {
    return layer_norm(in, p.at(name + ".weight"), p.at(name + ".bias"), 1e-5);
  };
  if (post) {
    const T n1 = norm("layer_norm_1", add(x, multi_head(p, "attention.", x, heads, {})));
    return norm("layer_norm_2", add(n1, feed_forward(p, "feed_forward.", n1, false)));
  }
  const T s1 = add(x, multi_head(p, "attention.", norm("layer_norm_1", x), heads, {}));
  return add(s1, feed_forward(p, "feed_forward.", norm("layer_norm_2", s1), false));
}

// ---- Finite differences

struct Fixture {
  std::map<std::string, attn::Array> arrays;
  nlohmann::json meta;
  Params params() const {
    Params p;
    for (const auto& [key, a] : arrays)
      if (key.rfind("param.", 0) == 0) p[key.substr(6)] = of(a);
    return p;
  }
};

Fixture load(const std::string& name) {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("gradients/cases.json")));
  return {attn::read_weights(attn::testing::fixture_path("gradients/" + name + ".npz")),
          cases.at(name)};
}

double dot(const T& a, const T& g) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.v.size(); ++i)
    s += a.v[i] * g.v[i];
  return s;
}

// Compares attn's gradient `got` of the tensor `t` (which `loss` reads) with central differences
// on about 24 entries spread over it.
void check_entries(const std::string& what, T& t, const std::vector<float>& got,
                   const std::function<double()>& loss) {
  REQUIRE(got.size() == t.v.size());
  const std::size_t stride = std::max<std::size_t>(1, t.v.size() / 24);
  for (std::size_t i = 0; i < t.v.size(); i += stride) {
    const double keep = t.v[i], h = 1e-5 * std::max(1.0, std::fabs(keep));
    t.v[i] = keep + h;
    const double up = loss();
    t.v[i] = keep - h;
    const double down = loss();
    t.v[i] = keep;
    const double numeric = (up - down) / (2.0 * h);
    INFO(what << "[" << i << "]: finite difference " << numeric << ", attn " << got[i]);
    CHECK(std::fabs(numeric - got[i]) <= 2e-4 + 1e-3 * std::fabs(numeric));
  }
}

template <class Layer>
void check_parameters(Layer& grad, Params& p, const std::function<double()>& loss,
                      const std::string& prefix = "") {
  attn::visit_parameters(grad, [&](const std::string& key, float* data, const attn::Shape& shape) {
    check_entries(key, p.at(prefix + key),
                  std::vector<float>(data, data + attn::element_count(shape)), loss);
  });
}

std::vector<float> values(const attn::Tensor3& t) {
  return {t.begin(), t.end()};
}

template <class Layer>
void load_into(Layer& layer, const Fixture& f, const std::string& prefix = "") {
  attn::visit_parameters(layer, [&](const std::string& key, float* data, const attn::Shape&) {
    const std::vector<float> v = attn::to_float_vector(f.arrays.at("param." + prefix + key));
    std::copy(v.begin(), v.end(), data);
  });
}

}  // namespace

// attn's backward of `layer` on the fixture's x and G against finite differences of `forward64`,
// the double-precision forward over the fixture's parameters.
template <class Layer>
void check_against_differences(Layer layer, const Fixture& f,
                               const std::function<T(const Params&, const T&)>& forward64) {
  load_into(layer, f);
  const attn::Tensor3 x = attn::to_tensor<3>(f.arrays.at("input.x"), "x");
  Layer grad = attn::zeros_like(layer);
  const attn::Tensor3 d_x = attn::backward(
      layer, x, attn::forward(layer, x), attn::to_tensor<3>(f.arrays.at("grad_output"), "g"), grad);
  Params p = f.params();
  T x64 = of(f.arrays.at("input.x"));
  const T g = of(f.arrays.at("grad_output"));
  const auto loss = [&] { return dot(forward64(p, x64), g); };
  check_entries("x", x64, values(d_x), loss);
  check_parameters(grad, p, loss);
}

TEST_CASE("LayerNorm and seed 001's LayerNormalization: backward = finite differences",
          "[gradients][finite-differences]") {
  const Fixture torch_norm = load("layer_norm");
  check_against_differences(attn::init_layer_norm(torch_norm.meta["d"]), torch_norm,
                            [](const Params& p, const T& x) {
                              return layer_norm(x, p.at("weight"), p.at("bias"), 1e-5);
                            });
  check_against_differences(attn::init_layer_normalization(), load("layer_norm_seed001"),
                            [](const Params& p, const T& x) {
                              return layer_normalization(x, p.at("gamma").v[0], p.at("beta").v[0],
                                                         1e-6);
                            });
}

TEST_CASE("the encoder layer, pre-LN and post-LN: backward = finite differences",
          "[gradients][finite-differences]") {
  for (const std::string name : {"encoder_layer_pre", "encoder_layer_post"}) {
    const Fixture f = load(name);
    const bool post = f.meta["norm"] == "post";
    attn::EncoderConfig config;
    config.hidden_size = f.meta["config"]["hidden_size"];
    config.num_attention_heads = f.meta["config"]["num_attention_heads"];
    config.intermediate_size = f.meta["config"]["intermediate_size"];
    attn::Rng rng(1);
    attn::EncoderLayer layer = attn::init_encoder_layer(
        rng, config, post ? attn::NormPlacement::post : attn::NormPlacement::pre);
    load_into(layer, f);
    const attn::Tensor3 x = attn::to_tensor<3>(f.arrays.at("input.x"), "x");
    attn::EncoderLayer grad = attn::zeros_like(layer);
    const attn::Tensor3 d_x =
        attn::backward(layer, attn::forward_tape(layer, x),
                       attn::to_tensor<3>(f.arrays.at("grad_output"), "g"), grad);
    Params p = f.params();
    T x64 = of(f.arrays.at("input.x"));
    const T g = of(f.arrays.at("grad_output"));
    const auto loss = [&] {
      return dot(encoder_layer(p, x64, config.num_attention_heads, post), g);
    };
    INFO(name);
    check_entries("x", x64, values(d_x), loss);
    check_parameters(grad, p, loss);
  }
}

TEST_CASE("cross-entropy through a Linear head: backward = finite differences",
          "[gradients][finite-differences]") {
  const Fixture f = load("cross_entropy_head");
  attn::Rng rng(2);
  attn::Linear head = attn::init_linear(rng, f.meta["d"], f.meta["classes"], true);
  load_into(head, f, "linear.");
  const attn::Tensor3 x = attn::to_tensor<3>(f.arrays.at("input.x"), "x");
  const attn::Array& label_array = f.arrays.at("labels");
  attn::Ids labels({label_array.shape[0], label_array.shape[1]});
  std::memcpy(labels.data(), label_array.bytes.data(), labels.size() * sizeof(std::int64_t));
  attn::Linear grad = attn::zeros_like(head);
  const attn::Tensor3 d_x = attn::backward(
      head, x,
      attn::cross_entropy_backward(attn::cross_entropy(attn::forward(head, x), labels), labels),
      grad);
  Params p = f.params();
  T x64 = of(f.arrays.at("input.x"));
  const auto loss = [&] {
    const T logits = linear(x64, p["linear.weight"], &p["linear.bias"]);
    const std::size_t classes = logits.cols();
    double total = 0.0;
    for (std::size_t r = 0; r < logits.rows(); ++r) {
      double sum = 0.0;
      for (std::size_t c = 0; c < classes; ++c)
        sum += std::exp(logits.v[r * classes + c]);
      total += std::log(sum) - logits.v[r * classes + static_cast<std::size_t>(labels.data()[r])];
    }
    return total / static_cast<double>(logits.rows());
  };
  check_entries("x", x64, values(d_x), loss);
  check_parameters(grad, p, loss, "linear.");
}

namespace {

// softmax(q kᵀ / √hs, masked) v with T queries and S keys: q (B,T,hs), k and v (B,S,hs); keep
// (B,T,S) of 0/1 (a masked key gets no weight, as -1e9 and -inf give when a row keeps a key).
T cross_attention64(const T& q, const T& k, const T& v, const std::vector<double>& keep) {
  const std::size_t batch = q.shape[0], t = q.shape[1], s = k.shape[1], hs = q.shape[2];
  T out{{batch, t, hs}, std::vector<double>(batch * t * hs, 0.0)};
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < t; ++i) {
      std::vector<double> w(s, 0.0);
      double top = -std::numeric_limits<double>::infinity(), sum = 0.0;
      for (std::size_t j = 0; j < s; ++j) {
        if (keep[(b * t + i) * s + j] == 0.0) continue;
        double dot = 0.0;
        for (std::size_t c = 0; c < hs; ++c)
          dot += q.v[(b * t + i) * hs + c] * k.v[(b * s + j) * hs + c];
        w[j] = dot / std::sqrt(static_cast<double>(hs));
        top = std::max(top, w[j]);
      }
      for (std::size_t j = 0; j < s; ++j)
        sum += (w[j] = keep[(b * t + i) * s + j] == 0.0 ? 0.0 : std::exp(w[j] - top));
      for (std::size_t j = 0; j < s; ++j)
        for (std::size_t c = 0; c < hs; ++c)
          out.v[(b * t + i) * hs + c] += w[j] / sum * v.v[(b * s + j) * hs + c];
    }
  return out;
}

// Columns [h·hs, (h+1)·hs) of (B,N,D) as (B,N,hs), and back.
T head_of(const T& x, std::size_t h, std::size_t hs) {
  T out{{x.shape[0], x.shape[1], hs}, {}};
  for (std::size_t r = 0; r < x.rows(); ++r)
    for (std::size_t c = 0; c < hs; ++c)
      out.v.push_back(x.v[r * x.cols() + h * hs + c]);
  return out;
}

// Seed 001's MultiHeadAttention(x, memory, memory, mask), W_Q..W_O without bias.
T fused_attention64(const Params& p, const std::string& at, const T& x, const T& memory,
                    std::size_t heads, const std::vector<double>& keep) {
  const T q = linear(x, p.at(at + "W_Q.weight"), nullptr);
  const T k = linear(memory, p.at(at + "W_K.weight"), nullptr);
  const T v = linear(memory, p.at(at + "W_V.weight"), nullptr);
  const std::size_t hs = q.cols() / heads;
  T cat{q.shape, std::vector<double>(q.v.size())};
  for (std::size_t h = 0; h < heads; ++h) {
    const T o = cross_attention64(head_of(q, h, hs), head_of(k, h, hs), head_of(v, h, hs), keep);
    for (std::size_t r = 0; r < q.rows(); ++r)
      for (std::size_t c = 0; c < hs; ++c)
        cat.v[r * q.cols() + h * hs + c] = o.v[r * hs + c];
  }
  return linear(cat, p.at(at + "W_O.weight"), nullptr);
}

// A (B,1,N,S) or (B,1,1,S) 0/1 mask as (B,T,S).
std::vector<double> keep_of(const attn::Array& mask, std::size_t t, std::size_t s) {
  const std::size_t batch = mask.shape[0], rows = mask.shape[2];
  std::vector<double> keep;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < t; ++i)
      for (std::size_t j = 0; j < s; ++j)
        keep.push_back(mask.real((b * rows + (rows == 1 ? 0 : i)) * s + j));
  return keep;
}

// Seed 001's DecoderBlock, pre-LN (x + f(norm(x))) or post-LN (norm(x + f(x))).
T decoder_block64(const Params& p, const T& x, const T& memory, std::size_t heads, bool post,
                  const std::vector<double>& target, const std::vector<double>& source) {
  const auto norm = [&](std::size_t i, const T& in) {
    const std::string at = "residual_connection." + std::to_string(i) + ".norm.";
    return layer_normalization(in, p.at(at + "gamma").v[0], p.at(at + "beta").v[0], 1e-6);
  };
  const auto ff = [&](const T& in) {
    T h = linear(in, p.at("feed_forward_neural_network.layer1.weight"),
                 &p.at("feed_forward_neural_network.layer1.bias"));
    for (double& v : h.v)
      v = std::max(v, 0.0);
    return linear(h, p.at("feed_forward_neural_network.layer2.weight"),
                  &p.at("feed_forward_neural_network.layer2.bias"));
  };
  const std::function<T(const T&)> sublayers[3] = {
      [&](const T& in) {
        return fused_attention64(p, "multi_head_attention.", in, in, heads, target);
      },
      [&](const T& in) {
        return fused_attention64(p, "cross_attention.", in, memory, heads, source);
      },
      ff};
  T stream = x;
  for (std::size_t i = 0; i < 3; ++i)
    stream = post ? norm(i, add(stream, sublayers[i](stream)))
                  : add(stream, sublayers[i](norm(i, stream)));
  return stream;
}

}  // namespace

TEST_CASE("seed 001's decoder block, pre-LN and post-LN: backward = finite differences",
          "[gradients][finite-differences][transformer]") {
  for (const std::string name :
       {"decoder_block_pre_b2_t5_s7_d12_h3_f20", "decoder_block_post_b2_t5_s7_d12_h3_f20"}) {
    const auto cases = nlohmann::json::parse(
        attn::testing::read_text(attn::testing::fixture_path("transformer/cases.json")));
    const Fixture f{attn::read_weights(attn::testing::fixture_path("transformer/" + name + ".npz")),
                    cases.at(name)};
    attn::TransformerConfig config;
    config.d_model = f.meta["d_model"];
    config.heads = f.meta["heads"];
    config.d_ff = f.meta["d_ff"];
    config.placement =
        f.meta["placement"] == "post" ? attn::NormPlacement::post : attn::NormPlacement::pre;
    config.fill = f.meta["fill"] == "seed" ? attn::MaskFill::seed : attn::MaskFill::torch;
    attn::Rng rng(3);
    attn::DecoderBlock block = attn::init_decoder_block(rng, config);
    load_into(block, f);
    const attn::Tensor3 x = attn::to_tensor<3>(f.arrays.at("input.x"), "x");
    const attn::Tensor3 memory = attn::to_tensor<3>(f.arrays.at("input.memory"), "memory");
    const std::size_t b = x.shape(0), t = x.shape(1), s = memory.shape(1);
    const attn::ScoreMask target =
        attn::broadcast_mask(f.arrays.at("mask.target"), b, config.heads, t, t, config.fill);
    const attn::ScoreMask source =
        attn::broadcast_mask(f.arrays.at("mask.source"), b, config.heads, t, s, config.fill);
    attn::DecoderBlock grad = attn::zeros_like(block);
    const attn::DecoderBlockGradients g =
        attn::backward(block, attn::forward(block, x, memory, &target, &source), memory, &target,
                       &source, attn::to_tensor<3>(f.arrays.at("grad_output"), "g"), grad);
    Params p = f.params();
    T x64 = of(f.arrays.at("input.x")), memory64 = of(f.arrays.at("input.memory"));
    const T go = of(f.arrays.at("grad_output"));
    const std::vector<double> keep_target = keep_of(f.arrays.at("mask.target"), t, t),
                              keep_source = keep_of(f.arrays.at("mask.source"), t, s);
    const bool post = config.placement == attn::NormPlacement::post;
    const auto loss = [&] {
      return dot(decoder_block64(p, x64, memory64, config.heads, post, keep_target, keep_source),
                 go);
    };
    INFO(name);
    check_entries("x", x64, values(g.x), loss);
    check_entries("memory", memory64, values(g.memory), loss);
    check_parameters(grad, p, loss);
  }
}
