// GPT-2 generating on the fast path (core/fast/gpt2_fast.hpp): the prefill's and every step's
// logits against the readable forward (core/gpt2.hpp) on the whole prefix, at odd sizes, on one
// thread and two; greedy tokens against recomputing the readable forward at every step; the
// packed init against init_gpt2's weights; the cache's size and the refusals.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "base/random.hpp"
#include "fast/gpt2_decode.hpp"
#include "fast/gpt2_fast.hpp"
#include "gpt2.hpp"
#include "kernels/gemm.hpp"

namespace {

attn::Gpt2Config sizes(std::size_t d, std::size_t heads, std::size_t d_ff, std::size_t layers,
                       std::size_t vocab, std::size_t positions) {
  attn::Gpt2Config c = attn::default_gpt2_config();
  c.sizes.hidden_size = d;
  c.sizes.num_attention_heads = heads;
  c.sizes.intermediate_size = d_ff;
  c.sizes.num_hidden_layers = layers;
  c.sizes.vocab_size = vocab;
  c.sizes.max_position_embeddings = positions;
  c.eos_token_id = c.bos_token_id = static_cast<std::int64_t>(vocab) - 1;
  return c;
}

// init_gpt2's model with LayerNorms and biases that are not the identity and zero, so that a
// mixed-up weight, bias or table shows.
attn::Gpt2 random_gpt2(std::uint64_t seed, const attn::Gpt2Config& config) {
  attn::Rng rng(seed);
  attn::Gpt2 model = attn::init_gpt2(rng, config);
  std::vector<attn::LayerNorm*> norms = {&model.ln_f};
  for (attn::EncoderLayer& layer : model.layers) {
    norms.push_back(&layer.layer_norm_1);
    norms.push_back(&layer.layer_norm_2);
  }
  for (attn::LayerNorm* n : norms)
    for (std::size_t i = 0; i < n->weight.size(); ++i) {
      n->weight(i) = 1.0f + 0.3f * static_cast<float>(rng.normal());
      n->bias(i) = 0.2f * static_cast<float>(rng.normal());
    }
  return model;
}

// The readable forward's logits of the last position of `ids`.
std::vector<float> reference_last(const attn::Gpt2& model, const std::vector<std::int64_t>& ids) {
  attn::Ids in({1, ids.size()});
  std::copy(ids.begin(), ids.end(), in.begin());
  const attn::Tensor3 logits = attn::forward(model, attn::Gpt2Input{in, {}}).logits;
  const std::size_t v = logits.shape(2);
  return std::vector<float>(logits.data() + (ids.size() - 1) * v, logits.data() + ids.size() * v);
}

// Largest |a - b| / (1e-4 + 1e-4 |b|): at most 1 passes. The logits are sums over D and F of
// products whose order differs from the reference's GEMMs; at these sizes the differences are
// a few float32 ulps of the logits (measured below 2e-6), far inside 1e-4.
double worst(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double w = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    w = std::max(w, std::abs(static_cast<double>(a[i]) - b[i]) / (1e-4 + 1e-4 * std::abs(b[i])));
  return w;
}

}  // namespace

TEST_CASE("the prefill's and each step's logits are the readable forward's on the prefix",
          "[gpt2][fast]") {
  for (int threads : {1, 2}) {
    for (const auto& config : {sizes(21, 3, 36, 2, 97, 40), sizes(64, 4, 256, 3, 301, 64),
                               sizes(12, 4, 48, 1, 50, 16)}) {
      DYNAMIC_SECTION("D " << config.sizes.hidden_size << ", " << threads << " thread(s)") {
        attn::set_threads(threads);
        const attn::Gpt2 model = random_gpt2(7, config);
        const attn::PackedGpt2 packed = attn::pack(attn::Gpt2(model));
        attn::Gpt2Generator generator(packed, 12);
        std::vector<std::int64_t> ids = {3, 14, 15, 9, 2};
        CHECK(worst(generator.prefill(ids), reference_last(model, ids)) <= 1.0);
        for (std::int64_t next : {26, 5, 35, 8, 9, 7, 9}) {
          ids.push_back(next % static_cast<std::int64_t>(config.sizes.vocab_size));
          CHECK(worst(generator.step(ids.back()), reference_last(model, ids)) <= 1.0);
        }
        CHECK(generator.cache().length == 12);
        CHECK(attn::cache_bytes(generator.cache()) ==
              2 * config.sizes.num_hidden_layers * 12 * config.sizes.hidden_size * sizeof(float));
        // A prompt read in two prefills is the same as one.
        attn::Gpt2Generator split(packed, 12);
        split.prefill({3, 14});
        CHECK(worst(split.prefill({15, 9, 2}), reference_last(model, {3, 14, 15, 9, 2})) <= 1.0);
      }
    }
  }
  attn::set_threads(1);
}

TEST_CASE("greedy generation picks what the readable forward picks at every step", "[gpt2][fast]") {
  const auto config = sizes(32, 4, 80, 2, 120, 48);
  const attn::Gpt2 model = random_gpt2(11, config);
  const std::vector<std::int64_t> prompt = {5, 6, 7};
  const attn::Gpt2Decoded d =
      attn::generate(attn::pack(attn::Gpt2(model)), prompt, 20, attn::DecodeOptions{}, 119);
  std::vector<std::int64_t> ids = prompt;
  for (std::size_t n = 0; n < d.tokens.size(); ++n) {
    const std::vector<float> logits = reference_last(model, ids);
    std::vector<float> sorted = logits;
    std::sort(sorted.rbegin(), sorted.rend());
    INFO("step " << n << ", the two best logits " << sorted[0] << " " << sorted[1]);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    CHECK(d.tokens[n] == best);
    // log softmax of the picked token, from the reference's logits.
    double sum = 0.0;
    for (float v : logits)
      sum += std::exp(static_cast<double>(v) - sorted[0]);
    CHECK(d.steps[n].log_prob == Approx(logits[best] - sorted[0] - std::log(sum)).margin(1e-4));
    ids.push_back(d.tokens[n]);
  }
  CHECK(d.tokens.size() <= 20);
}

TEST_CASE("seeded sampling draws the same tokens again, and top-k 1 is greedy", "[gpt2][fast]") {
  const auto config = sizes(24, 3, 40, 2, 80, 40);
  const attn::PackedGpt2 packed = attn::pack(random_gpt2(3, config));
  attn::DecodeOptions sampled;
  sampled.sample = true;
  sampled.temperature = 1.3f;
  sampled.seed = 5;
  const auto a = attn::generate(packed, {1, 2, 3}, 15, sampled, 79).tokens;
  CHECK(attn::generate(packed, {1, 2, 3}, 15, sampled, 79).tokens == a);
  attn::DecodeOptions top_1 = sampled;
  top_1.top_k = 1;
  CHECK(attn::generate(packed, {1, 2, 3}, 15, top_1, 79).tokens ==
        attn::generate(packed, {1, 2, 3}, 15, attn::DecodeOptions{}, 79).tokens);
}

TEST_CASE("init_packed_gpt2 draws init_gpt2's weights", "[gpt2][fast]") {
  const auto config = sizes(16, 2, 24, 2, 40, 20);
  attn::Rng a(9), b(9);
  const attn::PackedGpt2 packed = attn::init_packed_gpt2(a, config);
  const attn::PackedGpt2 from_model = attn::pack(attn::init_gpt2(b, config));
  CHECK(packed.wte.bytes == from_model.wte.bytes);
  CHECK(packed.wpe.bytes == from_model.wpe.bytes);
  REQUIRE(packed.blocks.size() == from_model.blocks.size());
  for (std::size_t l = 0; l < packed.blocks.size(); ++l) {
    CHECK(packed.blocks[l].qkv_weight == from_model.blocks[l].qkv_weight);
    CHECK(packed.blocks[l].ff_2_weight == from_model.blocks[l].ff_2_weight);
  }
  CHECK(attn::packed_bytes(packed) ==
        sizeof(float) *
            static_cast<std::size_t>(
                attn::parameter_count(attn::describe_gpt2(config, attn::Gpt2Heads::lm_head))
                    .value()));
}

TEST_CASE("the generator refuses what it cannot hold or read", "[gpt2][fast][errors]") {
  const attn::PackedGpt2 packed = attn::pack(random_gpt2(1, sizes(12, 2, 16, 1, 30, 8)));
  CHECK_THROWS_AS(attn::Gpt2Generator(packed, 9), attn::Error);
  CHECK_THROWS_AS(attn::Gpt2Generator(packed, 0), attn::Error);
  attn::Gpt2Generator g(packed, 4);
  CHECK_THROWS_AS(g.prefill({}), attn::Error);
  CHECK_THROWS_AS(g.prefill({30}), attn::Error);
  CHECK_THROWS_AS(g.prefill({-1}), attn::Error);
  g.prefill({1, 2, 3});
  g.step(4);
  CHECK_THROWS_AS(g.step(5), attn::Error);
  CHECK_THROWS_AS(attn::generate(packed, {1, 2, 3}, 6, attn::DecodeOptions{}, 29), attn::Error);
}

TEST_CASE("packing a folder's tensors directly gives the weights packing the readable model gives",
          "[gpt2][fast]") {
  for (const attn::Gpt2Heads heads : {attn::Gpt2Heads::none, attn::Gpt2Heads::lm_head}) {
    const auto config = sizes(21, 3, 36, 2, 50, 16);
    attn::Gpt2 model = random_gpt2(13, config);
    model.heads = heads;
    const attn::PackedGpt2 direct = attn::pack(
        config, attn::check_gpt2_weights(config, attn::gpt2_state_dict(model), "a folder"));
    const attn::PackedGpt2 readable = attn::pack(attn::Gpt2(model));
    CHECK(direct.wte.bytes == readable.wte.bytes);
    CHECK(direct.wpe.bytes == readable.wpe.bytes);
    CHECK(direct.lm_head.bytes.empty());
    REQUIRE(direct.blocks.size() == readable.blocks.size());
    for (std::size_t l = 0; l < direct.blocks.size(); ++l) {
      const attn::PackedEncoderLayer &a = direct.blocks[l], &b = readable.blocks[l];
      CHECK(a.qkv_weight == b.qkv_weight);
      CHECK(a.qkv_bias == b.qkv_bias);
      CHECK(a.out_weight == b.out_weight);
      CHECK(a.ff_1_weight == b.ff_1_weight);
      CHECK(a.ff_2_weight == b.ff_2_weight);
      CHECK(a.ff_2_bias == b.ff_2_bias);
      CHECK(a.norm_1_weight == b.norm_1_weight);
      CHECK(a.norm_2_bias == b.norm_2_bias);
      CHECK(a.norm_1_eps == b.norm_1_eps);
      CHECK(a.approximate == b.approximate);
    }
    CHECK(direct.norm_weight == readable.norm_weight);
    CHECK(direct.norm_bias == readable.norm_bias);
    CHECK(attn::packed_bytes(direct) == attn::packed_bytes(readable));
  }
}
