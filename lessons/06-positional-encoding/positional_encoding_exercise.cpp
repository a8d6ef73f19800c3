// Lesson 06's exercise. Fill in each function where it says TODO, then run
//
//     attn check positional-encoding        (the tests, with what was expected and what came out)
//     attn hint positional-encoding         (a hint, one stage at a time)
//
// Tensor2 is xt::xtensor<float, 2>: pe.shape(0) is its first size, pe(p, j) an element, and
// Tensor2({rows, cols}) a new tensor of that shape. SinusoidalTable (core/positional_encoding.hpp)
// holds div_term (F), angles (P,F) and pe (P,D).
#include "positional_encoding_exercise.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace attn::exercise {

SinusoidalTable sinusoidal_table(std::size_t positions, std::size_t width) {
  // TODO(lesson 06): seed 001's sinusoidal table for positions 0..P-1: div_term (F), the
  // frequencies 1/10000^(2i/D) with F = (D+1)/2; angles (P,F), position times frequency; pe (P,D),
  // the angles' sines in the even columns and their cosines in the odd ones (odd D: the last
  // cosine is dropped). Throws std::invalid_argument when P or D is 0. PyTorch:
  // div_term = torch.exp(torch.arange(0, D, 2).float() * (-math.log(10000.0) / D));
  // angles = torch.arange(P).float().unsqueeze(1) * div_term; pe[:, 0::2] = torch.sin(angles);
  // pe[:, 1::2] = torch.cos(angles)[:, : D // 2]
  // BEGIN SOLUTION
  if (positions == 0 || width == 0) {
    throw std::invalid_argument(fmt::format(
        "sinusoidal_table: positions={} and width={} must both be at least 1", positions, width));
  }
  const std::size_t frequencies = (width + 1) / 2;
  SinusoidalTable table;
  table.div_term = Tensor1::from_shape({frequencies});
  const double step = -std::log(10000.0) / static_cast<double>(width);
  for (std::size_t i = 0; i < frequencies; ++i) {
    table.div_term(i) = static_cast<float>(std::exp(static_cast<double>(2 * i) * step));  // (F)
  }
  table.angles = Tensor2({positions, frequencies});
  for (std::size_t p = 0; p < positions; ++p) {
    for (std::size_t i = 0; i < frequencies; ++i) {
      table.angles(p, i) = static_cast<float>(p) * table.div_term(i);  // (P,1) * (F) -> (P,F)
    }
  }
  table.pe = Tensor2({positions, width});
  for (std::size_t p = 0; p < positions; ++p) {
    for (std::size_t j = 0; j < width; ++j) {
      const float angle = table.angles(p, j / 2);
      table.pe(p, j) = j % 2 == 0 ? std::sin(angle) : std::cos(angle);  // (P,D)
    }
  }
  return table;
  // END SOLUTION
}

Tensor3 add_positions(const Tensor3& x, const Tensor2& pe) {
  // TODO(lesson 06): give each token its position: x plus pe, the same table rows for every
  // sequence of the batch. x (B,T,D), pe (T,D) -> (B,T,D). Throws std::invalid_argument when pe
  // is not (T,D). PyTorch: x + pe.unsqueeze(0)
  // BEGIN SOLUTION
  if (pe.shape(0) != x.shape(1) || pe.shape(1) != x.shape(2)) {
    throw std::invalid_argument(fmt::format("add_positions: pe ({},{}) does not fit x ({},{},{})",
                                            pe.shape(0), pe.shape(1), x.shape(0), x.shape(1),
                                            x.shape(2)));
  }
  Tensor3 out(x.shape());  // (B,T,D)
  for (std::size_t b = 0; b < x.shape(0); ++b) {
    for (std::size_t t = 0; t < x.shape(1); ++t) {
      for (std::size_t d = 0; d < x.shape(2); ++d)
        out(b, t, d) = x(b, t, d) + pe(t, d);
    }
  }
  return out;
  // END SOLUTION
}

}  // namespace attn::exercise
