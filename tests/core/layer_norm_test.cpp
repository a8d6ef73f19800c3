// Layer normalisation: nn.LayerNorm and seed 001's LayerNormalization against PyTorch-made
// fixtures (bit for bit where torch exposes the numbers), the invariants lesson 07 teaches,
// parameter counts, state_dict keys, torchinfo's LayerNorm row and the errors.
#include "layer_norm.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "allclose.hpp"
#include "base/random.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "kernels/torch_order.hpp"
#include "state_dict.hpp"
#include "summary.hpp"

using attn::Tensor3;
using attn::testing::fixture_path;

namespace {
const nlohmann::json& fixtures() {
  static const nlohmann::json doc =
      nlohmann::json::parse(attn::testing::read_text(fixture_path("layer-norm/cases.json")));
  return doc;
}

attn::Array fixture(const nlohmann::json& c, const char* key) {
  return attn::read_npy(fixture_path("layer-norm/" + c[key].get<std::string>()));
}

// Elements whose bits differ, NaN equal to NaN.
std::size_t differing(const attn::Array& got, const attn::Array& expected) {
  REQUIRE(got.shape == expected.shape);
  std::size_t n = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float a = got.float32_at(i), b = expected.float32_at(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::memcmp(&a, &b, sizeof a) != 0) ++n;
  }
  return n;
}

template <class Layer>
std::vector<attn::StateDictEntry> visited(Layer& layer) {
  std::vector<attn::StateDictEntry> out;
  visit_parameters(layer, [&](const std::string& key, float*, const attn::Shape& shape) {
    out.push_back({key, shape});
  });
  return out;
}

// Per token: largest |mean| and |biased variance - 1| of a (B,T,D) tensor, in double.
std::pair<double, double> worst_moments(const Tensor3& t) {
  const std::size_t width = t.shape(2);
  double worst_mean = 0.0, worst_variance = 0.0;
  for (std::size_t r = 0; r < t.size() / width; ++r) {
    double mean = 0.0, squares = 0.0;
    for (std::size_t j = 0; j < width; ++j)
      mean += t.data()[r * width + j];
    mean /= static_cast<double>(width);
    for (std::size_t j = 0; j < width; ++j)
      squares += (t.data()[r * width + j] - mean) * (t.data()[r * width + j] - mean);
    worst_mean = std::max(worst_mean, std::fabs(mean));
    worst_variance =
        std::max(worst_variance, std::fabs(squares / static_cast<double>(width) - 1.0));
  }
  return {worst_mean, worst_variance};
}
}  // namespace

TEST_CASE("nn.LayerNorm equals PyTorch bit for bit: mean, rstd and output",
          "[layer-norm][fixtures]") {
  std::size_t cases = 0;
  for (const auto& c : fixtures()["cases"]) {
    if (c["variant"] != "torch") continue;
    ++cases;
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      const Tensor3 x = attn::to_tensor<3>(fixture(c, "input"), "input");
      const std::size_t width = x.shape(2);
      attn::LayerNorm norm = attn::init_layer_norm(width, c["eps"].get<float>());
      attn::load_state_dict(
          norm, attn::describe_layer_norm(width),
          attn::read_weights(fixture_path("layer-norm/" + c["weights"].get<std::string>())),
          "fixture");
      const attn::LayerNormSteps s = attn::forward(norm, x);
      CHECK(differing(attn::to_array(s.mean), fixture(c, "mean")) == 0);
      // torch.native_layer_norm returns rstd = 1 / sqrt(variance + eps)
      Tensor3 rstd = s.variance;
      for (float& v : rstd)
        v = 1.0f / std::sqrt(v + norm.eps);
      CHECK(differing(attn::to_array(rstd), fixture(c, "rstd")) == 0);
      CHECK(differing(attn::to_array(s.output), fixture(c, "output")) == 0);
      CHECK_ALLCLOSE(attn::to_array(s.output), fixture(c, "output"));
      // The lesson's comparison step: seed 001's class at initialisation.
      const auto seed001 = attn::forward(attn::init_layer_normalization(), x);
      CHECK(differing(attn::to_array(seed001.output), fixture(c, "seed001_normalised")) == 0);
      CHECK_ALLCLOSE(attn::to_array(seed001.normalised), fixture(c, "seed001_normalised"));
      CHECK(attn::count_parameters(attn::describe_layer_norm(width)) ==
            c["parameters"].get<std::int64_t>());
    }
  }
  CHECK(cases >= 6);
}

TEST_CASE("seed 001's LayerNormalization equals PyTorch bit for bit: mean, std and output",
          "[layer-norm][fixtures]") {
  std::size_t cases = 0;
  for (const auto& c : fixtures()["cases"]) {
    if (c["variant"] != "seed001") continue;
    ++cases;
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      const Tensor3 x = attn::to_tensor<3>(fixture(c, "input"), "input");
      attn::LayerNormalization norm = attn::init_layer_normalization(c["eps"].get<float>());
      attn::load_state_dict(
          norm, attn::describe_layer_normalization(),
          attn::read_weights(fixture_path("layer-norm/" + c["weights"].get<std::string>())),
          "fixture");
      const attn::LayerNormalizationSteps s = attn::forward(norm, x);
      CHECK(differing(attn::to_array(s.mean), fixture(c, "mean")) == 0);
      CHECK(differing(attn::to_array(s.std), fixture(c, "std")) == 0);
      CHECK(differing(attn::to_array(s.output), fixture(c, "output")) == 0);
      CHECK_ALLCLOSE(attn::to_array(s.output), fixture(c, "output"));
      const auto torch_steps = attn::forward(attn::init_layer_norm(x.shape(2)), x);
      CHECK(differing(attn::to_array(torch_steps.normalised), fixture(c, "torch_normalised")) == 0);
      CHECK(attn::count_parameters(attn::describe_layer_normalization()) ==
            c["parameters"].get<std::int64_t>());
    }
  }
  CHECK(cases >= 3);
}

TEST_CASE("pre-LN and post-LN stacks equal PyTorch's", "[layer-norm][fixtures]") {
  const auto& p = fixtures()["placement"];
  const Tensor3 x = attn::to_tensor<3>(
      attn::read_npy(fixture_path("layer-norm/" + p["input"].get<std::string>())), "x");
  const attn::StateDict blocks =
      attn::read_weights(fixture_path("layer-norm/" + p["blocks"].get<std::string>()));
  const attn::LayerNorm norm = attn::init_layer_norm(x.shape(2));
  Tensor3 pre = x, post = x;
  for (int b = 0; b < p["count"].get<int>(); ++b) {
    attn::Linear sublayer;
    sublayer.weight = attn::to_tensor<2>(blocks.at(fmt::format("{}.weight", b)), "weight");
    sublayer.bias = attn::to_tensor<1>(blocks.at(fmt::format("{}.bias", b)), "bias");
    sublayer.has_bias = true;
    pre = attn::residual_block(attn::NormPlacement::pre, norm, sublayer, pre);
    post = attn::residual_block(attn::NormPlacement::post, norm, sublayer, post);
  }
  CHECK_ALLCLOSE(attn::to_array(pre),
                 attn::read_npy(fixture_path("layer-norm/" + p["pre_output"].get<std::string>())));
  CHECK_ALLCLOSE(attn::to_array(post),
                 attn::read_npy(fixture_path("layer-norm/" + p["post_output"].get<std::string>())));
}

TEST_CASE("torch's one-pass moments agree with two passes in double at every width",
          "[layer-norm]") {
  attn::Rng rng(7);
  // Widths around the 8 lanes, the 16-vector chunks and the cascade levels.
  for (std::size_t n : {1,   2,   7,   8,   9,   15,  16,  17,  31,   32,      33,
                        127, 128, 129, 130, 255, 256, 257, 768, 3072, 4096 + 3}) {
    DYNAMIC_SECTION("n = " << n) {
      const Tensor3 x = attn::randn(rng, 1, 3, n, 2.0f);
      for (std::size_t r = 0; r < 3; ++r) {
        const float* row = x.data() + r * n;
        double mean = 0.0, squares = 0.0;
        for (std::size_t j = 0; j < n; ++j)
          mean += row[j];
        mean /= static_cast<double>(n);
        for (std::size_t j = 0; j < n; ++j)
          squares += (row[j] - mean) * (row[j] - mean);
        const attn::RowMoments m = attn::torch_row_moments(row, n);
        CHECK(std::fabs(m.mean - mean) <= 1e-5);
        CHECK(std::fabs(m.variance - squares / static_cast<double>(n)) <=
              1e-5 * (1.0 + squares / n));
        double sum = 0.0;
        for (std::size_t j = 0; j < n; ++j)
          sum += row[j];
        CHECK(std::fabs(attn::torch_cascade_sum(row, n) - sum) <=
              1e-6 * static_cast<double>(n) * 4.0);
      }
    }
  }
}

TEST_CASE("layer norm invariants on odd sizes (B=2, T=5, D=12)", "[layer-norm][invariants]") {
  attn::Rng rng(3);
  const Tensor3 x = attn::randn(rng, 2, 5, 12);
  attn::LayerNorm norm = attn::init_layer_norm(12);
  const attn::LayerNormSteps s = attn::forward(norm, x);
  const auto [worst_mean, worst_variance] = worst_moments(s.normalised);
  CHECK(worst_mean <= 1e-6);
  CHECK(worst_variance <= 1e-4);  // v / (v + eps) is 1 up to eps
  // weight 1 and bias 0: the output is the normalised tensor.
  CHECK(differing(attn::to_array(s.output), attn::to_array(s.normalised)) == 0);
  CHECK_ALLCLOSE(attn::to_array(s.output), attn::to_array(attn::layer_norm_reference(norm, x)));

  // Shifting or scaling a token changes nothing (up to eps and rounding).
  const Tensor3 moved = x * 3.0f + 5.0f;
  CHECK_ALLCLOSE(attn::to_array(attn::forward(norm, moved).output), attn::to_array(s.output),
                 attn::testing::Tolerance{1e-4, 1e-4});

  // Tokens are independent: each batch entry alone gives the same rows.
  const Tensor3 first = xt::view(x, xt::range(0, 1), xt::all(), xt::all());
  const Tensor3 alone = attn::forward(norm, first).output;
  const Tensor3 together = xt::view(s.output, xt::range(0, 1), xt::all(), xt::all());
  CHECK(differing(attn::to_array(alone), attn::to_array(together)) == 0);

  // A learned weight and bias scale and shift each feature: the fast path still equals the formula.
  for (std::size_t j = 0; j < 12; ++j) {
    norm.weight(j) = 0.5f + 0.1f * static_cast<float>(j);
    norm.bias(j) = -0.3f + 0.05f * static_cast<float>(j);
  }
  CHECK_ALLCLOSE(attn::to_array(attn::forward(norm, x).output),
                 attn::to_array(attn::layer_norm_reference(norm, x)));

  // A constant token normalises to 0 (eps inside the root keeps the division finite) and outputs
  // the bias. (4 is a power of two, so x * rstd is exact and the fused x * rstd - mean * rstd is
  // 0.)
  Tensor3 constant = xt::ones<float>({1, 1, 12}) * 4.0f;
  const Tensor3 out = attn::forward(norm, constant).output;
  for (std::size_t j = 0; j < 12; ++j)
    CHECK(out(0, 0, j) == norm.bias(j));
}

TEST_CASE("seed 001 differs from nn.LayerNorm by sqrt((D-1)/D), most at small D",
          "[layer-norm][seed001]") {
  attn::Rng rng(11);
  double previous = std::numeric_limits<double>::infinity();
  for (std::size_t width : {2, 6, 12, 64, 768}) {
    const Tensor3 x = attn::randn(rng, 1, 64, width);
    const Tensor3 torch_normalised = attn::forward(attn::init_layer_norm(width), x).normalised;
    const Tensor3 seed_normalised = attn::forward(attn::init_layer_normalization(), x).normalised;
    // Per token the ratio is sqrt(var + 1e-5) / (std + 1e-6): sqrt((D-1)/D) once var >> eps.
    const double factor = std::sqrt((width - 1.0) / width);
    const attn::LayerNormSteps steps = attn::forward(attn::init_layer_norm(width), x);
    for (std::size_t r = 0; r < 64; ++r) {
      if (steps.variance.data()[r] < 0.1f) continue;  // near eps the eps terms decide the ratio
      for (std::size_t j = 0; j < width; ++j) {
        const double expected = torch_normalised.data()[r * width + j] * factor;
        CHECK(std::fabs(seed_normalised.data()[r * width + j] - expected) <=
              1e-4 * (1.0 + std::fabs(expected)));
      }
    }
    double worst = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(seed_normalised.data()[i] -
                                                            torch_normalised.data()[i])));
    INFO("D = " << width << ", max difference " << worst);
    CHECK(worst < previous);
    previous = worst;
  }
  // D = 1: the unbiased std divides 0 by 0.
  const Tensor3 one = attn::randn(rng, 1, 3, 1);
  for (float v : attn::forward(attn::init_layer_normalization(), one).output)
    CHECK(std::isnan(v));
}

TEST_CASE("parameter counts and state_dict keys", "[layer-norm][parameters]") {
  CHECK(attn::count_parameters(attn::describe_layer_norm(768)) ==
        1536);  // BERT-base's LayerNorm rows
  CHECK(attn::count_parameters(attn::describe_layer_norm(6)) == 12);
  CHECK(attn::count_parameters(attn::describe_layer_normalization()) == 2);
  attn::LayerNorm norm = attn::init_layer_norm(12);
  const auto entries = attn::state_dict_entries(attn::describe_layer_norm(12));
  const auto seen = visited(norm);
  REQUIRE(seen.size() == entries.size());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].key == entries[i].key);
    CHECK(seen[i].shape == entries[i].shape);
  }
  CHECK(entries.front().key == "weight");
  CHECK(entries.back().key == "bias");
  attn::LayerNormalization seed = attn::init_layer_normalization();
  const auto seed_entries = attn::state_dict_entries(attn::describe_layer_normalization());
  const auto seed_seen = visited(seed);
  REQUIRE(seed_seen.size() == 2);
  CHECK(seed_seen[0].key == "gamma");
  CHECK(seed_seen[1].key == "beta");
  CHECK(seed_entries[0].key == "gamma");
  CHECK(seed_entries[1].shape == attn::Shape{1});
  // Initialisation: weight 1, bias 0; gamma 1, beta 0.
  for (float w : norm.weight)
    CHECK(w == 1.0f);
  for (float b : norm.bias)
    CHECK(b == 0.0f);
  CHECK(seed.gamma(0) == 1.0f);
  CHECK(seed.beta(0) == 0.0f);
}

TEST_CASE("torchinfo's LayerNorm row: 1,536 parameters and mult-adds at (1, 5, 768)",
          "[layer-norm][summary]") {
  attn::SummaryOptions options;
  options.col_names = {"input_size", "output_size", "kernel_size", "num_params", "mult_adds"};
  options.col_width = 16;
  const std::string table =
      attn::format_summary(attn::trace_layer_norm(768, {1, 5, 768}), {{{1, 5, 768}, 4}}, options);
  // The book's TransformerEncoderLayer table has the same row at depth 1.
  const std::string golden = attn::testing::read_text(
      std::string(ATTN_GOLDEN_DIR) +
      "/torchinfo/06_book_transformerencoderlayer_bertbase__seedcols_verbose1__depth3.txt");
  const std::string row = "├─LayerNorm: 1-1";
  const std::size_t at = golden.find(row);
  REQUIRE(at != std::string::npos);
  const std::string golden_row = golden.substr(at, golden.find('\n', at) - at);
  const std::string columns = golden_row.substr(golden_row.find('['));
  INFO(table);
  CHECK(table.find("LayerNorm                                " + columns + "\n") !=
        std::string::npos);
  CHECK(table.find("Total params: 1,536\n") != std::string::npos);
}

TEST_CASE("layer norm errors name the shapes and the eps", "[layer-norm][errors]") {
  attn::Rng rng(1);
  const Tensor3 x = attn::randn(rng, 2, 5, 12);
  CHECK_THROWS_WITH(attn::forward(attn::init_layer_norm(6), x),
                    Catch::Contains("(2, 5, 12)") && Catch::Contains("D=6"));
  CHECK_THROWS_WITH(attn::init_layer_norm(6, 0.0f), Catch::Contains("eps"));
  CHECK_THROWS_WITH(attn::init_layer_norm(6, -1e-5f), Catch::Contains("eps"));
  CHECK_THROWS_WITH(attn::init_layer_norm(6, std::numeric_limits<float>::quiet_NaN()),
                    Catch::Contains("eps"));
  CHECK_THROWS_WITH(attn::init_layer_normalization(std::numeric_limits<float>::infinity()),
                    Catch::Contains("eps"));
  attn::LayerNormalization wide = attn::init_layer_normalization();
  wide.gamma = xt::ones<float>({3});
  CHECK_THROWS_WITH(attn::forward(wide, x), Catch::Contains("(3,)"));
}
