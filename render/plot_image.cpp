#include "plot_image.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "base/error.hpp"
#include "image_canvas.hpp"

namespace attn::render {

namespace {

using image::Align;

constexpr double kMargin = 24.0, kWidth = 760.0, kPanelHeight = 230.0, kPanelGap = 26.0;
constexpr double kTitleSize = 15.0, kLineSize = 12.0, kLineHeight = 18.0, kTickSize = 10.5;
constexpr double kAxisLeft = 78.0;  // room for the y label and the tick labels
constexpr double kAxisRight = 16.0;
// A PNG's pixels a unit: lines and text need less than the views' cells, and the file stays small.
constexpr double kPngScale = 1.5;
constexpr Rgb kGrid{232, 232, 232}, kAxis{90, 90, 90}, kMarkColor{204, 85, 0};
// Each panel's colours: every step faint, the running mean bold.
constexpr Rgb kBold[] = {{59, 82, 139}, {33, 145, 140}, {94, 60, 153}};
constexpr Rgb kFaint[] = {{190, 200, 225}, {175, 222, 218}, {210, 196, 230}};

Error export_error(const std::string& message) {
  return Error(ErrorKind::bad_value, "export", message).about("export");
}

// About `count` round values from low to high: steps of 1, 2 or 5 times a power of 10.
std::vector<double> nice_ticks(double low, double high, int count) {
  if (!(high > low)) return {low};
  const double raw = (high - low) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  std::vector<double> ticks;
  for (double v = std::ceil(low / step - 1e-9) * step; v <= high + step * 1e-9; v += step)
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

std::string tick_text(double v, bool percent) {
  if (percent) return fmt::format("{:g}%", v);
  return fmt::format("{:g}", v);
}

// The mean of the finite values among the `window` steps centred on each step (fewer at the
// ends).
std::vector<double> running_mean(const std::vector<double>& values, std::size_t window) {
  std::vector<double> out(values.size(), NAN);
  const std::size_t before = window / 2, after = window - 1 - before;
  double sum = 0.0;
  std::size_t count = 0, first = 0, last = 0;  // the values in [first, last) are summed
  for (std::size_t i = 0; i < values.size(); ++i) {
    for (; last < std::min(values.size(), i + after + 1); ++last)
      if (std::isfinite(values[last])) sum += values[last], ++count;
    for (; first + before < i; ++first)
      if (std::isfinite(values[first])) sum -= values[first], --count;
    if (count > 0) out[i] = sum / static_cast<double>(count);
  }
  return out;
}

// One panel's vertical axis: the value range, linear or log10, and its ticks.
struct Axis {
  double low = 0.0, high = 1.0;
  bool log = false;
  std::vector<double> ticks;

  double scaled(double v) const { return log ? std::log10(v) : v; }
  // 0 at the bottom, 1 at the top.
  double fraction(double v) const {
    return (scaled(v) - scaled(low)) / (scaled(high) - scaled(low));
  }
};

Axis make_axis(const CurvePanel& panel) {
  Axis a;
  if (panel.percent) {
    a.low = 0.0, a.high = 100.0;
    a.ticks = {0.0, 25.0, 50.0, 75.0, 100.0};
    return a;
  }
  double low = INFINITY, high = -INFINITY;
  for (double v : panel.values)
    if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v);
  for (const CurveMark& m : panel.marks)
    if (std::isfinite(m.value)) low = std::min(low, m.value), high = std::max(high, m.value);
  if (low > 0.0 && high / low > 100.0) {
    a.log = true;
    a.low = std::pow(10.0, std::floor(std::log10(low)));
    a.high = std::pow(10.0, std::ceil(std::log10(high)));
    for (double v = a.low; v <= a.high * 1.0001; v *= 10.0)
      a.ticks.push_back(v);
    return a;
  }
  a.low = std::min(0.0, low);
  a.high = high > a.low ? high : a.low + 1.0;
  a.ticks = nice_ticks(a.low, a.high, 5);
  a.high = std::max(a.high, a.ticks.back());
  return a;
}

}  // namespace

std::string curve_image(const CurvePicture& picture, ImageFormat format) {
  if (picture.panels.empty()) throw export_error("there is no curve to draw");
  std::size_t steps = 0;
  for (const CurvePanel& panel : picture.panels)
    steps = std::max(steps, panel.values.size());
  const std::size_t window = std::max<std::size_t>(1, steps / 50);
  const std::string key =
      window > 1
          ? fmt::format("faint: every step's batch; bold: the mean of the {} steps around each",
                        window)
          : "every step's batch";
  bool marked = false;
  for (const CurvePanel& panel : picture.panels)
    marked = marked || !panel.marks.empty();
  std::vector<std::string> lines = picture.subtitle;
  lines.push_back(key);
  if (marked) lines.push_back("dashed: measured once, on held-out data, after training");

  image::Measure measure;
  cairo_t* m = measure.cr();
  image::set_font(m, kTitleSize, true);
  double text_w = image::text_width(m, picture.title);
  image::set_font(m, kLineSize);
  for (const std::string& line : lines)
    text_w = std::max(text_w, image::text_width(m, line));
  const double width = std::max(kWidth, text_w + 2 * kMargin);
  const double panels_y =
      kMargin + kTitleSize + 6.0 + static_cast<double>(lines.size()) * kLineHeight + 18.0;
  const double plot_x = kMargin + kAxisLeft, plot_w = width - plot_x - kMargin - kAxisRight;
  const double n = static_cast<double>(steps);
  const auto x_of = [&](double step) {
    return steps <= 1 ? plot_x + plot_w / 2 : plot_x + plot_w * (step - 1.0) / (n - 1.0);
  };
  std::vector<double> x_ticks = nice_ticks(0.0, n, 6);
  x_ticks.erase(std::remove_if(x_ticks.begin(), x_ticks.end(), [](double v) { return v < 1.0; }),
                x_ticks.end());
  if (x_ticks.empty() || x_ticks.front() > 1.0) x_ticks.insert(x_ticks.begin(), 1.0);
  const double x_label_y = panels_y +
                           static_cast<double>(picture.panels.size()) * (kPanelHeight + kPanelGap) -
                           kPanelGap + 6.0 + kTickSize + 22.0;
  const double height = x_label_y + kMargin;

  return image::render(
      format, width, height,
      [&](cairo_t* cr) {
        image::set_color(cr, image::kText);
        image::set_font(cr, kTitleSize, true);
        image::draw_text(cr, picture.title, kMargin, kMargin + kTitleSize);
        image::set_font(cr, kLineSize);
        image::set_color(cr, image::kMuted);
        for (std::size_t i = 0; i < lines.size(); ++i)
          image::draw_text(
              cr, lines[i], kMargin,
              kMargin + kTitleSize + 6.0 + kLineHeight * (static_cast<double>(i) + 0.8));
        for (std::size_t p = 0; p < picture.panels.size(); ++p) {
          const CurvePanel& panel = picture.panels[p];
          const Axis axis = make_axis(panel);
          const double top = panels_y + static_cast<double>(p) * (kPanelHeight + kPanelGap);
          const double bottom = top + kPanelHeight;
          const auto y_of = [&](double v) { return bottom - kPanelHeight * axis.fraction(v); };
          const bool last_panel = p + 1 == picture.panels.size();
          // Grid, ticks and their labels.
          cairo_set_line_width(cr, 1.0);
          image::set_font(cr, kTickSize);
          for (double t : axis.ticks) {
            const double y = y_of(t);
            image::set_color(cr, kGrid);
            cairo_move_to(cr, plot_x, y);
            cairo_line_to(cr, plot_x + plot_w, y);
            cairo_stroke(cr);
            image::set_color(cr, image::kText);
            image::draw_text(cr, tick_text(t, panel.percent), plot_x - 6.0, y + kTickSize * 0.35,
                             Align::right);
          }
          for (double t : x_ticks) {
            const double x = x_of(t);
            image::set_color(cr, kGrid);
            cairo_move_to(cr, x, top);
            cairo_line_to(cr, x, bottom);
            cairo_stroke(cr);
            image::set_color(cr, kAxis);
            cairo_move_to(cr, x, bottom);
            cairo_line_to(cr, x, bottom + 4.0);
            cairo_stroke(cr);
            if (last_panel) {
              image::set_color(cr, image::kText);
              image::draw_text(cr, fmt::format("{:g}", t), x, bottom + 6.0 + kTickSize,
                               Align::center);
            }
          }
          image::set_color(cr, kAxis);
          cairo_rectangle(cr, plot_x, top, plot_w, kPanelHeight);
          cairo_stroke(cr);
          image::set_font(cr, kLineSize);
          image::set_color(cr, image::kText);
          image::draw_text(cr, panel.y_label + (axis.log ? " (log scale)" : ""), kMargin + 12.0,
                           top + kPanelHeight / 2, Align::center, -std::numbers::pi / 2);
          // The curves, clipped to the plot.
          cairo_save(cr);
          cairo_rectangle(cr, plot_x, top, plot_w, kPanelHeight);
          cairo_clip(cr);
          cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
          const auto line = [&](const std::vector<double>& values, Rgb color, double width_px) {
            bool drawing = false;
            for (std::size_t i = 0; i < values.size(); ++i) {
              const double v = values[i];
              if (!std::isfinite(v) || (axis.log && v <= 0.0)) {
                drawing = false;
                continue;
              }
              const double x = x_of(static_cast<double>(i + 1)), y = y_of(v);
              if (drawing)
                cairo_line_to(cr, x, y);
              else
                cairo_move_to(cr, x, y);
              drawing = true;
            }
            image::set_color(cr, color);
            cairo_set_line_width(cr, width_px);
            cairo_stroke(cr);
          };
          if (std::none_of(panel.values.begin(), panel.values.end(),
                           [](double v) { return std::isfinite(v); })) {
            image::set_font(cr, kLineSize);
            image::set_color(cr, image::kMuted);
            image::draw_text(cr, "no finite value to draw: every step's is inf or nan",
                             plot_x + plot_w / 2, top + kPanelHeight / 2, Align::center);
          }
          const std::size_t colour = p % std::size(kBold);
          if (window > 1) line(panel.values, kFaint[colour], 1.0);
          line(running_mean(panel.values, window), kBold[colour], 2.0);
          // Marks: dashed lines across, and a key of their values in a bottom or top corner,
          // whichever the curve's last quarter stays away from.
          const double dash[] = {5.0, 3.0};
          for (const CurveMark& mark : panel.marks) {
            if (!std::isfinite(mark.value)) continue;
            cairo_set_dash(cr, dash, 2, 0.0);
            image::set_color(cr, kMarkColor);
            cairo_set_line_width(cr, 1.5);
            cairo_move_to(cr, plot_x, y_of(mark.value));
            cairo_line_to(cr, plot_x + plot_w, y_of(mark.value));
            cairo_stroke(cr);
            cairo_set_dash(cr, nullptr, 0, 0.0);
          }
          if (!panel.marks.empty()) {
            double late = 0.0;
            std::size_t count = 0;
            for (std::size_t i = panel.values.size() * 3 / 4; i < panel.values.size(); ++i)
              if (std::isfinite(panel.values[i]) && (!axis.log || panel.values[i] > 0.0))
                late += axis.fraction(panel.values[i]), ++count;
            const bool curve_high = count > 0 && late / static_cast<double>(count) > 0.5;
            image::set_font(cr, kTickSize);
            std::vector<std::string> texts;
            double text_w = 0.0;
            for (const CurveMark& mark : panel.marks) {
              texts.push_back(fmt::format("{}: {}", mark.label,
                                          panel.percent ? fmt::format("{:.1f}%", mark.value)
                                                        : fmt::format("{:.4g}", mark.value)));
              text_w = std::max(text_w, image::text_width(cr, texts.back()));
            }
            const double row = kTickSize + 6.0, box_w = text_w + 40.0;
            const double box_h = static_cast<double>(texts.size()) * row + 8.0;
            const double box_x = plot_x + plot_w - box_w - 10.0;
            const double box_y = curve_high ? bottom - box_h - 10.0 : top + 10.0;
            image::fill_rect(cr, box_x, box_y, box_w, box_h, image::kWhite);
            image::set_color(cr, kGrid);
            cairo_set_line_width(cr, 1.0);
            cairo_rectangle(cr, box_x, box_y, box_w, box_h);
            cairo_stroke(cr);
            for (std::size_t i = 0; i < texts.size(); ++i) {
              const double y = box_y + 4.0 + (static_cast<double>(i) + 0.5) * row;
              cairo_set_dash(cr, dash, 2, 0.0);
              image::set_color(cr, kMarkColor);
              cairo_set_line_width(cr, 1.5);
              cairo_move_to(cr, box_x + 8.0, y);
              cairo_line_to(cr, box_x + 30.0, y);
              cairo_stroke(cr);
              cairo_set_dash(cr, nullptr, 0, 0.0);
              image::set_color(cr, image::kText);
              image::draw_text(cr, texts[i], box_x + 36.0, y + kTickSize * 0.35);
            }
          }
          cairo_restore(cr);
        }
        image::set_font(cr, kLineSize);
        image::set_color(cr, image::kText);
        image::draw_text(cr, picture.x_label, plot_x + plot_w / 2, x_label_y, Align::center);
      },
      "export", kPngScale, "drop <export>, and plot the curves' numbers from <save> DIR instead");
}

void write_curve_image(const CurvePicture& picture, const std::string& path) {
  const std::optional<ImageFormat> format = image_format(path);
  if (!format)
    throw export_error(
        fmt::format("'{}': attn draws pictures as .svg or .png, chosen by the "
                    "extension: name the file e.g. loss.png",
                    printable(path)));
  write_file_whole(path, curve_image(picture, *format), "export");
}

}  // namespace attn::render
