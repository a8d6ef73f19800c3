// The fast encoder layer against the readable reference: the whole layer (pre-LN and post-LN,
// several seeds, odd sizes, BERT-base), the AVX2 kernels against the scalar ones bit for bit, the
// scalar ones against the reference's kernels, and attn::sgemm on strided blocks.
#include "fast/encoder_fast.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "allclose.hpp"
#include "base/random.hpp"
#include "kernels/gemm.hpp"
#include "matmul.hpp"
#include "same_bits.hpp"
#include "softmax.hpp"

using attn::FastKernels;
using attn::NormPlacement;
using attn::Tensor2;
using attn::Tensor3;
using attn::testing::same_bits;
using attn::testing::Tolerance;

namespace {

attn::EncoderConfig sizes(std::size_t d, std::size_t heads, std::size_t d_ff,
                          const char* act = "gelu") {
  attn::EncoderConfig c;
  c.hidden_size = d;
  c.num_attention_heads = heads;
  c.intermediate_size = d_ff;
  c.hidden_act = act;
  return c;
}

// A layer with PyTorch's default init, and LayerNorms that are not the identity (so that a
// mixed-up weight or bias shows).
attn::EncoderLayer random_layer(std::uint64_t seed, const attn::EncoderConfig& config,
                                NormPlacement placement) {
  attn::Rng rng(seed);
  attn::EncoderLayer layer = attn::init_encoder_layer(rng, config, placement);
  for (attn::LayerNorm* norm : {&layer.layer_norm_1, &layer.layer_norm_2}) {
    for (float& w : norm->weight)
      w = 1.0f + 0.1f * static_cast<float>(rng.normal());
    for (float& b : norm->bias)
      b = 0.1f * static_cast<float>(rng.normal());
  }
  return layer;
}

struct Compared {
  Tensor2 fast, reference;
};

Compared run_both(const attn::EncoderLayer& layer, std::size_t tokens, std::uint64_t seed,
                  FastKernels kernels = attn::best_fast_kernels()) {
  attn::Rng rng(seed + 1000);
  const std::size_t d = layer.attention.output_linear.weight.shape(0);
  const Tensor3 x = attn::randn(rng, 1, tokens, d);
  const attn::PackedEncoderLayer packed = attn::pack(layer);
  attn::Workspace workspace = attn::make_workspace(packed, tokens, kernels);
  Tensor2 x2({tokens, d});
  std::copy(x.begin(), x.end(), x2.begin());
  Compared c{attn::forward_fast(packed, x2, workspace), Tensor2({tokens, d})};
  const Tensor3 reference = attn::forward(layer, x).output;
  std::copy(reference.begin(), reference.end(), c.reference.begin());
  return c;
}

}  // namespace

TEST_CASE("sgemm multiplies strided blocks in place, transposed or not", "[encoder_fast][sgemm]") {
  attn::Rng rng(5);
  // A (3,4) block at column 2 of a (3,9) buffer; B (4,5) or its transpose (5,4) in a (.,7) buffer.
  const Tensor2 a_buf = attn::randn_matrix(rng, 3, 9), b_buf = attn::randn_matrix(rng, 5, 7);
  for (const bool tb : {false, true}) {
    std::vector<float> c(3 * 8, 1.0f);  // C (3,5) at column 1 of a (3,8) buffer, beta = 0.5
    const std::size_t n = 5, k = 4;
    attn::sgemm(false, tb, 3, n, k, 2.0f, a_buf.data() + 2, 9, b_buf.data() + 1, 7, 0.5f,
                c.data() + 1, 8);
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t j = 0; j < 8; ++j) {
        if (j < 1 || j > n) {
          CHECK(c[r * 8 + j] == 1.0f);  // untouched outside the block
          continue;
        }
        double sum = 0.0;
        for (std::size_t i = 0; i < k; ++i) {
          const float bv = tb ? b_buf(j - 1, 1 + i) : b_buf(i, 1 + j - 1);
          sum += static_cast<double>(a_buf(r, 2 + i)) * bv;
        }
        CHECK(c[r * 8 + j] == Approx(2.0 * sum + 0.5).margin(1e-5));
      }
  }
  std::vector<float> c(4, 3.0f);  // k = 0: C = beta C
  attn::sgemm(true, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 0, 0.5f, c.data(), 2);
  CHECK(c == std::vector<float>(4, 1.5f));
}

TEST_CASE("the fast layer equals the reference at odd sizes, pre-LN and post-LN",
          "[encoder_fast]") {
  // hs = 4: sqrt(hs) = 2 is folded into the Q Kᵀ GEMM; hs = 5 (D=10, H=2): the softmax divides.
  for (const auto& [d, heads, d_ff] : {std::array<std::size_t, 3>{12, 3, 48}, {10, 2, 24}})
    for (const char* act : {"gelu", "gelu_new"}) {
      const attn::EncoderConfig config = sizes(d, heads, d_ff, act);
      for (NormPlacement placement : {NormPlacement::pre, NormPlacement::post}) {
        for (std::uint64_t seed : {0u, 1u, 2u, 7u}) {
          for (std::size_t tokens : {1u, 5u, 33u}) {
            DYNAMIC_SECTION("D=" << d << " H=" << heads << " F=" << d_ff << " " << act
                                 << (placement == NormPlacement::pre ? " pre-LN" : " post-LN")
                                 << ", seed " << seed << ", T=" << tokens) {
              const Compared c = run_both(random_layer(seed, config, placement), tokens, seed);
              CHECK_ALLCLOSE(attn::to_array(c.fast), attn::to_array(c.reference),
                             Tolerance{1e-5, 1e-4});
            }
          }
        }
      }
    }
}

TEST_CASE("the fast layer equals the reference at BERT-base size", "[encoder_fast][bert]") {
  const attn::EncoderConfig config = sizes(768, 12, 3072);
  for (NormPlacement placement : {NormPlacement::pre, NormPlacement::post}) {
    for (std::size_t tokens : {5u, 128u}) {
      DYNAMIC_SECTION((placement == NormPlacement::pre ? "pre-LN" : "post-LN")
                      << ", T=" << tokens) {
        const Compared c = run_both(random_layer(3, config, placement), tokens, 3);
        CHECK_ALLCLOSE(attn::to_array(c.fast), attn::to_array(c.reference), Tolerance{1e-4, 1e-4});
      }
    }
  }
}

TEST_CASE(
    "the scalar and the AVX2 kernels give the same layer, bit for bit (on a CPU with AVX2 and FMA)",
    "[encoder_fast][kernels]") {
  if (!attn::cpu_has_avx2()) {
    WARN("this CPU has no AVX2 and FMA: only the scalar kernels run");
    return;
  }
  for (NormPlacement placement : {NormPlacement::pre, NormPlacement::post}) {
    for (const char* act : {"gelu", "gelu_new"}) {
      for (std::size_t tokens : {1u, 5u, 33u}) {
        const attn::EncoderLayer layer = random_layer(11, sizes(12, 3, 48, act), placement);
        const Compared scalar = run_both(layer, tokens, 4, FastKernels::scalar);
        const Compared avx2 = run_both(layer, tokens, 4, FastKernels::avx2);
        CHECK(same_bits({scalar.fast.begin(), scalar.fast.end()},
                        {avx2.fast.begin(), avx2.fast.end()}));
        CHECK_ALLCLOSE(attn::to_array(scalar.fast), attn::to_array(scalar.reference),
                       Tolerance{1e-5, 1e-4});
      }
    }
    const attn::EncoderLayer bert = random_layer(12, sizes(768, 12, 3072), placement);
    const Compared scalar = run_both(bert, 40, 5, FastKernels::scalar);
    const Compared avx2 = run_both(bert, 40, 5, FastKernels::avx2);
    CHECK(
        same_bits({scalar.fast.begin(), scalar.fast.end()}, {avx2.fast.begin(), avx2.fast.end()}));
  }
}

TEST_CASE("pack stacks the heads' q, k, v as column blocks of one (T, 3D) product",
          "[encoder_fast]") {
  const attn::EncoderLayer layer = random_layer(8, sizes(12, 3, 48), NormPlacement::pre);
  const attn::PackedEncoderLayer p = attn::pack(layer);
  REQUIRE(p.qkv_weight.size() == 3 * 12 * 12);
  REQUIRE(p.head_size == 4);
  // Row 12 + 2*4 + 1 is head 2's k, output 1; its bias likewise.
  CHECK(p.qkv_weight[(12 + 8 + 1) * 12 + 5] == layer.attention.heads[2].k.weight(1, 5));
  CHECK(p.qkv_bias[2 * 12 + 4 + 3] == layer.attention.heads[1].v.bias(3));
  CHECK(p.qkv_weight[(0 + 4 * 0 + 2) * 12 + 11] == layer.attention.heads[0].q.weight(2, 11));
}

TEST_CASE("gemm_calls lists the layer's products and their flops", "[encoder_fast]") {
  attn::Rng rng(0);
  const attn::PackedEncoderLayer p =
      attn::pack(attn::init_encoder_layer(rng, sizes(768, 12, 3072), NormPlacement::pre));
  double flops = 0.0;
  for (const attn::GemmCall& g : attn::gemm_calls(p, 128))
    flops += g.flops();
  // QKV 2*128*768*2304, Q Kᵀ and P V 12 * 2*128*64*128 each, output 2*128*768*768, FF 2 *
  // 2*128*768*3072.
  CHECK(flops == 2.0 * 128 * 768 * 2304 + 2 * 12 * 2.0 * 128 * 64 * 128 + 2.0 * 128 * 768 * 768 +
                     2 * 2.0 * 128 * 768 * 3072);
}

TEST_CASE("forward_fast refuses a workspace too small and a wrong width", "[encoder_fast]") {
  const attn::EncoderLayer layer = random_layer(9, sizes(12, 3, 48), NormPlacement::post);
  const attn::PackedEncoderLayer p = attn::pack(layer);
  attn::Workspace w = attn::make_workspace(p, 4);
  std::vector<float> x(5 * 12, 0.5f), out(5 * 12);
  CHECK_THROWS_WITH(
      attn::forward_fast(p, x.data(), 5, w, out.data()),
      Catch::Contains("[forward_fast]") && Catch::Contains("5 tokens for a workspace of 4"));
  CHECK_THROWS_WITH(attn::forward_fast(p, Tensor2(xt::zeros<float>({3, 10})), w),
                    Catch::Contains("(3, 10)"));
  // The tensor version grows the workspace, and equals the raw version.
  Tensor2 t({5, 12});
  std::copy(x.begin(), x.end(), t.begin());
  const Tensor2 y = attn::forward_fast(p, t, w);
  CHECK(w.capacity == 5);
  attn::forward_fast(p, x.data(), 5, w, out.data());
  CHECK(same_bits(out, {y.begin(), y.end()}));
  attn::forward_fast(p, x.data(), 5, w, x.data());  // out may be x
  CHECK(same_bits(x, out));
}

namespace {

// Forces a library (or frees the choice) and a thread count for one test case.
struct GemmSetting {
  GemmSetting(attn::GemmChoice choice, int threads) {
    attn::set_gemm_choice(choice);
    attn::set_threads(threads);
  }
  ~GemmSetting() {
    const char* word = std::getenv("ATTN_GEMM");
    attn::set_gemm_choice(attn::parse_gemm_choice(word != nullptr ? word : "", "ATTN_GEMM"));
    attn::set_threads(1);
  }
};

std::vector<attn::GemmChoice> every_choice() {
  std::vector<attn::GemmChoice> out = {attn::GemmChoice::openblas};
  if (attn::gemm_library_available(attn::GemmLibrary::onednn))
    out.push_back(attn::GemmChoice::onednn);
  return out;
}

}  // namespace

TEST_CASE("the fast encoder from ids equals the readable encoder, batch 4, on every library",
          "[encoder_fast][gemm]") {
  // D = 256, H = 4, F = 512, two layers, 4 sequences of 64 tokens: the products are large, so each
  // library runs them, and every elementwise pass has 65536 elements or more, so that 2 threads
  // share out the heads, LayerNorm's rows, the preloads and GELU.
  attn::EncoderConfig config = sizes(256, 4, 512);
  config.num_hidden_layers = 2;
  config.vocab_size = 50;
  config.max_position_embeddings = 70;
  const std::size_t batch = 4, tokens = 64;
  attn::Ids ids({batch, tokens});
  attn::Rng id_rng(8);
  for (auto& id : ids)
    id = static_cast<std::int64_t>(id_rng.next_u64() % config.vocab_size);
  for (NormPlacement placement : {NormPlacement::pre, NormPlacement::post}) {
    attn::Rng rng(21);
    const attn::Encoder encoder = attn::init_encoder(rng, config, placement, true);
    const Tensor3 reference = attn::forward_tape(encoder, ids).output();
    const attn::PackedEncoder packed = attn::pack(encoder);
    for (attn::GemmChoice choice : every_choice())
      for (int threads : {1, 2}) {
        INFO((placement == NormPlacement::pre ? "pre" : "post")
             << " choice " << static_cast<int>(choice) << " threads " << threads);
        const GemmSetting setting(choice, threads);
        attn::EncoderWorkspace w = attn::make_workspace(packed, batch, tokens);
        Tensor3 fast({batch, tokens, config.hidden_size});
        attn::forward_fast(packed, ids.data(), batch, tokens, w, fast.data());
        CHECK_ALLCLOSE(attn::to_array(fast), attn::to_array(reference), Tolerance{1e-5, 1e-4});
        // A shorter batch in the same workspace: each sequence attends within itself only.
        Tensor3 one({1, 10, config.hidden_size});
        attn::forward_fast(packed, ids.data(), 1, 10, w, one.data());
        attn::Ids first({1, 10});
        std::copy(ids.data(), ids.data() + 10, first.data());
        CHECK_ALLCLOSE(attn::to_array(one),
                       attn::to_array(attn::forward_tape(encoder, first).output()),
                       Tolerance{1e-5, 1e-4});
      }
  }
}

TEST_CASE("init_packed_encoder draws the weights init_encoder draws", "[encoder_fast]") {
  attn::EncoderConfig config = sizes(12, 3, 20);
  config.num_hidden_layers = 3;
  config.vocab_size = 17;
  config.max_position_embeddings = 9;
  attn::Rng a(4), b(4);
  const attn::PackedEncoder packed =
      attn::pack(attn::init_encoder(a, config, NormPlacement::post, true));
  const attn::PackedEncoder drawn = attn::init_packed_encoder(b, config, NormPlacement::post);
  CHECK(drawn.token_embeddings == packed.token_embeddings);
  CHECK(drawn.position_embeddings == packed.position_embeddings);
  REQUIRE(drawn.layers.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(drawn.layers[i].qkv_weight == packed.layers[i].qkv_weight);
    CHECK(drawn.layers[i].ff_2_weight == packed.layers[i].ff_2_weight);
    CHECK(drawn.layers[i].placement == NormPlacement::post);
  }
  // V D + P D + 2 D, and per layer 4 D^2 + 2 D F + 9 D + F (weights, biases, two LayerNorms).
  const std::size_t d = 12, f = 20;
  CHECK(attn::packed_bytes(drawn) ==
        4 * (17 * d + 9 * d + 2 * d + 3 * (4 * d * d + 2 * d * f + 9 * d + f)));
}

TEST_CASE("the fast encoder refuses ids outside the vocabulary, too many tokens, no embeddings",
          "[encoder_fast]") {
  attn::EncoderConfig config = sizes(12, 3, 20);
  config.num_hidden_layers = 1;
  config.vocab_size = 10;
  config.max_position_embeddings = 6;
  attn::Rng rng(2);
  const attn::PackedEncoder p = attn::init_packed_encoder(rng, config, NormPlacement::pre);
  attn::EncoderWorkspace w = attn::make_workspace(p, 2, 4);
  std::vector<float> out(2 * 8 * 12);
  std::vector<std::int64_t> ids = {1, 2, 3, 10, 0, 0, 0, 0};
  CHECK_THROWS_WITH(attn::forward_fast(p, ids.data(), 2, 4, w, out.data()),
                    Catch::Contains("id 10 at position 3 is outside the vocabulary of 10"));
  ids[3] = -1;
  CHECK_THROWS_WITH(attn::forward_fast(p, ids.data(), 2, 4, w, out.data()),
                    Catch::Contains("id -1 at position 3"));
  ids[3] = 4;
  CHECK_THROWS_WITH(attn::forward_fast(p, ids.data(), 1, 8, w, out.data()),
                    Catch::Contains("8 tokens but only 6 positions"));
  CHECK_THROWS_WITH(attn::forward_fast(p, ids.data(), 2, 5, w, out.data()),
                    Catch::Contains("2 x 5 tokens for a workspace of 8"));
  attn::forward_fast(p, ids.data(), 2, 4, w, out.data());
  CHECK(std::isfinite(out[0]));
  attn::Rng rng2(2);
  const attn::Encoder bare = attn::init_encoder(rng2, config, NormPlacement::pre, false);
  CHECK_THROWS_WITH(attn::pack(bare), Catch::Contains("expected an encoder with embeddings"));
}

TEST_CASE("forward_fast refuses a workspace made for a narrower layer", "[encoder_fast]") {
  attn::Rng rng(6);
  const attn::PackedEncoderLayer narrow =
      attn::pack(attn::init_encoder_layer(rng, sizes(12, 3, 20), NormPlacement::pre));
  const attn::PackedEncoderLayer wide =
      attn::pack(attn::init_encoder_layer(rng, sizes(12, 3, 40), NormPlacement::pre));
  attn::Workspace w = attn::make_workspace(narrow, 2, 4);
  std::vector<float> x(8 * 12, 0.5f), out(8 * 12);
  CHECK_THROWS_WITH(attn::forward_fast(wide, x.data(), 2, 4, w, out.data()),
                    Catch::Contains("the workspace was made for a narrower layer"));
  // Sizes whose product wraps around are refused, not multiplied.
  CHECK_THROWS_WITH(attn::forward_fast(narrow, x.data(), std::size_t{1} << 62, 4, w, out.data()),
                    Catch::Contains("tokens for a workspace of 8"));
  attn::forward_fast(narrow, x.data(), 2, 4, w, out.data());
  CHECK(std::isfinite(out[0]));
}
