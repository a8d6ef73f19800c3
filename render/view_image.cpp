// Each view is laid out first (text measured on a scratch context), then drawn on a canvas of
// exactly its size: the head view as one heatmap per head, side by side in rows; the model view as
// a grid of small heatmaps, layers down and heads across; the neuron view as a table, one key a
// row. Units are SVG pixels; a PNG has kPngScale pixels per unit.
#include "view_image.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/utf8.hpp"
#include "image_canvas.hpp"
#include "view.hpp"

namespace attn::render {

namespace {

using image::Align;

constexpr double kMargin = 24.0;
constexpr double kTitleSize = 15.0, kLineSize = 12.0, kLineHeight = 18.0;
constexpr double kCaptionSize = 11.0;
// The head view wraps its heatmaps into rows this wide, and headings are cut to it.
constexpr double kWidestRow = 1400.0;
constexpr double kPi = std::numbers::pi;

Error export_error(ErrorKind kind, const std::string& message) {
  return Error(kind, "export", message).about("export");
}

// The title (the model) and the lines under it.
struct Heading {
  std::string title;
  std::vector<std::string> lines;

  double height() const {
    return kTitleSize + 6.0 + static_cast<double>(lines.size()) * kLineHeight;
  }
  double width(cairo_t* m) const {
    image::set_font(m, kTitleSize, true);
    double w = image::text_width(m, image::fitted(m, title, kWidestRow));
    image::set_font(m, kLineSize);
    for (const std::string& line : lines)
      w = std::max(w, image::text_width(m, image::fitted(m, line, kWidestRow)));
    return w;
  }
  // Drawn with its top at y.
  void draw(cairo_t* cr, double x, double y) const {
    image::set_color(cr, image::kText);
    image::set_font(cr, kTitleSize, true);
    image::draw_text(cr, image::fitted(cr, title, kWidestRow), x, y + kTitleSize);
    image::set_font(cr, kLineSize);
    image::set_color(cr, image::kMuted);
    for (std::size_t i = 0; i < lines.size(); ++i)
      image::draw_text(cr, image::fitted(cr, lines[i], kWidestRow), x,
                       y + kTitleSize + 6.0 + kLineHeight * (i + 0.8));
  }
};

std::string plural(std::size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string tokens_line(const AttentionView& v) {
  if (v.rows == v.columns)
    return fmt::format("rows: the {} as queries; columns: the same tokens as keys",
                       plural(v.rows.size(), "token"));
  return fmt::format("rows: {} as queries; columns: {} as keys", plural(v.rows.size(), "token"),
                     plural(v.columns.size(), "token"));
}

bool masked(const AttentionView& v, std::size_t t, std::size_t s) {
  return v.causal && s > t;
}

Rgb weight_color(const AttentionView& v, std::size_t l, std::size_t h, std::size_t t, std::size_t s,
                 bool per_row) {
  if (masked(v, t, s)) return image::kMasked;
  return viridis_color(weight_position(v, l, h, t, s, per_row));
}

// The colour key of the weights: a bar from 0 to 1 (or to each row's largest), and grey for
// masked keys when the attention is causal.
struct WeightsLegend {
  bool per_row = false, causal = false;
  bool marked = false;  // near-uniform rows marked ≈ (the head view)
  static constexpr double kBar = 160.0;

  std::string caption() const {
    return per_row ? fmt::format("colour: {}{}", kPerRowLegend, marked ? ", marked ≈" : "")
                   : "colour: the attention weight, from 0 to 1; each row sums to 1";
  }
  std::string masked_note() const { return "masked: a later token, which the decoder may not see"; }
  double height() const { return kCaptionSize + 34.0; }
  double width(cairo_t* m) const {
    image::set_font(m, kCaptionSize);
    double w = image::text_width(m, caption());
    if (causal) w = std::max(w, kBar + 40.0 + image::text_width(m, masked_note()));
    return w;
  }
  void draw(cairo_t* cr, double x, double y) const {
    image::set_font(cr, kCaptionSize);
    image::set_color(cr, image::kText);
    image::draw_text(cr, caption(), x, y + kCaptionSize);
    const double bar_y = y + kCaptionSize + 6.0;
    image::color_bar(cr, x, bar_y, kBar, 10.0, viridis_color);
    image::set_color(cr, image::kMuted);
    image::draw_text(cr, "0", x, bar_y + 10.0 + kCaptionSize + 2.0);
    image::draw_text(cr, per_row ? "row's largest" : "1", x + kBar,
                     bar_y + 10.0 + kCaptionSize + 2.0, Align::right);
    if (causal) {
      const double sx = x + kBar + 24.0;
      image::fill_rect(cr, sx, bar_y, 10.0, 10.0, image::kMasked);
      image::set_color(cr, image::kText);
      image::draw_text(cr, masked_note(), sx + 16.0, bar_y + 9.0);
    }
  }
};

// Token labels along one side of a heatmap: horizontal when each fits its cell, else turned
// to read upwards.
struct ColumnLabels {
  double font = 10.0, cell = 20.0, widest = 0.0;
  bool vertical = false;
  static constexpr double kLongest = 110.0;

  ColumnLabels(cairo_t* m, const std::vector<std::string>& labels, double font_size,
               double cell_size)
      : font(font_size), cell(cell_size) {
    image::set_font(m, font);
    for (const std::string& label : labels)
      widest = std::max(widest, image::text_width(m, image::fitted(m, label, kLongest)));
    vertical = widest > cell - 2.0;
  }
  // Whole units, so that the cells below stay on whole pixels.
  double height() const { return std::ceil((vertical ? std::min(widest, kLongest) : font) + 6.0); }
  // Labels over cells starting at x, their bottom edge at y.
  void draw(cairo_t* cr, const std::vector<std::string>& labels, double x, double y) const {
    image::set_font(cr, font);
    image::set_color(cr, image::kText);
    for (std::size_t s = 0; s < labels.size(); ++s) {
      const std::string text = image::fitted(cr, labels[s], kLongest);
      const double center = x + (static_cast<double>(s) + 0.5) * cell;
      if (vertical)
        image::draw_text(cr, text, center + font * 0.35, y - 4.0, Align::left, -kPi / 2);
      else
        image::draw_text(cr, text, center, y - 4.0, Align::center);
    }
  }
};

double widest_label(cairo_t* m, const std::vector<std::string>& labels, double font,
                    double longest) {
  image::set_font(m, font);
  double w = 0.0;
  for (const std::string& label : labels)
    w = std::max(w, image::text_width(m, image::fitted(m, label, longest)));
  return w;
}

// Row labels right-aligned to x, one per cell from y.
void draw_row_labels(cairo_t* cr, const std::vector<std::string>& labels, double x, double y,
                     double cell, double font, double longest) {
  image::set_font(cr, font);
  image::set_color(cr, image::kText);
  for (std::size_t t = 0; t < labels.size(); ++t)
    image::draw_text(cr, image::fitted(cr, labels[t], longest), x,
                     y + (static_cast<double>(t) + 0.5) * cell + font * 0.35, Align::right);
}

// One head's weights as cells from (x, y); a hairline of white between cells big enough.
void draw_cells(cairo_t* cr, const AttentionView& v, std::size_t l, std::size_t h, double x,
                double y, double cell, bool per_row) {
  const double gap = cell >= 8.0 ? 1.0 : 0.0;
  for (std::size_t t = 0; t < v.rows.size(); ++t)
    for (std::size_t s = 0; s < v.columns.size(); ++s)
      image::fill_rect(cr, x + static_cast<double>(s) * cell, y + static_cast<double>(t) * cell,
                       cell - gap, cell - gap, weight_color(v, l, h, t, s, per_row));
}

// Each row's "H 0.62" (row_spread) left-aligned at x, with "≈" after a near-uniform row's.
void draw_row_spread(cairo_t* cr, const AttentionView& v, std::size_t l, std::size_t h, double x,
                     double y, double cell, double font) {
  image::set_font(cr, font);
  for (std::size_t t = 0; t < v.rows.size(); ++t) {
    const RowSpread spread = weight_row_spread(v, l, h, t);
    if (spread.keys < 2) continue;
    image::set_color(cr, spread.near_uniform ? image::kMuted : image::kText);
    image::draw_text(
        cr, fmt::format("H {:.2f}{}", spread.entropy_ratio, spread.near_uniform ? " ≈" : ""), x,
        y + (static_cast<double>(t) + 0.5) * cell + font * 0.35);
  }
}

std::string head_view(const AttentionView& v, const ExportRequest& r, ImageFormat format) {
  const std::size_t T = v.rows.size(), S = v.columns.size();
  const double cell =
      std::clamp(std::floor(320.0 / static_cast<double>(std::max(T, S))), 8.0, 30.0);
  const double font = std::clamp(cell * 0.5, 8.0, 12.0);
  constexpr double kLongest = 110.0, kGap = 32.0, kMapTitle = 13.0;
  image::Measure measure;
  cairo_t* m = measure.cr();
  bool every_head = r.heads.size() == v.heads;
  for (std::size_t i = 0; every_head && i < r.heads.size(); ++i)
    every_head = r.heads[i] == i;
  const Heading heading{
      v.model,
      {fmt::format("{} · layer {} of {} · {}", v.part, r.layer, v.layers,
                   every_head ? plural(v.heads, "head")
                              : fmt::format("head{} {} (of {})", r.heads.size() == 1 ? "" : "s",
                                            fmt::join(r.heads, ", "), v.heads)),
       tokens_line(v)}};
  const WeightsLegend legend{r.per_row, v.causal, r.per_row};
  const double row_labels = std::ceil(widest_label(m, v.rows, font, kLongest) + 6.0);
  const ColumnLabels columns(m, v.columns, font, cell);
  // Per row, each row's H = entropy / ln n after it, "≈" marking a near-uniform row.
  image::set_font(m, font);
  const double entropy_w = r.per_row ? std::ceil(image::text_width(m, "H 0.00 ≈") + 8.0) : 0.0;
  const double map_w = row_labels + static_cast<double>(S) * cell + entropy_w;
  const double map_h = kMapTitle + 8.0 + columns.height() + static_cast<double>(T) * cell;
  const auto per_band =
      static_cast<std::size_t>(std::max(1.0, std::floor((kWidestRow + kGap) / (map_w + kGap))));
  const std::size_t bands = (r.heads.size() + per_band - 1) / per_band;
  const std::size_t across = std::min(per_band, r.heads.size());
  const double maps_w = static_cast<double>(across) * (map_w + kGap) - kGap;
  const double width = 2 * kMargin + std::max({maps_w, heading.width(m), legend.width(m)});
  const double maps_y = kMargin + heading.height() + 16.0;
  const double legend_y = maps_y + static_cast<double>(bands) * (map_h + 24.0);
  const double height = legend_y + legend.height() + kMargin;
  return image::render(
      format, width, height,
      [&](cairo_t* cr) {
        heading.draw(cr, kMargin, kMargin);
        for (std::size_t i = 0; i < r.heads.size(); ++i) {
          const std::size_t h = r.heads[i];
          const double x = kMargin + static_cast<double>(i % per_band) * (map_w + kGap);
          const double y = maps_y + static_cast<double>(i / per_band) * (map_h + 24.0);
          const double cells_x = x + row_labels, cells_y = y + kMapTitle + 8.0 + columns.height();
          image::set_font(cr, kMapTitle, true);
          image::set_color(cr, image::kText);
          image::draw_text(cr, fmt::format("head {}", h), cells_x + S * cell / 2, y + kMapTitle,
                           Align::center);
          columns.draw(cr, v.columns, cells_x, cells_y);
          draw_row_labels(cr, v.rows, cells_x - 6.0, cells_y, cell, font, kLongest);
          draw_cells(cr, v, r.layer, h, cells_x, cells_y, cell, r.per_row);
          if (r.per_row)
            draw_row_spread(cr, v, r.layer, h, cells_x + S * cell + 6.0, cells_y, cell, font);
        }
        legend.draw(cr, kMargin, legend_y);
      },
      "export", image::kPngScale,
      "show fewer heads with <heads>, or export a page that scrolls instead: <export> FILE.html");
}

std::string model_view(const AttentionView& v, const ExportRequest& r, ImageFormat format) {
  const std::size_t T = v.rows.size(), S = v.columns.size();
  const double cell =
      std::clamp(std::floor(160.0 / static_cast<double>(std::max(T, S))), 2.0, 20.0);
  const bool labelled = cell >= 8.0;  // token labels only where they can be read
  const double font = std::clamp(cell * 0.72, 7.0, 10.0), header = 12.0;
  constexpr double kLongest = 80.0, kGap = 16.0;
  image::Measure measure;
  cairo_t* m = measure.cr();
  const Heading heading{v.model,
                        {fmt::format("{} · {} x {}: each small map is one head of one layer",
                                     v.part, plural(v.layers, "layer"), plural(v.heads, "head")),
                         tokens_line(v)}};
  const WeightsLegend legend{r.per_row, v.causal};
  image::set_font(m, header, true);
  const double layer_w =
      std::ceil(image::text_width(m, fmt::format("layer {}", v.layers - 1)) + 10.0);
  const double row_labels =
      labelled ? std::ceil(widest_label(m, v.rows, font, kLongest) + 5.0) : 0.0;
  const ColumnLabels columns(m, v.columns, font, cell);
  const double columns_h = labelled ? columns.height() : 0.0;
  const double map_w = static_cast<double>(S) * cell, map_h = static_cast<double>(T) * cell;
  const double grid_x = kMargin + layer_w + row_labels;
  const double grid_w = static_cast<double>(v.heads) * (map_w + kGap) - kGap;
  const double grid_y = kMargin + heading.height() + 16.0 + header + 6.0 + columns_h;
  const double grid_h = static_cast<double>(v.layers) * (map_h + kGap) - kGap;
  const double width =
      kMargin + std::max({layer_w + row_labels + grid_w, heading.width(m), legend.width(m)}) +
      kMargin;
  const double legend_y = grid_y + grid_h + 20.0;
  const double height = legend_y + legend.height() + kMargin;
  return image::render(
      format, width, height,
      [&](cairo_t* cr) {
        heading.draw(cr, kMargin, kMargin);
        for (std::size_t h = 0; h < v.heads; ++h) {
          const double x = grid_x + static_cast<double>(h) * (map_w + kGap);
          image::set_font(cr, header, true);
          image::set_color(cr, image::kText);
          image::draw_text(cr, fmt::format("head {}", h), x + map_w / 2, grid_y - columns_h - 6.0,
                           Align::center);
          if (labelled) columns.draw(cr, v.columns, x, grid_y);
        }
        for (std::size_t l = 0; l < v.layers; ++l) {
          const double y = grid_y + static_cast<double>(l) * (map_h + kGap);
          image::set_font(cr, header, true);
          image::set_color(cr, image::kText);
          image::draw_text(cr, fmt::format("layer {}", l), kMargin, y + map_h / 2 + header * 0.35);
          if (labelled) draw_row_labels(cr, v.rows, grid_x - 5.0, y, cell, font, kLongest);
          for (std::size_t h = 0; h < v.heads; ++h)
            draw_cells(cr, v, l, h, grid_x + static_cast<double>(h) * (map_w + kGap), y, cell,
                       r.per_row);
        }
        legend.draw(cr, kMargin, legend_y);
      },
      "export", image::kPngScale,
      "use the head view of one layer, or export a page that scrolls instead: <export> "
      "FILE.html");
}

float largest_magnitude(const std::vector<std::vector<float>>& rows) {
  float top = 0.0f;
  for (const auto& row : rows)
    for (float x : row)
      top = std::max(top, std::fabs(x));
  return top;
}

std::string neuron_view_image(const AttentionView& v, const ExportRequest& r, ImageFormat format) {
  const NeuronView n = neuron_view(v, r.layer, r.head, r.token);
  const std::size_t S = v.columns.size(), hs = v.head_size;
  // With few numbers each cell holds its value; with more, cells are small squares.
  const bool numbers = hs <= 8;
  const double cell_w =
      numbers ? 40.0 : std::clamp(std::floor(160.0 / static_cast<double>(hs)), 4.0, 14.0);
  const double cell_h = numbers ? 18.0 : std::max(cell_w, 10.0);
  const double row_h = std::max(cell_h, 16.0) + 6.0;
  const double font = 11.0, number_w = 62.0, bar_w = 120.0, gap = 18.0;
  constexpr double kLongest = 120.0;
  const float top_q = largest_magnitude({n.query}), top_k = largest_magnitude(n.keys),
              top_p = largest_magnitude(n.products);
  image::Measure measure;
  cairo_t* m = measure.cr();
  const std::string root = fmt::format("/√{}", hs);
  image::set_font(m, kLineSize);
  const std::string query = image::fitted(m, v.rows[n.token], kLongest);
  const Heading heading{v.model,
                        {fmt::format("{} · layer {}, head {} · query token {} ('{}')", v.part,
                                     n.layer, n.head, n.token, query),
                         "how the query's row of weights is made, key by key: softmax(q·k / √hs)"}};
  std::vector<std::string> labels = {"q", "key"};
  labels.insert(labels.end(), v.columns.begin(), v.columns.end());
  const double label_w = std::max(widest_label(m, labels, font, kLongest), 30.0) + 12.0;
  const double vector_w = static_cast<double>(hs) * cell_w;
  const double k_x = kMargin + label_w, p_x = k_x + vector_w + gap;
  const double dot_x = p_x + vector_w + gap;  // the numbers' columns, right-aligned at their ends
  const double bar_x = dot_x + 3 * number_w + gap;
  const std::string colours = fmt::format("q, k and q∘k: {}:", kSignedLegend);
  const std::string scales =
      fmt::format("|q| up to {:.3g}, |k| up to {:.3g}, |q∘k| up to {:.3g}", top_q, top_k, top_p);
  float apart = 0.0f;
  for (std::size_t s = 0; s < S; ++s)
    apart = std::max(apart, std::fabs(n.softmax[s] - n.model_weights[s]));
  const std::string agreement = fmt::format(
      "{} softmax(q·k / √{}) recomputed here is the row the model computed: largest |difference| "
      "{:.2g} (allowed 1e-5)",
      apart <= 1e-5f ? "✓" : "✗", hs, apart);
  image::set_font(m, kCaptionSize);
  const double notes_w =
      std::max(std::max(image::text_width(m, colours), image::text_width(m, scales)) + 180.0,
               image::text_width(m, agreement));
  const double width =
      kMargin + std::max({bar_x + bar_w - kMargin, heading.width(m), notes_w}) + kMargin;
  const double q_y = kMargin + heading.height() + 18.0;  // the q row's top
  const double header_y = q_y + row_h + 14.0;            // the column titles' baseline
  const double rows_y = header_y + 8.0;
  const double notes_y = rows_y + static_cast<double>(S) * row_h + 16.0;
  const double height = notes_y + 2 * kLineHeight + 24.0 + kMargin;

  // One vector as cells from (x, y), each coloured by its value against `top`.
  const auto vector_cells = [&](cairo_t* cr, const std::vector<float>& values, float top, double x,
                                double y) {
    const double inner = numbers || cell_w >= 6.0 ? 1.0 : 0.0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double t = top > 0.0f ? 0.5 + 0.5 * values[i] / top : 0.5;
      const Rgb color = diverging_color(t);
      const double cx = x + static_cast<double>(i) * cell_w;
      image::fill_rect(cr, cx, y, cell_w - inner, cell_h, color);
      if (numbers) {
        image::set_font(cr, 9.5);
        image::set_color(cr, dark_text_on(color) ? image::kText : image::kWhite);
        image::draw_text(cr, fmt::format("{:.2f}", values[i]), cx + (cell_w - inner) / 2,
                         y + cell_h / 2 + 3.4, Align::center);
      }
    }
  };
  return image::render(
      format, width, height,
      [&](cairo_t* cr) {
        heading.draw(cr, kMargin, kMargin);
        image::set_font(cr, font, true);
        image::set_color(cr, image::kText);
        image::draw_text(cr, "q", k_x - 12.0, q_y + cell_h / 2 + 4.0, Align::right);
        vector_cells(cr, n.query, top_q, k_x, q_y);
        image::set_font(cr, font);
        image::set_color(cr, image::kMuted);
        image::draw_text(cr, fmt::format("the query of '{}' ({} numbers)", query, hs),
                         k_x + vector_w + gap, q_y + cell_h / 2 + 4.0);
        image::set_font(cr, font, true);
        image::set_color(cr, image::kText);
        image::draw_text(cr, "key", k_x - 12.0, header_y, Align::right);
        image::draw_text(cr, "k", k_x, header_y);
        image::draw_text(cr, "q∘k", p_x, header_y);
        image::draw_text(cr, "q·k", dot_x + number_w, header_y, Align::right);
        image::draw_text(cr, root, dot_x + 2 * number_w, header_y, Align::right);
        image::draw_text(cr, "softmax", dot_x + 3 * number_w, header_y, Align::right);
        image::draw_text(cr, "weight", bar_x, header_y);
        for (std::size_t s = 0; s < S; ++s) {
          const double y = rows_y + static_cast<double>(s) * row_h;
          const double baseline = y + cell_h / 2 + 4.0;
          const bool hidden = v.causal && s > n.token;
          image::set_font(cr, font);
          image::set_color(cr, image::kText);
          image::draw_text(cr, image::fitted(cr, v.columns[s], kLongest), k_x - 12.0, baseline,
                           Align::right);
          vector_cells(cr, n.keys[s], top_k, k_x, y);
          vector_cells(cr, n.products[s], top_p, p_x, y);
          image::set_font(cr, font);
          image::set_color(cr, hidden ? image::kMuted : image::kText);
          image::draw_text(cr, hidden ? "masked" : fmt::format("{:.3f}", n.dots[s]),
                           dot_x + number_w, baseline, Align::right);
          if (!hidden)
            image::draw_text(cr, fmt::format("{:.3f}", n.scaled[s]), dot_x + 2 * number_w, baseline,
                             Align::right);
          image::set_color(cr, image::kText);
          image::draw_text(cr, fmt::format("{:.4f}", n.softmax[s]), dot_x + 3 * number_w, baseline,
                           Align::right);
          image::fill_rect(cr, bar_x, y + 2.0, bar_w, cell_h - 4.0, {240, 240, 240});
          image::fill_rect(cr, bar_x, y + 2.0, bar_w * std::clamp(n.softmax[s], 0.0f, 1.0f),
                           cell_h - 4.0, viridis_color(0.35));
        }
        image::color_bar(cr, kMargin, notes_y, 160.0, 10.0, diverging_color);
        image::set_font(cr, kCaptionSize);
        image::set_color(cr, image::kMuted);
        image::draw_text(cr, "−", kMargin, notes_y + 10.0 + kCaptionSize + 2.0);
        image::draw_text(cr, "0", kMargin + 80.0, notes_y + 10.0 + kCaptionSize + 2.0,
                         Align::center);
        image::draw_text(cr, "+", kMargin + 160.0, notes_y + 10.0 + kCaptionSize + 2.0,
                         Align::right);
        image::set_color(cr, image::kText);
        image::draw_text(cr, colours, kMargin + 180.0, notes_y + 9.0);
        image::draw_text(cr, scales, kMargin + 180.0, notes_y + 9.0 + kLineHeight - 2.0);
        image::draw_text(cr, agreement, kMargin,
                         notes_y + 10.0 + kCaptionSize + 2.0 + kLineHeight + 6.0);
      },
      "export", image::kPngScale, "export a page that scrolls instead: <export> FILE.html");
}

// The legend's words as the SVG's <desc>, which cairo draws as glyphs only: for screen readers
// and for anything that reads the picture as text.
std::string with_description(std::string svg, std::string_view legend) {
  if (legend.empty()) return svg;
  const std::size_t open = svg.find("<svg");
  const std::size_t end = open == std::string::npos ? open : svg.find('>', open);
  if (end == std::string::npos) return svg;
  svg.insert(end + 1, fmt::format("\n<desc>{}</desc>", escape_markup(legend)));
  return svg;
}

void check_request(const AttentionView& v, ExportRequest& r) {
  const auto out_of_range = [](std::string_view what, std::size_t value, std::size_t count) {
    return export_error(ErrorKind::bad_size,
                        fmt::format("{} {} does not exist: the view has {}, 0 to {}", what, value,
                                    count, count == 0 ? 0 : count - 1));
  };
  if (r.kind != "head" && r.kind != "model" && r.kind != "neuron")
    throw export_error(ErrorKind::bad_value, fmt::format("'{}' is not a view: use head, model or "
                                                         "neuron",
                                                         printable(r.kind)));
  if (v.rows.empty() || v.columns.empty() || v.layers == 0 || v.heads == 0)
    throw export_error(ErrorKind::bad_size, "the view is empty: it has no tokens, layers or heads");
  if (r.kind == "model") return;
  if (r.layer >= v.layers) throw out_of_range("layer", r.layer, v.layers);
  if (r.kind == "head") {
    if (r.heads.empty())
      for (std::size_t h = 0; h < v.heads; ++h)
        r.heads.push_back(h);
    for (std::size_t h : r.heads)
      if (h >= v.heads) throw out_of_range("head", h, v.heads);
    return;
  }
  if (r.head >= v.heads) throw out_of_range("head", r.head, v.heads);
  if (r.token >= v.rows.size()) throw out_of_range("query token", r.token, v.rows.size());
}

}  // namespace

std::string view_image(const AttentionView& view, const ExportRequest& request,
                       ImageFormat format) {
  ExportRequest r = request;
  check_request(view, r);
  std::string picture = r.kind == "head"    ? head_view(view, r, format)
                        : r.kind == "model" ? model_view(view, r, format)
                                            : neuron_view_image(view, r, format);
  if (format == ImageFormat::svg)
    picture = with_description(std::move(picture), r.kind == "neuron" ? kSignedLegend
                                                   : r.per_row        ? kPerRowLegend
                                                                      : std::string_view());
  return picture;
}

void write_view_image(const AttentionView& view, const ExportRequest& request,
                      const std::string& path) {
  const std::optional<ImageFormat> format = image_format(path);
  if (!format)
    throw export_error(ErrorKind::bad_value,
                       fmt::format("'{}': attn draws pictures as .svg or .png, chosen by the "
                                   "extension: name the file e.g. view.png",
                                   printable(path)));
  write_file_whole(path, view_image(view, request, *format), "export");
}

}  // namespace attn::render
