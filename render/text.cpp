// A LessonRun as text for a terminal: the settings line, the prose, each step as PyTorch prints
// it, the checks, tables and heatmaps, and the parameter count.
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "heatmap.hpp"
#include "print.hpp"
#include "summary.hpp"
#include "text.hpp"
#include "utf8.hpp"

namespace attn::render {

namespace {
using lessons::Check;
using lessons::Heatmap;
using lessons::LessonRun;
using lessons::Prose;
using lessons::Step;
using lessons::Table;

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

std::string pad(std::string_view s, std::size_t width, bool right) {
  const std::size_t w = column_width(s);
  const std::string fill(w < width ? width - w : 0, ' ');
  return right ? fill + std::string(s) : std::string(s) + fill;
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
      widths[c] = std::max(widths[c], column_width(row[c]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = "  ";
    for (std::size_t c = 0; c < cells.size() && c < widths.size(); ++c) {
      if (c > 0) s += "  ";
      s += pad(cells[c], widths[c], numeric[c]);
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
  auto step_text = [&](const Step& step) {
    return fmt::format("{} {}\n{}\n",
                       style.cyan(fmt::format("[{}/{}] {}, shape {}:", step_number, step_count,
                                              step.name, shape_string(step.value.shape))),
                       step.title, format_torch(step.value, print));
  };
  auto check_text = [&](const Check& check) {
    return fmt::format("{} {}: {}\n", check.passed ? style.green("✓") : style.red("✗ FAILED"),
                       check.name, check.detail);
  };
  const std::string parameters = fmt::format("Parameters: {}\n", with_commas(run.parameters));

  if (options.quiet) {
    for (const auto& item : run.items()) {
      if (const auto* step = std::get_if<Step>(&item);
          step != nullptr && ++step_number == step_count) {
        out += step_text(*step) + "\n";
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
      HeatmapOptions h;
      h.palette = choose_palette(color);
      h.title = map->title;
      if (map->weights) {
        h.low = 0.0f, h.high = 1.0f;  // attention weights; an exact 0 is a masked key
      } else {
        h.zero_meaning = "";  // an exact 0 is just a value (sin 0 = 0)
      }
      const std::vector<float> values = to_float_vector(map->values);
      out += render_heatmap(values.data(), map->values.shape[0], map->values.shape[1],
                            map->row_labels, map->col_labels, h);
    }
    out += '\n';
  }
  return out + style.bold(parameters);
}

}  // namespace attn::render
