// The row kernels' dispatch: AVX2 bodies (kernels/rows_avx2.cpp) where the CPU has them, the
// scalar routines of kernels/torch_order.cpp otherwise; large calls shared out on the pool.
#include "kernels/rows.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "kernels/parallel.hpp"
#include "kernels/rows_avx2.hpp"

namespace attn {

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

FastKernels best_fast_kernels() {
  static const bool avx2 = [] {
    const char* forced = std::getenv("ATTN_FAST_KERNELS");
    if (forced != nullptr && std::string_view(forced) == "scalar") return false;
    return cpu_has_avx2();
  }();
  return avx2 ? FastKernels::avx2 : FastKernels::scalar;
}

std::string_view kernels_name(FastKernels kernels) {
  return kernels == FastKernels::avx2 ? "avx2+fma" : "scalar";
}

void softmax_rows(float* x, std::size_t rows, std::size_t n, float divisor, FastKernels kernels) {
  for (std::size_t r = 0; r < rows; ++r) {
    if (kernels == FastKernels::avx2) {
      softmax_row_avx2(x + r * n, n, divisor);
    } else {
      torch_softmax_row(x + r * n, n, divisor);
    }
  }
}

void layer_norm_rows(const float* x, std::size_t rows, std::size_t n, const float* weight,
                     const float* bias, float eps, float* out, FastKernels kernels) {
  [[maybe_unused]] const int threads = loop_threads(rows * n);
  ATTN_PARALLEL_FOR
  for (std::size_t r = 0; r < rows; ++r)
    layer_norm_row(x + r * n, n, weight, bias, eps, nullptr, out + r * n, kernels);
}

RowMoments layer_norm_row(const float* x, std::size_t n, const float* weight, const float* bias,
                          float eps, float* normalised, float* out, FastKernels kernels) {
  if (kernels == FastKernels::avx2)
    return layer_norm_row_avx2(x, n, weight, bias, eps, normalised, out);
  return torch_layer_norm_row(x, n, weight, bias, eps, normalised, out);
}

void gelu_erf_backward(const float* x, const float* dy, float* dx, std::size_t n,
                       FastKernels kernels) {
  if (kernels == FastKernels::avx2) {
    gelu_erf_backward_avx2(x, dy, dx, n);
    return;
  }
  for (std::size_t i = 0; i < n; ++i)
    dx[i] = dy[i] * gelu_erf_slope_onednn(x[i]);
}

namespace {
void gelu_part(float* x, std::size_t n, GeluApproximation approximate, FastKernels kernels) {
  if (kernels == FastKernels::avx2) {
    gelu_avx2(x, n, approximate);
  } else {
    torch_gelu(x, n, 0, approximate);
  }
}
}  // namespace

void gelu_in_place(float* x, std::size_t n, GeluApproximation approximate, FastKernels kernels) {
  [[maybe_unused]] const int threads = loop_threads(n);
  if (threads <= 1) {
    gelu_part(x, n, approximate, kernels);
    return;
  }
  // Parts of a multiple of 16 elements, the last taking the rest: each part's tail rule (the
  // elements past its last multiple of 16) then falls on the whole tensor's tail, as torch's.
  // A part of one element would take torch's one-element path (libm's erf), which only a whole
  // tensor of one element takes: it joins the part before it.
  const std::size_t chunk = (n / static_cast<std::size_t>(threads) + 15) / 16 * 16;
  std::size_t parts = (n + chunk - 1) / chunk;
  if (parts > 1 && n - (parts - 1) * chunk == 1) --parts;
  ATTN_PARALLEL_FOR
  for (std::size_t part = 0; part < parts; ++part) {
    const std::size_t from = part * chunk;
    const std::size_t to = part + 1 == parts ? n : from + chunk;
    gelu_part(x + from, to - from, approximate, kernels);
  }
}

void bias_gelu_rows(float* x, std::size_t rows, std::size_t cols, const float* bias,
                    GeluApproximation approximate, FastKernels kernels) {
  const std::size_t n = rows * cols;
  if (n == 0) return;
  // Blocks of whole rows whose element count is a multiple of 16, the last taking the rest: each
  // block's tail rule then falls on the whole tensor's tail. About 64 KiB each (at least the fewest
  // rows that make a multiple of 16), so that the GELU reads what the bias add just wrote from
  // cache.
  constexpr std::size_t kBlockElements = std::size_t{1} << 14;
  const std::size_t step = 16 / std::gcd(cols, std::size_t{16});  // rows per multiple of 16
  const std::size_t block_rows = std::max<std::size_t>(1, kBlockElements / (cols * step)) * step;
  std::size_t blocks = (rows + block_rows - 1) / block_rows;
  // A part of one element would take torch's one-element path (libm's erf), which only a whole
  // tensor of one element takes: a last block of one element joins the block before it.
  if (blocks > 1 && (rows - (blocks - 1) * block_rows) * cols == 1) --blocks;
  [[maybe_unused]] const int threads = loop_threads(n);
  ATTN_PARALLEL_FOR
  for (std::size_t block = 0; block < blocks; ++block) {
    const std::size_t first = block * block_rows;
    const std::size_t last = block + 1 == blocks ? rows : first + block_rows;
    for (std::size_t r = first; r < last; ++r)
      for (std::size_t j = 0; j < cols; ++j)
        x[r * cols + j] += bias[j];
    gelu_part(x + first * cols, (last - first) * cols, approximate, kernels);
  }
}

}  // namespace attn
