// Training a GPT on the fast engine (core/fast/gpt_train.hpp): one step of a tiny GPT2LMHeadModel
// against PyTorch (data/fixtures/gpt-training/step.npz: the loss, every gradient from autograd, the
// gradient's norm and the parameters after nanoGPT's clipped AdamW step), gradients against
// finite differences, the logits against the readable forward (core/gpt2.hpp), the state_dict's
// round trip through the keys Hugging Face writes, and the refusals.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "fast/gpt_train.hpp"
#include "fixtures.hpp"
#include "gpt2.hpp"
#include "io/weights.hpp"
#include "kernels/gemm.hpp"

namespace {

attn::Gpt2Config tiny_config(std::size_t d, std::size_t heads, std::size_t layers,
                             std::size_t vocab, std::size_t positions) {
  attn::Gpt2Config c = attn::default_gpt2_config();
  c.sizes.hidden_size = d;
  c.sizes.num_attention_heads = heads;
  c.sizes.intermediate_size = 4 * d;
  c.sizes.num_hidden_layers = layers;
  c.sizes.vocab_size = vocab;
  c.sizes.max_position_embeddings = positions;
  c.eos_token_id = c.bos_token_id = static_cast<std::int64_t>(vocab) - 1;
  return c;
}

struct Step {
  attn::StateDict arrays;
  attn::GptModel model;
  std::vector<std::int32_t> ids, targets;
};

// The fixture's model, read through the path a folder takes (GPT2Model's keys, Conv1D layout).
Step fixture_step() {
  Step s;
  s.arrays = attn::read_weights(attn::testing::fixture_path("gpt-training/step.npz"));
  attn::Gpt2Weights weights;
  for (const auto& [key, array] : s.arrays)
    if (key.starts_with("transformer."))
      weights.tensors[key.substr(std::string("transformer.").size())] = array;
  s.model = attn::gpt_from_weights(tiny_config(8, 2, 2, 11, 7), std::move(weights), "the fixture");
  for (const char* name : {"input_ids", "targets"}) {
    const attn::Array& a = s.arrays.at(name);
    auto& out = std::string(name) == "input_ids" ? s.ids : s.targets;
    for (std::size_t i = 0; i < a.size(); ++i)
      out.push_back(static_cast<std::int32_t>(a.integer(i)));
  }
  return s;
}

// `values` laid out as the fixture's tensor `key` (Hugging Face's layout) from the engine's.
std::vector<float> as_saved(const attn::GptModel& model, const std::vector<float>& flat,
                            const std::string& key) {
  attn::GptModel copy = model;
  copy.params = flat;
  return attn::to_float_vector(attn::gpt_state_dict(copy).at(key));
}

void require_close(const std::vector<float>& got, const std::vector<float>& want, float atol,
                   float rtol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << "[" << i << "] " << got[i] << " vs " << want[i]);
    REQUIRE(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]));
  }
}

}  // namespace

TEST_CASE("one training step of a tiny GPT equals PyTorch's: loss, gradients, clipped AdamW",
          "[gpt_train]") {
  for (int threads : {1, 2}) {
    attn::set_threads(threads);
    Step s = fixture_step();
    attn::GptEngine engine(s.model, 2, 5);
    const float loss = engine.forward(s.model, s.ids.data(), s.targets.data(), 2, 5);
    CHECK(loss == Approx(s.arrays.at("loss").float32_at(0)).epsilon(1e-5));
    engine.backward(s.model, s.ids.data(), s.targets.data());
    for (const attn::GptTensor& t : s.model.tensors)
      require_close(as_saved(s.model, engine.gradient(), t.key),
                    attn::to_float_vector(s.arrays.at("grad." + t.key)), 1e-5f, 1e-4f,
                    "grad." + t.key);
    attn::GptOptimizer optimizer;
    const float norm = engine.update(s.model, optimizer, 0.01f);
    CHECK(norm == Approx(s.arrays.at("grad_norm").float32_at(0)).epsilon(1e-5));
    // AdamW's first step moves each number by about lr·sign(g). The keys' bias has a gradient of
    // exactly 0 (softmax does not change when every score of a row moves alike), computed as
    // round-off of either sign by both: those numbers are left out.
    for (const attn::GptTensor& t : s.model.tensors) {
      std::vector<float> got = attn::to_float_vector(attn::gpt_state_dict(s.model).at(t.key));
      std::vector<float> want = attn::to_float_vector(s.arrays.at("after." + t.key));
      const std::vector<float> grad = attn::to_float_vector(s.arrays.at("grad." + t.key));
      for (std::size_t i = 0; i < grad.size(); ++i)
        if (std::abs(grad[i]) < 1e-6f) got[i] = want[i];
      require_close(got, want, 1e-5f, 1e-4f, "after." + t.key);
    }
  }
  attn::set_threads(1);
}

TEST_CASE("the gradient agrees with finite differences of the loss", "[gpt_train]") {
  Step s = fixture_step();
  attn::GptEngine engine(s.model, 2, 5);
  engine.forward(s.model, s.ids.data(), s.targets.data(), 2, 5);
  engine.backward(s.model, s.ids.data(), s.targets.data());
  const std::vector<float> grad = engine.gradient();
  // A few numbers of every tensor, by central differences in double of float losses.
  for (const attn::GptTensor& t : s.model.tensors) {
    for (std::size_t i : {std::size_t{0}, t.count() / 2, t.count() - 1}) {
      const std::size_t at = t.offset + i;
      const float kept = s.model.params[at];
      const float h = 1e-2f;
      s.model.params[at] = kept + h;
      const double up = engine.forward(s.model, s.ids.data(), s.targets.data(), 2, 5);
      s.model.params[at] = kept - h;
      const double down = engine.forward(s.model, s.ids.data(), s.targets.data(), 2, 5);
      s.model.params[at] = kept;
      const double numeric = (up - down) / (2.0 * h);
      INFO(t.key << "[" << i << "]: backward " << grad[at] << ", finite differences " << numeric);
      CHECK(std::abs(numeric - grad[at]) <= 2e-3 + 2e-2 * std::abs(numeric));
    }
  }
}

TEST_CASE("the engine's logits equal the readable GPT-2's forward", "[gpt_train]") {
  const attn::Gpt2Config config = tiny_config(16, 4, 3, 23, 9);
  attn::GptModel model = attn::init_gpt(config, 5);
  for (float& p : model.params)
    p *= 20.0f;  // far from uniform attention
  attn::StateDict saved = attn::gpt_state_dict(model);
  const attn::Gpt2 readable = attn::load_gpt2(config, std::move(saved), "the engine's model");
  std::vector<std::int32_t> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};  // (2,7)
  attn::Gpt2Input input;
  input.ids = attn::Ids::from_shape({2, 7});
  for (std::size_t i = 0; i < ids.size(); ++i)
    input.ids.flat(i) = ids[i];
  const attn::Gpt2Steps steps = attn::forward(readable, input);
  attn::GptEngine engine(model, 3, 9);
  engine.forward(model, ids.data(), nullptr, 2, 7);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 7; ++t)
      for (std::size_t v = 0; v < 23; ++v) {
        INFO("logit (" << b << ", " << t << ", " << v << ")");
        REQUIRE(engine.logits(b, t)[v] == Approx(steps.logits(b, t, v)).margin(1e-4).epsilon(1e-4));
      }
}

TEST_CASE("a later token never changes an earlier position's loss or logits", "[gpt_train]") {
  const attn::Gpt2Config config = tiny_config(16, 2, 2, 13, 8);
  const attn::GptModel model = attn::init_gpt(config, 9);
  attn::GptEngine engine(model, 1, 8);
  std::vector<std::int32_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
  engine.forward(model, ids.data(), nullptr, 1, 8);
  std::vector<float> before(engine.logits(0, 0), engine.logits(0, 4) + 13);
  ids[5] = 12;
  engine.forward(model, ids.data(), nullptr, 1, 8);
  std::vector<float> after(engine.logits(0, 0), engine.logits(0, 4) + 13);
  CHECK(before == after);
}

TEST_CASE("the state_dict has GPT2LMHeadModel's keys and shapes, and reads back", "[gpt_train]") {
  const attn::Gpt2Config config = tiny_config(8, 2, 1, 5, 4);
  const attn::GptModel model = attn::init_gpt(config, 1);
  attn::StateDict saved = attn::gpt_state_dict(model);
  CHECK(saved.size() == 2 + 12 + 2);
  CHECK(saved.at("transformer.h.0.attn.c_attn.weight").shape == attn::Shape{8, 24});
  CHECK(saved.at("transformer.h.0.mlp.c_proj.weight").shape == attn::Shape{32, 8});
  CHECK(saved.count("lm_head.weight") == 0);
  attn::Gpt2Weights checked = attn::check_gpt2_weights(config, std::move(saved), "saved");
  const attn::GptModel back = attn::gpt_from_weights(config, std::move(checked), "saved");
  CHECK(back.params == model.params);
}

TEST_CASE("the engine refuses ids outside the vocabulary and batches past its size",
          "[gpt_train]") {
  const attn::Gpt2Config config = tiny_config(8, 2, 1, 5, 4);
  const attn::GptModel model = attn::init_gpt(config, 1);
  attn::GptEngine engine(model, 1, 4);
  std::vector<std::int32_t> ids = {0, 1, 5, 2};
  CHECK_THROWS_AS(engine.forward(model, ids.data(), nullptr, 1, 4), attn::Error);
  ids[2] = 2;
  CHECK_THROWS_AS(engine.forward(model, ids.data(), nullptr, 2, 4), attn::Error);
  CHECK_THROWS_AS(attn::GptEngine(model, 1, 5), attn::Error);
  attn::Gpt2Config bad = config;
  bad.sizes.num_attention_heads = 3;
  CHECK_THROWS_AS(attn::gpt_layout(bad), attn::Error);
}
