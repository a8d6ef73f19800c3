// attn feed-forward and attn summary feed-forward from the command line: golden stdout, JSON,
// --save, PyTorch parity through --input/--weights/--save, --save-weights round trips, bad input.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/count.hpp"
#include "feed_forward.hpp"
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
using attn::testing::formula_weights;
using attn::testing::kPlainTerminal;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {
std::string fixture(const std::string& file) {
  return attn::testing::fixture_path("feed-forward/" + file);
}

}  // namespace

TEST_CASE("feed-forward golden stdout: defaults and the variants", "[cli][golden][feed-forward]") {
  check_golden("feed-forward", {"feed-forward"});
  check_golden("feed-forward_relu", {"feed-forward", "--variant", "relu"});
  check_golden("feed-forward_gelu-last_tanh",
               {"feed-forward", "--variant", "gelu-last", "--gelu", "tanh"});
  check_golden("feed-forward_seed3_b2_t3_d4_f10_tanh_quiet",
               {"feed-forward", "--seed", "3", "--batch", "2", "--seq", "3", "--d-model", "4",
                "--d-ff", "10", "--gelu", "tanh", "--quiet"});
}

TEST_CASE("feed-forward json: one document with every step, the checks and the parameter count",
          "[cli][json][feed-forward]") {
  struct Case {
    std::string variant;
    std::vector<std::string> steps;
  };
  for (const Case& c : {Case{"book", {"input", "hidden", "activated", "output"}},
                        Case{"relu", {"input", "hidden", "activated", "output"}},
                        Case{"gelu-last", {"input", "hidden", "projected", "output"}}}) {
    DYNAMIC_SECTION(c.variant) {
      const auto result =
          run_attn({"feed-forward", "--variant", c.variant, "--format", "json", "--seed", "5",
                    "--batch", "2", "--seq", "3", "--d-model", "12", "--d-ff", "30"});
      REQUIRE(result.exit_code == 0);
      const auto doc = nlohmann::json::parse(result.out);
      CHECK(doc["lesson"] == "feed-forward");
      CHECK(doc["settings"]["seed"] == 5);
      CHECK(doc["settings"]["d-ff"] == 30);
      CHECK(doc["settings"]["variant"] == c.variant);
      CHECK(doc["parameters"] == 2 * 12 * 30 + 30 + 12);
      std::vector<std::string> names;
      for (const auto& step : doc["steps"])
        names.push_back(step["name"]);
      CHECK(names == c.steps);
      CHECK(doc["steps"][1]["shape"] == attn::Shape{2, 3, 30});
      CHECK(doc["steps"].back()["shape"] == attn::Shape{2, 3, 12});
      REQUIRE(doc["checks"].size() >= 3);
      for (const auto& check : doc["checks"])
        CHECK(check["passed"] == true);
    }
  }
}

TEST_CASE("feed-forward --save writes every step, equal to the JSON's",
          "[cli][save][feed-forward]") {
  ScratchDir scratch("save");
  const fs::path dir = scratch.path / "steps";
  const std::vector<std::string> args = {"feed-forward", "--seed", "4", "--batch", "2",
                                         "--d-model",    "12"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = args;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  REQUIRE(run_attn(with({"--save", dir.string()})).exit_code == 0);
  const auto json = nlohmann::json::parse(run_attn(with({"--format", "json"})).out);
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text((dir / "manifest.json").string()));
  REQUIRE(manifest["steps"].size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string name = manifest["steps"][i]["name"];
    CHECK(name == json["steps"][i]["name"]);
    const attn::Array a = attn::read_npy((dir / (name + ".npy")).string());
    CHECK(a.shape == json["steps"][i]["shape"].get<attn::Shape>());
    std::vector<float> flat;
    std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& v) {
      if (v.is_array()) {
        for (const auto& e : v)
          walk(e);
      } else {
        flat.push_back(v.get<float>());
      }
    };
    walk(json["steps"][i]["values"]);
    CHECK(attn::to_float_vector(a) == flat);
  }
}

TEST_CASE("feed-forward equals the notebooks' PyTorch classes with the same weights",
          "[cli][parity][feed-forward]") {
  const auto cases = nlohmann::json::parse(attn::testing::read_text(fixture("cases.json")));
  REQUIRE(cases.size() >= 10);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    DYNAMIC_SECTION(name) {
      ScratchDir scratch("parity-" + name);
      std::string weights;
      if (c["weights_formula"].get<bool>()) {
        const attn::Module model = attn::describe_feed_forward(
            *attn::feed_forward_variant(c["variant"].get<std::string>()), c["shape"][2], c["d_ff"]);
        weights = (scratch.path / "w.safetensors").string();
        attn::write_weights(weights, formula_weights(model));
      } else {
        weights = fixture(c["weights"]);
      }
      std::vector<std::string> args = {"feed-forward",
                                       "--input",
                                       fixture(c["input"]),
                                       "--weights",
                                       weights,
                                       "--save",
                                       (scratch.path / "out").string()};
      for (const auto& a : c["args"])
        args.push_back(a);
      const auto result = run_attn(args, kPlainTerminal);
      INFO("stderr: " << result.err);
      REQUIRE(result.exit_code == 0);
      const double atol = c["shape"][2].get<int>() >= 256 ? 1e-4 : 1e-5;
      for (const auto& [step, file] : c["steps"].items()) {
        INFO("step " << step);
        CHECK_ALLCLOSE(attn::read_npy((scratch.path / "out" / (step + ".npy")).string()),
                       attn::read_npy(fixture(file)), attn::testing::Tolerance{atol, 1e-4});
      }
      CHECK_PRINTED(result.out, attn::testing::read_text(fixture(c["repr"])));
      CHECK(result.out.find(fmt::format("Parameters: {}\n",
                                        attn::with_commas(c["parameters"].get<std::int64_t>()))) !=
            std::string::npos);
    }
  }
}

TEST_CASE("feed-forward --save-weights reads back through --weights, with F from the file",
          "[cli][weights][feed-forward]") {
  ScratchDir scratch("save-weights");
  for (const std::string variant : {"book", "relu", "gelu-last"}) {
    DYNAMIC_SECTION(variant) {
      const std::string path = (scratch.path / (variant + ".safetensors")).string();
      const auto first = run_attn({"feed-forward", "--variant", variant, "--seed", "3", "--d-model",
                                   "8", "--d-ff", "20", "--save-weights", path, "--quiet"});
      REQUIRE(first.exit_code == 0);
      const attn::StateDict saved = attn::read_weights(path);
      const auto expected = attn::state_dict_entries(
          attn::describe_feed_forward(*attn::feed_forward_variant(variant), 8, 20));
      REQUIRE(saved.size() == expected.size());
      for (const auto& e : expected)
        CHECK(saved.at(e.key).shape == e.shape);
      // No --d-ff: F = 20 comes from the file.
      const auto again = run_attn({"feed-forward", "--variant", variant, "--seed", "3", "--d-model",
                                   "8", "--weights", path, "--quiet"});
      REQUIRE(again.exit_code == 0);
      CHECK(again.out == first.out);
    }
  }
}

TEST_CASE("summary feed-forward: torchinfo's rows for the book's FeedForward",
          "[cli][summary][feed-forward]") {
  const auto table =
      run_attn({"summary", "feed-forward", "--d-model", "768", "--col-names",
                "input_size,output_size,kernel_size,num_params,mult_adds", "--col-width", "16"});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("├─Linear: 1-1                            [1, 5, 768]      [1, 5, 3072]     "
                       "--               "
                       "2,362,368        11,811,840\n") != std::string::npos);
  CHECK(table.out.find("Total params: 4,722,432\n") != std::string::npos);
  const auto json =
      run_attn({"summary", "feed-forward", "--d-model", "12", "--d-ff", "30", "--format", "json"});
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["class_name"] == "FeedForward");
  CHECK(doc["total_params"] == 2 * 12 * 30 + 30 + 12);
  REQUIRE(doc["layers"].size() == 5);
  CHECK(doc["layers"][2]["class_name"] == "GELU");
  CHECK(doc["layers"][2]["input_shape"] == attn::Shape{1, 5, 30});
  CHECK(doc["state_dict"][0]["key"] == "linear_1.weight");
}

TEST_CASE("bad input to feed-forward: one line on stderr, exit 2, nothing on stdout",
          "[cli][bad-input][feed-forward]") {
  ScratchDir scratch("bad");
  const std::string relu = fixture("relu_b1_t5_d6_weights.npz"),
                    wide = fixture("book_b2_t5_d12_weights.npz");
  const std::string rank2 = (scratch.path / "x2.npy").string();
  attn::write_npy(rank2, attn::make_float32({5, 6}, std::vector<float>(30, 0.5f)));
  const std::string corrupt = (scratch.path / "corrupt.safetensors").string();
  std::ofstream(corrupt, std::ios::binary)
      << std::string("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}", 16);
  const fs::path save = scratch.path / "never";
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  const std::vector<Case> cases = {
      {{"feed-forward", "--d-ff", "0"}, "--d-ff: '0' is not a size"},
      {{"feed-forward", "--d-ff", "-3"}, "--d-ff"},
      {{"feed-forward", "--d-ff", "4x"}, "--d-ff"},
      {{"feed-forward", "--d-model", "0"}, "--d-model"},
      {{"feed-forward", "--variant", "wide"}, "use book, relu or gelu-last"},
      {{"feed-forward", "--gelu", "relu"}, "use erf or tanh"},
      {{"feed-forward", "--variant", "relu", "--gelu", "tanh"}, "seed 001's block uses ReLU"},
      {{"feed-forward", "--d-model", "100000", "--d-ff", "100000"}, "lower --d-model or --d-ff"},
      {{"feed-forward", "--weights", relu}, "add --variant relu"},
      {{"feed-forward", "--weights", wide}, "is for D = 12"},
      {{"feed-forward", "--weights", wide, "--d-model", "12", "--d-ff", "10"},
       "linear_1.weight is (48, 12) but the model needs (10, 12)"},
      {{"feed-forward", "--input", fixture("book_b1_t5_d6_input.npy"), "--weights", wide},
       "give an --input of width 12"},
      {{"feed-forward", "--weights", corrupt}, "--weights"},
      {{"feed-forward", "--weights", (scratch.path / "missing.npz").string()}, "does not exist"},
      {{"feed-forward", "--input", rank2}, "add a batch axis"},
      {{"feed-forward", "--input", rank2, "--d-model", "6"}, "add a batch axis"},
      {{"feed-forward", "--d-ff", "0", "--save", save.string()}, "--d-ff"},
      {{"feed-forward", "--variant", "wide", "--save", save.string()}, "--variant"},
      {{"summary", "feed-forward", "--d-ff", "0"}, "--d-ff"},
      {{"summary", "feed-forward", "--variant", "wide"}, "'wide' is not a variant of feed-forward"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(fmt::format("{}", fmt::join(c.args, " "))) {
      const auto result = run_attn(c.args);
      INFO("stderr: " << result.err);
      CHECK(result.exit_code == 2);
      CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
      CHECK(result.err.rfind("attn", 0) == 0);
      CHECK(result.out.empty());
      CHECK(result.err.find(c.phrase) != std::string::npos);
      CHECK_FALSE(fs::exists(save));
    }
  }
}
