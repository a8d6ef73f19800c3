// The only file that includes OpenBLAS's cblas.h (it clashes with xtensor-blas's declarations)
// and oneDNN's dnnl.h.
#include "kernels/gemm.hpp"

#include <cblas.h>
#if defined(ATTN_HAVE_ONEDNN)
#include <dnnl.h>
#include <omp.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

extern "C" char* openblas_get_corename(void);

namespace attn {

namespace {

struct State {
  bool selected = false;
  GemmSelection selection;
  GemmChoice forced = GemmChoice::kernels;
  bool forced_by_caller = false;
  int threads = 1;
};

State& state() {
  static State s;
  return s;
}

void pool_to(GemmLibrary library, int threads) {
  openblas_set_num_threads(library == GemmLibrary::openblas ? threads : 1);
#if defined(ATTN_HAVE_ONEDNN)
  omp_set_num_threads(library == GemmLibrary::onednn ? threads : 1);
#endif
}

// The pool belongs to the large products' library; the other library runs on the caller's thread.
void apply_threads() {
  const State& s = state();
  const bool onednn_large = s.selected && s.selection.large == GemmLibrary::onednn;
  pool_to(onednn_large ? GemmLibrary::onednn : GemmLibrary::openblas, s.threads);
}

void check_int_sizes(std::size_t m, std::size_t n, std::size_t k, std::size_t lda, std::size_t ldb,
                     std::size_t ldc) {
  constexpr auto kMaxInt = static_cast<std::size_t>(std::numeric_limits<int>::max());
  if (std::max({m, n, k, lda, ldb, ldc}) > kMaxInt) {
    throw Error(ErrorKind::bad_size, "sgemm",
                fmt::format("m={} n={} k={} (lda={} ldb={} ldc={}) exceed the BLAS's int "
                            "sizes",
                            m, n, k, lda, ldb, ldc));
  }
}

void run_openblas(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                  float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                  float beta, float* c, std::size_t ldc) {
  const auto as_int = [](std::size_t v) { return static_cast<int>(v); };
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, as_int(m), as_int(n), as_int(k), alpha, a,
              as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}

void run_onednn([[maybe_unused]] bool transpose_a, [[maybe_unused]] bool transpose_b,
                [[maybe_unused]] std::size_t m, [[maybe_unused]] std::size_t n,
                [[maybe_unused]] std::size_t k, [[maybe_unused]] float alpha,
                [[maybe_unused]] const float* a, [[maybe_unused]] std::size_t lda,
                [[maybe_unused]] const float* b, [[maybe_unused]] std::size_t ldb,
                [[maybe_unused]] float beta, [[maybe_unused]] float* c,
                [[maybe_unused]] std::size_t ldc) {
#if defined(ATTN_HAVE_ONEDNN)
  const auto dim = [](std::size_t v) { return static_cast<dnnl_dim_t>(v); };
  const dnnl_status_t status =
      dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', dim(m), dim(n), dim(k), alpha, a,
                 dim(lda), b, dim(ldb), beta, c, dim(ldc));
  if (status != dnnl_success) {
    throw Error(ErrorKind::bad_value, "sgemm",
                fmt::format("oneDNN's sgemm failed (status {}) on m={} n={} k={}: run "
                            "with ATTN_GEMM=openblas",
                            static_cast<int>(status), m, n, k));
  }
#else
  throw Error(ErrorKind::bad_value, "sgemm",
              "this build has no oneDNN: run with ATTN_GEMM=openblas");
#endif
}

// The probe: a linear layer's product (x Wᵀ) of 128 rows, 512 in and 512 out.
constexpr std::size_t kProbeM = 128, kProbeN = 512, kProbeK = 512;
constexpr int kProbeRuns = 3;

double probe_ms(GemmLibrary library) {
  std::vector<float> a(kProbeM * kProbeK), b(kProbeN * kProbeK), c(kProbeM * kProbeN);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<float>(i % 5) * 0.125f - 0.25f;
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run <= kProbeRuns; ++run) {  // run 0 warms up (oneDNN generates its kernel)
    const auto start = std::chrono::steady_clock::now();
    sgemm_on(library, false, true, kProbeM, kProbeN, kProbeK, 1.0f, a.data(), kProbeK, b.data(),
             kProbeK, 0.0f, c.data(), kProbeN);
    const auto stop = std::chrono::steady_clock::now();
    if (run > 0)
      best = std::min(best, std::chrono::duration<double, std::milli>(stop - start).count());
  }
  return best;
}

std::string onednn_isa_name() {
#if defined(ATTN_HAVE_ONEDNN)
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
#else
  return "none";
#endif
}

GemmSelection select() {
  State& s = state();
  GemmChoice choice = s.forced;
  std::string source = "forced";
  if (!s.forced_by_caller) {
    const char* word = std::getenv("ATTN_GEMM");
    choice = parse_gemm_choice(word != nullptr ? word : "", "ATTN_GEMM");
    source = word != nullptr && *word != '\0' ? "ATTN_GEMM" : "";
  }
  GemmSelection out;
  out.source = source;
  out.openblas_kernel = openblas_kernel();
  out.onednn_isa = onednn_isa_name();
  if (choice == GemmChoice::openblas) return out;
  if (choice == GemmChoice::onednn) {
    out.large = GemmLibrary::onednn;
    return out;
  }
  if (!gemm_library_available(GemmLibrary::onednn)) {
    out.source = "the only library in this build";
    return out;
  }
  if (choice == GemmChoice::kernels) {
    out.large = library_by_widths(openblas_kernel_width(out.openblas_kernel), onednn_width());
    out.source = "the kernels' widths";
    return out;
  }
  // Both on one thread, so that neither pool starts for the measurement (gemm_selection puts the
  // pool back, also when a probe throws).
  openblas_set_num_threads(1);
#if defined(ATTN_HAVE_ONEDNN)
  omp_set_num_threads(1);
#endif
  out.probe_m = kProbeM;
  out.probe_n = kProbeN;
  out.probe_k = kProbeK;
  out.openblas_ms = probe_ms(GemmLibrary::openblas);
  try {
    out.onednn_ms = probe_ms(GemmLibrary::onednn);
  } catch (const Error& e) {
    out.source = fmt::format("measured: oneDNN's probe failed ({})", e.what());
    return out;
  }
  out.source = "measured";
  out.large = faster_library(out.openblas_ms, out.onednn_ms);
  return out;
}

}  // namespace

std::string_view library_name(GemmLibrary library) {
  return library == GemmLibrary::onednn ? "oneDNN" : "OpenBLAS";
}

bool gemm_library_available(GemmLibrary library) {
#if defined(ATTN_HAVE_ONEDNN)
  (void)library;
  return true;
#else
  return library == GemmLibrary::openblas;
#endif
}

int openblas_kernel_width(std::string_view kernel) {
  for (std::string_view name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (kernel == name) return 4;
  for (std::string_view name : {"Haswell", "Zen", "Excavator"})
    if (kernel == name) return 3;
  for (std::string_view name : {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller"})
    if (kernel == name) return 2;
  return 1;
}

int onednn_width() {
#if defined(ATTN_HAVE_ONEDNN)
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  if ((isa & 0x20u) != 0 || (isa & 0x8u) != 0) return 4;  // the avx512 family
  if ((isa & 0x4u) != 0) return 3;                        // avx2, avx2_vnni
  if ((isa & 0x2u) != 0) return 2;                        // avx
  return (isa & 0x1u) != 0 ? 1 : 0;
#else
  return 0;
#endif
}

GemmLibrary library_by_widths(int openblas_width, int onednn_width) {
  return onednn_width > openblas_width ? GemmLibrary::onednn : GemmLibrary::openblas;
}

GemmLibrary faster_library(double openblas_ms, double onednn_ms) {
  return onednn_ms < kWinMargin * openblas_ms ? GemmLibrary::onednn : GemmLibrary::openblas;
}

GemmChoice parse_gemm_choice(std::string_view word, std::string_view source) {
  if (word.empty() || word == "auto") return GemmChoice::kernels;
  if (word == "measure") return GemmChoice::measure;
  if (word == "openblas") return GemmChoice::openblas;
  if (word == "onednn") {
    if (!gemm_library_available(GemmLibrary::onednn)) {
      throw Error(ErrorKind::bad_value, "gemm",
                  fmt::format("{} asks for onednn, but this build has no oneDNN: use "
                              "openblas or auto (./setup.sh installs libdnnl-dev)",
                              source));
    }
    return GemmChoice::onednn;
  }
  throw Error(ErrorKind::bad_value, "gemm",
              fmt::format("{} is '{}': expected auto, measure, openblas or onednn", source, word));
}

void set_gemm_choice(GemmChoice choice) {
  if (choice == GemmChoice::onednn && !gemm_library_available(GemmLibrary::onednn)) {
    throw Error(ErrorKind::bad_value, "gemm", "this build has no oneDNN: use openblas or auto");
  }
  State& s = state();
  s.forced = choice;
  s.forced_by_caller = true;
  s.selected = false;
  apply_threads();
}

const GemmSelection& gemm_selection() {
  State& s = state();
  if (!s.selected) {
    struct PoolBack {  // the pool's size again, also when select() throws
      ~PoolBack() { apply_threads(); }
    } pool_back;
    s.selection = select();
    s.selected = true;
  }
  return s.selection;
}

GemmLibrary gemm_library_for(std::size_t m, std::size_t n, std::size_t k) {
  const double product = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (product < static_cast<double>(kSmallProduct)) return GemmLibrary::openblas;
  return gemm_selection().large;
}

void sgemm_on(GemmLibrary library, bool transpose_a, bool transpose_b, std::size_t m, std::size_t n,
              std::size_t k, float alpha, const float* a, std::size_t lda, const float* b,
              std::size_t ldb, float beta, float* c, std::size_t ldc) {
  check_int_sizes(m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // C = beta C; OpenBLAS would reject lda = 0
    for (std::size_t r = 0; r < m; ++r)
      for (std::size_t j = 0; j < n; ++j) {
        c[r * ldc + j] = beta == 0.0f ? 0.0f : beta * c[r * ldc + j];
      }
    return;
  }
  if (library == GemmLibrary::onednn) {
    run_onednn(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    run_openblas(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

void sgemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
           float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
           float beta, float* c, std::size_t ldc) {
  sgemm_on(gemm_library_for(m, n, k), transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb,
           beta, c, ldc);
}

void set_threads(int threads) {
  if (threads < 1 || threads > 256) {
    throw Error(ErrorKind::bad_value, "set_threads",
                fmt::format("{} threads: expected 1 to 256", threads));
  }
  state().threads = threads;
  apply_threads();
}

int own_loop_threads() {
  return gemm_selection().large == GemmLibrary::onednn ? state().threads : 1;
}

void lend_pool(GemmLibrary library) {
  pool_to(library, state().threads);
}

void return_pool() {
  apply_threads();
}

std::string openblas_kernel() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "unknown";
}

}  // namespace attn
