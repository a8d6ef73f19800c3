#include "run_page.hpp"

#include <algorithm>
#include <cmath>
#include <variant>

#include <fmt/format.h>

#include "base/utf8.hpp"
#include "heatmap.hpp"
#include "image_file.hpp"
#include "io/file_io.hpp"
#include "view_assets.hpp"

namespace attn::render {

namespace {

constexpr std::string_view kPageStyle =
    ".prose{max-width:52em}.prose code{font:13px \"DejaVu Sans Mono\",ui-monospace,monospace}"
    "table.hm{border-collapse:collapse;margin:6px 0 18px}"
    "table.hm td{font:12px \"DejaVu Sans Mono\",ui-monospace,monospace;text-align:right;"
    "padding:3px 6px;min-width:3.4em}"
    "table.hm th{font-weight:normal;color:var(--muted);font-size:12px;padding:2px 6px;"
    "white-space:pre}"
    "table.nt{margin:6px 0 18px}"
    "h2{font-size:15px;margin:18px 0 4px}"
    ".check{margin:4px 0}.check .ok{color:#1a7f37}.check .no{color:#cf222e}";

// Markdown as the lessons write it: paragraphs, a "# " heading, `code` and *emphasis* spans.
std::string prose_html(std::string_view markdown) {
  std::string out = "<div class=\"prose\">";
  std::size_t start = 0;
  while (start < markdown.size()) {
    std::size_t end = markdown.find("\n\n", start);
    if (end == std::string_view::npos) end = markdown.size();
    std::string_view paragraph = markdown.substr(start, end - start);
    start = end + 2;
    const bool heading = paragraph.starts_with("# ");
    if (heading) paragraph.remove_prefix(2);
    std::string inner;
    bool code = false, emphasis = false;
    for (char c : paragraph) {
      if (c == '`') {
        inner += code ? "</code>" : "<code>";
        code = !code;
      } else if (c == '*' && !code) {
        inner += emphasis ? "</em>" : "<em>";
        emphasis = !emphasis;
      } else {
        inner += escape_markup(std::string_view(&c, 1));
      }
    }
    if (code) inner += "</code>";
    if (emphasis) inner += "</em>";
    out += heading ? fmt::format("<h2>{}</h2>\n", inner) : fmt::format("<p>{}</p>\n", inner);
  }
  return out + "</div>\n";
}

// A cell that reads as a number is set right-aligned in the digits' font.
bool numeric(std::string_view cell) {
  return cell.find_first_of("0123456789") != std::string_view::npos &&
         cell.find_first_not_of("0123456789.-+e") == std::string_view::npos;
}

std::string table_html(const lessons::Table& t) {
  std::string out = fmt::format("<h2>{}</h2>\n<table class=\"nt\"><tr>", escape_markup(t.title));
  for (const std::string& h : t.header)
    out += fmt::format("<th>{}</th>", escape_markup(lessons::without_highlights(h)));
  out += "</tr>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const std::string& cell : row) {
      const std::string text = lessons::without_highlights(cell);
      out +=
          fmt::format("<td{}>{}</td>", numeric(text) ? " class=\"num\"" : "", escape_markup(text));
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string heatmap_html(const lessons::Heatmap& map) {
  const std::size_t rows = map.values.shape.at(0), cols = map.values.shape.at(1);
  const bool diverging = map.kind == lessons::HeatmapKind::signed_values;
  double largest = 0, low = 0, high = 0;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const double v = map.values.real(i);
    if (!std::isfinite(v)) continue;
    largest = std::max(largest, std::fabs(v));
    low = std::min(low, v);
    high = std::max(high, v);
  }
  std::string out =
      fmt::format("<h2>{}</h2>\n<table class=\"hm\"><tr><th></th>", escape_markup(map.title));
  for (std::size_t j = 0; j < cols; ++j)
    out += fmt::format("<th>{}</th>", escape_markup(j < map.col_labels.size() ? map.col_labels[j]
                                                                              : std::to_string(j)));
  out += "</tr>\n";
  for (std::size_t i = 0; i < rows; ++i) {
    out += fmt::format(
        "<tr><th>{}</th>",
        escape_markup(i < map.row_labels.size() ? map.row_labels[i] : std::to_string(i)));
    for (std::size_t j = 0; j < cols; ++j) {
      const double v = map.values.real(i * cols + j);
      const double t = diverging ? (largest > 0 ? 0.5 + 0.5 * v / largest : 0.5)
                                 : (high > low ? (v - low) / (high - low) : 0.0);
      const Rgb c = diverging ? diverging_color(t) : viridis_color(t);
      out += fmt::format(
          "<td style=\"background:rgb({},{},{});color:{}\" title=\"{:.6g}\">{:.2f}</td>", c.r, c.g,
          c.b, dark_text_on(c) ? "#000" : "#fff", v, v);
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

void check_page_path(const std::string& path, std::string_view subject) {
  check_output_file(path, {".html"}, "page.html", subject);
}

std::string run_page_html(const lessons::LessonRun& run, std::string_view title) {
  std::string about;
  for (const auto& [name, value] : run.settings())
    about += fmt::format("{}{}: {}", about.empty() ? "" : " · ", name, value);
  std::string page = "<!DOCTYPE html>\n" + std::string(kWrittenByComment) +
                     "\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += fmt::format("<title>{}</title>\n<style>\n", escape_markup(title));
  page += view_style();
  page += kPageStyle;
  page += "\n</style>\n</head>\n<body>\n";
  page += fmt::format("<h1>{}</h1>\n<p class=\"about\" id=\"about\">{}</p>\n", escape_markup(title),
                      escape_markup(about));
  for (const lessons::Item& item : run.items()) {
    if (const auto* p = std::get_if<lessons::Prose>(&item)) {
      page += prose_html(p->text);
    } else if (const auto* t = std::get_if<lessons::Table>(&item)) {
      page += table_html(*t);
    } else if (const auto* h = std::get_if<lessons::Heatmap>(&item)) {
      page += heatmap_html(*h);
    } else if (const auto* hs = std::get_if<lessons::Heatmaps>(&item)) {
      for (const lessons::Heatmap& m : hs->maps)
        page += heatmap_html(m);
    } else if (const auto* c = std::get_if<lessons::Check>(&item)) {
      page += fmt::format("<p class=\"check\"><span class=\"{}\">{}</span> {}: {}</p>\n",
                          c->passed ? "ok" : "no", c->passed ? "✓ check" : "✗ FAILED",
                          escape_markup(c->name), escape_markup(c->detail));
    }
  }
  return page + "</body>\n</html>\n";
}

}  // namespace attn::render
