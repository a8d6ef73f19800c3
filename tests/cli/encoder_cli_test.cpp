// attn encoder and attn summary encoder: PyTorch parity for the book's layer and stack (pre-LN and
// post-LN, tiny and BERT-base), the shipped configs, torchinfo's tables, and bad input.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "09-encoder/encoder_lesson.hpp"
#include "allclose.hpp"
#include "base/count.hpp"
#include "encoder.hpp"
#include "fixtures.hpp"
#include "golden.hpp"
#include "io/npy.hpp"
#include "io/shipped.hpp"
#include "io/weights.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"
#include "tolerant_text.hpp"

namespace fs = std::filesystem;
using attn::testing::check_golden;
using attn::testing::formula_weights;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {
std::string config_path(const std::string& name) {
  return name == "bert-base" ? std::string(ATTN_SOURCE_DIR) + "/data/configs/bert-base.json"
                             : attn::testing::fixture_path("encoder/" + name);
}

}  // namespace

TEST_CASE("the encoder equals the book's PyTorch encoder with the same weights",
          "[cli][encoder][parity]") {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("encoder/cases.json")));
  REQUIRE(cases.size() >= 8);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    DYNAMIC_SECTION(name) {
      ScratchDir scratch("encoder-" + name);
      const std::string config = config_path(c["config"]);
      std::string weights;
      if (c["weights_formula"].get<bool>()) {
        attn::EncoderConfig ec = attn::load_config(config);
        ec.num_hidden_layers = 1;
        weights = (scratch.path / "w.safetensors").string();
        attn::write_weights(weights,
                            formula_weights(attn::describe_encoder(ec, c["kind"] == "stack")));
      } else {
        weights = attn::testing::fixture_path("encoder/" + c["weights"].get<std::string>());
      }
      std::vector<std::string> args = {"encoder",
                                       "--config",
                                       config,
                                       "--weights",
                                       weights,
                                       "--save",
                                       (scratch.path / "out").string()};
      for (std::string a : c["args"]) {
        if (a.ends_with(".npy")) a = attn::testing::fixture_path("encoder/" + a);
        args.push_back(a);
      }
      const auto result = run_attn(args);
      INFO("stderr: " << result.err);
      REQUIRE(result.exit_code == 0);
      const auto expected =
          attn::read_npy(attn::testing::fixture_path("encoder/" + c["output"].get<std::string>()));
      const double atol = c["config"] == "bert-base" ? 1e-4 : 1e-5;
      CHECK_ALLCLOSE(attn::read_npy((scratch.path / "out/output.npy").string()), expected,
                     attn::testing::Tolerance{atol, 1e-4});
      const std::string repr = attn::testing::read_text(
          attn::testing::fixture_path("encoder/" + c["repr"].get<std::string>()));
      CHECK_PRINTED(result.out, repr);
      CHECK(result.out.find(fmt::format("Parameters: {}\n",
                                        attn::with_commas(c["parameters"].get<std::int64_t>()))) !=
            std::string::npos);
    }
  }
}

TEST_CASE("the shipped tiny config is the encoder lesson's default", "[encoder][config]") {
  const attn::EncoderConfig file =
      attn::load_config(std::string(ATTN_SOURCE_DIR) + "/data/configs/tiny.json");
  const attn::EncoderConfig built_in = attn::tiny_config();
  CHECK(file.hidden_size == built_in.hidden_size);
  CHECK(file.num_attention_heads == built_in.num_attention_heads);
  CHECK(file.intermediate_size == built_in.intermediate_size);
  CHECK(file.num_hidden_layers == built_in.num_hidden_layers);
  CHECK(file.vocab_size == built_in.vocab_size);
  CHECK(file.max_position_embeddings == built_in.max_position_embeddings);
  CHECK(file.vocab_size == attn::lesson_vocabulary().size());
  const std::string config = std::string(ATTN_SOURCE_DIR) + "/data/configs/tiny.json";
  CHECK(run_attn({"encoder", "--config", config, "--quiet"}).out ==
        run_attn({"encoder", "--quiet"}).out);
}

TEST_CASE("encoder golden output, JSON and the BERT-base counts", "[cli][encoder][golden]") {
  check_golden("encoder", {"encoder"});
  check_golden("encoder_post_show_layer_1",
               {"encoder", "--norm", "post", "--show-layer", "1", "--seed", "3"});
  check_golden("encoder_no_embeddings",
               {"encoder", "--no-embeddings", "--layers", "1", "--batch", "2", "--seq", "3"});
  const auto json = run_attn({"encoder", "--format", "json"});
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["steps"].front()["name"] == "input");
  CHECK(doc["steps"].front()["dtype"] == "int64");
  CHECK(doc["steps"].back()["name"] == "output");
  CHECK(doc["parameters"].get<std::int64_t>() > 0);
  const auto text = run_attn({"encoder"});
  CHECK(text.out.find("7,087,872") != std::string::npos);
  CHECK(text.out.find("108,890,112") != std::string::npos);
}

TEST_CASE("summary encoder matches torchinfo for the BERT-base layer", "[cli][encoder][summary]") {
  const std::string golden = std::string(ATTN_GOLDEN_DIR) + "/torchinfo/";
  const auto layer =
      run_attn({"summary", "encoder", "--config", "bert-base", "--layers", "1", "--no-embeddings"});
  REQUIRE(layer.exit_code == 0);
  CHECK(layer.out ==
        attn::testing::read_text(
            golden + "06_book_transformerencoderlayer_bertbase__defaultcols__depth3.txt"));
  const auto seed =
      run_attn({"summary", "encoder", "--config",
                std::string(ATTN_SOURCE_DIR) + "/data/configs/bert-base.json", "--layers", "1",
                "--no-embeddings", "--col-names",
                "input_size,output_size,kernel_size,num_params,mult_adds", "--col-width", "16"});
  CHECK(seed.out ==
        attn::testing::read_text(
            golden + "06_book_transformerencoderlayer_bertbase__seedcols_verbose1__depth3.txt"));
  const auto whole = run_attn({"summary", "encoder", "--config", "bert-base"});
  REQUIRE(whole.exit_code == 0);
  CHECK(whole.out.find("Total params: 108,890,112") != std::string::npos);
  CHECK(whole.out.find("Layer (type:depth-idx)                             Output Shape") !=
        std::string::npos);
}

TEST_CASE("bad input to the encoder: one line, exit 2", "[cli][encoder][bad-input]") {
  ScratchDir scratch("encoder-bad");
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = (scratch.path / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  };
  const std::string not_json = write("bad.json", "{hidden_size: 768");
  const std::string wrong_type = write("type.json", R"({"hidden_size": "768"})");
  const std::string impossible =
      write("impossible.json", R"({"hidden_size": 10, "num_attention_heads": 4})");
  const std::string act = write("act.json", R"({"hidden_act": "swish"})");
  const std::string other_width = (scratch.path / "w12.safetensors").string();
  REQUIRE(run_attn({"encoder", "--d-model", "12", "--heads", "3", "--save-weights", other_width,
                    "--quiet"})
              .exit_code == 0);
  const std::string deeper = (scratch.path / "w3.safetensors").string();
  REQUIRE(run_attn({"encoder", "--layers", "3", "--save-weights", deeper, "--quiet"}).exit_code ==
          0);
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  const std::vector<Case> cases = {
      {{"encoder", "--config", not_json}, "is not JSON"},
      {{"encoder", "--config", wrong_type}, "expected a whole number"},
      {{"encoder", "--config", impossible}, "not divisible"},
      {{"encoder", "--config", act}, "swish"},
      {{"encoder", "--config", (scratch.path / "none.json").string()}, "does not exist"},
      {{"encoder", "--heads", "4"}, "not divisible"},
      {{"encoder", "--ids", "1,2,999999"}, "outside the vocabulary"},
      {{"encoder", "--ids", "1,x"}, "--ids"},
      {{"encoder", "--max-positions", "4"}, "position table"},
      {{"encoder", "--no-embeddings", "--seq", "65"}, "position table"},
      {{"encoder", "--weights", other_width}, "does not fit TransformerEncoder"},
      {{"encoder", "--weights", deeper}, "unexpected layers.2"},
      {{"encoder", "--show-layer", "5"}, "--show-layer"},
      {{"encoder", "--text", "hi", "--ids", "3"}, "one of --text"},
      {{"encoder", "--input", write("x.npy", "junk")}, "--no-embeddings"},
      {{"encoder", "--text", "\xff\xfe"}, "UTF-8"},
      {{"summary", "encoder", "--config", not_json}, "is not JSON"},
      {{"summary", "self-attention", "--layers", "2"},
       "--layers: `attn summary self-attention` does not take it"},
      // Options the run does not use are refused, never ignored.
      {{"encoder", "--seq", "513"}, "--seq: only --no-embeddings uses it"},
      {{"encoder", "--batch", "2", "--ids", "3,4"}, "--batch: only --no-embeddings uses it"},
      {{"encoder", "--ids", "3,4", "--vocab", "vocab.txt"}, "--vocab: only --text uses it"},
      {{"encoder", "--no-embeddings", "--add-special-tokens"},
       "--add-special-tokens: only --text uses it"},
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
}

TEST_CASE("summary embeddings describes the book's Embeddings", "[cli][encoder][summary]") {
  const auto result = run_attn({"summary", "embeddings", "--config", "bert-base"});
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("Total params: 23,835,648") != std::string::npos);
  CHECK(result.out.find(
            "├─Embedding: 1-1                         [1, 5, 768]               23,440,896") !=
        std::string::npos);
}

TEST_CASE("text under a BERT config goes through BERT's vocabulary", "[cli][encoder][vocab]") {
  const auto ids_of = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "encoder", "--text", "time flies like an arrow", "--layers", "1", "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto run = run_attn(args);
    INFO("stderr: " << run.err);
    REQUIRE(run.exit_code == 0);
    const auto doc = nlohmann::json::parse(run.out);
    return doc["steps"][0]["values"][0].get<std::vector<std::int64_t>>();
  };
  // Seed 000's ids of the sentence in bert-base-uncased's vocab.txt.
  CHECK(ids_of({"--config", "bert-base"}) ==
        std::vector<std::int64_t>{2051, 10029, 2066, 2019, 8612});
  // The tiny config's vocabulary is the lesson's.
  CHECK(ids_of({}) == std::vector<std::int64_t>{113, 114, 115, 116, 117});
}
