// render/plot_image: a training run's curves as SVG and PNG. The PNG is read back through cairo:
// a falling curve's bold pixels sit high on the left and low on the right, a rising one's the other
// way round; the SVG's tags balance.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "image_check.hpp"
#include "plot_image.hpp"
#include "scratch.hpp"

using attn::render::CurvePicture;
using attn::render::ImageFormat;
using attn::testing::Pixel;

namespace {

// Every step's value of a loss that falls from `start` to about `end`, with a little noise.
std::vector<double> falling(std::size_t steps, double start, double end) {
  std::vector<double> v;
  for (std::size_t i = 0; i < steps; ++i) {
    const double x = static_cast<double>(i) / static_cast<double>(steps);
    v.push_back(end + (start - end) * std::exp(-6.0 * x) * (1.0 + 0.05 * std::sin(37.0 * x)));
  }
  return v;
}

CurvePicture picture(std::vector<double> loss) {
  CurvePicture p;
  p.title = "a made-up run";
  p.subtitle = {"its model", "its settings"};
  std::vector<double> accuracy;
  for (double l : loss)
    accuracy.push_back(100.0 * (1.0 - std::min(1.0, l / loss.front())));
  p.panels.push_back({"loss", std::move(loss), false, {}});
  p.panels.push_back({"accuracy", std::move(accuracy), true, {{"held-out", 97.5}}});
  return p;
}

// The mean row of the pixels within 12 of `colour` in the first and the last tenth of the columns
// where that colour appears.
std::pair<double, double> mean_rows_at_ends(const attn::testing::PngImage& png, Pixel colour) {
  int left = png.width, right = -1;
  for (int y = 0; y < png.height; ++y)
    for (int x = 0; x < png.width; ++x)
      if (attn::testing::distance(png.at(x, y), colour) <= 12)
        left = std::min(left, x), right = std::max(right, x);
  REQUIRE(right > left);
  const int tenth = std::max(1, (right - left) / 10);
  double first = 0, last = 0;
  int n_first = 0, n_last = 0;
  for (int y = 0; y < png.height; ++y)
    for (int x = 0; x < png.width; ++x) {
      if (attn::testing::distance(png.at(x, y), colour) > 12) continue;
      if (x < left + tenth) first += y, ++n_first;
      if (x > right - tenth) last += y, ++n_last;
    }
  REQUIRE(n_first > 0);
  REQUIRE(n_last > 0);
  return {first / n_first, last / n_last};
}

constexpr Pixel kLossColour{59, 82, 139}, kAccuracyColour{33, 145, 140};

}  // namespace

TEST_CASE("the loss falls and the accuracy rises in the picture, on linear and log axes") {
  for (const double end : {0.3, 1e-4}) {  // 1e-4: more than a factor of 100, a log axis
    INFO("loss falls to " << end);
    const CurvePicture p = picture(falling(500, 2.5, end));
    const attn::testing::PngImage png =
        attn::testing::decode_png(attn::render::curve_image(p, ImageFormat::png));
    REQUIRE(png.ok);
    CHECK(png.width >= 1000);
    std::size_t white = 0;
    for (const Pixel& px : png.pixels)
      white += attn::testing::is_white(px);
    CHECK(static_cast<double>(white) / png.pixels.size() > 0.5);
    CHECK(white < png.pixels.size());
    const auto [loss_first, loss_last] = mean_rows_at_ends(png, kLossColour);
    CHECK(loss_first + 50 < loss_last);  // higher on the screen at the start
    const auto [accuracy_first, accuracy_last] = mean_rows_at_ends(png, kAccuracyColour);
    CHECK(accuracy_first > accuracy_last + 50);
    const std::string svg = attn::render::curve_image(p, ImageFormat::svg);
    CHECK(attn::testing::xml_problem(svg).empty());
    CHECK(attn::testing::count_of(svg, "<use xlink:href=\"#glyph") > 100);
  }
}

TEST_CASE("a curve picture needs a panel, and values that are not finite are left out") {
  CurvePicture empty;
  CHECK_THROWS_AS(attn::render::curve_image(empty, ImageFormat::png), attn::Error);
  // A run that diverged at once: the axes and a note, no curve.
  const attn::testing::PngImage nan =
      attn::testing::decode_png(attn::render::curve_image(picture({NAN, NAN}), ImageFormat::png));
  REQUIRE(nan.ok);
  std::size_t loss_pixels = 0;
  for (const Pixel& p : nan.pixels)
    loss_pixels += attn::testing::distance(p, kLossColour) <= 12;
  CHECK(loss_pixels == 0);
  // Some steps not finite (a diverged step): drawn around them.
  std::vector<double> gaps = falling(100, 2.0, 0.5);
  gaps[40] = INFINITY, gaps[41] = NAN;
  CHECK(attn::testing::decode_png(attn::render::curve_image(picture(gaps), ImageFormat::png)).ok);
  // One step.
  CHECK(attn::testing::decode_png(attn::render::curve_image(picture({1.5}), ImageFormat::png)).ok);
}

TEST_CASE("write_curve_image picks the format by the extension and refuses others") {
  const attn::testing::ScratchDir scratch("curve-image");
  const CurvePicture p = picture(falling(50, 2.0, 0.1));
  attn::render::write_curve_image(p, (scratch.path / "loss.png").string());
  attn::render::write_curve_image(p, (scratch.path / "loss.SVG").string());
  CHECK(attn::testing::read_bytes((scratch.path / "loss.png").string()).starts_with("\x89PNG"));
  CHECK(attn::testing::read_bytes((scratch.path / "loss.SVG").string()).starts_with("<?xml"));
  CHECK_THROWS_WITH(attn::render::write_curve_image(p, (scratch.path / "loss.pdf").string()),
                    Catch::Contains("attn draws pictures as .svg or .png"));
}
