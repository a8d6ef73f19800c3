// Every lesson from the command line: whole stdout against a golden file at a fixed seed, the
// JSON document, --save, --quiet, colour and determinism.
#include <filesystem>
#include <fstream>
#include <map>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "catalog.hpp"
#include "fixtures.hpp"
#include "golden.hpp"
#include "io/npy.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::check_golden;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {
// Every lesson of the catalog, and those that take the common options (--batch, --seq, --input):
// not tokens and encoder (text and ids), nor train (a task's own sequences; tests/cli/train_test),
// nor generate (a checkpoint's source text; tests/cli/generate_test), nor gpt (a text;
// tests/cli/gpt_cli_test), nor bpe (a text to train a tokenizer on; tests/cli/bpe_cli_test), nor
// heads (a model's probe sequences; tests/cli/heads_test), nor lens (a decoder's text;
// tests/cli/lens_cli_test), nor patch (two texts; tests/cli/patch_cli_test), nor induction (a
// trained folder; tests/cli/heads_test).
std::vector<std::string> lesson_names(bool only_common_options) {
  std::vector<std::string> names;
  for (const attn::lessons::LessonInfo& lesson : attn::lessons::catalog()) {
    const bool common = lesson.name != "tokens" && lesson.name != "encoder" &&
                        lesson.name != "train" && lesson.name != "generate" &&
                        lesson.name != "gpt" && lesson.name != "bpe" && lesson.name != "heads" &&
                        lesson.name != "lens" && lesson.name != "patch" &&
                        lesson.name != "induction";
    if (!only_common_options || common) names.emplace_back(lesson.name);
  }
  return names;
}
const std::vector<std::string> kAllLessons = lesson_names(false);
const std::vector<std::string> kLessons = lesson_names(true);
}  // namespace

TEST_CASE("golden stdout: each lesson at its defaults", "[cli][golden]") {
  for (const std::string& lesson : kAllLessons) {
    DYNAMIC_SECTION(lesson) {
      check_golden(lesson, {lesson});
    }
  }
}

TEST_CASE("golden stdout: other seeds, sizes and options", "[cli][golden]") {
  check_golden("dot-product_seed7_b2_t3_d4",
               {"dot-product", "--seed", "7", "--batch", "2", "--seq", "3", "--d-model", "4"});
  check_golden("scaling_seed3_t4_d8_quiet",
               {"scaling", "--seed", "3", "--seq", "4", "--d-model", "8", "--quiet"});
  check_golden("softmax_causal_temperature",
               {"softmax", "--mask", "causal", "--temperature", "0.5", "--seq", "4"});
  check_golden("dot-product_precision2", {"dot-product", "--precision", "2", "--quiet"});
  check_golden("dot-product_full",
               {"dot-product", "--seq", "40", "--d-model", "30", "--full", "--quiet"});
  check_golden("dot-product_summarised",
               {"dot-product", "--seq", "40", "--d-model", "30", "--quiet"});
  check_golden("attention_head_causal_lengths",
               {"attention", "--variant", "head", "--head-size", "4", "--batch", "2", "--mask",
                "causal", "--lengths", "5,3"});
  check_golden("multi-head_fused",
               {"multi-head", "--variant", "fused", "--heads", "3", "--seq", "4"});
  // No locale: the heatmap falls back to ASCII.
  check_golden("multi-head_wide_ascii",
               {"multi-head", "--variant", "wide", "--heads", "2", "--seq", "3", "--d-model", "4"},
               {"NO_COLOR", "TERM=xterm", "LC_ALL", "LC_CTYPE", "LANG"});
}

TEST_CASE("the same command gives byte-identical output", "[cli]") {
  for (const std::string& lesson : kLessons) {
    DYNAMIC_SECTION(lesson) {
      const auto a = run_attn({lesson, "--seed", "99", "--batch", "2"});
      const auto b = run_attn({lesson, "--seed", "99", "--batch", "2"});
      REQUIRE(a.exit_code == 0);
      CHECK(a.out == b.out);
      const auto c = run_attn({lesson, "--seed", "100", "--batch", "2"});
      CHECK(a.out != c.out);
    }
  }
}

TEST_CASE("json output is one document with every step, check and the parameter count",
          "[cli][json]") {
  for (const std::string& lesson : kLessons) {
    DYNAMIC_SECTION(lesson) {
      const auto result =
          run_attn({lesson, "--format", "json", "--seed", "5", "--batch", "2", "--seq", "3"});
      REQUIRE(result.exit_code == 0);
      const auto doc = nlohmann::json::parse(result.out);
      CHECK(doc["lesson"] == lesson);
      CHECK(doc["settings"]["seed"] == 5);
      CHECK(doc["settings"]["batch"] == 2);
      const std::map<std::string, int> parameters = {
          {"attention", 108},       {"multi-head", 168}, {"layer-norm", 12},
          {"feed-forward", 318},    {"backward", 126},  // backward: the head's three Linear(6, 6)
          {"cross-attention", 144},  // W_Q, W_K, W_V, W_O: Linear(6, 6) without bias
          {"decoder", 580}};         // the block 508, the final norm 2, Linear(6, 10) 70
      CHECK(doc["parameters"] == (parameters.count(lesson) ? parameters.at(lesson) : 0));
      const auto& steps = doc["steps"];
      REQUIRE(steps.size() >= 3);
      CHECK(steps.front()["name"] == "input");
      CHECK(steps.back()["name"] == "output");
      for (const auto& step : steps) {
        CHECK(step["dtype"] == "float32");
        // values nest as deep as the shape and hold as many numbers
        std::size_t count = 1;
        for (std::size_t s : step["shape"].get<std::vector<std::size_t>>())
          count *= s;
        std::size_t seen = 0;
        std::function<void(const nlohmann::json&, std::size_t)> walk = [&](const nlohmann::json& v,
                                                                           std::size_t depth) {
          if (v.is_array()) {
            CHECK(v.size() == step["shape"][depth].get<std::size_t>());
            for (const auto& e : v)
              walk(e, depth + 1);
          } else {
            CHECK(depth == step["shape"].size());
            CHECK(v.is_number());
            ++seen;
          }
        };
        walk(step["values"], 0);
        CHECK(seen == count);
      }
      REQUIRE_FALSE(doc["checks"].empty());
      for (const auto& check : doc["checks"])
        CHECK(check["passed"] == true);
    }
  }
}

TEST_CASE("save writes every step and a manifest, and the files reload and match the JSON",
          "[cli][save]") {
  for (const std::string& lesson : kLessons) {
    DYNAMIC_SECTION(lesson) {
      ScratchDir scratch("save-" + lesson);
      const fs::path dir = scratch.path / "steps";
      const auto saved = run_attn({lesson, "--seed", "4", "--batch", "2", "--save", dir.string()});
      REQUIRE(saved.exit_code == 0);
      const auto json = nlohmann::json::parse(
          run_attn({lesson, "--seed", "4", "--batch", "2", "--format", "json"}).out);
      const auto manifest =
          nlohmann::json::parse(attn::testing::read_text((dir / "manifest.json").string()));
      CHECK(manifest["lesson"] == lesson);
      REQUIRE(manifest["steps"].size() == json["steps"].size());
      CHECK(manifest["steps"].front()["name"] == "input");
      CHECK(manifest["steps"].back()["name"] == "output");
      std::size_t files = 0;
      for (const auto& entry : fs::directory_iterator(dir))
        files += entry.path().extension() == ".npy";
      CHECK(files == manifest["steps"].size());
      for (std::size_t i = 0; i < manifest["steps"].size(); ++i) {
        const auto& step = manifest["steps"][i];
        CHECK(step["name"] == json["steps"][i]["name"]);
        CHECK(step["file"] == step["name"].get<std::string>() + ".npy");
        const attn::Array a = attn::read_npy((dir / step["file"].get<std::string>()).string());
        CHECK(a.shape == step["shape"].get<attn::Shape>());
        CHECK(a.dtype == attn::Dtype::float32);
        // The JSON values are the shortest decimals of the same floats.
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
      // Saving again over an earlier save replaces it.
      CHECK(run_attn({lesson, "--seed", "5", "--save", dir.string()}).exit_code == 0);
      CHECK(nlohmann::json::parse(attn::testing::read_text(
                (dir / "manifest.json").string()))["settings"]["seed"] == "5");
    }
  }
}

TEST_CASE("an input file runs a lesson on the given tensor, and --save's input step is that tensor",
          "[cli][save]") {
  ScratchDir scratch("input");
  const std::string input = attn::testing::fixture_path("dot-product/b2_t5_d12_input.npy");
  const fs::path dir = scratch.path / "out";
  const auto result = run_attn({"dot-product", "--input", input, "--save", dir.string()});
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("(input " + input) != std::string::npos);
  CHECK_ALLCLOSE(attn::read_npy((dir / "input.npy").string()), attn::read_npy(input),
                 attn::testing::Tolerance{0, 0});
}

TEST_CASE("quiet output leaves the result and the parameter count", "[cli]") {
  const auto result = run_attn({"softmax", "--quiet"});
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.rfind("[6/6] output, shape (1, 5, 5)", 0) == 0);
  CHECK(result.out.find("Parameters: 0") != std::string::npos);
  CHECK(result.out.find("Softmax turns") == std::string::npos);
}

TEST_CASE("colour: on with --color always, off under NO_COLOR and when piped", "[cli][color]") {
  const auto piped = run_attn({"dot-product"});
  CHECK(piped.out.find('\x1b') == std::string::npos);
  const auto forced = run_attn({"dot-product", "--color", "always"}, {"NO_COLOR=1"});
  CHECK(forced.out.find("\x1b[") != std::string::npos);
  const auto never = run_attn({"dot-product", "--color", "never"});
  CHECK(never.out.find('\x1b') == std::string::npos);
  // Colour never touches the tensors: without the escapes the text is the plain text.
  std::string stripped;
  for (std::size_t i = 0; i < forced.out.size(); ++i) {
    if (forced.out[i] == '\x1b') {
      i = forced.out.find('m', i);
      continue;
    }
    stripped += forced.out[i];
  }
  CHECK(stripped == never.out);
}

TEST_CASE("attn list and attn --help name every lesson of the catalog in order", "[cli]") {
  const auto list = run_attn({"list"});
  REQUIRE(list.exit_code == 0);
  const auto help = run_attn({"--help"});
  REQUIRE(help.exit_code == 0);
  std::size_t last_in_list = 0, last_in_help = 0;
  for (const attn::lessons::LessonInfo& lesson : attn::lessons::catalog()) {
    INFO(lesson.name);
    const std::size_t in_list =
        list.out.find(fmt::format("{:02}  {} ", lesson.number, lesson.name));
    REQUIRE(in_list != std::string::npos);
    CHECK(in_list >= last_in_list);
    last_in_list = in_list;
    const std::size_t in_help = help.out.find(fmt::format("  {} ", lesson.name));
    REQUIRE(in_help != std::string::npos);
    CHECK(in_help >= last_in_help);
    last_in_help = in_help;
    // A lesson's help ends with its examples, which the determinism tests run.
    const auto own = run_attn({std::string(lesson.name), "--help"});
    CHECK(own.exit_code == 0);
    CHECK(own.out.find(fmt::format("Examples:\n  attn {} ", lesson.name)) != std::string::npos);
  }
}
