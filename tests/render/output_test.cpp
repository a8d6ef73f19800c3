// render/: a LessonRun as text and JSON, and its outputs written all or nothing, without the CLI.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "json.hpp"
#include "save.hpp"
#include "scratch.hpp"
#include "text.hpp"

namespace fs = std::filesystem;
using attn::lessons::LessonRun;
using attn::render::OutputOptions;

namespace {

// A small run with every kind of item.
LessonRun sample_run() {
  LessonRun run("dot-product");  // a lesson with a "checks" section in its text
  run.setting("seed", "3");
  run.setting("seq", "2");
  run.listing("tokens", std::vector<std::string>{"time", "flies"});
  run.step("input", "X", attn::make_float32({1, 2, 2}, {1.0f, 2.0f, 3.0f, 4.0f}));
  run.check("it holds", true, "max |difference| = 0");
  run.table({"a table", {"name", "count"}, {{"x", "1"}, {"why", "12"}}});
  run.step("output", "Y", attn::make_float32({1, 2}, {0.5f, -0.25f}));
  run.parameters = 1234;
  run.state_dict["w"] = attn::make_float32({2}, {1.0f, 2.0f});
  return run;
}

// What write_outputs printed, from a temporary file that stands in for stdout.
std::string printed(const LessonRun& run, const OutputOptions& options) {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  attn::render::write_outputs(run, options, out);
  std::rewind(out);
  std::string text;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, out)) > 0)
    text.append(buffer, n);
  std::fclose(out);
  return text;
}

}  // namespace

TEST_CASE("text: the settings line, each step as torch prints it, checks, tables, the count",
          "[render][text]") {
  OutputOptions options;
  const std::string text = attn::render::render_text(sample_run(), options, false);
  CHECK(text.starts_with("attn dot-product  (seed 3, seq 2)\n"));
  CHECK(text.find("[1/2] input, shape (1, 2, 2): X\ntensor([[[1., 2.],\n         [3., 4.]]])\n") !=
        std::string::npos);
  CHECK(text.find("✓ it holds: max |difference| = 0\n") != std::string::npos);
  CHECK(text.find("  name  count\n") != std::string::npos);  // numbers right-aligned
  CHECK(text.find("  why      12\n") != std::string::npos);
  CHECK(text.ends_with("Parameters: 1,234\n"));
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(attn::render::render_text(sample_run(), options, true).find("\x1b[") != std::string::npos);
  options.quiet = true;
  const std::string quiet = attn::render::render_text(sample_run(), options, false);
  CHECK(quiet ==
        "[2/2] output, shape (1, 2): Y\ntensor([[ 0.5000, -0.2500]])\n\nParameters: 1,234\n");
}

TEST_CASE("JSON: settings as numbers, listings, steps with their values, checks and tables",
          "[render][json]") {
  const auto doc = nlohmann::json::parse(attn::render::render_json(sample_run()));
  CHECK(doc["lesson"] == "dot-product");
  CHECK(doc["settings"]["seed"] == 3);
  CHECK(doc["tokens"] == std::vector<std::string>{"time", "flies"});
  REQUIRE(doc["steps"].size() == 2);
  CHECK(doc["steps"][1]["values"] == nlohmann::json::parse("[[0.5, -0.25]]"));
  CHECK(doc["steps"][0]["shape"] == std::vector<int>{1, 2, 2});
  CHECK(doc["checks"][0]["passed"] == true);
  CHECK(doc["tables"][0]["rows"][1][1] == "12");
  CHECK(doc["parameters"] == 1234);
}

TEST_CASE("write_outputs: the save, the weights and stdout, and a save replaced whole",
          "[render][save]") {
  attn::testing::ScratchDir scratch("render-save");
  OutputOptions options;
  options.save_dir = (scratch.path / "out").string();
  options.save_weights = (scratch.path / "w.safetensors").string();
  const std::string text = printed(sample_run(), options);
  CHECK(text == attn::render::render_text(sample_run(), options, false));
  const auto manifest = nlohmann::json::parse(
      attn::testing::read_text((scratch.path / "out/manifest.json").string()));
  CHECK(manifest["steps"].size() == 2);
  CHECK(attn::read_npy((scratch.path / "out/output.npy").string()).shape == attn::Shape{1, 2});
  CHECK(attn::read_weights(options.save_weights).at("w").shape == attn::Shape{2});

  // Again, as JSON: the save is replaced, nothing else is left beside it.
  options.format = attn::render::Format::json;
  options.save_weights.clear();
  CHECK(nlohmann::json::parse(printed(sample_run(), options))["lesson"] == "dot-product");
  std::size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(scratch.path)) {
    CHECK(entry.path().filename().string().find(".attn-") == std::string::npos);
    ++entries;
  }
  CHECK(entries == 2);  // out and w.safetensors
}

TEST_CASE("check_outputs: refusals name the user's path and are about save or save_weights",
          "[render][save]") {
  attn::testing::ScratchDir scratch("render-refuse");
  fs::create_directories(scratch.path / "mine");
  std::ofstream(scratch.path / "mine/notes.txt") << "keep\n";
  OutputOptions options;
  options.save_dir = (scratch.path / "mine").string();
  try {
    attn::render::check_outputs(options);
    FAIL("a folder of someone's files was accepted");
  } catch (const attn::Error& e) {
    CHECK(e.subject() == "save");
    CHECK(e.detail().find("mine") != std::string::npos);
    CHECK(e.detail().find("--") == std::string::npos);  // options are the CLI's to name
  }
  options.save_dir.clear();
  options.save_weights = (scratch.path / "w.pt").string();
  try {
    attn::render::check_outputs(options);
    FAIL("a pickle name was accepted");
  } catch (const attn::Error& e) {
    CHECK(e.subject() == "save_weights");
    CHECK(e.detail().find("not PyTorch pickles") != std::string::npos);
  }
  CHECK(fs::exists(scratch.path / "mine/notes.txt"));
}
