// attn view --export with pictures: the shipped checkpoints drawn as PNG and SVG, read back. Cells
// are found in the SVG (cairo's filled squares, in rows and columns) and their pixels read in the
// PNG of the same view, drawn twice as large: `reverse` attends along the anti-diagonal in layer
// 0, so those cells are viridis's light greens and yellows and the rest its dark purples. Bad
// paths are refused before anything is computed, with one line and no file, partial or
// temporary.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
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
using attn::testing::SvgRect;

namespace {

// The heatmaps' cells: the squares of the most common size, indexed by their rank among the
// distinct left edges (column) and top edges (row).
struct Grid {
  std::vector<double> xs, ys;
  std::map<std::pair<std::size_t, std::size_t>, SvgRect> cells;  // (row, column)
};

Grid grid_of(const std::string& svg) {
  std::map<double, std::size_t> sizes;
  const std::vector<SvgRect> rects = attn::testing::svg_rects(svg);
  for (const SvgRect& r : rects)
    if (r.w == r.h) ++sizes[r.w];
  double size = 0;
  std::size_t most = 0;
  for (const auto& [w, n] : sizes)
    if (n > most) most = n, size = w;
  Grid g;
  std::set<double> xs, ys;
  for (const SvgRect& r : rects)
    if (r.w == size && r.h == size) xs.insert(r.x), ys.insert(r.y);
  g.xs.assign(xs.begin(), xs.end());
  g.ys.assign(ys.begin(), ys.end());
  for (const SvgRect& r : rects) {
    if (r.w != size || r.h != size) continue;
    const auto column =
        static_cast<std::size_t>(std::find(g.xs.begin(), g.xs.end(), r.x) - g.xs.begin());
    const auto row =
        static_cast<std::size_t>(std::find(g.ys.begin(), g.ys.end(), r.y) - g.ys.begin());
    g.cells[{row, column}] = r;
  }
  return g;
}

Pixel centre_pixel(const attn::testing::PngImage& png, const SvgRect& r) {
  return png.at(static_cast<int>(2 * (r.x + r.w / 2)), static_cast<int>(2 * (r.y + r.h / 2)));
}

std::string wrote_line(const fs::path& path) {
  return "wrote " + path.string() + " (" + std::to_string(fs::file_size(path)) + " bytes)\n";
}

}  // namespace

TEST_CASE("the model view of reverse as a PNG: the anti-diagonal of layer 0 in light viridis",
          "[cli][view][export]") {
  ScratchDir dir("export-model");
  const fs::path png_path = dir.path / "model.png", svg_path = dir.path / "model.svg";
  const auto png_run =
      run_attn({"view", "model", "--checkpoint", "reverse", "--export", png_path.string()});
  const auto svg_run =
      run_attn({"view", "model", "--checkpoint", "reverse", "--export", svg_path.string()});
  INFO(png_run.err << svg_run.err);
  REQUIRE(png_run.exit_code == 0);
  REQUIRE(svg_run.exit_code == 0);
  CHECK(png_run.out == wrote_line(png_path));
  CHECK(png_run.err.empty());
  CHECK(names_in(dir.path) == std::set<std::string>{"model.png", "model.svg"});

  const std::string svg = attn::testing::read_bytes(svg_path.string());
  CHECK(attn::testing::xml_problem(svg).empty());
  const attn::testing::PngImage png =
      attn::testing::decode_png(attn::testing::read_bytes(png_path.string()));
  REQUIRE(png.ok);
  const auto [w, h] = attn::testing::svg_size(svg);
  CHECK(png.width == static_cast<int>(2 * w));
  CHECK(png.height == static_cast<int>(2 * h));

  // 2 layers x 8 queries down, 2 heads x 8 keys across.
  const Grid grid = grid_of(svg);
  REQUIRE(grid.ys.size() == 16);
  REQUIRE(grid.xs.size() == 16);
  REQUIRE(grid.cells.size() == 256);
  const std::size_t T = 8;
  for (std::size_t head = 0; head < 2; ++head) {
    double diagonal_green = 0, other_green = 0;
    for (std::size_t t = 0; t < T; ++t) {
      double darkest_diagonal = 1, brightest_other = 0;
      for (std::size_t s = 0; s < T; ++s) {
        const SvgRect& cell = grid.cells.at({t, head * T + s});
        const Pixel p = centre_pixel(png, cell);
        INFO("head " << head << ", query " << t << ", key " << s);
        CHECK(attn::testing::distance(p, cell.fill) <= 1);  // the PNG holds the SVG's colour
        if (s == T - 1 - t) {
          diagonal_green += p.g;
          darkest_diagonal = std::min(darkest_diagonal, attn::testing::luminance(p));
        } else {
          other_green += p.g;
          brightest_other = std::max(brightest_other, attn::testing::luminance(p));
        }
      }
      INFO("head " << head << ", query " << t);
      CHECK(darkest_diagonal > brightest_other);
    }
    INFO("head " << head);
    CHECK(diagonal_green / T > 150);          // viridis's greens and yellow
    CHECK(other_green / (T * (T - 1)) < 60);  // its dark purples
  }
  // A white page with a picture on it.
  std::size_t white = 0;
  std::set<std::tuple<int, int, int>> colours;
  for (const Pixel& p : png.pixels) {
    white += attn::testing::is_white(p);
    colours.insert({p.r, p.g, p.b});
  }
  CHECK(static_cast<double>(white) / png.pixels.size() > 0.4);
  CHECK(static_cast<double>(white) / png.pixels.size() < 0.95);
  CHECK(colours.size() > 50);
}

TEST_CASE(
    "the head view of transformer-reverse's cross-attention as an SVG holds its tokens and cells",
    "[cli][view][export]") {
  ScratchDir dir("export-head");
  const fs::path path = dir.path / "cross.svg";
  const auto run =
      run_attn({"view", "head", "--checkpoint", "transformer-reverse", "--export", path.string()});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out == wrote_line(path));
  const std::string svg = attn::testing::read_bytes(path.string());
  CHECK(attn::testing::xml_problem(svg).empty());
  const Grid grid = grid_of(svg);
  CHECK(grid.cells.size() == 2 * 9 * 8);  // 2 heads, <s> and 8 letters against 8 source letters
  // Glyphs for the title, the lines, the heads' names, 9 + 8 labels per head.
  CHECK(attn::testing::count_of(svg, "<use xlink:href=\"#glyph") > 150);

  const fs::path neuron = dir.path / "neuron.svg";
  const auto neuron_run = run_attn(
      {"view", "neuron", "--checkpoint", "reverse", "--token", "2", "--export", neuron.string()});
  INFO(neuron_run.err);
  REQUIRE(neuron_run.exit_code == 0);
  CHECK(attn::testing::xml_problem(attn::testing::read_bytes(neuron.string())).empty());
}

TEST_CASE("bad view --export paths are refused before anything is computed, leaving nothing",
          "[cli][view][export]") {
  ScratchDir dir("export-view-bad");
  fs::create_directory(dir.path / "a-folder");
  const std::string in = dir.path.string() + "/";
  const auto refused = [&](std::vector<std::string> args, const std::string& says) {
    const auto run = run_attn(args);
    INFO(args[0] << " " << args[1]);
    attn::testing::check_refused(run, says, 300.0 * (1 << 20));
    CHECK(names_in(dir.path) == std::set<std::string>{"a-folder"});
    CHECK(fs::is_empty(dir.path / "a-folder"));
  };
  refused({"view", "model", "--export", in + "view.jpg"},
          "attn view: --export: '" + in +
              "view.jpg': attn writes .html, .svg or .png, chosen by the extension: name the "
              "file e.g. view.html");
  refused({"view", "model", "--export", in + "missing/view.png"},
          "its folder '" + in + "missing' does not exist; create it first or choose another path");
  refused({"view", "model", "--export", in + "a-folder"},
          "is a folder: give a file name, e.g. --export");
  refused({"view", "head", "--checkpoint", "reverse", "--layer", "2", "--export", in + "view.png"},
          "attn view: --layer: layer 2 does not exist: the model has 2 layers, 0 to 1");
  refused({"view", "neuron", "--checkpoint", "reverse", "--token", "8", "--export", in + "n.svg"},
          "query token 8 does not exist");
  if (geteuid() != 0) {  // root writes anywhere
    fs::permissions(dir.path / "a-folder", fs::perms::owner_read | fs::perms::owner_exec);
    refused({"view", "model", "--export", in + "a-folder/view.png"}, "choose a writable directory");
    fs::permissions(dir.path / "a-folder", fs::perms::owner_all);
  }
}
