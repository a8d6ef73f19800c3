// attn train --export: the curves of a short training run as a PNG read back through cairo, the
// loss's line falling from left to right, stdout as it is without --export; an SVG for the
// encoder-decoder; bad paths refused before training, with one line and nothing left behind.
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "image_check.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::names_in;
using attn::testing::Pixel;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

TEST_CASE("attn train --export draws the loss falling and prints what it always prints",
          "[cli][train][export]") {
  ScratchDir dir("export-train");
  const fs::path path = dir.path / "loss.png";
  const auto plain = run_attn({"train", "--steps", "300"});
  const auto run = run_attn({"train", "--steps", "300", "--export", path.string()});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out == plain.out);
  CHECK(run.err.empty());
  const attn::testing::PngImage png =
      attn::testing::decode_png(attn::testing::read_bytes(path.string()));
  REQUIRE(png.ok);
  // The loss's bold line: mean screen row in the first tenth of its columns above the last's.
  const Pixel loss_colour{59, 82, 139};
  int left = png.width, right = -1;
  for (int y = 0; y < png.height; ++y)
    for (int x = 0; x < png.width; ++x)
      if (attn::testing::distance(png.at(x, y), loss_colour) <= 12)
        left = std::min(left, x), right = std::max(right, x);
  REQUIRE(right - left > png.width / 2);
  const int tenth = (right - left) / 10;
  double first = 0, last = 0;
  int n_first = 0, n_last = 0;
  std::size_t white = 0;
  for (int y = 0; y < png.height; ++y)
    for (int x = 0; x < png.width; ++x) {
      white += attn::testing::is_white(png.at(x, y));
      if (attn::testing::distance(png.at(x, y), loss_colour) > 12) continue;
      if (x < left + tenth) first += y, ++n_first;
      if (x > right - tenth) last += y, ++n_last;
    }
  REQUIRE(n_first > 0);
  REQUIRE(n_last > 0);
  CHECK(first / n_first + 100 < last / n_last);
  CHECK(white > png.pixels.size() / 2);
  CHECK(white < png.pixels.size());

  const fs::path svg = dir.path / "transformer.svg";
  const auto transformer = run_attn({"train", "--model", "transformer", "--steps", "30", "--format",
                                     "json", "--export", svg.string()});
  INFO(transformer.err);
  REQUIRE(transformer.exit_code == 0);
  CHECK(attn::testing::xml_problem(attn::testing::read_bytes(svg.string())).empty());
  CHECK(names_in(dir.path) == std::set<std::string>{"loss.png", "transformer.svg"});
}

TEST_CASE("bad train --export paths are refused before training, leaving nothing",
          "[cli][train][export]") {
  ScratchDir dir("export-train-bad");
  fs::create_directory(dir.path / "a-folder");
  const std::string in = dir.path.string() + "/";
  const auto refused = [&](std::vector<std::string> args, const std::string& says) {
    const auto run = run_attn(args);
    INFO(args.back());
    attn::testing::check_refused(run, says, 300.0 * (1 << 20));
    CHECK(names_in(dir.path) == std::set<std::string>{"a-folder"});
    CHECK(fs::is_empty(dir.path / "a-folder"));
  };
  refused({"train", "--export", in + "loss.gif"},
          "attn train: --export: '" + in +
              "loss.gif': attn writes .svg or .png, chosen by the extension: name the file e.g. "
              "loss.png");
  refused({"train", "--model", "transformer", "--export", in + "missing/loss.svg"},
          "its folder '" + in + "missing' does not exist");
  refused({"train", "--export", in + "a-folder/"}, "is a folder: give a file name");
  refused({"train", "--export", ""},
          "--export: the value is empty: give one, e.g. --export loss.png");
  if (geteuid() != 0) {  // root writes anywhere
    fs::permissions(dir.path / "a-folder", fs::perms::owner_read | fs::perms::owner_exec);
    refused({"train", "--export", in + "a-folder/loss.png"}, "choose a writable directory");
    fs::permissions(dir.path / "a-folder", fs::perms::owner_all);
  }
}
