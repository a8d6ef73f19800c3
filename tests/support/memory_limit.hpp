// Sets the memory limit of core/base/budget.hpp for one test, and puts the previous one back.
#pragma once

#include <cstddef>
#include <string>

#include "base/budget.hpp"

namespace attn::testing {

struct MemoryLimit {
  std::size_t bytes = attn::memory_limit();
  std::string source = attn::memory_limit_source();
  explicit MemoryLimit(std::size_t limit) { attn::set_memory_limit(limit, "the test"); }
  ~MemoryLimit() { attn::set_memory_limit(bytes, source); }
  MemoryLimit(const MemoryLimit&) = delete;
  MemoryLimit& operator=(const MemoryLimit&) = delete;
};

}  // namespace attn::testing
