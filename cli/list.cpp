// attn list: the lessons in course order, with each exercise's progress.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "assignments.hpp"
#include "catalog.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson.hpp"

namespace attn::cli {

using course::Exercise;
using course::exercise_progress_text;
using course::find_exercises;
using course::find_tree;
using course::load_progress;
using course::Progress;

namespace {

// An added exercise's title: the first line of its lesson.md.
std::string added_summary(const Exercise& exercise) {
  const std::string title = course::exercise_title(exercise);
  return title.empty() ? "(added by your course)" : "(added) " + title;
}

// What the list says of an exercise: done; changed (passed, then edited since); its score at the
// last check, when that failed and the file is as it was; pending otherwise.
std::string status(const Progress& progress, const Exercise& exercise) {
  const auto it = progress.lessons.find(exercise.lesson);
  if (it == progress.lessons.end()) return "pending";
  const bool unchanged = it->second.fingerprint == course::fingerprint(exercise.source());
  if (it->second.passed) return unchanged ? "done" : "changed";
  return unchanged ? fmt::format("{:g}/{:g}", it->second.score, it->second.max_score) : "pending";
}

void setup(CLI::App& app, Context& context) {
  CLI::App* sub = app.add_subcommand("list", "the lessons in order, with your exercises' progress");
  door_callback(*sub, [&context] {
    // The assignment tree around the working directory: done means the exercise passed
    // `attn check` and has not changed since. Outside a tree, the lessons alone.
    std::filesystem::path tree;
    std::vector<Exercise> exercises;
    Progress progress;
    std::string outside;
    try {
      tree = find_tree("");
      exercises = find_exercises(tree);
      progress = load_progress(tree);
    } catch (const std::exception&) {
      exercises.clear();
      outside =
          "Exercises: this folder is not inside an assignment tree. Get one from your "
          "instructor, or write your own with `attn assignments release --out "
          "attn-course`, then cd into it.\n";
    }
    std::string out;
    for (const lessons::LessonInfo& lesson : lessons::catalog()) {
      std::string mark;
      for (const Exercise& exercise : exercises) {
        if (exercise.lesson == lesson.name) mark = status(progress, exercise);
      }
      out +=
          fmt::format("{:02}  {:<20} {:<8} {}\n", lesson.number, lesson.name, mark, lesson.summary);
    }
    // Exercises the course added (`attn assignments add`): no lesson to run, only to check.
    bool added = false;
    for (const Exercise& exercise : exercises) {
      const auto& all = lessons::catalog();
      if (std::any_of(all.begin(), all.end(), [&](const lessons::LessonInfo& lesson) {
            return lesson.name == exercise.lesson;
          }))
        continue;
      added = true;
      out += fmt::format("{:02}  {:<20} {:<8} {}\n", exercise.number, exercise.lesson,
                         status(progress, exercise), added_summary(exercise));
    }
    out += "\nRun one with `attn <lesson>`, e.g. `attn dot-product`.\n";
    if (added)
      out += "An exercise your course added has no lesson to run: `attn check NAME` checks it.\n";
    if (!exercises.empty()) {
      out +=
          "done: passed, unchanged since; changed: edited since it passed; 3/11: the last "
          "check's score.\n";
    }
    if (!exercises.empty()) out += exercise_progress_text(tree, exercises);
    out += outside;
    std::fputs(out.c_str(), stdout);
    context.exit_code = kExitOk;
  });
}

const Registration kRegistration{"list", setup};

}  // namespace

}  // namespace attn::cli
