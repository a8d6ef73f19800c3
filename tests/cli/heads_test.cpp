// attn heads (lesson 17) from the outside: the shipped encoder checkpoints' heads are what the
// lessons claim, ablating reverse's mirror heads costs what it should, GPT-2 and BERT folders are
// scanned, and the refusals.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

using attn::testing::fixture_path;
using attn::testing::run_attn;

namespace {

nlohmann::json heads_json(std::vector<std::string> args) {
  args.insert(args.begin(), "heads");
  args.insert(args.end(), {"--format", "json"});
  const auto r = run_attn(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

const nlohmann::json& table(const nlohmann::json& doc, const std::string& starts) {
  for (const nlohmann::json& t : doc["tables"])
    if (t["title"].get<std::string>().rfind(starts, 0) == 0) return t;
  FAIL("no table " << starts);
  return doc;
}

// Each head's best pattern, "0.1" -> "mirror".
std::map<std::string, std::string> best_patterns(const nlohmann::json& doc) {
  std::map<std::string, std::string> out;
  for (const nlohmann::json& row : table(doc, "Each head's best pattern")["rows"])
    out[row[0].get<std::string>()] = row[1].get<std::string>();
  return out;
}

}  // namespace

TEST_CASE("the shipped checkpoints' heads are what the lessons claim", "[cli][heads]") {
  for (const std::string checkpoint : {"reverse", "previous-token", "sort", "histogram"}) {
    DYNAMIC_SECTION(checkpoint) {
      const nlohmann::json doc = heads_json({"--checkpoint", checkpoint});
      REQUIRE(doc["checks"].size() == 1);
      CHECK(doc["checks"][0]["passed"] == true);
      CHECK(doc["checks"][0]["name"] == checkpoint + "_heads");
      // (sets, patterns, layers, heads): the repeated probe and the task's held-out sequences;
      // six standard patterns, mirror included, and the task's.
      CHECK(doc["steps"][0]["shape"] == nlohmann::json({2, 7, 2, 2}));
    }
  }
  const auto reverse = best_patterns(heads_json({"--checkpoint", "reverse"}));
  for (const std::string head : {"0.0", "0.1"})
    CHECK((reverse.at(head) == "mirror" || reverse.at(head) == "reverse"));
  const auto previous = best_patterns(heads_json({"--checkpoint", "previous-token"}));
  CHECK((previous.at("0.0") == "previous" || previous.at("0.0") == "previous-token"));
}

TEST_CASE("the shipped induction model: its circuit found by attn heads and by lesson 18",
          "[cli][heads][induction]") {
  // attn heads scores previous and induction on the task's own held-out sequences.
  const nlohmann::json doc = heads_json({"--checkpoint", "induction", "--sequences", "20"});
  const auto best = best_patterns(doc);
  CHECK(best.at("0.0") == "previous");
  CHECK(best.at("1.0") == "induction");
  CHECK(best.at("1.1") == "induction");
  for (const nlohmann::json& row : table(doc, "Each head's best pattern")["rows"]) {
    const std::string head = row[0].get<std::string>();
    if (head == "0.0") CHECK(row[6] == "a previous head");
    if (head == "1.1") CHECK(row[6] == "an induction head");
  }
  // attn induction: every claim of the lesson holds on the shipped folder.
  const auto r = run_attn({"induction", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json lesson = nlohmann::json::parse(r.out);
  REQUIRE(lesson["checks"].size() >= 12);
  for (const nlohmann::json& check : lesson["checks"]) {
    INFO(check["name"]);
    CHECK(check["passed"] == true);
  }
}

TEST_CASE("ablating reverse's mirror heads costs its held-out accuracy", "[cli][heads]") {
  const nlohmann::json doc = heads_json({"--checkpoint", "reverse", "--ablate", "0.0,0.1"});
  const nlohmann::json& rows = table(doc, "Ablating 0.0, 0.1")["rows"];
  REQUIRE(rows.size() == 2);
  // token accuracy: 1.0000 with every head, far less without both mirror heads
  CHECK(std::stod(rows[0][1].get<std::string>()) > 0.99);
  CHECK(std::stod(rows[0][2].get<std::string>()) < 0.5);
}

TEST_CASE("GPT-2 and BERT folders are scanned, and a GPT's ablation moves its loss",
          "[cli][heads]") {
  const nlohmann::json gpt2 = heads_json({"--pretrained", fixture_path("gpt2/d21_lm"),
                                          "--sequences", "3", "--seq", "16", "--ablate", "1.0"});
  CHECK(gpt2["steps"][0]["shape"] == nlohmann::json({1, 5, 2, 3}));  // causal: no mirror
  const nlohmann::json& rows = table(gpt2, "Ablating 1.0 (zero")["rows"];
  REQUIRE(rows.size() == 2);
  CHECK(rows[0][1] != rows[0][2]);
  const nlohmann::json mean =
      heads_json({"--pretrained", fixture_path("gpt2/d21_lm"), "--sequences", "3", "--seq", "16",
                  "--ablate", "1.0", "--ablate-with", "mean"});
  const nlohmann::json& mean_rows = table(mean, "Ablating 1.0 (mean")["rows"];
  REQUIRE(mean_rows.size() == 2);
  CHECK(mean_rows[0][1] == rows[0][1]);  // the same model before
  CHECK(mean_rows[0][2] != rows[0][2]);  // another replacement after
  const nlohmann::json bert = heads_json(
      {"--pretrained", fixture_path("bert/d12_model"), "--sequences", "2", "--seq", "12"});
  CHECK(bert["steps"][0]["shape"][1] == 6);
  CHECK(best_patterns(bert).size() == bert["steps"][0]["shape"][2].get<std::size_t>() *
                                          bert["steps"][0]["shape"][3].get<std::size_t>());
}

TEST_CASE("attn heads refuses what it cannot scan, with one line", "[cli][heads]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--checkpoint", "transformer-reverse"}, "is an encoder-decoder"},
      {{"--checkpoint", "reverse", "--seq", "5"}, "drop --seq"},
      {{"--checkpoint", "reverse", "--ablate", "2.0"}, "layer 2 does not exist"},
      {{"--checkpoint", "reverse", "--ablate", "0.2"}, "head 2 does not exist"},
      {{"--checkpoint", "reverse", "--pretrained", "x"}, "give one model"},
      {{"--pretrained", fixture_path("bert/d12_model"), "--ablate", "0.0"}, "MLM head"},
      {{"--checkpoint", "gpt-char", "--seq", "129"}, "give --seq 128 or less"},
      {{"--checkpoint", "reverse", "--ablate", "0.0", "--ablate-with", "mean"},
       "drop --ablate-with"},
      {{"--checkpoint", "gpt-char", "--ablate", "0.0", "--ablate-with", "mean", "--sequences", "1"},
       "--sequences 2 or more"},
  };
  for (const auto& [args, words] : cases) {
    std::vector<std::string> full = {"heads"};
    full.insert(full.end(), args.begin(), args.end());
    const auto r = run_attn(full);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(words) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("attn view names each head by its best pattern on the text shown", "[cli][heads][view]") {
  const auto head = run_attn(
      {"view", "head", "--checkpoint", "previous-token", "--layer", "0", "--color", "never"});
  REQUIRE(head.exit_code == 0);
  CHECK(head.out.find("head 0: previous 0.") != std::string::npos);
  CHECK(head.out.find("head 1: previous 0.") != std::string::npos);
  const auto model = run_attn({"view", "model", "--checkpoint", "reverse", "--color", "never"});
  REQUIRE(model.exit_code == 0);
  CHECK(model.out.find("L0 H0 mirror 0.") != std::string::npos);
  CHECK(model.out.find("L0 H1 mirror 0.") != std::string::npos);
  // Cross-attention: its queries are not its keys, nothing to name.
  const auto cross = run_attn({"view", "model", "--checkpoint", "transformer-reverse", "--part",
                               "cross", "--color", "never"});
  REQUIRE(cross.exit_code == 0);
  CHECK(cross.out.find("best pattern") == std::string::npos);
}

TEST_CASE("attn heads --export writes the scan as a page, and only as HTML",
          "[cli][heads][export]") {
  attn::testing::ScratchDir scratch("heads-export");
  const std::string page = (scratch.path / "heads.html").string();
  const auto r = run_attn({"heads", "--checkpoint", "reverse", "--export", page});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string html = attn::testing::read_text(page);
  CHECK(html.find("<!-- written by attn -->") != std::string::npos);
  CHECK(html.find("<h3>mirror</h3>") != std::string::npos);
  CHECK(html.find("Check passed: lesson 04 on the shipped reverse checkpoint") !=
        std::string::npos);
  const auto png = run_attn(
      {"heads", "--checkpoint", "reverse", "--export", (scratch.path / "heads.png").string()});
  CHECK(png.exit_code == 2);
  CHECK(png.err.find("give a name ending in .html") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(scratch.path / "heads.png"));
}
