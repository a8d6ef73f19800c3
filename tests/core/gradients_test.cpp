// Every backward() against torch autograd: the fixtures in data/fixtures/gradients/ hold each
// case's inputs, weights, the gradient fed to backward and every .grad PyTorch computed
// (data/generator/gradients.py). attn loads the same weights, runs forward and backward, and must
// give dX and each parameter's gradient within the stated tolerances: autograd sums in its own
// order, so the last bits differ, never more.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "attention.hpp"
#include "base/random.hpp"
#include "dropout.hpp"
#include "embedding.hpp"
#include "encoder.hpp"
#include "feed_forward.hpp"
#include "fixture_case.hpp"
#include "gradients.hpp"
#include "layer_norm.hpp"
#include "loss.hpp"
#include "multi_head.hpp"
#include "scratch.hpp"
#include "softmax.hpp"
#include "state_dict.hpp"

using attn::Array;
using attn::Tensor3;
using attn::testing::Tolerance;

namespace {

// Gradients are sums over up to B·T rows of products; float32 round-off in two summation orders.
constexpr Tolerance kGradient{2e-5, 1e-4};

using Case = attn::testing::FixtureCase;

Case load(const std::string& name) {
  return attn::testing::load_case("gradients", name);
}

template <class Layer>
void load_parameters(Layer& layer, const Case& c) {
  attn::testing::copy_case_parameters(layer, c);
}

template <class Layer>
void check_parameter_gradients(Layer& grad, const Case& c, Tolerance tolerance = kGradient) {
  attn::testing::check_case_gradients(grad, c, tolerance);
}

void check_input_gradient(const Tensor3& got, const Case& c, const std::string& name = "x",
                          Tolerance tolerance = kGradient) {
  INFO(c.name << ": grad." << name);
  CHECK_ALLCLOSE(attn::to_array(got), c.at("grad." + name), tolerance);
}

// The fixture's 0/1 mask as attn's additive one: -inf where a query may not look.
Tensor3 additive_mask(const Case& c) {
  Tensor3 mask = c.tensor("mask");
  for (float& v : mask)
    v = v == 0.0f ? -std::numeric_limits<float>::infinity() : 0.0f;
  return mask;
}

// An int64 (B,T) array as ids.
attn::Ids ids_of(const Array& a) {
  REQUIRE(a.dtype == attn::Dtype::int64);
  REQUIRE(a.rank() == 2);
  attn::Ids ids({a.shape[0], a.shape[1]});
  std::memcpy(ids.data(), a.bytes.data(), ids.size() * sizeof(std::int64_t));
  return ids;
}

void check_output(const Tensor3& got, const Case& c) {
  INFO(c.name << ": output");
  CHECK_ALLCLOSE(attn::to_array(got), c.at("output"));
}

// Loads the case's weights into `layer`, then checks what `run(layer, x, G, grad)` gives: the
// forward's output and dX (a pair), and every parameter's gradient left in `grad`.
template <class Layer, class Run>
void check_layer(Layer layer, const Case& c, Run run) {
  load_parameters(layer, c);
  Layer grad = attn::zeros_like(layer);
  const auto [output, d_x] = run(layer, c.tensor("input.x"), c.tensor("grad_output"), grad);
  check_output(output, c);
  check_input_gradient(d_x, c);
  check_parameter_gradients(grad, c);
}

}  // namespace

TEST_CASE("Linear backward equals autograd, with and without a bias", "[gradients][linear]") {
  for (const std::string name : {"linear_bias", "linear_no_bias"}) {
    const Case c = load(name);
    attn::Rng rng(1);
    check_layer(attn::init_linear(rng, c.meta["in"], c.meta["out"], c.meta["bias"]), c,
                [](const auto& layer, const Tensor3& x, const Tensor3& g, auto& grad) {
                  return std::pair{attn::forward(layer, x), attn::backward(layer, x, g, grad)};
                });
  }
}

// forward(layer, x) and backward(layer, x, steps, G, grad), for the layers whose steps hold output.
const auto steps_and_back = [](const auto& layer, const Tensor3& x, const Tensor3& g, auto& grad) {
  const auto steps = attn::forward(layer, x);
  return std::pair{steps.output, attn::backward(layer, x, steps, g, grad)};
};

TEST_CASE("LayerNorm backward equals autograd: nn.LayerNorm and seed 001's LayerNormalization",
          "[gradients][layer-norm]") {
  const Case c = load("layer_norm");
  check_layer(attn::init_layer_norm(c.meta["d"]), c, steps_and_back);
  check_layer(attn::init_layer_normalization(), load("layer_norm_seed001"), steps_and_back);
}

TEST_CASE("softmax backward equals autograd, masked entries getting no gradient",
          "[gradients][softmax]") {
  for (const std::string name : {"softmax_causal_lengths", "softmax_plain"}) {
    const Case c = load(name);
    const Tensor3 weights = attn::softmax(Tensor3(c.tensor("input.x") + additive_mask(c)));
    check_output(weights, c);
    const Tensor3 d_scores = attn::softmax_backward(weights, c.tensor("grad_output"));
    check_input_gradient(d_scores, c);
    // A masked score has exactly no gradient.
    const Tensor3 mask = c.tensor("mask");
    for (std::size_t i = 0; i < mask.size(); ++i)
      if (mask.data()[i] == 0.0f) REQUIRE(d_scores.data()[i] == 0.0f);
  }
}

TEST_CASE("scaled dot-product attention backward equals autograd with T != S and padding",
          "[gradients][attention]") {
  const Case c = load("sdpa_t5_s7_padding");
  const Tensor3 mask = additive_mask(c);
  const attn::AttentionSteps s = attn::scaled_dot_product_attention(
      c.tensor("input.query"), c.tensor("input.key"), c.tensor("input.value"), &mask);
  check_output(s.output, c);
  const attn::AttentionGradients g =
      attn::scaled_dot_product_attention_backward(s, c.tensor("grad_output"));
  check_input_gradient(g.queries, c, "query");
  check_input_gradient(g.keys, c, "key");
  check_input_gradient(g.values, c, "value");
}

// forward(layer, x, &mask) and its backward, for the attention layers.
const auto masked_steps_and_back = [](const Case& c) {
  return
      [mask = additive_mask(c)](const auto& layer, const Tensor3& x, const Tensor3& g, auto& grad) {
        const auto steps = attn::forward(layer, x, &mask);
        return std::pair{steps.output, attn::backward(layer, x, steps, g, grad)};
      };
};

TEST_CASE("SelfAttention and AttentionHead backward equal autograd", "[gradients][attention]") {
  attn::Rng rng(2);
  const Case self = load("self_attention_causal");
  check_layer(attn::init_self_attention(rng, self.meta["d"]), self, masked_steps_and_back(self));
  const Case head = load("head_hs4_padding");
  check_layer(attn::init_attention_head(rng, head.meta["d"], head.meta["head_size"]), head,
              masked_steps_and_back(head));
}

TEST_CASE("multi-head backward equals autograd in all four forms, with a causal and padding mask",
          "[gradients][multi-head]") {
  for (const std::string variant : {"narrow", "wide", "book", "fused"}) {
    const Case c = load("multi_head_" + variant);
    attn::Rng rng(4);
    check_layer(attn::init_multi_head(rng, *attn::multi_head_variant(variant), c.meta["d"],
                                      c.meta["heads"]),
                c, masked_steps_and_back(c));
  }
}

TEST_CASE("GELU (erf and tanh) and ReLU backward equal autograd", "[gradients][feed-forward]") {
  for (const std::string name : {"gelu_erf", "gelu_tanh", "relu"}) {
    const Case c = load(name);
    const Tensor3 x = c.tensor("input.x"), g = c.tensor("grad_output");
    const std::string kind = c.meta["kind"];
    const Tensor3 d_x = kind == "relu"
                            ? attn::relu_backward(x, g)
                            : attn::gelu_backward(x, g,
                                                  kind == "gelu" ? attn::GeluApproximation::none
                                                                 : attn::GeluApproximation::tanh);
    check_input_gradient(d_x, c);
  }
}

TEST_CASE("dropout in train mode: with PyTorch's choices, its output and its gradient",
          "[gradients][dropout]") {
  const Case c = load("dropout_train");
  const Tensor3 x = c.tensor("input.x"), torch_output = c.tensor("output");
  const float p = c.meta["p"];
  // PyTorch's choices, read off its output: a kept element is x / (1 - p), a dropped one 0.
  Tensor3 scale(x.shape());
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool kept = torch_output.data()[i] != 0.0f;
    scale.data()[i] = kept ? 1.0f / (1.0f - p) : 0.0f;
    dropped += kept ? 0 : 1;
  }
  REQUIRE(dropped > 0);
  REQUIRE(dropped < x.size());
  const attn::DropoutSteps steps = attn::dropout(x, scale);
  check_output(steps.output, c);
  check_input_gradient(attn::dropout_backward(steps, c.tensor("grad_output")), c);
}

TEST_CASE("dropout draws a seeded mask: the same seed the same mask, about p of it dropped",
          "[gradients][dropout]") {
  attn::Rng data(3);
  const Tensor3 x = attn::randn(data, 4, 50, 100);
  attn::Rng a(11), b(11), other(12);
  const attn::DropoutSteps first = attn::dropout(a, x, 0.25f);
  const attn::DropoutSteps again = attn::dropout(b, x, 0.25f);
  const attn::DropoutSteps different = attn::dropout(other, x, 0.25f);
  CHECK((first.scale == again.scale));
  CHECK((first.scale != different.scale));
  std::size_t dropped = 0;
  for (float s : first.scale) {
    CHECK((s == 0.0f || s == 1.0f / 0.75f));
    dropped += s == 0.0f ? 1 : 0;
  }
  // 20,000 draws: the fraction dropped is 0.25 +- 5 standard deviations (0.0153).
  const double fraction = static_cast<double>(dropped) / static_cast<double>(x.size());
  CHECK(std::abs(fraction - 0.25) < 0.0153);
  attn::Rng none(1);
  CHECK((attn::dropout(none, x, 0.0f).output == x));
  attn::Rng bad(1);
  CHECK_THROWS_WITH(attn::dropout(bad, x, 1.0f), Catch::Contains("[0, 1)"));
}

TEST_CASE("Embedding backward equals autograd: repeated ids add up, positions too",
          "[gradients][embedding]") {
  for (const std::string name : {"embedding_repeated_ids", "position_embedding"}) {
    const Case c = load(name);
    attn::Rng rng(5);
    attn::Embedding table = attn::init_embedding(rng, c.meta["rows"], c.meta["d"]);
    load_parameters(table, c);
    const attn::Ids ids = ids_of(c.at("ids"));
    check_output(attn::forward(table, ids), c);
    attn::Embedding grad = attn::zeros_like(table);
    attn::backward(table, ids, c.tensor("grad_output"), grad);
    check_parameter_gradients(grad, c);
  }
}

TEST_CASE("FeedForward backward equals autograd in the book, relu and gelu-last forms",
          "[gradients][feed-forward]") {
  for (const std::string name : {"feed_forward_book", "feed_forward_book_tanh", "feed_forward_relu",
                                 "feed_forward_gelu_last"}) {
    const Case c = load(name);
    attn::Rng rng(6);
    check_layer(attn::init_feed_forward(
                    rng, *attn::feed_forward_variant(c.meta["variant"].get<std::string>()),
                    c.meta["d"], c.meta["d_ff"],
                    c.meta["gelu"] == "tanh" ? attn::GeluApproximation::tanh
                                             : attn::GeluApproximation::none),
                c, steps_and_back);
  }
}

namespace {
// PyTorch's dropout choices in train mode, read off its output: a kept element is its input
// scaled by 1 / (1 - p), a dropped one is 0 (the inputs here have no exact zeros).
Tensor3 torch_dropout_scale(const Case& c) {
  const Tensor3 output = c.tensor("output");
  const float p = c.meta["dropout"];
  Tensor3 scale(output.shape());
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < output.size(); ++i) {
    scale.data()[i] = output.data()[i] != 0.0f ? 1.0f / (1.0f - p) : 0.0f;
    dropped += output.data()[i] == 0.0f;
  }
  REQUIRE(dropped > 0);
  return scale;
}
}  // namespace

TEST_CASE("FeedForward in train mode: with PyTorch's dropout choices, its output and gradients",
          "[gradients][feed-forward][dropout]") {
  const Case c = load("feed_forward_book_dropout");
  attn::Rng rng(6);
  attn::FeedForward layer =
      attn::init_feed_forward(rng, attn::FeedForwardVariant::book, c.meta["d"], c.meta["d_ff"]);
  load_parameters(layer, c);
  const Tensor3 x = c.tensor("input.x");
  const attn::FeedForwardSteps s = attn::forward(layer, x, torch_dropout_scale(c));
  check_output(s.output, c);
  attn::FeedForward grad = attn::zeros_like(layer);
  check_input_gradient(attn::backward(layer, x, s, c.tensor("grad_output"), grad), c);
  check_parameter_gradients(grad, c);
}

namespace {
attn::EncoderConfig config_of(const nlohmann::json& c) {
  attn::EncoderConfig config;
  config.hidden_size = c["hidden_size"];
  config.num_attention_heads = c["num_attention_heads"];
  config.intermediate_size = c["intermediate_size"];
  config.num_hidden_layers = c["num_hidden_layers"];
  config.vocab_size = c["vocab_size"];
  config.max_position_embeddings = c["max_position_embeddings"];
  return config;
}

attn::NormPlacement placement_of(const nlohmann::json& meta) {
  return meta["norm"] == "post" ? attn::NormPlacement::post : attn::NormPlacement::pre;
}
}  // namespace

TEST_CASE("the encoder layer's backward equals autograd, pre-LN and post-LN",
          "[gradients][encoder]") {
  for (const std::string name : {"encoder_layer_pre", "encoder_layer_post"}) {
    const Case c = load(name);
    attn::Rng rng(7);
    check_layer(attn::init_encoder_layer(rng, config_of(c.meta["config"]), placement_of(c.meta)), c,
                [](const auto& layer, const Tensor3& x, const Tensor3& g, auto& grad) {
                  const attn::EncoderLayerTape tape = attn::forward_tape(layer, x);
                  // The tape's forward is the lesson's forward.
                  CHECK(attn::max_difference(tape.output, attn::forward(layer, x).output) == 0.0f);
                  return std::pair{tape.output, attn::backward(layer, tape, g, grad)};
                });
  }
}

TEST_CASE("Embeddings and the whole encoder from ids: backward equals autograd",
          "[gradients][encoder]") {
  {
    const Case c = load("embeddings");
    attn::Rng rng(8);
    attn::Embeddings embeddings = attn::init_embeddings(rng, config_of(c.meta["config"]));
    load_parameters(embeddings, c);
    const attn::Ids ids = ids_of(c.at("ids"));
    const attn::EmbeddingsSteps s = attn::forward(embeddings, ids);
    check_output(s.output, c);
    attn::Embeddings grad = attn::zeros_like(embeddings);
    attn::backward(embeddings, ids, s, c.tensor("grad_output"), grad);
    check_parameter_gradients(grad, c);
  }
  {
    // Train mode: the embeddings' dropout with PyTorch's choices.
    const Case c = load("embeddings_dropout");
    attn::Rng rng(8);
    attn::Embeddings embeddings = attn::init_embeddings(rng, config_of(c.meta["config"]));
    load_parameters(embeddings, c);
    const attn::Ids ids = ids_of(c.at("ids"));
    attn::EmbeddingsSteps s = attn::forward(embeddings, ids);
    s.dropout_scale = torch_dropout_scale(c);
    s.output *= s.dropout_scale;
    check_output(s.output, c);
    attn::Embeddings grad = attn::zeros_like(embeddings);
    attn::backward(embeddings, ids, s, c.tensor("grad_output"), grad);
    check_parameter_gradients(grad, c);
  }
  for (const std::string name : {"encoder_pre", "encoder_post"}) {
    const Case c = load(name);
    attn::Rng rng(9);
    attn::Encoder encoder =
        attn::init_encoder(rng, config_of(c.meta["config"]), placement_of(c.meta), true);
    load_parameters(encoder, c);
    const attn::EncoderTape tape = attn::forward_tape(encoder, ids_of(c.at("ids")));
    check_output(tape.output(), c);
    attn::Encoder grad = attn::zeros_like(encoder);
    CHECK(attn::backward(encoder, tape, c.tensor("grad_output"), grad).size() == 0);
    check_parameter_gradients(grad, c);
  }
}

TEST_CASE("a per-token classifier's cross-entropy and its backward equal autograd",
          "[gradients][loss]") {
  for (const std::string name : {"cross_entropy_head", "cross_entropy_ignored"}) {
    const Case c = load(name);
    INFO(name);
    attn::Rng rng(10);
    attn::Linear head = attn::init_linear(rng, c.meta["d"], c.meta["classes"], true);
    attn::visit_parameters(
        head, "linear.", [&](const std::string& key, float* data, const attn::Shape& shape) {
          const std::vector<float> values = attn::to_float_vector(c.at("param." + key));
          REQUIRE(values.size() == attn::element_count(shape));
          std::copy(values.begin(), values.end(), data);
        });
    const Tensor3 x = c.tensor("input.x");
    const attn::Ids labels = ids_of(c.at("labels"));
    const Tensor3 logits = attn::forward(head, x);
    const attn::CrossEntropySteps s = attn::cross_entropy(logits, labels);
    CHECK(s.loss == Approx(attn::to_float_vector(c.at("output")).front()).epsilon(1e-6));
    attn::Linear grad = attn::zeros_like(head);
    check_input_gradient(attn::backward(head, x, attn::cross_entropy_backward(s, labels), grad), c);
    attn::visit_parameters(
        grad, "linear.", [&](const std::string& key, float* data, const attn::Shape& shape) {
          INFO("grad." << key);
          CHECK_ALLCLOSE(attn::make_float32(
                             shape, std::vector<float>(data, data + attn::element_count(shape))),
                         c.at("grad." + key), kGradient);
        });
  }
}

TEST_CASE("a BERT-base encoder layer's backward equals autograd", "[gradients][encoder][bert]") {
  const Case c = load("encoder_layer_bert_base");
  const attn::EncoderConfig config = config_of(c.meta["config"]);
  attn::Rng rng(11);
  attn::EncoderLayer layer = attn::init_encoder_layer(rng, config, attn::NormPlacement::pre);
  const attn::StateDict weights =
      attn::testing::formula_weights(attn::describe_encoder_layer(config));
  attn::visit_parameters(layer, [&](const std::string& key, float* data, const attn::Shape&) {
    const std::vector<float> values = attn::to_float_vector(weights.at(key));
    std::copy(values.begin(), values.end(), data);
  });
  const Tensor3 x = c.tensor("input.x");
  const attn::EncoderLayerTape tape = attn::forward_tape(layer, x);
  {
    INFO("output");
    CHECK_ALLCLOSE(attn::to_array(tape.output), c.at("output"), (Tolerance{1e-4, 1e-4}));
  }
  attn::EncoderLayer grad = attn::zeros_like(layer);
  // Each dX sums 768-wide products through every sublayer.
  constexpr Tolerance kBert{1e-4, 1e-3};
  check_input_gradient(attn::backward(layer, tape, c.tensor("grad_output"), grad), c, "x", kBert);
  const std::size_t every = c.meta["sample_every"];
  attn::visit_parameters(grad, [&](const std::string& key, float* data, const attn::Shape& shape) {
    INFO("grad." << key << ", every " << every << "th element");
    std::vector<float> sample;
    for (std::size_t i = 0; i < attn::element_count(shape); i += every)
      sample.push_back(data[i]);
    CHECK_ALLCLOSE(attn::make_float32({sample.size()}, sample), c.at("grad_sample." + key), kBert);
  });
}
