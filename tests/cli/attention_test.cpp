// attention, multi-head and summary from the command line: PyTorch parity with the notebooks'
// weights (--weights/--input/--save), --save-weights round trips, torchinfo tables, bad input.
#include <filesystem>
#include <fstream>
#include <map>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/count.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "multi_head.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"
#include "tolerant_text.hpp"

namespace fs = std::filesystem;
using attn::testing::formula_weights;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {
attn::MultiHeadVariant variant_of(const std::string& name) {
  const auto v = attn::multi_head_variant(name);
  if (!v) FAIL("unknown variant " << name);
  return *v;
}
}  // namespace

TEST_CASE("attention and multi-head equal the notebooks' PyTorch classes with the same weights",
          "[cli][parity]") {
  for (const std::string lesson : {"attention", "multi-head"}) {
    const auto cases = nlohmann::json::parse(
        attn::testing::read_text(attn::testing::fixture_path(lesson + "/cases.json")));
    REQUIRE(cases.size() >= 6);
    for (const auto& c : cases) {
      const std::string name = c["name"];
      DYNAMIC_SECTION(lesson << " " << name) {
        ScratchDir scratch("parity-" + name);
        std::string weights;
        if (c["weights_formula"].get<bool>()) {
          const auto& shape = c["shape"];
          const attn::Module model =
              attn::describe_multi_head(variant_of(c["variant"]), shape[2], c["heads"]);
          weights = (scratch.path / "w.safetensors").string();
          attn::write_weights(weights, formula_weights(model));
        } else {
          weights = attn::testing::fixture_path(lesson + "/" + c["weights"].get<std::string>());
        }
        std::vector<std::string> args = {
            lesson,
            "--input",
            attn::testing::fixture_path(lesson + "/" + c["input"].get<std::string>()),
            "--weights",
            weights,
            "--save",
            (scratch.path / "out").string()};
        for (const auto& a : c["args"])
          args.push_back(a);
        const auto result = run_attn(args);
        INFO("stderr: " << result.err);
        REQUIRE(result.exit_code == 0);
        const auto expected = attn::read_npy(
            attn::testing::fixture_path(lesson + "/" + c["output"].get<std::string>()));
        // BERT-base sizes sum 768 products per output: 1e-4 there, 1e-5 elsewhere.
        const double atol = c["shape"][2].get<int>() >= 256 ? 1e-4 : 1e-5;
        CHECK_ALLCLOSE(attn::read_npy((scratch.path / "out/output.npy").string()), expected,
                       attn::testing::Tolerance{atol, 1e-4});
        const std::string repr = attn::testing::read_text(
            attn::testing::fixture_path(lesson + "/" + c["repr"].get<std::string>()));
        CHECK_PRINTED(result.out, repr);
        CHECK(result.out.find(fmt::format(
                  "Parameters: {}\n", attn::with_commas(c["parameters"].get<std::int64_t>()))) !=
              std::string::npos);
        if (c.contains("seed001_bug_output")) {
          const auto bug = attn::read_npy(attn::testing::fixture_path(
              lesson + "/" + c["seed001_bug_output"].get<std::string>()));
          CHECK_ALLCLOSE(attn::read_npy((scratch.path / "out/output_seed001_bug.npy").string()),
                         bug);
        }
      }
    }
  }
}

TEST_CASE("saved weights read back through --weights, in both formats", "[cli][weights]") {
  ScratchDir scratch("save-weights");
  for (const std::string file : {"w.safetensors", "w.npz"}) {
    DYNAMIC_SECTION(file) {
      const std::string path = (scratch.path / file).string();
      const auto first = run_attn(
          {"multi-head", "--variant", "book", "--seed", "3", "--save-weights", path, "--quiet"});
      REQUIRE(first.exit_code == 0);
      const attn::StateDict saved = attn::read_weights(path);
      const auto expected =
          attn::state_dict_entries(attn::describe_multi_head(attn::MultiHeadVariant::book, 6, 2));
      REQUIRE(saved.size() == expected.size());
      for (const auto& e : expected)
        CHECK(saved.at(e.key).shape == e.shape);
      // Other seed, same weights: the input changes, so compare with the first run on its input.
      const auto again = run_attn(
          {"multi-head", "--variant", "book", "--seed", "3", "--weights", path, "--quiet"});
      REQUIRE(again.exit_code == 0);
      CHECK(again.out == first.out);
    }
  }
}

TEST_CASE("summary prints torchinfo's tables byte for byte", "[cli][summary]") {
  const std::string golden = std::string(ATTN_GOLDEN_DIR) + "/torchinfo/";
  const std::vector<std::string> seed_columns = {
      "--col-names", "input_size,output_size,kernel_size,num_params,mult_adds", "--col-width",
      "16"};
  struct Case {
    std::vector<std::string> args;
    std::string file;
  };
  const std::vector<std::string> self = {"summary", "self-attention", "--batch", "4", "--seq",
                                         "5",       "--d-model",      "6"};
  const std::vector<std::string> wide = {"summary", "multi-head", "--variant", "wide",
                                         "--heads", "8",          "--batch",   "4",
                                         "--seq",   "5",          "--d-model", "6"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::vector<Case> cases = {
      {self, "01_seed004_selfattention_k6__defaultcols__depthdefault.txt"},
      {with(with(self, seed_columns), {"--verbose", "2"}),
       "01_seed004_selfattention_k6__seedcols_verbose2__depthdefault.txt"},
      {with(with(wide, seed_columns), {"--depth", "3"}),
       "02_seed004_mha_wide_k6_h8__seedcols_verbose1__depth3.txt"},
      {with(with(wide, seed_columns), {"--verbose", "2"}),
       "02_seed004_mha_wide_k6_h8__seedcols_verbose2__depthdefault.txt"},
      {with(with(self, seed_columns), {"--verbose", "2", "--torchinfo-format", "0.1"}),
       "v0.1.0/01_seed004_selfattention_k6__seedcols_verbose2__depthdefault.txt"},
      {with(with(wide, seed_columns), {"--verbose", "2", "--torchinfo-format", "0.1"}),
       "v0.1.0/02_seed004_mha_wide_k6_h8__seedcols_verbose2__depthdefault.txt"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.file) {
      const auto result = run_attn(c.args);
      INFO(result.err);
      REQUIRE(result.exit_code == 0);
      CHECK(result.out == attn::testing::read_text(golden + c.file));
    }
  }
  const auto json = run_attn(with(wide, {"--format", "json"}));
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["total_params"] == 1158);
  CHECK(doc["layers"].size() == 5);
  CHECK(doc["layers"][1]["var_name"] == "toqueries");
  CHECK(doc["state_dict"][0]["key"] == "tokeys.weight");
}

TEST_CASE("bad input to attention, multi-head and summary: one line, exit 2", "[cli][bad-input]") {
  ScratchDir scratch("attention-bad");
  const std::string other = (scratch.path / "wide.safetensors").string();
  REQUIRE(
      run_attn({"multi-head", "--variant", "wide", "--save-weights", other, "--quiet"}).exit_code ==
      0);
  const std::string corrupt = (scratch.path / "corrupt.safetensors").string();
  {
    std::ofstream f(corrupt, std::ios::binary);
    f << std::string("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}", 16);
  }
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  const std::vector<Case> cases = {
      {{"multi-head", "--d-model", "10", "--heads", "4"}, "d_model=10 is not divisible by heads=4"},
      {{"multi-head", "--heads", "0"}, "--heads"},
      {{"multi-head", "--variant", "book", "--weights", other}, "missing heads.0.q.weight"},
      {{"multi-head", "--variant", "wide", "--heads", "3", "--weights", other},
       "tokeys.weight is (12, 6) but the model needs (18, 6)"},
      {{"multi-head", "--weights", other}, "add --variant"},
      {{"attention", "--weights", corrupt}, "--weights"},
      {{"attention", "--weights", (scratch.path / "missing.npz").string()}, "does not exist"},
      {{"attention", "--weights", (scratch.path / "model.pt").string()}, "does not exist"},
      {{"attention", "--mask", "causal", "--lengths", "0"}, "--lengths"},
      {{"attention", "--lengths", "3,x"}, "--lengths"},
      {{"attention", "--batch", "2", "--lengths", "3"}, "1 lengths for a batch of 2"},
      {{"attention", "--lengths", "9"}, "outside 1..5"},
      {{"attention", "--head-size", "3"}, "--head-size"},
      {{"attention", "--variant", "wide"}, "--variant"},
      {{"summary", "encoder-decoder"}, "encoder-decoder"},
      {{"summary", "self-attention", "--col-names", "output_size,flops"}, "flops"},
      {{"summary", "multi-head", "--d-model", "10", "--heads", "4"}, "not divisible"},
      {{"summary", "self-attention", "--verbose", "3"}, "--verbose"},
      {{"summary"}, "model"},
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
  // A .pt file that exists is refused with how to convert it.
  const std::string pickle = (scratch.path / "model.pt").string();
  std::ofstream(pickle, std::ios::binary) << "PK\x03\x04";
  const auto refused = run_attn({"attention", "--weights", pickle});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("safetensors") != std::string::npos);
}

TEST_CASE("multi-head's compare view and --variant NAME use the same weights for a seed",
          "[cli][multi-head]") {
  for (const std::string seed : {"0", "5"}) {
    const auto output_of = [&](const std::vector<std::string>& extra) {
      std::vector<std::string> args = {"multi-head", "--seed",   seed,  "--seq",
                                       "4",          "--format", "json"};
      args.insert(args.end(), extra.begin(), extra.end());
      const auto run = run_attn(args);
      REQUIRE(run.exit_code == 0);
      std::map<std::string, nlohmann::json> steps;
      const auto doc = nlohmann::json::parse(run.out);
      for (const auto& step : doc["steps"])
        steps[step["name"].get<std::string>()] = step["values"];
      return steps;
    };
    const auto compare = output_of({});
    INFO("seed " << seed);
    // The compare view's last step is the book variant's output.
    CHECK(compare.at("output") == output_of({"--variant", "book"}).at("output"));
    for (const std::string variant : {"narrow", "wide", "fused"}) {
      CHECK(compare.at(variant + "_output") == output_of({"--variant", variant}).at("output"));
    }
  }
}

TEST_CASE("heatmap scales: per row where every weight is small, fixed on request, and back",
          "[cli][heatmap]") {
  const auto map_of = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"attention", "--color", "never"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto run = run_attn(args);
    REQUIRE(run.exit_code == 0);
    return run.out;
  };
  // Untrained weights at T = 5: every weight is below 0.5, so the default scales per row.
  const std::string automatic = map_of({});
  CHECK(automatic.find("scale per row: 0 [ ░▒▓█] row max; H = entropy / ln n (1 uniform)") !=
        std::string::npos);
  CHECK(automatic == map_of({"--heatmap-scale", "row"}));
  const std::string fixed = map_of({"--heatmap-scale", "fixed"});
  CHECK(fixed.find("scale 0.00 [ ░▒▓█] 1.00 (steps of 0.20)") != std::string::npos);
  CHECK(fixed.find(" max 0.") == std::string::npos);
  // A causal mask puts weight 1 on the first query's only key: the fixed 0..1 scale by default.
  CHECK(map_of({"--mask", "causal"}).find("scale 0.00 [ ░▒▓█] 1.00") != std::string::npos);
  // The heatmaps are text only: JSON holds the steps, whatever the scale.
  CHECK(run_attn({"attention", "--format", "json"}).out ==
        run_attn({"attention", "--format", "json", "--heatmap-scale", "fixed"}).out);
}
