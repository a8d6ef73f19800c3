// The commands on Hugging Face BERT folders (--pretrained): transformers' outputs through
// `attn encoder --save` and --format json for every layout data/generator/bert.py writes, a name
// found in the Hugging Face cache, the MLM head's predictions, the views, torchinfo's table, and
// one layer in the attention, multi-head and backward lessons.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "golden.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "pretrained_case.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::check_golden;
using attn::testing::fixture_path;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

std::string folder(const std::string& name) {
  return fixture_path("bert/" + name);
}

attn::Array expected(const std::string& set, const std::string& input, const std::string& name) {
  return attn::read_npy(fixture_path("bert/expected/" + set + "/" + input + "/" + name + ".npy"));
}

}  // namespace

TEST_CASE("attn encoder --pretrained --save writes transformers' outputs, for every layout",
          "[cli][pretrained][parity]") {
  const auto cases =
      nlohmann::json::parse(attn::testing::read_text(fixture_path("bert/cases.json")));
  REQUIRE(cases["folders"].size() >= 9);
  for (const auto& [name, c] : cases["folders"].items()) {
    for (const std::string input : {"sentence", "pair"}) {
      DYNAMIC_SECTION(name << " " << input) {
        ScratchDir scratch("pretrained-" + name + "-" + input);
        const fs::path out = scratch.path / "out";
        std::vector<std::string> args = {"encoder", "--pretrained", folder(name),
                                         "--save",  out.string(),   "--quiet"};
        if (input == "pair") args.insert(args.end(), {"--pair", "fruit flies like a banana"});
        const auto r = run_attn(args);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        CHECK(attn::read_npy((out / "input_ids.npy").string()).bytes ==
              attn::read_npy(fixture_path("bert/inputs/" + input + "/input_ids.npy")).bytes);
        CHECK(attn::read_npy((out / "token_type_ids.npy").string()).bytes ==
              attn::read_npy(fixture_path("bert/inputs/" + input + "/token_type_ids.npy")).bytes);
        const std::string set = c["expected"];
        for (const std::string step : cases["expected"][set]) {
          INFO(step);
          if (step == "logits" && c["architecture"] == "BertModel") {
            CHECK_FALSE(fs::exists(out / "logits.npy"));
            continue;
          }
          if (step == "pooler_output" && c["architecture"] == "BertForMaskedLM") {
            CHECK_FALSE(fs::exists(out / "pooler_output.npy"));
            continue;
          }
          REQUIRE(fs::exists(out / (step + ".npy")));
          CHECK_ALLCLOSE(attn::read_npy((out / (step + ".npy")).string()),
                         expected(set, input, step));
        }
      }
    }
  }
}

TEST_CASE("the JSON document holds the values --save writes", "[cli][pretrained]") {
  const auto r = run_attn({"encoder", "--pretrained", folder("d12_pretraining"), "--format", "json",
                           "--text", "time flies like an arrow"});
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& step : doc["steps"])
    names.push_back(step["name"]);
  for (const char* name :
       {"input_ids", "token_type_ids", "attention_mask", "hidden_states.0", "hidden_states.2",
        "attentions.0", "attentions.1", "pooler_output", "logits"})
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  for (const auto& step : doc["steps"]) {
    if (step["name"] != "hidden_states.2") continue;
    const attn::Array want = expected("d12", "sentence", "hidden_states.2");
    std::vector<float> got;
    for (const auto& row : step["values"][0])
      for (const auto& v : row)
        got.push_back(v.get<float>());
    CHECK_ALLCLOSE(attn::make_float32(want.shape, got), want);
  }
}

TEST_CASE("a bare name is read from the Hugging Face cache, a path always winning",
          "[cli][pretrained]") {
  ScratchDir scratch("pretrained-cache");
  attn::testing::make_cache(scratch.path / "hf", "attn-tests/bert-mini", folder("d12_masked_lm"));
  const std::vector<std::string> env = {"HF_HOME=" + (scratch.path / "hf").string(),
                                        "HF_HUB_CACHE"};
  const fs::path out = scratch.path / "out";
  const auto r =
      run_attn({"encoder", "--pretrained", "attn-tests/bert-mini", "--save", out.string()}, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_ALLCLOSE(attn::read_npy((out / "logits.npy").string()),
                 expected("d12", "sentence", "logits"));
  const auto missing = run_attn({"encoder", "--pretrained", "attn-tests/bert-large"}, env);
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("attn never downloads") != std::string::npos);
  CHECK(missing.err.find("huggingface-cli download attn-tests/bert-large") != std::string::npos);
}

TEST_CASE("each [MASK]'s predictions are the softmax of its logits, most probable first",
          "[cli][pretrained]") {
  ScratchDir scratch("pretrained-mask");
  const fs::path out = scratch.path / "out";
  const auto r = run_attn({"encoder", "--pretrained", folder("d12_masked_lm"), "--text",
                           "time flies like an [MASK] .", "--save", out.string()},
                          attn::testing::kPlainTerminal);
  REQUIRE(r.exit_code == 0);
  const attn::Array logits = attn::read_npy((out / "logits.npy").string());
  const std::size_t vocab = logits.shape[2], at = 5;  // [CLS] time flies like an [MASK]
  std::vector<double> row(vocab);
  for (std::size_t v = 0; v < vocab; ++v)
    row[v] = logits.float32_at(at * vocab + v);
  const double top = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (double z : row)
    sum += std::exp(z - top);
  std::vector<std::size_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return row[a] > row[b]; });
  std::vector<std::string> tokens;
  std::ifstream vocab_file(folder("d12_masked_lm") + "/vocab.txt");
  for (std::string line; std::getline(vocab_file, line);)
    tokens.push_back(line);
  for (std::size_t rank = 0; rank < 5; ++rank) {
    const std::size_t id = order[rank];
    const std::string line = fmt::format("{}  {}  {:>4}  {:.4f}", rank + 1, tokens[id], id,
                                         std::exp(row[id] - top) / sum);
    INFO(line << "\n" << r.out);
    // The table's row, its columns aligned: rank, token, id and probability in that order.
    bool found = false;
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);) {
      std::istringstream words(l);
      std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
      if (w.size() >= 4 && w[w.size() - 4] == std::to_string(rank + 1) &&
          w[w.size() - 3] == tokens[id] && w[w.size() - 2] == std::to_string(id) &&
          w[w.size() - 1] == fmt::format("{:.4f}", std::exp(row[id] - top) / sum))
        found = true;
    }
    CHECK(found);
  }
}

TEST_CASE("summary --pretrained is torchinfo's table of BertModel", "[cli][pretrained][summary]") {
  const auto r =
      run_attn({"summary", "--pretrained", folder("d12_model"), "--batch", "2", "--seq", "7"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == attn::testing::read_text(std::string(ATTN_GOLDEN_DIR) +
                                          "/torchinfo/bert/BertModel_d12_b2_t7__defaultcols__"
                                          "depth3.txt"));
}

TEST_CASE("golden outputs of the commands on a BERT folder", "[cli][pretrained][golden]") {
  ScratchDir scratch("pretrained-golden");
  attn::testing::make_cache(scratch.path / "hf", "attn-tests/bert-mini", folder("d12_pretraining"));
  std::vector<std::string> env = attn::testing::kPlainTerminal;
  env.insert(env.end(), {"HF_HOME=" + (scratch.path / "hf").string(), "HF_HUB_CACHE"});
  const std::string name = "attn-tests/bert-mini";
  check_golden("encoder_pretrained",
               {"encoder", "--pretrained", name, "--text", "time flies like an [MASK] ."}, env);
  check_golden(
      "view_neuron_pretrained",
      {"view", "neuron", "--pretrained", name, "--layer", "1", "--head", "2", "--token", "3"}, env);
  check_golden("view_head_pretrained_pair",
               {"view", "head", "--pretrained", name, "--text", "time flies like an arrow",
                "--pair", "fruit flies like a banana", "--heads", "1"},
               env);
  check_golden("attention_pretrained",
               {"attention", "--pretrained", name, "--layer", "1", "--head", "2"}, env);
  check_golden("tokens_pretrained", {"tokens", "--pretrained", name, "--text", "Time flies!"}, env);
}

TEST_CASE("the attention lessons run the layer's own heads on what the layer reads",
          "[cli][pretrained]") {
  ScratchDir scratch("pretrained-attention");
  const fs::path one = scratch.path / "one", all = scratch.path / "all";
  const auto a = run_attn({"attention", "--pretrained", folder("d12_model"), "--layer", "1",
                           "--head", "2", "--save", one.string()});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  const attn::Array layer_1 = expected("d12", "sentence", "attentions.1");  // (1,H,T,T)
  const std::size_t heads = layer_1.shape[1], tokens = layer_1.shape[2];
  std::vector<float> head_2(tokens * tokens);
  for (std::size_t i = 0; i < head_2.size(); ++i)
    head_2[i] = layer_1.float32_at(2 * tokens * tokens + i);
  CHECK_ALLCLOSE(attn::read_npy((one / "weights.npy").string()),
                 attn::make_float32({1, tokens, tokens}, head_2));
  CHECK_ALLCLOSE(attn::read_npy((one / "input.npy").string()),
                 expected("d12", "sentence", "hidden_states.1"));
  const auto m = run_attn(
      {"multi-head", "--pretrained", folder("d12_model"), "--layer", "1", "--save", all.string()});
  INFO(m.err);
  REQUIRE(m.exit_code == 0);
  CHECK(heads == 3);
  CHECK_ALLCLOSE(attn::read_npy((all / "weights.npy").string()), layer_1);
}

TEST_CASE(
    "backward --pretrained: the layer's gradients under transformers' keys, against "
    "finite differences",
    "[cli][pretrained][gradients]") {
  ScratchDir scratch("pretrained-backward");
  // y.backward(G) is the gradient of sum(G * y), for a fixed G.
  const attn::Array x = expected("d12", "sentence", "hidden_states.1");
  std::vector<float> g_values(x.size());
  for (std::size_t i = 0; i < g_values.size(); ++i)
    g_values[i] = std::sin(0.7f * static_cast<float>(i));
  const attn::Array g_array = attn::make_float32(x.shape, g_values);
  const fs::path g = scratch.path / "g.npy";
  attn::write_npy(g.string(), g_array);
  const fs::path out = scratch.path / "out";
  const auto r = run_attn({"backward", "--pretrained", folder("d12_model"), "--layer", "1",
                           "--grad-output", g.string(), "--save", out.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // sum(G * y) of layer 1 with one weight moved by ±h, read back through the command itself.
  attn::StateDict weights = attn::read_weights(folder("d12_model") + "/model.safetensors");
  auto sum_with = [&](const std::string& key, std::size_t index, float delta) {
    attn::StateDict moved = weights;
    float value = 0.0f;
    std::memcpy(&value, moved.at(key).bytes.data() + 4 * index, 4);
    value += delta;
    std::memcpy(moved.at(key).bytes.data() + 4 * index, &value, 4);
    const fs::path dir = scratch.path / "moved";
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* file : {"config.json", "vocab.txt", "tokenizer_config.json"})
      fs::copy_file(folder("d12_model") + "/" + file, dir / file);
    attn::write_weights((dir / "model.safetensors").string(), moved, {{"format", "pt"}});
    const fs::path saved = scratch.path / "moved-out";
    fs::remove_all(saved);
    REQUIRE(
        run_attn({"encoder", "--pretrained", dir.string(), "--save", saved.string()}).exit_code ==
        0);
    const attn::Array y = attn::read_npy((saved / "hidden_states.2.npy").string());
    double sum = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i)
      sum += static_cast<double>(g_values[i]) * y.float32_at(i);
    return sum;
  };
  const float h = 1e-2f;
  // Row 9 of query is head 2's first row (hs 4); value.bias 5 is head 1's second.
  for (const auto& [key, index] : std::vector<std::pair<std::string, std::size_t>>{
           {"encoder.layer.1.attention.self.query.weight", 9 * 12 + 4},
           {"encoder.layer.1.attention.self.value.bias", 5},
           {"encoder.layer.1.intermediate.dense.weight", 7},
           {"encoder.layer.1.output.LayerNorm.weight", 3}}) {
    INFO(key << "[" << index << "]");
    const attn::Array grad = attn::read_npy((out / ("grad." + key + ".npy")).string());
    const double numeric = (sum_with(key, index, h) - sum_with(key, index, -h)) / (2.0 * h);
    const double analytic = grad.float32_at(index);
    CHECK(std::abs(numeric - analytic) <= 2e-2 * std::max(1.0, std::abs(analytic)));
  }
}
