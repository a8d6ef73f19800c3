// The only file that includes OpenBLAS's cblas.h (it clashes with xtensor-blas's declarations)
// and oneDNN's dnnl.h.
#include "kernels/gemm.hpp"

#include <cblas.h>
#if defined(ATTN_HAVE_ONEDNN)
#include <dnnl.h>
#include <omp.h>
#endif

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

extern "C" char* openblas_get_corename(void);
extern "C" char* openblas_get_config(void);

namespace attn {

namespace {

struct State {
  std::map<int, GemmSelection> selections;  // by the pool's size
  GemmChoice forced = GemmChoice::automatic;
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

// After a library's threads finish a product they keep spinning before they sleep: OpenBLAS's for
// 2^28 cycles of the time-stamp counter (its THREAD_TIMEOUT, about 0.1 s), OpenMP's (libgomp's
// default spin count) for a few ms. On 2 cores a library handed the pool meanwhile shares its
// cores with them, and measured 2-6x slower and erratic (docs/benchmark.md); a pause this long
// lets them sleep first. Only where the pool changes hands: the probe and the benchmark.
constexpr auto kPoolSettle = std::chrono::milliseconds(250);

void settle_pool() {
  if (state().threads > 1) std::this_thread::sleep_for(kPoolSettle);
}

// The pool belongs to the large products' library; the other library runs on the caller's thread.
void apply_threads() {
  const State& s = state();
  const auto chosen = s.selections.find(s.threads);
  const bool onednn_large =
      chosen != s.selections.end() && chosen->second.large == GemmLibrary::onednn;
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

// The probe (kProbe): a BERT-base layer's four projections x Wᵀ of 256 rows, on each library with
// the pool handed to it. Rounds alternate the two libraries, each round two untimed passes (oneDNN
// generates its kernels) and then kProbeRuns timed ones; a library's time is its best round's
// median pass.
constexpr std::size_t kProbeRows = 256;
constexpr std::size_t kProbeShapes[][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
constexpr int kProbeRounds = 2, kProbeWarmup = 2, kProbeRuns = 5;

struct ProbeTimes {
  double openblas_ms = std::numeric_limits<double>::infinity();
  double onednn_ms = std::numeric_limits<double>::infinity();
};

ProbeTimes probe(int threads) {
  constexpr std::size_t kWidest = 3072;
  std::vector<float> a(kProbeRows * kWidest), b(kWidest * 768), c(kProbeRows * kWidest);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<float>(i % 5) * 0.125f - 0.25f;
  auto median_ms = [&](GemmLibrary library) {
    pool_to(library, threads);
    settle_pool();
    std::vector<double> times;
    for (int run = 0; run < kProbeWarmup + kProbeRuns; ++run) {
      const auto start = std::chrono::steady_clock::now();
      for (const auto& [n, k] : kProbeShapes) {
        sgemm_on(library, false, true, kProbeRows, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f,
                 c.data(), n);
      }
      const auto stop = std::chrono::steady_clock::now();
      if (run >= kProbeWarmup)
        times.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  ProbeTimes t;
  for (int round = 0; round < kProbeRounds; ++round) {
    t.openblas_ms = std::min(t.openblas_ms, median_ms(GemmLibrary::openblas));
    t.onednn_ms = std::min(t.onednn_ms, median_ms(GemmLibrary::onednn));
  }
  return t;
}

std::string_view library_word(GemmLibrary library) {
  return library == GemmLibrary::onednn ? "onednn" : "openblas";
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  }
  return "unknown CPU";
}

// The whole of `fd` as text.
std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::pread(fd, buffer, sizeof buffer, static_cast<off_t>(text.size()))) > 0)
    text.append(buffer, static_cast<std::size_t>(got));
  return text;
}

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t put = ::write(fd, text.data(), text.size());
    if (put <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(put));
  }
  return true;
}

// The probe for `threads`, timed now: its times and the library they choose.
void measure_now(GemmSelection& out, int threads) {
  const ProbeTimes t = probe(threads);
  out.probe = kProbe;
  out.openblas_ms = t.openblas_ms;
  out.onednn_ms = t.onednn_ms;
  out.large = faster_library(t.openblas_ms, t.onednn_ms);
  out.source = "the probe, measured now";
}

// The probe for `threads`, read from the cache or measured and kept there; the cache file is locked
// meanwhile, so that processes started together wait for one probe and read the same line.
void cached_probe(GemmSelection& out, int threads) {
  const std::string path = gemm_probe_cache();
  if (path.empty()) {
    out.source =
        "no cache folder for the probe (ATTN_GEMM_CACHE, XDG_CACHE_HOME and HOME unset "
        "or empty): OpenBLAS, torch's library";
    return;
  }
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    out.source =
        fmt::format("the probe's cache {} cannot be opened ({}): OpenBLAS, torch's library", path,
                    std::strerror(errno));
    return;
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }  // also releases the lock
  } close_fd{fd};
  if (::flock(fd, LOCK_EX) != 0) {
    out.source =
        fmt::format("the probe's cache {} cannot be locked: OpenBLAS, torch's library", path);
    return;
  }
  const std::string text = read_all(fd);
  const std::string header = std::string(kProbeCacheHeader) + "\n";
  if (!text.empty() && text.rfind(header, 0) != 0) {
    out.source = fmt::format(
        "{} is not attn's probe cache (left as it is): OpenBLAS, torch's "
        "library",
        path);
    return;
  }
  out.cache = path;
  out.probe = kProbe;
  const std::string key = probe_cache_key(threads);
  if (const auto cached = probe_in_cache(text, key)) {
    out.large = cached->library;
    out.openblas_ms = cached->openblas_ms;
    out.onednn_ms = cached->onednn_ms;
    out.source = "the probe, cached";
    return;
  }
  measure_now(out, threads);
  const std::string line =
      fmt::format("{}{}\t{}\t{:.4f}\t{:.4f}\n", text.empty() ? header : "", key,
                  library_word(out.large), out.openblas_ms, out.onednn_ms);
  out.source =
      write_all(fd, line) ? "the probe, measured now and cached" : "the probe, measured now";
}

std::string onednn_version() {
#if defined(ATTN_HAVE_ONEDNN)
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
#else
  return "none";
#endif
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

GemmSelection select(int threads) {
  State& s = state();
  GemmChoice choice = s.forced;
  std::string source = "forced";
  if (!s.forced_by_caller) {
    const char* word = std::getenv("ATTN_GEMM");
    choice = parse_gemm_choice(word != nullptr ? word : "", "ATTN_GEMM");
    source = word != nullptr && *word != '\0' ? "ATTN_GEMM" : "";
  }
  GemmSelection out;
  out.threads = threads;
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
  if (choice == GemmChoice::automatic) {
    const int openblas_width = openblas_kernel_width(out.openblas_kernel);
    if (openblas_width != onednn_width()) {
      out.large = library_by_widths(openblas_width, onednn_width());
      out.source = "the kernels' widths";
      return out;
    }
  }
  try {
    if (choice == GemmChoice::automatic) {
      cached_probe(out, threads);
    } else {
      measure_now(out, threads);
    }
  } catch (const Error& e) {
    out.large = GemmLibrary::openblas;
    out.source = fmt::format("oneDNN's probe failed ({})", e.what());
  }
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
  if (word.empty() || word == "auto") return GemmChoice::automatic;
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
  s.selections.clear();
  apply_threads();
}

const GemmSelection& gemm_selection() {
  State& s = state();
  auto chosen = s.selections.find(s.threads);
  if (chosen == s.selections.end()) {
    struct PoolBack {  // the pool as chosen, also when select() throws
      ~PoolBack() { apply_threads(); }
    } pool_back;
    chosen = s.selections.emplace(s.threads, select(s.threads)).first;
  }
  return chosen->second;
}

std::string gemm_probe_cache() {
  if (const char* path = std::getenv("ATTN_GEMM_CACHE")) return path;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return std::string(xdg) + "/attn/gemm-probe.tsv";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home == '/') return std::string(home) + "/.cache/attn/gemm-probe.tsv";
  return "";
}

std::string probe_cache_key(int threads) {
  std::string key =
      fmt::format("{} | {} | {} | oneDNN {} | {} | {} threads", cpu_model_name(),
                  openblas_get_config(), openblas_kernel(), onednn_version(), kProbe, threads);
  std::replace(key.begin(), key.end(), '\t', ' ');
  std::replace(key.begin(), key.end(), '\n', ' ');
  return key;
}

std::optional<CachedProbe> probe_in_cache(std::string_view text, std::string_view key) {
  std::optional<CachedProbe> found;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) break;  // a last line cut short
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != '\t')
      continue;
    line.remove_prefix(key.size() + 1);
    CachedProbe p;
    const std::size_t tab = line.find('\t');
    const std::string_view word = line.substr(0, tab);
    if (word == "openblas") {
      p.library = GemmLibrary::openblas;
    } else if (word == "onednn") {
      p.library = GemmLibrary::onednn;
    } else {
      continue;
    }
    if (tab == std::string_view::npos) continue;
    const char* at = line.data() + tab + 1;
    const char* last = line.data() + line.size();
    const auto first = std::from_chars(at, last, p.openblas_ms);
    if (first.ec != std::errc() || first.ptr == last || *first.ptr != '\t') continue;
    const auto second = std::from_chars(first.ptr + 1, last, p.onednn_ms);
    if (second.ec != std::errc() || second.ptr != last) continue;
    found = p;
  }
  return found;
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

int pool_threads() {
  return state().threads;
}

int own_loop_threads() {
  return gemm_selection().large == GemmLibrary::onednn ? state().threads : 1;
}

void lend_pool(GemmLibrary library) {
  pool_to(library, state().threads);
  settle_pool();
}

void return_pool() {
  apply_threads();
  settle_pool();
}

std::string openblas_kernel() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "unknown";
}

}  // namespace attn
