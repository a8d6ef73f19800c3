// Test helpers shared by the command-line tests: a scratch directory, and the weights formula
// data/generator/attention.py's formula_state_dict uses for sizes too large to commit.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "io/weights.hpp"
#include "module.hpp"

namespace attn::testing {

// A fresh directory under the system's temporary directory, removed with everything in it when
// the instance goes. The path depends only on `name` and the process, so that a test case that
// Catch2 runs again for each of its sections sees the same path (and section names) every time.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             fmt::format("attn-test-{}-{}", name, ::getpid())) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

// The names of the entries of `dir`, to check that a command left nothing else there.
inline std::set<std::string> names_in(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    names.insert(entry.path().filename().string());
  return names;
}

// Entry j of the state_dict, element i: 0.02 * (((7919 i + 104729 j) mod 2001) / 1000 - 1).
inline StateDict formula_weights(const Module& model) {
  StateDict out;
  std::int64_t j = 0;
  for (const StateDictEntry& e : state_dict_entries(model)) {
    std::vector<float> values(element_count(e.shape));
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::int64_t r = (static_cast<std::int64_t>(i) * 7919 + j * 104729) % 2001;
      values[i] = static_cast<float>(0.02 * (static_cast<double>(r) / 1000.0 - 1.0));
    }
    out[e.key] = make_float32(e.shape, values);
    ++j;
  }
  return out;
}

}  // namespace attn::testing
