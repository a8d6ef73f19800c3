// attn's version, CMake's project(attn VERSION ...). Only cli/version.cpp is compiled with it, so
// that a new version rebuilds one file.
#pragma once

#include <string_view>

namespace attn::cli {

// "0.1.0"
std::string_view attn_version();

}  // namespace attn::cli
