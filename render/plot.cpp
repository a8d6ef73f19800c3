#include "plot.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn::render {

namespace {
constexpr std::array<const char*, 9> kBlocks = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
}  // namespace

std::string render_curve(const std::vector<double>& values, const CurveOptions& o) {
  if (o.width == 0 || o.height == 0)
    throw Error(ErrorKind::bad_size, "render_curve",
                "the curve needs a width and a height of at least 1");
  std::string out = o.title.empty() ? std::string() : o.title + "\n";
  // The mean of each column's values.
  const std::size_t n = values.size(), columns = std::min(o.width, n);
  std::vector<double> bars;
  for (std::size_t c = 0; c < columns; ++c) {
    const std::size_t first = c * n / columns, last = (c + 1) * n / columns;
    double sum = 0.0;
    std::size_t count = 0;
    for (std::size_t i = first; i < last; ++i)
      if (std::isfinite(values[i])) sum += values[i], ++count;
    bars.push_back(count > 0 ? sum / static_cast<double>(count) : NAN);
  }
  double low = INFINITY, high = -INFINITY;
  for (double v : bars)
    if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v);
  if (!std::isfinite(low)) return out + "(no finite values to draw)\n";
  const bool log_scale = low > 0.0 && high / low > 100.0;
  const auto scaled = [&](double v) { return log_scale ? std::log10(v) : v; };
  const double bottom = scaled(low), top = scaled(high);
  const double span = top > bottom ? top - bottom : 1.0;
  const std::string top_label = fmt::format("{:.3g}", high),
                    bottom_label = fmt::format("{:.3g}", low);
  const std::size_t label_width = std::max(top_label.size(), bottom_label.size());
  for (std::size_t row = 0; row < o.height; ++row) {
    const std::size_t level_from = o.height - 1 - row;  // 0 at the bottom row
    std::string label = row == 0 ? top_label : row + 1 == o.height ? bottom_label : "";
    std::string line =
        std::string(label_width - label.size(), ' ') + label + (o.ascii ? " |" : " │");
    for (double v : bars) {
      if (!std::isfinite(v)) {
        line += " ";
        continue;
      }
      // The bar's height in eighths of a row, at least one eighth.
      const double fraction = (scaled(v) - bottom) / span;
      const auto eighths =
          std::max<long>(1, std::lround(fraction * static_cast<double>(o.height * 8 - 1)) + 1);
      const long here = eighths - static_cast<long>(level_from * 8);
      const long cell = std::clamp<long>(here, 0, 8);
      line += o.ascii ? (cell >= 4  ? "#"
                         : cell > 0 ? "."
                                    : " ")
                      : kBlocks[static_cast<std::size_t>(cell)];
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  out += std::string(label_width + 1, ' ') + (o.ascii ? "+" : "└");
  for (std::size_t c = 0; c < bars.size(); ++c)
    out += o.ascii ? "-" : "─";
  out += "\n";
  const std::string first = "1", last = fmt::format("{} {}", n, o.x_label);
  std::string axis = std::string(label_width + 2, ' ') + first;
  const std::size_t room =
      bars.size() > first.size() + last.size() ? bars.size() - first.size() - last.size() : 1;
  axis += std::string(room, ' ') + last;
  out += axis + "\n";
  if (columns < n) {
    // Each bar is a mean, and so are the labels beside the axis: say over how many values.
    const std::size_t fewest = n / columns, most = (n + columns - 1) / columns;
    out += std::string(label_width + 2, ' ') +
           (fewest == most
                ? fmt::format("(each bar is the mean of {} {}s", fewest, o.x_label)
                : fmt::format("(each bar is the mean of {} or {} {}s", fewest, most, o.x_label)) +
           "; the labels are the highest and lowest bar)\n";
  }
  if (log_scale) out += std::string(label_width + 2, ' ') + "(log scale)\n";
  return out;
}

}  // namespace attn::render
