// The logit lens's page: a table written out whole, coloured as the terminal's heatmaps are.
#include "lens_page.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/utf8.hpp"
#include "file_mark.hpp"
#include "heatmap.hpp"
#include "view_assets.hpp"

namespace attn::render {

namespace {

constexpr const char* kLensStyle =
    "table.lens{border-collapse:separate;border-spacing:2px}\n"
    "table.lens th{font:12px \"DejaVu Sans Mono\",ui-monospace,monospace;color:var(--muted);"
    "font-weight:normal;padding:2px 4px;white-space:pre}\n"
    "table.lens th.row{text-align:right}\n"
    "table.lens td{font:13px \"DejaVu Sans Mono\",ui-monospace,monospace;padding:3px 6px;"
    "white-space:pre;border-radius:3px;position:relative;cursor:default;min-width:2.2em;"
    "text-align:center}\n"
    "table.lens td.next{outline:2px solid #d62728;outline-offset:-2px}\n"
    "table.lens td .top{display:none;position:absolute;left:0;top:100%;z-index:2;background:#fff;"
    "color:var(--ink);border:1px solid var(--line);box-shadow:0 4px 18px rgba(0,0,0,.15);"
    "padding:6px 8px;text-align:left}\n"
    "table.lens td:hover .top{display:block}\n"
    ".legend{display:flex;align-items:center;gap:6px;color:var(--muted);font-size:12.5px;"
    "margin:10px 0}\n"
    ".legend span.step{display:inline-block;width:22px;height:12px}\n";

std::string hex(Rgb c) {
  return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b);
}

// A cell's colours: viridis at p, with the text that contrasts.
std::string cell_style(double p) {
  const Rgb background = viridis_color(p);
  return fmt::format("background:{};color:{}", hex(background),
                     dark_text_on(background) ? "#000" : "#fff");
}

}  // namespace

std::string lens_html(const lessons::LensPicture& p) {
  const std::size_t rows = p.rows(), tokens = p.tokens(), k = p.top;
  if (p.top_tokens.size() != rows * tokens * k || p.top_probabilities.size() != rows * tokens * k ||
      p.next.size() != tokens || p.final.size() != tokens)
    throw Error(ErrorKind::internal, "lens_html",
                fmt::format("a picture of {} rows, {} tokens and top {} holds {} tokens", rows,
                            tokens, k, p.top_tokens.size()));
  const std::string title = fmt::format("attn lens: {}", p.model);
  std::string page = "<!DOCTYPE html>\n" + std::string(kWrittenByComment) +
                     "\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += fmt::format("<title>{}</title>\n<style>\n", escape_markup(title));
  page += view_style();
  page += kLensStyle;
  page += "</style>\n</head>\n<body>\n<h1>attn lens</h1>\n";
  page += fmt::format(
      "<p class=\"about\">{} · {} rows (the embeddings, then each block's output) × {} token{} · "
      "each cell the lens's most likely next token, coloured by its probability; a red frame "
      "where it is the text's next token; the top {} on hover</p>\n",
      escape_markup(p.model), rows, tokens, tokens == 1 ? "" : "s", k);
  page += "<table class=\"lens\">\n<tr><th class=\"row\">input →</th>";
  for (const std::string& input : p.inputs)
    page += fmt::format("<th>{}</th>", escape_markup(input));
  page += "</tr>\n";
  // Rows from the output down to the embeddings, as nostalgebraist drew them.
  for (std::size_t step = 0; step < rows; ++step) {
    const std::size_t r = rows - 1 - step;
    page += fmt::format("<tr><th class=\"row\">{}</th>", escape_markup(p.row_labels[r]));
    for (std::size_t t = 0; t < tokens; ++t) {
      const std::size_t at = (r * tokens + t) * k;
      const bool next = t + 1 < tokens && p.top_tokens[at] == p.next[t];
      std::string list = fmt::format("position {}, {}\n", t, p.row_labels[r]);
      for (std::size_t j = 0; j < k; ++j)
        list += fmt::format("{:>6.3f}  {}\n", p.top_probabilities[at + j], p.top_tokens[at + j]);
      list +=
          fmt::format("final prediction '{}': rank {}", p.final[t], p.final_rank[r * tokens + t]);
      if (t + 1 < tokens) list += fmt::format("\nnext in the text '{}'", p.next[t]);
      page += fmt::format("<td{} style=\"{}\">{}{}<span class=\"top\">{}</span></td>",
                          next ? " class=\"next\"" : "", cell_style(p.top_probabilities[at]),
                          escape_markup(p.top_tokens[at]), next ? "*" : "", escape_markup(list));
    }
    page += "</tr>\n";
  }
  page += "<tr><th class=\"row\">next →</th>";
  for (const std::string& next : p.next)
    page += fmt::format("<th>{}</th>", escape_markup(next));
  page += "</tr>\n</table>\n<div class=\"legend\">probability 0";
  for (int step = 0; step <= 10; ++step)
    page += fmt::format("<span class=\"step\" style=\"background:{}\"></span>",
                        hex(viridis_color(step / 10.0)));
  page += "1</div>\n";
  page +=
      fmt::format("<p class=\"help\">The text: {}</p>\n</body>\n</html>\n", escape_markup(p.text));
  return page;
}

}  // namespace attn::render
