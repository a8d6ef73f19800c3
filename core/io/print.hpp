// Tensor printing exactly as PyTorch 1.13's print(t) / repr(t) (torch/_tensor_str.py).
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>

#include "base/array.hpp"

namespace attn {

struct PrintOptions {
  int precision = 4;
  std::size_t threshold = 1000;  // summarise when numel > threshold
  std::size_t edgeitems = 3;
  std::size_t linewidth = 80;
  std::optional<bool> sci_mode;  // nullopt: chosen automatically, as torch does
};

// torch.set_printoptions(profile="full"): never summarise.
inline PrintOptions full_print_options() {
  PrintOptions options;
  options.threshold = std::numeric_limits<std::size_t>::max();
  return options;
}

// What repr(torch.from_numpy(array)) prints, without a trailing newline. The dtype suffix
// (", dtype=torch.float64") appears for every dtype but float32, int64 and bool, as in torch.
std::string format_torch(const Array& array, const PrintOptions& options = {});

}  // namespace attn
