// The matrix products' two libraries (core/kernels/gemm.hpp): each against a double-precision product on
// strided blocks, every transpose and beta; the choice between them (by the kernels' widths, by
// the probe kept in its cache file, measured, forced, from ATTN_GEMM); and the refusals.
#include "kernels/gemm.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "base/random.hpp"

using attn::GemmChoice;
using attn::GemmLibrary;

namespace {

std::vector<GemmLibrary> libraries() {
  std::vector<GemmLibrary> out = {GemmLibrary::openblas};
  if (attn::gemm_library_available(GemmLibrary::onednn)) out.push_back(GemmLibrary::onednn);
  return out;
}

std::vector<float> filled(attn::Rng& rng, std::size_t n) {
  std::vector<float> v(n);
  for (float& x : v)
    x = static_cast<float>(rng.normal());
  return v;
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ATTN_GEMM_CACHE set to a file of this test's own folder while in scope, and unset after.
struct CacheFile {
  std::filesystem::path folder, path;
  explicit CacheFile(const std::string& name)
      : folder(std::filesystem::temp_directory_path() / ("attn-gemm-test-" + name)),
        path(folder / "probe.tsv") {
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    setenv("ATTN_GEMM_CACHE", path.c_str(), 1);
  }
  ~CacheFile() {
    unsetenv("ATTN_GEMM_CACHE");
    std::filesystem::remove_all(folder);
  }
};

bool widths_equal() {
  return attn::gemm_library_available(GemmLibrary::onednn) &&
         attn::openblas_kernel_width(attn::openblas_kernel()) == attn::onednn_width();
}

// Puts the choice back to what the environment says when a test case ends.
struct ChoiceReset {
  ~ChoiceReset() {
    const char* word = std::getenv("ATTN_GEMM");
    attn::set_gemm_choice(attn::parse_gemm_choice(word != nullptr ? word : "", "ATTN_GEMM"));
    attn::set_threads(1);
  }
};

}  // namespace

TEST_CASE("each library multiplies strided blocks, every transpose, beta 0, 1 and 0.5", "[gemm]") {
  attn::Rng rng(3);
  // Large enough to be a large product (m n k = 40 x 70 x 50 = 140000), with leading dimensions
  // wider than the blocks and the blocks starting inside their buffers.
  const std::size_t m = 40, n = 70, k = 50, lda = 61, ldb = 83, ldc = 77, offset = 3;
  for (GemmLibrary library : libraries())
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const float beta : {0.0f, 1.0f, 0.5f}) {
          INFO(attn::library_name(library) << " ta " << ta << " tb " << tb << " beta " << beta);
          const std::size_t a_rows = ta ? k : m, b_rows = tb ? n : k;
          const std::vector<float> a = filled(rng, a_rows * lda + offset);
          const std::vector<float> b = filled(rng, b_rows * ldb + offset);
          std::vector<float> c = filled(rng, m * ldc + offset);
          if (beta == 0.0f) c[offset] = std::numeric_limits<float>::quiet_NaN();  // never read
          const std::vector<float> before = c;
          attn::sgemm_on(library, ta, tb, m, n, k, 1.5f, a.data() + offset, lda, b.data() + offset,
                         ldb, beta, c.data() + offset, ldc);
          double worst = 0.0;
          for (std::size_t r = 0; r < m; ++r)
            for (std::size_t j = 0; j < ldc; ++j) {
              const std::size_t at = offset + r * ldc + j;
              if (j >= n) {
                REQUIRE(c[at] == before[at]);  // outside the block: untouched
                continue;
              }
              double sum = 0.0;
              for (std::size_t i = 0; i < k; ++i) {
                const double av = ta ? a[offset + i * lda + r] : a[offset + r * lda + i];
                const double bv = tb ? b[offset + j * ldb + i] : b[offset + i * ldb + j];
                sum += av * bv;
              }
              const double expected = 1.5 * sum + (beta == 0.0f ? 0.0 : beta * before[at]);
              worst = std::max(worst, std::abs(c[at] - expected));
            }
          CHECK(worst < 1e-4);
        }
}

TEST_CASE("small products go to OpenBLAS, large ones to the chosen library", "[gemm]") {
  const ChoiceReset reset;
  for (GemmLibrary library : libraries()) {
    attn::set_gemm_choice(library == GemmLibrary::onednn ? GemmChoice::onednn
                                                         : GemmChoice::openblas);
    CHECK(attn::gemm_selection().source == "forced");
    CHECK(attn::gemm_selection().large == library);
    CHECK(attn::gemm_library_for(31, 32, 32) == GemmLibrary::openblas);  // 31744 < 32768
    CHECK(attn::gemm_library_for(32, 32, 32) == library);
    CHECK(attn::gemm_library_for(0, 1000, 1000) == GemmLibrary::openblas);
    CHECK(attn::own_loop_threads() == 1);
    attn::set_threads(2);
    CHECK(attn::own_loop_threads() == (library == GemmLibrary::onednn ? 2 : 1));
    attn::set_threads(1);
  }
}

TEST_CASE("the measured choice times both libraries on the probe", "[gemm]") {
  const ChoiceReset reset;
  attn::set_gemm_choice(GemmChoice::measure);
  const attn::GemmSelection& s = attn::gemm_selection();
  if (!attn::gemm_library_available(GemmLibrary::onednn)) {
    CHECK(s.source == "the only library in this build");
    CHECK(s.large == GemmLibrary::openblas);
    return;
  }
  REQUIRE(s.source == "the probe, measured now");
  CHECK(s.cache.empty());
  CHECK(s.threads == 1);
  CHECK(s.openblas_ms > 0.0);
  CHECK(s.onednn_ms > 0.0);
  CHECK(s.probe == attn::kProbe);
  CHECK(s.large == attn::faster_library(s.openblas_ms, s.onednn_ms));
}

TEST_CASE("oneDNN takes the large products only when clearly faster, or when its vectors are wider",
          "[gemm]") {
  // Timed: below 0.97 of OpenBLAS's time, not at it or above.
  CHECK(attn::faster_library(2.0, 0.5) == GemmLibrary::onednn);
  CHECK(attn::faster_library(2.0, 1.93) == GemmLibrary::onednn);
  CHECK(attn::faster_library(2.0, 1.94) == GemmLibrary::openblas);
  CHECK(attn::faster_library(2.0, 1.99) == GemmLibrary::openblas);
  CHECK(attn::faster_library(1.0, 3.0) == GemmLibrary::openblas);
  // By the kernels' widths.
  CHECK(attn::openblas_kernel_width("Prescott") == 1);
  CHECK(attn::openblas_kernel_width("Sandybridge") == 2);
  CHECK(attn::openblas_kernel_width("Haswell") == 3);
  CHECK(attn::openblas_kernel_width("Zen") == 3);
  CHECK(attn::openblas_kernel_width("SkylakeX") == 4);
  CHECK(attn::openblas_kernel_width("Cooperlake") == 4);
  CHECK(attn::openblas_kernel_width("a kernel of 2031") == 1);
  CHECK(attn::library_by_widths(1, 4) == GemmLibrary::onednn);  // Prescott on AVX-512
  CHECK(attn::library_by_widths(3, 4) == GemmLibrary::onednn);  // Haswell forced on AVX-512
  CHECK(attn::library_by_widths(4, 4) == GemmLibrary::openblas);
  CHECK(attn::library_by_widths(3, 3) == GemmLibrary::openblas);  // Zen on AVX2
  CHECK(attn::library_by_widths(1, 0) == GemmLibrary::openblas);  // no oneDNN
}

TEST_CASE("auto chooses by the kernels' widths where they differ, else by the cached probe",
          "[gemm]") {
  const ChoiceReset reset;
  const CacheFile cache("auto");
  attn::set_gemm_choice(GemmChoice::automatic);
  const attn::GemmSelection first = attn::gemm_selection();
  CHECK(first.openblas_kernel == attn::openblas_kernel());
  if (!attn::gemm_library_available(GemmLibrary::onednn)) {
    CHECK(first.large == GemmLibrary::openblas);
    CHECK(first.source == "the only library in this build");
    return;
  }
  if (!widths_equal()) {
    CHECK(first.source == "the kernels' widths");
    CHECK(first.openblas_ms == 0.0);  // nothing timed
    CHECK(first.large == attn::library_by_widths(attn::openblas_kernel_width(first.openblas_kernel),
                                                 attn::onednn_width()));
    CHECK_FALSE(std::filesystem::exists(cache.path));  // nothing kept
    return;
  }
  // Equal widths: the probe runs once and its line is kept under the header.
  REQUIRE(first.source == "the probe, measured now and cached");
  CHECK(first.cache == cache.path.string());
  CHECK(first.large == attn::faster_library(first.openblas_ms, first.onednn_ms));
  const std::string kept = file_text(cache.path);
  const std::string key = attn::probe_cache_key(1);
  CHECK(kept.rfind(std::string(attn::kProbeCacheHeader) + "\n" + key + "\t", 0) == 0);
  const auto read_back = attn::probe_in_cache(kept, key);
  REQUIRE(read_back.has_value());
  CHECK(read_back->library == first.large);
  CHECK(read_back->openblas_ms == Approx(first.openblas_ms).epsilon(1e-3));

  // A later process reads the line instead of timing: a line saying the other library wins is
  // what the next choice follows.
  const GemmLibrary other =
      first.large == GemmLibrary::onednn ? GemmLibrary::openblas : GemmLibrary::onednn;
  {
    std::ofstream out(cache.path, std::ios::app);
    out << key << '\t' << (other == GemmLibrary::onednn ? "onednn" : "openblas") << "\t1.5\t2.5\n";
  }
  attn::set_gemm_choice(GemmChoice::automatic);
  const attn::GemmSelection second = attn::gemm_selection();
  CHECK(second.source == "the probe, cached");
  CHECK(second.large == other);
  CHECK(second.openblas_ms == 1.5);
  CHECK(second.onednn_ms == 2.5);

  // Each thread count has its own line.
  attn::set_threads(2);
  const attn::GemmSelection two = attn::gemm_selection();
  CHECK(two.threads == 2);
  CHECK(two.source == "the probe, measured now and cached");
  CHECK(attn::probe_in_cache(file_text(cache.path), attn::probe_cache_key(2)).has_value());
  CHECK(attn::own_loop_threads() == (two.large == GemmLibrary::onednn ? 2 : 1));
}

TEST_CASE("a cache file attn did not write is left as it is, and OpenBLAS runs", "[gemm]") {
  const ChoiceReset reset;
  const CacheFile cache("foreign");
  const std::string foreign = "my notes, not attn's\n";
  std::ofstream(cache.path) << foreign;
  attn::set_gemm_choice(GemmChoice::automatic);
  const attn::GemmSelection& s = attn::gemm_selection();
  CHECK(file_text(cache.path) == foreign);
  if (widths_equal()) {
    CHECK(s.large == GemmLibrary::openblas);
    CHECK(s.source.find("is not attn's probe cache") != std::string::npos);
    CHECK(s.cache.empty());
  }
}

TEST_CASE("without a cache folder the equal-width choice is OpenBLAS, untimed", "[gemm]") {
  const ChoiceReset reset;
  setenv("ATTN_GEMM_CACHE", "", 1);
  attn::set_gemm_choice(GemmChoice::automatic);
  const attn::GemmSelection s = attn::gemm_selection();
  unsetenv("ATTN_GEMM_CACHE");
  const bool home_set = std::getenv("HOME") != nullptr || std::getenv("XDG_CACHE_HOME") != nullptr;
  if (home_set) CHECK(attn::gemm_probe_cache().ends_with("/attn/gemm-probe.tsv"));
  if (widths_equal()) {
    CHECK(s.large == GemmLibrary::openblas);
    CHECK(s.source.find("no cache folder for the probe") != std::string::npos);
    CHECK(s.openblas_ms == 0.0);
  }
}

TEST_CASE("the cache's lines: the last well-formed one with the key counts", "[gemm]") {
  const std::string key = "CPU | OpenBLAS | oneDNN | 1 threads";
  const std::string text = std::string(attn::kProbeCacheHeader) + "\n" +  //
                           key + "\tonednn\t2\t1\n" +                     // an earlier probe
                           "another CPU\topenblas\t1\t2\n" +              // another key
                           key + "\tmkl\t1\t2\n" +                        // a library attn lacks
                           key + "\topenblas\t1\tx\n" +       // a time that is no number
                           key + "\topenblas\t1\n" +          // a time missing
                           key + " more\topenblas\t1\t2\n" +  // a longer key
                           key + "\topenblas\t3.25\t4.5\n" +  // the last good line
                           key + "\tonednn\t0.5";             // cut short: no newline
  const auto found = attn::probe_in_cache(text, key);
  REQUIRE(found.has_value());
  CHECK(found->library == GemmLibrary::openblas);
  CHECK(found->openblas_ms == 3.25);
  CHECK(found->onednn_ms == 4.5);
  CHECK_FALSE(attn::probe_in_cache(text, "a CPU never probed").has_value());
  CHECK_FALSE(attn::probe_in_cache("", key).has_value());
  CHECK(attn::probe_cache_key(2).find("2 threads") != std::string::npos);
  CHECK(attn::probe_cache_key(2).find('\t') == std::string::npos);
}

TEST_CASE("a GEMM library's name is checked, and so are the threads", "[gemm]") {
  CHECK(attn::parse_gemm_choice("", "ATTN_GEMM") == GemmChoice::automatic);
  CHECK(attn::parse_gemm_choice("auto", "ATTN_GEMM") == GemmChoice::automatic);
  CHECK(attn::parse_gemm_choice("measure", "ATTN_GEMM") == GemmChoice::measure);
  CHECK(attn::parse_gemm_choice("openblas", "ATTN_GEMM") == GemmChoice::openblas);
  CHECK_THROWS_WITH(
      attn::parse_gemm_choice("mkl", "ATTN_GEMM"),
      Catch::Contains("ATTN_GEMM is 'mkl': expected auto, measure, openblas or onednn"));
  if (attn::gemm_library_available(GemmLibrary::onednn)) {
    CHECK(attn::parse_gemm_choice("onednn", "--gemm") == GemmChoice::onednn);
  } else {
    CHECK_THROWS_WITH(attn::parse_gemm_choice("onednn", "--gemm"),
                      Catch::Contains("this build has no oneDNN"));
  }
  CHECK_THROWS_AS(attn::set_threads(0), attn::Error);
  CHECK_THROWS_AS(attn::set_threads(257), attn::Error);
  CHECK(attn::library_name(GemmLibrary::onednn) == "oneDNN");
  CHECK(!attn::openblas_kernel().empty());
}
