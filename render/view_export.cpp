// attn view --export: one self-contained HTML page per view. The page is static text around one
// JSON document (the view's numbers, the labels, what to show first); the inline script draws the
// view from it and makes it interactive the way bertviz's views are. No link leaves the page. Its
// style and script are render/assets/view.css and view.js (view_assets.hpp).
#include "view_export.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/utf8.hpp"
#include "file_mark.hpp"
#include "image_file.hpp"
#include "io/file_io.hpp"
#include "view.hpp"
#include "view_assets.hpp"
#include "view_image.hpp"

namespace attn::render {

namespace fs = std::filesystem;

namespace {

// A number as JSON: a weight with 4 decimals (0.1234, 0.5, 0), any other value with 4
// significant digits; null when not finite.
void append_number(std::string& out, double x, bool weight) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  if (weight) {
    // Below half the last decimal: 0, never "-0".
    if (std::fabs(x) < 5e-5) {
      out += '0';
      return;
    }
    fmt::format_to(std::back_inserter(out), "{:.4f}", x);
    while (out.back() == '0')
      out.pop_back();
    if (out.back() == '.') out.pop_back();
  } else {
    fmt::format_to(std::back_inserter(out), "{:.4g}", x);
  }
}

// A (rows, cols) block of numbers as nested JSON arrays; `at(r, c)` gives each.
template <typename At>
void append_matrix(std::string& out, std::size_t rows, std::size_t cols, bool weight, At at) {
  out += '[';
  for (std::size_t r = 0; r < rows; ++r) {
    out += r == 0 ? "[" : ",[";
    for (std::size_t c = 0; c < cols; ++c) {
      if (c > 0) out += ',';
      append_number(out, at(r, c), weight);
    }
    out += ']';
  }
  out += ']';
}

// Every weight as (L,H,T,S) nested arrays.
void append_weights(std::string& out, const AttentionView& v) {
  const std::size_t T = v.rows.size(), S = v.columns.size();
  out += '[';
  for (std::size_t l = 0; l < v.layers; ++l) {
    out += l == 0 ? "[" : ",[";
    for (std::size_t h = 0; h < v.heads; ++h) {
      if (h > 0) out += ',';
      append_matrix(out, T, S, true,
                    [&](std::size_t t, std::size_t s) { return v.weights(l, h, t, s); });
    }
    out += ']';
  }
  out += ']';
}

// Each row's H = entropy / ln n and whether it is near uniform (row_spread), as (L,H,T) arrays,
// so that the page draws per-row weights by the pictures' rule.
void append_row_spreads(std::string& out, const AttentionView& v) {
  const std::size_t T = v.rows.size();
  std::string entropy = ",\"row_entropy\":[", uniform = ",\"row_near_uniform\":[";
  for (std::size_t l = 0; l < v.layers; ++l) {
    entropy += l == 0 ? "[" : ",[";
    uniform += l == 0 ? "[" : ",[";
    for (std::size_t h = 0; h < v.heads; ++h) {
      entropy += h == 0 ? "[" : ",[";
      uniform += h == 0 ? "[" : ",[";
      for (std::size_t t = 0; t < T; ++t) {
        const RowSpread spread = weight_row_spread(v, l, h, t);
        if (t > 0) entropy += ',', uniform += ',';
        append_number(entropy, spread.entropy_ratio, true);
        uniform += spread.near_uniform ? '1' : '0';
      }
      entropy += ']';
      uniform += ']';
    }
    entropy += ']';
    uniform += ']';
  }
  out += entropy + "]" + uniform + "]";
}

// The legends' words (view.hpp) and the diverging map's five stops as hex, which the page
// interpolates as diverging_color does.
void append_legends(std::string& out) {
  std::vector<std::string> stops;
  for (int k = 0; k <= 4; ++k) {
    const Rgb c = diverging_color(k / 4.0);
    stops.push_back(fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b));
  }
  const nlohmann::json legends = {{"legend_per_row", std::string(kPerRowLegend)},
                                  {"legend_signed", std::string(kSignedLegend)},
                                  {"signed_colours", stops}};
  std::string text = legends.dump();
  out += ',' + text.substr(1, text.size() - 2);
}

void check_range(std::string_view what, std::size_t value, std::size_t count,
                 std::string_view subject) {
  if (value < count) return;
  throw Error(
      ErrorKind::bad_size, "view_html",
      fmt::format("{} {} does not exist: the view has {}, 0 to {}", what, value, count, count - 1))
      .about(std::string(subject));
}

// The view's data as one JSON document, every '<' escaped so that no label (a token such as
// "</script>") can end the script element that holds it.
std::string page_data(const AttentionView& v, const ExportRequest& r) {
  const std::size_t T = v.rows.size(), S = v.columns.size();
  nlohmann::json about = {{"kind", r.kind},       {"model", v.model},
                          {"part", v.part},       {"rows", v.rows},
                          {"columns", v.columns}, {"layers", v.layers},
                          {"heads", v.heads},     {"head_size", v.head_size},
                          {"causal", v.causal},   {"pair_split", v.pair_split},
                          {"per_row", r.per_row}};
  if (r.kind == "head") {
    about["layer"] = r.layer;
    std::vector<std::size_t> shown = r.heads;
    if (shown.empty())
      for (std::size_t h = 0; h < v.heads; ++h)
        shown.push_back(h);
    about["shown_heads"] = shown;
  }
  std::string out = about.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.pop_back();  // the closing brace: the numbers follow
  if (r.kind == "neuron") {
    // The chosen head's arithmetic for every query token, so that the page can switch tokens.
    std::vector<NeuronView> all;
    for (std::size_t t = 0; t < T; ++t)
      all.push_back(neuron_view(v, r.layer, r.head, t));
    const std::size_t hs = v.head_size;
    out += fmt::format(",\"neuron\":{{\"layer\":{},\"head\":{},\"token\":{},\"queries\":", r.layer,
                       r.head, r.token);
    append_matrix(out, T, hs, false, [&](std::size_t t, std::size_t k) { return all[t].query[k]; });
    out += ",\"keys\":";
    append_matrix(out, S, hs, false,
                  [&](std::size_t s, std::size_t k) { return all[0].keys[s][k]; });
    out += ",\"dots\":";
    append_matrix(out, T, S, false, [&](std::size_t t, std::size_t s) { return all[t].dots[s]; });
    out += ",\"scaled\":";
    append_matrix(out, T, S, false, [&](std::size_t t, std::size_t s) { return all[t].scaled[s]; });
    out += ",\"softmax\":";
    append_matrix(out, T, S, true, [&](std::size_t t, std::size_t s) { return all[t].softmax[s]; });
    out += ",\"model\":";
    append_matrix(out, T, S, true,
                  [&](std::size_t t, std::size_t s) { return all[t].model_weights[s]; });
    // The largest |softmax recomputed - the model's weight| of each token, before rounding.
    out += ",\"apart\":[";
    for (std::size_t t = 0; t < T; ++t) {
      float apart = 0.0f;
      for (std::size_t s = 0; s < S; ++s)
        apart = std::max(apart, std::fabs(all[t].softmax[s] - all[t].model_weights[s]));
      if (t > 0) out += ',';
      fmt::format_to(std::back_inserter(out), "{:.2g}", apart);
    }
    out += "]}";
  } else {
    out += ",\"weights\":";
    append_weights(out, v);
    append_row_spreads(out, v);
  }
  append_legends(out);
  out += '}';
  std::string safe;
  safe.reserve(out.size());
  for (char c : out) {
    if (c == '<')
      safe += "\\u003c";
    else
      safe += c;
  }
  return safe;
}

std::string page_title(const AttentionView& v, const ExportRequest& r) {
  return fmt::format("attn view {}: {}", r.kind, v.model);
}

std::string page_about(const AttentionView& v) {
  return fmt::format("{} · {} · {} layer{} × {} head{} · {} token{}{}", v.model, v.part, v.layers,
                     v.layers == 1 ? "" : "s", v.heads, v.heads == 1 ? "" : "s", v.rows.size(),
                     v.rows.size() == 1 ? "" : "s",
                     v.columns == v.rows ? "" : fmt::format(" against {}", v.columns.size()));
}

}  // namespace

std::size_t page_max_tokens(std::size_t layers, std::size_t heads) {
  const std::size_t maps = std::max<std::size_t>(layers * heads, 1);
  std::size_t tokens = 0;
  while (tokens < kPageMaxTokens && (tokens + 1) * (tokens + 1) * maps <= kPageMaxWeights)
    ++tokens;
  return tokens;
}

void check_export_path(const std::string& path) {
  check_output_file(path, {".html", ".svg", ".png"}, "view.html", "export");
}

std::string view_html(const AttentionView& v, const ExportRequest& r) {
  if (r.kind != "head" && r.kind != "model" && r.kind != "neuron")
    throw Error(ErrorKind::bad_value, "view_html",
                fmt::format("'{}' is not a view: use head, model or neuron", printable(r.kind)));
  if (r.kind != "model") check_range("layer", r.layer, v.layers, "layer");
  if (r.kind == "head")
    for (std::size_t h : r.heads)
      check_range("head", h, v.heads, "heads");
  if (r.kind == "neuron") {
    check_range("head", r.head, v.heads, "head");
    check_range("query token", r.token, v.rows.size(), "token");
  }
  const std::size_t count = v.layers * v.heads * v.rows.size() * v.columns.size();
  if (count > kPageMaxWeights)
    throw Error(
        ErrorKind::too_large, "view_html",
        fmt::format("the page would hold {} weights ({} layers x {} heads x {} x {} "
                    "tokens), more than {}: give a shorter <text>",
                    count, v.layers, v.heads, v.rows.size(), v.columns.size(), kPageMaxWeights))
        .about("text");
  std::string page = "<!DOCTYPE html>\n" + std::string(kWrittenByComment) +
                     "\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += fmt::format("<title>{}</title>\n", escape_markup(page_title(v, r)));
  page += "<style>\n";
  page += view_style();
  page += "</style>\n</head>\n<body>\n";
  page += fmt::format("<h1>attn view {}</h1>\n<p class=\"about\" id=\"about\">{}</p>\n",
                      escape_markup(r.kind), escape_markup(page_about(v)));
  page += "<div id=\"view\"></div>\n";
  page += "<svg id=\"svg-namespace\" width=\"0\" height=\"0\" style=\"position:absolute\"></svg>\n";
  page += "<script type=\"application/json\" id=\"attn-data\">";
  page += page_data(v, r);
  page += "</script>\n<script>\n";
  page += view_script();
  page += "</script>\n</body>\n</html>\n";
  return page;
}

void export_view(const AttentionView& view, const ExportRequest& request, const std::string& path) {
  check_export_path(path);
  const std::string ext = extension_of(path);
  if (ext == ".svg" || ext == ".png") {
    write_view_image(view, request, path);
    return;
  }
  write_file_whole(path, view_html(view, request), "export");
}

}  // namespace attn::render
