// ctest runs each Catch2 test case by its name (catch_discover_tests). A name holding ';' is cut
// there, as CMake lists are, and the shorter name then matches no test case: Catch2 runs nothing
// and ctest counts a pass. Every test case's name must reach ctest whole.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"

namespace {

// The name of the TEST_CASE at `at`: its string literals up to the first comma between them.
std::string test_name(const std::string& source, std::size_t at) {
  std::string name;
  std::size_t i = source.find('(', at) + 1;
  for (;;) {
    while (i < source.size() && (source[i] == ' ' || source[i] == '\n'))
      ++i;
    if (i >= source.size() || source[i] != '"') return name;
    for (++i; i < source.size() && source[i] != '"'; ++i) {
      if (source[i] == '\\') ++i;
      name += source[i];
    }
    ++i;
  }
}

}  // namespace

TEST_CASE("every test case's name reaches ctest whole, with no semicolon in it", "[meta]") {
  namespace fs = std::filesystem;
  std::size_t names = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(ATTN_SOURCE_DIR) / "tests")) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() || !path.ends_with("_test.cpp")) continue;
    const std::string source = attn::testing::read_text(path);
    for (std::size_t at = source.find("\nTEST_CASE("); at != std::string::npos;
         at = source.find("\nTEST_CASE(", at + 1)) {
      const std::string name = test_name(source, at);
      INFO(path << ": " << name);
      CHECK(!name.empty());
      CHECK(name.find(';') == std::string::npos);
      ++names;
    }
  }
  CHECK(names > 300);  // every test file was read
}
