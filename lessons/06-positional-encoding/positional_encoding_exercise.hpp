// Lesson 06's exercise: seed 001's sinusoidal table, and the sum that gives tokens a position.
// The signatures are the core's (core/positional_encoding.hpp); you write the bodies in
// positional_encoding_exercise.cpp.
//
// Legend: B batch, T tokens, D model width, P positions in the table, F frequencies = ceil(D/2).
#pragma once

#include <cstddef>

#include "base/tensor.hpp"
#include "positional_encoding.hpp"

namespace attn::exercise {

// div_term (F) = exp(2i * -ln(10000)/D), angles (P,F) = p * div_term(i), and pe (P,D) with
// sin(angles(p, i)) in column 2i and cos(angles(p, i)) in column 2i+1 (odd D: the last cosine is
// dropped). Throws std::invalid_argument for P or D of 0.
SinusoidalTable sinusoidal_table(std::size_t positions, std::size_t width);

// x (B,T,D) + pe (T,D), the same rows for every sequence of the batch. Throws
// std::invalid_argument when pe is not (T,D).
Tensor3 add_positions(const Tensor3& x, const Tensor2& pe);

}  // namespace attn::exercise
