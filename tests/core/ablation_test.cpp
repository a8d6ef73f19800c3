// Head ablation: a head's slice of the concatenation zeroed before the output projection, against
// PyTorch doing the same in a forward pre-hook (data/generator/ablation.py), in every form; and the
// checks ablate_head and ablate_heads make; heads ablated in the weights against the mask.
#include "train/ablation.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "gradients.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "state_dict.hpp"
#include "train/classifier.hpp"
#include "train/seq2seq.hpp"
#include "train/tasks.hpp"

using attn::MultiHeadVariant;
using attn::Tensor3;

namespace {
std::string ablation_fixture(const std::string& file) {
  return attn::testing::fixture_path("multi-head/ablation/" + file);
}
}  // namespace

TEST_CASE("an ablated head's output is zeroed as torch zeroes its slice of the concatenation",
          "[ablation][fixture]") {
  const auto cases =
      nlohmann::json::parse(attn::testing::read_text(ablation_fixture("cases.json")));
  REQUIRE(cases.size() == 5);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    SECTION(name) {
      const auto variant = *attn::multi_head_variant(c["variant"].get<std::string>());
      const std::size_t d = c["shape"][2], heads = c["heads"];
      attn::Rng rng(0);
      attn::MultiHeadAttention layer = attn::init_multi_head(rng, variant, d, heads);
      attn::load_state_dict(layer, attn::describe_multi_head(variant, d, heads),
                            attn::read_weights(ablation_fixture(c["weights"])), name);
      const Tensor3 x = attn::to_tensor<3>(attn::read_npy(ablation_fixture(c["input"])), "x");
      const Tensor3 mask = attn::attention_mask(x.shape(0), x.shape(1), c["causal"], {});
      const Tensor3* masked = c["causal"].get<bool>() ? &mask : nullptr;
      const Tensor3 full = forward(layer, x, masked).output;
      for (std::size_t h : c["ablated"].get<std::vector<std::size_t>>())
        attn::ablate_head(layer, h);
      const attn::MultiHeadSteps s = forward(layer, x, masked);
      const attn::Array expected = attn::read_npy(ablation_fixture(c["output"]));
      // float32 against float32: 1e-5 absolute, 1e-4 relative (DESIGN.md's default)
      CHECK_ALLCLOSE(attn::to_array(s.output), expected, attn::testing::Tolerance{1e-5, 1e-4});
      // the float64 reference zeroes the same heads
      CHECK_ALLCLOSE(attn::to_array(Tensor3(xt::cast<float>(forward_float64(layer, x, masked)))),
                     expected, attn::testing::Tolerance{1e-5, 1e-4});
      // the fixture is not the unablated output: the test can fail
      CHECK(c["max_change"].get<double>() > 0.05);
      CHECK(xt::amax(xt::abs(full - s.output))() > 0.05f);
      // the weights themselves are untouched: only the heads' outputs are
      const std::size_t hs = s.concatenated.shape(2) / heads;
      for (std::size_t h : c["ablated"].get<std::vector<std::size_t>>())
        CHECK(xt::amax(xt::abs(xt::view(s.concatenated, xt::all(), xt::all(),
                                        xt::range(h * hs, (h + 1) * hs))))() == 0.0f);
    }
  }
}

TEST_CASE("an ablated head gets no gradient through the output", "[ablation][backward]") {
  attn::Rng rng(4);
  attn::MultiHeadAttention layer = attn::init_multi_head(rng, MultiHeadVariant::book, 12, 3);
  attn::ablate_head(layer, 1);
  attn::Rng data(5);
  const Tensor3 x = attn::randn(data, 2, 5, 12), dy = attn::randn(data, 2, 5, 12);
  const attn::MultiHeadSteps s = forward(layer, x, nullptr);
  attn::MultiHeadAttention grad = attn::zeros_like(layer);
  backward(layer, x, s, dy, grad);
  const attn::BookMultiHead& g = std::get<attn::BookMultiHead>(grad);
  CHECK(xt::amax(xt::abs(g.heads[1].v.weight))() == 0.0f);
  CHECK(xt::amax(xt::abs(g.heads[0].v.weight))() > 0.0f);
}

TEST_CASE("ablating a head or layer that does not exist names what there is", "[ablation]") {
  attn::Rng rng(6);
  attn::MultiHeadAttention layer = attn::init_multi_head(rng, MultiHeadVariant::fused, 12, 3);
  CHECK_THROWS_WITH(attn::ablate_head(layer, 3),
                    Catch::Contains("head 3 does not exist: the layer has 3 heads, 0 to 2"));
  attn::TrainConfig config;
  config.layers = 1;
  attn::TrainedModel model = attn::initial_model(config);
  CHECK_THROWS_WITH(attn::ablate_heads(model, {{1, 0}}),
                    Catch::Contains("layer 1 does not exist: the model has 1 layer, 0 to 0"));
  CHECK_THROWS_AS(attn::ablate_heads(model, {{0, 0}}, attn::ViewPart::cross), attn::Error);
  try {
    attn::ablate_heads(model, {{0, 2}});
    FAIL("head 2 of 2 was accepted");
  } catch (const attn::Error& e) {
    CHECK(e.subject() == "ablate");
  }
}

TEST_CASE("heads ablated in the weights compute what the mask computes", "[ablation]") {
  // The mask cleared after ablate_heads_in_weights: only the zeroed columns of the output
  // projection remain, and the outputs must still be the masked model's.
  attn::TrainConfig config;
  attn::TrainedModel encoder = attn::initial_model(config);
  const std::vector<attn::HeadRef> heads = {{0, 1}, {1, 0}};
  const attn::TrainedModel masked = attn::ablated_copy(encoder, heads);
  attn::TrainedModel zeroed = encoder;
  attn::ablate_heads_in_weights(zeroed, heads);
  for (attn::EncoderLayer& layer : std::get<attn::TokenClassifier>(zeroed).encoder.layers)
    layer.attention.ablated.clear();
  attn::Rng rng(3);
  const attn::TaskBatch set = attn::make_task_batch(attn::Task::reverse, config.sizes, 4, rng);
  const Tensor3 want =
      attn::forward(std::get<attn::TokenClassifier>(masked), set.ids, set.labels).logits;
  const Tensor3 whole =
      attn::forward(std::get<attn::TokenClassifier>(encoder), set.ids, set.labels).logits;
  const Tensor3 got =
      attn::forward(std::get<attn::TokenClassifier>(zeroed), set.ids, set.labels).logits;
  CHECK_ALLCLOSE(attn::to_array(got), attn::to_array(want), attn::testing::Tolerance{1e-6, 1e-5});
  CHECK(xt::amax(xt::abs(whole - want))() > 1e-3f);  // the heads mattered: the test can fail

  // The encoder-decoder's cross-attention, through the decoding cache, against the mask without it.
  config.task = attn::Seq2SeqTask::reverse;
  attn::TrainedModel transformer = attn::initial_model(config);
  const attn::TrainedModel cross_masked =
      attn::ablated_copy(transformer, {{0, 0}}, attn::ViewPart::cross);
  attn::ablate_heads_in_weights(transformer, {{0, 0}}, attn::ViewPart::cross);
  for (attn::DecoderBlock& block : std::get<attn::Transformer>(transformer).decoder.layers)
    block.cross_attention.ablated.clear();
  attn::DecodeOptions cached, recomputed;
  recomputed.cache = false;
  const std::vector<std::int64_t> source = attn::parse_source(attn::Seq2SeqTask::reverse, "cab");
  const attn::Decoded a = attn::decode(std::get<attn::Transformer>(transformer), source, cached);
  const attn::Decoded b =
      attn::decode(std::get<attn::Transformer>(cross_masked), source, recomputed);
  REQUIRE(a.steps.size() == b.steps.size());
  for (std::size_t t = 0; t < a.steps.size(); ++t)
    for (std::size_t v = 0; v < a.steps[t].log_probs.size(); ++v)
      CHECK(a.steps[t].log_probs[v] == Approx(b.steps[t].log_probs[v]).margin(1e-5));
}
