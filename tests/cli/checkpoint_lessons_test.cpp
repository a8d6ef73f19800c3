// --checkpoint on the attention lessons (04, 05): a trained layer's heads on the task's own
// tokens, with the tokens as the heatmaps' labels and the weights showing what the heads learned.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_attn.hpp"
#include "scratch.hpp"

using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {
const nlohmann::json& step(const nlohmann::json& doc, const std::string& name) {
  for (const auto& s : doc["steps"])
    if (s["name"] == name) return s;
  FAIL("no step " << name);
  return doc;
}

// The key each query row of a (T,T) matrix gives its largest weight.
std::vector<std::size_t> row_argmax(const nlohmann::json& matrix) {
  std::vector<std::size_t> best;
  for (const auto& row : matrix) {
    const std::vector<double> v = row.get<std::vector<double>>();
    best.push_back(static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin()));
  }
  return best;
}
struct Refusal {
  std::vector<std::string> args;
  std::string says;  // a part of the one line on stderr
};

void check_refusals(const std::vector<Refusal>& cases) {
  for (const Refusal& c : cases) {
    const auto run = run_attn(c.args);
    INFO(run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK(run.err.find(c.says) != std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  }
}
}  // namespace

TEST_CASE("attention --checkpoint reverse: the trained head looks along the anti-diagonal",
          "[cli][checkpoint]") {
  const auto run = run_attn({"attention", "--checkpoint", "reverse", "--format", "json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc["settings"]["variant"] == "head");
  CHECK(doc["settings"]["d-model"] == 32);
  const auto& weights = step(doc, "weights");
  REQUIRE(weights["shape"] == nlohmann::json::array({1, 8, 8}));
  const std::vector<std::size_t> best = row_argmax(weights["values"][0]);
  std::size_t anti = 0;
  for (std::size_t i = 0; i < 8; ++i)
    anti += best[i] == 7 - i;
  CHECK(anti == 8);
  for (const auto& check : doc["checks"])
    CHECK(check["passed"] == true);

  // The text names the checkpoint and labels the map with the task's letters.
  const auto text =
      run_attn({"attention", "--checkpoint", "reverse", "--text", "dcba", "--color", "never"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("   d      c      b      a") != std::string::npos);
  CHECK(text.out.find("head 0 of layer 0 of the checkpoint `reverse`") != std::string::npos);
}

TEST_CASE("multi-head --checkpoint previous-token: a head of layer 1 looks one token back",
          "[cli][checkpoint]") {
  const auto run = run_attn(
      {"multi-head", "--checkpoint", "previous-token", "--layer", "1", "--format", "json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc["settings"]["variant"] == "book");
  const auto& weights = step(doc, "weights");  // (1, H, T, T)
  REQUIRE(weights["shape"] == nlohmann::json::array({1, 2, 8, 8}));
  std::size_t best_head = 0;
  for (std::size_t h = 0; h < 2; ++h) {
    const std::vector<std::size_t> best = row_argmax(weights["values"][0][h]);
    std::size_t previous = 0;
    for (std::size_t i = 1; i < 8; ++i)
      previous += best[i] == i - 1;
    best_head = std::max(best_head, previous);
  }
  CHECK(best_head >= 6);  // of the 7 queries that have a previous token
}

TEST_CASE("the attention lessons refuse beside --checkpoint what it replaces",
          "[cli][checkpoint]") {
  const std::vector<Refusal> cases = {
      {{"attention", "--text", "abc"}, "--text: --text reads a trained model's tokens"},
      {{"attention", "--head", "1"}, "--head: --head picks a trained model's head"},
      {{"attention", "--checkpoint", "reverse", "--d-model", "8"}, "--d-model: a checkpoint"},
      {{"attention", "--checkpoint", "reverse", "--head", "2"}, "head 2 does not exist"},
      {{"attention", "--checkpoint", "reverse", "--layer", "2"}, "layer 2 does not exist"},
      {{"attention", "--checkpoint", "reverse", "--text", "xyz"}, "'x' is not one of"},
      {{"multi-head", "--checkpoint", "sort", "--variant", "wide"}, "--variant: a checkpoint"},
      {{"multi-head", "--layer", "1"}, "--layer: --layer reads a trained model's tokens"},
  };
  check_refusals(cases);
}

TEST_CASE("cross-attention --checkpoint transformer-reverse: the answer reads the source backwards",
          "[cli][checkpoint][transformer]") {
  const auto run = run_attn({"cross-attention", "--checkpoint", "transformer-reverse", "--text",
                             "hgfedcba", "--format", "json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc["settings"]["task"] == "reverse");
  CHECK(doc["settings"]["layer"] == 1);        // the last decoder layer by default
  const auto& weights = step(doc, "weights");  // (1, H, T, S): <s> a..h against h..a
  REQUIRE(weights["shape"] == nlohmann::json::array({1, 2, 9, 8}));
  // Row <s> writes 'a', which stands last in the source; row i (after <s>) writes the letter at
  // source position 6 - i. Summed over the heads, each of the first 8 rows reads that letter most.
  std::size_t along = 0;
  for (std::size_t t = 0; t < 8; ++t) {
    std::vector<double> total(8, 0.0);
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t s = 0; s < 8; ++s)
        total[s] += weights["values"][0][h][t][s].get<double>();
    along += static_cast<std::size_t>(std::max_element(total.begin(), total.end()) -
                                      total.begin()) == 7 - t;
  }
  CHECK(along >= 7);
  for (const auto& check : doc["checks"])
    CHECK(check["passed"] == true);

  const auto text = run_attn({"cross-attention", "--checkpoint", "transformer-reverse", "--text",
                              "dcba", "--color", "never"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("d      c      b      a") != std::string::npos);  // the source as columns
  CHECK(text.out.find("<s>→a ") != std::string::npos);  // rows: the token read→the one written
  // What the heads do is measured on held-out sources and the claim checked, not asserted.
  CHECK(text.out.find("✓ heads_read: a head of the model reads the letter it writes") !=
        std::string::npos);
}

TEST_CASE("a checkpoint whose heads do not do what its task's claim says fails the claim's check",
          "[cli][checkpoint][claims]") {
  // Ten steps of training leave reverse's heads near uniform: the lessons measure them and the
  // claim (a head reads the mirrored key) fails, where the shipped checkpoint passes.
  ScratchDir dir("planted-heads");
  const std::string planted = (dir.path / "planted.safetensors").string();
  const auto trained =
      run_attn({"train", "--task", "reverse", "--steps", "10", "--save-checkpoint", planted});
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);  // an unsolved run claims nothing of its heads
  CHECK(trained.out.find("This run has not solved the task yet") != std::string::npos);
  for (const char* lesson : {"attention", "multi-head", "encoder"}) {
    INFO(lesson);
    const auto run = run_attn({lesson, "--checkpoint", planted, "--color", "never"});
    CHECK(run.exit_code == 1);
    CHECK(run.out.find("✗ FAILED heads_pattern: a head of the model reads the mirrored key") !=
          std::string::npos);
    const auto shipped = run_attn({lesson, "--checkpoint", "reverse", "--color", "never"});
    CHECK(shipped.exit_code == 0);
    CHECK(shipped.out.find("✓ heads_pattern: a head of the model reads the mirrored key") !=
          std::string::npos);
  }
  // sort's claim is the other way round: no head reads the keys of its rank alone.
  const auto sort = run_attn({"multi-head", "--checkpoint", "sort", "--color", "never"});
  CHECK(sort.exit_code == 0);
  CHECK(sort.out.find("✓ heads_spread: no head of the model reads the keys of its rank alone") !=
        std::string::npos);
}

TEST_CASE("cross-attention refuses beside --checkpoint what it replaces, and encoder checkpoints",
          "[cli][checkpoint][transformer]") {
  const std::vector<Refusal> cases = {
      {{"cross-attention", "--text", "abc"}, "--text: --text reads a trained encoder-decoder"},
      {{"cross-attention", "--layer", "0"}, "--layer: --layer reads a trained encoder-decoder"},
      {{"cross-attention", "--checkpoint", "transformer-reverse", "--source-seq", "4"},
       "--source-seq: a checkpoint brings its own model"},
      {{"cross-attention", "--checkpoint", "transformer-reverse", "--layer", "2"},
       "--layer 2 is past the checkpoint's 2 decoder layers"},
      {{"cross-attention", "--checkpoint", "transformer-reverse", "--text", "xyz"}, "'x'"},
      {{"cross-attention", "--checkpoint", "reverse"}, "which has no decoder"},
      {{"generate", "--checkpoint", "sort"}, "which has no decoder"},
  };
  check_refusals(cases);
}
