// attn view --interactive: the views redrawn as keys move between layers, heads and tokens, as
// hovering does in bertviz. The terminal is put back as it was on every way out (q, Esc, Ctrl-C,
// SIGTERM, SIGHUP).
#pragma once

#include <string>

#include "attention_view.hpp"
#include "view.hpp"

namespace attn::cli {

struct InteractiveStart {
  std::string kind;  // head, model or neuron
  std::size_t layer = 0, head = 0, token = 0;
};

// Refuses with Error(.about("interactive")) when stdin or stdout is not a terminal. Returns the
// exit code: 0 after q or Esc.
int run_interactive(const AttentionView& view, const InteractiveStart& start,
                    render::ViewStyle style);

}  // namespace attn::cli
