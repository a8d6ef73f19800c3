// BERT from Hugging Face folders against transformers' outputs (data/generator/bert.py writes the
// folders in every layout and what BertModel, BertForMaskedLM and BertForPreTraining return with
// output_hidden_states and output_attentions), plus what must hold on any weights: attention rows
// sum to 1, padding keys get no weight, padding changes nothing at the real tokens.
// Legend: B batch, T tokens, D hidden_size, H heads, V vocabulary, L layers.
#include "bert.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include "allclose.hpp"
#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/pretrained.hpp"
#include "pretrained_case.hpp"
#include "scratch.hpp"

namespace {

using attn::BertHeads;

// The folders of data/fixtures/bert/ and what each must load as. The F32 folders of one size share
// one set of outputs (their weights are subsets of one BertForPreTraining's); F16 and BF16 round
// the weights and have their own.
struct FolderCase {
  const char* folder;
  const char* expected;  // data/fixtures/bert/expected/<this>/<input>/
  BertHeads heads;
  bool pooler;
  std::size_t layers;
};
const FolderCase kFolders[] = {
    {"d12_model", "d12", BertHeads::none, true, 2},  // BertModel: no prefix
    {"d12_masked_lm", "d12", BertHeads::masked_lm, false, 2},
    {"d12_pretraining", "d12", BertHeads::pretraining, true, 2},
    {"d12_legacy", "d12", BertHeads::pretraining, true, 2},  // LayerNorm.gamma / .beta
    {"d12_sharded", "d12", BertHeads::pretraining, true, 2},
    {"d12_old", "d12", BertHeads::none, true, 2},  // with the int64 embeddings.position_ids
    {"d12_f16", "d12_float16", BertHeads::masked_lm, false, 2},
    {"d12_bf16", "d12_bfloat16", BertHeads::masked_lm, false, 2},
    {"d10_pretraining", "d10", BertHeads::pretraining, true, 3},  // gelu_new, 3 token types
};
const char* const kInputs[] = {"sentence", "pair", "padded"};

std::string bert_fixture(const std::string& relative) {
  return attn::testing::fixture_path("bert/" + relative);
}

attn::Bert load_folder(const std::string& folder) {
  const attn::PretrainedFolder opened = attn::open_pretrained(bert_fixture(folder));
  return attn::load_bert(attn::bert_config(opened), attn::read_pretrained_weights(opened),
                         opened.shown);
}

attn::BertInput read_input(const std::string& name) {
  const std::string folder = "inputs/" + name + "/";
  using attn::testing::read_ids;
  return {read_ids(bert_fixture(folder + "input_ids.npy")),
          read_ids(bert_fixture(folder + "token_type_ids.npy")),
          read_ids(bert_fixture(folder + "attention_mask.npy"))};
}

attn::Array expected(const FolderCase& c, const std::string& input, const std::string& name) {
  return attn::read_npy(
      bert_fixture(std::string("expected/") + c.expected + "/" + input + "/" + name + ".npy"));
}

}  // namespace

TEST_CASE("every folder layout loads as its class and computes transformers' outputs", "[bert]") {
  for (const FolderCase& c : kFolders) {
    INFO("folder " << c.folder);
    const attn::Bert model = load_folder(c.folder);
    CHECK(model.heads == c.heads);
    CHECK(model.pooler.has_value() == c.pooler);
    CHECK(model.masked_lm.has_value() == (c.heads != BertHeads::none));
    CHECK(model.next_sentence.has_value() == (c.heads == BertHeads::pretraining));
    REQUIRE(model.layers.size() == c.layers);
    for (const std::string input : kInputs) {
      INFO("input " << input);
      const attn::BertSteps steps = attn::forward(model, read_input(input));
      for (std::size_t l = 0; l <= c.layers; ++l) {
        INFO("hidden_states." << l);
        CHECK_ALLCLOSE(attn::to_array(steps.hidden_states(l)),
                       expected(c, input, "hidden_states." + std::to_string(l)));
      }
      for (std::size_t l = 0; l < c.layers; ++l) {
        INFO("attentions." << l);  // (B,H,T,T)
        CHECK_ALLCLOSE(attn::to_array(steps.layers[l].attention.weights),
                       expected(c, input, "attentions." + std::to_string(l)));
      }
      if (c.pooler)
        CHECK_ALLCLOSE(attn::to_array(steps.pooled), expected(c, input, "pooler_output"));
      if (c.heads != BertHeads::none) {
        CHECK_ALLCLOSE(attn::to_array(steps.logits), expected(c, input, "logits"));
      }
    }
  }
}

TEST_CASE("config.json's sizes and activation reach the model", "[bert][config]") {
  const attn::Bert small = load_folder("d10_pretraining");
  CHECK(small.config.sizes.hidden_size == 10);
  CHECK(small.config.sizes.num_attention_heads == 2);
  CHECK(small.config.sizes.intermediate_size == 14);
  CHECK(small.config.sizes.max_position_embeddings == 16);
  CHECK(small.config.sizes.hidden_act == "gelu_new");
  CHECK(small.config.type_vocab_size == 3);
  CHECK(small.token_type_embeddings.weight.shape(0) == 3);
  const attn::Bert base = load_folder("d12_model");
  CHECK(base.config.sizes.hidden_act == "gelu");
  CHECK(base.config.sizes.layer_norm_eps == 1e-12);
  CHECK(base.config.sizes.vocab_size == 59);
}

TEST_CASE("a bare name is found in the Hugging Face cache, through its symlinks", "[bert][cache]") {
  // What huggingface-cli download leaves: blobs, a snapshot of symlinks to them, refs/main.
  namespace fs = std::filesystem;
  const attn::testing::ScratchDir home("bert-hf-home");
  const fs::path repo = home.path / "hub" / "models--bert-tiny-test";
  const std::string revision = "0123456789abcdef0123456789abcdef01234567";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / revision);
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << revision;
  int blobs = 0;
  for (const auto& entry : fs::directory_iterator(bert_fixture("d12_masked_lm"))) {
    const std::string blob = "blob" + std::to_string(blobs++);
    fs::copy_file(entry.path(), repo / "blobs" / blob);
    fs::create_symlink(fs::path("../../blobs") / blob,
                       repo / "snapshots" / revision / entry.path().filename());
  }
  ::unsetenv("HF_HUB_CACHE");  // it would win over HF_HOME
  REQUIRE(::setenv("HF_HOME", home.path.c_str(), 1) == 0);
  const attn::PretrainedFolder opened = attn::open_pretrained("bert-tiny-test");
  CHECK_THROWS_AS(attn::open_pretrained("bert-not-in-the-cache"), attn::Error);
  ::unsetenv("HF_HOME");
  CHECK(opened.shown == "bert-tiny-test");
  const attn::Bert model = attn::load_bert(attn::bert_config(opened),
                                           attn::read_pretrained_weights(opened), opened.shown);
  const attn::BertSteps steps = attn::forward(model, read_input("sentence"));
  CHECK_ALLCLOSE(attn::to_array(steps.logits),
                 expected(kFolders[1], "sentence", "logits"));  // d12_masked_lm
}

TEST_CASE("the folder's tokenizer gives the fixtures' ids", "[bert][tokenizer]") {
  const attn::PretrainedTokenizer tokenizer =
      attn::bert_tokenizer(attn::open_pretrained(bert_fixture("d12_model")));
  const attn::Ids ids = read_input("sentence").ids;  // (1,T)
  const attn::Encoding encoding =
      attn::encode("Time flies like an ARROW", tokenizer.vocab, true, tokenizer.options);
  REQUIRE(encoding.ids.size() == ids.shape(1));
  for (std::size_t t = 0; t < ids.shape(1); ++t)
    CHECK(encoding.ids[t] == ids(0, t));
}

TEST_CASE("attention rows sum to 1 and padding keys get weight 0", "[bert][invariants]") {
  const attn::Bert model = load_folder("d10_pretraining");
  const attn::BertInput input = read_input("padded");  // row 1: 6 tokens, then padding
  const attn::BertSteps steps = attn::forward(model, input);
  for (const attn::EncoderLayerTape& layer : steps.layers)
    attn::testing::check_attention_rows(layer.attention.weights, input.attention_mask);
}

TEST_CASE("padding changes nothing at the real tokens", "[bert][invariants]") {
  const attn::Bert model = load_folder("d12_pretraining");
  const attn::BertInput alone = read_input("pair");  // (1,T) with two token types
  const std::size_t tokens = alone.ids.shape(1), padded_tokens = tokens + 3;
  attn::BertInput padded{attn::Ids({1, padded_tokens}), attn::Ids({1, padded_tokens}),
                         attn::Ids({1, padded_tokens})};
  padded.ids.fill(model.config.pad_token_id);
  padded.token_types.fill(0);
  padded.attention_mask.fill(0);
  for (std::size_t t = 0; t < tokens; ++t) {
    padded.ids(0, t) = alone.ids(0, t);
    padded.token_types(0, t) = alone.token_types(0, t);
    padded.attention_mask(0, t) = 1;
  }
  const attn::BertSteps a = attn::forward(model, alone), b = attn::forward(model, padded);
  for (std::size_t l = 0; l <= model.layers.size(); ++l) {
    INFO("hidden_states." << l);
    const attn::Tensor3 cut =
        xt::view(b.hidden_states(l), xt::all(), xt::range(std::size_t{0}, tokens), xt::all());
    CHECK_ALLCLOSE(attn::to_array(cut), attn::to_array(a.hidden_states(l)));
  }
  const attn::Tensor3 logits =
      xt::view(b.logits, xt::all(), xt::range(std::size_t{0}, tokens), xt::all());  // (1,T,V)
  CHECK_ALLCLOSE(attn::to_array(logits), attn::to_array(a.logits));
  CHECK_ALLCLOSE(attn::to_array(b.pooled), attn::to_array(a.pooled));
}

TEST_CASE("a missing or an extra key is named with the folder", "[bert][errors]") {
  const attn::PretrainedFolder opened = attn::open_pretrained(bert_fixture("d12_model"));
  const attn::BertConfig config = attn::bert_config(opened);
  {
    attn::StateDict weights = attn::read_pretrained_weights(opened);
    REQUIRE(weights.erase("encoder.layer.1.output.dense.bias") == 1);
    try {
      attn::load_bert(config, std::move(weights), opened.shown);
      FAIL("a checkpoint without encoder.layer.1.output.dense.bias was loaded");
    } catch (const attn::Error& e) {
      CHECK(e.kind() == attn::ErrorKind::bad_file);
      CHECK_THAT(e.what(), Catch::Contains("encoder.layer.1.output.dense.bias") &&
                               Catch::Contains(opened.shown));
    }
  }
  {
    attn::StateDict weights = attn::read_pretrained_weights(opened);
    weights.emplace("encoder.layer.2.output.dense.bias", weights.at("pooler.dense.bias"));
    try {
      attn::load_bert(config, std::move(weights), opened.shown);
      FAIL("a checkpoint with an extra encoder.layer.2 was loaded");
    } catch (const attn::Error& e) {
      CHECK(e.kind() == attn::ErrorKind::bad_file);
      CHECK_THAT(e.what(), Catch::Contains("encoder.layer.2.output.dense.bias"));
    }
  }
}

TEST_CASE("bert_state_dict writes every folder's model back under the keys it was read from",
          "[bert][state_dict]") {
  for (const FolderCase& c : kFolders) {
    INFO(c.folder);
    const attn::PretrainedFolder opened = attn::open_pretrained(bert_fixture(c.folder));
    attn::StateDict file = attn::read_pretrained_weights(opened);
    const attn::Bert model = load_folder(c.folder);
    const attn::StateDict written = attn::bert_state_dict(model);
    // What load_bert drops or renames: the int64 position_ids, the legacy gamma/beta names.
    std::size_t compared = 0;
    for (const auto& [key, array] : written) {
      std::string stored = key;
      if (std::string(c.folder) == "d12_legacy" && stored.find("LayerNorm.") != std::string::npos)
        stored = stored.substr(0, stored.rfind('.')) +
                 (stored.ends_with(".weight") ? ".gamma" : ".beta");
      INFO(key);
      REQUIRE(file.count(stored) == 1);
      CHECK(file.at(stored).shape == array.shape);
      CHECK(file.at(stored).bytes == array.bytes);
      ++compared;
    }
    file.erase("embeddings.position_ids");
    CHECK(compared == file.size());
    // And read back, the same model computes the same outputs.
    const attn::Bert again = attn::load_bert(model.config, attn::StateDict(written), "written");
    const attn::BertInput input = read_input("pair");
    CHECK(attn::forward(again, input).hidden_states(c.layers) ==
          attn::forward(model, input).hidden_states(c.layers));
  }
}
