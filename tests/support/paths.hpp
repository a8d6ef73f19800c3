// Where the tests find the checkout and this build's attn. The values are in test_paths.cpp, which
// tests/CMakeLists.txt generates into the build tree and every test executable links: the one
// object that differs between two checkouts, so that the compiler cache serves a fresh clone every
// other object an earlier clone compiled (a path compiled in as a macro would differ in each).
#pragma once

namespace attn::testing::paths {

extern const char kSourceDir[];      // the checkout
extern const char kFixturesDir[];    // data/fixtures
extern const char kGoldenDir[];      // tests/golden
extern const char kExecutable[];     // this build's attn
extern const char kExecutableDir[];  // the folder attn is in: the build tree's top

}  // namespace attn::testing::paths

#define ATTN_SOURCE_DIR (::attn::testing::paths::kSourceDir)
#define ATTN_FIXTURES_DIR (::attn::testing::paths::kFixturesDir)
#define ATTN_GOLDEN_DIR (::attn::testing::paths::kGoldenDir)
#define ATTN_EXECUTABLE (::attn::testing::paths::kExecutable)
#define ATTN_EXECUTABLE_DIR (::attn::testing::paths::kExecutableDir)
