// attn man and attn --version: the man page is roff that groff reads without a warning, names
// every command of `attn --help` and says what each exit code means; it and --version carry the
// version of CMake's project(attn VERSION ...). setup.sh installs groff-base; these tests fail,
// rather than skip, when groff is missing.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "run_attn.hpp"
#include "run_program.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::find_program;
using attn::testing::help_commands;
using attn::testing::run_attn;
using attn::testing::run_program;

namespace {

// The version in the checkout's CMakeLists.txt: project(attn VERSION 0.1.0 ...).
std::string project_version() {
  const std::string cmake =
      attn::testing::read_text(std::string(ATTN_SOURCE_DIR) + "/CMakeLists.txt");
  static const std::regex project(R"(project\(attn VERSION ([0-9][0-9.]*))");
  std::smatch m;
  REQUIRE(std::regex_search(cmake, m, project));
  return m[1];
}

}  // namespace

TEST_CASE("attn --version and -V print CMake's project version", "[cli][man]") {
  const std::string line = "attn " + project_version() + "\n";
  for (const char* flag : {"--version", "-V"}) {
    INFO(flag);
    const auto result = run_attn({flag});
    CHECK(result.exit_code == 0);
    CHECK(result.out == line);
    CHECK(result.err.empty());
  }
}

TEST_CASE("attn man is a man page groff reads without a warning", "[cli][man]") {
  INFO("groff is missing: ./setup.sh installs it (apt-get install groff-base)");
  REQUIRE(!find_program("groff").empty());
  attn::testing::ScratchDir dir("man-page");
  const auto man = run_attn({"man"});
  REQUIRE(man.exit_code == 0);
  CHECK(man.err.empty());
  std::ofstream(dir.path / "attn.1", std::ios::binary) << man.out;

  // -ww: every warning; -z: no output, only the warnings. Everything is ASCII (others as
  // \[uXXXX]), so groff reads it without preconv.
  const auto checked = run_program({"groff", "-man", "-Tutf8", "-ww", "-z", "attn.1"}, dir.path);
  INFO("groff's warnings: " << checked.err);
  CHECK(checked.exit_code == 0);
  CHECK(checked.err.empty());
  CHECK(std::all_of(man.out.begin(), man.out.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x80; }));

  const std::string& page = man.out;
  CHECK(page.find(".TH ATTN 1 \"\" \"attn " + project_version() + "\"") != std::string::npos);
  for (const char* section : {".SH NAME\nattn \\- ", ".SH SYNOPSIS\n", ".SH DESCRIPTION\n",
                              ".SH COMMANDS\n", ".SH EXIT STATUS\n"})
    CHECK(page.find(section) != std::string::npos);
  for (const std::string& command : help_commands()) {
    INFO(command);
    CHECK(page.find(".SS \"attn " + command) != std::string::npos);
  }
  CHECK(page.find(".SS \"attn assignments release\"\n") != std::string::npos);
  CHECK(page.find(".SS \"attn view VIEW\"\n") != std::string::npos);
  // Option names are written with minus signs.
  CHECK(page.find("\\fB\\-\\-max\\-memory\\fR \\fISIZE\\fR\n") != std::string::npos);
  CHECK(page.find("--") == std::string::npos);

  // As read: the exit codes, a command's option and its help.
  const auto text = run_program({"groff", "-man", "-Tascii", "-P-cbou", "attn.1"}, dir.path);
  REQUIRE(text.exit_code == 0);
  for (const char* words : {"attn softmax", "--temperature", "EXIT STATUS",
                            "bad usage or bad input", "ATTN_MAX_MEMORY"})
    CHECK(text.out.find(words) != std::string::npos);
}
