// What `attn view --export` draws, apart from the view's data: which view and, for it, the layer,
// heads, head and query token, and the colour scale. The page (.html) and the pictures (.svg,
// .png) take the same request.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace attn::render {

struct ExportRequest {
  std::string kind;  // head, model or neuron
  std::size_t layer = 0;
  std::vector<std::size_t> heads;   // the head view's heads, in order
  std::size_t head = 0, token = 0;  // the neuron view's head and query token
  bool per_row = false;             // each row's colours from 0 to its own largest weight
};

}  // namespace attn::render
