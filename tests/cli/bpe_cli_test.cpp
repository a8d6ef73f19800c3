// attn bpe and attn tokenizer train from the command line: golden stdout, the JSON document, the
// GPT-2 files --save writes (read back by attn's GPT-2 tokenizer, encoding as the trainer does,
// and merges equal to minbpe's on the fixtures' texts), a save replaced only when attn wrote it,
// colour only on request, and the bad inputs: one line, exit 2, nothing written.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "golden.hpp"
#include "io/bpe.hpp"
#include "io/bpe_train.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::check_golden;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

nlohmann::json fixture(const std::string& name) {
  return nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("bpe_train/" + name + ".json")));
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("golden stdout of attn bpe", "[cli][golden]") {
  check_golden("bpe_ties", {"bpe", "--text", "ab cd ab cd ba dc aaa bbbb", "--vocab-size", "261"});
  check_golden("tokenizer_train",
               {"tokenizer", "train", "--corpus",
                attn::testing::fixture_path("bpe_train/corpus.txt"), "--vocab-size", "300"});
}

TEST_CASE("attn bpe colours the merged pair on a terminal, never when piped", "[cli]") {
  const auto plain = run_attn({"bpe"});
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.out.find('\x1b') == std::string::npos);
  CHECK(plain.out.find('\x1e') == std::string::npos);
  const auto coloured = run_attn({"bpe", "--color", "always"});
  REQUIRE(coloured.exit_code == 0);
  CHECK(coloured.out.find("\x1b[1;33m'th'+'e' (") != std::string::npos);
  const auto json = run_attn({"bpe", "--format", "json", "--color", "always"});
  REQUIRE(json.exit_code == 0);
  CHECK(json.out.find("\\u001e") == std::string::npos);
  CHECK(json.out.find("\\u001b") == std::string::npos);
}

TEST_CASE("attn bpe --format json: the merges, the checks passed", "[cli][json]") {
  const auto run = run_attn({"bpe", "--format", "json", "--vocab-size", "260"});
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  bool found = false;
  for (const auto& step : doc["steps"])
    if (step["name"] == "merges") {
      found = true;
      CHECK(step["shape"] == nlohmann::json::array({4, 2}));
    }
  CHECK(found);
  for (const auto& check : doc["checks"])
    CHECK(check["passed"] == true);
}

TEST_CASE("attn tokenizer train --format json: the merges and the tokens after each",
          "[cli][json]") {
  const auto run = run_attn({"tokenizer", "train", "--corpus",
                             attn::testing::fixture_path("bpe_train/corpus.txt"), "--vocab-size",
                             "270", "--format", "json"});
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc["lesson"] == "tokenizer train");
  REQUIRE(doc["steps"].size() == 2);
  CHECK(doc["steps"][0]["name"] == "merges");
  CHECK(doc["steps"][0]["shape"] == nlohmann::json::array({14, 2}));
  CHECK(doc["steps"][1]["name"] == "tokens");
  CHECK(doc["tables"][0]["rows"].size() == 14);
}

TEST_CASE("attn bpe --save holds the steps and the trained GPT-2 files, listed in its manifest",
          "[cli]") {
  ScratchDir dir("bpe-save");
  const fs::path out = dir.path / "bpe";
  const auto run = run_attn({"bpe", "--save", out.string()});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text((out / "manifest.json").string()));
  CHECK(manifest["files"] == nlohmann::json::array({"vocab.json", "merges.txt"}));
  const attn::BpeTokenizer tokenizer = attn::read_bpe(out.string());
  CHECK(tokenizer.size() == 269);
  CHECK(attn::encode(tokenizer, "the cat") == std::vector<std::int64_t>{258, 261});
  // Its own save is replaced, files and all.
  CHECK(run_attn({"bpe", "--vocab-size", "260", "--save", out.string()}).exit_code == 0);
  CHECK(attn::read_bpe(out.string()).size() == 261);
}

TEST_CASE("attn tokenizer train writes GPT-2 files whose encodings are the trainer's and minbpe's",
          "[cli]") {
  ScratchDir dir("tokenizer-train");
  for (const std::string name : {"english", "unicode", "special"}) {
    INFO("fixture " << name);
    const nlohmann::json doc = fixture(name);
    const std::string text = doc["text"];
    const fs::path corpus = dir.path / (name + ".txt"), out = dir.path / name;
    write_file(corpus, text);
    const auto run =
        run_attn({"tokenizer", "train", "--corpus", corpus.string(), "--vocab-size",
                  std::to_string(doc["vocab_size"].get<int>()), "--save", out.string()});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(attn::testing::names_in(out) == std::set<std::string>{"manifest.json", "merges.npy",
                                                                "merges.txt", "tokens.npy",
                                                                "vocab.json"});
    const attn::BpeTokenizer tokenizer = attn::read_bpe(out.string());
    CHECK(tokenizer.size() == doc["vocab_size"].get<std::size_t>() + 1);
    const attn::BpeTraining trained = attn::train_bpe(text, doc["vocab_size"]);
    for (std::size_t m = 0; m < trained.merges.size(); ++m) {
      const auto& [left, right] = tokenizer.merges[m];
      CHECK(tokenizer.ids.at(left) == doc["merges"][m][0]);
      CHECK(tokenizer.ids.at(right) == doc["merges"][m][1]);
    }
    for (const auto& sample : doc["samples"]) {
      const std::string s = sample["text"];
      const attn::BpeIds own = attn::encode_trained(trained, s);
      CHECK(attn::encode(tokenizer, s) == std::vector<std::int64_t>(own.begin(), own.end()));
      CHECK(attn::encode(tokenizer, s) == sample["ids"].get<std::vector<std::int64_t>>());
    }
  }
}

TEST_CASE("attn tokenizer train replaces its own save, never a folder attn did not write",
          "[cli][bad-input]") {
  ScratchDir dir("tokenizer-save");
  const fs::path corpus = dir.path / "corpus.txt", out = dir.path / "bpe";
  write_file(corpus, fixture("english")["text"].get<std::string>());
  const std::vector<std::string> args = {"tokenizer",    "train", "--corpus", corpus.string(),
                                         "--vocab-size", "270",   "--save",   out.string()};
  REQUIRE(run_attn(args).exit_code == 0);
  const auto again = run_attn({"tokenizer", "train", "--corpus", corpus.string(), "--vocab-size",
                               "280", "--save", out.string()});
  CHECK(again.exit_code == 0);
  CHECK(attn::read_bpe(out.string()).size() == 281);
  write_file(out / "notes.txt", "mine\n");
  const auto refused = run_attn(args);
  CHECK(refused.exit_code == 2);
  CHECK(attn::testing::line_count(refused.err) == 1);
  CHECK(refused.err.find("attn did not write (notes.txt)") != std::string::npos);
  CHECK(attn::read_bpe(out.string()).size() == 281);
}

TEST_CASE("attn tokenizer train refuses bad corpora and sizes in one line", "[cli][bad-input]") {
  ScratchDir dir("tokenizer-bad");
  const fs::path text = dir.path / "corpus.txt", binary = dir.path / "corpus.bin",
                 empty = dir.path / "empty.txt", out = dir.path / "out";
  write_file(text, "low lower lowest\n");
  write_file(binary, std::string("\x7f"
                                 "ELF\x02\x01\x00\x00",
                                 8));
  write_file(empty, "");
  const auto refuse = [&](std::vector<std::string> args, const std::string& says) {
    INFO(says);
    args.insert(args.begin(), {"tokenizer", "train"});
    args.insert(args.end(), {"--save", out.string()});
    const auto run = run_attn(args);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK(attn::testing::line_count(run.err) == 1);
    CHECK(run.err.find(says) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  };
  refuse({"--corpus", (dir.path / "missing.txt").string()}, "--corpus");
  refuse({"--corpus", empty.string()}, "is empty: give a text file to train on");
  refuse({"--corpus", binary.string()}, "is not UTF-8 text: byte 0x00 at offset 6");
  refuse({"--corpus", text.string(), "--vocab-size", "255"}, "--vocab-size");
  refuse({"--corpus", text.string(), "--vocab-size", "5000000"}, "--vocab-size");
  refuse({"--corpus", text.string(), "--vocab-size", "400"},
         "--vocab-size: the text has no pair left to merge after");
  refuse({"--corpus", dir.path.string()}, "--corpus");
}
