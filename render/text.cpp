// A LessonRun as text for a terminal: the settings line, the prose, each step as PyTorch prints
// it, the checks, tables and heatmaps, and the parameter count.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "base/count.hpp"
#include "base/utf8.hpp"
#include "heatmap.hpp"
#include "io/print.hpp"
#include "plot.hpp"
#include "summary.hpp"
#include "text.hpp"

namespace attn::render {

namespace {
using lessons::Check;
using lessons::Heatmap;
using lessons::HeatmapKind;
using lessons::Heatmaps;
using lessons::LessonRun;
using lessons::Prose;
using lessons::Step;
using lessons::Table;
using lessons::WeightsScale;

struct Style {
  bool color;
  std::string bold(std::string_view s) const {
    return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s);
  }
  std::string dim(std::string_view s) const {
    return color ? fmt::format("\x1b[2m{}\x1b[0m", s) : std::string(s);
  }
  std::string green(std::string_view s) const {
    return color ? fmt::format("\x1b[32m{}\x1b[0m", s) : std::string(s);
  }
  std::string red(std::string_view s) const {
    return color ? fmt::format("\x1b[1;31m{}\x1b[0m", s) : std::string(s);
  }
  std::string cyan(std::string_view s) const {
    return color ? fmt::format("\x1b[1;36m{}\x1b[0m", s) : std::string(s);
  }
};

PrintOptions print_options(const OutputOptions& o) {
  PrintOptions p = o.full ? full_print_options() : PrintOptions{};
  p.precision = o.precision;
  return p;
}

// `text` broken at spaces into lines of at most `width` columns, every line after the first
// starting with `indent`; a word longer than the width stays whole.
std::string wrapped(std::string_view text, std::size_t width, std::string_view indent) {
  std::string out, line;
  std::size_t line_width = 0;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    const std::size_t word_width = column_width(word);
    if (line_width > 0 && line_width + 1 + word_width > width) {
      out += line + "\n";
      line = std::string(indent);
      line_width = column_width(indent);
    } else if (line_width > 0) {
      line += ' ';
      ++line_width;
    }
    line += word;
    line_width += word_width;
  }
  return out + line;
}

// Markdown headings lose their #'s (bold in colour); everything else prints as written.
std::string render_prose(const Prose& prose, const Style& style) {
  std::string out;
  std::string_view text = prose.text;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.starts_with("#")) {
      line.remove_prefix(line.find_first_not_of('#'));
      if (line.starts_with(" ")) line.remove_prefix(1);
      out += style.bold(line);
    } else {
      out += line;
    }
    out += '\n';
  }
  return out;
}

bool is_number(std::string s) {
  std::erase(s, ',');  // thousands separators
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}

// A cell's highlighted spans in yellow, or the marks dropped without colour.
std::string cell_text(const std::string& cell, const Style& style) {
  if (!style.color) return lessons::without_highlights(cell);
  std::string out;
  for (const char c : cell)
    out += c == lessons::kHighlightStart ? "\x1b[1;33m"
           : c == lessons::kHighlightEnd ? "\x1b[0m"
                                         : std::string(1, c);
  return out;
}

// Columns of numbers are right-aligned, others left-aligned.
std::string render_table(const Table& table, const Style& style) {
  std::vector<bool> numeric(table.header.size(), true);
  for (const auto& row : table.rows)
    for (std::size_t c = 0; c < row.size() && c < numeric.size(); ++c)
      numeric[c] = numeric[c] && is_number(row[c]);
  std::vector<std::size_t> widths(table.header.size(), 0);
  for (std::size_t c = 0; c < table.header.size(); ++c)
    widths[c] = column_width(table.header[c]);
  for (const auto& row : table.rows)
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], column_width(lessons::without_highlights(row[c])));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = "  ";
    for (std::size_t c = 0; c < cells.size() && c < widths.size(); ++c) {
      if (c > 0) s += "  ";
      const std::size_t width = column_width(lessons::without_highlights(cells[c]));
      const std::string fill(width < widths[c] ? widths[c] - width : 0, ' ');
      const std::string text = cell_text(cells[c], style);
      s += numeric[c] ? fill + text : text + fill;
    }
    while (!s.empty() && s.back() == ' ')
      s.pop_back();
    return s + '\n';
  };
  std::string out = style.bold(table.title) + '\n' + line(table.header);
  std::size_t total = 0;
  for (std::size_t w : widths)
    total += w;
  std::string rule;
  for (std::size_t i = 0; i < total + 2 * (widths.size() - 1); ++i)
    rule += "─";
  out += "  " + style.dim(rule) + '\n';
  for (const auto& row : table.rows)
    out += line(row);
  return out;
}

// Per row when asked, or automatically when every finite weight of the maps is below 0.5 (the
// near-uniform rows of untrained weights would all be blank on a fixed 0..1 scale), unless the
// lesson fixes the scale so that its groups compare.
bool weights_per_row(const std::vector<Heatmap>& maps, WeightScale scale,
                     WeightsScale lesson_scale) {
  if (scale != WeightScale::automatic) return scale == WeightScale::per_row;
  if (lesson_scale == WeightsScale::fixed) return false;
  for (const Heatmap& map : maps)
    for (float v : to_float_vector(map.values))
      if (std::isfinite(v) && v >= 0.5f) return false;
  return true;
}

HeatmapOptions heatmap_options(const Heatmap& map, bool per_row, bool color) {
  HeatmapOptions h;
  h.palette = choose_palette(color);
  h.title = map.title;
  h.cell_text = map.cell_text;
  if (map.kind == HeatmapKind::signed_values) {
    h.scale = HeatmapScale::diverging;
    h.zero_meaning = "";  // an exact 0 is just a value (sin 0 = 0)
  } else if (per_row) {
    h.scale = HeatmapScale::per_row;
  } else {
    h.low = 0.0f, h.high = 1.0f;
  }
  if (map.kind == HeatmapKind::weights)
    h.zero_meaning = map.masked ? "masked" : "below float32's smallest";
  return h;
}

// Maps side by side, as many to a line as fit in kHeatmapMaxWidth (values in the cells first).
std::string render_maps(const std::vector<Heatmap>& maps, const std::string& title,
                        const OutputOptions& options, bool color,
                        WeightsScale lesson_scale = WeightsScale::automatic) {
  const bool per_row = weights_per_row(maps, options.weight_scale, lesson_scale);
  constexpr std::size_t kGap = 3;
  std::vector<std::string> blocks;
  std::string legend;  // the legend of every map, when they all have the same one
  // Lays out `per_line` maps to a line; false when they do not fit, or lose their values and
  // `with_values` asks for them.
  const auto lay_out = [&](std::size_t per_line, bool with_values) {
    const std::size_t width = (kHeatmapMaxWidth - kGap * (per_line - 1)) / per_line;
    blocks.clear();
    std::vector<std::string> legends;
    bool kept_values = true;
    for (const Heatmap& map : maps) {
      HeatmapOptions h = heatmap_options(map, per_row, color);
      const std::vector<float> values = to_float_vector(map.values);
      const auto draw = [&](std::size_t max_width) {
        h.max_width = max_width;
        return render_heatmap(values.data(), map.values.shape[0], map.values.shape[1],
                              map.row_labels, map.col_labels, h);
      };
      std::string block = draw(width);
      kept_values = kept_values && (!with_values || block == draw(kHeatmapMaxWidth));
      // The legend is the last line.
      const std::size_t last = block.rfind('\n', block.size() - 2);
      legends.push_back(block.substr(last + 1));
      blocks.push_back(block.substr(0, last + 1));
    }
    const bool shared =
        std::all_of(legends.begin(), legends.end(), [&](const auto& l) { return l == legends[0]; });
    bool fits = kept_values;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      if (!shared) blocks[k] += legends[k];
      fits = fits && block_width(blocks[k]) <= width;
    }
    legend = shared ? legends[0] : std::string();
    return fits;
  };
  // Values in the cells first, as many maps to a line as keep them; then narrower cells.
  std::size_t per_line = std::max<std::size_t>(maps.size(), 1);
  bool laid_out = false;
  for (std::size_t n = per_line; n >= 2 && !laid_out; --n)
    if (lay_out(n, true)) per_line = n, laid_out = true;
  for (std::size_t n = per_line; n >= 1 && !laid_out; --n)
    if (lay_out(n, false) || n == 1) per_line = n, laid_out = true;
  std::string out = title.empty() ? std::string() : title + "\n";
  for (std::size_t first = 0; first < blocks.size(); first += per_line) {
    if (first > 0) out += '\n';
    const auto end =
        blocks.begin() + static_cast<std::ptrdiff_t>(std::min(first + per_line, blocks.size()));
    out += per_line == 1
               ? blocks[first]
               : side_by_side({blocks.begin() + static_cast<std::ptrdiff_t>(first), end}, kGap);
  }
  return out + legend;
}

// The numbers of `text` in e-notation ("3.8158e-06"), in order.
std::vector<std::string> e_numbers(std::string_view text) {
  const auto digit = [&](std::size_t i) {
    return i < text.size() && text[i] >= '0' && text[i] <= '9';
  };
  std::vector<std::string> found;
  for (std::size_t i = 1; i + 2 < text.size(); ++i) {
    if (text[i] != 'e' || !digit(i - 1) || (text[i + 1] != '-' && text[i + 1] != '+') ||
        !digit(i + 2))
      continue;
    std::size_t start = i;
    while (start > 0 && (digit(start - 1) || text[start - 1] == '.'))
      --start;
    std::size_t end = i + 2;
    while (digit(end))
      ++end;
    found.emplace_back(text.substr(start, end - start));
  }
  return found;
}

// "3.8158e-06 is 3.8158 × 10⁻⁶ = 0.0000038158" for a positive number of e-notation.
std::string spelled_out(const std::string& number) {
  static constexpr std::array<std::string_view, 10> kSuperscript = {"⁰", "¹", "²", "³", "⁴",
                                                                    "⁵", "⁶", "⁷", "⁸", "⁹"};
  const std::size_t e = number.find('e');
  const std::string mantissa = number.substr(0, e);
  const int exponent = std::stoi(number.substr(e + 1));
  std::string power = exponent < 0 ? "⁻" : "";
  for (char c : std::to_string(std::abs(exponent)))
    power += kSuperscript[static_cast<std::size_t>(c - '0')];
  std::string digits = mantissa;
  std::erase(digits, '.');
  std::string plain;
  if (exponent < 0) {
    plain = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const std::size_t point = 1 + static_cast<std::size_t>(exponent);
    digits.resize(std::max(digits.size(), point), '0');
    plain = digits.substr(0, point);
    if (point < digits.size()) plain += "." + digits.substr(point);
  }
  return fmt::format("{} is {} × 10{} = {}", number, mantissa, power, plain);
}

// Two lines under the first tensor of a run printed in e-notation, on its smallest exponent.
std::string e_notation_note(const std::vector<std::string>& numbers) {
  // The smallest exponent down to -8 (0.00000001 still reads), else any other than 0.
  std::string example = numbers.front();
  int best = 1;  // 1: nothing chosen yet
  for (const std::string& n : numbers) {
    const int exponent = std::stoi(n.substr(n.find('e') + 1));
    const bool readable = exponent < 0 && exponent >= -8;
    const bool best_readable = best < 0 && best >= -8;
    if ((readable && (!best_readable || exponent < best)) ||
        (!readable && !best_readable && exponent != 0 && best == 1))
      example = n, best = exponent;
  }
  return fmt::format(
      "(e-notation: {}. Torch prints a whole tensor this way\n"
      " when its non-zero |values| span more than 1000 times, or one is above 1e8 or below "
      "1e-4.)\n",
      spelled_out(example));
}

std::string settings_line(const LessonRun& run) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : run.settings())
    parts.push_back(fmt::format("{} {}", name, value));
  return fmt::format("attn {}  ({})", run.lesson(), fmt::join(parts, ", "));
}
}  // namespace

std::string render_text(const LessonRun& run, const OutputOptions& options, bool color) {
  const Style style{color};
  const PrintOptions print = print_options(options);
  const std::size_t step_count = run.steps().size();
  std::string out;
  std::size_t step_number = 0;
  bool e_explained = false;
  auto step_text = [&](const Step& step) {
    if (!step.printed) {
      return fmt::format("{} {}\n",
                         style.cyan(fmt::format("[{}/{}] {}, shape {}:", step_number, step_count,
                                                step.name, shape_string(step.value.shape))),
                         step.title);
    }
    const std::string tensor = format_torch(step.value, print);
    std::string note;
    if (!e_explained && !options.quiet) {
      const std::vector<std::string> numbers = e_numbers(tensor);
      if (!numbers.empty()) note = style.dim(e_notation_note(numbers)), e_explained = true;
    }
    return fmt::format("{} {}\n{}\n{}",
                       style.cyan(fmt::format("[{}/{}] {}, shape {}:", step_number, step_count,
                                              step.name, shape_string(step.value.shape))),
                       step.title, tensor, note);
  };
  auto check_text = [&](const Check& check) {
    return fmt::format("{} {}\n", check.passed ? style.green("✓") : style.red("✗ FAILED"),
                       wrapped(fmt::format("{}: {}", check.name, check.detail), 98, "  "));
  };
  const std::string parameters = fmt::format("Parameters: {}\n", with_commas(run.parameters));

  if (options.quiet) {
    // The final result: the step named "output", else the last step.
    const auto steps = run.steps();
    const auto named = std::find_if(steps.begin(), steps.end(),
                                    [](const Step* step) { return step->name == "output"; });
    const Step* final_step = named != steps.end() ? *named : steps.empty() ? nullptr : steps.back();
    for (const auto& item : run.items()) {
      if (const auto* step = std::get_if<Step>(&item)) {
        ++step_number;
        if (step == final_step) out += step_text(*step) + "\n";
      }
      if (const auto* check = std::get_if<Check>(&item); check != nullptr && !check->passed)
        out += check_text(*check);
    }
    return out + parameters;
  }

  out += style.dim(settings_line(run)) + "\n\n";
  for (const auto& item : run.items()) {
    if (const auto* prose = std::get_if<Prose>(&item)) {
      out += render_prose(*prose, style);
    } else if (const auto* step = std::get_if<Step>(&item)) {
      ++step_number;
      out += step_text(*step);
    } else if (const auto* check = std::get_if<Check>(&item)) {
      out += check_text(*check);
      // Consecutive checks stay together; the blank line comes after the last.
      const auto next = std::next(&item);
      if (next != run.items().data() + run.items().size() && std::holds_alternative<Check>(*next))
        continue;
    } else if (const auto* table = std::get_if<Table>(&item)) {
      out += render_table(*table, style);
    } else if (const auto* map = std::get_if<Heatmap>(&item)) {
      out += render_maps({*map}, "", options, color);
    } else if (const auto* maps = std::get_if<Heatmaps>(&item)) {
      out += render_maps(maps->maps, maps->title, options, color, maps->scale);
    } else if (const auto* curve = std::get_if<lessons::Curve>(&item)) {
      CurveOptions c;
      c.title = curve->title;
      c.height = curve->height;
      c.ascii = choose_palette(false) == Palette::ascii;  // ASCII where the locale has no blocks
      out += render_curve(curve->values, c);
    }
    out += '\n';
  }
  return out + style.bold(parameters);
}

}  // namespace attn::render
