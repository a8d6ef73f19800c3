// attn train --model gpt from the command line: a short run on a text lowers its validation loss,
// proves its split, writes a Hugging Face GPT-2 folder that attn's other commands read; a folder
// attn wrote is read by PyTorch to the logits attn computes (data/make_gpt_folder_fixture.py),
// and a folder written today has that folder's files, keys and shapes; --resume continues a run
// to the bits of the run never stopped; bad inputs are refused in one line.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "paths.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::fixture_path;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A small text with a pattern a tiny model learns in a few dozen steps.
std::string small_corpus() {
  std::string text;
  const std::vector<std::string> lines = {"the whale swam far away.\n", "call me ishmael.\n",
                                          "the sea was grey and wide.\n", "a ship came near.\n"};
  for (int i = 0; i < 200; ++i)
    text += lines[static_cast<std::size_t>(i * 7 % 4)];
  return text;
}

const std::vector<std::string> kTiny = {"--layers", "1",       "--d-model", "16",        "--heads",
                                        "2",        "--block", "16",        "--threads", "1"};

std::vector<std::string> train(std::vector<std::string> more) {
  std::vector<std::string> args = {"train", "--model", "gpt"};
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

const nlohmann::json& step_of(const nlohmann::json& doc, const std::string& name) {
  for (const auto& s : doc["steps"])
    if (s["name"] == name) return s;
  FAIL("no step " << name);
  return doc;
}

}  // namespace

TEST_CASE("attn train --model gpt learns a text, proves its split and writes a GPT-2 folder",
          "[cli][gpt_train]") {
  ScratchDir dir("gpt-train");
  const fs::path corpus = dir.path / "corpus.txt";
  write_text(corpus, small_corpus());
  const fs::path folder = dir.path / "my-gpt";
  const auto r = run_attn(
      train({"--corpus", corpus.string(), "--steps", "60", "--lr", "0.01", "--eval-interval", "20",
             "--format", "json", "--save-checkpoint", folder.string()}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["settings"]["model"] == "gpt");
  CHECK(doc["settings"]["tokens"] == "characters");
  const auto& losses = step_of(doc, "validation_loss")["values"];
  REQUIRE(losses.size() == 4);  // steps 0, 20, 40, 60
  CHECK(losses[3].get<double>() < losses[0].get<double>() - 0.5);
  CHECK(step_of(doc, "evaluation_steps")["values"] == nlohmann::json::array({0, 20, 40, 60}));
  for (const auto& check : doc["checks"]) {
    INFO(check["name"] << ": " << check["detail"]);
    CHECK(check["passed"] == true);
  }
  // The folder: GPT2LMHeadModel's keys (the tied lm_head left out), the tokenizer's files.
  for (const char* name : {"config.json", "model.safetensors", "vocab.json", "merges.txt",
                           "tokenizer_config.json", "training_state.safetensors"})
    CHECK(fs::is_regular_file(folder / name));
  const auto config = nlohmann::json::parse(read_text(folder / "config.json"));
  CHECK(config["model_type"] == "gpt2");
  CHECK(config["architectures"] == nlohmann::json::array({"GPT2LMHeadModel"}));
  CHECK(config["n_positions"] == 16);
  const attn::StateDict weights = attn::read_weights((folder / "model.safetensors").string());
  CHECK(weights.size() == 2 + 12 + 2);
  CHECK(weights.count("transformer.h.0.attn.c_attn.weight") == 1);
  CHECK(weights.count("lm_head.weight") == 0);
  // attn's commands read it as any GPT-2 folder.
  const auto generated = run_attn({"generate", "--pretrained", folder.string(), "--text", "the ",
                                   "--max-new-tokens", "8", "--quiet"});
  INFO(generated.err);
  CHECK(generated.exit_code == 0);
  const auto summary = run_attn({"summary", "--pretrained", folder.string()});
  CHECK(summary.exit_code == 0);
  CHECK(summary.out.find("GPT2LMHeadModel") != std::string::npos);
  // A second run into the same folder replaces it: attn wrote it.
  const auto again = run_attn(train({"--corpus", corpus.string(), "--steps", "2",
                                     "--save-checkpoint", folder.string(), "--quiet"}));
  INFO(again.err);
  CHECK(again.exit_code == 0);
}

TEST_CASE("a GPT folder attn wrote gives PyTorch's logits, and attn still writes that folder",
          "[cli][gpt_train][parity]") {
  const fs::path fixture = fixture_path("gpt-folder/config.json");
  const fs::path folder = fixture.parent_path();
  ScratchDir dir("gpt-folder");
  // The prompt's first 15 tokens: causal, so their logits are the first 15 rows of the 16's.
  const auto r =
      run_attn({"generate", "--pretrained", folder.string(), "--text", "Call me Ishmael",
                "--max-new-tokens", "1", "--save", (dir.path / "out").string(), "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const attn::Array ids = attn::read_npy((dir.path / "out" / "input_ids.npy").string());
  const attn::Array want_ids = attn::read_npy((folder / "input_ids.npy").string());
  REQUIRE(ids.size() == 15);
  for (std::size_t i = 0; i < 15; ++i)
    CHECK(ids.integer(i) == want_ids.integer(i));
  attn::Array want = attn::read_npy((folder / "logits.npy").string());  // (1,16,80)
  const std::size_t vocab = want.shape[2];
  std::vector<float> first(15 * vocab);
  for (std::size_t i = 0; i < first.size(); ++i)
    first[i] = want.float32_at(i);
  CHECK_ALLCLOSE(attn::read_npy((dir.path / "out" / "logits.npy").string()),
                 attn::make_float32({1, 15, vocab}, first));

  // The same command today writes the same files, keys and shapes.
  const auto command = nlohmann::json::parse(read_text(folder / "command.json"))["command"];
  std::vector<std::string> args(command.begin() + 1, command.end());
  const fs::path fresh = dir.path / "fresh";
  args.insert(args.end(), {"--save-checkpoint", fresh.string(), "--quiet"});
  const auto written = run_attn(args);
  INFO(written.err);
  REQUIRE(written.exit_code == 0);
  for (const char* name : {"config.json", "vocab.json", "merges.txt", "tokenizer_config.json"}) {
    INFO(name);
    CHECK(read_text(fresh / name) == read_text(folder / name));
  }
  const attn::StateDict now = attn::read_weights((fresh / "model.safetensors").string());
  const attn::StateDict then = attn::read_weights((folder / "model.safetensors").string());
  REQUIRE(now.size() == then.size());
  for (const auto& [key, array] : then) {
    INFO(key);
    REQUIRE(now.count(key) == 1);
    CHECK(now.at(key).shape == array.shape);
    CHECK(now.at(key).dtype == array.dtype);
  }
}

TEST_CASE("a run stopped by --stop-after and resumed ends with the bits of the run never stopped",
          "[cli][gpt_train]") {
  ScratchDir dir("gpt-resume");
  const fs::path corpus = dir.path / "corpus.txt";
  write_text(corpus, small_corpus());
  const auto whole = run_attn(train({"--corpus", corpus.string(), "--steps", "30", "--quiet",
                                     "--save-checkpoint", (dir.path / "whole").string()}));
  REQUIRE(whole.exit_code == 0);
  const auto half =
      run_attn(train({"--corpus", corpus.string(), "--steps", "30", "--stop-after", "12", "--quiet",
                      "--save-checkpoint", (dir.path / "half").string()}));
  REQUIRE(half.exit_code == 0);
  const auto rest = run_attn({"train", "--model", "gpt", "--corpus", corpus.string(), "--resume",
                              (dir.path / "half").string(), "--threads", "1", "--format", "json",
                              "--save-checkpoint", (dir.path / "rest").string()});
  INFO(rest.err);
  REQUIRE(rest.exit_code == 0);
  CHECK(read_text(dir.path / "rest" / "model.safetensors") ==
        read_text(dir.path / "whole" / "model.safetensors"));
  const auto doc = nlohmann::json::parse(rest.out);
  CHECK(doc["settings"]["resumed"] == (dir.path / "half").string());
  CHECK(step_of(doc, "evaluation_steps")["values"].back() == 30);
  // Nothing left to train, or options the resumed run fixes: refused.
  const auto done = run_attn({"train", "--model", "gpt", "--corpus", corpus.string(), "--resume",
                              (dir.path / "whole").string()});
  CHECK(done.exit_code == 2);
  CHECK(done.err.find("already trained 30 steps of 30") != std::string::npos);
  const auto sizes = run_attn({"train", "--model", "gpt", "--corpus", corpus.string(), "--resume",
                               (dir.path / "half").string(), "--layers", "3"});
  CHECK(sizes.exit_code == 2);
  CHECK(sizes.err.find("--layers is the resumed run's own") != std::string::npos);
}

TEST_CASE("the default corpus is the shipped text, and a GPT-2 tokenizer's files tokenize it",
          "[cli][gpt_train]") {
  const auto r = run_attn(train({"--steps", "1", "--eval-interval", "1", "--format", "json"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["settings"]["corpus"] == "moby-dick.txt (shipped)");
  CHECK(doc["tables"][0]["rows"][2][1] == "998,212 characters, 80 distinct");
  ScratchDir dir("gpt-bpe");
  const fs::path corpus = dir.path / "corpus.txt";
  write_text(corpus, small_corpus());
  const std::string gpt2 = std::string(attn::testing::paths::kSourceDir) + "/data/gpt2";
  const auto bpe = run_attn(train(
      {"--corpus", corpus.string(), "--tokenizer", gpt2, "--steps", "2", "--format", "json"}));
  INFO(bpe.err);
  REQUIRE(bpe.exit_code == 0);
  const auto b = nlohmann::json::parse(bpe.out);
  CHECK(b["settings"]["tokens"] == gpt2);
  CHECK(b["tables"][0]["rows"][2][1].get<std::string>().find("of a vocabulary of 50,257") !=
        std::string::npos);
}

TEST_CASE("attn train --model gpt refuses bad input in one line", "[cli][gpt_train]") {
  ScratchDir dir("gpt-bad");
  const fs::path corpus = dir.path / "corpus.txt";
  write_text(corpus, small_corpus());
  const fs::path binary = dir.path / "binary.txt";
  write_text(binary, std::string("abc\xff\xfe def", 9));
  const fs::path tiny = dir.path / "tiny.txt";
  write_text(tiny, "too short");
  const fs::path foreign = dir.path / "notes";
  fs::create_directory(foreign);
  write_text(foreign / "todo.txt", "mine");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {train({"--corpus", (dir.path / "missing.txt").string()}), "does not exist"},
      {train({"--corpus", binary.string()}), "is not UTF-8 text (byte 0xff at offset 3)"},
      {train({"--corpus", tiny.string()}), "give a longer text or a smaller --block"},
      {train({"--corpus", corpus.string(), "--task", "sort"}), "--task is for --model encoder"},
      {{"train", "--model", "gpt", "--corpus", corpus.string(), "--d-model", "16", "--heads", "3"},
       "3 heads do not divide the width 16"},
      {train({"--corpus", corpus.string(), "--save-checkpoint", foreign.string()}),
       "attn did not write"},
      {train({"--corpus", corpus.string(), "--save-checkpoint",
              (dir.path / "gpt.safetensors").string()}),
       "a GPT's checkpoint is a folder"},
      {train({"--corpus", corpus.string(), "--tokenizer", foreign.string()}), "vocab.json"},
      {{"train", "--model", "gpt", "--corpus", corpus.string(), "--resume", foreign.string()},
       "config.json"},
      {{"train", "--corpus", corpus.string()}, "--corpus is for --model gpt"},
      {{"train", "--model", "gpt", "--block", "0"}, "--block"},
  };
  for (const Case& c : cases) {
    const auto r = run_attn(c.args);
    INFO(c.args.back() << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());
  }
  CHECK(read_text(foreign / "todo.txt") == "mine");
  CHECK(!fs::exists(dir.path / "gpt.safetensors"));
}
