// Paths of the PyTorch-made fixtures in data/fixtures/ (written by data/generate_fixtures.py).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "paths.hpp"

namespace attn::testing {

inline std::string fixture_path(const std::string& relative) {
  const std::filesystem::path path = std::filesystem::path(ATTN_FIXTURES_DIR) / relative;
  if (!std::filesystem::exists(path)) {
    FAIL("missing fixture " << path.string()
                            << ": regenerate with `/usr/bin/python3 data/generate_fixtures.py` "
                               "(needs Debian's python3-torch and python3-numpy)");
  }
  return path.string();
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("cannot read " << path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace attn::testing
