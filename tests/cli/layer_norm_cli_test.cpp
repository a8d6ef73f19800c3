// attn layer-norm from the command line: golden stdout, the JSON document, --save, PyTorch
// parity through --input/--weights/--save (bit for bit), --save-weights, the summary row and
// every bad input of the lesson.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/count.hpp"
#include "fixtures.hpp"
#include "golden.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"
#include "summary.hpp"
#include "tolerant_text.hpp"

namespace fs = std::filesystem;
using attn::testing::check_golden;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {
std::string fixture(const std::string& file) {
  return attn::testing::fixture_path("layer-norm/" + file);
}

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
}  // namespace

TEST_CASE("layer-norm golden stdout", "[cli][golden][layer-norm]") {
  check_golden("layer-norm", {"layer-norm"});
  check_golden("layer-norm_seed001", {"layer-norm", "--variant", "seed001"});
  check_golden("layer-norm_seed3_b2_t3_d12_eps1e-12_blocks3",
               {"layer-norm", "--seed", "3", "--batch", "2", "--seq", "3", "--d-model", "12",
                "--eps", "1e-12", "--blocks", "3"});
  check_golden("layer-norm_d768_quiet", {"layer-norm", "--d-model", "768", "--quiet"});
}

TEST_CASE("layer-norm runs are deterministic and depend on the seed", "[cli][layer-norm]") {
  const auto a = run_attn({"layer-norm", "--seed", "99", "--batch", "2"});
  const auto b = run_attn({"layer-norm", "--seed", "99", "--batch", "2"});
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);
  CHECK(a.out != run_attn({"layer-norm", "--seed", "100", "--batch", "2"}).out);
}

TEST_CASE("layer-norm json: steps, checks, tables and the parameter count",
          "[cli][json][layer-norm]") {
  struct Case {
    std::string variant;
    std::vector<std::string> steps;
    std::int64_t parameters;
  };
  const std::vector<Case> cases = {
      {"torch", {"input", "mean", "variance", "normalised", "seed001_normalised", "output"}, 12},
      {"seed001", {"input", "mean", "std", "normalised", "torch_normalised", "output"}, 2},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.variant) {
      const auto result = run_attn({"layer-norm", "--variant", c.variant, "--format", "json",
                                    "--seed", "5", "--batch", "2", "--seq", "3"});
      INFO(result.err);
      REQUIRE(result.exit_code == 0);
      const auto doc = nlohmann::json::parse(result.out);
      CHECK(doc["lesson"] == "layer-norm");
      CHECK(doc["settings"]["seed"] == 5);
      CHECK(doc["settings"]["batch"] == 2);
      CHECK(doc["settings"]["variant"] == c.variant);
      CHECK(doc["settings"]["eps"].get<double>() == (c.variant == "torch" ? 1e-5 : 1e-6));
      CHECK(doc["parameters"] == c.parameters);
      REQUIRE(doc["steps"].size() == c.steps.size());
      for (std::size_t i = 0; i < c.steps.size(); ++i)
        CHECK(doc["steps"][i]["name"] == c.steps[i]);
      CHECK(doc["steps"][1]["shape"] == attn::Shape{2, 3, 1});
      CHECK(doc["steps"][5]["shape"] == attn::Shape{2, 3, 6});
      REQUIRE(doc["checks"].size() >= 4);
      for (const auto& check : doc["checks"])
        CHECK(check["passed"] == true);
      REQUIRE(doc["tables"].size() == 3);  // parameters, seed 001 by width, pre-LN / post-LN
      CHECK(doc["tables"][2]["rows"].size() == 7);  // the input and 6 blocks
    }
  }
}

TEST_CASE("layer-norm --save writes every step, and output is the JSON's output",
          "[cli][save][layer-norm]") {
  ScratchDir scratch("save");
  const fs::path dir = scratch.path / "steps";
  const auto saved =
      run_attn({"layer-norm", "--seed", "4", "--batch", "2", "--save", dir.string()});
  REQUIRE(saved.exit_code == 0);
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text((dir / "manifest.json").string()));
  CHECK(manifest["lesson"] == "layer-norm");
  REQUIRE(manifest["steps"].size() == 6);
  for (const auto& step : manifest["steps"])
    CHECK(fs::exists(dir / step["file"].get<std::string>()));
  const auto json = nlohmann::json::parse(
      run_attn({"layer-norm", "--seed", "4", "--batch", "2", "--format", "json"}).out);
  const attn::Array output = attn::read_npy((dir / "output.npy").string());
  std::vector<float> flat;
  for (const auto& b : json["steps"][5]["values"])
    for (const auto& t : b)
      for (const auto& v : t)
        flat.push_back(v.get<float>());
  CHECK(attn::to_float_vector(output) == flat);
  // The saved input step is the generated input; output - nothing else is needed to check it.
  CHECK(attn::read_npy((dir / "input.npy").string()).shape == attn::Shape{2, 5, 6});
}

TEST_CASE("layer-norm equals PyTorch through --input, --weights and --save",
          "[cli][parity][layer-norm]") {
  const auto doc = nlohmann::json::parse(attn::testing::read_text(fixture("cases.json")));
  REQUIRE(doc["cases"].size() >= 8);
  for (const auto& c : doc["cases"]) {
    const std::string name = c["name"];
    DYNAMIC_SECTION(name) {
      ScratchDir scratch("parity-" + name);
      std::vector<std::string> args = {"layer-norm",
                                       "--input",
                                       fixture(c["input"]),
                                       "--weights",
                                       fixture(c["weights"]),
                                       "--save",
                                       (scratch.path / "out").string()};
      for (const auto& a : c["args"])
        args.push_back(a);
      const auto result = run_attn(args);
      INFO("stderr: " << result.err);
      REQUIRE(result.exit_code == 0);
      const attn::Array expected = attn::read_npy(fixture(c["output"]));
      const attn::Array got = attn::read_npy((scratch.path / "out/output.npy").string());
      CHECK_ALLCLOSE(got, expected);
      CHECK(differing(got, expected) == 0);  // bit for bit
      CHECK(differing(attn::read_npy((scratch.path / "out/mean.npy").string()),
                      attn::read_npy(fixture(c["mean"]))) == 0);
      if (c.contains("std")) {
        CHECK(differing(attn::read_npy((scratch.path / "out/std.npy").string()),
                        attn::read_npy(fixture(c["std"]))) == 0);
      }
      // The output's repr is in stdout verbatim.
      const std::string repr = attn::testing::read_text(fixture(c["repr"]));
      CHECK_PRINTED(result.out, repr);
      CHECK(result.out.find(fmt::format("Parameters: {}\n",
                                        attn::with_commas(c["parameters"].get<std::int64_t>()))) !=
            std::string::npos);
    }
  }
}

TEST_CASE("layer-norm --save-weights writes the weights used, and --weights reads them back",
          "[cli][weights][layer-norm]") {
  ScratchDir scratch("weights");
  struct Case {
    std::string variant, fixture_weights, file;
    std::vector<std::string> keys;
  };
  const std::vector<Case> cases = {
      {"torch", "torch_b1_t5_d6_weights.npz", "w.safetensors", {"bias", "weight"}},
      {"seed001", "seed001_b1_t5_d6_weights.npz", "w.npz", {"beta", "gamma"}}};
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.variant) {
      const std::string path = (scratch.path / c.file).string();
      const auto first = run_attn({"layer-norm", "--variant", c.variant, "--weights",
                                   fixture(c.fixture_weights), "--save-weights", path, "--quiet"});
      INFO(first.err);
      REQUIRE(first.exit_code == 0);
      const attn::StateDict saved = attn::read_weights(path);
      const attn::StateDict original = attn::read_weights(fixture(c.fixture_weights));
      REQUIRE(saved.size() == c.keys.size());
      for (const auto& key : c.keys) {
        CHECK(saved.at(key).shape == original.at(key).shape);
        CHECK(saved.at(key).bytes == original.at(key).bytes);
      }
      const auto again =
          run_attn({"layer-norm", "--variant", c.variant, "--weights", path, "--quiet"});
      REQUIRE(again.exit_code == 0);
      CHECK(again.out == first.out);
      // Trained weights change the output: the defaults give another one.
      CHECK(run_attn({"layer-norm", "--variant", c.variant, "--quiet"}).out != first.out);
    }
  }
}

TEST_CASE("summary layer-norm prints torchinfo's LayerNorm row", "[cli][summary][layer-norm]") {
  const auto result =
      run_attn({"summary", "layer-norm", "--d-model", "768", "--col-names",
                "input_size,output_size,kernel_size,num_params,mult_adds", "--col-width", "16"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  // The same row as the book's TransformerEncoderLayer table (there at depth 1): 1,536 and 1,536.
  const std::string golden = attn::testing::read_text(
      std::string(ATTN_GOLDEN_DIR) +
      "/torchinfo/06_book_transformerencoderlayer_bertbase__seedcols_verbose1__depth3.txt");
  const std::size_t at = golden.find("├─LayerNorm: 1-1");
  REQUIRE(at != std::string::npos);
  const std::string row = golden.substr(at, golden.find('\n', at) - at);
  CHECK(result.out.find("LayerNorm                                " + row.substr(row.find('[')) +
                        "\n") != std::string::npos);
  const auto json = run_attn({"summary", "layer-norm", "--d-model", "768", "--format", "json"});
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["total_params"] == 1536);
  CHECK(doc["class_name"] == "LayerNorm");
  CHECK(doc["state_dict"][0]["key"] == "weight");
  CHECK(doc["state_dict"][1]["key"] == "bias");
}

TEST_CASE("bad input to layer-norm: one line, exit 2, nothing on stdout",
          "[cli][bad-input][layer-norm]") {
  ScratchDir scratch("bad");
  const std::string seed_weights = (scratch.path / "seed001.safetensors").string();
  REQUIRE(
      run_attn({"layer-norm", "--variant", "seed001", "--save-weights", seed_weights, "--quiet"})
          .exit_code == 0);
  const std::string wide_weights = (scratch.path / "d12.npz").string();
  REQUIRE(run_attn({"layer-norm", "--d-model", "12", "--save-weights", wide_weights, "--quiet"})
              .exit_code == 0);
  const std::string rank2 = (scratch.path / "rank2.npy").string();
  attn::write_npy(rank2, attn::make_float32({2, 6}, std::vector<float>(12, 1.0f)));
  const std::string save_dir = (scratch.path / "never").string();
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  const std::vector<Case> cases = {
      {{"layer-norm", "--eps", "0"}, "not positive"},
      {{"layer-norm", "--eps", "-1e-5"}, "not positive"},
      {{"layer-norm", "--eps=-1"}, "not positive"},
      {{"layer-norm", "--eps", "nan"}, "'nan' is not an eps"},
      {{"layer-norm", "--eps", "inf"}, "'inf' is not an eps"},
      {{"layer-norm", "--eps", "-inf"}, "'-inf' is not an eps"},
      {{"layer-norm", "--eps", "1e39"}, "beyond float32"},
      {{"layer-norm", "--eps", "1e40"}, "beyond float32"},
      {{"layer-norm", "--eps", "1e-50"}, "rounds to 0"},
      {{"layer-norm", "--eps", "abc"}, "--eps"},
      {{"layer-norm", "--eps"}, "--eps"},
      {{"layer-norm", "--variant", "seed001", "--eps", "0", "--save", save_dir}, "--eps"},
      {{"layer-norm", "--variant", "batch"}, "--variant"},
      {{"layer-norm", "--blocks", "0"}, "--blocks"},
      {{"layer-norm", "--blocks", "1001"}, "--blocks"},
      {{"layer-norm", "--d-model", "0"}, "--d-model"},
      {{"layer-norm", "--weights", seed_weights}, "missing weight, bias; unexpected beta, gamma"},
      {{"layer-norm", "--variant", "seed001", "--weights", wide_weights}, "missing gamma"},
      {{"layer-norm", "--weights", wide_weights}, "weight is (12,) but the model needs (6,)"},
      {{"layer-norm", "--weights", (scratch.path / "missing.safetensors").string()},
       "does not exist"},
      {{"layer-norm", "--input", rank2}, "add a batch axis"},
      {{"layer-norm", "--d-model", "100000000", "--seq", "100"}, "memory limit of 1 GiB"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(fmt::format("{}", fmt::join(c.args, " "))) {
      const auto result = run_attn(c.args);
      INFO("stderr: " << result.err);
      CHECK(result.exit_code == 2);
      CHECK(attn::testing::line_count(result.err) == 1);
      CHECK(result.out.empty());
      CHECK(result.err.find(c.phrase) != std::string::npos);
    }
  }
  CHECK_FALSE(fs::exists(save_dir));
}
