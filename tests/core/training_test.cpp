// Training against PyTorch: from the same initial weights and the same batches, 20 AdamW steps of
// a 2-layer encoder with a per-token head give torch's loss at every step and its final weights
// (data/generator/training.py). Also the optimisers alone against torch.optim's formulas.
#include <cmath>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "gradients.hpp"
#include "io/weights.hpp"
#include "train/classifier.hpp"
#include "train/optimizer.hpp"

namespace {

attn::Ids batch_of(const attn::Array& a, std::size_t step) {
  const std::size_t batch = a.shape[1], tokens = a.shape[2];
  attn::Ids ids({batch, tokens});
  std::memcpy(ids.data(), a.bytes.data() + step * batch * tokens * sizeof(std::int64_t),
              ids.size() * sizeof(std::int64_t));
  return ids;
}

}  // namespace

TEST_CASE("20 AdamW steps give PyTorch's loss at every step and its final weights",
          "[training][parity]") {
  const auto meta = nlohmann::json::parse(attn::testing::read_text(
      attn::testing::fixture_path("training/cases.json")))["adamw_20_steps"];
  const attn::StateDict f =
      attn::read_weights(attn::testing::fixture_path("training/adamw_20_steps.npz"));
  attn::EncoderConfig config;
  config.hidden_size = meta["config"]["hidden_size"];
  config.num_attention_heads = meta["config"]["num_attention_heads"];
  config.intermediate_size = meta["config"]["intermediate_size"];
  config.num_hidden_layers = meta["config"]["num_hidden_layers"];
  config.vocab_size = meta["config"]["vocab_size"];
  config.max_position_embeddings = meta["config"]["max_position_embeddings"];
  attn::Rng rng(1);
  attn::TokenClassifier model =
      attn::init_token_classifier(rng, config, attn::NormPlacement::pre, config.vocab_size);
  attn::visit_parameters(model, [&](const std::string& key, float* data, const attn::Shape& shape) {
    const attn::Array& a = f.at("init." + key);
    REQUIRE(a.shape == shape);
    const std::vector<float> v = attn::to_float_vector(a);
    std::copy(v.begin(), v.end(), data);
  });
  attn::TokenClassifier grad = attn::zeros_like(model);
  attn::AdamW adamw;
  adamw.lr = meta["optimizer"]["lr"];
  adamw.weight_decay = meta["optimizer"]["weight_decay"];
  adamw.eps = meta["optimizer"]["eps"];
  const std::vector<attn::ParameterSlot> slots = attn::parameter_slots(model, grad);
  const std::vector<double> losses(reinterpret_cast<const double*>(f.at("losses").bytes.data()),
                                   reinterpret_cast<const double*>(f.at("losses").bytes.data()) +
                                       f.at("losses").bytes.size() / 8);
  REQUIRE(losses.size() == meta["steps"].get<std::size_t>());
  for (std::size_t step = 0; step < losses.size(); ++step) {
    const attn::Ids ids = batch_of(f.at("ids"), step), labels = batch_of(f.at("labels"), step);
    attn::zero_grad(grad);
    const attn::TokenClassifierTape tape = attn::forward(model, ids, labels);
    attn::backward(model, tape, labels, grad);
    // A key bias adds q·b to every score of a query's row, which softmax cancels: its true gradient
    // is 0, and what backward computes is round-off.
    for (const attn::ParameterSlot& slot : slots)
      if (slot.key.ends_with(".k.bias"))
        for (std::size_t i = 0; i < slot.count; ++i)
          CHECK(std::fabs(slot.grad[i]) < 1e-6f);
    adamw.step(slots);
    INFO("step " << step << ": attn " << tape.loss.loss << ", torch " << losses[step]);
    CHECK(std::fabs(tape.loss.loss - losses[step]) <= 1e-4 * std::fabs(losses[step]));
  }
  CHECK(losses.back() < losses.front());  // the batches repeat: the model learns them
  // AdamW divides each gradient by its own running size, so the key biases' round-off moves them
  // by up to lr a step in directions no two machines share: they are left out here.
  attn::visit_parameters(model, [&](const std::string& key, float* data, const attn::Shape& shape) {
    if (key.ends_with(".k.bias")) return;
    INFO("final " << key);
    CHECK_ALLCLOSE(
        attn::make_float32(shape, std::vector<float>(data, data + attn::element_count(shape))),
        f.at("final." + key), (attn::testing::Tolerance{1e-4, 1e-4}));
  });
}

TEST_CASE("SGD with momentum and AdamW follow torch.optim's update rules",
          "[training][optimizer]") {
  // One parameter of two values, gradients fed by hand; expected values computed with
  // torch.optim 1.13 (SGD(lr=0.1, momentum=0.9, weight_decay=0.01), AdamW(lr=0.1)).
  std::vector<float> value = {1.0f, -2.0f};
  std::vector<float> gradient = {0.5f, -1.0f};
  const std::vector<attn::ParameterSlot> slots = {{"w", value.data(), gradient.data(), 2}};
  attn::Sgd sgd{0.1f, 0.9f, 0.01f, {}};
  sgd.step(slots);  // g = 0.5 + 0.01, buf = g
  CHECK(value[0] == Approx(1.0 - 0.1 * 0.51));
  CHECK(value[1] == Approx(-2.0 - 0.1 * (-1.0 - 0.02)));
  const double first = value[0];
  sgd.step(slots);  // buf = 0.9 buf + g
  CHECK(value[0] == Approx(first - 0.1 * (0.9 * 0.51 + (0.5 + 0.01 * first))));

  std::vector<float> w = {1.0f};
  std::vector<float> g = {0.25f};
  const std::vector<attn::ParameterSlot> one = {{"w", w.data(), g.data(), 1}};
  attn::AdamW adamw;
  adamw.lr = 0.1f;
  adamw.step(one);
  // Step 1: m̂ = g, v̂ = g², so p = p (1 - lr wd) - lr g / (|g| + eps).
  CHECK(w[0] == Approx(1.0 * (1.0 - 0.1 * 0.01) - 0.1 * 0.25 / (0.25 + 1e-8)));
}
