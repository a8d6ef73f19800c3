// attn tokens from the command line: golden stdout, the JSON document with "tokens" and "ids",
// --save, PyTorch parity through --text/--weights/--save, bert-base-uncased's vocabulary, saved
// weights read back, attn summary embedding, and every bad input: one line, exit 2.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "00-tokens/tokens_lesson.hpp"
#include "allclose.hpp"
#include "base/count.hpp"
#include "fixtures.hpp"
#include "golden.hpp"
#include "io/npy.hpp"
#include "io/shipped.hpp"
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
const std::string kBertVocab =
    std::string(ATTN_SOURCE_DIR) + "/data/vocab/bert-base-uncased-vocab.txt";

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
}  // namespace

TEST_CASE("golden stdout of attn tokens", "[cli][golden]") {
  check_golden("tokens", {"tokens"});
  check_golden("tokens_special_scaled",
               {"tokens", "--text", "Unaffable tokenizers, time flies like an arrow!",
                "--add-special-tokens", "--scale-by-sqrt-d", "--d-model", "8", "--seed", "3"});
  check_golden("tokens_hard_text",
               {"tokens", "--text", "Héllo, WORLD!\tnaïve café 日本語 a\u200bb [MASK] $5^2",
                "--d-model", "4"});
  check_golden("tokens_bert_vocab",
               {"tokens", "--vocab", kBertVocab, "--text", "fruit flies like a banana"});
}

TEST_CASE("the same command gives byte-identical output, another seed another table", "[cli]") {
  const auto a = run_attn({"tokens", "--seed", "9"});
  const auto b = run_attn({"tokens", "--seed", "9"});
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);
  CHECK(run_attn({"tokens", "--seed", "10"}).out != a.out);
}

TEST_CASE("json: the usual document plus top-level tokens and ids", "[cli][json]") {
  const auto result = run_attn(
      {"tokens", "--format", "json", "--text", "time flies, time flies", "--d-model", "3"});
  REQUIRE(result.exit_code == 0);
  const auto doc = nlohmann::json::parse(result.out);
  CHECK(doc["lesson"] == "tokens");
  CHECK(doc["tokens"] == std::vector<std::string>{"time", "flies", ",", "time", "flies"});
  const auto vocab = attn::lesson_vocabulary();
  const auto ids = doc["ids"].get<std::vector<std::int64_t>>();
  REQUIRE(ids.size() == 5);
  CHECK(ids[0] == *vocab.find("time"));
  CHECK(ids[2] == *vocab.find(","));
  CHECK(doc["settings"]["d-model"] == 3);
  CHECK(doc["settings"]["vocab-size"] == vocab.size());
  CHECK(doc["settings"]["seed"] == 0);
  const auto& steps = doc["steps"];
  REQUIRE(steps.size() == 3);
  CHECK(steps.front()["name"] == "input");
  CHECK(steps.front()["dtype"] == "int64");
  CHECK(steps.front()["shape"] == std::vector<int>{1, 5});
  CHECK(steps.front()["values"][0].get<std::vector<std::int64_t>>() == ids);
  CHECK(steps[1]["name"] == "weight");
  CHECK(steps[1]["shape"] == std::vector<std::size_t>{vocab.size(), 3});
  CHECK(steps.back()["name"] == "output");
  CHECK(steps.back()["dtype"] == "float32");
  CHECK(steps.back()["shape"] == std::vector<int>{1, 5, 3});
  // Output row t is the table's row ids[t].
  for (std::size_t t = 0; t < 5; ++t)
    CHECK(steps.back()["values"][0][t] == steps[1]["values"][ids[t]]);
  REQUIRE(doc["checks"].size() == 3);  // the one-hot check, then "time" and "flies" repeated
  for (const auto& check : doc["checks"])
    CHECK(check["passed"] == true);
  CHECK(doc["checks"][1]["name"] == "'time' gets the same vector at positions 0, 3");
  CHECK(doc["parameters"] == vocab.size() * 3);
  CHECK(doc["tables"].size() == 3);
}

TEST_CASE("128 KB of text: the WordPiece table has a row per word, each with its own tokens",
          "[cli][json]") {
  // 2,415 copies of a 53-byte sentence of 14 words and 20 tokens (tokenizer_test.cpp has the
  // same text in core): 33,810 words, 48,300 tokens, plus [CLS] and [SEP].
  const std::string unit = "Héllo, WORLD! 日本 naïve café [MASK] a\u200bb $5^2 ";
  std::string text;
  for (int i = 0; i < 2415; ++i)
    text += unit;
  const auto result =
      run_attn({"tokens", "--format", "json", "--add-special-tokens", "--text", text});
  REQUIRE(result.exit_code == 0);
  const auto doc = nlohmann::json::parse(result.out);
  const auto tokens = doc["tokens"].get<std::vector<std::string>>();
  REQUIRE(tokens.size() == 48302);
  CHECK(tokens[1] == "hello");
  CHECK(tokens[48300] == "2");
  const auto& rows = doc["tables"][1]["rows"];
  REQUIRE(rows.size() == 1 + 33810 + 1);  // (added) [CLS], the words, (added) [SEP]
  CHECK(rows[1] == nlohmann::json::array({"hello", "hello", "482"}));
  CHECK(rows[7] == nlohmann::json::array({"naive", "n ##a ##ive", "60 83 526"}));
  CHECK(rows[33810] == nlohmann::json::array({"2", "2", "39"}));
  // The rows' tokens, read in order, are the tokens.
  std::vector<std::string> joined;
  for (const auto& row : rows) {
    std::istringstream words(row[1].get<std::string>());
    for (std::string token; words >> token;)
      joined.push_back(token);
  }
  CHECK(joined == tokens);
}

TEST_CASE("save writes the ids (int64), the table and the output, with json too", "[cli][save]") {
  ScratchDir scratch("save");
  for (const std::string format : {"text", "json"}) {
    DYNAMIC_SECTION(format) {
      const fs::path dir = scratch.path / format;
      const auto saved =
          run_attn({"tokens", "--save", dir.string(), "--format", format, "--scale-by-sqrt-d"});
      REQUIRE(saved.exit_code == 0);
      CHECK_FALSE(saved.out.empty());
      if (format == "json") CHECK(nlohmann::json::parse(saved.out)["ids"].size() == 5);
      const auto manifest =
          nlohmann::json::parse(attn::testing::read_text((dir / "manifest.json").string()));
      CHECK(manifest["lesson"] == "tokens");
      REQUIRE(manifest["steps"].size() == 4);
      CHECK(manifest["steps"].front()["name"] == "input");
      CHECK(manifest["steps"].back()["name"] == "output");
      const attn::Array ids = attn::read_npy((dir / "input.npy").string());
      CHECK(ids.dtype == attn::Dtype::int64);
      CHECK(ids.shape == attn::Shape{1, 5});
      const attn::Array lookup = attn::read_npy((dir / "lookup.npy").string());
      const attn::Array output = attn::read_npy((dir / "output.npy").string());
      const float factor = static_cast<float>(std::sqrt(6.0));
      for (std::size_t i = 0; i < output.size(); ++i)
        CHECK(output.float32_at(i) == lookup.float32_at(i) * factor);
    }
  }
}

TEST_CASE("PyTorch parity: nn.Embedding's table through --weights, the output through --save",
          "[cli][parity]") {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("tokens/cases.json")));
  REQUIRE(cases.size() >= 4);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    DYNAMIC_SECTION(name) {
      ScratchDir scratch("parity-" + name);
      std::vector<std::string> args = {
          "tokens", "--weights",
          attn::testing::fixture_path("tokens/" + c["weights"].get<std::string>()), "--save",
          (scratch.path / "out").string()};
      for (const auto& a : c["args"])
        args.push_back(a);
      const auto result = run_attn(args);
      INFO("stderr: " << result.err);
      REQUIRE(result.exit_code == 0);
      CHECK_ALLCLOSE(
          attn::read_npy((scratch.path / "out/output.npy").string()),
          attn::read_npy(attn::testing::fixture_path("tokens/" + c["output"].get<std::string>())),
          attn::testing::Tolerance{0.0, 0.0});
      CHECK_ALLCLOSE(attn::read_npy((scratch.path / "out/input.npy").string()),
                     attn::read_npy(attn::testing::fixture_path("tokens/" +
                                                                c["input_ids"].get<std::string>())),
                     attn::testing::Tolerance{0.0, 0.0});
      // repr(output) and repr(input_ids) as torch prints them, verbatim.
      for (const char* key : {"repr", "ids_repr"}) {
        const std::string repr = attn::testing::read_text(
            attn::testing::fixture_path("tokens/" + c[key].get<std::string>()));
        CHECK_PRINTED(result.out, repr);
      }
      CHECK(result.out.find(fmt::format("Parameters: {}\n",
                                        attn::with_commas(c["parameters"].get<std::int64_t>()))) !=
            std::string::npos);
    }
  }
}

TEST_CASE("bert-base-uncased's vocab.txt: seed 000's ids and BERT-base's parameter count",
          "[cli][bert]") {
  const auto json =
      run_attn({"tokens", "--vocab", kBertVocab, "--format", "json", "--add-special-tokens"});
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["ids"] == std::vector<std::int64_t>{101, 2051, 10029, 2066, 2019, 8612, 102});
  CHECK(doc["settings"]["vocab-size"] == 30522);
  const auto big = run_attn({"tokens", "--vocab", kBertVocab, "--d-model", "768"});
  REQUIRE(big.exit_code == 0);
  CHECK(big.out.find("output, shape (1, 5, 768)") != std::string::npos);
  CHECK(big.out.find("Parameters: 23,440,896\n") != std::string::npos);
  // A table of 23 million numbers is shown by its first rows.
  CHECK(big.out.find(
            "weight_first_rows, shape (8, 768): the first 8 of token_emb.weight's 30522 rows") !=
        std::string::npos);
}

TEST_CASE("the built-in vocabulary is data/vocab/lesson-vocab.txt", "[cli][vocab]") {
  const std::string file =
      attn::testing::read_text(std::string(ATTN_SOURCE_DIR) + "/data/vocab/lesson-vocab.txt");
  CHECK(attn::shipped_file("vocab/lesson-vocab.txt") == file);
  const auto& vocab = attn::lesson_vocabulary();
  CHECK(vocab.size() > 400);
  for (const char* token : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "time", "flies", "like",
                            "an", "arrow", "fruit", "banana", "##s"})
    CHECK(vocab.find(token));
  // Same ids whether the file is given or not.
  const auto given =
      run_attn({"tokens", "--vocab", std::string(ATTN_SOURCE_DIR) + "/data/vocab/lesson-vocab.txt",
                "--format", "json"});
  const auto built_in = run_attn({"tokens", "--format", "json"});
  CHECK(nlohmann::json::parse(given.out)["ids"] == nlohmann::json::parse(built_in.out)["ids"]);
}

TEST_CASE("saved weights read back through --weights in both formats", "[cli][weights]") {
  ScratchDir scratch("weights");
  for (const std::string file : {"w.safetensors", "w.npz"}) {
    DYNAMIC_SECTION(file) {
      const std::string path = (scratch.path / file).string();
      const auto first =
          run_attn({"tokens", "--seed", "5", "--d-model", "7", "--save-weights", path, "--quiet"});
      REQUIRE(first.exit_code == 0);
      const attn::StateDict saved = attn::read_weights(path);
      REQUIRE(saved.size() == 1);
      CHECK(saved.at("weight").shape == attn::Shape{attn::lesson_vocabulary().size(), 7});
      const auto again = run_attn({"tokens", "--weights", path, "--quiet"});
      REQUIRE(again.exit_code == 0);
      CHECK(again.out == first.out);
    }
  }
}

TEST_CASE("attn summary embedding: nn.Embedding on int64 ids", "[cli][summary]") {
  const auto result = run_attn(
      {"summary", "embedding", "--vocab-size", "30522", "--d-model", "768", "--format", "json"});
  REQUIRE(result.exit_code == 0);
  const auto doc = nlohmann::json::parse(result.out);
  CHECK(doc["class_name"] == "Embedding");
  CHECK(doc["total_params"] == 23'440'896);
  CHECK(doc["input_size"] == std::vector<int>{1, 5});
  CHECK(doc["layers"][0]["output_shape"] == std::vector<int>{1, 5, 768});
  CHECK(doc["state_dict"][0]["key"] == "weight");
  const auto text = run_attn({"summary", "embedding", "--vocab-size", "20", "--d-model", "300",
                              "--seq", "100", "--col-names", "output_size,num_params,mult_adds"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("[1, 100, 300]") != std::string::npos);
  CHECK(text.out.find("Total params: 6,000\n") != std::string::npos);
}

TEST_CASE("bad input to attn tokens: one line on stderr, exit 2, nothing on stdout",
          "[cli][bad-input]") {
  ScratchDir scratch("bad");
  const fs::path empty = scratch.path / "empty.txt", binary = scratch.path / "binary.txt",
                 latin1 = scratch.path / "latin1.txt", duplicate = scratch.path / "duplicate.txt",
                 no_unk = scratch.path / "no_unk.txt", no_cls = scratch.path / "no_cls.txt";
  write_file(empty, "");
  write_file(binary, std::string("\x93NUMPY\x01\x00v\x00", 10));
  write_file(latin1, "[UNK]\ncaf\xe9\n");
  write_file(duplicate, "[PAD]\n[UNK]\ntime\nflies\ntime\n");
  write_file(no_unk, "[PAD]\ntime\nflies\n");
  write_file(no_cls, "[UNK]\ntime\nflies\n");
  const std::string small = (scratch.path / "small.safetensors").string();
  const std::string wrong_key = (scratch.path / "wrong_key.safetensors").string();
  attn::write_weights(small,
                      {{"weight", attn::make_float32({40, 6}, std::vector<float>(240, 0.5f))}});
  attn::write_weights(wrong_key, {{"embedding.weight",
                                   attn::make_float32({600, 6}, std::vector<float>(3600, 0.5f))}});
  const std::string save_dir = (scratch.path / "never").string();
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  const std::vector<Case> cases = {
      {{"tokens", "--vocab", (scratch.path / "missing.txt").string()},
       "--vocab: '" + (scratch.path / "missing.txt").string() + "' does not exist"},
      {{"tokens", "--vocab", scratch.path.string()}, "is a directory"},
      {{"tokens", "--vocab", empty.string()}, "is empty"},
      {{"tokens", "--vocab", binary.string()},
       "has a NUL byte at offset 7 (line 1): it is a binary file"},
      {{"tokens", "--vocab", latin1.string()}, "is not UTF-8 text: byte 0xe9 at offset 9 (line 2)"},
      {{"tokens", "--vocab", duplicate.string()}, "lists the token 'time' twice, on lines 3 and 5"},
      {{"tokens", "--vocab", no_unk.string()}, "has no [UNK] line"},
      {{"tokens", "--vocab", no_cls.string(), "--add-special-tokens"},
       "--add-special-tokens: the vocabulary"},
      {{"tokens", "--text", "caf\xe9"},
       "--text: the text is not valid UTF-8: byte 0xe9 at offset 3"},
      {{"tokens", "--text", "\xff"}, "not valid UTF-8"},
      {{"tokens", "--text", ""}, "has no tokens"},
      {{"tokens", "--text", " \t\x01 "}, "has no tokens"},
      {{"tokens", "--weights", small}, "has 40 rows, but the token 'time' has id 113"},
      {{"tokens", "--weights", wrong_key}, "has no key weight"},
      {{"tokens", "--weights", small, "--d-model", "6"}, "exclude each other"},
      {{"tokens", "--weights", (scratch.path / "missing.npz").string()}, "does not exist"},
      {{"tokens", "--d-model", "0"}, "--d-model"},
      {{"tokens", "--seed", "x"}, "not a seed"},
      {{"tokens", "--vocab", kBertVocab, "--d-model", "100000"}, "lower --d-model"},
      {{"tokens", "--save-weights", (scratch.path / "w.pt").string()}, "not PyTorch pickles"},
      {{"tokens", "--text", "\xff", "--save", save_dir}, "not valid UTF-8"},
      {{"tokens", "--batch", "2"}, "unknown option '--batch'"},
      {{"summary", "embedding", "--vocab-size", "0"}, "--vocab-size"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(fmt::format("{}", fmt::join(c.args, " "))) {
      const auto result = run_attn(c.args);
      INFO("stderr: " << result.err);
      CHECK(result.exit_code == 2);
      CHECK(attn::testing::line_count(result.err) == 1);
      CHECK(result.err.starts_with("attn"));
      CHECK(result.out.empty());
      CHECK(result.err.find(c.phrase) != std::string::npos);
    }
  }
  CHECK_FALSE(fs::exists(save_dir));
}
