// attn runs installed: `cmake --install` under a fresh prefix, then the installed attn, run from
// another folder, teaches a lesson, releases a student tree and grades it, with nothing of the
// checkout in its way; and the executable carries no path of the machine that built it.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::ScratchDir;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `command` through the shell; its exit status.
int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("the executable carries no path of the checkout or the build folder", "[install]") {
  if (!attn::testing::kPeakMemoryIsAttns) {
    // The sanitizers keep the source locations of their checks as the compiler was given them.
    WARN("a sanitized build carries its sanitizers' source paths; the release build is checked");
    return;
  }
  const std::string binary = read_bytes(ATTN_EXECUTABLE);
  REQUIRE(!binary.empty());
  CHECK(binary.find(ATTN_SOURCE_DIR) == std::string::npos);
  CHECK(binary.find(ATTN_EXECUTABLE_DIR) == std::string::npos);
}

TEST_CASE("an installed attn teaches, releases and grades from any folder", "[install]") {
  ScratchDir scratch("install");
  const fs::path prefix = scratch.path / "prefix";
  const fs::path log = scratch.path / "log.txt";
  REQUIRE(shell(fmt::format("cmake --install '{}' --prefix '{}' >'{}' 2>&1", ATTN_EXECUTABLE_DIR,
                            prefix.string(), log.string())) == 0);
  const fs::path attn = prefix / "bin" / "attn";
  REQUIRE(fs::exists(attn));
  CHECK(fs::exists(prefix / "share" / "attn" / "toolchain.json"));

  // Run from a folder that is neither the checkout nor the build.
  const fs::path work = scratch.path / "work";
  fs::create_directories(work);
  const std::string in_work = fmt::format("cd '{}' && '{}'", work.string(), attn.string());
  CHECK(shell(in_work + " softmax --quiet >out.txt 2>&1") == 0);
  CHECK(read_bytes(work / "out.txt").find("tensor(") != std::string::npos);

  CHECK(shell(in_work + " assignments release --out course >release.txt 2>&1") == 0);
  INFO(read_bytes(work / "release.txt"));
  REQUIRE(fs::exists(work / "course" / "lessons" / "03-softmax" / "softmax_exercise.cpp"));

  // A fresh release grades to zero; with the solution copied in, the lesson to full marks.
  CHECK(shell(in_work + " grade --dir course --lesson softmax --format gradescope --output " +
              "zero.json >grade.txt 2>&1") == 1);
  INFO(read_bytes(work / "grade.txt"));
  const auto zero = nlohmann::json::parse(read_bytes(work / "zero.json"));
  CHECK(zero["score"] == 0.0);
  fs::copy_file(fs::path(ATTN_SOURCE_DIR) / "lessons" / "03-softmax" / "softmax_exercise.cpp",
                work / "course" / "lessons" / "03-softmax" / "softmax_exercise.cpp",
                fs::copy_options::overwrite_existing);
  CHECK(shell(in_work + " grade --dir course --lesson softmax --format gradescope --output " +
              "full.json >grade.txt 2>&1") == 0);
  const auto full = nlohmann::json::parse(read_bytes(work / "full.json"));
  CHECK(full["score"].get<double>() >= 14.0);
}
