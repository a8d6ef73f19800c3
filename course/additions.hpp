// An instructor's additions to an installed attn's course, from a folder, without rebuilding attn
// (`attn assignments add DIR`):
//
//   DIR/lessons/03-softmax/cases/*.json      test cases for one of attn's exercises
//   DIR/lessons/21-gelu/gelu_exercise.hpp    a new exercise: its header (namespace attn::exercise),
//                      gelu_exercise.cpp     its source with the solution between
//                                            // BEGIN SOLUTION and // END SOLUTION,
//                      hints.md              its hints (## 1, ## 2, ...), lesson.md if any,
//                      cases/*.json          and its test cases, at least one visible
//
// Cases are data (data_cases.hpp), graded by the same confinement and by attn's own comparison.
// Before anything is kept, the solutions are graded by every case (attn's own solution for one of
// its exercises) and must pass them all; a case the stub passes is reported. Then the files go
// into share/attn: the instructor's course (every case, the solution), the student's course
// (visible cases, the stub), the new exercise's header and its list of the core's functions it may
// call (those its solution calls). A lesson added again gets exactly the folder's cases (one gone
// since leaves). All or nothing: a failure puts back what was there.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace attn::course {

struct AdditionReport {
  std::vector<std::string> lines;  // what was added, one line per lesson
  std::vector<std::string> warnings;
  std::string next;  // what to do now
};

// A student's install (no grader's part) takes a released tree instead: the exercises and visible
// cases its course lacks, as the tree holds them (stubs), unchecked, since its checks decide no
// grade.
//
// attn::Error naming the file and the problem when the folder, a case or an exercise is not
// right, when a solution fails a case, or when share/attn cannot be written.
// `progress` hears when the grading of the solutions starts (it takes minutes).
AdditionReport add_to_course(const std::filesystem::path& folder,
                             const std::function<void(const std::string&)>& progress = {});

}  // namespace attn::course
