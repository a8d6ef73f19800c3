// Lesson 17's prediction, answered in lessons/17-heads/hints.md's last stage: the held-out
// sequence accuracies it quotes for the shipped reverse checkpoint with head 0.1, head 0.0 and
// both zeroed are the ones `attn heads --ablate` prints, so the hint fails here when the
// checkpoint is retrained.
#include <string>
#include <utility>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "paths.hpp"
#include "run_attn.hpp"

using attn::testing::run_attn;

namespace {

// The held-out sequence accuracy before and after zeroing `heads`, as the ablation table prints
// them ("1.0000", "0.7955").
std::pair<std::string, std::string> sequence_accuracy(const std::string& heads) {
  const auto run =
      run_attn({"heads", "--checkpoint", "reverse", "--ablate", heads, "--format", "json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(run.out);
  for (const nlohmann::json& table : doc["tables"]) {
    if (table["title"].get<std::string>().rfind("Ablating", 0) != 0) continue;
    for (const nlohmann::json& row : table["rows"])
      if (row[0].get<std::string>().find("sequence_accuracy") != std::string::npos)
        return {row[1].get<std::string>(), row[2].get<std::string>()};
  }
  FAIL("attn heads --ablate " << heads << " printed no sequence accuracy row");
  return {};
}

std::string hints() {
  std::string flat = attn::testing::read_text(std::string(attn::testing::paths::kSourceDir) +
                                              "/lessons/17-heads/hints.md");
  for (char& c : flat)
    if (c == '\n') c = ' ';
  return flat;
}

}  // namespace

TEST_CASE("the ablation answer in lesson 17's hints is what attn heads measures on reverse",
          "[cli][heads]") {
  const std::string text = hints();
  const auto [before, without_1] = sequence_accuracy("0.1");
  const auto [same, without_0] = sequence_accuracy("0.0");
  const auto [again, without_both] = sequence_accuracy("0.0,0.1");
  CHECK(same == before);
  CHECK(again == before);
  INFO("hints.md: " << text);
  CHECK(text.find("zeroing head 0.1 alone takes the held-out sequence accuracy from " + before +
                  " to " + without_1 + ";") != std::string::npos);
  CHECK(text.find("zeroing head 0.0 alone leaves it at " + without_0) != std::string::npos);
  CHECK(without_0 == before);  // "leaves it"
  CHECK(text.find("zeroing both takes it to " + without_both + ".") != std::string::npos);
  // the prediction's answer: 0.1 is the single head that costs most
  CHECK(std::stod(without_1) < std::stod(without_0));
}
