// attn positional-encoding from the command line: golden stdout, JSON, --save, PyTorch parity
// through --input/--weights/--save, --save-weights round trips, and every bad input.
#include <unistd.h>

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
const std::string kLesson = "positional-encoding";
std::vector<std::string> step_names(const nlohmann::json& doc) {
  std::vector<std::string> names;
  for (const auto& s : doc["steps"])
    names.push_back(s["name"]);
  return names;
}

std::string fixture(const std::string& file) {
  return attn::testing::fixture_path(kLesson + "/" + file);
}
}  // namespace

TEST_CASE("positional-encoding golden stdout", "[cli][golden][positional-encoding]") {
  check_golden("positional-encoding", {kLesson});
  check_golden("positional-encoding_learned",
               {kLesson, "--kind", "learned", "--batch", "2", "--seq", "4", "--max-positions", "8",
                "--seed", "3"});
  check_golden("positional-encoding_odd_d7", {kLesson, "--d-model", "7", "--seq", "6"});
  check_golden("positional-encoding_t24_d48",
               {kLesson, "--seq", "24", "--d-model", "48", "--seed", "1"});
  check_golden("positional-encoding_one_token_quiet", {kLesson, "--seq", "1", "--quiet"});
  // No locale: the heatmap falls back to ASCII.
  check_golden("positional-encoding_learned_ascii",
               {kLesson, "--kind", "learned", "--seq", "3", "--d-model", "4"},
               {"NO_COLOR", "TERM=xterm", "LC_ALL", "LC_CTYPE", "LANG"});
  // Reruns are byte-identical; another seed changes the input.
  const auto a = run_attn({kLesson, "--seed", "99", "--batch", "2"});
  const auto b = run_attn({kLesson, "--seed", "99", "--batch", "2"});
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);
  CHECK(run_attn({kLesson, "--seed", "100", "--batch", "2"}).out != a.out);
}

TEST_CASE("positional-encoding json: steps, checks, settings and parameters",
          "[cli][json][positional-encoding]") {
  SECTION("sinusoidal") {
    const auto result =
        run_attn({kLesson, "--format", "json", "--seed", "5", "--batch", "2", "--seq", "3"});
    REQUIRE(result.exit_code == 0);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["lesson"] == kLesson);
    CHECK(doc["settings"]["seed"] == 5);
    CHECK(doc["settings"]["kind"] == "sinusoidal");
    CHECK(doc["settings"]["max-positions"] == 512);
    CHECK(step_names(doc) ==
          std::vector<std::string>{"input", "div_term", "pe", "pe_dot", "output"});
    CHECK(doc["steps"][1]["shape"] == std::vector<int>{3});
    CHECK(doc["steps"][2]["shape"] == std::vector<int>{3, 6});
    CHECK(doc["steps"][2]["values"][0] == std::vector<double>{0, 1, 0, 1, 0, 1});
    CHECK(doc["steps"][4]["shape"] == std::vector<int>{2, 3, 6});
    REQUIRE(doc["checks"].size() == 6);  // offsets, rotation, two projected, two permutation
    for (const auto& c : doc["checks"])
      CHECK(c["passed"] == true);
    CHECK(doc["parameters"] == 0);
  }
  SECTION("learned") {
    const auto result = run_attn(
        {kLesson, "--kind", "learned", "--format", "json", "--seq", "3", "--max-positions", "10"});
    REQUIRE(result.exit_code == 0);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["settings"]["kind"] == "learned");
    CHECK(step_names(doc) == std::vector<std::string>{"input", "pe", "output"});
    CHECK(doc["tables"][0]["rows"][0] == std::vector<std::string>{"weight", "(10, 6)", "60"});
    REQUIRE(doc["checks"].size() == 2);
    CHECK(doc["parameters"] == 60);
  }
}

TEST_CASE("positional-encoding --save: output minus input is the table",
          "[cli][save][positional-encoding]") {
  ScratchDir scratch("save");
  for (const std::string kind : {"sinusoidal", "learned"}) {
    DYNAMIC_SECTION(kind) {
      const fs::path dir = scratch.path / kind;
      const auto result =
          run_attn({kLesson, "--kind", kind, "--batch", "2", "--seq", "5", "--save", dir.string()});
      REQUIRE(result.exit_code == 0);
      CHECK(fs::exists(dir / "manifest.json"));
      const auto x = attn::read_npy((dir / "input.npy").string());
      const auto pe = attn::read_npy((dir / "pe.npy").string());
      const auto y = attn::read_npy((dir / "output.npy").string());
      REQUIRE(pe.shape == attn::Shape{5, 6});
      REQUIRE(y.shape == attn::Shape{2, 5, 6});
      std::vector<float> difference;
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 30; ++i)
          difference.push_back(static_cast<float>(y.real(b * 30 + i) - x.real(b * 30 + i)));
      for (std::size_t b = 0; b < 2; ++b) {
        const std::vector<float> row(difference.begin() + static_cast<std::ptrdiff_t>(b * 30),
                                     difference.begin() + static_cast<std::ptrdiff_t>(b * 30 + 30));
        CHECK_ALLCLOSE(attn::make_float32({5, 6}, row), pe, attn::testing::Tolerance{1e-6, 1e-6});
      }
    }
  }
}

TEST_CASE("positional-encoding equals PyTorch through --input, --weights and --save",
          "[cli][parity][positional-encoding]") {
  const auto cases = nlohmann::json::parse(attn::testing::read_text(fixture("cases.json")));
  REQUIRE(cases.size() >= 8);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    DYNAMIC_SECTION(name) {
      ScratchDir scratch("parity-" + name);
      std::vector<std::string> args = {kLesson, "--input", fixture(c["input"]), "--save",
                                       (scratch.path / "out").string()};
      if (c.contains("weights")) args.insert(args.end(), {"--weights", fixture(c["weights"])});
      for (const auto& a : c["args"])
        args.push_back(a);
      const auto result = run_attn(args);
      INFO("stderr: " << result.err);
      REQUIRE(result.exit_code == 0);
      const auto expected = attn::read_npy(fixture(c["output"]));
      const auto got = attn::read_npy((scratch.path / "out/output.npy").string());
      const auto pe = attn::read_npy((scratch.path / "out/pe.npy").string()),
                 expected_pe = attn::read_npy(fixture(c["pe"]));
      CHECK_ALLCLOSE(got, expected);
      CHECK_ALLCLOSE(pe, expected_pe);
      // Bit for bit too: the table and X + PE are plain IEEE float operations (SLEEF's sin and cos
      // in portable code; no BLAS, no libm, no FMA), the same on every x86-64 CPU.
      CHECK(got.bytes == expected.bytes);
      CHECK(pe.bytes == expected_pe.bytes);
      CHECK_PRINTED(result.out, attn::testing::read_text(fixture(c["repr"])));
      CHECK(result.out.find(fmt::format("Parameters: {}\n",
                                        attn::with_commas(c["parameters"].get<std::int64_t>()))) !=
            std::string::npos);
    }
  }
}

TEST_CASE("positional-encoding --save-weights reads back through --weights",
          "[cli][weights][positional-encoding]") {
  ScratchDir scratch("weights");
  for (const std::string file : {"w.safetensors", "w.npz"}) {
    DYNAMIC_SECTION(file) {
      const std::string path = (scratch.path / file).string();
      const auto first = run_attn({kLesson, "--kind", "learned", "--seed", "3", "--max-positions",
                                   "9", "--save-weights", path, "--quiet"});
      REQUIRE(first.exit_code == 0);
      const attn::StateDict saved = attn::read_weights(path);
      REQUIRE(saved.size() == 1);
      CHECK(saved.at("weight").shape == attn::Shape{9, 6});
      // The same seed, the table from the file, and P from its rows (no --max-positions).
      const auto again =
          run_attn({kLesson, "--kind", "learned", "--seed", "3", "--weights", path, "--quiet"});
      REQUIRE(again.exit_code == 0);
      CHECK(again.out == first.out);
      const auto json =
          run_attn({kLesson, "--kind", "learned", "--weights", path, "--format", "json"});
      CHECK(nlohmann::json::parse(json.out)["settings"]["max-positions"] == 9);
    }
  }
}

TEST_CASE("bad input to positional-encoding: one line, exit 2, nothing on stdout",
          "[cli][bad-input][positional-encoding]") {
  ScratchDir scratch("bad");
  const std::string table = (scratch.path / "p9_d6.safetensors").string();
  REQUIRE(run_attn({kLesson, "--kind", "learned", "--max-positions", "9", "--save-weights", table,
                    "--quiet"})
              .exit_code == 0);
  const std::string corrupt = (scratch.path / "corrupt.safetensors").string();
  std::ofstream(corrupt, std::ios::binary)
      << std::string("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}", 16);
  const std::string long_input = (scratch.path / "t20.npy").string();
  attn::write_npy(long_input, attn::make_float32({1, 20, 6}, std::vector<float>(120, 0.5f)));
  const fs::path save = scratch.path / "never";
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  const std::vector<Case> cases = {
      {{kLesson, "--seq", "600"}, "--seq 600 is more than the 512 positions"},
      {{kLesson, "--kind", "learned", "--max-positions", "3"}, "give --max-positions 5 or more"},
      {{kLesson, "--max-positions", "4", "--seq", "5", "--save", save.string()}, "--max-positions"},
      {{kLesson, "--kind", "learned", "--input", long_input, "--max-positions", "9"},
       "the input has T=20 tokens"},
      {{kLesson, "--kind", "learned", "--input", long_input, "--weights", table},
       "the 9 rows of the table in --weights"},
      {{kLesson, "--max-positions", "0"}, "--max-positions"},
      {{kLesson, "--max-positions", "x"}, "not a size"},
      {{kLesson, "--kind", "rotary"}, "--kind"},
      {{kLesson, "--weights", table}, "add --kind learned"},
      {{kLesson, "--save-weights", (scratch.path / "w.npz").string()}, "no weights to save"},
      {{kLesson, "--kind", "learned", "--weights", table, "--d-model", "8"}, "weight"},
      {{kLesson, "--kind", "learned", "--weights", table, "--max-positions", "12"}, "weight"},
      {{kLesson, "--kind", "learned", "--weights", corrupt}, "--weights"},
      {{kLesson, "--kind", "learned", "--weights", (scratch.path / "missing.npz").string()},
       "does not exist"},
      {{kLesson, "--kind", "learned", "--save-weights", (scratch.path / "w.pt").string()},
       "--save-weights"},
      {{kLesson, "--max-positions", "1000000", "--d-model", "1000"},
       "the angles, their sines and cosines"},
      {{kLesson, "--seq", "0"}, "--seq"},
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
  CHECK_FALSE(fs::exists(save));
  CHECK_FALSE(fs::exists(scratch.path / "w.npz"));
  CHECK_FALSE(fs::exists(scratch.path / "w.pt"));
}

TEST_CASE(
    "attn summary positional-encoding: seed 001's PositionalEncoding, or the book's learned table",
    "[cli][summary][positional-encoding]") {
  // The lesson's default, seed 001's sinusoids: a buffer and a dropout, no parameter.
  const auto sinusoidal =
      run_attn({"summary", "positional-encoding", "--d-model", "768", "--format", "json"});
  INFO("stderr: " << sinusoidal.err);
  REQUIRE(sinusoidal.exit_code == 0);
  const auto table = nlohmann::json::parse(sinusoidal.out);
  CHECK(table["total_params"] == 0);
  CHECK(table["class_name"] == "PositionalEncoding");
  CHECK(table["input_size"] == std::vector<int>{1, 5, 768});
  REQUIRE(table["layers"].size() == 2);
  CHECK(table["layers"][1]["class_name"] == "Dropout");
  CHECK(table["state_dict"].empty());

  const auto result = run_attn({"summary", "positional-encoding", "--kind", "learned", "--d-model",
                                "768", "--format", "json"});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  const auto doc = nlohmann::json::parse(result.out);
  CHECK(doc["total_params"] == 393216);  // sum(p.numel()) of nn.Embedding(512, 768)
  CHECK(doc["class_name"] == "Embedding");
  CHECK(doc["input_size"] == std::vector<int>{1, 5});
  REQUIRE(doc["layers"].size() == 1);
  CHECK(doc["layers"][0]["output_shape"] == std::vector<int>{1, 5, 768});
  CHECK(doc["state_dict"][0]["key"] == "weight");
  CHECK(doc["state_dict"][0]["shape"] == std::vector<int>{512, 768});
  const auto small = run_attn({"summary", "positional-encoding", "--kind", "learned",
                               "--max-positions", "16", "--format", "json"});
  CHECK(nlohmann::json::parse(small.out)["total_params"] == 96);
  for (const char* kind : {"sinusoidal", "learned"}) {
    const auto bad = run_attn({"summary", "positional-encoding", "--kind", kind, "--seq", "600"});
    CHECK(bad.exit_code == 2);
    CHECK(attn::testing::line_count(bad.err) == 1);
    CHECK(bad.out.empty());
    CHECK(bad.err.find("--max-positions 600") != std::string::npos);
  }
}
