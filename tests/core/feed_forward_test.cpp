// The feed-forward block: every step against PyTorch's (data/fixtures/feed-forward, made by
// data/generator/feed_forward.py), GELU bit for bit, module trees and state_dict keys against
// PyTorch's, parameter counts, the torchinfo rows, and the identities lesson 08 teaches.
#include "feed_forward.hpp"

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "kernels/torch_order.hpp"
#include "state_dict.hpp"
#include "summary.hpp"
#include "trace.hpp"

using attn::FeedForward;
using attn::FeedForwardVariant;
using attn::GeluApproximation;
using attn::Tensor3;

namespace {
constexpr FeedForwardVariant kVariants[] = {FeedForwardVariant::book, FeedForwardVariant::relu,
                                            FeedForwardVariant::gelu_last};

nlohmann::json feed_forward_cases() {
  return nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("feed-forward/cases.json")));
}

std::string fixture(const std::string& file) {
  return attn::testing::fixture_path("feed-forward/" + file);
}

// Weights too large to commit, as data/generator/attention.py's formula_state_dict computes them.
attn::StateDict formula_weights(const attn::Module& model) {
  attn::StateDict out;
  std::int64_t j = 0;
  for (const attn::StateDictEntry& e : attn::state_dict_entries(model)) {
    std::vector<float> values(attn::element_count(e.shape));
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::int64_t r = (static_cast<std::int64_t>(i) * 7919 + j * 104729) % 2001;
      values[i] = static_cast<float>(0.02 * (static_cast<double>(r) / 1000.0 - 1.0));
    }
    out[e.key] = attn::make_float32(e.shape, values);
    ++j;
  }
  return out;
}

// The fixture case's layer with PyTorch's weights loaded.
FeedForward fixture_layer(const nlohmann::json& c) {
  const FeedForwardVariant v = *attn::feed_forward_variant(c["variant"].get<std::string>());
  const std::size_t width = c["shape"][2], d_ff = c["d_ff"];
  const GeluApproximation approximate =
      c["gelu"] == "tanh" ? GeluApproximation::tanh : GeluApproximation::none;
  attn::Rng rng(0);
  FeedForward layer = attn::init_feed_forward(rng, v, width, d_ff, approximate);
  const attn::Module model = attn::describe_feed_forward(v, width, d_ff);
  const attn::StateDict weights =
      c["weights_formula"].get<bool>()
          ? formula_weights(model)
          : attn::read_weights(fixture(c["weights"].get<std::string>()));
  attn::load_state_dict(layer, model, weights, "fixture");
  return layer;
}

Tensor3 load3(const std::string& file) {
  return attn::to_tensor<3>(attn::read_npy(fixture(file)), file);
}

// The keys and shapes visit_parameters offers, in order.
std::vector<attn::StateDictEntry> visited(FeedForward& layer) {
  std::vector<attn::StateDictEntry> out;
  visit_parameters(layer, [&](const std::string& key, float*, const attn::Shape& shape) {
    out.push_back({key, shape});
  });
  return out;
}

std::size_t count_differing(const Tensor3& a, const Tensor3& b, std::size_t begin,
                            std::size_t end) {
  std::size_t n = 0;
  for (std::size_t i = begin; i < end; ++i)
    n += a.data()[i] != b.data()[i];
  return n;
}

Tensor3 from_values(const std::vector<float>& values) {
  Tensor3 t({1, 1, values.size()});
  std::copy(values.begin(), values.end(), t.begin());
  return t;
}
}  // namespace

TEST_CASE("every step equals PyTorch's on the fixtures", "[feed-forward][fixtures]") {
  const auto cases = feed_forward_cases();
  REQUIRE(cases.size() >= 10);
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      const FeedForward layer = fixture_layer(c);
      const attn::FeedForwardSteps s = forward(layer, load3(c["input"]));
      // BERT-base sizes sum 768 or 3072 products per output: 1e-4 there, 1e-5 elsewhere.
      const attn::testing::Tolerance tol{c["shape"][2].get<int>() >= 256 ? 1e-4 : 1e-5, 1e-4};
      const auto& steps = c["steps"];
      CHECK_ALLCLOSE(attn::to_array(s.hidden), attn::read_npy(fixture(steps["hidden"])), tol);
      if (steps.contains("activated")) {
        CHECK_ALLCLOSE(attn::to_array(s.activated), attn::read_npy(fixture(steps["activated"])),
                       tol);
      }
      if (steps.contains("projected")) {
        CHECK_ALLCLOSE(attn::to_array(s.projected), attn::read_npy(fixture(steps["projected"])),
                       tol);
      }
      CHECK_ALLCLOSE(attn::to_array(s.output), attn::read_npy(fixture(steps["output"])), tol);
    }
  }
}

TEST_CASE("GELU alone is bit-identical to torch's on the fixtures' own inputs",
          "[feed-forward][gelu]") {
  // Applied to the tensor torch fed its GELU. oneDNN's erf path and SLEEF's tanh are plain float
  // arithmetic, so they must agree bit for bit on any machine; the scalar tails call libm (erff,
  // tanhf), which matches glibc 2.36 (Debian 12) and is held to the tolerance elsewhere.
  for (const auto& c : feed_forward_cases()) {
    if (c["variant"] == "relu") continue;
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      const bool last = c["variant"] == "gelu-last";
      const Tensor3 before = load3(c["steps"][last ? "projected" : "hidden"]);
      const Tensor3 expected = load3(c["steps"][last ? "output" : "activated"]);
      const bool tanh = c["gelu"] == "tanh";
      const Tensor3 got =
          attn::gelu(before, tanh ? GeluApproximation::tanh : GeluApproximation::none);
      const std::size_t n = got.size();
      const std::size_t arithmetic_end = tanh ? n - n % 16 : (n > 1 ? n : 0);
      INFO(count_differing(got, expected, 0, n) << " of " << n << " values differ");
      CHECK(count_differing(got, expected, 0, arithmetic_end) == 0);
      CHECK_ALLCLOSE(attn::to_array(got), attn::to_array(expected),
                     attn::testing::Tolerance{1e-7, 1e-6});
    }
  }
}

TEST_CASE("the kernels against double-precision references", "[feed-forward][gelu]") {
  for (float x = -12.0f; x <= 12.0f; x += 0.0037f) {
    const float tolerance = 1e-6f * std::max(1.0f, std::fabs(x));
    CHECK(std::fabs(attn::gelu_erf_onednn(x) - attn::gelu_reference(x, GeluApproximation::none)) <=
          tolerance);
    // SLEEF's u10: within 1 ulp of tanh.
    const float t = attn::tanh_sleef(x),
                exact = static_cast<float>(std::tanh(static_cast<double>(x)));
    CHECK(std::fabs(t - exact) <=
          std::numeric_limits<float>::epsilon() * std::max(std::fabs(exact), 1e-30f));
  }
  CHECK(attn::tanh_sleef(20.0f) == 1.0f);
  CHECK(attn::tanh_sleef(-20.0f) == -1.0f);
  CHECK(std::isnan(attn::tanh_sleef(std::numeric_limits<float>::quiet_NaN())));
  CHECK(attn::gelu_erf_onednn(0.0f) == 0.0f);
  CHECK(std::isnan(attn::gelu_erf_onednn(std::numeric_limits<float>::quiet_NaN())));
  // Both forms on whole tensors, the tanh one with a scalar tail (17 = 16 + 1).
  std::vector<float> values;
  for (int i = 0; i < 17; ++i)
    values.push_back(-4.0f + 0.5f * static_cast<float>(i));
  for (GeluApproximation a : {GeluApproximation::none, GeluApproximation::tanh}) {
    const Tensor3 got = attn::gelu(from_values(values), a);
    for (std::size_t i = 0; i < values.size(); ++i) {
      CHECK(std::fabs(got.data()[i] - attn::gelu_reference(values[i], a)) <=
            1e-6f * std::max(1.0f, std::fabs(values[i])));
    }
  }
  // A one-element tensor takes ATen's scalar path: x/2 (1 + erff(x/√2)).
  const float lone = 0.3f;
  CHECK(attn::gelu(from_values({lone}), GeluApproximation::none).data()[0] ==
        lone * 0.5f * (1.0f + std::erf(lone * 0.707106781186547524400844362104849039f)));
}

TEST_CASE("GELU identities: GELU(x) - GELU(-x) = x, GELU(0) = 0, a minimum of -0.17",
          "[feed-forward][gelu]") {
  std::vector<float> values, negated;
  for (float x = -6.0f; x <= 6.0f; x += 0.01f)
    values.push_back(x), negated.push_back(-x);
  for (GeluApproximation a : {GeluApproximation::none, GeluApproximation::tanh}) {
    const Tensor3 g = attn::gelu(from_values(values), a), h = attn::gelu(from_values(negated), a);
    float lowest = 0.0f;
    for (std::size_t i = 0; i < values.size(); ++i) {
      CHECK(std::fabs(g.data()[i] - h.data()[i] - values[i]) <=
            2e-6f * std::max(1.0f, std::fabs(values[i])));
      lowest = std::min(lowest, g.data()[i]);
    }
    CHECK(lowest > -0.1701f);
    CHECK(lowest < -0.1699f);
  }
  CHECK(attn::gelu(from_values({0.0f, 0.0f}), GeluApproximation::none).data()[0] == 0.0f);
}

TEST_CASE("ReLU zeroes the negatives and keeps NaN", "[feed-forward]") {
  const Tensor3 r =
      attn::relu(from_values({-2.0f, -0.0f, 0.5f, std::numeric_limits<float>::quiet_NaN()}));
  CHECK(r.data()[0] == 0.0f);
  CHECK(r.data()[1] == 0.0f);
  CHECK(r.data()[2] == 0.5f);
  CHECK(std::isnan(r.data()[3]));
}

TEST_CASE("parameter counts equal PyTorch's sum(p.numel())", "[feed-forward][parameters]") {
  CHECK(attn::count_parameters(attn::describe_feed_forward(FeedForwardVariant::book, 768, 3072)) ==
        4722432);
  CHECK(attn::count_parameters(
            attn::describe_feed_forward(FeedForwardVariant::gelu_last, 768, 3072)) == 4722432);
  CHECK(attn::count_parameters(attn::describe_feed_forward(FeedForwardVariant::relu, 512, 2048)) ==
        2099712);
  CHECK(attn::count_parameters(attn::describe_feed_forward(FeedForwardVariant::book, 6, 24)) ==
        318);
  for (const auto& c : feed_forward_cases()) {
    const attn::Module m = attn::describe_feed_forward(
        *attn::feed_forward_variant(c["variant"].get<std::string>()), c["shape"][2], c["d_ff"]);
    CHECK(attn::count_parameters(m) == c["parameters"].get<std::int64_t>());
  }
}

TEST_CASE("state_dict keys: PyTorch's, and exactly what visit_parameters offers",
          "[feed-forward][state_dict]") {
  for (const auto& c : feed_forward_cases()) {
    const FeedForwardVariant v = *attn::feed_forward_variant(c["variant"].get<std::string>());
    std::vector<std::string> keys;
    for (const auto& e :
         attn::state_dict_entries(attn::describe_feed_forward(v, c["shape"][2], c["d_ff"])))
      keys.push_back(e.key);
    CHECK(keys == c["state_dict"].get<std::vector<std::string>>());
  }
  attn::Rng rng(1);
  for (FeedForwardVariant v : kVariants) {
    DYNAMIC_SECTION(attn::variant_name(v)) {
      FeedForward layer = attn::init_feed_forward(rng, v, 12, 30);
      const auto expected = attn::state_dict_entries(attn::describe_feed_forward(v, 12, 30));
      const auto got = visited(layer);
      REQUIRE(got.size() == expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].key == expected[i].key);
        CHECK(got[i].shape == expected[i].shape);
      }
    }
  }
}

TEST_CASE("module trees: the notebooks' class and attribute names, registration order",
          "[feed-forward]") {
  auto names = [](const attn::Module& m) {
    std::vector<std::string> out;
    for (const attn::Module& c : m.children)
      out.push_back(c.class_name + " " + c.name);
    return out;
  };
  const attn::Module book = attn::describe_feed_forward(FeedForwardVariant::book, 6, 24);
  CHECK(book.class_name == "FeedForward");
  CHECK(names(book) == std::vector<std::string>{"Linear linear_1", "Linear linear_2", "GELU gelu",
                                                "Dropout dropout"});
  const attn::Module relu = attn::describe_feed_forward(FeedForwardVariant::relu, 6, 24);
  CHECK(relu.class_name == "FeedForwardNeuralNetwork");
  CHECK(names(relu) ==
        std::vector<std::string>{"Linear layer1", "Linear layer2", "Dropout dropout", "ReLU relu"});
  const attn::Module last = attn::describe_feed_forward(FeedForwardVariant::gelu_last, 6, 24);
  CHECK(names(last) == std::vector<std::string>{"Sequential net"});
  CHECK(names(last.children.front()) ==
        std::vector<std::string>{"Linear 0", "Linear 1", "GELU 2", "Dropout 3"});
  CHECK_THROWS_WITH(attn::describe_feed_forward(FeedForwardVariant::book, 6, 0),
                    Catch::Contains("F = 0"));
}

TEST_CASE("position-wise on odd sizes: each token alone gives its own row", "[feed-forward]") {
  attn::Rng rng(3);
  for (FeedForwardVariant v : kVariants) {
    for (GeluApproximation a : {GeluApproximation::none, GeluApproximation::tanh}) {
      const FeedForward layer = attn::init_feed_forward(rng, v, 12, 30, a);
      const Tensor3 x = attn::randn(rng, 2, 5, 12);
      const Tensor3 y = forward(layer, x).output;  // (2,5,12)
      CHECK(y.shape(0) == 2);
      CHECK(y.shape(1) == 5);
      CHECK(y.shape(2) == 12);
      for (std::size_t b = 0; b < 2; ++b) {
        for (std::size_t t = 0; t < 5; ++t) {
          Tensor3 token({1, 1, 12});
          std::copy(x.data() + (b * 5 + t) * 12, x.data() + (b * 5 + t + 1) * 12, token.data());
          const Tensor3 alone = forward(layer, token).output;
          for (std::size_t i = 0; i < 12; ++i)
            CHECK(std::fabs(alone(0, 0, i) - y(b, t, i)) <= 1e-6f);
        }
      }
    }
  }
}

TEST_CASE("two Linears in a row are one Linear: W = W2 W1, b = W2 b1 + b2", "[feed-forward]") {
  attn::Rng rng(4);
  for (bool bias : {true, false}) {
    const attn::Linear first = attn::init_linear(rng, 12, 30, bias),
                       second = attn::init_linear(rng, 30, 7, bias);
    const attn::Linear one = attn::compose_linears(first, second);
    CHECK(one.weight.shape(0) == 7);
    CHECK(one.weight.shape(1) == 12);
    CHECK(one.has_bias == bias);
    const Tensor3 x = attn::randn(rng, 2, 5, 12);
    CHECK_ALLCLOSE(attn::to_array(forward(second, forward(first, x))),
                   attn::to_array(forward(one, x)));
  }
  // seed 000's block is that Linear followed by GELU
  FeedForward last = attn::init_feed_forward(rng, FeedForwardVariant::gelu_last, 12, 48);
  const Tensor3 x = attn::randn(rng, 2, 5, 12);
  const Tensor3 collapsed = attn::gelu(
      forward(attn::compose_linears(last.linear_1, last.linear_2), x), GeluApproximation::none);
  CHECK_ALLCLOSE(attn::to_array(forward(last, x).output), attn::to_array(collapsed));
  CHECK_THROWS_WITH(attn::compose_linears(last.linear_1, last.linear_1),
                    Catch::Contains("cannot follow"));
}

TEST_CASE("a width that does not fit is refused with the shapes", "[feed-forward]") {
  attn::Rng rng(5);
  const FeedForward layer = attn::init_feed_forward(rng, FeedForwardVariant::book, 6, 24);
  CHECK_THROWS_WITH(
      forward(layer, attn::randn(rng, 1, 5, 8)),
      Catch::Contains("[feed_forward] x (1, 5, 8) does not fit a block of width D = 6"));
}

TEST_CASE("summaries: the FeedForward rows of the real torchinfo table (BERT-base)",
          "[feed-forward][summary]") {
  // tests/golden/torchinfo/06_* is the book's TransformerEncoderLayer; its FeedForward rows are
  // depth 1-2 there and 0-1 here, so compare every column after the 40-character name column.
  attn::SummaryOptions seed_columns;
  seed_columns.col_names = {"input_size", "output_size", "kernel_size", "num_params", "mult_adds"};
  seed_columns.col_width = 16;
  const std::string table = attn::format_summary(
      attn::trace_feed_forward(FeedForwardVariant::book, 768, 3072, {1, 5, 768}),
      {{{1, 5, 768}, 4}}, seed_columns);
  const std::string golden = attn::testing::read_text(
      std::string(ATTN_GOLDEN_DIR) +
      "/torchinfo/06_book_transformerencoderlayer_bertbase__seedcols_verbose1__depth3.txt");
  auto lines_with = [](const std::string& text, const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const std::string& name : names) {
      std::size_t at = text.find(name);
      REQUIRE(at != std::string::npos);
      if (name.front() == '\n') ++at;  // a row name that starts the line
      const std::size_t begin = text.rfind('\n', at) + 1, end = text.find('\n', at);
      const std::string line = text.substr(begin, end - begin);
      std::size_t chars = 0, i = 0;  // skip 40 code points
      for (; i < line.size() && chars < 40; ++i)
        chars += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
      while (i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80)
        ++i;
      out.push_back(line.substr(i));
    }
    return out;
  };
  CHECK(lines_with(table,
                   {"\nFeedForward ", "Linear: 1-1", "GELU: 1-2", "Linear: 1-3", "Dropout: 1-4"}) ==
        lines_with(golden, {"FeedForward: 1-4", "Linear: 2-3", "GELU: 2-4", "Linear: 2-5",
                            "Dropout: 2-6"}));
  CHECK(table.find("Total params: 4,722,432") != std::string::npos);

  auto classes = [](const std::vector<attn::LayerInfo>& rows) {
    std::vector<std::string> out;
    for (const attn::LayerInfo& r : rows)
      out.push_back(r.class_name + (r.var_name.empty() ? "" : " " + r.var_name));
    return out;
  };
  CHECK(classes(attn::trace_feed_forward(FeedForwardVariant::relu, 6, 24, {1, 5, 6})) ==
        std::vector<std::string>{"FeedForwardNeuralNetwork", "Linear layer1", "ReLU relu",
                                 "Dropout dropout", "Linear layer2"});
  const auto last = attn::trace_feed_forward(FeedForwardVariant::gelu_last, 6, 24, {1, 5, 6});
  CHECK(classes(last) == std::vector<std::string>{"FeedForward", "Sequential net", "Linear 0",
                                                  "Linear 1", "GELU 2", "Dropout 3"});
  CHECK(last[4].input_shape == attn::Shape{1, 5, 6});  // the GELU runs on the narrow output
}

TEST_CASE("summaries: torchinfo 0.1.0's table for BERT-base's FeedForward (the seed layout)",
          "[feed-forward][summary]") {
  // torchinfo 0.1.0 (tag v0.1.0) on FeedForward(768, 3072) with input_size=(1, 5, 768), depth 3.
  // apply_hooks hooks the four children, not the model (it has children); each row's Mult-Adds is
  // calculate_macs's output_size[0] * weight.nelement() = 1 * 3072 * 768 = 2,359,296.
  // ModelStatistics, in elements: total_input = prod((1, 5, 768)) = 3,840; total_params = the
  // leaves above max_depth = 2,362,368 + 2,360,064 = 4,722,432; total_output = 2 * prod(output)
  // of the leaves with parameters = 2 * (15,360 + 3,840) = 38,400. to_bytes(n) = n * 4 / 1e6:
  //   Input size                3,840 * 4 / 1e6 =  0.01536   -> 0.02
  //   Forward/backward pass    38,400 * 4 / 1e6 =  0.1536    -> 0.15
  //   Params size           4,722,432 * 4 / 1e6 = 18.889728  -> 18.89
  //   Estimated Total       4,764,672 * 4 / 1e6 = 19.058688  -> 19.06
  // (Divided by 1024**2, as attn did, the first, third and fourth read 0.01, 18.01 and 18.18.)
  attn::SummaryOptions options;
  options.format = attn::TorchinfoFormat::v0_1;
  options.col_names = {"input_size", "output_size", "kernel_size", "num_params", "mult_adds"};
  options.col_width = 16;
  const std::string divider(120, '=');
  const std::string expected =
      divider + "\n" +
      "Layer (type:depth-idx)                   Input Shape      Output Shape     Kernel Shape     "
      "Param #          Mult-Adds\n" +
      divider + "\n" +
      "├─Linear: 1-1                            [1, 5, 768]      [1, 5, 3072]     [768, 3072]      "
      "2,362,368        2,359,296\n"
      "├─GELU: 1-2                              [1, 5, 3072]     [1, 5, 3072]     --               "
      "--               --\n"
      "├─Linear: 1-3                            [1, 5, 3072]     [1, 5, 768]      [3072, 768]      "
      "2,360,064        2,359,296\n"
      "├─Dropout: 1-4                           [1, 5, 768]      [1, 5, 768]      --               "
      "--               --\n" +
      divider + "\n" +
      "Total params: 4,722,432\n"
      "Trainable params: 4,722,432\n"
      "Non-trainable params: 0\n"
      "Total mult-adds (M): 4.72\n" +
      divider + "\n" +
      "Input size (MB): 0.02\n"
      "Forward/backward pass size (MB): 0.15\n"
      "Params size (MB): 18.89\n"
      "Estimated Total Size (MB): 19.06\n" +
      divider + "\n";
  CHECK(attn::format_summary(
            attn::trace_feed_forward(FeedForwardVariant::book, 768, 3072, {1, 5, 768}),
            {{{1, 5, 768}, 4}}, options) == expected);
}
