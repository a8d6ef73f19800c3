// attn grade, attn check, attn hint and attn assignments release: the course's exercises,
// graded by their tests. The work is course/'s (assignments.hpp for the trees, grader.hpp for
// how student code runs and who decides); this file reads the options and prints.
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "file_mark.hpp"
#include "grader.hpp"
#include "io/file_io.hpp"
#include "options.hpp"
#include "output.hpp"
#include "report.hpp"
#include "submission.hpp"
#include "toolchain.hpp"

namespace attn::cli {

namespace fs = std::filesystem;
using namespace attn::course;

namespace {

struct GradeCliOptions {
  std::string dir;
  std::string submission;  // attn grade --submission: a Gradescope submission's folder
  std::vector<std::string> lessons;
  std::string format = "text";
  std::string output;
  double timeout = 20.0;
  std::string color = "auto";
};

void progress_line(const std::string& message) {
  std::fprintf(stderr, "%s ...\n", message.c_str());
  std::fflush(stderr);
}

bool color_on(const std::string& color) {
  using render::ColorMode;
  return render::use_color(color == "always"  ? ColorMode::always
                           : color == "never" ? ColorMode::never
                                              : ColorMode::automatic);
}

void add_grade_options(CLI::App& sub, GradeCliOptions& o) {
  sub.add_option(
         "--dir", o.dir,
         "the assignment tree (default: the one around the working directory, else this checkout)")
      ->check(not_empty_validator("--dir", "student-tree"))
      ->option_text("DIR");
  sub.add_option("--timeout", o.timeout,
                 "seconds each test may run before it counts as failed (default 20)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double seconds = 0;
            const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
            if (ec != std::errc() || ptr != text.data() + text.size() ||
                !(seconds >= 0.1 && seconds <= 3600)) {
              return fmt::format(
                  "'{}' is not a time limit: give seconds from 0.1 to 3600, e.g. --timeout 60",
                  text);
            }
            return {};
          },
          "SECONDS"))
      ->option_text("SECONDS");
  sub.add_option("--color", o.color, "auto (default), always, never")
      ->check(choice_validator("a color mode", {"auto", "always", "never"}))
      ->option_text("auto|always|never");
}

// Refuses a report path that cannot be written, before grading, which takes minutes (the door
// runs it when --output is given).
void check_report_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw Error(ErrorKind::bad_file, "grade",
                fmt::format("'{}' is a folder: give a file name, e.g. {}/results.json",
                            printable(path), printable(path)))
        .about("output");
  }
  render::refuse_foreign_file(path, "output");
  const fs::path parent =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec)) {
    throw Error(
        ErrorKind::bad_file, "grade",
        fmt::format("cannot write '{}': '{}' is a file, not a directory; choose another path",
                    printable(path), printable(parent.string())))
        .about("output");
  }
  if (!fs::is_directory(parent, ec)) {
    throw Error(
        ErrorKind::bad_file, "grade",
        fmt::format(
            "cannot write '{}': the directory '{}' does not exist; create it first or choose "
            "another path",
            printable(path), printable(parent.string())))
        .about("output");
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw Error(ErrorKind::write_failed, "grade",
                fmt::format("cannot write '{}': {}; choose a writable directory", printable(path),
                            std::strerror(errno)))
        .about("output");
  }
}

// Writes `text` to --output (all or nothing), or to stdout.
void write_output(const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::fputs(text.c_str(), stdout);
    return;
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("'{}' is a folder: give a file name, e.g. {}/results.json", path, path))
        .about("output");
  }
  try {
    write_file_atomic(path, text);
  } catch (const Error& e) {
    throw Error(ErrorKind::bad_value, "grade", e.detail()).about("output");
  }
}

std::vector<LessonOutcome> grade_lessons(const fs::path& tree, const std::vector<Exercise>& chosen,
                                         double timeout, bool hidden_tests = true) {
  GradeOptions options;
  options.test_timeout_seconds = timeout;
  options.hidden_tests = hidden_tests;
  options.progress = progress_line;
  std::vector<LessonOutcome> outcomes;
  for (const Exercise& exercise : chosen)
    outcomes.push_back(grade_exercise(exercise, options));
  record_progress(tree, outcomes);
  return outcomes;
}

int run_grade(const GradeCliOptions& o) {
  fs::path tree;
  std::vector<Exercise> chosen;
  std::unique_ptr<Submission> submission;
  try {
    if (!o.submission.empty() && !o.dir.empty()) {
      throw Error(ErrorKind::bad_value, "grade",
                  "give --submission or --dir, not both: --submission grades a Gradescope "
                  "submission's files, --dir an assignment tree")
          .about("submission");
    }
    if (!o.submission.empty()) submission = std::make_unique<Submission>(o.submission);
    tree = submission ? submission->tree() : find_tree(o.dir);
    const std::vector<Exercise> all = find_exercises(tree);
    if (o.lessons.empty()) chosen = all;
    for (const std::string& name : o.lessons) {
      const Exercise& exercise = exercise_named(all, name);
      bool again = false;
      for (const Exercise& already : chosen)
        again = again || already.stem == exercise.stem;
      if (!again) chosen.push_back(exercise);  // --lesson softmax --lesson 03: graded once
    }
    for (const Exercise& exercise : chosen)
      instructor_tests(exercise);
    require_grader_out_of_reach(toolchain());
  } catch (const Error& e) {
    // The machine-read formats still get their file, with the problem in it.
    const std::string problem = e.detail();
    if (o.format == "gradescope") write_output(o.output, gradescope_report({}, problem));
    if (o.format == "junit") write_output(o.output, junit_report({}, problem));
    throw;
  }
  progress_line(fmt::format("grading {} ({} lesson{})",
                            submission ? "the submission " + o.submission : tree.string(),
                            chosen.size(), chosen.size() == 1 ? "" : "s"));
  std::vector<LessonOutcome> outcomes;
  try {
    outcomes = grade_lessons(tree, chosen, o.timeout);
  } catch (const Error& e) {
    // Whatever stopped the grading, the machine-read formats still get their file: score 0.
    if (o.format == "gradescope") write_output(o.output, gradescope_report({}, e.detail()));
    if (o.format == "junit") write_output(o.output, junit_report({}, e.detail()));
    throw;
  }
  if (submission) {
    for (LessonOutcome& outcome : outcomes)
      outcome.submitted = submission->note(outcome.exercise);
  }
  bool all_passed = true;
  for (const LessonOutcome& outcome : outcomes)
    all_passed = all_passed && outcome.passed();
  if (o.format == "gradescope") {
    write_output(o.output, gradescope_report(outcomes));
  } else if (o.format == "junit") {
    write_output(o.output, junit_report(outcomes));
  } else {
    write_output(o.output, text_report(outcomes, o.output.empty() && color_on(o.color)));
  }
  return all_passed ? kExitOk : kExitCheckFailed;
}

}  // namespace

namespace {

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<GradeCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "grade", "grade the course's exercises by their tests (score, results.json, JUnit)");
  add_grade_options(*sub, *o);
  sub->add_option("--lesson", o->lessons,
                  "grade only this lesson (repeatable; default: every exercise)")
      ->option_text("NAME");
  sub->add_option("--submission", o->submission,
                  "grade a submission's files (Gradescope's /autograder/submission) in a tree of "
                  "attn's own: lessons/NN-name/<name>_exercise.cpp, else at the top level")
      ->check(not_empty_validator("--submission", "/autograder/submission"))
      ->option_text("DIR");
  sub->add_option("--format", o->format, "text (default), gradescope (results.json) or junit (XML)")
      ->check(choice_validator("a report format", {"text", "gradescope", "junit"}))
      ->option_text("text|gradescope|junit");
  sub->add_option("--output", o->output, "write the report to FILE instead of stdout")
      ->check(not_empty_validator("--output", "results.json"))
      ->option_text("FILE");
  declare_output(*sub, "--output", [o] { check_report_path(o->output); });
  door_callback(*sub, [o, &context] { context.exit_code = run_grade(*o); });

  auto c = std::make_shared<GradeCliOptions>();
  auto lesson = std::make_shared<std::string>();
  CLI::App* check = app.add_subcommand(
      "check", "run one lesson's exercise tests (default: the next unfinished one)");
  check->add_option("lesson", *lesson, "the lesson, e.g. softmax or 03")->option_text("LESSON");
  add_grade_options(*check, *c);
  door_callback(*check, [c, lesson, &context] {
    const fs::path tree = find_tree(c->dir);
    const std::vector<Exercise> all = find_exercises(tree);
    const Exercise* chosen = nullptr;
    if (!lesson->empty()) {
      chosen = &exercise_named(all, *lesson, "");
    } else {
      const Progress progress = load_progress(tree);
      for (const Exercise& exercise : all) {
        if (chosen == nullptr && !lesson_done(progress, exercise)) chosen = &exercise;
      }
      if (chosen == nullptr) {
        std::fputs(exercise_progress_text(tree, all).c_str(), stdout);
        context.exit_code = kExitOk;
        return;
      }
    }
    // A student checks against the visible tests; the hidden ones count only in `attn grade`.
    const std::vector<LessonOutcome> outcomes = grade_lessons(tree, {*chosen}, c->timeout, false);
    const LessonOutcome& outcome = outcomes.front();
    std::string out = text_report(outcomes, color_on(c->color));
    if (outcome.passed()) {
      out += fmt::format("\n✓ {} is done.\n", chosen->label());
    } else {
      out += fmt::format("\nEdit {} and run `attn check {}` again. Stuck? `attn hint {}`.\n",
                         fs::relative(chosen->source(), tree).string(), chosen->lesson,
                         chosen->lesson);
    }
    out += exercise_progress_text(tree, all);
    std::fputs(out.c_str(), stdout);
    context.exit_code = outcome.passed() ? kExitOk : kExitCheckFailed;
  });

  auto h = std::make_shared<std::string>();
  auto hint_dir = std::make_shared<std::string>();
  auto stage = std::make_shared<int>(0);
  CLI::App* hint =
      app.add_subcommand("hint", "a hint for a lesson's exercise, one stage at a time");
  hint->add_option("lesson", *h, "the lesson, e.g. softmax")->required()->option_text("LESSON");
  hint->add_option("--stage", *stage, "show this stage again (1 = the first hint)")
      ->check(whole_number_validator(1, 100))
      ->option_text("N");
  hint->add_option("--dir", *hint_dir,
                   "the assignment tree (default: the one around the working directory)")
      ->check(not_empty_validator("--dir", "student-tree"))
      ->option_text("DIR");
  door_callback(*hint, [h, hint_dir, stage, &context] {
    const fs::path tree = find_tree(*hint_dir);
    const std::vector<Exercise> all = find_exercises(tree);
    const Exercise& exercise = exercise_named(all, *h, "");
    const std::vector<std::string> hints = read_hints(exercise);
    if (hints.empty())
      throw Error(ErrorKind::bad_value, "hint",
                  fmt::format("{} has no hints.md", exercise.label()));
    Progress progress = load_progress(tree);
    int& seen = progress.hints_seen[exercise.lesson];
    const int total = static_cast<int>(hints.size());
    if (*stage > total) {
      throw Error(
          ErrorKind::bad_value, "grade",
          fmt::format("{} has {} hints: give --stage from 1 to {}", exercise.label(), total, total))
          .about("stage");
    }
    const int show = *stage > 0 ? *stage : std::min(seen + 1, total);
    seen = std::max(seen, show);
    try {
      save_progress(tree, progress);
    } catch (const std::exception&) {
    }
    std::string out = fmt::format("Hint {} of {} for {}:\n\n{}\n", show, total, exercise.label(),
                                  hints[static_cast<std::size_t>(show - 1)]);
    if (show < total) {
      out += fmt::format("Run `attn hint {}` again for the next hint.\n", exercise.lesson);
    } else {
      out += fmt::format("That was the last hint. `attn hint {} --stage N` shows hint N again.\n",
                         exercise.lesson);
    }
    std::fputs(out.c_str(), stdout);
    context.exit_code = kExitOk;
  });

  auto out_dir = std::make_shared<std::string>();
  auto grader_dir = std::make_shared<std::string>();
  auto source_dir = std::make_shared<std::string>();
  CLI::App* assignments = app.add_subcommand("assignments", "the course's assignment trees");
  assignments->require_subcommand(0, 1);
  door_callback(*assignments, [assignments] {
    if (assignments->get_subcommands().empty()) {
      throw Error(ErrorKind::bad_value, "assignments",
                  "give a subcommand: `attn assignments release --out DIR` writes the student "
                  "tree, `--grader DIR` the autograder");
    }
  });
  CLI::App* release = assignments->add_subcommand(
      "release",
      "write the student tree (solutions replaced by stubs, hidden tests left out) "
      "and the grader bundle (no solutions, hidden tests kept)");
  release->add_option("--out", *out_dir, "the student tree to write (a new folder)")
      ->check(not_empty_validator("--out", "~/course"))
      ->option_text("DIR");
  release
      ->add_option("--grader", *grader_dir,
                   "the grader bundle to write (a new folder): zip it for Gradescope")
      ->check(not_empty_validator("--grader", "~/autograder"))
      ->option_text("DIR");
  release
      ->add_option("--dir", *source_dir,
                   "the tree to release as the student tree (default: attn's own course)")
      ->check(not_empty_validator("--dir", "course-tree"))
      ->option_text("DIR");
  door_callback(*release, [out_dir, grader_dir, source_dir, &context] {
    if (out_dir->empty() && grader_dir->empty()) {
      throw Error(ErrorKind::bad_value, "assignments",
                  "give <out> DIR for the student tree, <grader> DIR for the grader bundle, or "
                  "both");
    }
    const fs::path tree = source_dir->empty() ? course_tree() : find_tree(*source_dir);
    std::string out;
    if (!out_dir->empty()) {
      const ReleaseSummary summary = release_tree(tree, *out_dir, false);
      // A student's attn carries its course with stubs already: nothing is replaced.
      const std::string stubs = summary.stubs > 0
                                    ? fmt::format("{} solutions replaced by stubs", summary.stubs)
                                    : std::string("each with stubs to fill in");
      out += fmt::format(
          "wrote {}: {} exercises, {}, {} tests worth {} points (hidden tests left out)\n",
          *out_dir, summary.exercises, stubs, summary.visible_tests,
          number_string(summary.visible_points));
      out += fmt::format("Students start with `cd {} && attn check`.\n", *out_dir);
    }
    if (!grader_dir->empty()) {
      const ReleaseSummary summary = release_grader(course_tree(), *grader_dir);
      out += fmt::format(
          "wrote {}: attn, the checks and expected values, {} exercises with stubs for "
          "solutions, {} tests worth {} points ({} hidden)\n",
          *grader_dir, summary.exercises, summary.visible_tests + summary.hidden_tests,
          number_string(summary.visible_points + summary.hidden_points), summary.hidden_tests);
      out += fmt::format(
          "For Gradescope: `cd {} && zip -r ../autograder.zip .`, then upload the "
          "zip (docs/instructor-guide.md).\n",
          *grader_dir);
    }
    std::fputs(out.c_str(), stdout);
    context.exit_code = kExitOk;
  });
}

// One setup for the four course commands: grade, check, hint and assignments.
const Registration kRegistration{"grade", setup};

}  // namespace

}  // namespace attn::cli
