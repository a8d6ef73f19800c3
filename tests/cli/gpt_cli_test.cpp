// attn gpt (lesson 15): the causal property from the outside (a later token changed, no earlier
// position's logits move), the lesson on a GPT-2 folder against the PyTorch reference
// (data/generator/gpt2.py), its golden output there, and the refusals.
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

// The lesson's JSON document on `text` (the lesson's own model at seed 0).
nlohmann::json lesson_json(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"gpt", "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_attn(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

// A step's values, flattened.
std::vector<double> values_of(const nlohmann::json& doc, const std::string& name) {
  std::vector<double> out;
  for (const nlohmann::json& step : doc["steps"]) {
    if (step["name"] != name) continue;
    const std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& v) {
      if (!v.is_array()) {
        out.push_back(v.get<double>());
        return;
      }
      for (const nlohmann::json& e : v)
        walk(e);
    };
    walk(step["values"]);
  }
  REQUIRE_FALSE(out.empty());
  return out;
}

}  // namespace

TEST_CASE("attn gpt: changing a later token does not change an earlier position's logits",
          "[cli][gpt]") {
  const nlohmann::json a = lesson_json({"--text", "to be or not"});
  const nlohmann::json b = lesson_json({"--text", "to be or nox"});
  const std::vector<double> before = values_of(a, "logits"), after = values_of(b, "logits");
  REQUIRE(before.size() == after.size());
  const std::size_t vocab = before.size() / 12;
  REQUIRE(vocab * 12 == before.size());
  for (std::size_t i = 0; i < 11 * vocab; ++i) {
    INFO("position " << i / vocab << ", token " << i % vocab);
    CHECK(before[i] == after[i]);
  }
  double moved = 0.0;
  for (std::size_t i = 11 * vocab; i < before.size(); ++i)
    moved += std::abs(before[i] - after[i]);
  CHECK(moved > 1e-3);
  // The lesson's own checks say the same, and its weights are zero above the diagonal.
  for (const nlohmann::json* doc : {&a, &b})
    for (const nlohmann::json& check : (*doc)["checks"]) {
      INFO(check["name"].get<std::string>() << ": " << check["detail"].get<std::string>());
      CHECK(check["passed"] == true);
    }
}

TEST_CASE("attn gpt: one pass's loss is the mean of -log p(next) over T - 1 positions",
          "[cli][gpt]") {
  const nlohmann::json doc = lesson_json({"--text", "abcab", "--seed", "2"});
  const std::vector<double> logits = values_of(doc, "logits"), losses = values_of(doc, "losses"),
                            loss = values_of(doc, "loss"), targets = values_of(doc, "targets");
  REQUIRE(losses.size() == 4);
  REQUIRE(targets == std::vector<double>{9, 10, 8, 9});  // b c a b in the lesson's characters
  const std::size_t vocab = logits.size() / 5;
  double sum = 0.0;
  for (std::size_t t = 0; t < 4; ++t) {
    double largest = -1e300, z = 0.0;
    for (std::size_t v = 0; v < vocab; ++v)
      largest = std::max(largest, logits[t * vocab + v]);
    for (std::size_t v = 0; v < vocab; ++v)
      z += std::exp(logits[t * vocab + v] - largest);
    const double expected =
        -(logits[t * vocab + static_cast<std::size_t>(targets[t])] - largest - std::log(z));
    CHECK(losses[t] == Approx(expected).epsilon(1e-5));
    sum += expected;
  }
  CHECK(loss[0] == Approx(sum / 4).epsilon(1e-5));
}

TEST_CASE(
    "attn gpt --pretrained: the embeddings, block 0's weights and the logits are "
    "transformers'",
    "[cli][gpt][gpt2][parity]") {
  ScratchDir scratch("gpt-pretrained");
  const fs::path out = scratch.path / "out";
  const auto r = run_attn({"gpt", "--pretrained", folder("d21_lm"), "--text",
                           "The cat sat on the mat.", "--save", out.string(), "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto expected = [](const std::string& name) {
    return attn::read_npy(fixture_path("gpt2/expected/d21/sentence/" + name + ".npy"));
  };
  CHECK_ALLCLOSE(attn::read_npy((out / "hidden_states.0.npy").string()),
                 expected("hidden_states.0"));
  CHECK_ALLCLOSE(attn::read_npy((out / "weights.npy").string()), expected("attentions.0"));
  CHECK_ALLCLOSE(attn::read_npy((out / "logits.npy").string()), expected("logits"));
}

TEST_CASE("attn gpt golden output on a GPT-2 folder", "[cli][gpt][gpt2][golden]") {
  ScratchDir scratch("gpt-golden");
  attn::testing::make_cache(scratch.path / "hf", "attn-tests/gpt2-mini", folder("d21_lm"));
  std::vector<std::string> env = attn::testing::kPlainTerminal;
  env.insert(env.end(), {"HF_HOME=" + (scratch.path / "hf").string(), "HF_HUB_CACHE"});
  check_golden(
      "gpt_pretrained",
      {"gpt", "--pretrained", "attn-tests/gpt2-mini", "--text", "The cat sat.", "--layer", "1"},
      env);
}

TEST_CASE("attn gpt refuses what its model cannot read", "[cli][gpt][bad-input]") {
  const auto check = [](const std::vector<std::string>& args, const std::string& part) {
    const auto r = run_attn(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(part) != std::string::npos);
  };
  check({"gpt", "--seed", "0", "--text", "To be"},
        "--text: 'T' is not one of the model's 34 characters");
  check({"gpt", "--seed", "0", "--text", std::string(33, 'a')},
        "33 characters, more than the model's 32");
  check({"gpt", "--seed", "0", "--layer", "2"},
        "--layer: block 2 does not exist: the model has 2 blocks, 0 to 1");
  // The shipped gpt-char: 80 characters of Moby-Dick, 128 positions, 4 blocks.
  check({"gpt", "--text", "naïve"}, "--text: the text has a character the vocabulary's 80 tokens");
  check({"gpt", "--text", std::string(129, 'a')}, "129 tokens, more than the model's 128");
  check({"gpt", "--layer", "4"}, "--layer: block 4 does not exist: the model has 4 blocks, 0 to 3");
  check({"gpt", "--pretrained", folder("d21_lm"), "--seed", "3"}, "--seed");
  check({"gpt", "--pretrained", fixture_path("bert/d12_model")}, "is a BERT folder");
}
