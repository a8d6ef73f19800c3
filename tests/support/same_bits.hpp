// Bit-for-bit comparison of float buffers, for kernels that promise the same bits on every path.
#pragma once

#include <cmath>
#include <cstring>
#include <vector>

namespace attn::testing {

// Whether a and b hold the same floats, NaN equal to NaN.
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace attn::testing
