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
// Two classes of products. Small ones (fewer than kSmallProduct multiply-adds: every lesson's)
// stay with OpenBLAS, the library torch computes them with; the two were measured within noise
// there. The large ones (a model's projections and per-head products) go to one library per
// thread count, chosen by evidence that is the same in every process on one machine:
//
//   - when one library's vectors are wider (OpenBLAS's kernel by its name, oneDNN by the ISA it
//     reports), the wider one: SSE3's Prescott fallback or AVX2's Haswell kernel against
//     oneDNN's AVX-512 measured 1.7-5x slower (docs/benchmark.md);
//   - at equal widths the two differ by machine and thread count (10-25% either way, measured on
//     an Intel Xeon and an AMD EPYC), so a probe times both on a layer's product at the thread
//     count in use, once per machine: its result is kept in a cache file (gemm_probe_cache), and
//     every later process reads it instead of timing. A process that cannot keep it (no writable
//     cache folder, a file there that attn did not write) uses OpenBLAS, torch's library.
//
// ATTN_GEMM=measure times the probe in every process instead (no cache: two processes may then
// choose differently), ATTN_GEMM=openblas|onednn forces either (the tests run the fast paths
// under both), and a build without oneDNN has only OpenBLAS.
//
// Threads: one pool. The library of the large products runs on `threads` (set_threads); the
// other runs on the calling thread only, so that OpenBLAS's pthreads and oneDNN's OpenMP threads
// never spin against each other.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attn {

enum class GemmLibrary { openblas, onednn };
// How the large products' library is chosen: by the kernels' widths and the cached probe (auto),
// by timing in this process (measure), or forced.
enum class GemmChoice { automatic, measure, openblas, onednn };

inline constexpr std::size_t kSmallProduct = std::size_t{1} << 15;  // m n k below: OpenBLAS
// oneDNN's probe time must be below this fraction of OpenBLAS's for oneDNN to take the large
// products from torch's library.
inline constexpr double kWinMargin = 0.97;

std::string_view library_name(GemmLibrary library);  // "OpenBLAS", "oneDNN"
// Whether this build has the library (OpenBLAS always).
bool gemm_library_available(GemmLibrary library);
// "auto"/"" (automatic), "measure", "openblas" or "onednn"; throws attn::Error for another word, or
// for onednn in a build without it. `source` names where the word came from, for the message.
GemmChoice parse_gemm_choice(std::string_view word, std::string_view source);

// Forces or frees the choice (before the first product, or between runs of a benchmark).
void set_gemm_choice(GemmChoice choice);

// What was chosen for the current thread count, and on what evidence; chooses now if nothing was
// chosen for it yet.
struct GemmSelection {
  GemmLibrary large = GemmLibrary::openblas;  // the library of products of kSmallProduct or more
  int threads = 1;                            // the pool's size the choice is for
  // "the kernels' widths", "the probe, cached", "the probe, measured now", "the probe, measured
  // now and cached", "ATTN_GEMM", "forced", "the only library in this build", or why no probe
  // could be kept or run
  std::string source;
  std::string openblas_kernel, onednn_isa;  // "Prescott", "avx512_core_amx"
  // With a probe: what it times (kProbe, "" when nothing was timed), its time on each library in
  // ms, and the cache file it was kept in ("" when none).
  std::string probe;
  double openblas_ms = 0.0, onednn_ms = 0.0;
  std::string cache;
};
const GemmSelection& gemm_selection();
// The rules, on given facts (for tests): the vector width of OpenBLAS's kernel, by its name (1
// SSE, 2 AVX, 3 AVX2, 4 AVX-512; 1 for a name this table does not know), the width oneDNN reports
// (0 without oneDNN), the library the widths choose, and the library the probe's times choose.
int openblas_kernel_width(std::string_view kernel);
int onednn_width();
GemmLibrary library_by_widths(int openblas_width, int onednn_width);
GemmLibrary faster_library(double openblas_ms, double onednn_ms);
// What the probe times: a BERT-base layer's four projections (x Wᵀ) on 256 rows, the mix of
// products a model's forward and backward make.
inline constexpr std::string_view kProbe =
    "a 256-row layer's products (x Wt: 768 to 2304, 768 to 768, 768 to 3072, 3072 to 768)";
// Where the probe's results are kept: ATTN_GEMM_CACHE when set (empty: nowhere), else
// $XDG_CACHE_HOME/attn/gemm-probe.tsv, else ~/.cache/attn/gemm-probe.tsv ("" when none of these
// is set).
std::string gemm_probe_cache();
// The first line of that file, which marks it as attn's.
inline constexpr std::string_view kProbeCacheHeader =
    "# attn: the GEMM probe on this machine (core/kernels/gemm.cpp); delete to measure again";
// A cache line: the key (this CPU, both libraries' versions and kernels, the probe's shape and
// `threads`), a tab, the chosen library ("openblas" or "onednn"), OpenBLAS's and oneDNN's ms.
std::string probe_cache_key(int threads);
// What the cache's text holds for `key` (its last well-formed line with that key), or nullopt.
struct CachedProbe {
  GemmLibrary library = GemmLibrary::openblas;
  double openblas_ms = 0.0, onednn_ms = 0.0;
};
std::optional<CachedProbe> probe_in_cache(std::string_view text, std::string_view key);
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
// The pool's size, as set_threads set it (1 by default).
int pool_threads();
// The threads attn's own loops (attention heads, GELU, LayerNorm) may run on: the pool's size when
// the pool is OpenMP's (oneDNN runs the large products), 1 when it is OpenBLAS's.
int own_loop_threads();
// Hands the pool to `library` (the other runs on the caller's thread) until return_pool(): for a
// benchmark that times each library alone, one library at a time. Both wait a quarter second after
// the handover, so that the previous pool's threads stop spinning first (gemm.cpp, kPoolSettle).
void lend_pool(GemmLibrary library);
void return_pool();
// The kernel OpenBLAS runs on this CPU, as it names it ("Haswell", "SkylakeX", "Prescott").
std::string openblas_kernel();

}  // namespace attn
