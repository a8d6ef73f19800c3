// attn view --export FILE.html: one self-contained page that holds the view's weights (rows that
// sum to 1; the shipped reverse checkpoint's first layer looks at the mirrored position), says
// what model and part it shows, links to nothing outside, and is refused before anything is
// computed when it cannot be written; a refused run writes nothing.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "page_data.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::read_text;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

struct Export {
  attn::testing::RunResult run;
  std::string page;
  nlohmann::json data;
};

nlohmann::json embedded(const std::string& page) {
  return attn::testing::page_data(page);
}

// Runs `attn view <args> --export <dir>/<name>` and reads the page back.
Export export_page(const fs::path& dir, const std::string& name, std::vector<std::string> args) {
  const fs::path path = dir / name;
  args.insert(args.begin(), "view");
  args.insert(args.end(), {"--export", path.string()});
  Export e;
  e.run = run_attn(args);
  INFO(e.run.err);
  REQUIRE(e.run.exit_code == 0);
  CHECK(e.run.err.empty());
  e.page = read_text(path.string());
  CHECK(e.run.out == "wrote " + path.string() + " (" + std::to_string(e.page.size()) + " bytes)\n");
  e.data = embedded(e.page);
  return e;
}

std::map<std::string, std::uintmax_t> listing(const fs::path& dir) {
  std::map<std::string, std::uintmax_t> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? e.file_size() : 0;
  return out;
}

// Each row of a (T,S) block of weights sums to 1, within the page's 4 decimals.
void check_rows_sum_to_one(const nlohmann::json& block) {
  for (const auto& row : block) {
    double sum = 0.0;
    for (const auto& w : row)
      sum += w.get<double>();
    CHECK(std::fabs(sum - 1.0) <= 5e-5 * static_cast<double>(row.size()) + 1e-6);
  }
}

// The same for every layer's and head's block of (L,H,T,S) weights.
void check_weights(const nlohmann::json& weights) {
  for (const auto& layer : weights)
    for (const auto& head : layer)
      check_rows_sum_to_one(head);
}

}  // namespace

TEST_CASE("attn view head --export writes one self-contained page with the view's weights",
          "[cli][view][export]") {
  ScratchDir scratch("view-export-head");
  const Export e = export_page(scratch.path, "head.html", {"head", "--checkpoint", "reverse"});
  const std::string& page = e.page;
  // Nothing outside the page: no address at all, no element that loads one.
  for (const char* outside : {"http://", "https://", "src=", "href=", "@import", "url(", "<link"})
    CHECK(page.find(outside) == std::string::npos);
  CHECK(page.find("checkpoint reverse (shipped, the book&#39;s encoder, task reverse) · "
                  "self-attention · "
                  "2 layers × 2 heads · 8 tokens") != std::string::npos);
  CHECK(page.size() < 40000);
  const nlohmann::json& d = e.data;
  CHECK(d["kind"] == "head");
  CHECK(d["part"] == "self-attention");
  CHECK(d["layers"] == 2);
  CHECK(d["heads"] == 2);
  CHECK(d["shown_heads"] == nlohmann::json::array({0, 1}));
  CHECK(d["rows"] == nlohmann::json::array({"c", "a", "b", "h", "b", "g", "a", "d"}));
  CHECK(d["columns"] == d["rows"]);
  const nlohmann::json& w = d["weights"];
  REQUIRE(w.size() == 2);
  REQUIRE(w[0].size() == 2);
  REQUIRE(w[0][0].size() == 8);
  REQUIRE(w[0][0][0].size() == 8);
  check_weights(w);
  // Layer 0 of the reverse checkpoint: query t looks at key T-1-t, in both heads.
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < 8; ++t) {
      const auto row = w[0][h][t].get<std::vector<double>>();
      CHECK(std::max_element(row.begin(), row.end()) - row.begin() ==
            static_cast<std::ptrdiff_t>(7 - t));
    }
  // The same run gives the same page, and the model view holds the same weights.
  const Export again = export_page(scratch.path, "again.html", {"head", "--checkpoint", "reverse"});
  CHECK(again.page == page);
  const Export model =
      export_page(scratch.path, "model.html", {"model", "--checkpoint", "reverse"});
  CHECK(model.data["kind"] == "model");
  CHECK(model.data["weights"] == w);
}

TEST_CASE("the pages start where the options say: --layer, --heads, --head, --token, --part",
          "[cli][view][export]") {
  ScratchDir scratch("view-export-options");
  const Export head = export_page(scratch.path, "h.html",
                                  {"head", "--checkpoint", "reverse", "--layer", "1", "--heads",
                                   "1", "--heatmap-scale", "row"});
  CHECK(head.data["layer"] == 1);
  CHECK(head.data["shown_heads"] == nlohmann::json::array({1}));
  CHECK(head.data["per_row"] == true);
  const Export neuron = export_page(
      scratch.path, "n.html",
      {"neuron", "--checkpoint", "reverse", "--layer", "1", "--head", "1", "--token", "2"});
  const nlohmann::json& n = neuron.data["neuron"];
  CHECK(n["layer"] == 1);
  CHECK(n["head"] == 1);
  CHECK(n["token"] == 2);
  check_rows_sum_to_one(n["softmax"]);
  const double root = std::sqrt(neuron.data["head_size"].get<double>());
  for (std::size_t t = 0; t < 8; ++t) {
    CHECK(n["apart"][t].get<double>() <= 1e-5);
    for (std::size_t s = 0; s < 8; ++s) {
      CHECK(std::fabs(n["softmax"][t][s].get<double>() - n["model"][t][s].get<double>()) <= 1e-4);
      const double dot = n["dots"][t][s].get<double>();
      CHECK(std::fabs(n["scaled"][t][s].get<double>() - dot / root) <=
            1e-3 * std::max(1.0, std::fabs(dot)));
    }
  }
  // An encoder-decoder's decoder: causal, the answer's tokens.
  const Export decoder = export_page(
      scratch.path, "d.html", {"head", "--checkpoint", "transformer-reverse", "--part", "decoder"});
  CHECK(decoder.data["causal"] == true);
  CHECK(decoder.page.find("decoder") != std::string::npos);
  const nlohmann::json& w = decoder.data["weights"];
  for (const auto& layer : w)
    for (const auto& h : layer)
      for (std::size_t t = 0; t < h.size(); ++t)
        for (std::size_t s = t + 1; s < h[t].size(); ++s)
          CHECK(h[t][s].get<double>() == 0.0);
  // The book's encoder on a sentence pair.
  const Export pair = export_page(scratch.path, "p.html",
                                  {"head", "--text", "time flies", "--pair", "fruit flies"});
  CHECK(pair.data["rows"].front() == "[CLS]");
  CHECK(pair.data["pair_split"] == 4);
  check_weights(pair.data["weights"]);
}

TEST_CASE("attn view --export refuses what it cannot write, and a refused run writes nothing",
          "[cli][view][export]") {
  ScratchDir scratch("view-export-bad");
  const fs::path dir = scratch.path;
  std::ofstream(dir / "a-file") << "keep me\n";
  const std::string older = "<!DOCTYPE html>\n<!-- written by attn -->\nan older page\n";
  std::ofstream(dir / "old.html") << older;
  std::ofstream(dir / "mine.html") << "a page of mine\n";
  fs::create_directory(dir / "a-folder");
  const std::string d = dir.string();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<Case> cases = {
      {{"head", "--export", d + "/v.txt"},
       "attn writes .html, .svg or .png, chosen by the extension"},
      {{"head", "--export", d + "/v.htm"}, "name the file e.g. view.html"},
      {{"head", "--export", d + "/no/such/v.html"}, "does not exist; create it first"},
      {{"head", "--export", d + "/a-file/v.html"}, "is a file, not a directory"},
      {{"head", "--export", d + "/a-folder"}, "is a folder: give a file name"},
      {{"head", "--export", ""}, "--export: the value is empty"},
      {{"head", "--export", d + "/mine.html"}, "exists and attn did not write it"},
      {{"head", "--checkpoint", "reverse", "--layer", "2", "--export", d + "/old.html"},
       "layer 2 does not exist: the model has 2 layers, 0 to 1"},
      {{"neuron", "--checkpoint", "reverse", "--head", "5", "--export", d + "/v.html"},
       "head 5 does not exist"},
      {{"neuron", "--checkpoint", "reverse", "--token", "8", "--export", d + "/v.html"},
       "query token 8 does not exist"},
      {{"head", "--heads", "0,3", "--export", d + "/v.html"}, "head 3 does not exist"},
      {{"head", "--color", "never", "--export", d + "/v.html"}, "--color is for the terminal"},
      {{"head", "--token", "1", "--export", d + "/v.html"}, "point at a token instead"},
  };
  if (::geteuid() != 0) {  // root writes anywhere: the check only holds for other users
    fs::create_directory(dir / "locked");
    fs::permissions(dir / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    cases.push_back({{"head", "--export", d + "/locked/v.html"}, "choose a writable directory"});
  }
  const auto before = listing(dir);
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.begin(), "view");
    const auto run = run_attn(args);
    INFO(args[args.size() - 1] << ": " << run.err);
    attn::testing::check_refused(run, c.says, 1e9);
    CHECK(run.err.starts_with("attn view: "));
    CHECK(listing(dir) == before);
  }
  CHECK(read_text((dir / "old.html").string()) == older);
  CHECK(read_text((dir / "mine.html").string()) == "a page of mine\n");
  if (::geteuid() != 0) fs::permissions(dir / "locked", fs::perms::owner_all);
}

namespace {

// n words of one letter: n tokens for the book's encoder.
std::string words(std::size_t n) {
  std::string text;
  for (std::size_t i = 0; i < n; ++i)
    text += i == 0 ? "a" : " a";
  return text;
}

// The command a refusal advises, in its own words: "--export FILE" at the end of its line.
std::string advised_export(const std::string& err) {
  const std::string mark = "--export ";
  const std::size_t at = err.rfind(mark);
  if (at == std::string::npos) return {};
  std::string path = err.substr(at + mark.size());
  while (!path.empty() && (path.back() == '\n' || path.back() == ' '))
    path.pop_back();
  return path;
}

}  // namespace

TEST_CASE("a view too long for the terminal or a picture advises a page, and the page is written",
          "[cli][view][export]") {
  ScratchDir scratch("view-export-long");
  struct Case {
    std::string kind;
    std::size_t tokens;
    std::string target;  // "" for the terminal
  };
  // Past the terminal's grids (48 in the model view, 64 in the others) and the pictures'.
  const std::vector<Case> cases = {{"model", 52, ""},         {"model", 52, "m52.png"},
                                   {"head", 65, ""},          {"head", 65, "h65.svg"},
                                   {"neuron", 65, "n65.png"}, {"head", 170, ""}};
  for (const Case& c : cases) {
    std::vector<std::string> args = {"view",      c.kind,   "--config",
                                     "bert-base", "--text", words(c.tokens)};
    if (!c.target.empty()) {
      args.push_back("--export");
      args.push_back((scratch.path / c.target).string());
    }
    const auto refused = run_attn(args);
    INFO(c.kind << " view, " << c.tokens << " tokens, to " << c.target << ": " << refused.err);
    REQUIRE(refused.exit_code == 2);
    CHECK(refused.err.find("tokens are more than") != std::string::npos);
    if (!c.target.empty()) CHECK_FALSE(fs::exists(scratch.path / c.target));
    // The advice names a page; run it.
    const std::string page = advised_export(refused.err);
    REQUIRE(page.size() > 5);
    CHECK(page.substr(page.size() - 5) == ".html");
    std::vector<std::string> advised = {"view",   c.kind,          "--config", "bert-base",
                                        "--text", words(c.tokens), "--export"};
    advised.push_back(page.front() == '/' ? page : (scratch.path / page).string());
    const auto written = run_attn(advised, {"ATTN_MAX_MEMORY=2G"});
    INFO(written.err);
    CHECK(written.exit_code == 0);
    CHECK(written.out.find("wrote ") == 0);
  }
}

TEST_CASE("a page has a token limit of its own, which its refusal states", "[cli][view][export]") {
  ScratchDir scratch("view-export-page-limit");
  const std::string page = (scratch.path / "h171.html").string();
  // bert-base's 12 layers x 12 heads of T x T weights: 170 tokens at most (2^22 weights).
  const auto refused =
      run_attn({"view", "head", "--config", "bert-base", "--text", words(171), "--export", page});
  INFO(refused.err);
  CHECK(refused.exit_code == 2);
  CHECK(refused.out.empty());
  CHECK(refused.err ==
        "attn view: --text: 171 tokens are more than an exported page of this model holds (170 at "
        "most: 12 layers x 12 heads of T x T weights, 4194304 weights in all): give a shorter "
        "--text\n");
  CHECK_FALSE(fs::exists(page));
  // The tiny model's page holds its 64 positions: a model view past the terminal's 48.
  const auto tiny = run_attn(
      {"view", "model", "--text", words(60), "--export", (scratch.path / "m60.html").string()});
  INFO(tiny.err);
  CHECK(tiny.exit_code == 0);
  CHECK(fs::file_size(scratch.path / "m60.html") > 0);
}
