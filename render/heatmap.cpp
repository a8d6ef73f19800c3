// The heatmap renderer: layout (labels, cells, legend) and the palettes.
#include "heatmap.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/utf8.hpp"

namespace attn::render {

RowSpread row_spread(const float* weights, std::size_t count) {
  RowSpread r;
  double sum = 0.0;
  for (std::size_t j = 0; j < count; ++j) {
    const double w = weights[j];
    if (!(w > 0.0) || !std::isfinite(w)) continue;
    ++r.keys;
    sum += w;
  }
  if (r.keys < 2) return r;
  double entropy = 0.0;  // of the row divided by its sum (a softmax row's sum is 1)
  for (std::size_t j = 0; j < count; ++j) {
    const double w = weights[j];
    if (w > 0.0 && std::isfinite(w)) entropy -= w / sum * std::log(w / sum);
  }
  const double n = static_cast<double>(r.keys);
  r.entropy_ratio = entropy / std::log(n);
  r.near_uniform = r.entropy_ratio >= kNearUniform;
  return r;
}

namespace {

constexpr std::string_view kReset = "\x1b[0m";
constexpr std::size_t kMaxRowLabelWidth = 12;  // display columns
constexpr std::size_t kMaxVerticalLabel = 8;   // lines of top labels over narrow cells
constexpr std::size_t kLegendSteps = 10;       // colour legend: steps of two columns each

// ---- Text: code points and their display width

// One character as printed: a code point (plus any zero-width marks after it) and its columns.
struct Glyph {
  std::string text;
  std::size_t width;
};

// Splits UTF-8 into printable glyphs. Invalid bytes, control characters (which could move the
// cursor or start an escape) and, when `ascii`, anything outside ASCII become '?' (but an arrow
// "→", as in a decoder's "<s>→h" label, becomes "->").
std::vector<Glyph> split_glyphs(std::string_view s, bool ascii) {
  std::vector<Glyph> glyphs;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t length = utf8_sequence_length(s, i);
    const char32_t c = length == 0 ? 0xFFFD : utf8_code_point(s, i, length);
    const std::size_t used = length == 0 ? 1 : length;
    i += used;
    const bool control = c < 0x20 || (c >= 0x7F && c < 0xA0) || c == 0xFFFD;
    if (ascii && c == U'\u2192') {
      glyphs.push_back({"-", 1});
      glyphs.push_back({">", 1});
      continue;
    }
    if (control || (ascii && c >= 0x80)) {
      glyphs.push_back({"?", 1});
      continue;
    }
    const std::size_t width = column_width(c);
    if (width == 0 && !glyphs.empty()) {
      append_utf8(glyphs.back().text, c);  // a combining mark joins the character before it
    } else {
      glyphs.push_back({"", std::max<std::size_t>(width, 1)});
      append_utf8(glyphs.back().text, c);
    }
  }
  return glyphs;
}

std::size_t width_of(const std::vector<Glyph>& glyphs) {
  std::size_t n = 0;
  for (const auto& g : glyphs)
    n += g.width;
  return n;
}

// Text that fits in `width` columns: truncated with the ellipsis when longer, padded to `width`.
std::string fit(const std::vector<Glyph>& glyphs, std::size_t width, std::string_view ellipsis) {
  std::string out;
  std::size_t used = 0;
  if (width_of(glyphs) <= width) {
    for (const auto& g : glyphs)
      out += g.text;
    used = width_of(glyphs);
  } else if (width > 0) {
    for (const auto& g : glyphs) {
      if (used + g.width > width - 1) break;
      out += g.text;
      used += g.width;
    }
    out += ellipsis;
    used += 1;
  }
  out.append(width - used, ' ');
  return out;
}

std::string right_align(std::string_view text, std::size_t text_width, std::size_t width) {
  return std::string(width > text_width ? width - text_width : 0, ' ') + std::string(text);
}

std::string center(std::string_view text, std::size_t text_width, std::size_t width) {
  const std::size_t space = width > text_width ? width - text_width : 0;
  return std::string(space - space / 2, ' ') + std::string(text) + std::string(space / 2, ' ');
}

// ---- Colour

// matplotlib's viridis at t = 0, 1/8, ..., 1: perceptually uniform, dark purple to yellow, and
// readable by most colour-blind viewers.
constexpr std::array<Rgb, 9> kViridis = {{{68, 1, 84},
                                          {72, 40, 120},
                                          {62, 74, 137},
                                          {49, 104, 142},
                                          {38, 130, 142},
                                          {31, 158, 137},
                                          {53, 183, 121},
                                          {109, 205, 89},
                                          {253, 231, 37}}};

// The colour at t in [0, 1] of a map given by equally spaced stops, linearly interpolated.
template <std::size_t N>
Rgb interpolate(const std::array<Rgb, N>& stops, double t) {
  const double x = std::clamp(t, 0.0, 1.0) * static_cast<double>(N - 1);
  const auto i = std::min(static_cast<std::size_t>(x), N - 2);
  const double f = x - static_cast<double>(i);
  const auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
  return {mix(stops[i].r, stops[i + 1].r), mix(stops[i].g, stops[i + 1].g),
          mix(stops[i].b, stops[i + 1].b)};
}

// An xterm 256-colour cube index (16-231) as RGB.
Rgb xterm_color(int index) {
  static constexpr std::array<int, 6> kLevels = {0, 95, 135, 175, 215, 255};
  const auto i = static_cast<std::size_t>(index - 16);
  return {kLevels[i / 36], kLevels[i / 6 % 6], kLevels[i % 6]};
}

// Viridis in xterm's 6x6x6 cube, chosen by hand with a strictly rising CIELAB lightness (21, 24,
// 40, 52, 64, 78, 81, 87): the nearest cube colour to each viridis step is not ordered.
constexpr std::array<int, 8> kViridis256 = {53, 54, 25, 31, 36, 78, 149, 220};

// WCAG relative luminance; black text above 0.179 contrasts more than white text.
bool wants_dark_text(Rgb c) {
  const auto linear = [](int v) {
    const double s = v / 255.0;
    return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b) > 0.179;
}

// A diverging map for signed values: blue at -m, near-white at 0, red at m (the ends of
// Moreland's cool-warm map, with a lighter middle so that 0 reads as "nothing").
constexpr std::array<Rgb, 5> kCoolWarm = {
    {{59, 76, 192}, {141, 176, 254}, {242, 242, 242}, {244, 154, 123}, {180, 4, 38}}};

// The same in xterm's cube, symmetric around the cube's white: blues, white, reds.
constexpr std::array<int, 9> kCoolWarm256 = {25, 67, 111, 153, 231, 224, 217, 167, 124};

// Background (and contrasting foreground) escape for scale position t in [0, 1].
std::string color_escape(Palette palette, double t, bool diverging = false) {
  t = std::clamp(t, 0.0, 1.0);
  if (diverging) {
    if (palette == Palette::truecolor) {
      const Rgb want = interpolate(kCoolWarm, t);
      const int fg = wants_dark_text(want) ? 0 : 255;
      return fmt::format("\x1b[48;2;{};{};{}m\x1b[38;2;{};{};{}m", want.r, want.g, want.b, fg, fg,
                         fg);
    }
    const auto step = std::min(
        kCoolWarm256.size() - 1,
        static_cast<std::size_t>(std::lround(t * static_cast<double>(kCoolWarm256.size() - 1))));
    const int index = kCoolWarm256[step];
    return fmt::format("\x1b[48;5;{}m\x1b[38;5;{}m", index,
                       wants_dark_text(xterm_color(index)) ? 16 : 231);
  }
  if (palette == Palette::truecolor) {
    const Rgb want = interpolate(kViridis, t);
    const int fg = wants_dark_text(want) ? 0 : 255;
    return fmt::format("\x1b[48;2;{};{};{}m\x1b[38;2;{};{};{}m", want.r, want.g, want.b, fg, fg,
                       fg);
  }
  const auto step = std::min(kViridis256.size() - 1,
                             static_cast<std::size_t>(t * static_cast<double>(kViridis256.size())));
  const int index = kViridis256[step];
  return fmt::format("\x1b[48;5;{}m\x1b[38;5;{}m", index,
                     wants_dark_text(xterm_color(index)) ? 16 : 231);
}

// ---- Shades

constexpr std::array<std::string_view, 5> kShades = {" ", "░", "▒", "▓", "█"};
constexpr std::array<std::string_view, 10> kAsciiShades = {" ", ".", ":", "-", "=",
                                                           "+", "*", "#", "%", "@"};

std::size_t shade_count(Palette palette) {
  return palette == Palette::ascii ? kAsciiShades.size() : kShades.size();
}

std::string_view shade(Palette palette, std::size_t level) {
  return palette == Palette::ascii ? kAsciiShades[level] : kShades[level];
}

// Equal bins: level k covers [low + k*step, low + (k+1)*step); the top level includes high.
std::size_t shade_level(Palette palette, double t) {
  const std::size_t n = shade_count(palette);
  return std::min(n - 1,
                  static_cast<std::size_t>(std::clamp(t, 0.0, 1.0) * static_cast<double>(n)));
}

// ---- The scale

struct Scale {
  float low, high;
  // Position in [0, 1]; a constant scale puts everything in the middle.
  double position(float v) const {
    if (!(high > low)) return 0.5;
    return std::clamp((static_cast<double>(v) - low) / (static_cast<double>(high) - low), 0.0, 1.0);
  }
};

// The largest finite |value| of `count` values; 0 when there is none.
float largest_magnitude(const float* values, std::size_t count) {
  float m = 0.0f;
  for (std::size_t i = 0; i < count; ++i)
    if (std::isfinite(values[i])) m = std::max(m, std::fabs(values[i]));
  return m;
}

Scale make_scale(const float* values, std::size_t count, const HeatmapOptions& options) {
  if ((options.low && std::isnan(*options.low)) || (options.high && std::isnan(*options.high)))
    throw Error(ErrorKind::bad_value, "render_heatmap", "the colour scale's low or high is NaN");
  if (options.low && options.high && *options.low > *options.high)
    throw Error(
        ErrorKind::bad_value, "render_heatmap",
        fmt::format("low={} is above high={}: pass low <= high", *options.low, *options.high));
  if (options.scale == HeatmapScale::diverging) {
    const float m = options.high ? std::fabs(*options.high) : largest_magnitude(values, count);
    return {-m, m};
  }
  float min = 0.0f, max = 0.0f;
  bool any = false;
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) continue;
    min = any ? std::min(min, values[i]) : values[i];
    max = any ? std::max(max, values[i]) : values[i];
    any = true;
  }
  if (!any) max = 1.0f;  // nothing finite: a unit scale, so the legend still reads
  Scale scale{options.low.value_or(min), options.high.value_or(max)};
  // Only one end given and the data lie past it: collapse onto the given end.
  if (scale.low > scale.high) {
    if (options.low)
      scale.high = scale.low;
    else
      scale.low = scale.high;
  }
  return scale;
}

// ---- Layout

enum class CellKind { value, zero, not_a_number };

CellKind kind_of(float v) {
  if (std::isnan(v)) return CellKind::not_a_number;
  return v == 0.0f ? CellKind::zero : CellKind::value;
}

std::vector<std::vector<Glyph>> make_labels(const std::vector<std::string>& labels,
                                            std::size_t count, bool ascii, const char* which) {
  if (!labels.empty() && labels.size() != count)
    throw Error(ErrorKind::bad_size, "render_heatmap",
                fmt::format("{} {} labels for {} {}s: pass one per {} or none", labels.size(),
                            which, count, which, which));
  std::vector<std::vector<Glyph>> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i)
    out.push_back(split_glyphs(labels.empty() ? std::to_string(i) : labels[i], ascii));
  return out;
}

class Renderer {
 public:
  Renderer(const float* values, std::size_t rows, std::size_t cols,
           const std::vector<std::string>& row_labels, const std::vector<std::string>& col_labels,
           const HeatmapOptions& options)
      : values_(values),
        rows_(rows),
        cols_(cols),
        options_(options),
        ascii_(options.palette == Palette::ascii),
        colour_(options.palette == Palette::truecolor || options.palette == Palette::color256),
        ellipsis_(ascii_ ? "~" : "…"),
        zero_mark_(ascii_ ? "o" : "·"),  // ASCII's shades start with '.'
        row_labels_(make_labels(row_labels, rows, ascii_, "row")),
        col_labels_(make_labels(col_labels, cols, ascii_, "column")),
        scale_(make_scale(values, rows * cols, options)),
        per_row_(options.scale == HeatmapScale::per_row),
        diverging_(options.scale == HeatmapScale::diverging),
        max_width_(options.max_width == 0 ? kHeatmapMaxWidth : options.max_width) {
    if (per_row_) {
      row_max_.resize(rows);
      row_spread_.resize(rows);
      for (std::size_t i = 0; i < rows; ++i) {
        row_max_[i] = largest_magnitude(values + i * cols, cols);
        row_spread_[i] = row_spread(values + i * cols, cols);
      }
    }
  }

  std::string render() {
    std::string out;
    if (!options_.title.empty()) {
      const auto title = split_glyphs(options_.title, ascii_);
      out += fit(title, width_of(title), ellipsis_);
      out += '\n';
    }
    if (rows_ == 0 || cols_ == 0) {
      out += fmt::format("(no values: {} x {})\n", rows_, cols_);
      return colour_ ? reset_every_line(out) : out;
    }
    for (const auto& label : row_labels_)
      label_width_ = std::max(label_width_, width_of(label));
    label_width_ = std::min(label_width_, kMaxRowLabelWidth);
    choose_cells();

    out += header();
    for (std::size_t i = 0; i < rows_; ++i)
      out += row(i);
    out += legend();
    return colour_ ? reset_every_line(out) : out;
  }

 private:
  float at(std::size_t i, std::size_t j) const { return values_[i * cols_ + j]; }

  // The text of cell k: its own (cell_text) or its value.
  std::string text_at(std::size_t k) const {
    return options_.cell_text.empty() ? value_text(values_[k]) : options_.cell_text[k];
  }

  std::string value_text(float v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == 0.0f) return std::string(zero_mark_);
    return fmt::format("{:.{}f}", v, options_.digits);
  }

  // Per row: the row's largest value after its cells and, over n > 1 keys, its entropy over
  // ln n, " max 0.31 H 0.62", with " near uniform" where the row is drawn from 0 to 1.
  std::string row_suffix(std::size_t i) const {
    if (!per_row_) return std::string();
    std::string s = fmt::format(" max {}", number(row_max_[i]));
    if (row_spread_[i].keys > 1) s += fmt::format(" H {:.2f}", row_spread_[i].entropy_ratio);
    if (row_spread_[i].near_uniform) s += " near uniform";
    return s;
  }

  // Where v lies on the scale, in [0, 1]; per row, from 0 to the row's largest value, but from 0
  // to 1 for a near-uniform row, so that it never looks like a one-hot row.
  double position(std::size_t i, float v) const {
    if (!per_row_) return scale_.position(v);
    if (row_spread_[i].near_uniform) return std::clamp(static_cast<double>(v), 0.0, 1.0);
    const float m = row_max_[i];
    return m > 0.0f ? std::clamp(static_cast<double>(v) / m, 0.0, 1.0) : 0.0;
  }

  // Cells with values if they fit in the width aimed for, else two columns, else one.
  void choose_cells() {
    for (std::size_t k = 0; k < rows_ * cols_; ++k)
      value_width_ = std::max(value_width_, width_of(split_glyphs(text_at(k), ascii_)));
    std::size_t suffix = 0;
    for (std::size_t i = 0; per_row_ && i < rows_; ++i)
      suffix = std::max(suffix, row_suffix(i).size());
    // Colour: " 0.42 " on the background. Shades: " ▓ 0.42", the leading space between cells.
    const std::size_t value_cell = value_width_ + (colour_ ? 2 : 3);
    const auto line_width = [&](std::size_t cell) {
      return label_width_ + 1 + cols_ * cell + suffix;
    };
    with_values_ = options_.show_values && line_width(value_cell) <= max_width_;
    cell_width_ = with_values_ ? value_cell : line_width(2) <= max_width_ ? 2 : 1;
  }

  // Column labels: above each value, truncated to the cell; vertical over narrow cells.
  std::string header() const {
    const std::string indent(label_width_ + 1, ' ');
    if (with_values_) {
      std::string line = indent;
      for (const auto& label : col_labels_) {
        line += ' ';
        line += fit(label, cell_width_ - 1, ellipsis_);
      }
      return trim_right(line) + '\n';
    }
    std::size_t height = 0;
    for (const auto& label : col_labels_)
      height = std::max(height, label.size());
    height = std::min(height, kMaxVerticalLabel);
    std::string out;
    for (std::size_t k = 0; k < height; ++k) {
      std::string line = indent;
      for (const auto& label : col_labels_) {
        std::vector<Glyph> one;
        if (k + 1 == height && label.size() > height)
          one.push_back({std::string(ellipsis_), 1});
        else if (k < label.size())
          one.push_back(label[k]);
        line += fit(one, cell_width_, ellipsis_);
      }
      out += trim_right(line) + '\n';
    }
    return out;
  }

  std::string row(std::size_t i) const {
    std::string line = fit(row_labels_[i], label_width_, ellipsis_) + " ";
    for (std::size_t j = 0; j < cols_; ++j)
      line += cell(i * cols_ + j, position(i, at(i, j)));
    if (per_row_) line += (colour_ ? std::string(kReset) : std::string()) + row_suffix(i);
    return (colour_ && !per_row_ ? line : trim_right(line)) + '\n';
  }

  std::string cell(std::size_t k, double t) const {
    const float v = values_[k];
    const bool own_text = !options_.cell_text.empty();
    const CellKind kind = own_text && !std::isnan(v) ? CellKind::value : kind_of(v);
    std::string text;  // the value when shown; over narrow cells only the zero and NaN marks
    if (with_values_ && own_text) {
      text = fit(split_glyphs(options_.cell_text[k], ascii_), value_width_, ellipsis_);
    } else if (with_values_) {
      // Numbers right-aligned; the zero mark centred, where it does not read as a digit.
      text = value_text(v);
      const std::size_t width = width_of(split_glyphs(text, ascii_));
      text = kind == CellKind::zero ? center(text, width, value_width_)
                                    : right_align(text, width, value_width_);
    } else if (kind == CellKind::zero) {
      text = zero_mark_;
    } else if (kind == CellKind::not_a_number) {
      text = "?";
    }
    if (colour_) {
      // NaN has no place on the scale: the terminal's own colours.
      std::string out = kind == CellKind::not_a_number
                            ? std::string(kReset)
                            : color_escape(options_.palette, t, diverging_);
      if (with_values_) return out + " " + text + " ";
      return out + text + std::string(cell_width_ - (text.empty() ? 0 : 1), ' ');
    }
    // Shades show the distance from 0 on a diverging scale; a narrow negative cell starts with -.
    const double level = diverging_ ? std::fabs(2.0 * t - 1.0) : t;
    const std::string_view glyph =
        kind == CellKind::not_a_number
            ? " "
            : shade(options_.palette, shade_level(options_.palette, level));
    if (with_values_) return fmt::format(" {} {}", glyph, text);
    // ASCII's shades include '-', so there the mark is '_'.
    if (diverging_ && text.empty() && v < 0.0f && cell_width_ > 1) text = negative_mark();
    // Narrow: the glyph across the cell, the zero or NaN mark in its first column.
    std::string out = text;
    for (std::size_t k = text.empty() ? 0 : 1; k < cell_width_; ++k)
      out += glyph;
    return out;
  }

  std::string number(float v) const { return fmt::format("{:.{}f}", v, options_.digits); }

  // "scale 0.00 [ ░▒▓█] 1.00 (steps of 0.20)   · exactly 0 (masked)"
  std::string legend() const {
    bool any_zero = false, any_nan = false;
    for (std::size_t k = 0; k < rows_ * cols_; ++k) {
      any_zero = any_zero || (options_.cell_text.empty() && kind_of(values_[k]) == CellKind::zero);
      any_nan = any_nan || kind_of(values_[k]) == CellKind::not_a_number;
    }
    std::string line = "scale ";
    if (per_row_) {
      line = per_row_legend();
    } else if (diverging_ && !colour_ && scale_.high > scale_.low) {
      const std::size_t n = shade_count(options_.palette);
      line += "|value| 0 [";
      for (std::size_t k = 0; k < n; ++k)
        line += shade(options_.palette, k);
      line += fmt::format("] {} (steps of {}), centred on 0", number(scale_.high),
                          number(scale_.high / static_cast<float>(n)));
      line += with_values_      ? std::string("; the sign is the value's")
              : cell_width_ > 1 ? fmt::format("; {} marks a negative value", negative_mark())
                                : std::string("; too narrow to show signs");
    } else if (!(scale_.high > scale_.low)) {
      line += fmt::format("every value is {} ", number(scale_.low));
      if (colour_)
        line += color_escape(options_.palette, 0.5) + "  " + std::string(kReset);
      else
        line += fmt::format("[{}]", shade(options_.palette, shade_level(options_.palette, 0.5)));
    } else if (colour_) {
      line += number(scale_.low) + " ";
      // Truecolor: samples from end to end. 256 colours: each of its steps once.
      const bool stepped = options_.palette == Palette::color256;
      const std::size_t n = stepped ? kViridis256.size() : kLegendSteps;
      for (std::size_t k = 0; k < n; ++k) {
        const double t = stepped ? (static_cast<double>(k) + 0.5) / static_cast<double>(n)
                                 : static_cast<double>(k) / static_cast<double>(n - 1);
        line += color_escape(options_.palette, t, diverging_) + "  ";
      }
      line += fmt::format("{} {}", kReset, number(scale_.high));
      if (diverging_) line += ", centred on 0";
    } else {
      const std::size_t n = shade_count(options_.palette);
      line += number(scale_.low) + " [";
      for (std::size_t k = 0; k < n; ++k)
        line += shade(options_.palette, k);
      line += fmt::format("] {}", number(scale_.high));
      line +=
          fmt::format(" (steps of {})", number((scale_.high - scale_.low) / static_cast<float>(n)));
    }
    if (any_zero) {
      line += fmt::format("   {} exactly 0", zero_mark_);
      if (!options_.zero_meaning.empty()) line += fmt::format(" ({})", options_.zero_meaning);
    }
    if (any_nan) line += with_values_ ? "   nan not a number" : "   ? nan (not a number)";
    return line + '\n';
  }

  std::string_view negative_mark() const { return ascii_ ? "_" : "-"; }

  // "scale per row: 0 [ ░▒▓█] the row's max, after it with H = entropy / ln n ..."
  std::string per_row_legend() const {
    std::string line = "scale per row: 0 ";
    if (colour_) {
      const bool stepped = options_.palette == Palette::color256;
      const std::size_t n = stepped ? kViridis256.size() : kLegendSteps;
      for (std::size_t k = 0; k < n; ++k) {
        const double t = stepped ? (static_cast<double>(k) + 0.5) / static_cast<double>(n)
                                 : static_cast<double>(k) / static_cast<double>(n - 1);
        line += color_escape(options_.palette, t) + "  ";
      }
      line += std::string(kReset) + " ";
    } else {
      line += "[";
      for (std::size_t k = 0; k < shade_count(options_.palette); ++k)
        line += shade(options_.palette, k);
      line += "] ";
    }
    return line + "row max; H = entropy / ln n (1 uniform); near uniform, H ≥ 0.9: 0 to 1";
  }

  // In colour every line ends with a reset, so that no colour leaks past the map.
  static std::string reset_every_line(std::string_view text) {
    std::string out;
    while (!text.empty()) {
      const std::size_t eol = text.find('\n');
      std::string_view line = text.substr(0, eol);
      out += line;
      if (!line.ends_with(kReset)) out += kReset;
      out += '\n';
      text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    }
    return out;
  }

  static std::string trim_right(std::string s) {
    s.erase(s.find_last_not_of(' ') + 1);
    return s;
  }

  const float* values_;
  std::size_t rows_, cols_;
  const HeatmapOptions& options_;
  bool ascii_, colour_;
  std::string_view ellipsis_, zero_mark_;
  std::vector<std::vector<Glyph>> row_labels_, col_labels_;
  Scale scale_;
  bool per_row_, diverging_;
  std::size_t max_width_;
  std::vector<float> row_max_;
  std::vector<RowSpread> row_spread_;
  std::size_t label_width_ = 0, value_width_ = 1, cell_width_ = 2;
  bool with_values_ = true;
};

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

std::string render_heatmap(const float* values, std::size_t rows, std::size_t cols,
                           const std::vector<std::string>& row_labels,
                           const std::vector<std::string>& col_labels,
                           const HeatmapOptions& options) {
  if (values == nullptr && rows * cols > 0)
    throw Error(ErrorKind::bad_value, "render_heatmap",
                fmt::format("values is null for a ({}, {}) matrix", rows, cols));
  if (!options.cell_text.empty() && options.cell_text.size() != rows * cols)
    throw Error(ErrorKind::bad_size, "render_heatmap",
                fmt::format("{} cell texts for a ({}, {}) matrix: pass one per cell or none",
                            options.cell_text.size(), rows, cols));
  if (options.digits < 0 || options.digits > 6)
    throw Error(ErrorKind::bad_value, "render_heatmap",
                fmt::format("digits={} is outside 0..6", options.digits));
  return Renderer(values, rows, cols, row_labels, col_labels, options).render();
}

namespace {
// The display width of one line, escape sequences (ESC [ ... letter) excluded.
std::size_t visible_width(std::string_view line) {
  std::string plain;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i])))
        ++i;
      continue;
    }
    plain += line[i];
  }
  return width_of(split_glyphs(plain, false));
}

std::vector<std::string_view> lines_of(std::string_view block) {
  std::vector<std::string_view> lines;
  while (!block.empty()) {
    const std::size_t eol = block.find('\n');
    lines.push_back(block.substr(0, eol));
    block = eol == std::string_view::npos ? std::string_view() : block.substr(eol + 1);
  }
  return lines;
}
}  // namespace

std::size_t block_width(std::string_view block) {
  std::size_t width = 0;
  for (const std::string_view line : lines_of(block))
    width = std::max(width, visible_width(line));
  return width;
}

std::string side_by_side(const std::vector<std::string>& blocks, std::size_t gap) {
  std::vector<std::vector<std::string_view>> lines;
  std::vector<std::size_t> widths;
  std::size_t height = 0;
  for (const std::string& block : blocks) {
    lines.push_back(lines_of(block));
    widths.push_back(block_width(block));
    height = std::max(height, lines.back().size());
  }
  std::string out;
  for (std::size_t k = 0; k < height; ++k) {
    std::string line;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const std::string_view part = k < lines[b].size() ? lines[b][k] : std::string_view();
      line += part;
      if (b + 1 < blocks.size()) line += std::string(widths[b] - visible_width(part) + gap, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + '\n';
  }
  return out;
}

TerminalEnvironment TerminalEnvironment::from_process() {
  return {env("COLORTERM"), env("TERM"), env("LC_ALL"), env("LC_CTYPE"), env("LANG")};
}

bool locale_is_utf8(const TerminalEnvironment& e) {
  // POSIX: LC_ALL overrides LC_CTYPE, which overrides LANG; none set is the "C" locale.
  const std::string& locale = !e.lc_all.empty()     ? e.lc_all
                              : !e.lc_ctype.empty() ? e.lc_ctype
                                                    : e.lang;
  const std::string lower = lowercase(locale);
  return lower.find("utf-8") != std::string::npos || lower.find("utf8") != std::string::npos;
}

Palette choose_palette(bool colour_allowed, const TerminalEnvironment& e) {
  if (!locale_is_utf8(e)) return Palette::ascii;
  if (!colour_allowed) return Palette::shades;
  const std::string colorterm = lowercase(e.colorterm);
  if (colorterm == "truecolor" || colorterm == "24bit") return Palette::truecolor;
  if (e.term.find("256color") != std::string::npos) return Palette::color256;
  return Palette::shades;
}

Palette choose_palette(bool colour_allowed) {
  return choose_palette(colour_allowed, TerminalEnvironment::from_process());
}

std::string heatmap_cell(Palette palette, double t, std::size_t width, std::string_view text,
                         bool diverging) {
  if (palette == Palette::truecolor || palette == Palette::color256) {
    const std::vector<Glyph> glyphs = split_glyphs(text, false);
    return color_escape(palette, t, diverging) + fit(glyphs, width, "…") + std::string(kReset);
  }
  std::string out;
  const double level = diverging ? std::fabs(2.0 * std::clamp(t, 0.0, 1.0) - 1.0) : t;
  const std::string_view glyph = shade(palette, shade_level(palette, level));
  for (std::size_t i = 0; i < width; ++i)
    out += glyph;
  return out;
}

std::string fit_label(std::string_view label, std::size_t width, bool ascii) {
  return fit(split_glyphs(label, ascii), width, ascii ? "~" : "…");
}

std::size_t label_width(std::string_view label, bool ascii) {
  return width_of(split_glyphs(label, ascii));
}

Rgb viridis_color(double t) {
  return interpolate(kViridis, t);
}

Rgb diverging_color(double t) {
  return interpolate(kCoolWarm, t);
}

bool dark_text_on(Rgb background) {
  return wants_dark_text(background);
}

}  // namespace attn::render
