// The matrix products' two libraries (core/kernels/gemm.hpp): each against a double-precision product on
// strided blocks, every transpose and beta; the choice between them (measured, forced, from
// ATTN_GEMM); and the refusals.
#include "kernels/gemm.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
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
  REQUIRE(s.source == "measured");
  CHECK(s.openblas_ms > 0.0);
  CHECK(s.onednn_ms > 0.0);
  CHECK(s.probe_m * s.probe_n * s.probe_k >= attn::kSmallProduct);
  CHECK(s.large == attn::faster_library(s.openblas_ms, s.onednn_ms));
}

TEST_CASE("oneDNN takes the large products only when clearly faster, or when its vectors are wider",
          "[gemm]") {
  // Timed: below 0.9 of OpenBLAS's time, not at it or above.
  CHECK(attn::faster_library(2.0, 0.5) == GemmLibrary::onednn);
  CHECK(attn::faster_library(2.0, 1.79) == GemmLibrary::onednn);
  CHECK(attn::faster_library(2.0, 1.8) == GemmLibrary::openblas);
  CHECK(attn::faster_library(2.0, 1.95) == GemmLibrary::openblas);
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

TEST_CASE("auto chooses by the libraries' kernels, the same way in every run", "[gemm]") {
  const ChoiceReset reset;
  attn::set_gemm_choice(GemmChoice::kernels);
  const attn::GemmSelection& s = attn::gemm_selection();
  CHECK(s.openblas_kernel == attn::openblas_kernel());
  if (!attn::gemm_library_available(GemmLibrary::onednn)) {
    CHECK(s.large == GemmLibrary::openblas);
    return;
  }
  CHECK(s.source == "the kernels' widths");
  CHECK(s.openblas_ms == 0.0);  // nothing timed
  CHECK(s.large == attn::library_by_widths(attn::openblas_kernel_width(s.openblas_kernel),
                                           attn::onednn_width()));
  CHECK(attn::onednn_width() >= 1);
}

TEST_CASE("a GEMM library's name is checked, and so are the threads", "[gemm]") {
  CHECK(attn::parse_gemm_choice("", "ATTN_GEMM") == GemmChoice::kernels);
  CHECK(attn::parse_gemm_choice("auto", "ATTN_GEMM") == GemmChoice::kernels);
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
