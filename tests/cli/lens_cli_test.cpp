// attn lens (lesson 19): the lens of a GPT-2 folder against PyTorch's (data/make_logit_lens_fixture.py),
// a folder of attn train --model gpt, the JSON document, the exported page, and the refusals.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "golden.hpp"
#include "io/npy.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::check_golden;
using attn::testing::fixture_path;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

const nlohmann::json& step_of(const nlohmann::json& doc, const std::string& name) {
  for (const nlohmann::json& step : doc["steps"])
    if (step["name"] == name) return step;
  FAIL("no step " << name);
  return doc;
}

}  // namespace

TEST_CASE("attn lens --pretrained: every row's logits are PyTorch's logit lens",
          "[cli][lens][gpt2][parity]") {
  // data/make_logit_lens_fixture.py: the folder d21_lm on the first 4 ids of the sentence.
  ScratchDir scratch("lens-pretrained");
  const fs::path out = scratch.path / "out";
  const auto r = run_attn({"lens", "--pretrained", fixture_path("gpt2/d21_lm"), "--ids",
                           "268,265,267,271", "--save", out.string(), "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_ALLCLOSE(attn::read_npy((out / "lens_logits.npy").string()),
                 attn::read_npy(fixture_path("logit-lens/lens_logits.npy")),
                 (attn::testing::Tolerance{1e-5, 1e-4}));
  CHECK(fs::exists(out / "lens_log_probs.npy"));
}

TEST_CASE("attn lens --format json: every row x position's top K and the final prediction's rank",
          "[cli][lens][json]") {
  const auto r = run_attn({"lens", "--text", "the whale", "--top", "3", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(doc["lesson"] == "lens");
  // gpt-char: 4 blocks, so 5 rows; "the whale" is 9 characters, one token each.
  const nlohmann::json& top = step_of(doc, "top_ids");
  CHECK(top["shape"] == std::vector<int>{5, 9, 3});
  const nlohmann::json& probabilities = step_of(doc, "top_probabilities");
  const nlohmann::json& rank = step_of(doc, "final_rank");
  REQUIRE(rank["shape"] == std::vector<int>{5, 9});
  for (std::size_t t = 0; t < 9; ++t) {
    CHECK(rank["values"][4][t] == 1);  // the last row is the model's own prediction
    for (std::size_t r_ = 0; r_ < 5; ++r_) {
      const auto& p = probabilities["values"][r_][t];
      CHECK(p[0].get<double>() >= p[1].get<double>());
      CHECK(p[1].get<double>() >= p[2].get<double>());
    }
  }
  // Each position's settling row: rank 1 from there to the last row, not in the row before.
  const nlohmann::json& settles = step_of(doc, "final_settles_at")["values"];
  for (std::size_t t = 0; t < 9; ++t) {
    const std::size_t from = settles[t].get<std::size_t>();
    for (std::size_t r_ = from; r_ < 5; ++r_)
      CHECK(rank["values"][r_][t] == 1);
    if (from > 0) CHECK(rank["values"][from - 1][t] != 1);
  }
  CHECK(doc["top_tokens"].size() == 5 * 9 * 3);
  for (const nlohmann::json& check : doc["checks"])
    CHECK(check["passed"] == true);
}

TEST_CASE("attn lens reads a GPT folder of attn train --model gpt", "[cli][lens]") {
  const auto r = run_attn({"lens", "--checkpoint", fixture_path("gpt-folder"), "--text",
                           "Call me Ishmael.", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(step_of(doc, "final_rank")["shape"] == std::vector<int>{3, 16});
}

TEST_CASE("attn lens --export writes one page with the lens's table", "[cli][lens]") {
  ScratchDir scratch("lens-export");
  const fs::path page = scratch.path / "lens.html";
  const auto r = run_attn({"lens", "--text", "the whale", "--export", page.string(), "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string html = attn::testing::read_text(page.string());
  CHECK(html.starts_with("<!DOCTYPE html>\n<!-- written by attn -->"));
  CHECK(html.find("<table class=\"lens\">") != std::string::npos);
  CHECK(html.find("<th class=\"row\">embeddings</th>") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);
}

TEST_CASE("attn lens refuses encoders, long texts and positions or K out of range",
          "[cli][lens][bad-input]") {
  const auto check = [](const std::vector<std::string>& args, const std::string& part) {
    const auto r = run_attn(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(part) != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);
  };
  check({"lens", "--pretrained", fixture_path("bert/d12_model")},
        "--pretrained: '" + fixture_path("bert/d12_model") + "' is a BERT folder, an encoder");
  check({"lens", "--checkpoint", "reverse"},
        "--checkpoint: 'reverse' is a checkpoint of attn train's encoder");
  check({"lens", "--checkpoint", "transformer-reverse"}, "is attn train's encoder-decoder");
  check({"lens", "--text", std::string(129, 'a')}, "129 tokens, more than the model's 128");
  check({"lens", "--text", "abc", "--position", "3"},
        "--position: position 3 does not exist: the text has 3 tokens, positions 0 to 2");
  check({"lens", "--top", "81"},
        "--top: 81 is more than the model's 80 tokens: give --top 1 to 80");
  check({"lens", "--top", "0"}, "--top");
  check({"lens", "--export", "lens.png"}, "--export");
}
