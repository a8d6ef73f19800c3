// attn view in the terminal: the head, model and neuron views on a shipped checkpoint and on
// random weights, their widths and palettes, the refusals, and --interactive driven through tmux.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "run_attn.hpp"
#include "tmux_pane.hpp"
#include "tolerant_text.hpp"

using attn::testing::lines_of;
using attn::testing::Pane;
using attn::testing::run_attn;
using attn::testing::shell;

namespace {

const std::vector<std::string> kNoColor = {"NO_COLOR=1", "LANG=C.UTF-8", "LC_ALL", "COLUMNS=100"};

// Display columns of a line without escapes (UTF-8 continuation bytes take none).
std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      while (i < line.size() && line[i] != 'm')
        ++i;
      continue;
    }
    n += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
  }
  return n;
}

}  // namespace

TEST_CASE("view model --checkpoint reverse: layer 0's heads draw the anti-diagonal",
          "[cli][view]") {
  const auto run =
      run_attn({"view", "model", "--checkpoint", "reverse", "--text", "abcdefgh"}, kNoColor);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::vector<std::string> lines = lines_of(run.out);
  // The first map's rows follow its two header lines (titles, the keys' letters): query i's
  // darkest cell (█, two columns a cell) stands in column 7 - i.
  const auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("L0 H0") != std::string::npos;
  });
  REQUIRE(header != lines.end());
  const std::size_t first = static_cast<std::size_t>(header - lines.begin()) + 2;
  REQUIRE(lines.size() >= first + 8);
  std::size_t along = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    const std::string& row = lines[first + i];
    CHECK(row.substr(0, 1) == std::string(1, static_cast<char>('a' + i)));
    // The row after its 2-column label: cells of two columns; "██" is 6 bytes.
    const std::size_t at = row.find("██");
    if (at == std::string::npos) continue;
    along += columns(row.substr(0, at)) == 2 + 2 * (7 - i);
  }
  CHECK(along >= 7);
  for (const std::string& line : lines)
    CHECK(columns(line) <= 100);
}

TEST_CASE("view head and neuron: labels, the width, and the recomputed softmax", "[cli][view]") {
  SECTION("the head view of a layer picks its heads and marks a query") {
    const auto run = run_attn(
        {"view", "head", "--checkpoint", "reverse", "--layer", "1", "--heads", "1", "--token", "3"},
        kNoColor);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.out.find("layer 1 of 2") != std::string::npos);
    CHECK(run.out.find("head 1") != std::string::npos);
    CHECK(run.out.find("head 0") == std::string::npos);
    CHECK(run.out.find("▶h") != std::string::npos);  // query 3 of the example cabhbgad
  }
  SECTION("the neuron view recomputes the model's row") {
    for (const std::vector<std::string>& source :
         {std::vector<std::string>{"--checkpoint", "reverse"},
          std::vector<std::string>{"--checkpoint", "transformer-reverse", "--part", "decoder"},
          std::vector<std::string>{"--seed", "3", "--text", "time flies like an arrow"}}) {
      std::vector<std::string> args = {"view", "neuron", "--token", "2", "--head", "1"};
      args.insert(args.end(), source.begin(), source.end());
      const auto run = run_attn(args, kNoColor);
      INFO(run.err);
      REQUIRE(run.exit_code == 0);
      CHECK(run.out.find("✓ softmax(q·k / √") != std::string::npos);
      CHECK(run.out.find("query token 2") != std::string::npos);
    }
  }
  SECTION("a narrow terminal wraps the model view's heads into bands") {
    const auto wide = run_attn({"view", "model", "--config", "bert-base", "--text", "time flies"},
                               {"NO_COLOR=1", "LANG=C.UTF-8", "LC_ALL", "COLUMNS=200"});
    const auto narrow = run_attn({"view", "model", "--config", "bert-base", "--text", "time flies"},
                                 {"NO_COLOR=1", "LANG=C.UTF-8", "LC_ALL", "COLUMNS=60"});
    REQUIRE(wide.exit_code == 0);
    REQUIRE(narrow.exit_code == 0);
    for (const std::string& line : lines_of(narrow.out))
      CHECK(columns(line) <= 60);
    CHECK(lines_of(narrow.out).size() > lines_of(wide.out).size());
    CHECK(narrow.out.find("L11 H11") != std::string::npos);  // every layer x head is there
  }
  SECTION("colour: 24-bit backgrounds under COLORTERM, none under NO_COLOR") {
    const auto colour = run_attn(
        {"view", "model", "--checkpoint", "sort", "--color", "always"},
        {"NO_COLOR", "COLORTERM=truecolor", "TERM=xterm-256color", "LANG=C.UTF-8", "LC_ALL"});
    REQUIRE(colour.exit_code == 0);
    CHECK(colour.out.find("\x1b[48;2;") != std::string::npos);
    const auto plain = run_attn({"view", "model", "--checkpoint", "sort"}, kNoColor);
    CHECK(plain.out.find('\x1b') == std::string::npos);
    const auto ascii = run_attn({"view", "model", "--checkpoint", "sort"},
                                {"NO_COLOR=1", "LANG=C", "LC_ALL=C", "COLUMNS=100"});
    REQUIRE(ascii.exit_code == 0);
    CHECK(std::all_of(ascii.out.begin(), ascii.out.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
  }
  SECTION("ids instead of text, labelled with the vocabulary's tokens") {
    const auto run = run_attn({"view", "head", "--config", "bert-base", "--ids",
                               "2051,10029,2066,2019,8612", "--heads", "0", "--layer", "11"},
                              kNoColor);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.out.find("layer 11 of 12") != std::string::npos);
    CHECK(run.out.find("flies") != std::string::npos);  // 10029 in BERT's vocabulary
  }
  SECTION("a sentence pair, cut to sentence A's queries against B's keys") {
    const auto run = run_attn({"view", "head", "--text", "time flies like an arrow", "--pair",
                               "fruit flies like a banana", "--sentences", "a-b"},
                              kNoColor);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.out.find("sentence A to sentence B") != std::string::npos);
    CHECK(run.out.find("[CLS]") != std::string::npos);               // A's first query
    CHECK(run.out.find("7 tokens against 6") != std::string::npos);  // A's 7 against B's 6
  }
}

TEST_CASE("view refuses what it cannot show, in one line", "[cli][view]") {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"view", "grid"}, "'grid' is not a view: use head, model or neuron"},
      {{"view", "head", "--checkpoint", "reverse", "--layer", "2"}, "layer 2 does not exist"},
      {{"view", "head", "--checkpoint", "reverse", "--heads", "0,5"}, "head 5 does not exist"},
      {{"view", "neuron", "--checkpoint", "reverse", "--head", "2"}, "head 2 does not exist"},
      {{"view", "neuron", "--checkpoint", "reverse", "--token", "8"}, "query token 8"},
      {{"view", "model", "--text",
        "one two three four five six seven eight nine ten one two three four five six seven "
        "eight nine ten one two three four five six seven eight nine ten one two three four five "
        "six seven eight nine ten one two three four five six seven eight nine ten"},
       "more than the model view draws legibly"},
      {{"view", "head", "--sentences", "a-b"}, "has no sentence A and B"},
      {{"view", "head", "--ids", "5,6", "--text", "time"}, "give the tokens once"},
      {{"view", "head", "--ids", "5,99999"}, "the id 99999 is outside the vocabulary"},
      {{"view", "head", "--checkpoint", "reverse", "--part", "decoder"}, "it has one part"},
      {{"view", "head", "--checkpoint", "reverse", "--weights", "w.safetensors"},
       "a checkpoint brings its own model"},
      {{"view", "model", "--layer", "1"}, "the model view shows every layer"},
      {{"view", "head", "--interactive"}, "--interactive needs a terminal"},
  };
  for (const Case& c : cases) {
    const auto run = run_attn(c.args, kNoColor);
    INFO(fmt::format("{}", fmt::join(c.args, " ")) << "\n" << run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK(run.err.find(c.says) != std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  }
}

TEST_CASE(
    "view --interactive: keys move between layers, heads and queries, q and Ctrl-C restore "
    "the terminal",
    "[cli][view][interactive]") {
  REQUIRE(shell("command -v tmux") != "");  // setup.sh installs tmux
  SECTION("the head view: a layer down, the next query, one head alone, then q") {
    Pane pane(std::string(ATTN_EXECUTABLE) + " view head --checkpoint reverse --interactive");
    std::string s = pane.wait_for("q quit");
    REQUIRE(s.find("layer 0 of 2") != std::string::npos);
    CHECK(s.find("heads all · query 0 (c)") != std::string::npos);
    pane.keys("Down j Right");
    s = pane.wait_for("query 1 (a)");
    CHECK(s.find("layer 1 of 2") != std::string::npos);
    CHECK(s.find("heads 0 · query 1 (a)") != std::string::npos);
    CHECK(s.find("▶a") != std::string::npos);
    CHECK(s.find("head 1") == std::string::npos);
    pane.keys("q");
    s = pane.wait_for("EXIT=");
    CHECK(s.find("EXIT=0") != std::string::npos);
    CHECK(s.find("-icanon") == std::string::npos);  // line mode is back
    CHECK(s.find("-echo ") == std::string::npos);   // and so is echo
    CHECK(s.find("q quit") == std::string::npos);   // the alternate screen is gone
  }
  SECTION("the neuron view: the next head, then Ctrl-C") {
    Pane pane(std::string(ATTN_EXECUTABLE) + " view neuron --checkpoint reverse --interactive");
    std::string s = pane.wait_for("q quit");
    CHECK(s.find("layer 0 · head 0 · query 0") != std::string::npos);
    pane.keys("Right");
    s = pane.wait_for("head 1 · query 0");
    CHECK(s.find("layer 0, head 1, query token 0") != std::string::npos);
    pane.keys("C-c");
    s = pane.wait_for("EXIT=");
    CHECK(s.find("EXIT=130") != std::string::npos);  // died of SIGINT, as Ctrl-C should
    CHECK(s.find("-icanon") == std::string::npos);
    CHECK(s.find("-echo ") == std::string::npos);
  }
}
