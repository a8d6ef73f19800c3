#include "command.hpp"

#include <malloc.h>

namespace attn::cli {

namespace {
std::vector<Command>& commands() {
  static std::vector<Command> registered;
  return registered;
}
}  // namespace

Registration::Registration(std::string_view name, Setup setup) {
  commands().push_back({name, setup});
}

const std::vector<Command>& registered_commands() {
  return commands();
}

void keep_freed_memory() {
  // Large blocks from the heap rather than their own mappings, and no trimming of the heap's top.
  mallopt(M_MMAP_THRESHOLD, 512 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
}

}  // namespace attn::cli
