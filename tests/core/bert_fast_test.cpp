// BERT on the fast path: pack(bert) from ids against the readable forward (core/bert.hpp) at odd
// sizes with token types 0 and 1 in a batch of 2, the packed init against init_bert's weights,
// and the refusals of token types. BERT-base size is a hidden case, kept out of ctest for the
// readable forward's time and memory: run it with `core_bert_fast_test "[bert-base]"`.
#include <array>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "allclose.hpp"
#include "base/error.hpp"
#include "base/random.hpp"
#include "bert.hpp"
#include "fast/encoder_fast.hpp"

using attn::Tensor3;
using attn::testing::Tolerance;

namespace {

attn::BertConfig bert_sizes(std::size_t d, std::size_t heads, std::size_t d_ff, std::size_t layers,
                            std::size_t vocab, std::size_t positions, const char* act) {
  return {.sizes = {.hidden_size = d,
                    .num_attention_heads = heads,
                    .intermediate_size = d_ff,
                    .num_hidden_layers = layers,
                    .vocab_size = vocab,
                    .max_position_embeddings = positions,
                    .hidden_act = act},
          .type_vocab_size = 2};
}

// init_bert's model with LayerNorms that are not the identity, so that a mixed-up weight, bias or
// table shows.
attn::Bert random_bert(std::uint64_t seed, const attn::BertConfig& config) {
  attn::Rng rng(seed);
  attn::Bert bert = attn::init_bert(rng, config, attn::BertHeads::none);
  std::vector<attn::LayerNorm*> norms = {&bert.embeddings.layer_norm};
  for (attn::EncoderLayer& layer : bert.layers) {
    norms.push_back(&layer.layer_norm_1);
    norms.push_back(&layer.layer_norm_2);
  }
  for (attn::LayerNorm* norm : norms) {
    for (float& w : norm->weight)
      w = 1.0f + 0.2f * static_cast<float>(rng.normal());
    for (float& b : norm->bias)
      b = 0.2f * static_cast<float>(rng.normal());
  }
  return bert;
}

// Random ids, and token types as a sentence pair: 0 up to a split that differs per sequence, then 1.
attn::BertInput pair_input(std::uint64_t seed, std::size_t batch, std::size_t tokens,
                           std::size_t vocab) {
  attn::Rng rng(seed + 100);
  attn::BertInput input{attn::Ids({batch, tokens}), attn::Ids({batch, tokens}), {}};
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t split = (tokens + b) / (b + 2);
    for (std::size_t t = 0; t < tokens; ++t) {
      input.ids(b, t) = static_cast<std::int64_t>(rng.next_u64() % vocab);
      input.token_types(b, t) = t < split ? 0 : 1;
    }
  }
  return input;
}

// forward_fast of the packed model on `input` (token types given or not), as (B,T,D).
Tensor3 fast_hidden(const attn::PackedEncoder& packed, const attn::BertInput& input,
                    bool with_types) {
  const std::size_t batch = input.ids.shape(0), tokens = input.ids.shape(1);
  attn::EncoderWorkspace workspace = attn::make_workspace(packed, batch, tokens);
  Tensor3 out({batch, tokens, packed.d_model});
  attn::forward_fast(packed, input.ids.data(), batch, tokens, workspace, out.data(),
                     with_types ? input.token_types.data() : nullptr);
  return out;
}

void check_against_reference(const attn::Bert& bert, const attn::BertInput& input,
                             Tolerance tolerance) {
  const attn::PackedEncoder packed = attn::pack(bert);
  REQUIRE(packed.token_types == 2);
  for (const bool with_types : {true, false}) {
    attn::BertInput reference_input = input;
    if (!with_types) reference_input.token_types = attn::Ids();
    const attn::BertSteps reference = attn::forward(bert, reference_input, false);
    INFO((with_types ? "token types 0 and 1" : "no token types (all 0)"));
    CHECK_ALLCLOSE(attn::to_array(fast_hidden(packed, input, with_types)),
                   attn::to_array(reference.hidden_states(bert.layers.size())), tolerance);
  }
}

}  // namespace

TEST_CASE("packed BERT from ids and token types equals the readable forward at odd sizes",
          "[encoder_fast][bert_fast]") {
  // hs = 4: sqrt(hs) folded into the Q Kᵀ GEMM; hs = 5: the softmax divides.
  for (const auto& [d, heads, d_ff, layers] :
       {std::array<std::size_t, 4>{12, 3, 20, 2}, {10, 2, 36, 3}}) {
    for (const char* act : {"gelu", "gelu_new"}) {
      for (std::uint64_t seed : {0u, 5u}) {
        for (std::size_t tokens : {1u, 7u, 19u}) {
          DYNAMIC_SECTION("D=" << d << " H=" << heads << " F=" << d_ff << " L=" << layers << " "
                               << act << ", seed " << seed << ", B=2 T=" << tokens) {
            const attn::BertConfig config = bert_sizes(d, heads, d_ff, layers, 29, 23, act);
            check_against_reference(random_bert(seed, config), pair_input(seed, 2, tokens, 29),
                                    Tolerance{1e-5, 0.0});
          }
        }
      }
    }
  }
}

TEST_CASE("init_packed_bert packs the embeddings and layers init_bert draws",
          "[encoder_fast][bert_fast]") {
  const attn::BertConfig config = bert_sizes(12, 3, 20, 2, 29, 23, "gelu");
  attn::Rng a(11), b(11);
  const attn::PackedEncoder packed = attn::init_packed_bert(a, config);
  const attn::PackedEncoder expected =
      attn::pack(attn::init_bert(b, config, attn::BertHeads::none));
  CHECK(packed.token_types == expected.token_types);
  CHECK(packed.token_embeddings == expected.token_embeddings);
  CHECK(packed.token_type_embeddings == expected.token_type_embeddings);
  CHECK(packed.position_embeddings == expected.position_embeddings);
  CHECK(packed.norm_eps == expected.norm_eps);
  CHECK(packed.norm_eps == 1e-12f);
  REQUIRE(packed.layers.size() == expected.layers.size());
  for (std::size_t l = 0; l < packed.layers.size(); ++l) {
    const attn::PackedEncoderLayer &got = packed.layers[l], &want = expected.layers[l];
    CHECK(got.placement == attn::NormPlacement::post);
    CHECK(got.qkv_weight == want.qkv_weight);
    CHECK(got.out_weight == want.out_weight);
    CHECK(got.ff_1_weight == want.ff_1_weight);
    CHECK(got.ff_2_bias == want.ff_2_bias);
    CHECK(got.norm_1_eps == 1e-12f);
    CHECK(got.norm_2_eps == 1e-12f);
  }
  CHECK(attn::packed_bytes(packed) == attn::packed_bytes(expected));
}

TEST_CASE("the fast path refuses token types outside the table, and token types without one",
          "[encoder_fast][bert_fast]") {
  const attn::BertConfig config = bert_sizes(12, 3, 20, 1, 29, 23, "gelu");
  attn::Rng rng(2);
  const attn::PackedEncoder bert = attn::init_packed_bert(rng, config);
  attn::EncoderWorkspace workspace = attn::make_workspace(bert, 1, 3);
  std::vector<float> out(3 * 12);
  const std::vector<std::int64_t> ids = {1, 2, 3};
  for (const std::vector<std::int64_t>& types :
       {std::vector<std::int64_t>{0, 1, 2}, std::vector<std::int64_t>{0, -1, 0}}) {
    CHECK_THROWS_WITH(
        attn::forward_fast(bert, ids.data(), 1, 3, workspace, out.data(), types.data()),
        Catch::Contains("token type") && Catch::Contains("expected 0 to 1"));
  }
  const attn::PackedEncoder book =
      attn::init_packed_encoder(rng, config.sizes, attn::NormPlacement::pre);
  attn::EncoderWorkspace book_workspace = attn::make_workspace(book, 1, 3);
  const std::vector<std::int64_t> zeros = {0, 0, 0};
  CHECK_THROWS_AS(
      attn::forward_fast(book, ids.data(), 1, 3, book_workspace, out.data(), zeros.data()),
      attn::Error);
}

// Hidden from ctest (the readable forward of 12 BERT-base layers and their tapes); the tolerance is
// the fast layer's at this size.
TEST_CASE("packed BERT-base from ids and token types equals the readable forward",
          "[.][bert-base][bert_fast]") {
  const attn::BertConfig config = bert_sizes(768, 12, 3072, 12, 30522, 512, "gelu");
  check_against_reference(random_bert(3, config), pair_input(3, 2, 128, 30522),
                          Tolerance{1e-4, 0.0});
}
