// render/view_image: bertviz's three views as SVG and PNG, on a made-up view whose weights are
// known: query t gives key (t + 1) mod S the weight 0.9 and every other key 0.025. The SVG is
// read as text (tags that balance, cairo's filled rectangles with their colours, its glyphs); the
// PNG through cairo, each cell's pixel held to the SVG's colour of that cell.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "attention_view.hpp"
#include "base/error.hpp"
#include "heatmap.hpp"
#include "image_check.hpp"
#include "page_data.hpp"
#include "scratch.hpp"
#include "view.hpp"
#include "view_export.hpp"
#include "view_image.hpp"

using attn::render::ExportRequest;
using attn::render::ImageFormat;
using attn::testing::Pixel;
using attn::testing::SvgRect;

namespace {

// L layers, H heads, T queries, S keys, hs head size.
attn::AttentionView made_up_view(std::size_t L, std::size_t H, std::size_t T, std::size_t S,
                                 std::size_t hs, bool causal = false) {
  attn::AttentionView v;
  v.model = "a made-up model";
  v.part = causal ? "decoder self-attention (causal)" : "cross-attention";
  for (std::size_t t = 0; t < T; ++t)
    v.rows.push_back(fmt::format("q{}", t));
  for (std::size_t s = 0; s < S; ++s)
    v.columns.push_back(fmt::format("{}{}", causal ? "q" : "key", s));
  v.layers = L, v.heads = H, v.head_size = hs, v.causal = causal;
  v.weights = attn::Tensor4::from_shape({L, H, T, S});
  v.queries = attn::Tensor4::from_shape({L, H, T, hs});
  v.keys = attn::Tensor4::from_shape({L, H, S, hs});
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t t = 0; t < T; ++t) {
        for (std::size_t s = 0; s < S; ++s)
          v.weights(l, h, t, s) = s == (t + 1) % S ? 0.9f : 0.1f / static_cast<float>(S - 1);
        for (std::size_t i = 0; i < hs; ++i)
          v.queries(l, h, t, i) = std::sin(0.7f * static_cast<float>(t * hs + i + l + h));
      }
      for (std::size_t s = 0; s < S; ++s)
        for (std::size_t i = 0; i < hs; ++i)
          v.keys(l, h, s, i) = std::cos(0.3f * static_cast<float>(s * hs + i + 2 * l + h));
    }
  return v;
}

// The causal view's weights: query t spreads evenly over keys 0..t, later keys exactly 0.
attn::AttentionView made_up_causal_view(std::size_t T) {
  attn::AttentionView v = made_up_view(1, 2, T, T, 4, true);
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < T; ++s)
        v.weights(0, h, t, s) = s <= t ? 1.0f / static_cast<float>(t + 1) : 0.0f;
  return v;
}

Pixel pixel(attn::render::Rgb c) {
  return {c.r, c.g, c.b};
}

std::size_t with_fill(const std::vector<SvgRect>& rects, Pixel colour) {
  std::size_t n = 0;
  for (const SvgRect& r : rects)
    n += attn::testing::distance(r.fill, colour) <= 1;
  return n;
}

std::size_t characters(const std::vector<std::string>& labels) {
  std::size_t n = 0;
  for (const std::string& l : labels)
    n += l.size();
  return n;
}

// The SVG is whole, and the PNG of the same view is the SVG's size twice over, with every cell
// of `colour` in the SVG drawn in that colour at its centre in the PNG.
void check_png_matches_svg(const std::string& svg, const std::string& png_bytes, Pixel colour) {
  const auto [w, h] = attn::testing::svg_size(svg);
  const attn::testing::PngImage png = attn::testing::decode_png(png_bytes);
  REQUIRE(png.ok);
  CHECK(png.width == static_cast<int>(std::ceil(2 * w)));
  CHECK(png.height == static_cast<int>(std::ceil(2 * h)));
  std::size_t checked = 0;
  for (const SvgRect& r : attn::testing::svg_rects(svg)) {
    if (attn::testing::distance(r.fill, colour) > 1 || r.w < 2 || r.h < 2) continue;
    const Pixel got =
        png.at(static_cast<int>(2 * (r.x + r.w / 2)), static_cast<int>(2 * (r.y + r.h / 2)));
    INFO("cell at (" << r.x << ", " << r.y << ")");
    CHECK(attn::testing::distance(got, colour) <= 1);
    ++checked;
  }
  CHECK(checked > 0);
  std::size_t white = 0;
  for (const Pixel& p : png.pixels)
    white += attn::testing::is_white(p);
  CHECK(static_cast<double>(white) / static_cast<double>(png.pixels.size()) > 0.3);
}

}  // namespace

TEST_CASE("the model view draws every layer's and head's cells in viridis, with the tokens") {
  const std::size_t L = 2, H = 3, T = 4, S = 5;
  const attn::AttentionView v = made_up_view(L, H, T, S, 4);
  const ExportRequest request{"model", 0, {}, 0, 0, false};
  const std::string svg = attn::render::view_image(v, request, ImageFormat::svg);
  INFO(svg.substr(0, 400));
  CHECK(svg.starts_with("<?xml"));
  CHECK(attn::testing::xml_problem(svg).empty());
  const std::vector<SvgRect> rects = attn::testing::svg_rects(svg);
  // The fixed scale: 0.9 and 0.025 are viridis at those positions, one 0.9 in each row.
  const Pixel high = pixel(attn::render::viridis_color(0.9)),
              low = pixel(attn::render::viridis_color(0.1 / (S - 1)));
  CHECK(with_fill(rects, high) == L * H * T);
  CHECK(with_fill(rects, low) == L * H * T * (S - 1));
  // Text is cairo's glyphs: at least every label's characters and the title's.
  CHECK(attn::testing::count_of(svg, "<use xlink:href=\"#glyph") >=
        characters(v.rows) + characters(v.columns) + v.model.size());
  check_png_matches_svg(svg, attn::render::view_image(v, request, ImageFormat::png), high);
}

TEST_CASE("the head view draws the heads asked for, in order, on a fixed or per-row scale") {
  const std::size_t T = 6, S = 7;
  const attn::AttentionView v = made_up_view(2, 3, T, S, 4);
  SECTION("fixed") {
    const std::string svg =
        attn::render::view_image(v, {"head", 1, {2, 0}, 0, 0, false}, ImageFormat::svg);
    CHECK(attn::testing::xml_problem(svg).empty());
    const std::vector<SvgRect> rects = attn::testing::svg_rects(svg);
    CHECK(with_fill(rects, pixel(attn::render::viridis_color(0.9))) == 2 * T);
    CHECK(with_fill(rects, pixel(attn::render::viridis_color(0.1 / (S - 1)))) == 2 * T * (S - 1));
  }
  SECTION("per row: each row's largest weight is the top of the scale") {
    const std::string svg =
        attn::render::view_image(v, {"head", 0, {1}, 0, 0, true}, ImageFormat::svg);
    const std::vector<SvgRect> rects = attn::testing::svg_rects(svg);
    CHECK(with_fill(rects, pixel(attn::render::viridis_color(1.0))) == T);
    const double low = (0.1 / (S - 1)) / 0.9;
    CHECK(with_fill(rects, pixel(attn::render::viridis_color(low))) == T * (S - 1));
    check_png_matches_svg(
        svg, attn::render::view_image(v, {"head", 0, {1}, 0, 0, true}, ImageFormat::png),
        pixel(attn::render::viridis_color(1.0)));
  }
  SECTION("no heads named: every head") {
    const std::string svg =
        attn::render::view_image(v, {"head", 0, {}, 0, 0, false}, ImageFormat::svg);
    CHECK(with_fill(attn::testing::svg_rects(svg), pixel(attn::render::viridis_color(0.9))) ==
          3 * T);
  }
}

TEST_CASE("a causal view draws the masked keys grey, apart from the weights' colours") {
  const std::size_t T = 5;
  const attn::AttentionView v = made_up_causal_view(T);
  const std::string svg =
      attn::render::view_image(v, {"head", 0, {0, 1}, 0, 0, false}, ImageFormat::svg);
  CHECK(attn::testing::xml_problem(svg).empty());
  const std::vector<SvgRect> rects = attn::testing::svg_rects(svg);
  // Two heads' upper triangles, and the legend's swatch.
  CHECK(with_fill(rects, {225, 225, 225}) == 2 * T * (T - 1) / 2 + 1);
  CHECK(with_fill(rects, pixel(attn::render::viridis_color(1.0))) == 2);  // row 0: all on key 0
  const std::string model =
      attn::render::view_image(v, {"model", 0, {}, 0, 0, false}, ImageFormat::svg);
  CHECK(with_fill(attn::testing::svg_rects(model), {225, 225, 225}) == 2 * T * (T - 1) / 2 + 1);
}

TEST_CASE("the neuron view draws q, each k and q∘k as signed colour cells") {
  SECTION("a small head: the numbers in the cells") {
    const attn::AttentionView v = made_up_view(1, 2, 3, 4, 4);
    const std::string svg =
        attn::render::view_image(v, {"neuron", 0, {}, 1, 2, false}, ImageFormat::svg);
    CHECK(attn::testing::xml_problem(svg).empty());
    // q, then k and q∘k for each of the 4 keys: 4 cells each, in the diverging map (never
    // viridis, never grey); plus the weight bars.
    std::size_t signed_cells = 0;
    for (const SvgRect& r : attn::testing::svg_rects(svg))
      if (r.w > 20 && r.h == 18) ++signed_cells;
    CHECK(signed_cells == 4 * (1 + 2 * 4));
    check_png_matches_svg(
        svg, attn::render::view_image(v, {"neuron", 0, {}, 1, 2, false}, ImageFormat::png),
        pixel(attn::render::viridis_color(0.35)));
  }
  SECTION("a wide head: small squares") {
    const attn::AttentionView v = made_up_view(1, 1, 3, 3, 24);
    const std::string svg =
        attn::render::view_image(v, {"neuron", 0, {}, 0, 1, false}, ImageFormat::svg);
    CHECK(attn::testing::xml_problem(svg).empty());
    std::size_t squares = 0;
    for (const SvgRect& r : attn::testing::svg_rects(svg))
      if (r.w == 5 && r.h == 10) ++squares;  // 160 / 24: 6 units, a unit apart
    CHECK(squares == 24 * (1 + 2 * 3));
  }
}

TEST_CASE("labels that are not text, or are long, are drawn safely") {
  attn::AttentionView v = made_up_view(1, 1, 3, 3, 4);
  v.rows = {"\x1b[31mred", "\xff\xfe", std::string(500, 'w')};
  v.columns = {"tab\there", "", "é∘√"};
  v.model = "a model \n with a line break";
  for (const char* kind : {"head", "model", "neuron"}) {
    INFO(kind);
    const std::string svg =
        attn::render::view_image(v, {kind, 0, {}, 0, 2, false}, ImageFormat::svg);
    CHECK(attn::testing::xml_problem(svg).empty());
    const auto [w, h] = attn::testing::svg_size(svg);
    CHECK(w < 1400);  // the long label is cut with …
    CHECK(h > 0);
    CHECK(attn::testing::decode_png(
              attn::render::view_image(v, {kind, 0, {}, 0, 2, false}, ImageFormat::png))
              .ok);
  }
}

TEST_CASE("a request outside the view is refused about export, naming what is missing") {
  const attn::AttentionView v = made_up_view(2, 3, 4, 5, 4);
  const auto refused = [&](const ExportRequest& r, const std::string& says) {
    try {
      attn::render::view_image(v, r, ImageFormat::png);
      FAIL("no error for " << says);
    } catch (const attn::Error& e) {
      CHECK(e.subject() == "export");
      CHECK_THAT(e.detail(), Catch::Contains(says));
    }
  };
  refused({"head", 2, {}, 0, 0, false}, "layer 2 does not exist: the view has 2, 0 to 1");
  refused({"head", 0, {0, 3}, 0, 0, false}, "head 3 does not exist: the view has 3, 0 to 2");
  refused({"neuron", 0, {}, 3, 0, false}, "head 3 does not exist");
  refused({"neuron", 0, {}, 0, 4, false}, "query token 4 does not exist: the view has 4, 0 to 3");
  refused({"attention", 0, {}, 0, 0, false},
          "'attention' is not a view: use head, model or neuron");
}

TEST_CASE("a picture too large to draw is refused before it is drawn") {
  const attn::AttentionView v = made_up_view(1, 1, 2100, 2100, 4);
  try {
    attn::render::view_image(v, {"model", 0, {}, 0, 0, false}, ImageFormat::png);
    FAIL("no error");
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::too_large);
    CHECK(e.subject() == "export");
    CHECK_THAT(e.detail(), Catch::Contains("larger than attn draws (4000 on a side"));
  }
}

TEST_CASE("write_view_image writes .svg or .png by the extension, whole, and nothing else") {
  const attn::testing::ScratchDir scratch("view-image");
  const attn::AttentionView v = made_up_view(1, 2, 3, 3, 4);
  const ExportRequest request{"model", 0, {}, 0, 0, false};
  const std::string png = (scratch.path / "view.PNG").string(),
                    svg = (scratch.path / "v.Svg").string();
  attn::render::write_view_image(v, request, png);
  attn::render::write_view_image(v, request, svg);
  CHECK(attn::testing::read_bytes(png).starts_with("\x89PNG\r\n\x1a\n"));
  CHECK(attn::testing::read_bytes(svg).starts_with("<?xml"));
  // Again over the same files: replaced whole.
  attn::render::write_view_image(v, request, png);
  CHECK(attn::testing::decode_png(attn::testing::read_bytes(png)).ok);
  const auto refused = [&](const std::string& path, const std::string& says) {
    try {
      attn::render::write_view_image(v, request, path);
      FAIL("no error for " << path);
    } catch (const attn::Error& e) {
      CHECK(e.subject() == "export");
      CHECK_THAT(e.detail(), Catch::Contains(says));
    }
  };
  refused((scratch.path / "view.jpg").string(), "attn draws pictures as .svg or .png");
  refused((scratch.path / "missing" / "view.png").string(), "cannot write");
  CHECK(attn::testing::names_in(scratch.path) == std::set<std::string>{"view.PNG", "v.Svg"});
}

namespace {

// The text of the SVG's <desc>, or "" without one.
std::string description(const std::string& svg) {
  const std::size_t open = svg.find("<desc>"), close = svg.find("</desc>");
  if (open == std::string::npos || close == std::string::npos) return "";
  return svg.substr(open + 6, close - open - 6);
}

std::string hex(attn::render::Rgb c) {
  return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b);
}

}  // namespace

TEST_CASE("per row, a near-uniform row is drawn from 0 to 1 and marked, in picture and page") {
  const std::size_t T = 4, S = 5;
  attn::AttentionView v = made_up_view(1, 2, T, S, 4);
  // Query 2 of head 1: every key 0.2 (H = 1), which a per-row scale would draw as 5 tops.
  for (std::size_t s = 0; s < S; ++s)
    v.weights(0, 1, 2, s) = 1.0f / static_cast<float>(S);
  CHECK(attn::render::weight_row_spread(v, 0, 1, 2).near_uniform);
  CHECK_FALSE(attn::render::weight_row_spread(v, 0, 1, 1).near_uniform);
  CHECK(attn::render::weight_position(v, 0, 1, 2, 0, true) == Approx(0.2));
  CHECK(attn::render::weight_position(v, 0, 1, 1, 2, true) == Approx(1.0));
  const ExportRequest request{"head", 0, {1}, 0, 0, true};
  const std::string svg = attn::render::view_image(v, request, ImageFormat::svg);
  CHECK(attn::testing::xml_problem(svg).empty());
  const std::vector<SvgRect> rects = attn::testing::svg_rects(svg);
  // The other rows' tops are the top of the scale; the uniform row is viridis at 0.2, faint.
  CHECK(with_fill(rects, pixel(attn::render::viridis_color(1.0))) == T - 1);
  CHECK(with_fill(rects, pixel(attn::render::viridis_color(0.2))) == S);
  check_png_matches_svg(svg, attn::render::view_image(v, request, ImageFormat::png),
                        pixel(attn::render::viridis_color(0.2)));
  // One legend: the SVG's words are the page's, and the terminal's.
  CHECK(description(svg) == attn::render::kPerRowLegend);
  const nlohmann::json page = attn::testing::page_data(attn::render::view_html(v, request));
  CHECK(page["legend_per_row"] == std::string(attn::render::kPerRowLegend));
  CHECK(page["row_near_uniform"][0][1] == nlohmann::json::array({0, 0, 1, 0}));
  CHECK(page["row_entropy"][0][1][2].get<double>() == Approx(1.0).margin(1e-4));
  attn::render::ViewStyle style;
  style.per_row = true;
  style.width = 400;  // the legend on one line
  const std::string text = attn::render::render_head_view(v, 0, {1}, style);
  INFO(text);
  CHECK(text.find(attn::render::kPerRowLegend) != std::string::npos);
  CHECK(attn::testing::count_of(text, "near uniform") == 1);
}

TEST_CASE("signed values: the page, the picture and the terminal share one diverging map") {
  attn::AttentionView v = made_up_view(1, 1, 2, 2, 4);
  // q = (1, -1, 0.5, 0): its largest |value| is 1, so +1 is the map's red end and -1 its blue.
  const float q[] = {1.0f, -1.0f, 0.5f, 0.0f};
  for (std::size_t i = 0; i < 4; ++i)
    v.queries(0, 0, 0, i) = q[i];
  const ExportRequest request{"neuron", 0, {}, 0, 0, false};
  const std::string svg = attn::render::view_image(v, request, ImageFormat::svg);
  const nlohmann::json page = attn::testing::page_data(attn::render::view_html(v, request));
  const std::vector<std::string> stops = page["signed_colours"];
  REQUIRE(stops.size() == 5);
  CHECK(stops.front() == hex(attn::render::diverging_color(0.0)));
  CHECK(stops[2] == hex(attn::render::diverging_color(0.5)));
  CHECK(stops.back() == hex(attn::render::diverging_color(1.0)));
  // The picture's q cells: red for +1, blue for -1, the page's two ends.
  std::set<std::string> fills;
  for (const SvgRect& r : attn::testing::svg_rects(svg))
    fills.insert(fmt::format("#{:02x}{:02x}{:02x}", r.fill.r, r.fill.g, r.fill.b));
  CHECK(fills.count(stops.back()) == 1);
  CHECK(fills.count(stops.front()) == 1);
  CHECK(attn::render::diverging_color(1.0).r > attn::render::diverging_color(1.0).b);  // red
  CHECK(description(svg) == attn::render::kSignedLegend);
  CHECK(page["legend_signed"] == std::string(attn::render::kSignedLegend));
  // The terminal: in colour the same red for +1; without colour a sign character a number.
  attn::AttentionView wide = made_up_view(1, 1, 2, 2, 12);
  for (std::size_t i = 0; i < 12; ++i)
    wide.queries(0, 0, 0, i) = i % 3 == 0 ? 1.0f : i % 3 == 1 ? -1.0f : -0.3f;
  const attn::NeuronView n = attn::neuron_view(wide, 0, 0, 0);
  attn::render::ViewStyle style;
  style.width = 400;  // the legend on one line
  style.palette = attn::render::Palette::truecolor;
  const attn::render::Rgb red = attn::render::diverging_color(1.0);
  std::string text = attn::render::render_neuron_view(wide, n, style);
  CHECK(text.find(fmt::format("48;2;{};{};{}m", red.r, red.g, red.b)) != std::string::npos);
  CHECK(text.find(attn::render::kSignedLegend) != std::string::npos);
  style.palette = attn::render::Palette::shades;
  text = attn::render::render_neuron_view(wide, n, style);
  INFO(text);
  CHECK(text.find("q (12 numbers) #=-#=-#=-#=-\n") != std::string::npos);
}
