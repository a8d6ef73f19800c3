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

}  // namespace

TEST_CASE("attn encoder --ablate: reverse needs one of its layer-0 heads, not both",
          "[ablation][cli]") {
  const auto whole = run_attn({"encoder", "--checkpoint", "reverse"});
  const auto both = run_attn({"encoder", "--checkpoint", "reverse", "--ablate", "0.0,0.1"});
  const auto one = run_attn({"encoder", "--checkpoint", "reverse", "--ablate", "0.1"});
  INFO(both.err << one.err);
  REQUIRE(both.exit_code == 0);
  REQUIRE(one.exit_code == 0);
  CHECK(flat(both.out).find("ablating layer 0 head 0, layer 0 head 1: held-out token accuracy") !=
        std::string::npos);
  CHECK(flat(both.out).find("(2000 sequences); everything below is computed with these heads "
                            "ablated.") != std::string::npos);
  const auto [before, after] = before_after(both.out, "sequence accuracy");
  CHECK(before > 0.9);
  CHECK(after < 0.1);
  // One head ablated, the other still reads the mirrored key: most tokens stay right.
  const auto [one_before, one_after] = before_after(one.out, "token accuracy");
  CHECK(one_before > 0.9);
  CHECK(one_after > 0.9);
  CHECK(computed_differently(both.out, whole.out));
}

TEST_CASE("attn attention --ablate: layer 1 reads what the ablated layer 0 wrote",
          "[ablation][cli]") {
  const std::vector<std::string> base = {"attention", "--checkpoint", "reverse", "--layer", "1"};
  const auto whole = run_attn(base);
  auto args = base;
  args.insert(args.end(), {"--ablate", "0.0,0.1"});
  const auto ablated = run_attn(args);
  INFO(ablated.err);
  REQUIRE(ablated.exit_code == 0);
  const auto [before, after] = before_after(ablated.out, "sequence accuracy");
  CHECK(before > 0.9);
  CHECK(after < 0.1);
  CHECK(flat(ablated.out).find("what layer 1 reads above was computed with these heads ablated") !=
        std::string::npos);
  CHECK(computed_differently(ablated.out, whole.out));

  // A head of the layer shown or later changes nothing it reads, and the line says so.
  auto later = base;
  later.insert(later.end(), {"--ablate", "1.0"});
  const auto same = run_attn(later);
  REQUIRE(same.exit_code == 0);
  CHECK(flat(same.out).find("so what layer 1 reads above does not change") != std::string::npos);
  CHECK_FALSE(computed_differently(same.out, whole.out));
}

TEST_CASE("attn generate --ablate: transformer-reverse's cross-attention carries the source",
          "[ablation][cli]") {
  const auto whole = run_attn({"generate"});
  const auto cross = run_attn({"generate", "--ablate", "0.0,0.1"});
  INFO(cross.err);
  REQUIRE(cross.exit_code == 0);
  CHECK(flat(cross.out).find("the decoder's cross-attention (--part cross, the default)") !=
        std::string::npos);
  CHECK(flat(cross.out).find("(2000 sources); the decoding above ran with these heads ablated.") !=
        std::string::npos);
  const auto [before, after] = before_after(cross.out, "exact match");
  CHECK(before > 0.9);
  CHECK(after < 0.5 * before);
  CHECK(computed_differently(cross.out, whole.out));

  const auto encoder = run_attn({"generate", "--ablate", "0.0", "--part", "encoder"});
  REQUIRE(encoder.exit_code == 0);
  CHECK(flat(encoder.out).find("the encoder's self-attention (--part encoder)") !=
        std::string::npos);
}

TEST_CASE("attn view --ablate: the weights of a later layer change", "[ablation][cli]") {
  const std::vector<std::string> base = {"view",    "head", "--checkpoint", "reverse",
                                         "--layer", "1",    "--color",      "never"};
  const auto whole = run_attn(base);
  auto args = base;
  args.insert(args.end(), {"--ablate", "0.0,0.1"});
  const auto ablated = run_attn(args);
  INFO(ablated.err);
  REQUIRE(ablated.exit_code == 0);
  const auto [before, after] = before_after(ablated.out, "sequence accuracy");
  CHECK(before > 0.9);
  CHECK(after < 0.1);
  CHECK(flat(ablated.out).find("the weights below are computed with these heads ablated") !=
        std::string::npos);
  CHECK(computed_differently(ablated.out, whole.out));
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
