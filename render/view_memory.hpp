// What `attn view` holds at its peak, for check_budget (core/base/budget.hpp): the model, the
// forward that fills the view, the view itself and the page or picture it is exported as.
#pragma once

#include <cstddef>
#include <string>

#include "base/budget.hpp"
#include "encoder.hpp"

namespace attn::render {

// The view of `layers` layers of `heads` heads on T query and S key tokens (head size hs): its
// weights, queries and keys, and with `export_path` the page or picture made of them.
MemoryPlan plan_view(std::size_t layers, std::size_t heads, std::size_t queries, std::size_t keys,
                     std::size_t head_size, const std::string& export_path);

// The book's encoder of `config` on `tokens` tokens (one sequence): its module tree, its weights
// and, with `weights_file_bytes` > 0, the file's tensors they are copied from; every layer's tape
// and the attention's temporaries; then plan_view's.
MemoryPlan plan_encoder_view(const EncoderConfig& config, std::size_t tokens,
                             std::size_t weights_file_bytes, const std::string& export_path);

}  // namespace attn::render
