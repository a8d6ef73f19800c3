// A terminal heatmap of a (rows, cols) matrix: attention weights (queries x keys), positional
// encodings (positions x dimensions). Colour by background in 24-bit or 256 colours, or, with no
// colour, a shade glyph beside each value (` ░▒▓█`, ASCII ` .:-=+*#%@`) so it reads in black and
// white. Exact zeros (masked weights) print as `·` so they differ from small weights.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::render {

enum class Palette { truecolor, color256, shades, ascii };

// How values map to colours. range: one scale from low to high (default: the data's finite min
// and max). per_row: each row from 0 to its own largest value, which is printed at the row's end
// with its entropy over ln n, so rows of small weights still show their structure; a near-uniform
// row (row_spread) is drawn from 0 to 1 instead and marked. diverging: signed values on a
// scale centred on 0, from -m to m (m: `high` when given, else the largest |value|); colours run
// from blue through white to red, and shades show |value| with negative cells marked `-`.
enum class HeatmapScale { range, per_row, diverging };

struct HeatmapOptions {
  Palette palette = Palette::shades;
  bool show_values = true;              // the number in each cell when cells are wide enough
  int digits = 2;                       // decimals shown (0 to 6)
  std::optional<float> low, high;       // the colour scale; default: the data's finite min and max
  std::string title;                    // a first line, when not empty
  std::string zero_meaning = "masked";  // the legend's note on `·`, e.g. "" for encodings
  HeatmapScale scale = HeatmapScale::range;
  std::size_t max_width = 0;  // the widest line aimed for; 0: kHeatmapMaxWidth
  // rows x cols, row-major: each cell's text instead of its value (a logit lens's top tokens),
  // left-aligned and coloured by the value; empty: the values.
  std::vector<std::string> cell_text = {};
};

// The widest line render_heatmap aims for; past it, cells drop their values (then shrink to one
// column), and only a matrix too wide even for one-column cells overflows.
inline constexpr std::size_t kHeatmapMaxWidth = 100;

// values: rows x cols, row-major. Row labels on the left (queries), column labels on top (keys);
// an empty label list numbers them 0, 1, ... Labels are truncated with `…` (ASCII `~`); control
// characters (and, in ascii, any non-ASCII character) print as `?`. Every line that holds an
// escape sequence ends with `\x1b[0m`; shades and ascii hold none. Depends on nothing but its
// arguments. Throws attn::Error for a label count that differs from the size, a null `values`
// with a non-empty size, `low > high` or `digits` outside 0..6.
std::string render_heatmap(const float* values, std::size_t rows, std::size_t cols,
                           const std::vector<std::string>& row_labels,
                           const std::vector<std::string>& col_labels,
                           const HeatmapOptions& options);

// How spread one row of attention weights is, for the per-row scale: n, the keys with a weight
// above 0 (exact zeros are masked); its entropy over ln n (1: uniform, 0: one-hot; for n > 1); and
// whether it is near uniform (that ratio at least kNearUniform), which a per-row picture draws
// from 0 to 1 instead, so that a near-uniform row never looks like a one-hot row.
inline constexpr double kNearUniform = 0.9;
struct RowSpread {
  std::size_t keys = 0;
  double entropy_ratio = 0.0;
  bool near_uniform = false;
};
RowSpread row_spread(const float* weights, std::size_t count);

// One cell of `width` columns at scale position t in [0, 1] (0 for nothing, 1 for the most): a
// coloured background and a reset (truecolor, 256 colours; `text` printed on it, padded), or the
// shade glyph repeated (shades, ascii), for views that draw their own grids. `diverging`: the
// colours of the diverging map (blue at 0, white at 0.5, red at 1); shades then show |2t - 1|.
std::string heatmap_cell(Palette palette, double t, std::size_t width, std::string_view text = "",
                         bool diverging = false);
// A label made safe and fitted to `width` display columns: control characters (and in ascii any
// non-ASCII character) as `?`, truncated with `…` (ASCII `~`), padded with spaces.
std::string fit_label(std::string_view label, std::size_t width, bool ascii);
// The label's display width once made safe.
std::size_t label_width(std::string_view label, bool ascii);

// Blocks of text (rendered heatmaps) set side by side, `gap` spaces apart, each padded to its
// widest line; escape sequences take no columns.
std::string side_by_side(const std::vector<std::string>& blocks, std::size_t gap = 3);
// The display width of the widest line of `block`, escape sequences excluded.
std::size_t block_width(std::string_view block);

// The heatmaps' colours as 8-bit RGB, for pictures: viridis at t in [0, 1] (the weights), and
// the diverging map for signed values at t in [0, 1] (blue at 0, near-white at 0.5, red at 1).
struct Rgb {
  int r = 0, g = 0, b = 0;
};
Rgb viridis_color(double t);
Rgb diverging_color(double t);
// Whether black text on `background` contrasts more than white text (WCAG luminance).
bool dark_text_on(Rgb background);

// The environment choose_palette reads, apart so that tests can pass their own.
struct TerminalEnvironment {
  std::string colorterm, term, lc_all, lc_ctype, lang;
  static TerminalEnvironment from_process();
};

// True when the effective locale (the first set of LC_ALL, LC_CTYPE, LANG) names UTF-8.
bool locale_is_utf8(const TerminalEnvironment& env);

// ascii when the locale is not UTF-8 (colour palettes print `·` and `…` too); otherwise shades
// when `colour_allowed` is false (NO_COLOR, --color never, not a TTY: see use_color), truecolor
// when COLORTERM is truecolor/24bit, 256 colours when TERM contains 256color, else shades.
Palette choose_palette(bool colour_allowed, const TerminalEnvironment& env);
Palette choose_palette(bool colour_allowed);

}  // namespace attn::render
