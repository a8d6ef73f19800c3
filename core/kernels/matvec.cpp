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

float stream_sum(const float* data, std::size_t n, FastKernels kernels) {
  if (kernels == FastKernels::avx2) return stream_sum_avx2(data, n);
  float s[8] = {};  // eight sums in flight, so that the adds' latency does not bound the read
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t k = 0; k < 8; ++k)
      s[k] += data[i + k];
  for (; i < n; ++i)
    s[0] += data[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace attn
