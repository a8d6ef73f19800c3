// The terminal heatmap: exact text in shades and ascii, escapes only in colour, masked zeros,
// degenerate sizes, narrow cells past 100 columns, labels, and the palette choice.
#include "heatmap.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "tolerant_text.hpp"

using attn::render::choose_palette;
using attn::render::HeatmapOptions;
using attn::render::Palette;
using attn::render::render_heatmap;
using attn::render::TerminalEnvironment;
using attn::testing::lines_of;

namespace {

// A causal 3x3 attention matrix: the upper triangle is masked to exactly 0.
const std::vector<float> kCausal = {1.0f, 0.0f, 0.0f, 0.45f, 0.55f, 0.0f, 0.12f, 0.26f, 0.62f};
const std::vector<std::string> kTokens = {"time", "flies", "like"};

HeatmapOptions weights_options(Palette palette) {
  HeatmapOptions options;
  options.palette = palette;
  options.low = 0.0f;  // attention weights: the scale is [0, 1] whatever the data
  options.high = 1.0f;
  options.title = "weights";
  return options;
}

// Terminal columns of UTF-8 text without escapes: code points, CJK counted twice.
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80) continue;
    n += (c == 0xE3 || c == 0xE4 || c == 0xE5 || c == 0xE6 || c == 0xE7 || c == 0xE8 || c == 0xE9)
             ? 2
             : 1;
  }
  return n;
}

bool has_escape(const std::string& s) {
  return s.find('\x1b') != std::string::npos;
}

}  // namespace

TEST_CASE("shades: the exact text of a 3x3 causal map", "[heatmap]") {
  const std::string expected =
      "weights\n"
      "       time   flies  like\n"
      "time   █ 1.00     ·      ·\n"
      "flies  ▒ 0.45 ▒ 0.55     ·\n"
      "like     0.12 ░ 0.26 ▓ 0.62\n"
      "scale 0.00 [ ░▒▓█] 1.00 (steps of 0.20)   · exactly 0 (masked)\n";
  CHECK(render_heatmap(kCausal.data(), 3, 3, kTokens, kTokens, weights_options(Palette::shades)) ==
        expected);
}

TEST_CASE("ascii: the exact text of a 3x3 causal map", "[heatmap]") {
  const std::string expected =
      "weights\n"
      "       time   flies  like\n"
      "time   @ 1.00     o      o\n"
      "flies  = 0.45 + 0.55     o\n"
      "like   . 0.12 : 0.26 * 0.62\n"
      "scale 0.00 [ .:-=+*#%@] 1.00 (steps of 0.10)   o exactly 0 (masked)\n";
  const std::string out =
      render_heatmap(kCausal.data(), 3, 3, kTokens, kTokens, weights_options(Palette::ascii));
  CHECK(out == expected);
  for (char c : out)
    CHECK(static_cast<unsigned char>(c) < 0x80);
}

TEST_CASE("truecolor: 24-bit backgrounds and a reset at the end of every line", "[heatmap]") {
  const std::string out =
      render_heatmap(kCausal.data(), 3, 3, kTokens, kTokens, weights_options(Palette::truecolor));
  CHECK(out.find("\x1b[48;2;") != std::string::npos);
  CHECK(out.find("\x1b[48;2;253;231;37m") != std::string::npos);  // 1.0: viridis yellow
  CHECK(out.find("\x1b[48;2;68;1;84m") != std::string::npos);     // 0.0: viridis purple
  CHECK(out.find("\x1b[48;5;") == std::string::npos);
  CHECK(out.back() == '\n');
  const auto lines = lines_of(out);
  CHECK(lines.size() == 6);  // title, labels, 3 rows, legend
  for (const auto& line : lines) {
    INFO(line);
    CHECK(line.ends_with("\x1b[0m"));
  }
  CHECK(out.find("·") != std::string::npos);
}

TEST_CASE("256 colours: cube backgrounds and a reset at the end of every line", "[heatmap]") {
  const std::string out =
      render_heatmap(kCausal.data(), 3, 3, kTokens, kTokens, weights_options(Palette::color256));
  CHECK(out.find("\x1b[48;5;") != std::string::npos);
  CHECK(out.find("\x1b[48;2;") == std::string::npos);
  for (const auto& line : lines_of(out))
    CHECK(line.ends_with("\x1b[0m"));
}

TEST_CASE("shades and ascii print no escape sequence, even for a label holding one", "[heatmap]") {
  const std::vector<std::string> labels = {"a\x1b[31mb", "c\nd", "e"};
  for (Palette palette : {Palette::shades, Palette::ascii}) {
    for (bool show_values : {true, false}) {
      HeatmapOptions options = weights_options(palette);
      options.show_values = show_values;
      const std::string out = render_heatmap(kCausal.data(), 3, 3, labels, labels, options);
      INFO(out);
      CHECK_FALSE(has_escape(out));
      // title, labels (7 lines upright over narrow cells: "a?[31mb"), 3 rows, legend
      CHECK(lines_of(out).size() == (show_values ? 6u : 12u));  // no label broke a line
    }
  }
}

TEST_CASE("exact zeros print as a dot (o in ASCII), small weights keep their number", "[heatmap]") {
  const std::vector<float> values = {0.0f, -0.0f, 1e-6f, 0.004f};
  HeatmapOptions options = weights_options(Palette::shades);
  const std::string out = render_heatmap(values.data(), 1, 4, {"q"}, {}, options);
  const auto lines = lines_of(out);
  REQUIRE(lines.size() == 4);
  CHECK(lines[1] == "   0      1      2      3");
  CHECK(lines[2] == "q      ·      ·    0.00   0.00");
  CHECK(lines[3].find("· exactly 0 (masked)") != std::string::npos);

  options.palette = Palette::ascii;
  options.zero_meaning = "";  // e.g. a positional-encoding table, where 0 is only a value
  const auto ascii = lines_of(render_heatmap(values.data(), 1, 4, {"q"}, {}, options));
  CHECK(ascii[2] == "q      o      o    0.00   0.00");  // ASCII's shades start with '.'
  CHECK(ascii[3].ends_with("   o exactly 0"));

  // Without any zero the legend says nothing about the dot.
  const std::vector<float> dense = {0.5f, 0.5f};
  CHECK(render_heatmap(dense.data(), 1, 2, {}, {}, weights_options(Palette::shades))
            .find("exactly 0") == std::string::npos);
}

TEST_CASE("a constant matrix does not divide by zero", "[heatmap]") {
  const std::vector<float> values(6, 0.25f);
  for (Palette palette : {Palette::truecolor, Palette::color256, Palette::shades, Palette::ascii}) {
    HeatmapOptions options;
    options.palette = palette;
    const std::string out = render_heatmap(values.data(), 2, 3, {}, {}, options);
    INFO(out);
    CHECK(out.find("nan") == std::string::npos);
    CHECK(out.find("inf") == std::string::npos);
    CHECK(out.find("every value is 0.25") != std::string::npos);
  }
  HeatmapOptions options;
  const auto lines = lines_of(render_heatmap(values.data(), 2, 3, {}, {}, options));
  CHECK(lines[1] == "0  ▒ 0.25 ▒ 0.25 ▒ 0.25");
}

TEST_CASE("1x1 and empty matrices", "[heatmap]") {
  const float one = 0.5f;
  HeatmapOptions options;
  CHECK(render_heatmap(&one, 1, 1, {"[CLS]"}, {"[CLS]"}, options) ==
        "       [CLS]\n"
        "[CLS]  ▒ 0.50\n"
        "scale every value is 0.50 [▒]\n");
  options.palette = Palette::truecolor;
  CHECK(lines_of(render_heatmap(&one, 1, 1, {}, {}, options)).size() == 3);

  options = HeatmapOptions{};
  options.title = "empty";
  CHECK(render_heatmap(nullptr, 0, 4, {}, {"a", "b", "c", "d"}, options) ==
        "empty\n(no values: 0 x 4)\n");
  CHECK(render_heatmap(nullptr, 3, 0, {}, {}, HeatmapOptions{}) == "(no values: 3 x 0)\n");
  options.palette = Palette::color256;
  CHECK(render_heatmap(nullptr, 0, 0, {}, {}, options) ==
        "empty\x1b[0m\n(no values: 0 x 0)\x1b[0m\n");
}

TEST_CASE("past 100 columns the values go and the cells narrow", "[heatmap]") {
  const std::size_t n = 20;  // 20 cells of " ▒ 0.42" would be 140 columns
  std::vector<float> values(n * n, 0.0f);
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) {
    labels.push_back("tok" + std::to_string(i));
    for (std::size_t j = 0; j <= i; ++j)
      values[i * n + j] = 1.0f / static_cast<float>(i + 1);
  }
  for (Palette palette : {Palette::truecolor, Palette::color256, Palette::shades, Palette::ascii}) {
    const std::string out =
        render_heatmap(values.data(), n, n, labels, labels, weights_options(palette));
    INFO(out);
    const auto lines = lines_of(out);
    // title, 5 lines of vertical labels ("tok19"), 20 rows, legend
    REQUIRE(lines.size() == 1 + 5 + n + 1);
    CHECK(lines[1].starts_with("      t t t"));
    CHECK(lines[5].ends_with(palette == Palette::shades || palette == Palette::ascii ? "9"
                                                                                     : "9\x1b[0m"));
    for (std::size_t i = 6; i < 6 + n; ++i) {
      CHECK(lines[i].find("0.") == std::string::npos);  // no values in the rows
      if (palette == Palette::shades || palette == Palette::ascii)
        CHECK(display_width(lines[i]) <= attn::render::kHeatmapMaxWidth);
    }
  }
  // Shades: each cell two glyphs wide; masked cells keep their dot.
  const auto lines = lines_of(
      render_heatmap(values.data(), n, n, labels, labels, weights_options(Palette::shades)));
  CHECK(lines[6] == "tok0  ██· · · · · · · · · · · · · · · · · · ·");
  CHECK(lines[7].starts_with("tok1  ▒▒▒▒· · "));

  // show_values = false asks for the narrow cells at any size.
  HeatmapOptions options = weights_options(Palette::shades);
  options.show_values = false;
  const auto small = lines_of(render_heatmap(kCausal.data(), 3, 3, kTokens, kTokens, options));
  CHECK(small[small.size() - 2] == "like    ░░▓▓");

  // Too wide even for two columns: one column per cell.
  const std::size_t wide = 60;
  std::vector<float> row(wide, 0.5f);
  const auto one_row = lines_of(render_heatmap(row.data(), 1, wide, {"x"}, {}, options));
  CHECK(one_row.back().starts_with("scale"));
  CHECK(display_width(one_row[one_row.size() - 2]) == 2 + wide);
}

TEST_CASE("labels: truncated with an ellipsis, aligned by display width", "[heatmap]") {
  const std::vector<float> values = {0.5f, 0.25f, 0.125f, 1.0f};
  const std::vector<std::string> rows = {"unbelievably long token", "東京"};
  const std::vector<std::string> cols = {"unbelievably", "##ing"};
  const auto lines =
      lines_of(render_heatmap(values.data(), 2, 2, rows, cols, weights_options(Palette::shades)));
  REQUIRE(lines.size() == 5);
  CHECK(lines[1] == "              unbel… ##ing");  // column labels: the cell's width
  CHECK(lines[2].starts_with("unbelievabl…  ▒ 0.50"));
  CHECK(lines[3].starts_with("東京          "));  // 4 columns + 8 spaces: cells line up
  CHECK(display_width(lines[2]) == display_width(lines[3]));

  HeatmapOptions options = weights_options(Palette::ascii);
  const auto ascii = lines_of(render_heatmap(values.data(), 2, 2, rows, cols, options));
  CHECK(ascii[1] == "              unbel~ ##ing");
  CHECK(ascii[2].starts_with("unbelievabl~  + 0.50"));
  CHECK(ascii[3].starts_with("??           "));  // no UTF-8: non-ASCII prints as '?'

  // No labels: rows and columns are numbered.
  const auto numbered =
      lines_of(render_heatmap(values.data(), 2, 2, {}, {}, weights_options(Palette::shades)));
  CHECK(numbered[1] == "   0      1");
  CHECK(numbered[2].starts_with("0  ▒ 0.50"));
}

TEST_CASE("NaN and infinities: printed, kept off the scale", "[heatmap]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {nan, inf, -inf, 0.5f};
  HeatmapOptions options;  // the scale from the finite data alone: every value is 0.5
  CHECK(lines_of(render_heatmap(values.data(), 1, 4, {}, {}, options))
            .back()
            .starts_with("scale every value is 0.50"));
  options.low = 0.0f;
  options.high = 1.0f;
  const auto lines = lines_of(render_heatmap(values.data(), 1, 4, {}, {}, options));
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] == "0     nan █  inf   -inf ▒ 0.50");
  CHECK(lines[2].find("nan not a number") != std::string::npos);
  options.palette = Palette::truecolor;
  for (const auto& line : lines_of(render_heatmap(values.data(), 1, 4, {}, {}, options)))
    CHECK(line.ends_with("\x1b[0m"));
}

TEST_CASE("one end of the scale given, the other from the data", "[heatmap]") {
  const std::vector<float> values = {-3.0f, -1.0f};
  HeatmapOptions options;
  options.low = 0.0f;  // all data below low: the scale collapses onto low
  CHECK(lines_of(render_heatmap(values.data(), 1, 2, {}, {}, options)).back() ==
        "scale every value is 0.00 [▒]");
  options.low.reset();
  options.high = 1.0f;
  CHECK(lines_of(render_heatmap(values.data(), 1, 2, {}, {}, options)).back() ==
        "scale -3.00 [ ░▒▓█] 1.00 (steps of 0.80)");
}

TEST_CASE("bad arguments throw attn::Error naming render_heatmap", "[heatmap]") {
  HeatmapOptions options;
  CHECK_THROWS_AS(render_heatmap(kCausal.data(), 3, 3, {"a", "b"}, {}, options), attn::Error);
  CHECK_THROWS_AS(render_heatmap(kCausal.data(), 3, 3, {}, {"a"}, options), attn::Error);
  CHECK_THROWS_AS(render_heatmap(nullptr, 2, 2, {}, {}, options), attn::Error);
  options.low = 1.0f;
  options.high = 0.0f;
  CHECK_THROWS_WITH(render_heatmap(kCausal.data(), 3, 3, {}, {}, options),
                    Catch::Contains("[render_heatmap]") && Catch::Contains("low=1"));
  options = HeatmapOptions{};
  options.digits = 7;
  CHECK_THROWS_AS(render_heatmap(kCausal.data(), 3, 3, {}, {}, options), attn::Error);
}

TEST_CASE("digits sets the decimals and the cell width", "[heatmap]") {
  const std::vector<float> values = {0.123456f, 1.0f};
  HeatmapOptions options = weights_options(Palette::shades);
  options.title.clear();
  options.digits = 4;
  CHECK(lines_of(render_heatmap(values.data(), 1, 2, {"q"}, {"a", "b"}, options))[1] ==
        "q    0.1235 █ 1.0000");
  options.digits = 0;
  CHECK(lines_of(render_heatmap(values.data(), 1, 2, {"q"}, {"a", "b"}, options))[1] ==
        "q    0 █ 1");
}

TEST_CASE(
    "choose_palette: colour from COLORTERM and TERM, none under NO_COLOR, ascii without "
    "UTF-8",
    "[heatmap]") {
  TerminalEnvironment env;
  env.lang = "en_US.UTF-8";
  env.term = "xterm-256color";
  env.colorterm = "truecolor";
  CHECK(choose_palette(true, env) == Palette::truecolor);
  env.colorterm = "24bit";
  CHECK(choose_palette(true, env) == Palette::truecolor);
  env.colorterm = "";
  CHECK(choose_palette(true, env) == Palette::color256);
  env.term = "xterm";
  CHECK(choose_palette(true, env) == Palette::shades);

  // NO_COLOR, --color never, or stdout not a TTY: the caller passes colour_allowed = false.
  env.colorterm = "truecolor";
  env.term = "xterm-256color";
  CHECK(choose_palette(false, env) == Palette::shades);

  // The locale decides UTF-8: LC_ALL over LC_CTYPE over LANG; none set is the C locale.
  env.lc_all = "C";
  CHECK(choose_palette(true, env) == Palette::ascii);
  CHECK(choose_palette(false, env) == Palette::ascii);
  env.lc_all = "";
  env.lc_ctype = "POSIX";
  CHECK(choose_palette(true, env) == Palette::ascii);
  env.lc_ctype = "de_DE.utf8";
  env.lang = "C";
  CHECK(choose_palette(true, env) == Palette::truecolor);
  CHECK(attn::render::locale_is_utf8(TerminalEnvironment{}) == false);
}

TEST_CASE("per row: each row from 0 to its own largest value, printed after it", "[heatmap]") {
  // Rows of small weights over 8 keys (uniform 0.125): on 0..1 every cell would be blank.
  const std::vector<float> w = {0.02f, 0.02f, 0.02f, 0.02f, 0.02f, 0.10f, 0.20f, 0.60f,
                                0.04f, 0.04f, 0.04f, 0.04f, 0.04f, 0.08f, 0.32f, 0.40f};
  HeatmapOptions options;
  options.palette = Palette::shades;
  options.scale = attn::render::HeatmapScale::per_row;
  options.digits = 1;
  const auto lines = lines_of(render_heatmap(w.data(), 2, 8, {}, {}, options));
  REQUIRE(lines.size() == 4);
  // 0.10/0.60 = 0.17 -> blank, 0.20/0.60 = 0.33 -> ░, the row's max -> █; the entropy over ln 8.
  CHECK(lines[1] == "0    0.0   0.0   0.0   0.0   0.0   0.1 ░ 0.2 █ 0.6 max 0.6 H 0.60");
  CHECK(lines[2] == "1    0.0   0.0   0.0   0.0   0.0   0.1 ▓ 0.3 █ 0.4 max 0.4 H 0.76");
  CHECK(lines[3] ==
        "scale per row: 0 [ ░▒▓█] row max; H = entropy / ln n (1 uniform); near uniform, H ≥ 0.9: "
        "0 to 1");
}

TEST_CASE("per row: a near-uniform row is drawn from 0 to 1, never like a one-hot row",
          "[heatmap]") {
  // Row 0 is nearly uniform over 7 keys (uniform 0.143), row 1 one-hot. On its own scale row 0
  // would be solid █, the same glyph as row 1's 0.99.
  const std::vector<float> w = {0.15f, 0.14f, 0.14f, 0.15f, 0.14f, 0.14f, 0.14f,
                                0.99f, 0.01f, 0.0f,  0.0f,  0.0f,  0.0f,  0.0f};
  HeatmapOptions options;
  options.palette = Palette::shades;
  options.scale = attn::render::HeatmapScale::per_row;
  const auto lines = lines_of(render_heatmap(w.data(), 2, 7, {}, {}, options));
  REQUIRE(lines.size() == 4);
  CHECK(lines[1].find("█") == std::string::npos);
  CHECK(lines[1].find("H 1.00 near uniform") != std::string::npos);
  CHECK(lines[2].find("█ 0.99") != std::string::npos);
  CHECK(lines[2].find("near uniform") == std::string::npos);
  const attn::render::RowSpread flat = attn::render::row_spread(w.data(), 7),
                                peaked = attn::render::row_spread(w.data() + 7, 7);
  CHECK(flat.keys == 7);
  CHECK(flat.near_uniform);
  CHECK(flat.entropy_ratio > 0.99);
  CHECK(peaked.keys == 2);  // exact zeros are masked keys
  CHECK(!peaked.near_uniform);
  CHECK(peaked.entropy_ratio < 0.1);
}

TEST_CASE("diverging: centred on 0, shades by |value|, a minus marks narrow negative cells",
          "[heatmap]") {
  const std::vector<float> v = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 0.1f};
  HeatmapOptions options;
  options.palette = Palette::shades;
  options.scale = attn::render::HeatmapScale::diverging;
  options.zero_meaning = "";
  auto lines = lines_of(render_heatmap(v.data(), 1, 6, {}, {}, options));
  REQUIRE(lines.size() == 3);
  // -1 and 1 are equally far from 0: the same shade, the sign in the number.
  CHECK(lines[1] == "0  █ -1.00 ▒ -0.50     ·   ▒  0.50 █  1.00    0.10");
  CHECK(lines[2] ==
        "scale |value| 0 [ ░▒▓█] 1.00 (steps of 0.20), centred on 0; the sign is the value's   · "
        "exactly 0");

  // The scale is symmetric even when the data are not: -0.5 .. 2 gives -2 .. 2.
  const std::vector<float> lopsided = {-0.5f, 2.0f};
  options.palette = Palette::truecolor;
  const std::string colour = render_heatmap(lopsided.data(), 1, 2, {}, {}, options);
  CHECK(colour.find("scale -2.00 ") != std::string::npos);
  CHECK(colour.find("2.00, centred on 0") != std::string::npos);

  // Narrow cells (past the width): a leading '-' on negative cells.
  options.palette = Palette::shades;
  std::vector<float> wide(40);
  for (std::size_t j = 0; j < wide.size(); ++j)
    wide[j] = j % 2 == 0 ? -1.0f : 1.0f;
  lines = lines_of(render_heatmap(wide.data(), 1, wide.size(), {}, {}, options));
  const std::string& row = lines[lines.size() - 2];
  CHECK(row.find("-███-█") != std::string::npos);
  CHECK(lines.back().find("- marks a negative value") != std::string::npos);
}

TEST_CASE("max_width narrows the cells, side_by_side pads blocks to their widest line",
          "[heatmap]") {
  HeatmapOptions options = weights_options(Palette::shades);
  options.title = "";
  options.max_width = 20;
  const std::string narrow = render_heatmap(kCausal.data(), 3, 3, kTokens, kTokens, options);
  CHECK(narrow.find("0.45") == std::string::npos);  // no values in 20 columns
  const auto narrow_lines = lines_of(narrow);
  for (std::size_t k = 0; k + 1 < narrow_lines.size(); ++k)  // all but the legend
    CHECK(display_width(narrow_lines[k]) <= 20);

  const std::string beside = attn::render::side_by_side({"ab\nc\n", "xyz\n"}, 2);
  CHECK(beside == "ab  xyz\nc\n");
  // Escape sequences take no columns.
  CHECK(attn::render::block_width("\x1b[48;5;25mab\x1b[0m\n") == 2);
  CHECK(attn::render::side_by_side({"\x1b[1mab\x1b[0m\n", "z\n"}, 1) == "\x1b[1mab\x1b[0m z\n");
}

TEST_CASE("heatmap: cells may show their own text on the value's shade", "[heatmap]") {
  HeatmapOptions options;
  options.palette = Palette::shades;
  options.low = 0.0f;
  options.high = 1.0f;
  options.cell_text = {"a", "␣b*", "cd", "e"};
  const std::vector<float> p = {0.9f, 0.3f, 0.0f, 0.5f};
  const std::string map = render_heatmap(p.data(), 2, 2, {"h.0", "h.1"}, {"x", "y"}, options);
  const std::vector<std::string> lines = lines_of(map);
  REQUIRE(lines.size() == 4);
  CHECK(lines[1] == "h.0  █ a   ░ ␣b*");
  // A probability of exactly 0 is a value here, not a masked key: the text, no `·`.
  CHECK(lines[2] == "h.1    cd  ▒ e");
  CHECK(lines[3].find("exactly 0") == std::string::npos);
  options.cell_text.pop_back();
  CHECK_THROWS_AS(render_heatmap(p.data(), 2, 2, {}, {}, options), attn::Error);
}
