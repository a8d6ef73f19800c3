// GPT-2 from Hugging Face folders against transformers' outputs (data/generator/gpt2.py writes the
// folders in every layout and what GPT2Model and GPT2LMHeadModel return with output_hidden_states
// and output_attentions, and the greedy tokens of its loop over the key/value cache), plus what
// must hold on any weights: the causal mask, padding keys with no weight, the state dict written
// back, and bad folders refused in one line.
// Legend: B batch, T tokens, D n_embd, H n_head, V vocab_size, L n_layer, N new tokens.
#include "gpt2.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "allclose.hpp"
#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/pretrained.hpp"
#include "pretrained_case.hpp"
#include "scratch.hpp"

namespace {

using attn::Gpt2Heads;

// The folders of data/fixtures/gpt2/ and what each must load as. The F32 folders of one size share
// one set of outputs; F16 and BF16 round the weights and have their own.
struct FolderCase {
  const char* folder;
  const char* expected;  // data/fixtures/gpt2/expected/<this>/<input>/
  Gpt2Heads heads;       // as load_gpt2 reads the keys: "transformer." or an lm_head.weight
  Gpt2Heads named;       // the class config.json's "architectures" names (gpt2_heads)
  std::size_t layers;
};
const FolderCase kFolders[] = {
    {"d21_model", "d21", Gpt2Heads::none, Gpt2Heads::none, 2},          // GPT2Model: no prefix
    {"d21_lm", "d21", Gpt2Heads::lm_head, Gpt2Heads::lm_head, 2},       // transformer.*, no lm_head
    {"d21_lm_head", "d21", Gpt2Heads::lm_head, Gpt2Heads::lm_head, 2},  // lm_head.weight = wte
    {"d21_sharded", "d21", Gpt2Heads::lm_head, Gpt2Heads::lm_head, 2},  // two shards, the index
    {"d21_f16", "d21_float16", Gpt2Heads::lm_head, Gpt2Heads::lm_head, 2},
    {"d21_bf16", "d21_bfloat16", Gpt2Heads::lm_head, Gpt2Heads::lm_head, 2},
    {"d12_lm", "d12", Gpt2Heads::lm_head, Gpt2Heads::lm_head, 3},  // n_inner null; eps 1e-6
    // The hub's gpt2 form: GPT2LMHeadModel in config.json, keys without prefix, attn.bias and
    // masked_bias, n_ctx. Its keys are GPT2Model's; the LM head is wte all the same.
    {"d12_hub", "d12", Gpt2Heads::none, Gpt2Heads::lm_head, 3},
};
const char* const kInputs[] = {"sentence", "padded"};

std::string gpt2_fixture(const std::string& relative) {
  return attn::testing::fixture_path("gpt2/" + relative);
}

attn::Gpt2 load_folder(const std::string& folder) {
  const attn::PretrainedFolder opened = attn::open_pretrained(gpt2_fixture(folder));
  return attn::load_gpt2(attn::gpt2_config(opened), attn::read_pretrained_weights(opened),
                         opened.shown);
}

attn::Gpt2Input read_input(const std::string& name) {
  const std::string folder = "inputs/" + name + "/";
  using attn::testing::read_ids;
  return {read_ids(gpt2_fixture(folder + "input_ids.npy")),
          read_ids(gpt2_fixture(folder + "attention_mask.npy"))};
}

attn::Array expected(const std::string& set, const std::string& input, const std::string& name) {
  return attn::read_npy(gpt2_fixture("expected/" + set + "/" + input + "/" + name + ".npy"));
}

// The message of the attn::Error `run` throws; fails the test when it throws none.
template <typename Run>
std::string error_of(Run run) {
  try {
    run();
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::bad_file);
    const std::string message = e.what();
    CHECK(message.find('\n') == std::string::npos);  // one line
    return message;
  }
  FAIL("no attn::Error was thrown");
  return {};
}

// A copy of a fixture folder in `dir` with its config.json's `field` line replaced by `line`.
std::string folder_with_config(const attn::testing::ScratchDir& dir, const std::string& folder,
                               const std::string& field, const std::string& line) {
  namespace fs = std::filesystem;
  const fs::path copy = dir.path / folder;
  fs::create_directories(copy);
  for (const auto& entry : fs::directory_iterator(gpt2_fixture(folder)))
    fs::copy_file(entry.path(), copy / entry.path().filename());
  std::string text = attn::testing::read_text((copy / "config.json").string());
  const std::size_t at = text.find("\"" + field + "\"");
  REQUIRE(at != std::string::npos);
  const std::size_t end = text.find('\n', at);
  text.replace(at, end - at, line);
  std::ofstream(copy / "config.json", std::ios::trunc) << text;
  return copy.string();
}

// log_softmax(logits)[chosen] in double: one row (V) of the last position.
double log_probability(const attn::Tensor3& logits, std::size_t b, std::size_t t,
                       std::size_t chosen) {
  double top = -INFINITY;
  for (std::size_t v = 0; v < logits.shape(2); ++v)
    top = std::max(top, double(logits(b, t, v)));
  double sum = 0.0;
  for (std::size_t v = 0; v < logits.shape(2); ++v)
    sum += std::exp(logits(b, t, v) - top);
  return logits(b, t, chosen) - top - std::log(sum);
}

}  // namespace

TEST_CASE("every folder layout loads as its class and computes transformers' outputs", "[gpt2]") {
  for (const FolderCase& c : kFolders) {
    INFO("folder " << c.folder);
    const attn::Gpt2 model = load_folder(c.folder);
    CHECK(model.heads == c.heads);
    CHECK(attn::gpt2_heads(attn::open_pretrained(gpt2_fixture(c.folder))) == c.named);
    CHECK(model.lm_head.size() == 0);  // tied to wte in every folder
    REQUIRE(model.layers.size() == c.layers);
    for (const std::string input : kInputs) {
      INFO("input " << input);
      const bool logits = c.named == Gpt2Heads::lm_head;
      const attn::Gpt2Steps steps = attn::forward(model, read_input(input), logits);
      for (std::size_t l = 0; l <= c.layers; ++l) {
        INFO("hidden_states." << l);  // the last is after ln_f
        CHECK_ALLCLOSE(attn::to_array(steps.hidden_states(l)),
                       expected(c.expected, input, "hidden_states." + std::to_string(l)));
      }
      for (std::size_t l = 0; l < c.layers; ++l) {
        INFO("attentions." << l);  // (B,H,T,T)
        CHECK_ALLCLOSE(attn::to_array(steps.layers[l].attention.weights),
                       expected(c.expected, input, "attentions." + std::to_string(l)));
      }
      if (logits)
        CHECK_ALLCLOSE(attn::to_array(steps.logits), expected(c.expected, input, "logits"));
    }
  }
}

TEST_CASE("greedy tokens from the forward equal the reference's cached loop", "[gpt2][generate]") {
  // Each step reruns the whole prefix (no cache): the same tokens as transformers' loop over
  // past_key_values, and each chosen token's log-probability.
  for (const char* folder : {"d21_lm", "d21_f16", "d21_bf16", "d12_lm"}) {
    INFO("folder " << folder);
    const FolderCase& c =
        *std::find_if(std::begin(kFolders), std::end(kFolders),
                      [&](const FolderCase& f) { return f.folder == std::string(folder); });
    const attn::Gpt2 model = load_folder(folder);
    const attn::Array want_ids = expected(c.expected, "generate", "generated_ids");  // (1,N)
    const std::vector<float> want_log_probs =
        attn::to_float_vector(expected(c.expected, "generate", "log_probs"));
    attn::Gpt2Input input = read_input("sentence");  // (1,T)
    std::vector<float> log_probs;
    for (std::size_t step = 0; step < want_ids.size(); ++step) {
      const attn::Gpt2Steps steps = attn::forward(model, input);
      const std::size_t last = input.ids.shape(1) - 1;
      std::size_t best = 0;
      for (std::size_t v = 1; v < steps.logits.shape(2); ++v)
        if (steps.logits(0, last, v) > steps.logits(0, last, best)) best = v;
      INFO("step " << step);
      REQUIRE(std::int64_t(best) == want_ids.integer(step));
      log_probs.push_back(float(log_probability(steps.logits, 0, last, best)));
      attn::Ids longer({1, last + 2});
      std::copy(input.ids.begin(), input.ids.end(), longer.begin());
      longer(0, last + 1) = std::int64_t(best);
      input = {longer, {}};
    }
    CHECK_ALLCLOSE(attn::make_float32({1, log_probs.size()}, log_probs),
                   attn::make_float32({1, want_log_probs.size()}, want_log_probs));
  }
}

TEST_CASE("config.json's sizes, eps and token ids reach the model", "[gpt2][config]") {
  const attn::Gpt2 small = load_folder("d12_lm");
  CHECK(small.config.sizes.hidden_size == 12);
  CHECK(small.config.sizes.num_attention_heads == 4);
  CHECK(small.config.sizes.intermediate_size == 48);  // n_inner null: 4 n_embd
  CHECK(small.config.sizes.max_position_embeddings == 24);
  CHECK(small.config.sizes.layer_norm_eps == 1e-6);
  CHECK(small.config.sizes.hidden_act == "gelu_new");
  CHECK(small.config.sizes.vocab_size == 297);
  CHECK(small.config.eos_token_id == 296);
  CHECK(small.config.bos_token_id == 296);
  const attn::Gpt2 hub = load_folder("d12_hub");  // the hub's form: n_ctx, no n_inner field
  CHECK(hub.config.sizes.intermediate_size == 48);
  CHECK(hub.config.sizes.layer_norm_eps == 1e-6);
  CHECK(hub.wpe.weight.shape(0) == 24);
  const attn::Gpt2 wide = load_folder("d21_lm");
  CHECK(wide.config.sizes.intermediate_size == 36);
  CHECK(wide.config.sizes.layer_norm_eps == 1e-5);
}

TEST_CASE("the causal mask: a token's outputs do not depend on later tokens",
          "[gpt2][invariants]") {
  const attn::Gpt2 model = load_folder("d12_lm");
  const attn::Gpt2Input whole = read_input("sentence");  // (1,T)
  const std::size_t tokens = whole.ids.shape(1), prefix = tokens - 3;
  attn::Gpt2Input cut{attn::Ids({1, prefix}), {}};
  std::copy(whole.ids.begin(), whole.ids.begin() + prefix, cut.ids.begin());
  const attn::Gpt2Steps a = attn::forward(model, whole), b = attn::forward(model, cut);
  for (const attn::EncoderLayerTape& layer : a.layers) {
    const attn::Tensor4& weights = layer.attention.weights;  // (B,H,T,T)
    for (std::size_t h = 0; h < weights.shape(1); ++h)
      for (std::size_t q = 0; q < tokens; ++q)
        for (std::size_t k = q + 1; k < tokens; ++k)
          CHECK(weights(0, h, q, k) == 0.0f);
  }
  for (std::size_t t = 0; t < prefix; ++t)
    for (std::size_t v = 0; v < a.logits.shape(2); ++v)
      REQUIRE(std::abs(a.logits(0, t, v) - b.logits(0, t, v)) <= 1e-5f);
}

TEST_CASE("padding keys get weight 0 and rows sum to 1", "[gpt2][invariants]") {
  const attn::Gpt2 model = load_folder("d21_lm");
  const attn::Gpt2Input input = read_input("padded");  // row 1: 4 tokens, then padding
  const attn::Gpt2Steps steps = attn::forward(model, input);
  for (const attn::EncoderLayerTape& layer : steps.layers)
    attn::testing::check_attention_rows(layer.attention.weights, input.attention_mask);
}

TEST_CASE("gpt2_state_dict writes back what the folder holds", "[gpt2][state_dict]") {
  for (const char* folder : {"d21_model", "d21_lm"}) {
    INFO("folder " << folder);
    const attn::PretrainedFolder opened = attn::open_pretrained(gpt2_fixture(folder));
    const attn::StateDict file = attn::read_pretrained_weights(opened);
    const attn::Gpt2 model =
        attn::load_gpt2(attn::gpt2_config(opened), attn::StateDict(file), opened.shown);
    const attn::StateDict written = attn::gpt2_state_dict(model);
    REQUIRE(written.size() == file.size());
    for (const auto& [key, array] : file) {
      INFO("key " << key);
      REQUIRE(written.count(key) == 1);
      CHECK(written.at(key).shape == array.shape);
      CHECK(written.at(key).bytes == array.bytes);  // the same floats, no arithmetic
    }
  }
  // The hub's form comes back under its own keys, without the mask buffers.
  const attn::Gpt2 hub = load_folder("d12_hub");
  const attn::StateDict written = attn::gpt2_state_dict(hub);
  CHECK(written.count("wte.weight") == 1);
  CHECK(written.count("h.2.mlp.c_fc.weight") == 1);
  CHECK(written.count("lm_head.weight") == 0);
  CHECK(written.count("h.0.attn.bias") == 0);
  CHECK(written.count("h.0.attn.masked_bias") == 0);
  const attn::Gpt2 again = attn::load_gpt2(hub.config, attn::StateDict(written), "round trip");
  const attn::Gpt2Input input = read_input("padded");
  CHECK_ALLCLOSE(attn::to_array(attn::forward(again, input).logits),
                 attn::to_array(attn::forward(hub, input).logits), attn::testing::Tolerance{0, 0});
}

TEST_CASE("gpt2_reads skips the mask buffers only", "[gpt2][state_dict]") {
  CHECK_FALSE(attn::gpt2_reads("h.0.attn.bias"));
  CHECK_FALSE(attn::gpt2_reads("transformer.h.11.attn.masked_bias"));
  CHECK(attn::gpt2_reads("transformer.h.0.attn.c_attn.bias"));
  CHECK(attn::gpt2_reads("wte.weight"));
  CHECK(attn::gpt2_reads("lm_head.weight"));
}

TEST_CASE("bad weights are named in one line with the folder", "[gpt2][errors]") {
  const attn::PretrainedFolder opened = attn::open_pretrained(gpt2_fixture("d21_lm"));
  const attn::Gpt2Config config = attn::gpt2_config(opened);
  SECTION("a missing key") {
    attn::StateDict weights = attn::read_pretrained_weights(opened);
    REQUIRE(weights.erase("transformer.h.1.mlp.c_proj.bias") == 1);
    const std::string message =
        error_of([&] { attn::load_gpt2(config, std::move(weights), opened.shown); });
    CHECK_THAT(message,
               Catch::Contains("transformer.h.1.mlp.c_proj.bias") && Catch::Contains(opened.shown));
  }
  SECTION("a wrong shape: c_attn stored (out, in) as a Linear would") {
    attn::StateDict weights = attn::read_pretrained_weights(opened);
    attn::Array& c_attn = weights.at("transformer.h.0.attn.c_attn.weight");  // (D,3D)
    REQUIRE(c_attn.shape == attn::Shape{21, 63});
    c_attn.shape = {63, 21};
    const std::string message =
        error_of([&] { attn::load_gpt2(config, std::move(weights), opened.shown); });
    CHECK_THAT(message, Catch::Contains("transformer.h.0.attn.c_attn.weight") &&
                            Catch::Contains("63") && Catch::Contains(opened.shown));
  }
  SECTION("an lm_head.weight that is not wte while tie_word_embeddings is true") {
    attn::StateDict weights = attn::read_pretrained_weights(opened);
    attn::Array head = weights.at("transformer.wte.weight");
    std::vector<float> values = attn::to_float_vector(head);
    values[5] += 0.25f;
    weights.emplace("lm_head.weight", attn::make_float32(head.shape, values));
    const std::string message =
        error_of([&] { attn::load_gpt2(config, std::move(weights), opened.shown); });
    CHECK_THAT(message,
               Catch::Contains("lm_head.weight") && Catch::Contains("tie_word_embeddings"));
  }
  SECTION("an extra block") {
    attn::StateDict weights = attn::read_pretrained_weights(opened);
    weights.emplace("transformer.h.2.ln_1.weight", weights.at("transformer.h.1.ln_1.weight"));
    const std::string message =
        error_of([&] { attn::load_gpt2(config, std::move(weights), opened.shown); });
    CHECK_THAT(message, Catch::Contains("transformer.h.2.ln_1.weight"));
  }
}

TEST_CASE("config.json options attn does not compute are refused in one line", "[gpt2][errors]") {
  const attn::testing::ScratchDir dir("gpt2-config");
  SECTION("add_cross_attention") {
    const std::string folder =
        folder_with_config(dir, "d21_lm", "activation_function",
                           "\"activation_function\": \"gelu_new\", \"add_cross_attention\": true,");
    const std::string message = error_of([&] { attn::gpt2_config(attn::open_pretrained(folder)); });
    CHECK_THAT(message, Catch::Contains("add_cross_attention") && Catch::Contains("config.json"));
  }
  SECTION("a BERT's model_type") {
    const std::string folder =
        folder_with_config(dir, "d21_lm", "model_type", "\"model_type\": \"bert\",");
    const std::string message = error_of([&] { attn::gpt2_config(attn::open_pretrained(folder)); });
    CHECK_THAT(message, Catch::Contains("model_type") && Catch::Contains("bert"));
  }
  SECTION("scale_attn_by_inverse_layer_idx") {
    const std::string folder = folder_with_config(dir, "d21_lm", "scale_attn_by_inverse_layer_idx",
                                                  "\"scale_attn_by_inverse_layer_idx\": true,");
    const std::string message = error_of([&] { attn::gpt2_config(attn::open_pretrained(folder)); });
    CHECK_THAT(message, Catch::Contains("scale_attn_by_inverse_layer_idx"));
  }
}
