// Golden-output checks for the command-line tests: whole stdout against tests/golden/<name>.txt,
// the text word for word and the numbers within float32 round-off (tolerant_text.hpp), so that a
// golden made on one CPU holds on every CPU and OpenBLAS kernel.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "run_attn.hpp"
#include "tolerant_text.hpp"

namespace attn::testing {

// Heatmaps and tables depend on the locale (UTF-8 shades or ASCII) and colour: pin both.
inline const std::vector<std::string> kPlainTerminal = {"NO_COLOR", "TERM=xterm", "LC_ALL",
                                                        "LC_CTYPE", "LANG=C.UTF-8"};

// Compares stdout with tests/golden/<name>.txt; ATTN_UPDATE_GOLDEN=1 rewrites the file instead.
inline void check_golden(const std::string& name, const std::vector<std::string>& args,
                         const std::vector<std::string>& env = kPlainTerminal) {
  const auto result = run_attn(args, env);
  INFO("attn " << fmt::format("{}", fmt::join(args, " ")) << "\nstderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
  const std::filesystem::path golden = std::filesystem::path(ATTN_GOLDEN_DIR) / (name + ".txt");
  if (std::getenv("ATTN_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << result.out;
    WARN("rewrote " << golden.string());
    return;
  }
  if (!std::filesystem::exists(golden)) {
    FAIL(
        "missing "
        << golden.string()
        << ": run the tests once with ATTN_UPDATE_GOLDEN=1 and read the new file before committing it");
  }
  const TextComparison comparison = compare_text(result.out, read_text(golden.string()));
  INFO("stdout differs from " << golden.string() << ":\n" << comparison.diff);
  CHECK(comparison.equal);
}

}  // namespace attn::testing
