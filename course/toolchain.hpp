// Where attn's course files are, found from the executable, so attn runs the same from its build
// folder (build/attn with build/share/attn) and installed (P/bin/attn with P/share/attn). Two
// parts: what any install holds, a student's too, and the grader's part, which only an
// instructor's build or install and a grader bundle hold (docs/instructor-guide.md, "What a
// student's attn holds"):
//
//   share/attn/course/     the student's course: lessons/NN-name/ with the exercise sources (stubs
//                          in place of solutions), headers, visible tests, hints and lesson texts
//   share/attn/include/    the public headers an exercise compiles against
//   share/attn/lib/        what an exercise links with: the core, the probes of the visible tests
//   share/attn/inputs/     the tests' inputs, which student code may read (a student's install
//                          holds the visible tests' alone)
//   share/attn/checks/     the visible tests' check programs and expected values, and each
//                          exercise's list of the core functions it may call
//   share/attn/grader/     what decides a grade, which student code may not read: the instructor's
//                          course (solutions, hidden tests), the check programs of every test, the
//                          probes of the hidden tests and every expected value
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

  // Whether this attn holds the grader's part (share/attn/grader): an instructor's attn, or a
  // grader bundle; a student's install does not.
  bool has_grader() const;

  // The student's course, and the instructor's when this attn has the grader's part.
  std::filesystem::path student_course() const { return root / "course"; }
  std::filesystem::path instructor_course() const { return grader() / "course"; }
  std::filesystem::path include() const { return root / "include"; }
  std::filesystem::path lib() const { return root / "lib"; }
  std::filesystem::path inputs() const { return root / "inputs"; }
  std::filesystem::path checks() const { return root / "checks"; }
  std::filesystem::path grader() const { return root / "grader"; }
  // The expected values and the check program that decide: every test's with the grader's part,
  // else the visible tests'.
  std::filesystem::path expected() const {
    return has_grader() ? grader() / "expected" : checks() / "expected";
  }
  std::filesystem::path check_program(const std::string& stem) const {
    return (has_grader() ? grader() : checks()) / (stem + "_check");
  }
  std::filesystem::path core_calls(const std::string& stem) const {
    return checks() / (stem + ".core-calls");
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

// Refuses to grade (attn::Error) when student code could read the grader's part: without
// Landlock a confined child reads what its user may, so the grader's files must be out of that
// user's reach (nobody's, when attn runs as root; run_autograder makes them so). Nothing is
// refused with Landlock, or without a grader's part (a student's install has nothing to hide).
// Run as root, it also refuses when nobody cannot reach the headers, libraries and inputs the
// confined compiler and tests need (every lesson would fail to compile).
void require_grader_out_of_reach(const Toolchain& tool);

}  // namespace attn::course
