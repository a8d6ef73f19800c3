// The matrix products' library. Every sgemm in attn goes through sgemm() below, which hands it to
// one of two libraries:
//
//   OpenBLAS  torch's own BLAS on Debian. Its kernel comes from a table of CPU models (or from
//             OPENBLAS_CORETYPE), and on a model newer than its table it falls back to an old
//             kernel: OpenBLAS 0.3.21 runs a 2023 Xeon (family 6, model 207) on its SSE3
//             "Prescott" kernel at a fifth of what oneDNN gets from the same core.
//   oneDNN    dispatches on the CPU's instruction sets at run time (AVX2, AVX-512, ...), whatever
//             the CPU's model and whatever OPENBLAS_CORETYPE says.
//
// Small products (fewer than kSmallProduct multiply-adds: every lesson's) stay with OpenBLAS,
// the library torch computes them with. For the others each library reports the instructions its
// kernel runs on this CPU (OpenBLAS its kernel's name, oneDNN its effective ISA), and oneDNN
// takes over only when its vectors are wider: SSE3's Prescott fallback or AVX2's Haswell kernel
// against oneDNN's AVX-512, measured 2-5x slower (docs/benchmark.md); equal widths measured
// within 10% of each other, and then torch's library stays. The rule is the libraries' own report,
// not a timing, because a timed choice flips between runs where the two are close, and the same
// command must print the same bits run after run. ATTN_GEMM=measure chooses by timing instead
// (both multiply one probe shape on one thread; oneDNN when below kWinMargin of OpenBLAS's time),
// ATTN_GEMM=openblas|onednn forces either (the tests run the fast paths under both), and a build
// without oneDNN has only OpenBLAS.
//
// Threads: one pool. The library of the large products runs on `threads` (set_threads); the
// other runs on the calling thread only, so that OpenBLAS's pthreads and oneDNN's OpenMP threads
// never spin against each other.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attn {

enum class GemmLibrary { openblas, onednn };
// How the large products' library is chosen: by the libraries' kernels (auto), by timing, or
// forced.
enum class GemmChoice { kernels, measure, openblas, onednn };

inline constexpr std::size_t kSmallProduct = std::size_t{1} << 15;  // m n k below: OpenBLAS
inline constexpr double kWinMargin = 0.9;  // oneDNN's time must be below 0.9 of OpenBLAS's

std::string_view library_name(GemmLibrary library);  // "OpenBLAS", "oneDNN"
// Whether this build has the library (OpenBLAS always).
bool gemm_library_available(GemmLibrary library);
// "auto"/"" (kernels), "measure", "openblas" or "onednn"; throws attn::Error for another word, or
// for onednn in a build without it. `source` names where the word came from, for the message.
GemmChoice parse_gemm_choice(std::string_view word, std::string_view source);

// Forces or frees the choice (before the first product, or between runs of a benchmark).
void set_gemm_choice(GemmChoice choice);

// What was chosen, and on what evidence; measures now if nothing was chosen yet.
struct GemmSelection {
  GemmLibrary large = GemmLibrary::openblas;  // the library of products of kSmallProduct or more
  // "the kernels' widths", "measured", "ATTN_GEMM", "forced", "the only library in this build",
  // or why oneDNN's probe failed
  std::string source;
  std::string openblas_kernel, onednn_isa;  // "Prescott", "avx512_core_amx"
  // With `measured`: the probe's best time on each library, in ms (0 when not measured).
  double openblas_ms = 0.0, onednn_ms = 0.0;
  std::size_t probe_m = 0, probe_n = 0, probe_k = 0;
};
const GemmSelection& gemm_selection();
// The rules, on given facts (for tests): the vector width of OpenBLAS's kernel, by its name (1
// SSE, 2 AVX, 3 AVX2, 4 AVX-512; 1 for a name this table does not know), the width oneDNN reports
// (0 without oneDNN), the library the widths choose, and the library the probe's times choose.
int openblas_kernel_width(std::string_view kernel);
int onednn_width();
GemmLibrary library_by_widths(int openblas_width, int onednn_width);
GemmLibrary faster_library(double openblas_ms, double onednn_ms);
// The library a product of m n k multiply-adds goes to.
GemmLibrary gemm_library_for(std::size_t m, std::size_t n, std::size_t k);

// Row-major C (m,n) = alpha op(A) op(B) + beta C on raw storage, op(X) = X or Xᵀ. lda, ldb, ldc
// are the row strides of A, B, C as stored. beta = 0 ignores C's contents (NaN included).
void sgemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
           float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
           float beta, float* c, std::size_t ldc);
// The same on a library named by the caller (the benchmark times each).
void sgemm_on(GemmLibrary library, bool transpose_a, bool transpose_b, std::size_t m, std::size_t n,
              std::size_t k, float alpha, const float* a, std::size_t lda, const float* b,
              std::size_t ldb, float beta, float* c, std::size_t ldc);

// The size of the one thread pool (1 to 256).
void set_threads(int threads);
// The threads attn's own loops (attention heads, GELU, LayerNorm) may run on: the pool's size when
// the pool is OpenMP's (oneDNN runs the large products), 1 when it is OpenBLAS's.
int own_loop_threads();
// Hands the pool to `library` (the other runs on the caller's thread) until return_pool(): for a
// benchmark that times each library alone, one library at a time.
void lend_pool(GemmLibrary library);
void return_pool();
// The kernel OpenBLAS runs on this CPU, as it names it ("Haswell", "SkylakeX", "Prescott").
std::string openblas_kernel();

}  // namespace attn
