// Grades lesson 09's exercise against PyTorch's Embeddings and TransformerEncoderLayer
// (data/generator/exercise_encoder.py), loaded into attn's structs by state_dict key, and against
// what any encoder layer must satisfy. Tags: [encoder] the lesson, [points=N] the marks,
// [.hidden] shown after the due date. The student's functions are called only through
// STUDENT(...), and expected values are used only in checks (see course/harness/grading.hpp).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "encoder_exercise.hpp"
#include "grading.hpp"

using attn::EmbeddingsSteps;
using attn::EncoderLayer;
using attn::EncoderLayerSteps;
using attn::NormPlacement;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-5, 1e-4};

// Copies encoder/<weights>.<key>.npy into every parameter the visitor offers.
template <class Layer>
void load_weights(Layer& layer, const std::string& weights) {
  attn::visit_parameters(layer, [&](const std::string& key, float* data, const attn::Shape& shape) {
    const std::string name = "encoder/" + weights + "." + key;
    const attn::Array array =
        shape.size() == 1 ? attn::to_array(input<1>(name)) : attn::to_array(input<2>(name));
    INFO(name << " has shape " << attn::shape_string(array.shape) << ", the struct expects "
              << attn::shape_string(shape));
    REQUIRE(array.shape == shape);
    std::memcpy(data, array.bytes.data(), array.bytes.size());
  });
}

// The layer PyTorch drew for `weights` (D, H, F), with the norms where `placement` puts them.
EncoderLayer load_layer(const std::string& weights, NormPlacement placement, std::size_t d_model,
                        std::size_t heads, std::size_t d_ff) {
  attn::EncoderConfig config;
  config.hidden_size = d_model;
  config.num_attention_heads = heads;
  config.intermediate_size = d_ff;
  config.hidden_act = "gelu";
  attn::Rng rng(0);
  EncoderLayer layer = attn::init_encoder_layer(rng, config, placement);
  load_weights(layer, weights);
  return layer;
}

attn::Embeddings load_embeddings() {
  attn::EncoderConfig config;
  config.vocab_size = 11;
  config.max_position_embeddings = 9;
  config.hidden_size = 10;
  config.num_attention_heads = 1;
  attn::Rng rng(0);
  attn::Embeddings embeddings = attn::init_embeddings(rng, config);  // layer_norm eps 1e-12
  load_weights(embeddings, "embeddings_v11_p9_d10");
  return embeddings;
}

attn::Ids ids_of(const attn::Tensor2& values) {
  attn::Ids ids({values.shape(0), values.shape(1)});
  for (std::size_t i = 0; i < values.size(); ++i)
    ids.data()[i] = static_cast<std::int64_t>(values.data()[i]);
  return ids;
}

void check_embeddings(const std::string& name) {
  const std::string prefix = "encoder/embeddings_" + name;
  const attn::Ids ids = ids_of(input<2>(prefix + "_ids"));
  const attn::Embeddings embeddings = load_embeddings();
  const EmbeddingsSteps steps = STUDENT(attn::exercise::forward(embeddings, ids));
  const std::string call =
      "forward(embeddings, ids " + attn::shape_string(attn::to_array(ids).shape) + ")";
  check_close(call + ".token", steps.token, expected<3>(prefix + "_token"), kTolerance);
  check_close(call + ".position", steps.position, expected<3>(prefix + "_position"), kTolerance);
  check_close(call + ".sum", steps.sum, expected<3>(prefix + "_sum"), kTolerance);
  check_close(call + ".output", steps.output, expected<3>(prefix + "_output"), kTolerance);
}

// One case: weights e.g. "layer_d12_h3_f48", x e.g. "b1_t5"; every step against PyTorch's.
void check_layer(const std::string& weights, const std::string& sample, NormPlacement placement,
                 std::size_t d_model, std::size_t heads, std::size_t d_ff) {
  const std::string norm = placement == NormPlacement::pre ? "pre" : "post";
  const std::string prefix = "encoder/" + weights + "_" + sample + "_";
  const Tensor3 x = input<3>(prefix + "x");
  const EncoderLayer layer = load_layer(weights, placement, d_model, heads, d_ff);
  const EncoderLayerSteps steps = STUDENT(attn::exercise::forward(layer, x));
  const std::string call =
      "forward(" + norm + "-LN layer " + weights + ", x " + attn::shape_string_of(x) + ")";
  check_close(call + ".input", steps.input, x, kTolerance);
  const std::vector<std::pair<std::string, const Tensor3*>> fields = {
      {"norm_1", &steps.norm_1},
      {"attention", &steps.attention},
      {"residual_1", &steps.residual_1},
      {"norm_2", &steps.norm_2},
      {"feed_forward", &steps.feed_forward},
      {"output", &steps.output}};
  for (const auto& [field, got] : fields) {
    check_close(call + "." + field, *got, expected<3>(prefix + norm + "_" + field), kTolerance);
  }
}

}  // namespace

TEST_CASE("embeddings match PyTorch on ids 2x5 step by step", "[encoder][points=2]") {
  check_embeddings("b2_t5");
}

TEST_CASE("embeddings match PyTorch on every position 1x9 and on one token 3x1",
          "[encoder][points=1]") {
  check_embeddings("b1_t9");
  check_embeddings("b3_t1");
}

TEST_CASE("embeddings refuse more tokens than there are positions", "[encoder][points=1]") {
  const attn::Ids ids({1, 10}, 0);  // T = 10 for P = 9
  const attn::Embeddings embeddings = load_embeddings();
  // T = P = 9 fits: every position, as PyTorch's
  const attn::Ids every_position = ids_of(input<2>("encoder/embeddings_b1_t9_ids"));
  const EmbeddingsSteps steps = STUDENT(attn::exercise::forward(embeddings, every_position));
  check_close("forward(embeddings, ids (1,9)).output", steps.output,
              expected<3>("encoder/embeddings_b1_t9_output"), kTolerance);
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(embeddings, ids)), std::invalid_argument);
}

TEST_CASE("pre-LN forward matches the PyTorch book layer step by step on 1x5x12 with H 3 and F 48",
          "[encoder][points=3]") {
  check_layer("layer_d12_h3_f48", "b1_t5", NormPlacement::pre, 12, 3, 48);
}

TEST_CASE("pre-LN forward matches PyTorch on 2x7x10 with H 2 and F 24", "[encoder][points=2]") {
  check_layer("layer_d10_h2_f24", "b2_t7", NormPlacement::pre, 10, 2, 24);
}

TEST_CASE("post-LN forward matches PyTorch step by step on 1x5x12 with the same weights",
          "[encoder][points=3]") {
  check_layer("layer_d12_h3_f48", "b1_t5", NormPlacement::post, 12, 3, 48);
}

TEST_CASE("post-LN forward matches PyTorch on 2x7x10 with H 2 and F 24", "[encoder][points=2]") {
  check_layer("layer_d10_h2_f24", "b2_t7", NormPlacement::post, 10, 2, 24);
}

TEST_CASE(
    "post-LN output rows have mean 0 and variance 1 before the scale and shift of layer_norm_2",
    "[encoder][points=1]") {
  const EncoderLayer layer = load_layer("layer_d10_h2_f24", NormPlacement::post, 10, 2, 24);
  const Tensor3 x = input<3>("encoder/layer_d10_h2_f24_b2_t7_x");
  const EncoderLayerSteps steps = STUDENT(attn::exercise::forward(layer, x));
  const Tensor3& y = steps.output;
  REQUIRE(y.shape(0) == 2);
  REQUIRE(y.shape(1) == 7);
  REQUIRE(y.shape(2) == 10);
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t t = 0; t < 7; ++t) {
      double sum = 0.0, squares = 0.0;
      for (std::size_t d = 0; d < 10; ++d) {
        const double z = (y(b, t, d) - layer.layer_norm_2.bias(d)) / layer.layer_norm_2.weight(d);
        sum += z;
        squares += z * z;
      }
      const double mean = sum / 10.0, variance = squares / 10.0 - mean * mean;
      INFO("row (" << b << ", " << t << ", :) unscaled: mean " << mean << ", variance " << variance
                   << ", expected 0 and 1");
      CHECK(std::fabs(mean) < 1e-4);
      CHECK(std::fabs(variance - 1.0) < 1e-3);
    }
  }
}

TEST_CASE("a layer is permutation-equivariant over tokens in both placements",
          "[encoder][points=2]") {
  // No positions inside a layer and no mask: shuffling the tokens shuffles the outputs alike.
  const std::vector<std::size_t> order = {3, 0, 6, 1, 5, 2, 4};
  const Tensor3 x = input<3>("encoder/layer_d10_h2_f24_b2_t7_x");
  Tensor3 shuffled(x.shape());
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 7; ++t)
      for (std::size_t d = 0; d < 10; ++d)
        shuffled(b, t, d) = x(b, order[t], d);
  for (const NormPlacement placement : {NormPlacement::pre, NormPlacement::post}) {
    const std::string norm = placement == NormPlacement::pre ? "pre" : "post";
    const EncoderLayer layer = load_layer("layer_d10_h2_f24", placement, 10, 2, 24);
    const EncoderLayerSteps steps = STUDENT(attn::exercise::forward(layer, shuffled));
    // PyTorch's output (2,7,10) with its rows in that order
    check_close(
        "forward(" + norm + "-LN layer, x with tokens in order 3 0 6 1 5 2 4).output", steps.output,
        expected<3>("encoder/layer_d10_h2_f24_b2_t7_" + norm + "_shuffled_output"), kTolerance);
  }
}

// BEGIN HIDDEN TESTS
TEST_CASE("both placements match PyTorch on one token per batch 3x1x6 and on 1x6x6",
          "[encoder][points=2][.hidden]") {
  for (const NormPlacement placement : {NormPlacement::pre, NormPlacement::post}) {
    check_layer("layer_d6_h2_f8", "b3_t1", placement, 6, 2, 8);
    check_layer("layer_d6_h2_f8", "b1_t6", placement, 6, 2, 8);
  }
}

TEST_CASE("embeddings refuse an id outside the vocabulary", "[encoder][points=1][.hidden]") {
  attn::Ids ids({2, 3}, 1);
  const attn::Embeddings embeddings = load_embeddings();
  // ids 0 and 10, the first and last of the vocabulary, fit
  const attn::Ids first_and_last = ids_of(input<2>("encoder/embeddings_b2_t5_ids"));
  const EmbeddingsSteps steps = STUDENT(attn::exercise::forward(embeddings, first_and_last));
  check_close("forward(embeddings, ids (2,5) with 0 and 10).output", steps.output,
              expected<3>("encoder/embeddings_b2_t5_output"), kTolerance);
  ids(1, 2) = 11;  // V = 11: ids run 0..10
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(embeddings, ids)), std::invalid_argument);
  ids(1, 2) = -1;
  CHECK_THROWS_AS(STUDENT(attn::exercise::forward(embeddings, ids)), std::invalid_argument);
}
// END HIDDEN TESTS
