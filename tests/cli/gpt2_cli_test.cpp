// The commands on Hugging Face GPT-2 folders (--pretrained): `attn generate --save` against the
// PyTorch reference's outputs and cached greedy loop (data/generator/gpt2.py) for every layout,
// the JSON interface, seeded sampling, the views and lessons on a block, torchinfo's table, and
// the refusals.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "golden.hpp"
#include "io/npy.hpp"
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
  return fixture_path("gpt2/" + name);
}

attn::Array expected(const std::string& set, const std::string& input, const std::string& name) {
  return attn::read_npy(fixture_path("gpt2/expected/" + set + "/" + input + "/" + name + ".npy"));
}

nlohmann::json cases() {
  return nlohmann::json::parse(attn::testing::read_text(fixture_path("gpt2/cases.json")));
}

const char* const kPrompt = "The cat sat on the mat.";

// A step's "values" (nested lists) flattened.
void flatten(const nlohmann::json& values, std::vector<double>& out) {
  if (!values.is_array()) {
    out.push_back(values.get<double>());
    return;
  }
  for (const nlohmann::json& v : values)
    flatten(v, out);
}

const nlohmann::json& step_of(const nlohmann::json& doc, const std::string& name) {
  for (const nlohmann::json& s : doc["steps"])
    if (s["name"] == name) return s;
  FAIL("no step " << name);
  return doc;
}

std::vector<std::int64_t> ids_of(const attn::Array& a) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < a.size(); ++i)
    out.push_back(a.integer(i));
  return out;
}

}  // namespace

TEST_CASE(
    "attn generate --pretrained --save writes transformers' outputs and greedy tokens, for "
    "every layout",
    "[cli][gpt2][parity]") {
  const nlohmann::json c = cases();
  REQUIRE(c["folders"].size() >= 8);
  const std::size_t new_tokens = c["generate"]["max_new_tokens"];
  for (const auto& [name, f] : c["folders"].items()) {
    DYNAMIC_SECTION(name) {
      ScratchDir scratch("gpt2-" + name);
      const fs::path out = scratch.path / "out";
      const auto r =
          run_attn({"generate", "--pretrained", folder(name), "--text", kPrompt, "--max-new-tokens",
                    std::to_string(new_tokens), "--save", out.string(), "--quiet"});
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      // The folder's tokenizer cut the prompt as GPT2Tokenizer did.
      CHECK(ids_of(attn::read_npy((out / "input_ids.npy").string())) ==
            ids_of(attn::read_npy(fixture_path("gpt2/inputs/sentence/input_ids.npy"))));
      const std::string set = f["expected"];
      for (const std::string step : c["expected"][set]["arrays"]) {
        INFO(step);
        REQUIRE(fs::exists(out / (step + ".npy")));
        CHECK_ALLCLOSE(attn::read_npy((out / (step + ".npy")).string()),
                       expected(set, "sentence", step));
      }
      // The cached generation's tokens are PyTorch's cached loop's, and so are their log-probs.
      CHECK(ids_of(attn::read_npy((out / "generated_ids.npy").string())) ==
            ids_of(expected(set, "generate", "generated_ids")));
      attn::Array log_probs = expected(set, "generate", "log_probs");
      log_probs.shape = {log_probs.size()};
      CHECK_ALLCLOSE(attn::read_npy((out / "log_probs.npy").string()), log_probs);
    }
  }
}

TEST_CASE("generate --format json gives the new ids and each pick's log-probability",
          "[cli][gpt2]") {
  const auto r = run_attn({"generate", "--pretrained", folder("d12_hub"), "--ids", "84,104,101",
                           "--max-new-tokens", "4", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& ids = step_of(doc, "generated_ids");
  const nlohmann::json& log_probs = step_of(doc, "log_probs");
  REQUIRE(ids["shape"] == nlohmann::json::array({4}));
  REQUIRE(log_probs["shape"] == nlohmann::json::array({4}));
  for (const auto& p : log_probs["values"])
    CHECK(p.get<double>() <= 0.0);
  // The prompt's forward is in the document too; greedy decoding's first pick is the arg max of
  // its logits' last row.
  const nlohmann::json& logits = step_of(doc, "logits");
  REQUIRE(logits["shape"] == nlohmann::json::array({1, 3, 297}));
  std::vector<double> last;
  flatten(logits["values"][0][2], last);
  CHECK(std::max_element(last.begin(), last.end()) - last.begin() ==
        ids["values"][0].get<std::int64_t>());
}

TEST_CASE("seeded sampling repeats itself, and top-k 1 is greedy decoding", "[cli][gpt2]") {
  const std::vector<std::string> base = {"generate", "--pretrained", folder("d21_lm"),
                                         "--text",   kPrompt,        "--max-new-tokens",
                                         "8",        "--format",     "json"};
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_attn(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return step_of(nlohmann::json::parse(r.out), "generated_ids")["values"];
  };
  const nlohmann::json greedy = run({});
  CHECK(run({"--top-k", "1", "--seed", "3"}) == greedy);
  const nlohmann::json a = run({"--temperature", "1.5", "--seed", "7"});
  CHECK(run({"--temperature", "1.5", "--seed", "7"}) == a);
  // At temperature 1.5 over 297 tokens, five seeds all drawing the greedy sequence would take a
  // model far more certain than this random one.
  bool any_differs = false;
  for (const char* seed : {"1", "2", "3", "4", "5"})
    any_differs = any_differs || run({"--temperature", "1.5", "--seed", seed}) != greedy;
  CHECK(any_differs);
}

TEST_CASE(
    "the views and the attention lessons take a GPT-2 folder: causal, on ln_1 of a block's "
    "input",
    "[cli][gpt2]") {
  const auto a = run_attn({"attention", "--pretrained", folder("d21_lm"), "--layer", "1", "--head",
                           "2", "--text", kPrompt, "--format", "json"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  const auto m = run_attn({"multi-head", "--pretrained", folder("d21_lm"), "--layer", "0", "--text",
                           kPrompt, "--format", "json"});
  INFO(m.err);
  REQUIRE(m.exit_code == 0);
  // The multi-head lesson's weights of block 0 are transformers' attentions.0.
  const attn::Array want = expected("d21", "sentence", "attentions.0");
  std::vector<double> got;
  flatten(step_of(nlohmann::json::parse(m.out), "weights")["values"], got);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == Approx(want.float32_at(i)).margin(1e-5));
  // One head of block 1 in lesson 04: its weights are that head's slice of attentions.1.
  const attn::Array block_1 = expected("d21", "sentence", "attentions.1");  // (1,3,T,T)
  std::vector<double> head;
  flatten(step_of(nlohmann::json::parse(a.out), "weights")["values"], head);
  const std::size_t tt = block_1.size() / 3;
  REQUIRE(head.size() == tt);
  for (std::size_t i = 0; i < tt; ++i)
    CHECK(head[i] == Approx(block_1.float32_at(2 * tt + i)).margin(1e-5));
}

TEST_CASE("summary --pretrained on a GPT-2 folder is torchinfo's table of its class",
          "[cli][gpt2][summary]") {
  const auto r =
      run_attn({"summary", "--pretrained", folder("d21_lm"), "--batch", "1", "--seq", "8"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("GPT2LMHeadModel"));
  CHECK_THAT(r.out, Catch::Contains("GPT2Block: 3-2"));
  CHECK_THAT(r.out, Catch::Contains("Total params: 13,953"));
}

TEST_CASE("golden outputs of the commands on a GPT-2 folder", "[cli][gpt2][golden]") {
  ScratchDir scratch("gpt2-golden");
  attn::testing::make_cache(scratch.path / "hf", "attn-tests/gpt2-mini", folder("d21_lm"));
  std::vector<std::string> env = attn::testing::kPlainTerminal;
  env.insert(env.end(), {"HF_HOME=" + (scratch.path / "hf").string(), "HF_HUB_CACHE"});
  const std::string f = "attn-tests/gpt2-mini";
  check_golden("generate_gpt2",
               {"generate", "--pretrained", f, "--text", kPrompt, "--max-new-tokens", "5"}, env);
  check_golden("generate_gpt2_sampled",
               {"generate", "--pretrained", f, "--text", kPrompt, "--max-new-tokens", "5",
                "--temperature", "0.8", "--top-k", "20", "--seed", "4"},
               env);
  check_golden(
      "view_head_gpt2",
      {"view", "head", "--pretrained", f, "--text", kPrompt, "--layer", "1", "--heads", "0"}, env);
  check_golden("tokens_gpt2", {"tokens", "--pretrained", f, "--text", "The cat's mat, 10 times."},
               env);
  check_golden("attention_gpt2",
               {"attention", "--pretrained", f, "--layer", "0", "--head", "1", "--text", kPrompt},
               env);
}

TEST_CASE("GPT-2 folders are refused where they do not apply, in one line", "[cli][gpt2][errors]") {
  const auto refused = [](std::vector<std::string> args, const std::string& part) {
    const auto r = run_attn(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(part));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  const std::string f = folder("d21_lm");
  refused({"encoder", "--pretrained", f}, "is a GPT-2 folder, a decoder: attn generate");
  refused({"backward", "--pretrained", f}, "is a GPT-2 folder: backward --pretrained takes a BERT");
  refused({"generate", "--pretrained", fixture_path("bert/d12_masked_lm")},
          "is a BERT folder, an encoder");
  refused({"generate", "--pretrained", f, "--max-new-tokens", "32"},
          "--max-new-tokens 32 leaves no room for the prompt in the model's 32 positions");
  refused({"generate", "--pretrained", f, "--text", kPrompt, "--max-new-tokens", "30"},
          "7 prompt tokens and --max-new-tokens 30 need 37 positions, more than the model's 32");
  refused({"generate", "--pretrained", f, "--ids", "5,297"}, "297");
  refused({"generate", "--pretrained", f, "--no-cache"}, "drop --no-cache");
  refused({"generate", "--ids", "5,6"}, "--ids is for a GPT-2 folder: add --pretrained DIR");
  refused({"view", "head", "--pretrained", f, "--pair", "a dog"}, "--pair is BERT's second");
  refused({"attention", "--pretrained", f, "--layer", "2"},
          "layer 2 does not exist: the model has 2 blocks, 0 to 1");
}
