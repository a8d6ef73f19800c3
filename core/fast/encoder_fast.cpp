// The packed encoder: few large GEMMs (kernels/gemm.hpp) and the row kernels (kernels/rows.hpp)
// on buffers allocated once, the heads shared out on the pool (kernels/parallel.hpp).
#include "fast/encoder_fast.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/heads.hpp"
#include "kernels/gemm.hpp"
#include "kernels/parallel.hpp"
#include "kernels/rows.hpp"

namespace attn {

namespace {

// out = a + b elementwise (the residual connections; plain float adds, as torch's).
void add(const float* a, const float* b, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

// C (rows, cols) = x (rows, in) Wᵀ + bias, as linear(): the bias preloaded, then beta = 1.
void linear_into(const float* x, std::size_t rows, std::size_t in, const std::vector<float>& weight,
                 const std::vector<float>& bias, float* out) {
  const std::size_t cols = bias.size();
  [[maybe_unused]] const int threads = loop_threads(rows * cols);
  ATTN_PARALLEL_FOR
  for (std::size_t r = 0; r < rows; ++r)
    std::copy(bias.begin(), bias.end(), out + r * cols);
  sgemm(false, true, rows, cols, in, 1.0f, x, in, weight.data(), in, 1.0f, out, cols);
}

// out (rows, cols) = GELU(x Wᵀ + bias): the GEMM alone (beta = 0), then the bias and GELU in one
// pass (bias_gelu_rows), where the unfused way writes the bias before the GEMM and reads the
// whole output again for GELU.
void linear_gelu_into(FastKernels kernels, const float* x, std::size_t rows, std::size_t in,
                      const std::vector<float>& weight, const std::vector<float>& bias,
                      GeluApproximation approximate, float* out) {
  const std::size_t cols = bias.size();
  sgemm(false, true, rows, cols, in, 1.0f, x, in, weight.data(), in, 0.0f, out, cols);
  bias_gelu_rows(out, rows, cols, bias.data(), approximate, kernels);
}

// out (rows, cols) = residual + (x Wᵀ + bias): the sublayer's last Linear and the residual add in
// one GEMM. One pass preloads residual + bias into the output, and the GEMM adds x Wᵀ to it
// (beta = 1), where the unfused way writes the bias, runs the GEMM, then reads both sums again to
// add them. The sum rounds in another order than the reference's (the tests hold it within
// their tolerances). `out` may be `residual`'s storage, not x's.
void linear_residual_into(const float* x, std::size_t rows, std::size_t in,
                          const std::vector<float>& weight, const std::vector<float>& bias,
                          const float* residual, float* out) {
  const std::size_t cols = bias.size();
  [[maybe_unused]] const int threads = loop_threads(rows * cols);
  ATTN_PARALLEL_FOR
  for (std::size_t r = 0; r < rows; ++r)
    add(residual + r * cols, bias.data(), out + r * cols, cols);
  sgemm(false, true, rows, cols, in, 1.0f, x, in, weight.data(), in, 1.0f, out, cols);
}

// The reference divides the scores by sqrt(hs) in float. When sqrt(hs) is a power of two (hs = 64
// gives 8) that division is exact, and so is multiplying by its inverse inside the Q Kᵀ GEMM
// (alpha): the same bits (short of results below FLT_MIN), one pass over the scores fewer.
// Otherwise the softmax divides.
struct ScoreScaling {
  float alpha, divisor;
};
ScoreScaling score_scaling(std::size_t head_size) {
  const float root = std::sqrt(static_cast<float>(head_size));
  int exponent = 0;
  if (std::frexp(root, &exponent) == 0.5f) return {1.0f / root, 1.0f};
  return {1.0f, root};
}

std::vector<float> flat(const Tensor2& t) {
  return {t.begin(), t.end()};
}
std::vector<float> flat(const Tensor1& t) {
  return {t.begin(), t.end()};
}

void check_linear(const Linear& l, std::size_t out, std::size_t in, const char* name) {
  if (l.weight.shape(0) != out || l.weight.shape(1) != in || !l.has_bias || l.bias.size() != out) {
    throw Error(ErrorKind::bad_size, "pack",
                fmt::format("{} has weight {} and {} bias: expected ({}, {}) with a bias of {}",
                            name, shape_string_of(l.weight),
                            l.has_bias ? shape_string_of(l.bias) : "no", out, in, out));
  }
}

}  // namespace

PackedEncoderLayer pack(const EncoderLayer& layer) {
  const BookMultiHead& m = layer.attention;
  const FeedForward& ff = layer.feed_forward;
  if (ff.variant != FeedForwardVariant::book) {
    throw Error(ErrorKind::bad_value, "pack",
                fmt::format("the fast path runs the book's layer: feed-forward is {}, not book",
                            variant_name(ff.variant)));
  }
  const std::size_t d = m.output_linear.weight.shape(0), heads = m.heads.size();
  const std::size_t hs = head_size(d, heads, "pack", "expected H heads of D/H"),
                    f = ff.linear_1.weight.shape(0);
  PackedEncoderLayer p;
  p.placement = layer.placement;
  p.d_model = d;
  p.heads = heads;
  p.head_size = hs;
  p.d_ff = f;
  p.qkv_weight.resize(3 * d * d);
  p.qkv_bias.resize(3 * d);
  for (std::size_t h = 0; h < heads; ++h) {
    const AttentionHead& head = m.heads[h];
    const Linear* parts[3] = {&head.q, &head.k, &head.v};
    for (std::size_t part = 0; part < 3; ++part) {
      check_linear(*parts[part], hs, d, "an attention head's q, k or v");
      // Rows part*D + h*hs .. +hs: output columns of the (T, 3D) buffer.
      const std::size_t row = part * d + h * hs;
      std::copy(parts[part]->weight.begin(), parts[part]->weight.end(),
                p.qkv_weight.begin() + row * d);
      std::copy(parts[part]->bias.begin(), parts[part]->bias.end(), p.qkv_bias.begin() + row);
    }
  }
  check_linear(m.output_linear, d, d, "output_linear");
  check_linear(ff.linear_1, f, d, "linear_1");
  check_linear(ff.linear_2, d, f, "linear_2");
  for (const LayerNorm* norm : {&layer.layer_norm_1, &layer.layer_norm_2}) {
    if (norm->weight.size() != d || norm->bias.size() != d) {
      throw Error(ErrorKind::bad_size, "pack",
                  fmt::format("a LayerNorm has weight {} and bias {}: expected ({})",
                              shape_string_of(norm->weight), shape_string_of(norm->bias), d));
    }
    check_eps(norm->eps, "pack");
  }
  p.out_weight = flat(m.output_linear.weight);
  p.out_bias = flat(m.output_linear.bias);
  p.norm_1_weight = flat(layer.layer_norm_1.weight);
  p.norm_1_bias = flat(layer.layer_norm_1.bias);
  p.norm_1_eps = layer.layer_norm_1.eps;
  p.norm_2_weight = flat(layer.layer_norm_2.weight);
  p.norm_2_bias = flat(layer.layer_norm_2.bias);
  p.norm_2_eps = layer.layer_norm_2.eps;
  p.ff_1_weight = flat(ff.linear_1.weight);
  p.ff_1_bias = flat(ff.linear_1.bias);
  p.ff_2_weight = flat(ff.linear_2.weight);
  p.ff_2_bias = flat(ff.linear_2.bias);
  p.approximate = ff.approximate;
  return p;
}

namespace {
// One head of one sequence (`pair` = sequence x H + head): Q_h K_hᵀ, softmax, P V_h, on this
// thread's scores buffer.
void attention_head(const PackedEncoderLayer& layer, Workspace& w, const float* qkv,
                    std::size_t pair, std::size_t t, ScoreScaling scaling, FastKernels k) {
  const std::size_t d = layer.d_model, hs = layer.head_size;
  const std::size_t b = pair / layer.heads, h = pair % layer.heads;
  const float* sequence = qkv + b * t * 3 * d;
  float* context = w.context.data() + b * t * d;
  float* scores = w.scores.data() + static_cast<std::size_t>(thread_index()) * t * t;
  const float* q = sequence + h * hs;
  const float* keys = sequence + d + h * hs;
  const float* values = sequence + 2 * d + h * hs;
  // Q_h K_hᵀ: (T,hs) @ (hs,T) -> (T,T), both read in place from the fused buffer.
  sgemm(false, true, t, t, hs, scaling.alpha, q, 3 * d, keys, 3 * d, 0.0f, scores, t);
  softmax_rows(scores, t, t, scaling.divisor, k);
  // P V_h: (T,T) @ (T,hs) -> the head's columns of the concatenation.
  sgemm(false, false, t, hs, t, 1.0f, scores, t, values, 3 * d, 0.0f, context + h * hs, d);
}
}  // namespace

Workspace make_workspace(const PackedEncoderLayer& layer, std::size_t tokens, FastKernels kernels) {
  return make_workspace(layer, 1, tokens, kernels);
}

Workspace make_workspace(const PackedEncoderLayer& layer, std::size_t batch, std::size_t tokens,
                         FastKernels kernels) {
  if (kernels == FastKernels::avx2 && !cpu_has_avx2()) {
    throw Error(ErrorKind::bad_value, "make_workspace",
                "this CPU has no AVX2 and FMA: use the scalar kernels");
  }
  Workspace w;
  w.capacity = batch * tokens;
  w.sequence = tokens;
  w.kernels = kernels;
  const std::size_t d = layer.d_model, rows = batch * tokens;
  w.qkv.resize(rows * 3 * d);
  // One scores buffer per thread that may run the heads.
  w.scores.resize(static_cast<std::size_t>(std::max(1, own_loop_threads())) * tokens * tokens);
  w.context.resize(rows * d);
  w.residual.resize(rows * d);
  w.normed.resize(rows * d);
  w.hidden.resize(rows * layer.d_ff);
  return w;
}

std::size_t workspace_bytes(const Workspace& w) {
  return sizeof(float) * (w.qkv.size() + w.scores.size() + w.context.size() + w.residual.size() +
                          w.normed.size() + w.hidden.size());
}

void forward_fast(const PackedEncoderLayer& layer, const float* x, std::size_t tokens, Workspace& w,
                  float* out) {
  forward_fast(layer, x, 1, tokens, w, out);
}

void forward_fast(const PackedEncoderLayer& layer, const float* x, std::size_t batch,
                  std::size_t tokens, Workspace& w, float* out) {
  if (tokens == 0 || batch == 0 || tokens > w.sequence || batch > w.capacity / tokens) {
    throw Error(
        ErrorKind::bad_size, "forward_fast",
        fmt::format("{} tokens for a workspace of {}: make_workspace(layer, tokens) first",
                    batch == 1 ? fmt::format("{}", tokens) : fmt::format("{} x {}", batch, tokens),
                    w.capacity));
  }
  const std::size_t t = tokens, d = layer.d_model, f = layer.d_ff, hs = layer.head_size;
  const std::size_t rows = batch * t;
  if (w.qkv.size() < rows * 3 * d || w.context.size() < rows * d || w.residual.size() < rows * d ||
      w.normed.size() < rows * d || w.hidden.size() < rows * f || w.scores.size() < t * t) {
    throw Error(ErrorKind::bad_size, "forward_fast",
                fmt::format("the workspace was made for a narrower layer than D = "
                            "{}, F = {}: make_workspace(layer, batch, tokens) "
                            "for this layer",
                            d, f));
  }
  const FastKernels k = w.kernels;
  const bool pre = layer.placement == NormPlacement::pre;

  // Attention on `in` (pre: LN1(x); post: x), into w.context.
  const float* in = x;
  if (pre) {
    layer_norm_rows(x, rows, d, layer.norm_1_weight.data(), layer.norm_1_bias.data(),
                    layer.norm_1_eps, w.normed.data(), k);
    in = w.normed.data();
  }
  float* qkv = w.qkv.data();
  linear_into(in, rows, d, layer.qkv_weight, layer.qkv_bias, qkv);  // (BT,D) @ (D,3D) -> (BT,3D)
  const ScoreScaling scaling = score_scaling(hs);
  // One (T,T) scores buffer per thread; the heads of every sequence are shared out among them.
  const std::size_t pairs = batch * layer.heads;
  [[maybe_unused]] const int threads = static_cast<int>(
      std::min({static_cast<std::size_t>(own_loop_threads()), w.scores.size() / (t * t), pairs}));
  // An exception must not leave the parallel loop (OpenMP would end the program): the first is
  // kept, the remaining heads are skipped, and it is thrown after the loop.
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  ATTN_PARALLEL_FOR
  for (std::size_t pair = 0; pair < pairs; ++pair) {
    if (failed.load(std::memory_order_relaxed)) continue;
    try {
      attention_head(layer, w, qkv, pair, t, scaling, k);
    } catch (...) {
      if (!failed.exchange(true)) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  // residual_1: pre x + attention; post LN1(x + attention). The output projection adds straight
  // onto x (linear_residual_into).
  float* residual = w.residual.data();
  if (pre) {
    linear_residual_into(w.context.data(), rows, d, layer.out_weight, layer.out_bias, x, residual);
    layer_norm_rows(residual, rows, d, layer.norm_2_weight.data(), layer.norm_2_bias.data(),
                    layer.norm_2_eps, w.normed.data(), k);
    in = w.normed.data();
  } else {
    linear_residual_into(w.context.data(), rows, d, layer.out_weight, layer.out_bias, x,
                         w.normed.data());
    layer_norm_rows(w.normed.data(), rows, d, layer.norm_1_weight.data(), layer.norm_1_bias.data(),
                    layer.norm_1_eps, residual, k);
    in = residual;
  }
  // Feed-forward on `in` (pre: LN2(residual_1); post: residual_1), its last Linear adding onto
  // residual_1.
  linear_gelu_into(k, in, rows, d, layer.ff_1_weight, layer.ff_1_bias, layer.approximate,
                   w.hidden.data());  // (BT,D) -> (BT,F)
  if (pre) {
    linear_residual_into(w.hidden.data(), rows, f, layer.ff_2_weight, layer.ff_2_bias, residual,
                         out);  // (BT,F) -> (BT,D)
  } else {
    linear_residual_into(w.hidden.data(), rows, f, layer.ff_2_weight, layer.ff_2_bias, residual,
                         w.normed.data());
    layer_norm_rows(w.normed.data(), rows, d, layer.norm_2_weight.data(), layer.norm_2_bias.data(),
                    layer.norm_2_eps, out, k);
  }
}

Tensor2 forward_fast(const PackedEncoderLayer& layer, const Tensor2& x, Workspace& workspace) {
  if (x.shape(1) != layer.d_model) {
    throw Error(ErrorKind::bad_size, "forward_fast",
                fmt::format("x {} does not fit a layer of width D = {}: expected (T, {})",
                            shape_string_of(x), layer.d_model, layer.d_model));
  }
  const std::size_t tokens = x.shape(0);
  if (tokens > workspace.capacity || tokens > workspace.sequence)
    workspace = make_workspace(layer, tokens, workspace.kernels);
  Tensor2 out({tokens, layer.d_model});
  forward_fast(layer, x.data(), tokens, workspace, out.data());
  return out;
}

namespace {
void pack_embeddings(const Embeddings& e, PackedEncoder& p) {
  const Tensor2& tokens = e.token_embeddings.weight;
  const Tensor2& positions = e.position_embeddings.weight;
  const std::size_t d = tokens.shape(1);
  if (positions.shape(1) != d || e.layer_norm.weight.size() != d || e.layer_norm.bias.size() != d) {
    throw Error(ErrorKind::bad_size, "pack",
                fmt::format("embeddings of {} and {} with a LayerNorm of {}: expected one "
                            "width",
                            shape_string_of(tokens), shape_string_of(positions),
                            shape_string_of(e.layer_norm.weight)));
  }
  check_eps(e.layer_norm.eps, "pack");
  p.vocab = tokens.shape(0);
  p.positions = positions.shape(0);
  p.d_model = d;
  p.token_embeddings = flat(tokens);
  p.position_embeddings = flat(positions);
  p.norm_weight = flat(e.layer_norm.weight);
  p.norm_bias = flat(e.layer_norm.bias);
  p.norm_eps = e.layer_norm.eps;
}

void pack_token_types(const Tensor2& types, PackedEncoder& p) {
  if (types.shape(0) == 0 || types.shape(1) != p.d_model) {
    throw Error(ErrorKind::bad_size, "pack",
                fmt::format("token type embeddings {} beside word embeddings of width {}: "
                            "expected (Y, {}) with Y > 0",
                            shape_string_of(types), p.d_model, p.d_model));
  }
  p.token_types = types.shape(0);
  p.token_type_embeddings = flat(types);
}

void check_layer_width(const PackedEncoder& p, const PackedEncoderLayer& layer) {
  if (layer.d_model != p.d_model) {
    throw Error(ErrorKind::bad_size, "pack",
                fmt::format("a layer of width {} after embeddings of width {}: expected one "
                            "width",
                            layer.d_model, p.d_model));
  }
}

void pack_layer(const EncoderLayer& layer, PackedEncoder& p) {
  p.layers.push_back(pack(layer));
  check_layer_width(p, p.layers.back());
}

void pack_layers(const std::vector<EncoderLayer>& layers, PackedEncoder& p) {
  for (const EncoderLayer& layer : layers)
    pack_layer(layer, p);
}
}  // namespace

PackedEncoder pack(const Encoder& encoder) {
  if (!encoder.with_embeddings) {
    throw Error(ErrorKind::bad_value, "pack",
                "the fast encoder starts from ids: expected an encoder with embeddings");
  }
  PackedEncoder p;
  pack_embeddings(encoder.embeddings, p);
  pack_layers(encoder.layers, p);
  return p;
}

PackedEncoder pack(const Bert& bert) {
  PackedEncoder p;
  pack_embeddings(bert.embeddings, p);
  pack_token_types(bert.token_type_embeddings.weight, p);
  pack_layers(bert.layers, p);
  return p;
}

PackedEncoder init_packed_encoder(Rng& rng, const EncoderConfig& config, NormPlacement placement) {
  PackedEncoder p;
  pack_embeddings(init_embeddings(rng, config), p);
  for (std::size_t i = 0; i < config.num_hidden_layers; ++i)
    pack_layer(init_encoder_layer(rng, config, placement), p);
  return p;
}

PackedEncoder init_packed_bert(Rng& rng, const BertConfig& config) {
  // init_bert's draws, in its order: the embeddings, the token types, then the layers.
  const EncoderConfig& c = config.sizes;
  const auto eps = static_cast<float>(c.layer_norm_eps);
  PackedEncoder p;
  Embeddings embeddings = init_embeddings(rng, c);
  embeddings.layer_norm.eps = eps;
  pack_embeddings(embeddings, p);
  pack_token_types(init_embedding(rng, config.type_vocab_size, c.hidden_size).weight, p);
  for (std::size_t i = 0; i < c.num_hidden_layers; ++i) {
    EncoderLayer layer = init_encoder_layer(rng, c, NormPlacement::post);
    layer.layer_norm_1.eps = layer.layer_norm_2.eps = eps;
    pack_layer(layer, p);
  }
  return p;
}

std::size_t packed_bytes(const PackedEncoder& e) {
  std::size_t floats = e.token_embeddings.size() + e.token_type_embeddings.size() +
                       e.position_embeddings.size() + e.norm_weight.size() + e.norm_bias.size();
  for (const PackedEncoderLayer& l : e.layers) {
    floats += l.qkv_weight.size() + l.qkv_bias.size() + l.out_weight.size() + l.out_bias.size() +
              l.norm_1_weight.size() + l.norm_1_bias.size() + l.norm_2_weight.size() +
              l.norm_2_bias.size() + l.ff_1_weight.size() + l.ff_1_bias.size() +
              l.ff_2_weight.size() + l.ff_2_bias.size();
  }
  return floats * sizeof(float);
}

EncoderWorkspace make_workspace(const PackedEncoder& encoder, std::size_t batch, std::size_t tokens,
                                FastKernels kernels) {
  EncoderWorkspace w;
  const PackedEncoderLayer* widest = nullptr;  // the widest feed-forward sets the size
  for (const PackedEncoderLayer& l : encoder.layers)
    if (widest == nullptr || l.d_ff > widest->d_ff) widest = &l;
  if (widest != nullptr) w.layer = make_workspace(*widest, batch, tokens, kernels);
  if (encoder.layers.empty()) {
    w.layer.capacity = batch * tokens;
    w.layer.sequence = tokens;
    w.layer.kernels = kernels;
  }
  w.stream.resize(batch * tokens * encoder.d_model);
  return w;
}

void forward_fast(const PackedEncoder& encoder, const std::int64_t* ids, std::size_t batch,
                  std::size_t tokens, EncoderWorkspace& w, float* out,
                  const std::int64_t* token_types) {
  const std::size_t d = encoder.d_model, rows = batch * tokens;
  if (tokens > encoder.positions) {
    throw Error(ErrorKind::bad_size, "forward_fast",
                fmt::format("{} tokens but only {} positions (max_position_embeddings): use at "
                            "most {} tokens",
                            tokens, encoder.positions, encoder.positions));
  }
  if (tokens == 0 || batch == 0 || tokens > w.layer.sequence || rows > w.layer.capacity ||
      w.stream.size() < rows * d) {
    throw Error(ErrorKind::bad_size, "forward_fast",
                fmt::format("{} x {} tokens for a workspace of {}: make_workspace(encoder, batch, "
                            "tokens) first",
                            batch, tokens, w.layer.capacity));
  }
  if (token_types != nullptr && encoder.token_types == 0) {
    throw Error(ErrorKind::bad_value, "forward_fast",
                "token types for an encoder without a token type table: give them to BERT only");
  }
  float* stream = w.stream.data();
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int64_t id = ids[r];
    if (id < 0 || static_cast<std::uint64_t>(id) >= encoder.vocab) {
      throw Error(ErrorKind::bad_value, "forward_fast",
                  fmt::format("id {} at position {} is outside the vocabulary of "
                              "{}: expected 0 to {}",
                              id, r, encoder.vocab, encoder.vocab - 1));
    }
    const float* token = encoder.token_embeddings.data() + static_cast<std::size_t>(id) * d;
    const float* position = encoder.position_embeddings.data() + (r % tokens) * d;
    float* row = stream + r * d;
    if (encoder.token_types > 0) {
      // (word + token type) + position, transformers' order of the two float adds.
      const std::int64_t type = token_types == nullptr ? 0 : token_types[r];
      if (type < 0 || static_cast<std::uint64_t>(type) >= encoder.token_types) {
        throw Error(ErrorKind::bad_value, "forward_fast",
                    fmt::format("token type {} at position {} is outside the {} token types: "
                                "expected 0 to {}",
                                type, r, encoder.token_types, encoder.token_types - 1));
      }
      add(token, encoder.token_type_embeddings.data() + static_cast<std::size_t>(type) * d, row, d);
      token = row;
    }
    add(token, position, row, d);
  }
  float* embedded = encoder.layers.empty() ? out : stream;
  layer_norm_rows(stream, rows, d, encoder.norm_weight.data(), encoder.norm_bias.data(),
                  encoder.norm_eps, embedded, w.layer.kernels);
  for (std::size_t i = 0; i < encoder.layers.size(); ++i) {
    forward_fast(encoder.layers[i], stream, batch, tokens, w.layer,
                 i + 1 == encoder.layers.size() ? out : stream);
  }
}

std::vector<GemmCall> gemm_calls(const PackedEncoderLayer& layer, std::size_t tokens,
                                 std::size_t batch) {
  const std::size_t t = tokens, d = layer.d_model, f = layer.d_ff, hs = layer.head_size,
                    h = layer.heads, rows = batch * tokens;
  return {
      {"qkv", false, true, rows, 3 * d, d, d, d, 3 * d, 1.0f, 1.0f, 1},
      {"scores", false, true, t, t, hs, 3 * d, 3 * d, t, score_scaling(hs).alpha, 0.0f, h * batch},
      {"context", false, false, t, hs, t, t, 3 * d, d, 1.0f, 0.0f, h * batch},
      {"output", false, true, rows, d, d, d, d, d, 1.0f, 1.0f, 1},
      {"ff_1", false, true, rows, f, d, d, d, f, 1.0f, 0.0f, 1},
      {"ff_2", false, true, rows, d, f, f, f, d, 1.0f, 1.0f, 1},
  };
}

}  // namespace attn
