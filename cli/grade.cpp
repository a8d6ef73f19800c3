// attn grade, attn check, attn hint and attn assignments release: the course's exercises,
// graded by their tests. The work is course/'s (assignments.hpp for the trees, grader.hpp for
// how student code runs and who decides); this file reads the options and prints.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "additions.hpp"
#include "base/error.hpp"
#include "check_run.hpp"
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
  std::string submission;   // attn grade --submission: a Gradescope submission's folder
  std::string submissions;  // attn grade --submissions: a folder of them, one per student
  std::string reports;      // where --submissions writes grades.csv and each student's report
  bool full_errors = false;
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
  sub.add_flag("--full-errors", o.full_errors,
               "print every line the compiler printed (default: the first errors, without the "
               "notes and template backtraces)");
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
                                         const GradeCliOptions& o, bool hidden_tests = true) {
  GradeOptions options;
  options.test_timeout_seconds = o.timeout;
  options.full_compiler_messages = o.full_errors;
  options.hidden_tests = hidden_tests;
  options.progress = progress_line;
  std::vector<LessonOutcome> outcomes;
  for (const Exercise& exercise : chosen)
    outcomes.push_back(grade_exercise(exercise, options));
  record_progress(tree, outcomes);
  return outcomes;
}

// The exercises named by --lesson (each once, in the order given), or every one.
std::vector<Exercise> chosen_exercises(const std::vector<Exercise>& all,
                                       const std::vector<std::string>& names) {
  if (names.empty()) return all;
  std::vector<Exercise> chosen;
  for (const std::string& name : names) {
    const Exercise& exercise = exercise_named(all, name);
    bool again = false;
    for (const Exercise& already : chosen)
      again = again || already.stem == exercise.stem;
    if (!again) chosen.push_back(exercise);  // --lesson softmax --lesson 03: graded once
  }
  return chosen;
}

// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// attn grade --submissions DIR --reports OUT: each folder of DIR is one student's submission,
// graded as `attn grade --submission` grades it; OUT gets grades.csv (student, lesson, score, max)
// and each student's report as text and as Gradescope's results.json, all or nothing.
int run_batch(const GradeCliOptions& o) {
  if (!o.submission.empty() || !o.dir.empty()) {
    throw Error(ErrorKind::bad_value, "grade",
                "give --submissions alone, without --submission or --dir: it grades each folder "
                "of DIR as one student's submission")
        .about("submissions");
  }
  if (o.format != "text" || !o.output.empty()) {
    throw Error(ErrorKind::bad_value, "grade",
                "--submissions writes its reports into --reports DIR: leave out --format and "
                "--output")
        .about("submissions");
  }
  std::error_code ec;
  const fs::path folder = o.submissions;
  if (!fs::is_directory(folder, ec)) {
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("'{}' is not a folder: give the folder that holds one folder per "
                            "student",
                            printable(o.submissions)))
        .about("submissions");
  }
  if (o.reports.empty()) {
    throw Error(ErrorKind::bad_value, "grade",
                "give --reports DIR, a new folder for grades.csv and each student's report")
        .about("submissions");
  }
  std::vector<std::string> students;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".")) continue;
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) students.push_back(name);
  }
  std::sort(students.begin(), students.end());
  if (students.empty()) {
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("'{}' holds no student folders: put each student's files in a folder "
                            "named for the student",
                            printable(o.submissions)))
        .about("submissions");
  }
  std::vector<std::pair<fs::path, std::string>> files;
  std::string csv = "student,lesson,score,max\n";
  std::string summary;
  std::size_t width = 7;
  for (const std::string& student : students)
    width = std::max(width, student.size());
  for (std::size_t i = 0; i < students.size(); ++i) {
    const std::string& student = students[i];
    progress_line(fmt::format("grading {} ({} of {})", printable(student), i + 1, students.size()));
    const Submission submission(folder / student);
    const std::vector<Exercise> chosen =
        chosen_exercises(find_exercises(submission.tree()), o.lessons);
    std::vector<LessonOutcome> outcomes = grade_lessons(submission.tree(), chosen, o);
    double score = 0.0, max_score = 0.0;
    for (LessonOutcome& outcome : outcomes) {
      outcome.submitted = submission.note(outcome.exercise);
      csv += fmt::format("{},{},{},{}\n", csv_field(student), outcome.exercise.lesson,
                         number_string(outcome.score()), number_string(outcome.max_score()));
      score += outcome.score();
      max_score += outcome.max_score();
    }
    files.emplace_back(student + ".txt", text_report(outcomes, false));
    files.emplace_back(student + ".json", gradescope_report(outcomes));
    summary +=
        fmt::format("  {:<{}}  {}\n", printable(student), width, points_string(score, max_score));
  }
  files.emplace_back("grades.csv", csv);
  write_new_folder(o.reports, files, "reports");
  std::string out =
      fmt::format("graded {} submission{}:\n", students.size(), students.size() == 1 ? "" : "s");
  out += summary;
  out += fmt::format(
      "wrote {}/grades.csv (student, lesson, score, max) and each student's report "
      "(<student>.txt, and <student>.json in Gradescope's format)\n",
      o.reports);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

int run_grade(const GradeCliOptions& o) {
  fs::path tree;
  std::vector<Exercise> chosen;
  std::unique_ptr<Submission> submission;
  if (!o.submissions.empty()) return run_batch(o);
  try {
    if (!o.submission.empty() && !o.dir.empty()) {
      throw Error(ErrorKind::bad_value, "grade",
                  "give --submission or --dir, not both: --submission grades a Gradescope "
                  "submission's files, --dir an assignment tree")
          .about("submission");
    }
    if (!o.submission.empty()) submission = std::make_unique<Submission>(o.submission);
    tree = submission ? submission->tree() : find_tree(o.dir);
    chosen = chosen_exercises(find_exercises(tree), o.lessons);
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
    outcomes = grade_lessons(tree, chosen, o);
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

std::string hint_text(const fs::path& tree, const Exercise& exercise, int stage) {
  const std::vector<std::string> hints = read_hints(exercise);
  if (hints.empty())
    throw Error(ErrorKind::bad_value, "hint", fmt::format("{} has no hints.md", exercise.label()));
  Progress progress = load_progress(tree);
  int& seen = progress.hints_seen[exercise.lesson];
  const int total = static_cast<int>(hints.size());
  if (stage > total) {
    throw Error(
        ErrorKind::bad_value, "grade",
        fmt::format("{} has {} hints: give --stage from 1 to {}", exercise.label(), total, total))
        .about("stage");
  }
  const int show = stage > 0 ? stage : std::min(seen + 1, total);
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
  return out;
}

CheckRun check_exercises(const fs::path& tree, const std::vector<Exercise>& all,
                         const std::vector<Exercise>& chosen, const CheckSettings& settings) {
  GradeCliOptions o;
  o.timeout = settings.timeout;
  o.full_errors = settings.full_errors;
  // A student checks against the visible tests; the hidden ones count only in `attn grade`.
  const std::vector<LessonOutcome> outcomes = grade_lessons(tree, chosen, o, false);
  CheckRun run;
  run.passed = true;
  for (const LessonOutcome& outcome : outcomes)
    run.passed = run.passed && outcome.passed();
  run.text = text_report(outcomes, settings.color);
  if (chosen.size() == 1) {
    const Exercise& exercise = chosen.front();
    if (run.passed) {
      run.text += fmt::format("\n✓ {} is done.\n", exercise.label());
    } else {
      run.text += fmt::format("\nEdit {} and run `attn check {}` again. Stuck? `attn hint {}`.\n",
                              fs::relative(exercise.source(), tree).string(), exercise.lesson,
                              exercise.lesson);
    }
  } else {
    int passed = 0;
    for (const LessonOutcome& outcome : outcomes)
      passed += outcome.passed() ? 1 : 0;
    run.text +=
        fmt::format("\n{} of {} exercises pass their visible tests.\n", passed, outcomes.size());
  }
  run.text += exercise_progress_text(tree, all);
  return run;
}

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
  sub->add_option("--submissions", o->submissions,
                  "grade a folder holding one folder of files per student, each as --submission "
                  "grades it; --reports DIR gets grades.csv and each student's report")
      ->check(not_empty_validator("--submissions", "submissions"))
      ->option_text("DIR");
  sub->add_option("--reports", o->reports,
                  "with --submissions: the new folder for grades.csv (student, lesson, score, "
                  "max) and each student's report")
      ->check(not_empty_validator("--reports", "grades"))
      ->option_text("DIR");
  declare_output(*sub, "--reports", [o] {
    std::error_code ec;
    if (fs::exists(o->reports, ec) &&
        !(fs::is_directory(o->reports, ec) && fs::is_empty(o->reports, ec))) {
      throw Error(ErrorKind::bad_value, "grade",
                  fmt::format("'{}' already exists: give a new folder (nothing is overwritten)",
                              printable(o->reports)))
          .about("reports");
    }
  });
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
  auto every = std::make_shared<bool>(false);
  CLI::App* check = app.add_subcommand(
      "check",
      "run one lesson's exercise tests (default: the lesson folder you are in, else the next "
      "unfinished one)");
  check->add_option("lesson", *lesson, "the lesson, e.g. softmax or 03")->option_text("LESSON");
  add_grade_options(*check, *c);
  check->add_flag("--all", *every, "run every exercise's visible tests");
  door_callback(*check, [c, lesson, every, &context] {
    if (*every && !lesson->empty()) {
      throw Error(ErrorKind::bad_value, "check",
                  fmt::format("give a lesson or --all, not both: `attn check {}` runs one lesson, "
                              "`attn check --all` every one",
                              printable(*lesson)))
          .about("all");
    }
    const fs::path tree = find_tree(c->dir);
    const std::vector<Exercise> all = find_exercises(tree);
    refresh_compile_commands(tree, all);
    std::vector<Exercise> chosen;
    if (*every) {
      chosen = all;
    } else if (!lesson->empty()) {
      chosen.push_back(exercise_named(all, *lesson, ""));
    } else if (const Exercise* next = current_exercise(tree, all); next != nullptr) {
      chosen.push_back(*next);
    } else {
      std::fputs(exercise_progress_text(tree, all).c_str(), stdout);
      context.exit_code = kExitOk;
      return;
    }
    const CheckRun run =
        check_exercises(tree, all, chosen, {c->timeout, c->full_errors, color_on(c->color)});
    std::fputs(run.text.c_str(), stdout);
    context.exit_code = run.passed ? kExitOk : kExitCheckFailed;
  });

  auto h = std::make_shared<std::string>();
  auto hint_dir = std::make_shared<std::string>();
  auto stage = std::make_shared<int>(0);
  CLI::App* hint =
      app.add_subcommand("hint", "a hint for a lesson's exercise, one stage at a time");
  hint->add_option("lesson", *h,
                   "the lesson, e.g. softmax (default: the lesson folder you are in, else the "
                   "next unfinished one)")
      ->option_text("LESSON");
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
    const Exercise* next = h->empty() ? current_exercise(tree, all) : &exercise_named(all, *h, "");
    if (next == nullptr) {
      std::fputs(
          (exercise_progress_text(tree, all) + "`attn hint LESSON` shows a lesson's hints again.\n")
              .c_str(),
          stdout);
      context.exit_code = kExitOk;
      return;
    }
    std::fputs(hint_text(tree, *next, *stage).c_str(), stdout);
    context.exit_code = kExitOk;
  });

  auto reset_lesson = std::make_shared<std::string>();
  auto reset_dir = std::make_shared<std::string>();
  auto reset_yes = std::make_shared<bool>(false);
  CLI::App* reset = app.add_subcommand(
      "reset", "put a lesson's exercise back to its stub (your version is kept in .attn/reset)");
  reset->add_option("lesson", *reset_lesson, "the lesson, e.g. softmax or 03")
      ->required()
      ->option_text("LESSON");
  reset->add_flag("--yes", *reset_yes, "do not ask before replacing the file");
  reset
      ->add_option("--dir", *reset_dir,
                   "the assignment tree (default: the one around the working directory)")
      ->check(not_empty_validator("--dir", "student-tree"))
      ->option_text("DIR");
  door_callback(*reset, [reset_lesson, reset_dir, reset_yes, &context] {
    const fs::path tree = find_tree(*reset_dir);
    const std::vector<Exercise> all = find_exercises(tree);
    const Exercise& exercise = exercise_named(all, *reset_lesson, "");
    const std::string shown = fs::relative(exercise.source(), tree).string();
    const std::string stub = stub_source(exercise);
    {
      std::error_code ec;
      if (fs::is_regular_file(fs::symlink_status(exercise.source(), ec))) {
        const std::optional<std::string> now = read_regular_file(
            ::open(exercise.source().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC),
            std::size_t{1} << 20);
        if (now && *now == stub) {
          std::fputs(fmt::format("{} is the stub already: nothing to reset.\n", shown).c_str(),
                     stdout);
          context.exit_code = kExitOk;
          return;
        }
      }
    }
    if (!*reset_yes) {
      if (isatty(STDIN_FILENO) == 0) {
        throw Error(ErrorKind::bad_value, "reset",
                    fmt::format("attn reset asks before it replaces {}: run it in a terminal and "
                                "answer y, or give --yes",
                                shown))
            .about("yes");
      }
      std::fprintf(stderr, "Put the stub back in %s? Your version is kept in .attn/reset/. [y/N] ",
                   shown.c_str());
      std::fflush(stderr);
      char answer[16] = {};
      if (std::fgets(answer, sizeof answer, stdin) == nullptr ||
          (answer[0] != 'y' && answer[0] != 'Y')) {
        std::fputs("Nothing changed.\n", stdout);
        context.exit_code = kExitOk;
        return;
      }
    }
    const fs::path kept = reset_exercise(tree, exercise);
    std::string out = fmt::format("{} is the stub again", shown);
    out += kept.empty() ? ".\n" : fmt::format("; your version is in {}.\n", kept.string());
    out += fmt::format("Start again with `attn check {}`.\n", exercise.lesson);
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
                  "tree, `--grader DIR` the autograder; `attn assignments add FOLDER` adds "
                  "cases and exercises");
    }
  });
  auto add_dir = std::make_shared<std::string>();
  CLI::App* add = assignments->add_subcommand(
      "add",
      "add test cases (data: arguments and expected values) and new exercises from a folder to "
      "this attn's course, once the solutions pass them (no rebuild)");
  add->add_option("folder", *add_dir,
                  "the folder: lessons/NN-name/cases/*.json, and a new exercise's "
                  "lessons/NN-name/ (docs/instructor-guide.md)")
      ->required()
      ->check(not_empty_validator("FOLDER", "my-course"))
      ->option_text("FOLDER");
  door_callback(*add, [add_dir, &context] {
    const AdditionReport report = add_to_course(*add_dir, progress_line);
    std::string out = "added to this attn's course:\n";
    for (const std::string& line : report.lines)
      out += "  " + line + "\n";
    for (const std::string& warning : report.warnings)
      out += "warning: " + warning + "\n";
    out += report.next + "\n";
    std::fputs(out.c_str(), stdout);
    context.exit_code = kExitOk;
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
  auto release_lessons = std::make_shared<std::vector<std::string>>();
  release
      ->add_option("--lesson", *release_lessons,
                   "release only this lesson's exercise, with its points (repeatable; default: "
                   "every exercise): one assignment's tree or bundle")
      ->check(not_empty_validator("--lesson", "softmax"))
      ->option_text("NAME");
  release
      ->add_option("--dir", *source_dir,
                   "the tree to release as the student tree (default: attn's own course)")
      ->check(not_empty_validator("--dir", "course-tree"))
      ->option_text("DIR");
  door_callback(*release, [out_dir, grader_dir, source_dir, release_lessons, &context] {
    if (out_dir->empty() && grader_dir->empty()) {
      throw Error(ErrorKind::bad_value, "assignments",
                  "give <out> DIR for the student tree, <grader> DIR for the grader bundle, or "
                  "both");
    }
    const fs::path tree = source_dir->empty() ? course_tree() : find_tree(*source_dir);
    // The stems of the lessons asked for, checked against both trees before anything is written.
    const auto stems = [&](const fs::path& from) {
      std::vector<std::string> chosen;
      for (const Exercise& exercise : chosen_exercises(find_exercises(from), *release_lessons))
        chosen.push_back(exercise.stem);
      return release_lessons->empty() ? std::vector<std::string>{} : chosen;
    };
    const std::vector<std::string> only = stems(tree);
    const std::vector<std::string> only_graded = grader_dir->empty() ? only : stems(course_tree());
    std::string out;
    if (!out_dir->empty()) {
      const ReleaseSummary summary = release_tree(tree, *out_dir, false, {}, only);
      // A student's attn carries its course with stubs already: nothing is replaced.
      const std::string stubs = summary.stubs > 0
                                    ? fmt::format("{} solutions replaced by stubs", summary.stubs)
                                    : std::string("each with stubs to fill in");
      out += fmt::format(
          "wrote {}: {} exercise{}, {}, {} tests worth {} points (hidden tests left "
          "out)\n",
          *out_dir, summary.exercises, summary.exercises == 1 ? "" : "s", stubs,
          summary.visible_tests, number_string(summary.visible_points));
      out += fmt::format("Students start with `cd {} && attn check`.\n", *out_dir);
    }
    if (!grader_dir->empty()) {
      const ReleaseSummary summary = release_grader(course_tree(), *grader_dir, only_graded);
      out += fmt::format(
          "wrote {}: attn, the checks and expected values, {} exercise{} with stubs for "
          "solutions, {} tests worth {} points ({} hidden)\n",
          *grader_dir, summary.exercises, summary.exercises == 1 ? "" : "s",
          summary.visible_tests + summary.hidden_tests,
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
