// The checkpoints shipped in data/checkpoints/ (made by data/checkpoints/make.sh with attn train):
// each one reaches 99% on its task's held-out set, as its manifest says, and its attention shows
// the pattern the lessons point to.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "training.hpp"

namespace {

std::string checkpoint_path(const std::string& name) {
  return std::string(ATTN_SOURCE_DIR) + "/data/checkpoints/" + name;
}

struct Loaded {
  attn::TrainConfig config;
  attn::TokenClassifier model;
};

Loaded load(const std::string& name) {
  attn::Metadata metadata;
  const attn::StateDict weights =
      attn::read_weights(checkpoint_path(name + ".safetensors"), &metadata);
  Loaded l{attn::train_config_from_metadata(metadata, name), {}};
  attn::Rng rng(0);
  l.model = attn::init_token_classifier(rng, attn::model_config(l.config), l.config.norm,
                                        attn::task_classes(l.config.task, l.config.sizes));
  attn::visit_parameters(l.model,
                         [&](const std::string& key, float* data, const attn::Shape& shape) {
                           REQUIRE(weights.at(key).shape == shape);
                           const std::vector<float> v = attn::to_float_vector(weights.at(key));
                           std::copy(v.begin(), v.end(), data);
                         });
  return l;
}

}  // namespace

TEST_CASE("every shipped checkpoint gets at least 99% of its held-out tokens right",
          "[checkpoints]") {
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text(checkpoint_path("manifest.json")));
  REQUIRE(manifest["checkpoints"].size() == 4);
  for (const auto& entry : manifest["checkpoints"]) {
    const std::string name = entry["name"];
    INFO(name);
    Loaded l = load(name);
    CHECK(std::string(attn::task_info(l.config.task).name) == name);
    l.config.seed = entry["seed"];  // the held-out set's stream
    const attn::Evaluation e = attn::evaluate(l.model, attn::held_out_set(l.config));
    CHECK(e.token_accuracy >= 0.99);
    CHECK(e.token_accuracy == Approx(entry["held_out_token_accuracy"].get<double>()).margin(1e-3));
  }
}

TEST_CASE("the reverse checkpoint has a head on the anti-diagonal: query i looks at key T-1-i",
          "[checkpoints]") {
  const Loaded l = load("reverse");
  attn::Rng rng(7);
  const attn::TaskBatch b = attn::make_task_batch(l.config.task, l.config.sizes, 16, rng);
  const attn::EncoderTape tape = attn::forward_tape(l.model.encoder, b.ids);
  const attn::Tensor4& w = tape.layers.front().attention.weights;  // (B,H,T,T)
  const std::size_t heads = w.shape(1), t = w.shape(2);
  bool found = false;
  for (std::size_t h = 0; h < heads; ++h) {
    std::size_t on_anti_diagonal = 0;
    for (std::size_t s = 0; s < w.shape(0); ++s)
      for (std::size_t i = 0; i < t; ++i) {
        std::size_t best = 0;
        for (std::size_t j = 1; j < t; ++j)
          if (w(s, h, i, j) > w(s, h, i, best)) best = j;
        on_anti_diagonal += best == t - 1 - i;
      }
    found = found || on_anti_diagonal == w.shape(0) * t;
  }
  CHECK(found);
}
