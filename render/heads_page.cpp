#include "heads_page.hpp"

#include <fmt/format.h>

#include "base/utf8.hpp"
#include "io/file_io.hpp"

namespace attn::render {

namespace {

constexpr const char* kStyle =
    R"(body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.grids { display: flex; flex-wrap: wrap; gap: 24px; }
table { border-collapse: collapse; }
td, th { padding: 3px 6px; text-align: right; font-variant-numeric: tabular-nums; }
.grid td { width: 38px; border: 1px solid #fff; }
.grid th { font-weight: normal; color: #666; }
.best td, .best th { border-bottom: 1px solid #ddd; }
.held { font-weight: bold; }
)";

// A score from 0 to 1 as a blue background, text white on the darker half.
std::string cell(double score, double uniform) {
  const double a = score < 0.0 ? 0.0 : score > 1.0 ? 1.0 : score;
  return fmt::format(
      "<td style=\"background: rgba(31, 119, 180, {:.3f}); color: {}\" title=\"weight on its "
      "keys {:.3f}, uniform attention's {:.3f}\">{:.2f}</td>",
      a, a > 0.5 ? "#fff" : "#222", score, uniform, score);
}

std::string grid(const HeadScan& scan, std::size_t p) {
  const std::size_t s = *scan.deciding[p];
  std::string out =
      fmt::format("<div><h3>{}</h3><p>{}, on {}</p>\n<table class=\"grid\"><tr><th></th>",
                  escape_markup(scan.patterns[p].name), escape_markup(scan.patterns[p].keys),
                  escape_markup(scan.sets[s]));
  for (std::size_t h = 0; h < scan.heads; ++h)
    out += fmt::format("<th>H{}</th>", h);
  out += "</tr>\n";
  for (std::size_t l = 0; l < scan.layers; ++l) {
    out += fmt::format("<tr><th>L{}</th>", l);
    for (std::size_t h = 0; h < scan.heads; ++h) {
      const HeadPatternScore score = scan.score(s, p, l, h);
      out += cell(score.on_target, score.uniform);
    }
    out += "</tr>\n";
  }
  return out + "</table></div>\n";
}

}  // namespace

std::string heads_html(const HeadScan& scan, const HeadsPage& page) {
  std::string out = "<!DOCTYPE html>\n" + std::string(kWrittenByComment) +
                    "\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += fmt::format("<title>attn heads: {}</title>\n<style>\n{}</style>\n</head>\n<body>\n",
                     escape_markup(page.model), kStyle);
  out += fmt::format("<h1>attn heads: {}</h1>\n<p>{}</p>\n", escape_markup(page.model),
                     escape_markup(page.structure));
  for (const std::string& note : page.notes)
    out += fmt::format("<p>{}</p>\n", escape_markup(note));
  out += "<h2>Each pattern's weight on its keys, layers x heads</h2>\n<div class=\"grids\">\n";
  for (std::size_t p = 0; p < scan.patterns.size(); ++p)
    if (scan.deciding[p]) out += grid(scan, p);
  out +=
      "</div>\n<h2>Each head's best pattern: the largest weight above uniform "
      "attention's</h2>\n<table class=\"best\">\n<tr><th>head</th><th>best pattern</th>"
      "<th>weight on its keys</th><th>uniform's</th><th>x uniform</th></tr>\n";
  for (std::size_t l = 0; l < scan.layers; ++l)
    for (std::size_t h = 0; h < scan.heads; ++h) {
      const std::optional<HeadScan::Best> b = scan.best(l, h);
      if (!b) continue;
      out += fmt::format(
          "<tr{}><td>{}.{}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.1f}</td></tr>\n",
          b->holds() ? " class=\"held\"" : "", l, h, escape_markup(scan.patterns[b->pattern].name),
          b->score.on_target, b->score.uniform, b->score.on_target / b->score.uniform);
    }
  out +=
      "</table>\n<p>Bold: a head that puts more than half of each query's weight on its best "
      "pattern's keys.</p>\n</body>\n</html>\n";
  return out;
}

}  // namespace attn::render
