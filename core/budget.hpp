// The memory limit: before a command allocates its tensors it adds up what they need and
// refuses, with the estimate and the limit, when that is more than the limit.
//
// The limit is --max-memory when given, else the ATTN_MAX_MEMORY environment variable, else half
// of the memory this process may use (the machine's RAM, or its cgroup's limit when lower).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "array.hpp"

namespace attn {

struct PlannedTensor {
  std::string name;
  Shape shape;  // float32 elements
};

// The current limit in bytes, and where it comes from ("--max-memory", "ATTN_MAX_MEMORY", or
// "half this machine's memory").
std::size_t memory_limit();
std::string memory_limit_source();
// "set by --max-memory", or "half this machine's memory; --max-memory sets it".
std::string memory_limit_origin();
void set_memory_limit(std::size_t bytes, std::string source);
std::size_t default_memory_limit();

// "512M", "2G", "1.5GiB", "64k", "100000" (bytes; K, M, G, T are powers of 1024, an optional
// "iB" or "B" after them) -> bytes. attn::Error naming `what` for anything else or zero.
std::size_t parse_memory_size(std::string_view text, std::string_view what);
// 1536 -> "1.5 KiB", 3 << 30 -> "3 GiB".
std::string format_bytes(double bytes);

// Throws attn::Error naming the command, the estimate, the largest tensor and the limit when the
// planned float32 tensors need more than `limit` bytes (or their sizes overflow). The message
// ends "use smaller sizes", which the CLI replaces by the options to lower.
void check_budget(std::string_view command, std::initializer_list<PlannedTensor> tensors);
void check_budget(std::string_view command, std::initializer_list<PlannedTensor> tensors, std::size_t limit);

}  // namespace attn
