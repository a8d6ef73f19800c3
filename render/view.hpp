// attn view in the terminal: bertviz's head, model and neuron views drawn as text that fits a
// width, in 24-bit colour, 256 colours, shades or ASCII (the heatmap's palettes).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attention_view.hpp"
#include "heatmap.hpp"

namespace attn::render {

struct ViewStyle {
  Palette palette = Palette::shades;
  std::size_t width = 100;  // the widest line aimed for
  // The colour scale of the weights: fixed (0 to 1), or each row from 0 to its own largest
  // weight (near-uniform weights of an untrained model still show their structure), except a
  // near-uniform row (row_spread), drawn from 0 to 1 so that it never looks like a one-hot row.
  bool per_row = false;
  std::optional<std::size_t> token;  // a query token to point out (head view), or none
  // The model view's selected (layer, head), its title bracketed.
  std::optional<std::pair<std::size_t, std::size_t>> selected;
};

// The widest grid the model view draws legibly, and the head view's (the neuron view's too), in
// the terminal and in pictures: past these many tokens attn view refuses and says what to do.
inline constexpr std::size_t kModelViewMaxTokens = 48;
inline constexpr std::size_t kHeadViewMaxTokens = 64;

// One layer's heads (`heads`, in that order), one heatmap each with the tokens as labels, packed
// side by side into bands that fit the width. With `style.token`, that query's row is marked.
std::string render_head_view(const AttentionView& view, std::size_t layer,
                             const std::vector<std::size_t>& heads, const ViewStyle& style);
// Every layer x every head, each a small heatmap (one cell per weight), layers down, heads
// across, wrapped into bands of heads that fit the width.
std::string render_model_view(const AttentionView& view, const ViewStyle& style);
// One head and one query token: the query, each key, their elementwise products, the sums, the
// scaling, the softmax and the row the model computed.
std::string render_neuron_view(const AttentionView& view, const NeuronView& neuron,
                               const ViewStyle& style);

// The words under per-row weights and under signed values (q, k, q∘k), the same in the terminal,
// the page and the pictures. Signed values use diverging_color: red above 0, blue below.
inline constexpr std::string_view kPerRowLegend =
    "each row from 0 to its largest weight, but a near-uniform row (H = entropy / ln n ≥ 0.9) "
    "from 0 to 1";
inline constexpr std::string_view kSignedLegend =
    "red above 0, white at 0, blue below 0, by |value| against the largest of its column";

// Where weight (layer, head, query t, key s) falls on the colour scale, 0 to 1: the weight itself,
// or with `per_row` the weight over its row's largest unless the row is near uniform.
double weight_position(const AttentionView& view, std::size_t layer, std::size_t head,
                       std::size_t t, std::size_t s, bool per_row);
// How spread query t's row of weights is (row_spread).
RowSpread weight_row_spread(const AttentionView& view, std::size_t layer, std::size_t head,
                            std::size_t t);

// The terminal's width: COLUMNS when it is a number from 20 to 1000, else the width of the
// terminal on stdout, else 100.
std::size_t terminal_width();

}  // namespace attn::render
