// --ablate on every command that runs a trained model (cli/ablate.hpp): each prints the held-out
// score with and without the heads, and its own output computed without them. The shipped
// checkpoints are retrained from time to time, so the scores are checked by direction and bounds,
// not by value.
#include <algorithm>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "run_attn.hpp"

using attn::testing::run_attn;

namespace {

// The output with its lines joined by spaces: the ablation line is wrapped at 100 columns.
std::string flat(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// The "NAME a -> b" pair of the ablation line, e.g. "sequence accuracy 1.000 -> 0.001".
std::pair<double, double> before_after(const std::string& out, const std::string& name) {
  std::smatch m;
  const std::string text = flat(out);
  const std::regex pattern(name + R"( ([0-9.]+) -> ([0-9.]+))");
  REQUIRE(std::regex_search(text, m, pattern));
  return {std::stod(m[1]), std::stod(m[2])};
}

// Whether two runs' outputs differ once the ablation's own words are left out (the paragraph of
// the ablation line, the settings line "attn ...", the model's name in a view): what the command
// computed changed, not only what it says.
bool computed_differently(const std::string& ablated, const std::string& whole) {
  const auto kept = [](const std::string& text) {
    std::string out;
    for (std::size_t start = 0; start < text.size();) {
      const std::size_t end = std::min(text.find("\n\n", start), text.size());
      std::string paragraph = text.substr(start, end - start);
      start = end + 2;
      while (!paragraph.empty() && paragraph.back() == '\n')
        paragraph.pop_back();
      if (paragraph.find("ablating") != std::string::npos) continue;
      std::string line;
      for (std::size_t from = 0; from < paragraph.size();) {
        const std::size_t to = std::min(paragraph.find('\n', from), paragraph.size());
        line = paragraph.substr(from, to - from);
        from = to + 1;
        if (line.rfind("attn ", 0) != 0 && line.find("checkpoint ") == std::string::npos)
          out += line + "\n";
      }
      out += "\n";
    }
    return out;
  };
  return kept(ablated) != kept(whole);
}

// `command` run whole and with --ablate `heads`: both outputs, each run checked to exit 0.
struct Runs {
  std::string whole, ablated;
};
Runs run_whole_and_ablated(std::vector<std::string> command, const std::string& heads) {
  const auto whole = run_attn(command);
  command.insert(command.end(), {"--ablate", heads});
  const auto ablated = run_attn(command);
  INFO(whole.err << ablated.err);
  REQUIRE(whole.exit_code == 0);
  REQUIRE(ablated.exit_code == 0);
  return {whole.out, ablated.out};
}

// reverse without both its layer-0 heads: the printed sequence accuracy falls from above 0.9 to
// below 0.1, and `says` follows the numbers.
void check_reverse_falls(const std::string& out, const std::string& says) {
  const auto [before, after] = before_after(out, "sequence accuracy");
  CHECK(before > 0.9);
  CHECK(after < 0.1);
  CHECK(flat(out).find("(2000 sequences); " + says) != std::string::npos);
}

}  // namespace

TEST_CASE("attn encoder --ablate: reverse needs one of its layer-0 heads, not both",
          "[ablation][cli]") {
  const Runs both = run_whole_and_ablated({"encoder", "--checkpoint", "reverse"}, "0.0,0.1");
  CHECK(flat(both.ablated)
            .find("ablating layer 0 head 0, layer 0 head 1: held-out token "
                  "accuracy") != std::string::npos);
  check_reverse_falls(both.ablated, "everything below is computed with these heads ablated.");
  CHECK(computed_differently(both.ablated, both.whole));
  // One head ablated, the other still reads the mirrored key: most tokens stay right.
  const auto one = run_attn({"encoder", "--checkpoint", "reverse", "--ablate", "0.1"});
  REQUIRE(one.exit_code == 0);
  const auto [before, after] = before_after(one.out, "token accuracy");
  CHECK(before > 0.9);
  CHECK(after > 0.9);
}

TEST_CASE("attn attention --ablate: layer 1 reads what the ablated layer 0 wrote",
          "[ablation][cli]") {
  const std::vector<std::string> layer_1 = {"attention", "--checkpoint", "reverse", "--layer", "1"};
  const Runs earlier = run_whole_and_ablated(layer_1, "0.0,0.1");
  check_reverse_falls(earlier.ablated,
                      "what layer 1 reads above was computed with these heads ablated.");
  CHECK(computed_differently(earlier.ablated, earlier.whole));
  // A head of the layer shown or later changes nothing it reads, and the line says so.
  const Runs later = run_whole_and_ablated(layer_1, "1.0");
  CHECK(flat(later.ablated).find("so what layer 1 reads above does not change") !=
        std::string::npos);
  CHECK_FALSE(computed_differently(later.ablated, later.whole));
}

TEST_CASE("attn generate --ablate: transformer-reverse's cross-attention carries the source",
          "[ablation][cli]") {
  const Runs cross = run_whole_and_ablated({"generate"}, "0.0,0.1");
  CHECK(flat(cross.ablated).find("the decoder's cross-attention (--part cross, the default)") !=
        std::string::npos);
  CHECK(flat(cross.ablated)
            .find("(2000 sources); the decoding above ran with these heads ablated.") !=
        std::string::npos);
  const auto [before, after] = before_after(cross.ablated, "exact match");
  CHECK(before > 0.9);
  CHECK(after < 0.5 * before);
  CHECK(computed_differently(cross.ablated, cross.whole));

  const auto encoder = run_attn({"generate", "--ablate", "0.0", "--part", "encoder"});
  REQUIRE(encoder.exit_code == 0);
  CHECK(flat(encoder.out).find("the encoder's self-attention (--part encoder)") !=
        std::string::npos);
}

TEST_CASE("attn view --ablate: the weights of a later layer change", "[ablation][cli]") {
  const Runs view = run_whole_and_ablated(
      {"view", "head", "--checkpoint", "reverse", "--layer", "1", "--color", "never"}, "0.0,0.1");
  check_reverse_falls(view.ablated, "the weights below are computed with these heads ablated");
  CHECK(computed_differently(view.ablated, view.whole));
}

TEST_CASE("attn train --ablate: the trained model's held-out accuracy with and without heads",
          "[ablation][cli][train]") {
  const auto run = run_attn({"train", "--task", "reverse", "--ablate", "0.0,0.1"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(flat(run.out).find("; the model saved and shown above has every head.") !=
        std::string::npos);
  const auto [before, after] = before_after(run.out, "token accuracy");
  CHECK(before > 0.9);
  CHECK(after < 0.5);
}
