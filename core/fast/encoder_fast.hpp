// The fast path of the encoder, beside the readable reference in encoder.hpp: the same function,
// computed with few large GEMMs and no copies, on a batch of B sequences of T tokens (BT rows).
// Legend: T tokens, D model width, H heads, hs = D/H head size, F feed-forward width.
//
//   pack(layer)    stacks every head's q, k, v weights into one (3D, D) matrix, so that one GEMM
//                  gives a (BT, 3D) buffer whose columns are [Q_0 .. Q_H-1 | K_0 .. | V_0 ..]:
//                  head h's Q, K and V are column blocks of width hs (leading dimension 3D).
//   forward_fast   LN, one QKV GEMM, per sequence and head Q_h K_hᵀ into a (T,T) buffer (read
//                  straight out of the fused buffer, lda = 3D, the scale in the GEMM's alpha
//                  when it is exact), softmax by rows, P V_h written straight into the head's
//                  columns of the (BT, D) concatenation (ldc = D); the output GEMM adding onto
//                  the residual stream (preloaded with x + bias, beta = 1), LN, the first
//                  feed-forward GEMM, GELU, the second adding onto the stream the same way.
//   PackedEncoder  the embeddings' tables and every layer: forward_fast from ids. Packed from BERT
//                  (core/bert.hpp), it has a token-type table too, whose row each token adds
//                  between its word row and its position row (word + type + position, the
//                  order transformers adds them in), and post-LN layers at BERT's eps.
//
// The GEMMs go to OpenBLAS or oneDNN (kernels/gemm.hpp). When the pool is OpenMP's (oneDNN), the
// heads, LayerNorm's rows and GELU's parts are shared out on it too; their results do not depend
// on the thread count.
//
// The row kernels (softmax, LayerNorm, GELU: kernels/rows.hpp) are the readable layers' own, so
// they compute exactly what the reference does (torch 1.13's order of operations). The products
// and the residual sums can round differently from the reference (the libraries' paths for the
// fused and the per-head shapes, the bias and residual added in another order): tests hold the
// two within 1e-5 (small sizes) and 1e-4 (BERT-base).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "bert.hpp"
#include "encoder.hpp"
#include "kernels/rows.hpp"

namespace attn {

struct PackedEncoderLayer {
  NormPlacement placement = NormPlacement::pre;
  std::size_t d_model = 0, heads = 0, head_size = 0, d_ff = 0;
  std::vector<float> qkv_weight;  // (3D, D): rows [q of head 0..H-1 | k of heads | v of heads]
  std::vector<float> qkv_bias;    // (3D)
  std::vector<float> out_weight;  // (D, D) output_linear
  std::vector<float> out_bias;    // (D)
  std::vector<float> norm_1_weight, norm_1_bias, norm_2_weight, norm_2_bias;  // (D)
  float norm_1_eps = kLayerNormEps, norm_2_eps = kLayerNormEps;
  std::vector<float> ff_1_weight, ff_1_bias;  // (F, D), (F) linear_1
  std::vector<float> ff_2_weight, ff_2_bias;  // (D, F), (D) linear_2
  GeluApproximation approximate = GeluApproximation::none;
};

// Throws attn::Error unless `layer` is the book's layer (book attention with biased heads of
// equal size, book feed-forward) with consistent shapes.
PackedEncoderLayer pack(const EncoderLayer& layer);

// Every buffer forward_fast needs, allocated once for up to `capacity` rows (batch x tokens) in
// sequences of up to `sequence` tokens.
struct Workspace {
  std::size_t capacity = 0;  // rows: batch x tokens
  std::size_t sequence = 0;  // tokens of one sequence
  FastKernels kernels = best_fast_kernels();
  std::vector<float> qkv;       // (BT, 3D)
  std::vector<float> scores;    // (T, T), one head of one sequence at a time
  std::vector<float> context;   // (BT, D) the heads' outputs side by side
  std::vector<float> residual;  // (BT, D)
  std::vector<float> normed;    // (BT, D)
  std::vector<float> hidden;    // (BT, F)
};

// A workspace for `layer` and up to `tokens` tokens, with a scores buffer for each thread the
// pool may give the heads (which decides the GEMM library: gemm.hpp). Throws attn::Error when
// kernels is avx2 and the CPU lacks AVX2 or FMA, or for a bad ATTN_GEMM.
Workspace make_workspace(const PackedEncoderLayer& layer, std::size_t tokens,
                         FastKernels kernels = best_fast_kernels());
// A workspace for `batch` sequences of up to `tokens` tokens each.
Workspace make_workspace(const PackedEncoderLayer& layer, std::size_t batch, std::size_t tokens,
                         FastKernels kernels = best_fast_kernels());
std::size_t workspace_bytes(const Workspace& workspace);

// x (tokens, D) row-major -> out (tokens, D), the layer's output. Allocates nothing: the timed
// call. Throws attn::Error when tokens is 0 or past the workspace's capacity. x and out must not
// alias the workspace; they may alias each other.
void forward_fast(const PackedEncoderLayer& layer, const float* x, std::size_t tokens,
                  Workspace& workspace, float* out);
// `batch` sequences of `tokens` tokens: x (batch x tokens, D) -> out, each sequence attending
// within itself only (as forward() on (B,T,D)).
void forward_fast(const PackedEncoderLayer& layer, const float* x, std::size_t batch,
                  std::size_t tokens, Workspace& workspace, float* out);
// The same on a tensor x (T, D) -> (T, D) (batch 1); grows the workspace when it is too small.
Tensor2 forward_fast(const PackedEncoderLayer& layer, const Tensor2& x, Workspace& workspace);

// The whole encoder from ids (the book's TransformerEncoder with embeddings, or BERT without its
// pooler and heads), packed: the embeddings' tables and every layer.
struct PackedEncoder {
  std::size_t vocab = 0, positions = 0, d_model = 0;
  std::size_t token_types = 0;                // Y: BERT's token types; 0 for the book's encoder
  std::vector<float> token_embeddings;        // (V, D)
  std::vector<float> token_type_embeddings;   // (Y, D); empty for the book's encoder
  std::vector<float> position_embeddings;     // (P, D)
  std::vector<float> norm_weight, norm_bias;  // (D) the embeddings' LayerNorm
  float norm_eps = kEmbeddingsLayerNormEps;
  std::vector<PackedEncoderLayer> layers;
};
// Throws attn::Error for an encoder without embeddings, or a layer pack() refuses.
PackedEncoder pack(const Encoder& encoder);
// The weights init_encoder(rng, config, placement, true) draws, packed a layer at a time, so that
// at most one layer is held twice.
PackedEncoder init_packed_encoder(Rng& rng, const EncoderConfig& config, NormPlacement placement);
// BERT's embeddings (with the token-type table) and layers; the pooler and the heads are not
// packed, so forward_fast gives the last hidden state. Throws attn::Error for a layer pack()
// refuses.
PackedEncoder pack(const Bert& bert);
// The weights init_bert(rng, config, heads) draws for the embeddings and the layers (the pooler
// and the heads come after them), packed a layer at a time.
PackedEncoder init_packed_bert(Rng& rng, const BertConfig& config);
std::size_t packed_bytes(const PackedEncoder& encoder);  // its weights in bytes

struct EncoderWorkspace {
  Workspace layer;            // shared by the layers, one after the other
  std::vector<float> stream;  // (BT, D) the hidden states between layers
};
EncoderWorkspace make_workspace(const PackedEncoder& encoder, std::size_t batch, std::size_t tokens,
                                FastKernels kernels = best_fast_kernels());
// ids (batch x tokens, row-major) -> out (batch x tokens, D): the embeddings, then every layer.
// token_types (batch x tokens, as ids) are BERT's token_type_ids; nullptr: all 0 (as transformers
// without them). Throws attn::Error for an id outside the vocabulary, a token type outside
// 0..Y-1 (or any for an encoder without token types), more tokens than positions, or sizes past
// the workspace.
void forward_fast(const PackedEncoder& encoder, const std::int64_t* ids, std::size_t batch,
                  std::size_t tokens, EncoderWorkspace& workspace, float* out,
                  const std::int64_t* token_types = nullptr);

// The GEMMs forward_fast makes, in order, for `tokens` tokens (row-major, as attn::sgemm takes
// them): the benchmark times exactly these calls for its sgemm bound.
struct GemmCall {
  const char* name;  // "qkv", "scores", "context", "output", "ff_1", "ff_2"
  bool transpose_a, transpose_b;
  std::size_t m, n, k, lda, ldb, ldc;
  float alpha;        // 1/sqrt(hs) for the scores when that is exact, else 1
  float beta;         // 1 where C holds the bias beforehand
  std::size_t count;  // calls of this shape (H B for the per-head products)
  double flops() const { return 2.0 * static_cast<double>(m * n * k) * static_cast<double>(count); }
};
std::vector<GemmCall> gemm_calls(const PackedEncoderLayer& layer, std::size_t tokens,
                                 std::size_t batch = 1);

}  // namespace attn
