#include "fast/gpt_train.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "kernels/gemm.hpp"
#include "kernels/parallel.hpp"
#include "kernels/rows.hpp"

namespace attn {

namespace {

constexpr std::size_t kPerBlock = 12;  // tensors per block
enum BlockTensor : std::size_t {
  kLn1W,
  kLn1B,
  kQkvW,
  kQkvB,
  kProjW,
  kProjB,
  kLn2W,
  kLn2B,
  kFcW,
  kFcB,
  kFcProjW,
  kFcProjB
};
constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)

std::size_t block_tensor(std::size_t layer, BlockTensor t) {
  return 2 + layer * kPerBlock + t;
}

// The sizes of a config, checked.
struct Sizes {
  std::size_t V, P, D, H, F, L;
  float eps;
};
Sizes sizes_of(const Gpt2Config& config) {
  const EncoderConfig& s = config.sizes;
  Sizes z{s.vocab_size,
          s.max_position_embeddings,
          s.hidden_size,
          s.num_attention_heads,
          s.intermediate_size,
          s.num_hidden_layers,
          static_cast<float>(s.layer_norm_eps)};
  if (z.V == 0 || z.P == 0 || z.D == 0 || z.H == 0 || z.F == 0 || z.L == 0)
    throw Error(ErrorKind::bad_size, "gpt_layout", "every size of a GPT must be at least 1");
  if (z.D % z.H != 0)
    throw Error(ErrorKind::bad_size, "gpt_layout",
                fmt::format("{} heads do not divide n_embd {}", z.H, z.D));
  return z;
}

// The engine's own loops, compiled twice: for AVX2's 8 lanes and for the baseline's 4, the copy
// for this CPU chosen when attn loads. Both give the same bits: no sum depends on the width (the
// sums below keep 8 partial sums in a fixed order, whatever the vector).
#define ATTN_WIDE __attribute__((target_clones("avx2", "default")))
// The elementwise loops go to the pool's threads in chunks of this many numbers, each chunk one
// loop the compiler keeps in vectors.
constexpr std::size_t kElementChunk = 4096;

// Σ f(j) for j < n, in 8 partial sums in a fixed order, which the compiler keeps in one vector
// register (a single running sum would be a chain of n dependent additions).
template <class F>
inline float sum8(std::size_t n, F f) {
  float part[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (std::size_t k = 0; k < 8; ++k)
      part[k] += f(j + k);
  float sum = 0.0f;
  for (; j < n; ++j)
    sum += f(j);
  for (float p : part)
    sum += p;
  return sum;
}

// a · b over n numbers.
inline float dot(const float* a, const float* b, std::size_t n) {
  return sum8(n, [&](std::size_t i) { return a[i] * b[i]; });
}

// out (n, oc) = in (n, c) Wᵀ, W (oc, c)
void project(const float* in, const float* w, float* out, std::size_t n, std::size_t c,
             std::size_t oc) {
  sgemm(false, true, n, oc, c, 1.0f, in, c, w, c, 0.0f, out, oc);
}

// Column sums of dout (n, c) added into db (c), shared out by columns.
ATTN_WIDE void add_column_sums(const float* dout, std::size_t n, std::size_t c, float* db) {
  constexpr std::size_t kChunk = 64;
  const std::size_t chunks = (c + kChunk - 1) / kChunk;
  const int threads = loop_threads(n * c);
  ATTN_PARALLEL_FOR
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    const std::size_t from = chunk * kChunk, to = std::min(c, from + kChunk);
    for (std::size_t r = 0; r < n; ++r) {
      const float* row = dout + r * c;
      for (std::size_t j = from; j < to; ++j)
        db[j] += row[j];
    }
  }
}

// The backward of out = in Wᵀ + b: dW = doutᵀ in, db = Σ dout, din = dout W.
void project_backward(const float* dout, const float* in, const float* w, float* dw, float* db,
                      float* din, std::size_t n, std::size_t c, std::size_t oc) {
  sgemm(true, false, oc, c, n, 1.0f, dout, oc, in, c, 1.0f, dw, c);
  if (db != nullptr) add_column_sums(dout, n, oc, db);
  if (din != nullptr) sgemm(false, false, n, c, oc, 1.0f, dout, oc, w, c, 0.0f, din, c);
}

// LayerNorm of each row of x (n, c), keeping each row's mean and 1/σ for backward.
ATTN_WIDE void layer_norm(const float* x, const float* w, const float* b, float eps, float* out,
                          float* mean, float* rstd, std::size_t n, std::size_t c) {
  const int threads = loop_threads(n * c);
  ATTN_PARALLEL_FOR
  for (std::size_t r = 0; r < n; ++r) {
    const float* row = x + r * c;
    const float m = sum8(c, [&](std::size_t j) { return row[j]; }) / static_cast<float>(c);
    const float var =
        sum8(c, [&](std::size_t j) { return (row[j] - m) * (row[j] - m); }) / static_cast<float>(c);
    const float s = 1.0f / std::sqrt(var + eps);
    float* o = out + r * c;
    for (std::size_t j = 0; j < c; ++j)
      o[j] = (row[j] - m) * s * w[j] + b[j];
    mean[r] = m;
    rstd[r] = s;
  }
}

// The backward of layer_norm: dx (added into), and dw, db (added into, through per-thread sums
// that are added in the threads' order, so that the bits do not depend on the scheduling).
ATTN_WIDE void layer_norm_backward(const float* dout, const float* x, const float* w,
                                   const float* mean, const float* rstd, float* dx, float* dw,
                                   float* db, std::size_t n, std::size_t c,
                                   std::vector<float>& partial) {
  const int threads = loop_threads(n * c);
  partial.assign(static_cast<std::size_t>(std::max(threads, 1)) * 2 * c, 0.0f);
  ATTN_PARALLEL_FOR
  for (std::size_t r = 0; r < n; ++r) {
    float* pw = partial.data() + static_cast<std::size_t>(thread_index()) * 2 * c;
    float* pb = pw + c;
    const float* d = dout + r * c;
    const float* row = x + r * c;
    const float m = mean[r], s = rstd[r];
    const float dnorm_mean =
        sum8(c, [&](std::size_t j) { return w[j] * d[j]; }) / static_cast<float>(c);
    const float dnorm_norm_mean =
        sum8(c, [&](std::size_t j) { return w[j] * d[j] * ((row[j] - m) * s); }) /
        static_cast<float>(c);
    float* dxr = dx + r * c;
    for (std::size_t j = 0; j < c; ++j) {
      const float norm = (row[j] - m) * s;
      const float dnorm = w[j] * d[j];
      pb[j] += d[j];
      pw[j] += norm * d[j];
      dxr[j] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
  for (int t = 0; t < std::max(threads, 1); ++t) {
    const float* pw = partial.data() + static_cast<std::size_t>(t) * 2 * c;
    for (std::size_t j = 0; j < c; ++j) {
      dw[j] += pw[j];
      db[j] += pw[c + j];
    }
  }
}

// x_0 = wte[ids] + wpe[t] for the B·T rows.
ATTN_WIDE void embed(const float* wte, const float* wpe, const std::int32_t* ids, float* out,
                     std::size_t rows, std::size_t tokens, std::size_t d) {
  const int threads = loop_threads(rows * d);
  ATTN_PARALLEL_FOR
  for (std::size_t i = 0; i < rows; ++i) {
    const float* te = wte + static_cast<std::size_t>(ids[i]) * d;
    const float* pe = wpe + (i % tokens) * d;
    float* o = out + i * d;
    for (std::size_t j = 0; j < d; ++j)
      o[j] = te[j] + pe[j];
  }
}

// Its backward, by columns, so that no two threads add into one number.
ATTN_WIDE void embed_backward(const float* dout, const std::int32_t* ids, float* dwte, float* dwpe,
                              std::size_t rows, std::size_t tokens, std::size_t d) {
  constexpr std::size_t kChunk = 16;
  const std::size_t chunks = (d + kChunk - 1) / kChunk;
  const int threads = loop_threads(rows * d);
  ATTN_PARALLEL_FOR
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    const std::size_t from = chunk * kChunk, to = std::min(d, from + kChunk);
    for (std::size_t i = 0; i < rows; ++i) {
      const float* g = dout + i * d;
      float* te = dwte + static_cast<std::size_t>(ids[i]) * d;
      float* pe = dwpe + (i % tokens) * d;
      for (std::size_t j = from; j < to; ++j) {
        te[j] += g[j];
        pe[j] += g[j];
      }
    }
  }
}

// x (rows, c) += bias.
ATTN_WIDE void add_bias(float* x, const float* bias, std::size_t rows, std::size_t c) {
  const int threads = loop_threads(rows * c);
  ATTN_PARALLEL_FOR
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < c; ++j)
      x[i * c + j] += bias[j];
}

// out = residual + sublayer + bias, (rows, c).
ATTN_WIDE void add_residual(const float* residual, const float* sublayer, const float* bias,
                            float* out, std::size_t rows, std::size_t c) {
  const int threads = loop_threads(rows * c);
  ATTN_PARALLEL_FOR
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < c; ++j)
      out[i * c + j] = residual[i * c + j] + sublayer[i * c + j] + bias[j];
}

// Causal self-attention on qkv (B·T, 3D) = [q | k | v], head h in columns h·hs of each third:
// att (B, H, T, T) the weights (zero above the diagonal), y (B·T, D) the heads' outputs side by
// side. One (b, h) at a time on the pool.
ATTN_WIDE void causal_attention(const float* qkv, float* att, float* y, std::size_t B,
                                std::size_t T, std::size_t D, std::size_t H) {
  const std::size_t hs = D / H;
  const float root = std::sqrt(static_cast<float>(hs));
  const int threads = loop_threads(B * H * T * T * hs);
  ATTN_PARALLEL_FOR
  for (std::size_t bh = 0; bh < B * H; ++bh) {
    const std::size_t b = bh / H, h = bh % H;
    for (std::size_t t = 0; t < T; ++t) {
      const float* q = qkv + (b * T + t) * 3 * D + h * hs;
      float* row = att + (bh * T + t) * T;
      for (std::size_t t2 = 0; t2 <= t; ++t2)
        row[t2] = dot(q, qkv + (b * T + t2) * 3 * D + D + h * hs, hs);
      softmax_rows(row, 1, t + 1, root);  // softmax(scores / √hs) over keys 0..t, 8 lanes
      for (std::size_t t2 = t + 1; t2 < T; ++t2)
        row[t2] = 0.0f;
      float* out = y + (b * T + t) * D + h * hs;
      std::fill(out, out + hs, 0.0f);
      for (std::size_t t2 = 0; t2 <= t; ++t2) {
        const float* v = qkv + (b * T + t2) * 3 * D + 2 * D + h * hs;
        const float p = row[t2];
        for (std::size_t i = 0; i < hs; ++i)
          out[i] += p * v[i];
      }
    }
  }
}

// Its backward: from dy (B·T, D) into dqkv (B·T, 3D), which it overwrites. Each (b, h) writes
// only its own head's columns, so the pool's threads never add into one number.
ATTN_WIDE void causal_attention_backward(const float* qkv, const float* att, const float* dy,
                                         float* dqkv, std::size_t B, std::size_t T, std::size_t D,
                                         std::size_t H) {
  const std::size_t hs = D / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  std::fill(dqkv, dqkv + B * T * 3 * D, 0.0f);
  const int threads = loop_threads(B * H * T * T * hs);
  ATTN_PARALLEL_FOR
  for (std::size_t bh = 0; bh < B * H; ++bh) {
    const std::size_t b = bh / H, h = bh % H;
    std::vector<float> dp(T);
    for (std::size_t t = 0; t < T; ++t) {
      const float* row = att + (bh * T + t) * T;
      const float* g = dy + (b * T + t) * D + h * hs;
      // y = Σ p v: dp = dy·v, dv += p dy
      float weighted = 0.0f;  // Σ p dp
      for (std::size_t t2 = 0; t2 <= t; ++t2) {
        const float* v = qkv + (b * T + t2) * 3 * D + 2 * D + h * hs;
        float* dv = dqkv + (b * T + t2) * 3 * D + 2 * D + h * hs;
        dp[t2] = dot(g, v, hs);
        for (std::size_t i = 0; i < hs; ++i)
          dv[i] += row[t2] * g[i];
        weighted += dp[t2] * row[t2];
      }
      // softmax: ds = p (dp - Σ p dp); scores = q·k / √hs
      const float* q = qkv + (b * T + t) * 3 * D + h * hs;
      float* dq = dqkv + (b * T + t) * 3 * D + h * hs;
      for (std::size_t t2 = 0; t2 <= t; ++t2) {
        const float ds = row[t2] * (dp[t2] - weighted) * scale;
        const float* k = qkv + (b * T + t2) * 3 * D + D + h * hs;
        float* dk = dqkv + (b * T + t2) * 3 * D + D + h * hs;
        for (std::size_t i = 0; i < hs; ++i) {
          dq[i] += ds * k[i];
          dk[i] += ds * q[i];
        }
      }
    }
  }
}

// e^y for 0 <= y <= 40 in float32's precision (within a few ulp), in operations that compile to
// vector instructions: y = n ln 2 + r with |r| <= ln 2 / 2, e^r by its Taylor series to r^7 (the
// error below 2^-24 relative), times 2^n built in the exponent's bits.
inline float exp_nonnegative(float y) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693145751953125f, kLn2Low = 1.42860682030941723e-6f;
  const int n = static_cast<int>(y * kLog2e + 0.5f);
  const float nf = static_cast<float>(n);
  const float r = (y - nf * kLn2High) - nf * kLn2Low;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>(static_cast<std::int32_t>((n + 127) << 23));
}

// g = GELU(x) of the tanh form, x·(1 + tanh(√(2/π)(x + 0.044715x³)))/2, for n numbers, with
// tanh(u) = sign(u)·(1 − 2/(e^{2|u|} + 1)) (|u| held below 20, past which tanh is ±1 in float32).
ATTN_WIDE void gelu_forward(const float* x, float* g, std::size_t n) {
  const std::size_t chunks = (n + kElementChunk - 1) / kElementChunk;
  const int threads = loop_threads(n);
  ATTN_PARALLEL_FOR
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    const std::size_t end = std::min(n, (chunk + 1) * kElementChunk);
    for (std::size_t i = chunk * kElementChunk; i < end; ++i) {
      const float v = x[i];
      const float u = kGeluScale * (v + 0.044715f * v * v * v);
      float a = std::fabs(u);
      a = a < 20.0f ? a : 20.0f;  // selects, not calls or branches: the loop stays in vectors
      const float t = 1.0f - 2.0f / (exp_nonnegative(2.0f * a) + 1.0f);
      g[i] = 0.5f * v * (1.0f + (u < 0.0f ? -t : t));
    }
  }
}

// d *= GELU'(x) of the tanh form, with g = GELU(x) from the forward.
ATTN_WIDE void gelu_backward(const float* x, const float* g, float* d, std::size_t n) {
  const std::size_t chunks = (n + kElementChunk - 1) / kElementChunk;
  const int threads = loop_threads(n);
  ATTN_PARALLEL_FOR
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    const std::size_t end = std::min(n, (chunk + 1) * kElementChunk);
    for (std::size_t i = chunk * kElementChunk; i < end; ++i) {
      const float v = x[i];
      const float u = kGeluScale * (v + 0.044715f * v * v * v);
      // tanh(u) back from the forward's g = x(1 + tanh u)/2, which holds it to float32's
      // round-off but where x is near 0; there tanh u = u - u³/3 to far below round-off.
      const float th = std::fabs(v) >= 1e-3f ? 2.0f * g[i] / v - 1.0f : u - u * u * u / 3.0f;
      const float slope = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * kGeluScale *
                                                   (1.0f + 3.0f * 0.044715f * v * v);
      d[i] *= slope;
    }
  }
}

// AdamW on one tensor: p ← p·decay − lr/c1 · m / (√v / √c2 + eps), the gradient scaled by clip.
ATTN_WIDE void adamw_tensor(float* p, const float* grad, float* m, float* v, std::size_t n,
                            float clip, float decay, float beta1, float beta2, float lr_c1,
                            float root_c2, float eps) {
  const std::size_t chunks = (n + kElementChunk - 1) / kElementChunk;
  const int threads = loop_threads(n);
  ATTN_PARALLEL_FOR
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    const std::size_t end = std::min(n, (chunk + 1) * kElementChunk);
    for (std::size_t i = chunk * kElementChunk; i < end; ++i) {
      const float g = grad[i] * clip;
      p[i] *= decay;
      m[i] = beta1 * m[i] + (1.0f - beta1) * g;
      v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
      p[i] -= lr_c1 * m[i] / (std::sqrt(v[i]) / root_c2 + eps);
    }
  }
}

}  // namespace

GptModel gpt_layout(const Gpt2Config& config) {
  const Sizes z = sizes_of(config);
  GptModel model;
  model.config = config;
  std::size_t offset = 0;
  auto add = [&](std::string key, std::size_t rows, std::size_t cols, bool transposed,
                 bool decayed) {
    model.tensors.push_back({std::move(key), offset, rows, cols, transposed, decayed});
    offset += model.tensors.back().count();
  };
  add("transformer.wte.weight", z.V, z.D, false, true);
  add("transformer.wpe.weight", z.P, z.D, false, true);
  for (std::size_t l = 0; l < z.L; ++l) {
    const std::string h = fmt::format("transformer.h.{}.", l);
    add(h + "ln_1.weight", z.D, 0, false, false);
    add(h + "ln_1.bias", z.D, 0, false, false);
    add(h + "attn.c_attn.weight", 3 * z.D, z.D, true, true);
    add(h + "attn.c_attn.bias", 3 * z.D, 0, false, false);
    add(h + "attn.c_proj.weight", z.D, z.D, true, true);
    add(h + "attn.c_proj.bias", z.D, 0, false, false);
    add(h + "ln_2.weight", z.D, 0, false, false);
    add(h + "ln_2.bias", z.D, 0, false, false);
    add(h + "mlp.c_fc.weight", z.F, z.D, true, true);
    add(h + "mlp.c_fc.bias", z.F, 0, false, false);
    add(h + "mlp.c_proj.weight", z.D, z.F, true, true);
    add(h + "mlp.c_proj.bias", z.D, 0, false, false);
  }
  add("transformer.ln_f.weight", z.D, 0, false, false);
  add("transformer.ln_f.bias", z.D, 0, false, false);
  model.params.assign(offset, 0.0f);
  return model;
}

bool mlp_tensor(const GptTensor& tensor) {
  return tensor.key.find(".mlp.") != std::string::npos ||
         tensor.key.find(".ln_2.") != std::string::npos;
}

GptModel init_gpt(const Gpt2Config& config, std::uint64_t seed, bool attention_only) {
  GptModel model = gpt_layout(config);
  model.attention_only = attention_only;
  const Sizes z = sizes_of(config);
  Rng rng(seed);
  const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(z.L));
  for (const GptTensor& t : model.tensors) {
    float* p = model.params.data() + t.offset;
    if (t.cols == 0) {
      std::fill(p, p + t.count(), t.key.ends_with("weight") ? 1.0f : 0.0f);
      continue;
    }
    const bool residual = t.key.ends_with("c_proj.weight");
    const float std = residual ? residual_std : 0.02f;
    for (std::size_t i = 0; i < t.count(); ++i)
      p[i] = static_cast<float>(rng.normal()) * std;
  }
  if (attention_only)
    for (const GptTensor& t : model.tensors)
      if (t.key.find(".mlp.") != std::string::npos)
        std::fill_n(model.params.data() + t.offset, t.count(), 0.0f);
  return model;
}

StateDict gpt_state_dict(const GptModel& model) {
  StateDict out;
  for (const GptTensor& t : model.tensors) {
    const float* p = model.params.data() + t.offset;
    if (t.cols == 0) {
      out[t.key] = make_float32({t.rows}, std::vector<float>(p, p + t.rows));
    } else if (!t.transposed) {
      out[t.key] = make_float32({t.rows, t.cols}, std::vector<float>(p, p + t.count()));
    } else {  // Conv1D: (in, out) = (cols, rows)
      std::vector<float> values(t.count());
      for (std::size_t r = 0; r < t.rows; ++r)
        for (std::size_t c = 0; c < t.cols; ++c)
          values[c * t.rows + r] = p[r * t.cols + c];
      out[t.key] = make_float32({t.cols, t.rows}, values);
    }
  }
  return out;
}

GptModel gpt_from_weights(const Gpt2Config& config, Gpt2Weights&& weights,
                          std::string_view source) {
  if (weights.lm_head)
    throw Error(ErrorKind::bad_file, "gpt_from_weights",
                fmt::format("{} has an lm_head.weight not tied to wte: attn trains a GPT whose "
                            "head is wte; start from a folder with tie_word_embeddings true",
                            source));
  GptModel model = gpt_layout(config);
  for (const GptTensor& t : model.tensors) {
    const std::string key = t.key.substr(std::string_view("transformer.").size());
    const auto found = weights.tensors.find(key);
    if (found == weights.tensors.end())
      throw Error(ErrorKind::bad_file, "gpt_from_weights",
                  fmt::format("{} has no {}", source, key));
    const std::vector<float> values = to_float_vector(found->second);
    if (values.size() != t.count())
      throw Error(
          ErrorKind::bad_file, "gpt_from_weights",
          fmt::format("{}: {} has {} numbers, not {}", source, key, values.size(), t.count()));
    float* p = model.params.data() + t.offset;
    if (!t.transposed) {
      std::copy(values.begin(), values.end(), p);
    } else {
      for (std::size_t r = 0; r < t.rows; ++r)
        for (std::size_t c = 0; c < t.cols; ++c)
          p[r * t.cols + c] = values[c * t.rows + r];
    }
    weights.tensors.erase(found);
  }
  return model;
}

namespace {

// The activations of a batch, each a view of the engine's buffer, sized for (Bmax, Tmax); the
// per-layer ones are L blocks, each of the largest batch's size.
struct Acts {
  float *encoded, *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *residual2, *ln2, *ln2_mean,
      *ln2_rstd, *fch, *fch_gelu, *residual3, *lnf, *lnf_mean, *lnf_rstd, *logits, *scratch;
};
struct GradActs {  // one layer's at a time, reused down the stack
  float *dresidual, *dnorm, *dqkv, *datty, *dfch, *dlogits, *dlnf;
};

struct ActSizes {
  std::size_t BT, D, L, F, V, BHTT;
};

std::size_t scratch_width(const Sizes& z) {
  return std::max({3 * z.D, z.F, z.V});
}

Acts views(float* base, const ActSizes& s, std::size_t scratch) {
  Acts a{};
  float* p = base;
  auto take = [&](std::size_t n) {
    float* q = p;
    p += n;
    return q;
  };
  a.encoded = take(s.BT * s.D);
  a.ln1 = take(s.L * s.BT * s.D);
  a.ln1_mean = take(s.L * s.BT);
  a.ln1_rstd = take(s.L * s.BT);
  a.qkv = take(s.L * s.BT * 3 * s.D);
  a.atty = take(s.L * s.BT * s.D);
  a.att = take(s.L * s.BHTT);
  a.residual2 = take(s.L * s.BT * s.D);
  a.ln2 = take(s.L * s.BT * s.D);
  a.ln2_mean = take(s.L * s.BT);
  a.ln2_rstd = take(s.L * s.BT);
  a.fch = take(s.L * s.BT * s.F);
  a.fch_gelu = take(s.L * s.BT * s.F);
  a.residual3 = take(s.L * s.BT * s.D);
  a.lnf = take(s.BT * s.D);
  a.lnf_mean = take(s.BT);
  a.lnf_rstd = take(s.BT);
  a.logits = take(s.BT * s.V);
  a.scratch = take(s.BT * scratch);
  return a;
}
std::size_t acts_count(const ActSizes& s, std::size_t scratch) {
  return s.BT * s.D + s.L * s.BT * (s.D * 6 + 3 * s.D + 2 * s.F + 4) + s.L * s.BHTT +
         s.BT * (s.D + 2 + s.V + scratch);
}
GradActs grad_views(float* base, const ActSizes& s) {
  GradActs g{};
  float* p = base;
  auto take = [&](std::size_t n) {
    float* q = p;
    p += n;
    return q;
  };
  g.dresidual = take(s.BT * s.D);
  g.dnorm = take(s.BT * s.D);
  g.dqkv = take(s.BT * 3 * s.D);
  g.datty = take(s.BT * s.D);
  g.dfch = take(s.BT * s.F);
  g.dlogits = take(s.BT * s.V);
  g.dlnf = take(s.BT * s.D);
  return g;
}
std::size_t grad_acts_count(const ActSizes& s) {
  return s.BT * (s.D * 4 + 3 * s.D + s.F + s.V);
}

ActSizes act_sizes(const Sizes& z, std::size_t batch, std::size_t tokens) {
  return {batch * tokens, z.D, z.L, z.F, z.V, batch * z.H * tokens * tokens};
}

}  // namespace

MemoryPlan plan_gpt_training(const Gpt2Config& config, std::size_t batch, std::size_t tokens) {
  const Sizes z = sizes_of(config);
  const ActSizes s = act_sizes(z, batch, tokens);
  const std::size_t params = gpt_layout(config).params.size();
  return {{"the activations of every block", {acts_count(s, scratch_width(z))}, "L B T D/F", 4},
          {"the gradients of one block's activations", {grad_acts_count(s)}, "B T D/F", 4},
          {"the parameters, their gradient and AdamW's two moments", {4, params}, "", 4}};
}

GptEngine::GptEngine(const GptModel& model, std::size_t batch, std::size_t tokens)
    : max_batch_(batch), max_tokens_(tokens) {
  const Sizes z = sizes_of(model.config);
  if (batch == 0 || tokens == 0)
    throw Error(ErrorKind::bad_size, "GptEngine", "a batch needs a sequence of a token at least");
  if (tokens > z.P)
    throw Error(ErrorKind::bad_size, "GptEngine",
                fmt::format("{} tokens are more than the model's {} positions", tokens, z.P));
  const ActSizes s = act_sizes(z, batch, tokens);
  acts_.assign(acts_count(s, scratch_width(z)), 0.0f);
  grad_acts_.assign(grad_acts_count(s), 0.0f);
  grads_.assign(model.params.size(), 0.0f);
}

const float* GptEngine::logits(std::size_t b, std::size_t t) const {
  return logits_ + (b * tokens_ + t) * vocab_;
}

const float* GptEngine::attention(std::size_t layer) const {
  if (layer >= layers_ || attention_ == nullptr)
    throw Error(ErrorKind::bad_value, "GptEngine::attention",
                fmt::format("block {} of {} after a forward pass: give 0 to {}", layer, layers_,
                            layers_ == 0 ? 0 : layers_ - 1));
  return attention_ + layer * attention_stride_;
}

float GptEngine::forward(const GptModel& model, const std::int32_t* ids,
                         const std::int32_t* targets, std::size_t batch, std::size_t tokens) {
  const Sizes z = sizes_of(model.config);
  if (batch == 0 || batch > max_batch_ || tokens == 0 || tokens > max_tokens_)
    throw Error(ErrorKind::bad_size, "GptEngine::forward",
                fmt::format("a batch of {} x {} tokens does not fit the engine's {} x {}", batch,
                            tokens, max_batch_, max_tokens_));
  batch_ = batch;
  tokens_ = tokens;
  vocab_ = z.V;
  const std::size_t B = batch, T = tokens, D = z.D, H = z.H, F = z.F, V = z.V;
  const std::size_t BT = B * T;
  for (std::size_t i = 0; i < BT; ++i) {
    if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= V)
      throw Error(ErrorKind::bad_value, "GptEngine::forward",
                  fmt::format("id {} is outside the vocabulary of {}", ids[i], V));
    if (targets != nullptr && (targets[i] < 0 || static_cast<std::size_t>(targets[i]) >= V))
      throw Error(ErrorKind::bad_value, "GptEngine::forward",
                  fmt::format("target {} is outside the vocabulary of {}", targets[i], V));
  }
  const ActSizes s = act_sizes(z, max_batch_, max_tokens_);
  Acts a = views(acts_.data(), s, scratch_width(z));
  logits_ = a.logits;
  attention_ = a.att;
  attention_stride_ = s.BHTT;
  layers_ = z.L;

  // x_0 = wte[ids] + wpe[t]
  const float* wte = model.at(0);
  const float* wpe = model.at(1);
  embed(wte, wpe, ids, a.encoded, BT, T, D);
  for (std::size_t l = 0; l < z.L; ++l) {
    const float* residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * s.BT * D;
    float* ln1 = a.ln1 + l * s.BT * D;
    float* qkv = a.qkv + l * s.BT * 3 * D;
    float* atty = a.atty + l * s.BT * D;
    float* att = a.att + l * s.BHTT;
    float* residual2 = a.residual2 + l * s.BT * D;
    float* ln2 = a.ln2 + l * s.BT * D;
    float* fch = a.fch + l * s.BT * F;
    float* fch_gelu = a.fch_gelu + l * s.BT * F;
    float* residual3 = a.residual3 + l * s.BT * D;
    auto w = [&](BlockTensor t) { return model.at(block_tensor(l, t)); };

    layer_norm(residual, w(kLn1W), w(kLn1B), z.eps, ln1, a.ln1_mean + l * s.BT,
               a.ln1_rstd + l * s.BT, BT, D);
    project(ln1, w(kQkvW), qkv, BT, D, 3 * D);
    add_bias(qkv, w(kQkvB), BT, 3 * D);
    causal_attention(qkv, att, atty, B, T, D, H);
    project(atty, w(kProjW), a.scratch, BT, D, D);
    add_residual(residual, a.scratch, w(kProjB), residual2, BT, D);
    if (model.attention_only) {  // no MLP: the block's output is a
      std::copy_n(residual2, BT * D, residual3);
      continue;
    }
    layer_norm(residual2, w(kLn2W), w(kLn2B), z.eps, ln2, a.ln2_mean + l * s.BT,
               a.ln2_rstd + l * s.BT, BT, D);
    project(ln2, w(kFcW), fch, BT, D, F);
    add_bias(fch, w(kFcB), BT, F);
    gelu_forward(fch, fch_gelu, BT * F);
    project(fch_gelu, w(kFcProjW), a.scratch, BT, F, D);
    add_residual(residual2, a.scratch, w(kFcProjB), residual3, BT, D);
  }
  const std::size_t last = model.tensors.size() - 2;
  layer_norm(a.residual3 + (z.L - 1) * s.BT * D, model.at(last), model.at(last + 1), z.eps, a.lnf,
             a.lnf_mean, a.lnf_rstd, BT, D);
  project(a.lnf, wte, a.logits, BT, D, V);
  if (targets == nullptr) return 0.0f;
  // The loss, per row then summed in order (the same bits on any thread count).
  float* losses = a.scratch;
  {
    const int threads = loop_threads(BT * V);
    ATTN_PARALLEL_FOR
    for (std::size_t i = 0; i < BT; ++i) {
      const float* row = a.logits + i * V;
      float max = row[0];
      for (std::size_t j = 1; j < V; ++j)
        max = std::max(max, row[j]);
      double sum = 0.0;
      for (std::size_t j = 0; j < V; ++j)
        sum += std::exp(static_cast<double>(row[j] - max));
      losses[i] = static_cast<float>(std::log(sum) + max - row[targets[i]]);
    }
  }
  double total = 0.0;
  for (std::size_t i = 0; i < BT; ++i)
    total += losses[i];
  return static_cast<float>(total / static_cast<double>(BT));
}

void GptEngine::backward(const GptModel& model, const std::int32_t* ids,
                         const std::int32_t* targets) {
  const Sizes z = sizes_of(model.config);
  const std::size_t B = batch_, T = tokens_, D = z.D, H = z.H, F = z.F, V = z.V;
  const std::size_t BT = B * T;
  const ActSizes s = act_sizes(z, max_batch_, max_tokens_);
  Acts a = views(acts_.data(), s, scratch_width(z));
  GradActs g = grad_views(grad_acts_.data(), s);
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  auto grad = [&](std::size_t tensor) { return grads_.data() + model.tensors[tensor].offset; };
  std::vector<float> partial;

  // dlogits = (softmax - onehot) / (B·T)
  {
    const float inv = 1.0f / static_cast<float>(BT);
    const int threads = loop_threads(BT * V);
    ATTN_PARALLEL_FOR
    for (std::size_t i = 0; i < BT; ++i) {
      const float* row = a.logits + i * V;
      float* d = g.dlogits + i * V;
      float max = row[0];
      for (std::size_t j = 1; j < V; ++j)
        max = std::max(max, row[j]);
      float sum = 0.0f;
      for (std::size_t j = 0; j < V; ++j) {
        d[j] = std::exp(row[j] - max);
        sum += d[j];
      }
      const float norm = inv / sum;
      for (std::size_t j = 0; j < V; ++j)
        d[j] *= norm;
      d[targets[i]] -= inv;
    }
  }
  const float* wte = model.at(0);
  project_backward(g.dlogits, a.lnf, wte, grad(0), nullptr, g.dlnf, BT, D, V);
  const std::size_t last = model.tensors.size() - 2;
  std::fill(g.dresidual, g.dresidual + BT * D, 0.0f);
  layer_norm_backward(g.dlnf, a.residual3 + (z.L - 1) * s.BT * D, model.at(last), a.lnf_mean,
                      a.lnf_rstd, g.dresidual, grad(last), grad(last + 1), BT, D, partial);

  for (std::size_t l = z.L; l-- > 0;) {
    const float* residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * s.BT * D;
    const float* ln1 = a.ln1 + l * s.BT * D;
    const float* qkv = a.qkv + l * s.BT * 3 * D;
    const float* atty = a.atty + l * s.BT * D;
    const float* att = a.att + l * s.BHTT;
    const float* residual2 = a.residual2 + l * s.BT * D;
    const float* ln2 = a.ln2 + l * s.BT * D;
    const float* fch = a.fch + l * s.BT * F;
    const float* fch_gelu = a.fch_gelu + l * s.BT * F;
    auto w = [&](BlockTensor t) { return model.at(block_tensor(l, t)); };
    auto dw = [&](BlockTensor t) { return grad(block_tensor(l, t)); };

    // residual3 = residual2 + mlp: the MLP's output gradient is dresidual.
    if (!model.attention_only) {
      project_backward(g.dresidual, fch_gelu, w(kFcProjW), dw(kFcProjW), dw(kFcProjB), g.dfch, BT,
                       F, D);
      gelu_backward(fch, fch_gelu, g.dfch, BT * F);
      project_backward(g.dfch, ln2, w(kFcW), dw(kFcW), dw(kFcB), g.dnorm, BT, D, F);
      layer_norm_backward(g.dnorm, residual2, w(kLn2W), a.ln2_mean + l * s.BT,
                          a.ln2_rstd + l * s.BT, g.dresidual, dw(kLn2W), dw(kLn2B), BT, D, partial);
    }
    // residual2 = residual + attention: the attention's output gradient is dresidual.
    project_backward(g.dresidual, atty, w(kProjW), dw(kProjW), dw(kProjB), g.datty, BT, D, D);
    causal_attention_backward(qkv, att, g.datty, g.dqkv, B, T, D, H);
    project_backward(g.dqkv, ln1, w(kQkvW), dw(kQkvW), dw(kQkvB), g.dnorm, BT, D, 3 * D);
    layer_norm_backward(g.dnorm, residual, w(kLn1W), a.ln1_mean + l * s.BT, a.ln1_rstd + l * s.BT,
                        g.dresidual, dw(kLn1W), dw(kLn1B), BT, D, partial);
  }
  embed_backward(g.dresidual, ids, grad(0), grad(1), BT, T, D);
}

float GptEngine::update(GptModel& model, GptOptimizer& o, float lr) {
  const std::size_t n = model.params.size();
  if (o.m.size() != n) {
    o.m.assign(n, 0.0f);
    o.v.assign(n, 0.0f);
  }
  // The global norm, summed by fixed chunks in order: the same bits on any thread count.
  constexpr std::size_t kChunk = 4096;
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> sums(chunks, 0.0);
  {
    const int threads = loop_threads(n);
    ATTN_PARALLEL_FOR
    for (std::size_t c = 0; c < chunks; ++c) {
      double sum = 0.0;
      for (std::size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i)
        sum += static_cast<double>(grads_[i]) * grads_[i];
      sums[c] = sum;
    }
  }
  double total = 0.0;
  for (double s : sums)
    total += s;
  const float norm = static_cast<float>(std::sqrt(total));
  const float clip = o.clip > 0.0f && norm > o.clip ? o.clip / (norm + 1e-6f) : 1.0f;
  ++o.steps;
  const float correction1 = 1.0f - std::pow(o.beta1, static_cast<float>(o.steps));
  const float correction2 = 1.0f - std::pow(o.beta2, static_cast<float>(o.steps));
  for (const GptTensor& t : model.tensors) {
    if (model.attention_only && mlp_tensor(t)) continue;  // left as they are: never trained
    const float decay = t.decayed ? 1.0f - lr * o.weight_decay : 1.0f;
    adamw_tensor(model.params.data() + t.offset, grads_.data() + t.offset, o.m.data() + t.offset,
                 o.v.data() + t.offset, t.count(), clip, decay, o.beta1, o.beta2, lr / correction1,
                 std::sqrt(correction2), o.eps);
  }
  return norm;
}

}  // namespace attn
