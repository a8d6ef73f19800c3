#include "view.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"
#include "lesson.hpp"

namespace attn::render {

namespace {

bool is_ascii(Palette palette) {
  return palette == Palette::ascii;
}

std::string legend(const ViewStyle& style) {
  std::string scale;
  for (int k = 0; k <= 4; ++k)
    scale += heatmap_cell(style.palette, k / 4.0, 1);
  if (!style.per_row) return fmt::format("scale 0 [{}] 1", scale);
  std::string words = lessons::wrapped_prose(kPerRowLegend, style.width);
  if (!words.empty() && words.back() == '\n') words.pop_back();
  return fmt::format("scale per row: 0 [{}] the row's largest weight\n{}", scale, words);
}

// Blocks set side by side in bands no wider than `width`.
std::string pack(const std::vector<std::string>& blocks, std::size_t width, std::size_t gap) {
  std::string out;
  std::vector<std::string> band;
  std::size_t used = 0;
  for (const std::string& block : blocks) {
    const std::size_t w = block_width(block);
    if (!band.empty() && used + gap + w > width) {
      out += side_by_side(band, gap) + "\n";
      band.clear();
      used = 0;
    }
    used += (band.empty() ? 0 : gap) + w;
    band.push_back(block);
  }
  if (!band.empty()) out += side_by_side(band, gap);
  return out;
}

std::string header(const AttentionView& v, std::size_t width) {
  return lessons::wrapped_prose(v.model, width) +
         lessons::wrapped_prose(
             fmt::format("{} · {} layer{} x {} head{} · {} token{}{}", v.part, v.layers,
                         v.layers == 1 ? "" : "s", v.heads, v.heads == 1 ? "" : "s", v.rows.size(),
                         v.rows.size() == 1 ? "" : "s",
                         v.columns == v.rows ? "" : fmt::format(" against {}", v.columns.size())),
             width);
}

// The symbols the views print, in ASCII for a terminal without UTF-8; anything else left over
// becomes '?'.
std::string ascii_only(std::string text) {
  static const std::pair<std::string_view, std::string_view> kSwaps[] = {
      {"·", "-"}, {"∘", "*"},        {"√", "sqrt "},       {"▶", ">"},
      {"█", "#"}, {"✓", "ok:"},      {"✗", "FAILED:"},     {"…", "~"},
      {"—", "-"}, {"↑↓", "up/down"}, {"←→", "left/right"}, {"≥", ">="}};
  for (const auto& [from, to] : kSwaps)
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
      text.replace(at, from.size(), to);
      at += to.size();
    }
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += text[i];
    } else if ((c & 0xC0) == 0xC0) {
      out += '?';  // one per character: its continuation bytes are dropped
    }
  }
  return out;
}

std::string finish(std::string text, const ViewStyle& style) {
  return is_ascii(style.palette) ? ascii_only(std::move(text)) : text;
}

// A vector as one cell per element against `top`: in colour the diverging map (kSignedLegend);
// without, a sign character by size: blank under 1/8 of `top`, + or - up to half, # or = beyond.
std::string bar(const std::vector<float>& values, float top, Palette palette) {
  const bool colour = palette == Palette::truecolor || palette == Palette::color256;
  std::string out;
  for (float x : values) {
    const double t = top > 0.0f ? static_cast<double>(x) / top : 0.0;  // -1 to 1
    if (colour) {
      out += heatmap_cell(palette, 0.5 + 0.5 * t, 1, "", true);
    } else {
      const double size = std::fabs(t);
      out += size < 0.125 ? ' ' : size <= 0.5 ? (t > 0 ? '+' : '-') : (t > 0 ? '#' : '=');
    }
  }
  return out;
}

// The legend of `bar`'s cells.
std::string signed_legend(Palette palette) {
  if (palette == Palette::truecolor || palette == Palette::color256)
    return std::string(kSignedLegend);
  return "+ above 0, - below 0, # and = past half the largest |value| of its column, blank near 0";
}

float largest(const std::vector<std::vector<float>>& rows) {
  float m = 0.0f;
  for (const auto& row : rows)
    for (float x : row)
      m = std::max(m, std::fabs(x));
  return m;
}

}  // namespace

double weight_position(const AttentionView& v, std::size_t l, std::size_t h, std::size_t t,
                       std::size_t s, bool per_row) {
  const float w = v.weights(l, h, t, s);
  if (!per_row || weight_row_spread(v, l, h, t).near_uniform)
    return std::clamp(static_cast<double>(w), 0.0, 1.0);
  float top = 0.0f;
  for (std::size_t k = 0; k < v.columns.size(); ++k)
    top = std::max(top, v.weights(l, h, t, k));
  return top > 0.0f ? static_cast<double>(w) / top : 0.0;
}

RowSpread weight_row_spread(const AttentionView& v, std::size_t l, std::size_t h, std::size_t t) {
  std::vector<float> row(v.columns.size());
  for (std::size_t s = 0; s < row.size(); ++s)
    row[s] = v.weights(l, h, t, s);
  return row_spread(row.data(), row.size());
}

namespace {

// The heads named by their best pattern on this text, for the model view, whose titles are too
// narrow to hold it: "" when none is marked.
std::string marks_line(const AttentionView& v, std::size_t width) {
  std::string named;
  for (std::size_t i = 0; i < v.head_marks.size(); ++i)
    if (!v.head_marks[i].empty())
      named += fmt::format("{}L{} H{} {}", named.empty() ? "" : ", ", i / v.heads, i % v.heads,
                           v.head_marks[i]);
  if (named.empty()) return "";
  return lessons::wrapped_prose(
             fmt::format("Heads by their best pattern on this text (over half of each query's "
                         "weight on its keys; attn heads measures them on many sequences): {}.",
                         named),
             width) +
         "\n";
}

}  // namespace

std::string render_head_view(const AttentionView& v, std::size_t layer,
                             const std::vector<std::size_t>& heads, const ViewStyle& style) {
  const std::size_t T = v.rows.size(), S = v.columns.size();
  std::string out = header(v, style.width);
  out +=
      lessons::wrapped_prose(
          fmt::format("layer {} of {}: rows are the queries, columns the keys{}", layer, v.layers,
                      style.token ? fmt::format("; ▶ marks query {} ({})", *style.token,
                                                v.rows[*style.token])
                                  : ""),
          style.width) +
      "\n";
  std::vector<std::string> blocks;
  for (std::size_t h : heads) {
    std::vector<float> matrix(T * S);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < S; ++s)
        matrix[t * S + s] = style.per_row
                                ? v.weights(layer, h, t, s)
                                : static_cast<float>(weight_position(v, layer, h, t, s, false));
    HeatmapOptions options;
    options.palette = style.palette;
    options.low = 0.0f;
    options.high = 1.0f;
    // Per row, the heatmap's own rule (the same as weight_position's) with each row's max and H.
    if (style.per_row) options.scale = HeatmapScale::per_row;
    options.show_values = false;
    options.zero_meaning = "";
    const std::string mark = v.head_marks.empty() ? "" : v.head_marks[layer * v.heads + h];
    options.title = mark.empty() ? fmt::format("head {}", h) : fmt::format("head {}: {}", h, mark);
    options.max_width = style.width;
    std::vector<std::string> rows = v.rows;
    if (style.token)
      for (std::size_t t = 0; t < T; ++t)
        rows[t] = (t == *style.token ? (is_ascii(style.palette) ? ">" : "▶") : " ") + rows[t];
    std::string block = render_heatmap(matrix.data(), T, S, rows, v.columns, options);
    // Each map's own legend repeats: keep one, below the bands.
    const std::size_t cut = block.rfind('\n', block.size() >= 2 ? block.size() - 2 : 0);
    if (cut != std::string::npos) block.erase(cut + 1);
    if (!block.empty() && block.back() == '\n') block.pop_back();
    blocks.push_back(std::move(block));
  }
  out += pack(blocks, style.width, 3) + "\n" + legend(style) + "\n";
  return finish(std::move(out), style);
}

std::string render_model_view(const AttentionView& v, const ViewStyle& style) {
  const std::size_t T = v.rows.size(), S = v.columns.size();
  const bool ascii = is_ascii(style.palette);
  std::size_t label = 0;
  for (const std::string& row : v.rows)
    label = std::max(label, label_width(row, ascii));
  label = std::min<std::size_t>(label, 8);
  const std::size_t gap = 2;
  // Two columns a cell when every head of a layer still fits, else one.
  const std::size_t margin = label + 1;
  const std::size_t cell =
      margin + v.heads * (2 * S + gap) <= style.width || S * 2 + margin <= style.width / 2 ? 2 : 1;
  // A map is as wide as its cells, or as its title ("[L11 H11]"), whichever is wider.
  const std::size_t title = fmt::format("[L{} H{}]", v.layers - 1, v.heads - 1).size();
  const std::size_t block = std::max(cell * S, title);
  const std::size_t per_band =
      std::max<std::size_t>(1, (style.width - std::min(style.width, margin)) / (block + gap));
  if (margin + block > style.width)
    throw Error(ErrorKind::bad_size, "view",
                fmt::format("the model view needs {} columns for {} tokens and the terminal has "
                            "{}: widen it (COLUMNS), or give a shorter --text",
                            margin + std::max(S, title), S, style.width))
        .about("text");
  std::string out = header(v, style.width);
  out += lessons::wrapped_prose(
             "Each small map: one head of one layer, rows the queries, columns the keys.",
             style.width) +
         "\n";
  for (std::size_t first = 0; first < v.heads; first += per_band) {
    const std::size_t last = std::min(v.heads, first + per_band);
    for (std::size_t l = 0; l < v.layers; ++l) {
      // The heads' titles, then the keys' first characters, then one line per query.
      std::string line = std::string(margin, ' ');
      for (std::size_t h = first; h < last; ++h) {
        const bool chosen =
            style.selected && style.selected->first == l && style.selected->second == h;
        const std::string name =
            chosen ? fmt::format("[L{} H{}]", l, h) : fmt::format("L{} H{}", l, h);
        line += fit_label(name, block, ascii) + std::string(gap, ' ');
      }
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      out += line + "\n";
      line = std::string(margin, ' ');
      for (std::size_t h = first; h < last; ++h) {
        for (std::size_t s = 0; s < S; ++s)
          line += fit_label(v.columns[s], cell, ascii);
        line += std::string(block - cell * S + gap, ' ');
      }
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      out += line + "\n";
      for (std::size_t t = 0; t < T; ++t) {
        line = fit_label(v.rows[t], label, ascii) + " ";
        for (std::size_t h = first; h < last; ++h) {
          for (std::size_t s = 0; s < S; ++s)
            line +=
                heatmap_cell(style.palette, weight_position(v, l, h, t, s, style.per_row), cell);
          line += std::string(block - cell * S + gap, ' ');
        }
        while (!line.empty() && line.back() == ' ')
          line.pop_back();
        out += line + "\n";
      }
      out += "\n";
    }
  }
  return finish(out + marks_line(v, style.width) + legend(style) + "\n", style);
}

std::string render_neuron_view(const AttentionView& v, const NeuronView& n,
                               const ViewStyle& style) {
  const bool ascii = is_ascii(style.palette);
  const std::size_t S = v.columns.size(), hs = v.head_size;
  std::string out = header(v, style.width);
  out += fmt::format(
      "layer {}, head {}, query token {} ({}): how its row of weights is made, key by key\n\n",
      n.layer, n.head, n.token, v.rows[n.token]);
  const bool numbers = hs <= 8;
  const float top_q = largest({n.query}), top_k = largest(n.keys), top_p = largest(n.products);
  out += fmt::format("q ({} numbers) {}\n", hs,
                     numbers ? fmt::format("[{:.3f}]", fmt::join(n.query, ", "))
                             : bar(n.query, top_q, style.palette));
  if (!numbers)
    out += lessons::wrapped_prose(
        fmt::format("(q, each k and q∘k: one cell a number, {}; the largest |value|s: {:.3g}, "
                    "{:.3g} and {:.3g})",
                    signed_legend(style.palette), top_q, top_k, top_p),
        style.width);
  out += "\n";
  std::size_t label = 3;
  for (const std::string& c : v.columns)
    label = std::max(label, std::min<std::size_t>(label_width(c, ascii), 10));
  const std::size_t vec = numbers ? 0 : hs;
  auto cell = [&](std::string_view text, std::size_t width) {
    return fmt::format("{:>{}}", text, width);
  };
  std::string head_line = fit_label("key", label, ascii) + "  ";
  if (!numbers) {
    head_line += fit_label("k", vec, ascii) + "  " + fit_label("q∘k", vec, ascii) + "  ";
  }
  head_line += cell("q·k", 9) + cell("/√" + std::to_string(hs), 9) + cell("softmax", 9) +
               cell("model", 9) + "  weight";
  out += head_line + "\n";
  for (std::size_t s = 0; s < S; ++s) {
    std::string line = fit_label(v.columns[s], label, ascii) + "  ";
    if (!numbers) {
      line += bar(n.keys[s], top_k, style.palette) + "  ";
      line += bar(n.products[s], top_p, style.palette) + "  ";
    }
    const bool hidden = v.causal && s > n.token;
    line += cell(hidden ? "masked" : fmt::format("{:.3f}", n.dots[s]), 9);
    line += cell(hidden ? "" : fmt::format("{:.3f}", n.scaled[s]), 9);
    line += cell(fmt::format("{:.4f}", n.softmax[s]), 9);
    line += cell(fmt::format("{:.4f}", n.model_weights[s]), 9);
    const std::size_t filled = static_cast<std::size_t>(std::lround(n.softmax[s] * 20.0));
    line += "  " + std::string(filled == 0 ? "" : "") + [&] {
      std::string b;
      for (std::size_t k = 0; k < filled; ++k)
        b += ascii ? "#" : "█";
      return b;
    }();
    out += line + "\n";
    if (numbers) {
      out += fmt::format("{}  k [{:.3f}]\n", std::string(label, ' '), fmt::join(n.keys[s], ", "));
      out += fmt::format("{}  q∘k [{:.3f}]\n", std::string(label, ' '),
                         fmt::join(n.products[s], ", "));
    }
  }
  float apart = 0.0f;
  for (std::size_t s = 0; s < S; ++s)
    apart = std::max(apart, std::fabs(n.softmax[s] - n.model_weights[s]));
  out += "\n" + lessons::wrapped_prose(
                    fmt::format("{} softmax(q·k / √{}) recomputed here is the row the model "
                                "computed: largest |difference| {:.2g} (allowed 1e-5)",
                                apart <= 1e-5f ? "✓" : "✗", hs, apart),
                    style.width);
  return finish(std::move(out), style);
}

std::size_t terminal_width() {
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long n = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && n >= 20 && n <= 1000) return static_cast<std::size_t>(n);
  }
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= 20)
    return size.ws_col;
  return 100;
}

}  // namespace attn::render
