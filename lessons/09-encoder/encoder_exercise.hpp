// Lesson 09's exercise: the book's Embeddings, and one TransformerEncoderLayer wired pre-LN (the
// book) or post-LN (the paper, BERT). The signatures are the core's (core/encoder.hpp); you write
// the bodies in encoder_exercise.cpp.
//
// Legend: B batch, T tokens, D model width, V vocabulary, P positions.
#pragma once

#include "base/tensor.hpp"
#include "encoder.hpp"

namespace attn::exercise {

// ids (B,T) -> token rows (B,T,D), position rows 0..T-1 (1,T,D), their sum (B,T,D), and
// layer_norm(sum) (B,T,D). Throws std::invalid_argument for T > P or an id outside 0..V-1.
EmbeddingsSteps forward(const Embeddings& embeddings, const Ids& ids);

// x (B,T,D) -> every step of one layer, (B,T,D) each. pre-LN: x + attention(LN1(x)), then
// + feed_forward(LN2(that)); post-LN: LN1(x + attention(x)), then LN2(that + feed_forward(that)).
EncoderLayerSteps forward(const EncoderLayer& layer, const Tensor3& x);

}  // namespace attn::exercise
