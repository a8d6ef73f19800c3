// The memory limit: before a command allocates its tensors it adds up what they need and
// refuses, with the estimate and the limit, when that is more than the limit.
//
// The limit is the caller's (set_memory_limit: the command line's) when given, else the
// ATTN_MAX_MEMORY environment variable, else half of the memory this process may use (the
// machine's RAM, or its cgroup's limit when lower).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/array.hpp"

namespace attn {

// How long a planned tensor lives, which decides what is still held while the result is shown.
enum class Held {
  computing,     // while the command computes; freed before its result is shown
  before_shown,  // only before the shown steps are copied into the result: a forward's temporaries
  kept,          // until the end, not shown: an input read from a file, weights given by the caller
  weights,       // the result's own copy of the weights: kept, and written out when the caller asks
  shown,         // a step of the result: kept, and shown (printed, written as JSON or to files)
};

// One tensor (or many alike) a command will hold: `shape` elements of `element_bytes` each, plus
// `objects` separate allocations (tensor objects, map entries, module nodes) of about
// kObjectBytes each.
struct PlannedTensor {
  std::string name;  // "W'", "the weights"
  Shape shape;
  // The legend letter of each axis, space-separated ("B T T"); an axis whose size grows with
  // several sizes names them with '/' ("L D/F"). They become the error's driven_by sizes.
  std::string axes = "";
  std::size_t element_bytes = 4;  // float32; 8 for float64 and int64
  Held held = Held::computing;
  std::size_t objects = 0;
};

// What one separately allocated object costs beside its elements: an xtensor or Array with its
// shape, a state_dict entry with its key, a module node with its names (glibc malloc, measured at
// 150 to 270 bytes).
inline constexpr std::size_t kObjectBytes = 256;

using MemoryPlan = std::vector<PlannedTensor>;

// `plan` with every tensor held as `held`: a forward's steps as the copies a run shows.
MemoryPlan held_as(Held held, MemoryPlan plan);
// Appends `more` to `plan`.
void append(MemoryPlan& plan, const MemoryPlan& more);
// The plan that needs more bytes: of two computations that never overlap, the one that decides
// the peak.
MemoryPlan larger_of(MemoryPlan a, MemoryPlan b);

// What showing a command's result costs beyond the result itself (text, JSON, files), given the
// tensors the result holds (kept, weights and shown, in order): the parts it adds. The caller
// that shows the result sets it; by default showing costs nothing.
using OutputCost = std::function<MemoryPlan(const MemoryPlan& result)>;
void set_output_cost(OutputCost cost);

// The bytes a plan needs at its peak, the largest of three moments: computing the steps (all but
// the shown tensors), computing after they are shown (all but the before_shown ones), and
// showing the result (kept, weights and shown, plus what showing costs). Saturates at the
// largest size_t.
std::size_t planned_bytes(const MemoryPlan& plan);

// The current limit in bytes, and where it comes from (the source set_memory_limit was given,
// "ATTN_MAX_MEMORY", or "half this machine's memory").
std::size_t memory_limit();
std::string memory_limit_source();
// "set by <source>", or "half this machine's memory; <max_memory> sets it".
std::string memory_limit_origin();
void set_memory_limit(std::size_t bytes, std::string source);
std::size_t default_memory_limit();

// "512M", "2G", "1.5GiB", "64k", "100000" (bytes; K, M, G, T are powers of 1024, an optional
// "iB" or "B" after them) -> bytes. attn::Error naming `what` for anything else or zero.
std::size_t parse_memory_size(std::string_view text, std::string_view what);
// 1536 -> "1.5 KiB", 3 << 30 -> "3 GiB".
std::string format_bytes(double bytes);

// Throws attn::Error(ErrorKind::too_large) naming the command, the estimate (planned_bytes), its
// largest part and the limit when the plan needs more than `limit` bytes (or its sizes overflow);
// an Error naming ATTN_MAX_MEMORY when the limit comes from a variable that is not a size.
// The error is driven_by the letters of the largest part's axes, the largest axis first, sizes of
// 1 left out. The message ends "use smaller sizes", which the CLI replaces by the options to lower.
void check_budget(std::string_view command, const MemoryPlan& plan);
void check_budget(std::string_view command, const MemoryPlan& plan, std::size_t limit);

// How many times check_budget has run in this process, refusing or not: a caller can tell that
// a command checked its plan (cli/door.hpp).
std::size_t budget_checks();

}  // namespace attn
