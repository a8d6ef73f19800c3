// Lesson 10's "why" experiments: the placement stacks' gradients against PyTorch's autograd, and
// the lesson's checks (pre-LN's last-layer gradient shrinking with depth, the residual 2x2, the
// scaling table) holding at several seeds.
#include <cmath>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "10-backward/backward_lesson.hpp"
#include "allclose.hpp"
#include "fixture_case.hpp"

namespace {

using attn::testing::FixtureCase;
using attn::testing::Tolerance;

// Regenerate with /usr/bin/python3 data/generate_fixtures.py (data/generator/gradients.py).
constexpr Tolerance kGradient{2e-5, 1e-4};

attn::Ids ids_of(const attn::Array& a) {
  REQUIRE(a.dtype == attn::Dtype::int64);
  REQUIRE(a.rank() == 2);
  attn::Ids ids({a.shape[0], a.shape[1]});
  std::memcpy(ids.data(), a.bytes.data(), ids.size() * sizeof(std::int64_t));
  return ids;
}

// The case's stack, with its weights; its final LayerNorm only for pre-LN.
attn::lessons::DepthStack stack_of(const FixtureCase& c, attn::NormPlacement placement) {
  const auto& j = c.meta["config"];
  attn::EncoderConfig config;
  config.hidden_size = j["hidden_size"];
  config.num_attention_heads = j["num_attention_heads"];
  config.intermediate_size = j["intermediate_size"];
  config.num_hidden_layers = j["num_hidden_layers"];
  attn::Rng rng(12);
  attn::lessons::DepthStack stack{
      attn::init_encoder(rng, config, placement, false), attn::init_layer_norm(config.hidden_size),
      attn::init_linear(rng, config.hidden_size, c.meta["classes"], true)};
  attn::testing::copy_case_parameters(stack.encoder, c);
  attn::visit_parameters(
      stack.head, "head.", [&](const std::string& key, float* data, const attn::Shape& shape) {
        REQUIRE(c.at("param." + key).shape == shape);
        const std::vector<float> values = attn::to_float_vector(c.at("param." + key));
        std::copy(values.begin(), values.end(), data);
      });
  if (placement == attn::NormPlacement::pre)
    attn::visit_parameters(stack.final_norm, "final_norm.",
                           [&](const std::string& key, float* data, const attn::Shape&) {
                             const std::vector<float> values =
                                 attn::to_float_vector(c.at("param." + key));
                             std::copy(values.begin(), values.end(), data);
                           });
  return stack;
}

}  // namespace

TEST_CASE("the placement stacks' loss and gradients equal autograd, with the final LayerNorm",
          "[backward][gradients]") {
  for (const auto& [name, placement] : {std::pair{"depth_pre", attn::NormPlacement::pre},
                                        std::pair{"depth_post", attn::NormPlacement::post}}) {
    INFO(name);
    const FixtureCase c = attn::testing::load_case("gradients", name);
    attn::lessons::DepthStack stack = stack_of(c, placement);
    attn::lessons::DepthGradients got =
        attn::lessons::depth_gradients(stack, c.tensor("input.x"), ids_of(c.at("labels")));
    CHECK(got.loss == Approx(attn::to_float_vector(c.at("output")).front()).epsilon(1e-5));
    attn::testing::check_case_gradients(got.grad.encoder, c, kGradient);
    attn::visit_parameters(
        got.grad.head, "head.", [&](const std::string& key, float* data, const attn::Shape& shape) {
          INFO("grad." << key);
          CHECK_ALLCLOSE(attn::make_float32(
                             shape, std::vector<float>(data, data + attn::element_count(shape))),
                         c.at("grad." + key), kGradient);
        });
    if (placement == attn::NormPlacement::pre)
      attn::visit_parameters(
          got.grad.final_norm, "final_norm.",
          [&](const std::string& key, float* data, const attn::Shape& shape) {
            INFO("grad." << key);
            CHECK_ALLCLOSE(attn::make_float32(
                               shape, std::vector<float>(data, data + attn::element_count(shape))),
                           c.at("grad." + key), kGradient);
          });
    // The printed ‖dW2‖ is the Frobenius norm of the same gradient.
    REQUIRE(got.feed_forward_norms.size() == stack.encoder.layers.size());
    for (std::size_t i = 0; i < got.feed_forward_norms.size(); ++i) {
      const std::vector<float> expected = attn::to_float_vector(
          c.at("grad.layers." + std::to_string(i) + ".feed_forward.linear_2.weight"));
      double norm = 0.0;
      for (float v : expected)
        norm += static_cast<double>(v) * v;
      CHECK(got.feed_forward_norms[i] == Approx(std::sqrt(norm)).epsilon(1e-4));
    }
  }
}

TEST_CASE("lesson 10's gradient experiments show their effects at every seed tried",
          "[backward][lesson]") {
  for (std::uint64_t seed : {0, 1, 2, 3}) {
    attn::lessons::LessonOptions options;
    options.seed = seed;
    const attn::lessons::LessonRun run = attn::lessons::run_backward(options);
    std::size_t checks = 0;
    for (const auto& item : run.items()) {
      if (const auto* check = std::get_if<attn::lessons::Check>(&item)) {
        INFO("seed " << seed << ": " << check->name << ": " << check->detail);
        CHECK(check->passed);
        ++checks;
      }
    }
    // finite differences, key bias, three scaling, one placement, three residual
    CHECK(checks == 9);
  }
}
