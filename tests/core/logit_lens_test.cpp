// The logit lens against PyTorch's (data/make_logit_lens_fixture.py on the tiny random GPT-2 folder
// data/fixtures/gpt2/d21_lm), and on hand-made weights whose answer is known: blocks that add
// nothing leave every row the embeddings' lens. Legend: R rows (L + 1), T tokens, V vocab_size.
#include "logit_lens.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "allclose.hpp"
#include "base/random.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/pretrained.hpp"
#include "pretrained_case.hpp"

namespace {

attn::Gpt2Steps run(const attn::Gpt2& model, const std::vector<std::int64_t>& ids) {
  attn::Ids input = attn::Ids::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), input.begin());
  return attn::forward(model, attn::Gpt2Input{input, {}});
}

// A GPT-2 of D 4 and V 4 whose token table is the identity, positions zero, and whose blocks add
// nothing (every output projection zero): x_l = x_0 = e_id at every row.
attn::Gpt2 identity_model() {
  attn::Gpt2Config config = attn::default_gpt2_config();
  attn::EncoderConfig& c = config.sizes;
  c.hidden_size = 4;
  c.num_attention_heads = 2;
  c.intermediate_size = 8;
  c.num_hidden_layers = 3;
  c.vocab_size = 4;
  c.max_position_embeddings = 8;
  attn::Rng rng(7);
  attn::Gpt2 model = attn::init_gpt2(rng, config);
  model.wte.weight = xt::eye<float>(4);
  model.wpe.weight.fill(0.0f);
  for (attn::EncoderLayer& layer : model.layers) {
    layer.attention.output_linear.weight.fill(0.0f);
    layer.attention.output_linear.bias.fill(0.0f);
    layer.feed_forward.linear_2.weight.fill(0.0f);
    layer.feed_forward.linear_2.bias.fill(0.0f);
  }
  return model;
}

}  // namespace

TEST_CASE("logit lens: every row as PyTorch computes it on a random GPT-2 folder", "[lens]") {
  // To regenerate: /usr/bin/python3 data/make_logit_lens_fixture.py
  const attn::PretrainedFolder opened =
      attn::open_pretrained(attn::testing::fixture_path("gpt2/d21_lm"));
  const attn::Gpt2 model = attn::load_gpt2(attn::gpt2_config(opened),
                                           attn::read_pretrained_weights(opened), opened.shown);
  const attn::Ids ids =
      attn::testing::read_ids(attn::testing::fixture_path("logit-lens/input_ids.npy"));
  const attn::LogitLens lens = attn::logit_lens(model, attn::forward(model, {ids, {}}));
  REQUIRE(lens.rows() == 3);
  REQUIRE(lens.tokens() == ids.shape(1));
  // Through ln_f and a (T,D) x (D,V) product of D = 21: float32 round-off, on any GEMM.
  const attn::testing::Tolerance tolerance{1e-5, 1e-4};
  CHECK_ALLCLOSE(attn::to_array(lens.logits),
                 attn::read_npy(attn::testing::fixture_path("logit-lens/lens_logits.npy")),
                 tolerance);
  CHECK_ALLCLOSE(attn::to_array(lens.log_normalizer),
                 attn::read_npy(attn::testing::fixture_path("logit-lens/log_normalizer.npy")),
                 tolerance);
}

TEST_CASE("logit lens: the last row is the model's own logits", "[lens]") {
  const attn::PretrainedFolder opened =
      attn::open_pretrained(attn::testing::fixture_path("gpt2/d12_lm"));
  const attn::Gpt2 model = attn::load_gpt2(attn::gpt2_config(opened),
                                           attn::read_pretrained_weights(opened), opened.shown);
  const attn::Gpt2Steps steps = run(model, {5, 17, 200, 3, 96, 41, 7});
  const attn::LogitLens lens = attn::logit_lens(model, steps);
  REQUIRE(lens.rows() == model.layers.size() + 1);
  const attn::Tensor3 last = xt::view(lens.logits, xt::range(lens.rows() - 1, lens.rows()));
  CHECK_ALLCLOSE(attn::to_array(last), attn::to_array(steps.logits),
                 (attn::testing::Tolerance{1e-5, 1e-4}));
  // log p sums to 1 in every cell; the top token ranks 1 and the ranks follow the top list.
  const attn::Tensor3 log_p = attn::lens_log_probs(lens);
  for (std::size_t r = 0; r < lens.rows(); ++r)
    for (std::size_t t = 0; t < lens.tokens(); ++t) {
      double sum = 0.0;
      for (std::size_t v = 0; v < lens.vocab(); ++v)
        sum += std::exp(static_cast<double>(log_p(r, t, v)));
      CHECK(std::abs(sum - 1.0) < 1e-5);
      const std::vector<std::int64_t> top = attn::lens_top_tokens(lens, r, t, 5);
      REQUIRE(top.size() == 5);
      for (std::size_t k = 0; k < top.size(); ++k)
        CHECK(attn::lens_rank(lens, r, t, top[k]) == k + 1);
      for (std::size_t k = 1; k < top.size(); ++k)
        CHECK(lens.probability(r, t, top[k - 1]) >= lens.probability(r, t, top[k]));
    }
}

TEST_CASE("logit lens: blocks that add nothing give every row the embeddings' lens", "[lens]") {
  const attn::Gpt2 model = identity_model();
  const std::vector<std::int64_t> ids = {2, 0, 3, 3, 1};
  const attn::LogitLens lens = attn::logit_lens(model, run(model, ids));
  REQUIRE(lens.rows() == 4);
  // ln_f(e_i) with D = 4: mean 1/4, variance 3/16, so (1 - 1/4) / √(3/16 + eps) at i and
  // -1/4 / √(3/16 + eps) elsewhere; wte = I reads the components as the logits.
  const double spread = std::sqrt(3.0 / 16.0 + 1e-5);
  for (std::size_t r = 0; r < lens.rows(); ++r)
    for (std::size_t t = 0; t < ids.size(); ++t) {
      for (std::size_t v = 0; v < 4; ++v) {
        const double want = (v == static_cast<std::size_t>(ids[t]) ? 0.75 : -0.25) / spread;
        CHECK(lens.logits(r, t, v) == Approx(want).margin(1e-5));
      }
      CHECK(attn::lens_top_tokens(lens, r, t, 1).front() == ids[t]);
      // softmax of one logit 4/√3 above three equal ones: e^a / (e^a + 3)
      const double a = 1.0 / spread;
      CHECK(lens.probability(r, t, ids[t]) == Approx(std::exp(a) / (std::exp(a) + 3.0)));
    }
  // The input token is top-1 from the embeddings on: it settles at row 0.
  for (std::size_t t = 0; t < ids.size(); ++t)
    CHECK(attn::lens_settles_at(lens, t, ids[t]) == 0);
  // A token never top-1 in the last row settles nowhere: rows().
  CHECK(attn::lens_settles_at(lens, 0, 1) == lens.rows());
}

TEST_CASE("logit lens: a batch of two is refused", "[lens]") {
  const attn::Gpt2 model = identity_model();
  attn::Ids ids = attn::Ids::from_shape({2, 3});
  ids.fill(1);
  const attn::Gpt2Steps steps = attn::forward(model, {ids, {}});
  CHECK_THROWS_AS(attn::logit_lens(model, steps), attn::Error);
}
