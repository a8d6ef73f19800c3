// Where attn's course files are, found from the executable, so attn runs the same from its build
// folder (build/attn with build/share/attn) and installed (P/bin/attn with P/share/attn):
//
//   share/attn/course/     the instructor's copy: lessons/NN-name/ with the exercise sources,
//                          headers, tests (hidden ones too), hints and lesson texts
//   share/attn/include/    the public headers an exercise compiles against
//   share/attn/lib/        what an exercise links with: the core, the probes of the visible tests
//   share/attn/inputs/     the tests' inputs, which student code may read
//   share/attn/grader/     what decides, which student code may not read: the check programs,
//                          the expected values and the probes of the hidden tests
//   share/attn/toolchain.json   the compiler, flags and libraries of this build
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attn::course {

struct Toolchain {
  std::filesystem::path root;  // share/attn
  std::string compiler;        // e.g. /usr/bin/c++
  std::vector<std::string> flags;
  std::vector<std::string> link;  // libraries after the exercise's objects, paths made absolute

  std::filesystem::path course() const { return root / "course"; }
  std::filesystem::path include() const { return root / "include"; }
  std::filesystem::path lib() const { return root / "lib"; }
  std::filesystem::path inputs() const { return root / "inputs"; }
  std::filesystem::path grader() const { return root / "grader"; }
  std::filesystem::path expected() const { return grader() / "expected"; }
  std::filesystem::path check_program(const std::string& stem) const {
    return grader() / (stem + "_check");
  }
  std::filesystem::path visible_probe(const std::string& stem) const {
    return lib() / ("lib" + stem + "_probe.a");
  }
  std::filesystem::path hidden_probe(const std::string& stem) const {
    return grader() / ("lib" + stem + "_probe_all.a");
  }
  std::filesystem::path probe_main() const { return lib() / "libattn_grade_probe_main.a"; }
};

// The share/attn beside this executable; attn::Error naming what is missing otherwise.
const Toolchain& toolchain();

}  // namespace attn::course
