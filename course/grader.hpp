// Grading a student's exercise. The trust model (docs/instructor-guide.md):
//
//   - trusted: attn, and what it reads from its own share/attn (toolchain.hpp): the tests and
//     their points, the expected values, the hidden tests, the check programs. Nothing of that is
//     read from the student's tree, whose only input is the exercise source.
//   - untrusted: the student's code. It is compiled, linked and run confined (process.hpp), each
//     test in its own process (the probe), which can only send the values its calls returned.
//     A check program, built from the instructor's tests without the student's code, decides
//     pass or fail from those values; the probe's exit status and signals can only fail a test.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "assignments.hpp"

namespace attn::course {

enum class TestStatus { passed, failed, error };  // error: did not compile, crashed or timed out

struct TestOutcome {
  TestCaseInfo info;
  TestStatus status = TestStatus::error;
  double score = 0.0;
  std::string output;  // the evidence: expected versus got, the exception, the crash
  double seconds = 0.0;
  std::vector<std::string> notes;  // printed whether or not it passed: a prediction's comparison
};

struct LessonOutcome {
  Exercise exercise;
  bool built = false;
  std::string build_log;  // the compiler's messages when it failed
  double build_seconds = 0.0;
  std::vector<TestOutcome> tests;
  std::string submitted;  // which submitted file was graded (attn grade --submission), or ""

  double score() const;
  double max_score() const;
  bool passed() const;  // built and every test passed
};

struct GradeOptions {
  double test_timeout_seconds = 20.0;
  double build_timeout_seconds = 600.0;
  std::size_t test_memory = std::size_t{1} << 30;  // address space of each test's process
  bool hidden_tests = true;  // false for a student's `attn check`: the visible tests only
  bool full_compiler_messages = false;  // every line the compiler printed, not the first errors
  std::function<void(const std::string&)> progress;  // "building 03 softmax", when set
};

struct DataCase;

// What one call of the student's function gave back.
struct CallResult {
  bool returned = false;
  std::string value;    // what it returned, in the bytes of harness/values.hpp
  std::string problem;  // otherwise: what it threw, or how its process ended
};
struct CallsOutcome {
  bool built = false;
  std::string build_log;  // the compiler's messages when it failed
  std::vector<CallResult> calls;
};
// Calls the functions of `exercise` (the student's source) with each case's arguments, compiled
// and run as a test is: attn LESSON --mine. The cases' expected values are not used.
CallsOutcome run_student_calls(const Exercise& exercise, const std::vector<DataCase>& cases,
                               const GradeOptions& options);

// Grades `exercise` of a student's tree by the instructor's tests of the same exercise.
LessonOutcome grade_exercise(const Exercise& exercise, const GradeOptions& options);

// A new folder of this user's alone for grading work, under $ATTN_GRADE_TMPDIR or /tmp, named
// for this process (attn-grade-<pid namespace>-<pid>-*) and guarded: the guard removes it when
// attn ends first (process.hpp), and a later run removes it when both were killed. Stale
// folders of ended runs are removed first. attn::Error when it cannot be made.
std::filesystem::path make_work_folder();
// Removes a folder make_work_folder made, and tells the guard.
void remove_work_folder(const std::filesystem::path& folder);

// The tests of the instructor's copy of `exercise`: its names, points and hidden tags.
std::vector<TestCaseInfo> instructor_tests(const Exercise& exercise);

// Records each outcome in the tree's progress file.
void record_progress(const std::filesystem::path& tree, const std::vector<LessonOutcome>& outcomes);

}  // namespace attn::course
