// A submission as Gradescope hands it over (/autograder/submission): files uploaded one by one at
// its top level, or a repository with its folders. `attn grade --submission DIR` grades it in a
// student tree of its own: for each exercise, the file at lessons/NN-name/<stem>.cpp, else
// <stem>.cpp at the top level, a regular file reached through no link. Every other file of that
// name is left ungraded, and the report says which file was graded and which were not.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "assignments.hpp"

namespace attn::course {

// What the submission holds for one exercise (paths relative to the submission's folder).
struct SubmittedExercise {
  Exercise exercise;                // in the submission's student tree
  std::string graded;               // the file graded, "" when the released stub was
  std::string refused;              // a file at an expected path that could not be graded
  std::string refused_reason;       // why: "a link", "not a regular file", "larger than 1 MiB"
  std::vector<std::string> others;  // files of the same name elsewhere, not graded

  // One line for the student: the file graded, and every candidate that was not.
  std::string note() const;
};

// A student tree in a private folder of its own, filled from a submission; the folder goes with
// the instance.
class Submission {
 public:
  // attn::Error (about "submission") when `dir` is missing or not a folder.
  explicit Submission(const std::filesystem::path& dir);
  ~Submission();
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;

  const std::filesystem::path& tree() const { return tree_; }
  const std::vector<SubmittedExercise>& exercises() const { return exercises_; }
  // The note of `exercise` (matched by its stem), "" for an exercise this course does not have.
  std::string note(const Exercise& exercise) const;

 private:
  std::filesystem::path folder_;
  std::filesystem::path tree_;
  std::vector<SubmittedExercise> exercises_;
};

}  // namespace attn::course
