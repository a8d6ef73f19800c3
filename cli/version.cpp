#include "version.hpp"

namespace attn::cli {

// ATTN_VERSION is set on this file alone by cli/CMakeLists.txt.
std::string_view attn_version() {
  return ATTN_VERSION;
}

}  // namespace attn::cli
