// Grading an assignment tree: each exercise is compiled with the compiler and against the
// libraries this attn was built with, then each of its test cases runs in its own process under
// a time limit, so that a crash or an endless loop costs that test alone.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "assignments.hpp"

namespace attn::cli {

enum class TestStatus { passed, failed, error };  // error: did not compile, crashed or timed out

struct TestOutcome {
  TestCaseInfo info;
  TestStatus status = TestStatus::error;
  double score = 0.0;
  std::string output;  // the evidence: expected versus got, the exception, the crash
  double seconds = 0.0;
};

struct LessonOutcome {
  Exercise exercise;
  bool built = false;
  std::string build_log;  // the compiler's messages when it failed
  double build_seconds = 0.0;
  std::vector<TestOutcome> tests;

  double score() const;
  double max_score() const;
  bool passed() const;  // built and every test passed
};

struct GradeOptions {
  double test_timeout_seconds = 20.0;
  double build_timeout_seconds = 600.0;
  std::function<void(const std::string&)> progress;  // "building 03 softmax", when set
};

LessonOutcome grade_exercise(const std::filesystem::path& tree, const Exercise& exercise,
                             const GradeOptions& options);

// Records each outcome in the tree's progress file.
void record_progress(const std::filesystem::path& tree, const std::vector<LessonOutcome>& outcomes);

}  // namespace attn::cli
