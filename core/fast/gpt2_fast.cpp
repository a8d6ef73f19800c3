#include "fast/gpt2_fast.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "base/error.hpp"
#include "hf_tensors.hpp"
#include "kernels/gemm.hpp"
#include "kernels/matvec.hpp"
#include "kernels/parallel.hpp"

namespace attn {

namespace {

std::vector<float> values_of(const Tensor1& t) {
  return std::vector<float>(t.begin(), t.end());
}

// C (rows, n) = A (rows, k) Wᵀ + bias, W (n, k): the bias preloaded, added by the GEMM (beta 1).
void linear_rows(const float* a, std::size_t rows, std::size_t k, const std::vector<float>& w,
                 const std::vector<float>& bias, std::size_t n, float* c) {
  for (std::size_t r = 0; r < rows; ++r)
    std::copy(bias.begin(), bias.end(), c + r * n);
  sgemm(false, true, rows, n, k, 1.0f, a, k, w.data(), k, 1.0f, c, n);
}

}  // namespace

void matvec_on_pool(const float* w, std::size_t rows, std::size_t cols, const float* x,
                    const float* bias, float* y, FastKernels kernels) {
  [[maybe_unused]] const int threads =
      rows * cols >= kParallelElements ? std::max(1, pool_threads()) : 1;
#if defined(_OPENMP)
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    {
      const auto n = static_cast<std::size_t>(omp_get_num_threads());
      const auto i = static_cast<std::size_t>(omp_get_thread_num());
      // Blocks of a multiple of 4 rows, the kernel's step.
      const std::size_t per = (rows / n + 3) / 4 * 4;
      const std::size_t first = std::min(rows, i * per);
      const std::size_t last = i + 1 == n ? rows : std::min(rows, first + per);
      matvec_rows(w, cols, x, bias, y, first, last, kernels);
    }
    return;
  }
#endif
  matvec_rows(w, cols, x, bias, y, 0, rows, kernels);
}

namespace {

PackedGpt2 sized(const EncoderConfig& c) {
  PackedGpt2 p;
  p.vocab = c.vocab_size;
  p.positions = c.max_position_embeddings;
  p.d_model = c.hidden_size;
  p.heads = c.num_attention_heads;
  p.d_ff = c.intermediate_size;
  return p;
}

// A table as a float32 array, the tensor released.
Array table_of(Tensor2& t) {
  Array a = array_of(t);
  t = Tensor2();
  return a;
}

const float* floats(const Array& a) {
  return reinterpret_cast<const float*>(a.bytes.data());
}

std::vector<float> values_of(const Array& a) {
  return std::vector<float>(floats(a), floats(a) + a.size());
}

// Conv1D's (in, out) weight, taken out of `weights`, as (out, in).
std::vector<float> transposed(StateDict& weights, const std::string& key) {
  const Array w = take(weights, key);
  std::vector<float> out(w.size());
  transpose(floats(w), w.shape.at(0), w.shape.at(1), out.data());
  return out;
}

}  // namespace

PackedGpt2 pack(const Gpt2Config& config, Gpt2Weights&& checked) {
  const EncoderConfig& c = config.sizes;
  StateDict& weights = checked.tensors;
  PackedGpt2 p = sized(c);
  p.wte = take(weights, "wte.weight");
  p.wpe = take(weights, "wpe.weight");
  const float eps = static_cast<float>(c.layer_norm_eps);
  for (std::size_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string k = fmt::format("h.{}.", l);
    PackedEncoderLayer b;
    b.placement = NormPlacement::pre;
    b.d_model = c.hidden_size;
    b.heads = c.num_attention_heads;
    b.head_size = c.hidden_size / c.num_attention_heads;
    b.d_ff = c.intermediate_size;
    b.approximate = c.hidden_act == "gelu" ? GeluApproximation::none : GeluApproximation::tanh;
    b.norm_1_eps = b.norm_2_eps = eps;
    // c_attn's (D, 3D) columns are [q | k | v], head h at h·hs of each: transposed, the rows the
    // packed layer expects.
    b.qkv_weight = transposed(weights, k + "attn.c_attn.weight");
    b.qkv_bias = values_of(take(weights, k + "attn.c_attn.bias"));
    b.out_weight = transposed(weights, k + "attn.c_proj.weight");
    b.out_bias = values_of(take(weights, k + "attn.c_proj.bias"));
    b.norm_1_weight = values_of(take(weights, k + "ln_1.weight"));
    b.norm_1_bias = values_of(take(weights, k + "ln_1.bias"));
    b.norm_2_weight = values_of(take(weights, k + "ln_2.weight"));
    b.norm_2_bias = values_of(take(weights, k + "ln_2.bias"));
    b.ff_1_weight = transposed(weights, k + "mlp.c_fc.weight");
    b.ff_1_bias = values_of(take(weights, k + "mlp.c_fc.bias"));
    b.ff_2_weight = transposed(weights, k + "mlp.c_proj.weight");
    b.ff_2_bias = values_of(take(weights, k + "mlp.c_proj.bias"));
    p.blocks.push_back(std::move(b));
  }
  p.norm_weight = values_of(take(weights, "ln_f.weight"));
  p.norm_bias = values_of(take(weights, "ln_f.bias"));
  p.norm_eps = eps;
  if (checked.lm_head) p.lm_head = std::move(*checked.lm_head);
  return p;
}

PackedGpt2 pack(Gpt2&& model) {
  PackedGpt2 p = sized(model.config.sizes);
  p.wte = table_of(model.wte.weight);
  p.wpe = table_of(model.wpe.weight);
  for (EncoderLayer& layer : model.layers) {
    p.blocks.push_back(pack(layer));
    layer = EncoderLayer{};
  }
  p.norm_weight = values_of(model.ln_f.weight);
  p.norm_bias = values_of(model.ln_f.bias);
  p.norm_eps = model.ln_f.eps;
  if (model.lm_head.size() > 0) p.lm_head = table_of(model.lm_head);
  return p;
}

PackedGpt2 init_packed_gpt2(Rng& rng, const Gpt2Config& config) {
  const EncoderConfig& c = config.sizes;
  Gpt2 shell;
  shell.config = config;
  shell.wte = init_embedding(rng, c.vocab_size, c.hidden_size);
  shell.wpe = init_embedding(rng, c.max_position_embeddings, c.hidden_size);
  PackedGpt2 p = pack(std::move(shell));
  p.heads = c.num_attention_heads;
  p.d_ff = c.intermediate_size;
  for (std::size_t l = 0; l < c.num_hidden_layers; ++l)
    p.blocks.push_back(pack(init_gpt2_block(rng, config)));
  const LayerNorm ln_f = init_layer_norm(c.hidden_size, static_cast<float>(c.layer_norm_eps));
  p.norm_weight = values_of(ln_f.weight);
  p.norm_bias = values_of(ln_f.bias);
  p.norm_eps = ln_f.eps;
  if (!config.tie_word_embeddings) {
    Tensor2 head = init_embedding(rng, c.vocab_size, c.hidden_size).weight;
    p.lm_head = table_of(head);
  }
  return p;
}

std::size_t packed_bytes(const PackedGpt2& m) {
  std::size_t floats =
      (m.wte.bytes.size() + m.wpe.bytes.size() + m.lm_head.bytes.size()) / sizeof(float) +
      m.norm_weight.size() + m.norm_bias.size();
  for (const PackedEncoderLayer& b : m.blocks)
    floats += b.qkv_weight.size() + b.qkv_bias.size() + b.out_weight.size() + b.out_bias.size() +
              b.norm_1_weight.size() + b.norm_1_bias.size() + b.norm_2_weight.size() +
              b.norm_2_bias.size() + b.ff_1_weight.size() + b.ff_1_bias.size() +
              b.ff_2_weight.size() + b.ff_2_bias.size();
  return floats * sizeof(float);
}

std::size_t cache_bytes(const Gpt2Cache& cache) {
  std::size_t floats = 0;
  for (std::size_t b = 0; b < cache.keys.size(); ++b)
    floats += cache.keys[b].size() + cache.values[b].size();
  return floats * sizeof(float);
}

Gpt2Generator::Gpt2Generator(const PackedGpt2& model, std::size_t capacity) : model_(&model) {
  if (capacity == 0 || capacity > model.positions)
    throw Error(ErrorKind::bad_size, "Gpt2Generator",
                fmt::format("a cache of {} tokens: give 1 to the model's {} positions", capacity,
                            model.positions));
  const std::size_t d = model.d_model;
  cache_.capacity = capacity;
  for (std::size_t b = 0; b < model.blocks.size(); ++b) {
    cache_.keys.emplace_back(capacity * d);
    cache_.values.emplace_back(capacity * d);
  }
  x_.resize(d);
  normed_.resize(d);
  qkv_.resize(3 * d);
  context_.resize(d);
  out_.resize(d);
  hidden_.resize(model.d_ff);
  scores_.resize(capacity);
  logits_.resize(model.vocab);
}

std::size_t Gpt2Generator::workspace_bytes() const {
  return (x_.size() + normed_.size() + qkv_.size() + context_.size() + out_.size() +
          hidden_.size() + scores_.size() + logits_.size()) *
         sizeof(float);
}

void Gpt2Generator::check(const std::vector<std::int64_t>& ids) const {
  if (ids.empty())
    throw Error(ErrorKind::bad_value, "Gpt2Generator", "no token to read: give at least one");
  if (cache_.length + ids.size() > cache_.capacity)
    throw Error(ErrorKind::bad_size, "Gpt2Generator",
                fmt::format("{} tokens after {} would pass the cache's {}", ids.size(),
                            cache_.length, cache_.capacity));
  for (std::int64_t id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= model_->vocab)
      throw Error(ErrorKind::bad_value, "Gpt2Generator",
                  fmt::format("id {} is outside the vocabulary (0 to {})", id, model_->vocab - 1));
}

// Head h of the query in `qkv` (q, k, v of one token, 3D) against the cached keys 0..position,
// softmax(q kᵀ / √hs), then the weighted values into `context` (D).
void Gpt2Generator::attend(std::size_t block, const float* qkv, std::size_t position,
                           float* context) {
  const std::size_t d = model_->d_model, hs = d / model_->heads, cap = cache_.capacity;
  const float root = std::sqrt(static_cast<float>(hs));
  for (std::size_t h = 0; h < model_->heads; ++h) {
    const float* q = qkv + h * hs;
    const float* keys = cache_.keys[block].data() + h * cap * hs;
    const float* values = cache_.values[block].data() + h * cap * hs;
    for (std::size_t j = 0; j <= position; ++j) {
      float s = 0.0f;
      for (std::size_t i = 0; i < hs; ++i)
        s += q[i] * keys[j * hs + i];
      scores_[j] = s;
    }
    softmax_rows(scores_.data(), 1, position + 1, root);
    float* out = context + h * hs;
    std::fill(out, out + hs, 0.0f);
    for (std::size_t j = 0; j <= position; ++j)
      for (std::size_t i = 0; i < hs; ++i)
        out[i] += scores_[j] * values[j * hs + i];
  }
}

// Keeps the token's keys and values at `position`: k and v of `qkv` (3D), head by head.
static void keep(Gpt2Cache& cache, std::size_t block, const float* qkv, std::size_t position,
                 std::size_t d, std::size_t heads) {
  const std::size_t hs = d / heads;
  for (std::size_t h = 0; h < heads; ++h) {
    std::memcpy(cache.keys[block].data() + (h * cache.capacity + position) * hs, qkv + d + h * hs,
                hs * sizeof(float));
    std::memcpy(cache.values[block].data() + (h * cache.capacity + position) * hs,
                qkv + 2 * d + h * hs, hs * sizeof(float));
  }
}

void Gpt2Generator::logits_of(const float* x) {
  const PackedGpt2& m = *model_;
  const std::size_t d = m.d_model;
  layer_norm_rows(x, 1, d, m.norm_weight.data(), m.norm_bias.data(), m.norm_eps, normed_.data());
  const Array& head = m.lm_head.bytes.empty() ? m.wte : m.lm_head;
  matvec_on_pool(floats(head), m.vocab, d, normed_.data(), nullptr, logits_.data(),
                 best_fast_kernels());
}

const std::vector<float>& Gpt2Generator::step(std::int64_t id) {
  check({id});
  const PackedGpt2& m = *model_;
  const std::size_t d = m.d_model, position = cache_.length;
  const FastKernels k = best_fast_kernels();
  for (std::size_t i = 0; i < d; ++i)
    x_[i] = floats(m.wte)[static_cast<std::size_t>(id) * d + i] + floats(m.wpe)[position * d + i];
  for (std::size_t b = 0; b < m.blocks.size(); ++b) {
    const PackedEncoderLayer& l = m.blocks[b];
    layer_norm_rows(x_.data(), 1, d, l.norm_1_weight.data(), l.norm_1_bias.data(), l.norm_1_eps,
                    normed_.data(), k);
    matvec_on_pool(l.qkv_weight.data(), 3 * d, d, normed_.data(), l.qkv_bias.data(), qkv_.data(),
                   k);
    keep(cache_, b, qkv_.data(), position, d, m.heads);
    attend(b, qkv_.data(), position, context_.data());
    matvec_on_pool(l.out_weight.data(), d, d, context_.data(), l.out_bias.data(), out_.data(), k);
    for (std::size_t i = 0; i < d; ++i)
      x_[i] += out_[i];
    layer_norm_rows(x_.data(), 1, d, l.norm_2_weight.data(), l.norm_2_bias.data(), l.norm_2_eps,
                    normed_.data(), k);
    matvec_on_pool(l.ff_1_weight.data(), m.d_ff, d, normed_.data(), l.ff_1_bias.data(),
                   hidden_.data(), k);
    gelu_in_place(hidden_.data(), m.d_ff, l.approximate, k);
    matvec_on_pool(l.ff_2_weight.data(), d, m.d_ff, hidden_.data(), l.ff_2_bias.data(), out_.data(),
                   k);
    for (std::size_t i = 0; i < d; ++i)
      x_[i] += out_[i];
  }
  ++cache_.length;
  logits_of(x_.data());
  return logits_;
}

const std::vector<float>& Gpt2Generator::prefill(const std::vector<std::int64_t>& ids) {
  check(ids);
  const PackedGpt2& m = *model_;
  const std::size_t d = m.d_model, f = m.d_ff, t = ids.size(), start = cache_.length;
  const FastKernels k = best_fast_kernels();
  std::vector<float> x(t * d), normed(t * d), qkv(t * 3 * d), context(t * d), hidden(t * f),
      out(t * d);
  for (std::size_t r = 0; r < t; ++r)
    for (std::size_t i = 0; i < d; ++i)
      x[r * d + i] = floats(m.wte)[static_cast<std::size_t>(ids[r]) * d + i] +
                     floats(m.wpe)[(start + r) * d + i];
  for (std::size_t b = 0; b < m.blocks.size(); ++b) {
    const PackedEncoderLayer& l = m.blocks[b];
    layer_norm_rows(x.data(), t, d, l.norm_1_weight.data(), l.norm_1_bias.data(), l.norm_1_eps,
                    normed.data(), k);
    linear_rows(normed.data(), t, d, l.qkv_weight, l.qkv_bias, 3 * d, qkv.data());
    for (std::size_t r = 0; r < t; ++r)
      keep(cache_, b, qkv.data() + r * 3 * d, start + r, d, m.heads);
    for (std::size_t r = 0; r < t; ++r)  // query r reads the keys up to its own position
      attend(b, qkv.data() + r * 3 * d, start + r, context.data() + r * d);
    linear_rows(context.data(), t, d, l.out_weight, l.out_bias, d, out.data());
    for (std::size_t i = 0; i < t * d; ++i)
      x[i] += out[i];
    layer_norm_rows(x.data(), t, d, l.norm_2_weight.data(), l.norm_2_bias.data(), l.norm_2_eps,
                    normed.data(), k);
    sgemm(false, true, t, f, d, 1.0f, normed.data(), d, l.ff_1_weight.data(), d, 0.0f,
          hidden.data(), f);
    bias_gelu_rows(hidden.data(), t, f, l.ff_1_bias.data(), l.approximate, k);
    linear_rows(hidden.data(), t, f, l.ff_2_weight, l.ff_2_bias, d, out.data());
    for (std::size_t i = 0; i < t * d; ++i)
      x[i] += out[i];
  }
  cache_.length += t;
  logits_of(x.data() + (t - 1) * d);
  return logits_;
}

}  // namespace attn
