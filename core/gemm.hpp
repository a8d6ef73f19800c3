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
// the library torch computes them with. The library of the others is chosen by measurement: the
// first time such a product comes, both libraries multiply one probe shape on one thread, and
// oneDNN takes over only when it is clearly faster (kWinMargin), so that a machine where the two
// are even keeps torch's library and the same digits from run to run. ATTN_GEMM=openblas|onednn
// forces either (the tests run the fast paths under both); a build without oneDNN has only
// OpenBLAS.
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
// How the large products' library is chosen: by measurement, or forced.
enum class GemmChoice { measure, openblas, onednn };

inline constexpr std::size_t kSmallProduct = std::size_t{1} << 15;  // m n k below: OpenBLAS
inline constexpr double kWinMargin = 0.9;  // oneDNN's time must be below 0.9 of OpenBLAS's

std::string_view library_name(GemmLibrary library);  // "OpenBLAS", "oneDNN"
// Whether this build has the library (OpenBLAS always).
bool gemm_library_available(GemmLibrary library);
// "openblas", "onednn" or "auto"/"" (measure); throws attn::Error for another word, or for onednn
// in a build without it. `source` names where the word came from, for the message.
GemmChoice parse_gemm_choice(std::string_view word, std::string_view source);

// Forces or frees the choice (before the first product, or between runs of a benchmark).
void set_gemm_choice(GemmChoice choice);

// What was chosen, and on what evidence; measures now if nothing was chosen yet.
struct GemmSelection {
  GemmLibrary large = GemmLibrary::openblas;  // the library of products of kSmallProduct or more
  GemmChoice choice = GemmChoice::measure;
  std::string source;  // "measured", "ATTN_GEMM", "forced", "the only library in this build"
  // With `measured`: the probe's best time on each library, in ms (0 when not measured).
  double openblas_ms = 0.0, onednn_ms = 0.0;
  std::size_t probe_m = 0, probe_n = 0, probe_k = 0;
};
const GemmSelection& gemm_selection();
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
int threads();
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
