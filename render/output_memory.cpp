// What showing a lesson run costs in memory, for the budget of core/base/budget.hpp: the text, the
// JSON document and the files text.cpp, json.cpp and save.cpp make from the run's steps. The numbers
// follow how those build their output (strings that double as they grow, nlohmann's tree) and
// were measured with tests/cli/memory_peak_test.cpp.
#include <algorithm>
#include <cstdint>

#include "output.hpp"

#include "base/budget.hpp"
#include "base/count.hpp"

namespace attn::render {

namespace {

constexpr std::size_t kSummariseAbove = 1000;  // print.hpp's threshold: larger tensors print "..."

Count values(const PlannedTensor& t) {
  return Count::product(t.shape);
}
Count row_length(const PlannedTensor& t) {
  return Count(t.shape.empty() ? 1 : std::max<std::size_t>(t.shape.back(), 1));
}
std::size_t bytes(Count count) {
  return count.fits() ? static_cast<std::size_t>(count.value()) : SIZE_MAX;
}
bool larger(Count a, Count b) {
  return !a.fits() || (b.fits() && a.value() > b.value());
}

// A string of `size` built by appending: at its last doubling the old and the new buffer are both
// held, up to twice its size.
Count grown(Count size) {
  return Count(2) * size;
}

// format_torch of every value (--full): `text` bytes a value, and while a tensor of n values is
// formatted its flat indices (8 bytes each), three copies of its text (the slices, their join,
// the suffixed result) and, for its longest row, a std::string a value.
Count full_text(const std::vector<const PlannedTensor*>& steps, Count text) {
  Count before, peak;
  for (const PlannedTensor* step : steps) {
    const Count now = grown(before * text) + values(*step) * (Count(8) + Count(3) * text) +
                      row_length(*step) * Count(40);
    if (larger(now, peak)) peak = now;
    before += values(*step);
  }
  const Count finished = grown(before * text);  // the whole text, then its copy with the count
  return larger(finished, peak) ? finished : peak;
}

// A part of the output as big as `size`, shown with the shape and axes of `like`.
PlannedTensor part(std::string name, Count size, const PlannedTensor& like) {
  const std::size_t n = std::max<std::size_t>(bytes(values(like)), 1), total = bytes(size);
  return PlannedTensor{std::move(name), like.shape, like.axes, total / n + (total % n != 0),
                       Held::shown,     0};
}

const PlannedTensor& largest(const std::vector<const PlannedTensor*>& tensors) {
  return **std::max_element(tensors.begin(), tensors.end(),
                            [](const PlannedTensor* a, const PlannedTensor* b) {
                              return larger(values(*b), values(*a));
                            });
}

}  // namespace

MemoryPlan output_memory(const OutputOptions& o, const MemoryPlan& result) {
  std::vector<const PlannedTensor*> steps, weights;
  for (const PlannedTensor& t : result) {
    if (t.held == Held::shown) steps.push_back(&t);
    if (t.held == Held::weights) weights.push_back(&t);
  }
  MemoryPlan parts;
  if (!o.save_weights.empty() && !weights.empty()) {
    // The whole file is serialised before it is written; an .npz grows as it is built.
    Count size;
    for (const PlannedTensor* w : weights)
      size += Count(2) *
              (values(*w) * Count(w->element_bytes) + Count(w->objects) * Count(kObjectBytes));
    parts.push_back(part("the weights file", size, largest(weights)));
  }
  if (steps.empty()) return parts;
  if (!o.save_dir.empty()) {
    // One .npy at a time, serialised whole before it is written.
    const PlannedTensor& file = largest(steps);
    parts.push_back(part("the .npy files", values(file) * Count(file.element_bytes), file));
  }
  if (o.format == Format::json) {
    // Each value: a number in nlohmann's tree (16 bytes) and its text, at most 15 characters, a
    // comma, a newline and two spaces of indent a level (the values sit three levels down), held
    // twice while the string grows; each innermost row is a vector of its own.
    Count size;
    for (const PlannedTensor* step : steps) {
      const Count text(2 * (step->shape.size() + 3) + 17);
      size += values(*step) * (Count(16) + grown(text));
      size += Count(bytes(values(*step)) / bytes(row_length(*step))) * Count(96);
    }
    parts.push_back(part("the steps as JSON", size, largest(steps)));
  } else if (o.full) {
    // "-0.1234, " is the precision plus up to 8 characters; lines add their indent.
    const Count text(static_cast<std::size_t>(o.precision) + 12);
    if (o.quiet) steps.erase(steps.begin(), steps.end() - 1);  // only the last step is printed
    std::erase_if(
        steps, [](const PlannedTensor* s) { return !larger(values(*s), Count(kSummariseAbove)); });
    if (!steps.empty())
      parts.push_back(part("the steps as text", full_text(steps, text), largest(steps)));
  }
  return parts;
}

}  // namespace attn::render
