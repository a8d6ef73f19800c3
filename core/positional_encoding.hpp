// Positions for attention, which has no sense of order of its own. Legend: B batch, T tokens,
// D model width, P positions in the table (max positions), F frequencies = ceil(D/2).
//
// Two notebook forms: seed 001's PositionalEncoding(d_model, seq_len, dropout), the paper's fixed
// sinusoids kept as a buffer `pe` of seq_len rows, and the book's Embeddings.position_embeddings
// = nn.Embedding(max_position_embeddings, D), a learned table looked up at positions 0..T-1.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/budget.hpp"
#include "base/tensor.hpp"
#include "linear.hpp"
#include "module.hpp"
#include "trace.hpp"

namespace attn {

struct SinusoidalTable {
  Tensor1 div_term;  // (F) exp(2i * -ln(10000)/D) = 1 / 10000^(2i/D): the frequencies
  Tensor2 angles;    // (P,F) position * div_term
  Tensor2 pe;        // (P,D) sin(angles) on the even columns, cos(angles) on the odd ones
};

// Seed 001's table for positions 0..P-1, computed as it does in float32: div_term by torch's
// exp, then torch's sin and cos of the whole (P,F) angle tensor. For odd D the last sine has no
// cosine partner (the seed's `pe[:, 1::2] = cos(...)` fails there; here the extra cosine is
// dropped). Throws attn::Error for P or D of 0.
SinusoidalTable sinusoidal_table(std::size_t positions, std::size_t width);
// What sinusoidal_table holds at its peak, for a memory budget (core/base/budget.hpp): the table, the
// angles, their sines and cosines.
MemoryPlan plan_sinusoidal_table(std::size_t positions, std::size_t width);

// Seed 001: PositionalEncoding(d_model, seq_len, dropout): the table is a buffer, not a parameter,
// and the module's one child is its dropout.
Module describe_sinusoidal_encoding();
// torchinfo's rows for seed 001's PositionalEncoding called on x of `shape` (B,T,D).
std::vector<LayerInfo> trace_sinusoidal_encoding(const Shape& shape);

// The book: Embeddings.position_embeddings = nn.Embedding(P, D).
struct PositionEmbedding {
  Tensor2 weight;  // (P,D), one learned row per position
};
// nn.Embedding's default initialisation: every weight N(0, 1).
PositionEmbedding init_position_embedding(Rng& rng, std::size_t positions, std::size_t width);
Module describe_position_embedding(std::size_t positions, std::size_t width, std::string name = "");
void visit_parameters(PositionEmbedding& embedding, const ParameterVisitor& visit);
// torchinfo's row for nn.Embedding(P, D) called on position ids of `shape` (1,T).
std::vector<LayerInfo> trace_position_embedding(std::size_t positions, std::size_t width,
                                                const Shape& shape);

// Rows 0..T-1 of a (P,D) table: seed 001's pe[:, :T], or the embedding looked up at
// position_ids = arange(T). Throws attn::Error when T > P.
Tensor2 first_positions(const Tensor2& table, std::size_t tokens);

// x (B,T,D) + pe (T,D), the same rows for every sequence of the batch.
Tensor3 add_positions(const Tensor3& x, const Tensor2& pe);

}  // namespace attn
