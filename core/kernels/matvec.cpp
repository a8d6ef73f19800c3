#include "kernels/matvec.hpp"

namespace attn {

void matvec_rows(const float* w, std::size_t cols, const float* x, const float* bias, float* y,
                 std::size_t first, std::size_t last, FastKernels kernels) {
  if (kernels == FastKernels::avx2) return matvec_rows_avx2(w, cols, x, bias, y, first, last);
  for (std::size_t r = first; r < last; ++r) {
    const float* row = w + r * cols;
    float s = 0.0f;
    for (std::size_t c = 0; c < cols; ++c)
      s += row[c] * x[c];
    y[r] = s + (bias != nullptr ? bias[r] : 0.0f);
  }
}

}  // namespace attn
