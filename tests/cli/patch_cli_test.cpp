// attn patch (lesson 20): on a GPT-2 folder, the patched logit differences and the direct logit
// attribution against PyTorch's hooks (data/make_patch_fixture.py), the checks it prints, its
// --save files and --export page; on the shipped gpt-char, what the lesson says of the default
// pair. Refusals are rows of docs/bad-input.md.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::fixture_path;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

nlohmann::json cases() {
  return nlohmann::json::parse(attn::testing::read_text(fixture_path("patch/cases.json")));
}

std::string id_list(const nlohmann::json& ids) {
  std::string out;
  for (const auto& id : ids)
    out += (out.empty() ? "" : ",") + std::to_string(id.get<int>());
  return out;
}

std::vector<std::string> fixture_command() {
  const nlohmann::json c = cases();
  return {"patch",
          "--pretrained",
          fixture_path("gpt2/d21_lm"),
          "--clean-ids",
          id_list(c["clean_ids"]),
          "--corrupt-ids",
          id_list(c["corrupt_ids"])};
}

nlohmann::json run_json(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
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
    for (const auto& row : step["values"]) {
      if (row.is_array())
        for (const auto& v : row)
          out.push_back(v.get<double>());
      else
        out.push_back(row.get<double>());
    }
  }
  REQUIRE_FALSE(out.empty());
  return out;
}

std::vector<double> flat(const nlohmann::json& rows) {
  std::vector<double> out;
  for (const auto& row : rows)
    for (const auto& v : row)
      out.push_back(v.get<double>());
  return out;
}

void check_close(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("entry " << i);
    CHECK(got[i] == Approx(expected[i]).margin(1e-4));
  }
}

}  // namespace

TEST_CASE("attn patch on a GPT-2 folder gives PyTorch's patched logit differences and DLA") {
  const nlohmann::json c = cases();
  const nlohmann::json doc = run_json(fixture_command());
  check_close(values_of(doc, "residual_logit_difference"), flat(c["residual"]));
  check_close(values_of(doc, "heads_logit_difference"), flat(c["heads"]));
  check_close(values_of(doc, "dla_heads"), flat(c["dla"]["heads"]));
  check_close(values_of(doc, "dla_mlps"), c["dla"]["mlps"].get<std::vector<double>>());
  CHECK(doc["settings"]["answer"] == "'J' (41)");
  for (const nlohmann::json& check : doc["checks"]) {
    INFO(check.dump());
    CHECK(check["passed"] == true);
  }
  CHECK(doc["checks"].size() == 4);  // the gap, agreeing positions, the one differing, the sum
}

TEST_CASE("attn patch --save writes the tables as .npy and --export a page of them") {
  ScratchDir dir("patch");
  std::vector<std::string> args = fixture_command();
  const std::string save = (dir.path / "out").string();
  const std::string page = (dir.path / "patch.html").string();
  args.insert(args.end(), {"--save", save, "--export", page, "--quiet"});
  const auto r = run_attn(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const attn::Array restored = attn::read_npy(save + "/residual_restored.npy");
  CHECK(restored.shape == attn::Shape{2, 8});
  CHECK(attn::read_npy(save + "/heads_restored.npy").shape == attn::Shape{2, 3});
  const std::string html = attn::testing::read_text(page);
  CHECK(html.find("<!-- written by attn -->") != std::string::npos);
  CHECK(html.find("Fraction restored by the clean stream entering each block") !=
        std::string::npos);
  CHECK(html.find("direct share") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  // a picture is not what it writes
  std::vector<std::string> png = fixture_command();
  png.insert(png.end(), {"--export", (dir.path / "patch.png").string()});
  const auto refused = run_attn(png);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find(".html") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "patch.png"));
}

TEST_CASE("attn patch on gpt-char: the default pair's answer moves from 'w' to the last position") {
  const nlohmann::json doc = run_json({"patch"});
  CHECK(doc["settings"]["answer"] == "'e' (58)");
  CHECK(doc["settings"]["wrong"] == "'l' (65)");
  const std::vector<double> restored = values_of(doc, "residual_restored");  // (4, 14)
  REQUIRE(restored.size() == 4 * 14);
  CHECK(restored[0 * 14 + 10] == Approx(1.0).margin(1e-4));  // before block 0, at 'w'
  CHECK(restored[3 * 14 + 13] > 0.5);  // before the last block, most of it is at the last position
  for (const nlohmann::json& check : doc["checks"]) {
    INFO(check.dump());
    CHECK(check["passed"] == true);
  }
}
