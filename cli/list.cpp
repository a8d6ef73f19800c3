// attn list: the lessons in course order, with each exercise's progress.
#include <cstdio>
#include <filesystem>

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
using course::lesson_done;
using course::load_progress;
using course::Progress;

namespace {

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
        if (exercise.lesson == lesson.name)
          mark = lesson_done(progress, exercise) ? "done" : "pending";
      }
      out +=
          fmt::format("{:02}  {:<20} {:<8} {}\n", lesson.number, lesson.name, mark, lesson.summary);
    }
    out += "\nRun one with `attn <lesson>`, e.g. `attn dot-product`.\n";
    if (!exercises.empty()) out += exercise_progress_text(tree, exercises);
    out += outside;
    std::fputs(out.c_str(), stdout);
    context.exit_code = kExitOk;
  });
}

const Registration kRegistration{"list", setup};

}  // namespace

}  // namespace attn::cli
