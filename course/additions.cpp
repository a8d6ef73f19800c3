#include "additions.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "assignments.hpp"
#include "base/error.hpp"
#include "data_cases.hpp"
#include "diagnostics.hpp"
#include "grader.hpp"
#include "io/file_io.hpp"
#include "process.hpp"
#include "report.hpp"
#include "toolchain.hpp"

namespace attn::course {

namespace fs = std::filesystem;

namespace {

const char* const kAddedMark = ".attn-added";  // in an exercise folder that `add` made

Error add_error(const std::string& what) {
  return Error(ErrorKind::bad_value, "assignments", what);
}

std::string read_bytes(const fs::path& path) {
  const std::vector<unsigned char> bytes = read_file(path.string(), path.filename().string());
  return std::string(bytes.begin(), bytes.end());
}

// Files written into share/attn, each remembered with what was there before, so that a failure
// puts every one back: a file replaced or removed is first renamed aside (its mode, or the link
// it was, kept), and renamed back on undo.
class Installation {
 public:
  ~Installation() {
    if (!kept_) undo();
  }
  void write(const fs::path& path, const std::string& bytes) {
    std::error_code ec;
    for (fs::path dir = path.parent_path(); !fs::exists(dir, ec); dir = dir.parent_path())
      made_.push_back(dir);
    fs::create_directories(path.parent_path(), ec);
    set_aside(path);
    const fs::path temporary =
        path.parent_path() / fmt::format(".{}.{}", path.filename().string(), getpid());
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << bytes;
    out.close();
    if (!out || (fs::rename(temporary, path, ec), ec)) {
      fs::remove(temporary, ec);
      throw cannot("write", path, ec);
    }
  }
  void remove(const fs::path& path) { set_aside(path); }
  void keep() {
    kept_ = true;
    std::error_code ec;
    for (const Change& change : changes_)
      if (!change.aside.empty()) fs::remove(change.aside, ec);
  }
  void undo() {
    std::error_code ec;
    for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) {
      fs::remove(it->path, ec);
      if (!it->aside.empty()) fs::rename(it->aside, it->path, ec);
    }
    for (auto it = made_.rbegin(); it != made_.rend(); ++it)
      fs::remove_all(*it, ec);
  }

 private:
  struct Change {
    fs::path path;
    fs::path aside;  // where what was at `path` waits; empty when there was nothing
  };
  static Error cannot(const char* what, const fs::path& path, const std::error_code& ec) {
    return Error(ErrorKind::write_failed, "assignments",
                 fmt::format("cannot {} {} ({}): add with the user that installed attn", what,
                             path.string(), ec ? ec.message() : "write failed"));
  }
  // The first time `path` is touched: what is there (a file or a link) is renamed aside.
  void set_aside(const fs::path& path) {
    if (std::any_of(changes_.begin(), changes_.end(),
                    [&](const Change& c) { return c.path == path; })) {
      std::error_code ec;
      if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) fs::remove(path, ec);
      return;
    }
    Change change{path, {}};
    std::error_code ec;
    if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
      change.aside =
          path.parent_path() / fmt::format(".{}.attn-undo.{}", path.filename().string(), getpid());
      fs::rename(path, change.aside, ec);
      if (ec) throw cannot("replace", path, ec);
    }
    changes_.push_back(std::move(change));
  }

  std::vector<Change> changes_;
  std::vector<fs::path> made_;
  bool kept_ = false;
};

// Each installed cases/ folder lists the files attn wrote into it (kWritten): adding a lesson
// again removes those the folder added now no longer holds (or holds hidden, for the student's
// course), and nothing else.
constexpr const char* kWritten = ".attn-written";

// Makes `cases` (an installed lesson's cases/ folder) ready for the files `kept`: the ones an
// earlier add wrote that `kept` does not name are removed, and the list is `kept`. Returns how
// many cases (.json files) went. attn::Error when `cases` is a link.
int replace_cases(Installation& install, const fs::path& cases,
                  const std::vector<std::string>& kept) {
  std::error_code ec;
  const fs::file_type type = fs::symlink_status(cases, ec).type();
  if (type == fs::file_type::symlink ||
      (type != fs::file_type::not_found && type != fs::file_type::directory)) {
    throw add_error(
        fmt::format("{} is not a folder attn made (a link or a file): remove it, "
                    "then add again",
                    printable(cases.string())));
  }
  std::vector<std::string> written;
  if (fs::symlink_status(cases / kWritten, ec).type() == fs::file_type::regular) {
    std::istringstream list(read_bytes(cases / kWritten));
    for (std::string name; std::getline(list, name);)
      if (!name.empty() && name.find('/') == std::string::npos && name[0] != '.')
        written.push_back(name);
  }
  int removed = 0;
  for (const std::string& name : written) {
    if (std::find(kept.begin(), kept.end(), name) != kept.end()) continue;
    if (fs::symlink_status(cases / name, ec).type() != fs::file_type::regular) continue;
    install.remove(cases / name);
    removed += fs::path(name).extension() == ".json" ? 1 : 0;
  }
  if (!kept.empty() || !written.empty()) {
    std::string list;
    for (const std::string& name : kept)
      list += name + "\n";
    install.write(cases / kWritten, list);
  }
  return removed;
}

std::string removed_text(int removed) {
  if (removed == 0) return "";
  return fmt::format("; {} earlier case{} removed", removed, removed == 1 ? "" : "s");
}

// The files of `cases` that a course gets: every case, or the visible ones, with their arrays.
std::vector<std::string> case_files(const std::vector<DataCase>& cases, bool visible_only) {
  std::vector<std::string> files;
  for (const DataCase& c : cases) {
    if (visible_only && c.hidden) continue;
    files.push_back(c.file.filename().string());
    files.insert(files.end(), c.npy_files.begin(), c.npy_files.end());
  }
  return files;
}

// The core functions `source` (the solution of a new exercise) calls: compiled as attn grades,
// symbols read with nm, the exercise's own and the helpers left out (grader.cpp's check).
std::string core_calls(const Toolchain& tool, const std::string& file, const std::string& source) {
  const fs::path dir = make_work_folder();
  std::string list;
  std::string problem;
  {
    std::ofstream(dir / file, std::ios::binary) << source;
    std::vector<std::string> argv = {tool.compiler};
    argv.insert(argv.end(), tool.flags.begin(), tool.flags.end());
    argv.insert(argv.end(), {"-std=c++20", "-O1", "-fdiagnostics-color=never",
                             "-I" + tool.include().string(), "-c", file, "-o", "solution.o"});
    ProcessOptions options;
    options.timeout_seconds = 600;
    options.working_dir = dir.string();
    const ProcessResult compiled = run_process(argv, options);
    if (!compiled.ok()) {
      problem = trim_compiler_messages(compiled.err + compiled.out, file).text;
    } else {
      const ProcessResult symbols = run_process({"nm", "-C", "-u", "solution.o"}, options);
      std::istringstream in(symbols.out);
      for (std::string line; std::getline(in, line);) {
        const std::size_t at = line.find("U attn::");
        if (at == std::string::npos) continue;
        const std::string signature = line.substr(at + 2);
        if (!signature.starts_with("attn::exercise::")) list += signature + "\n";
      }
    }
  }
  remove_work_folder(dir);
  if (!problem.empty()) throw add_error(fmt::format("{} does not compile:\n{}", file, problem));
  return list;
}

// What failed, on one line: the compiler's first error, or each failed test's name and the first
// line of its evidence.
std::string failures(const LessonOutcome& outcome) {
  const auto first_line = [](const std::string& text, const std::string& marker) {
    std::size_t at = text.find(marker);
    at = at == std::string::npos ? 0 : text.rfind('\n', at) + 1;
    return text.substr(at, text.find('\n', at) - at);
  };
  if (!outcome.built) return "it does not compile: " + first_line(outcome.build_log, "error:");
  std::string text;
  for (const TestOutcome& test : outcome.tests) {
    if (test.status == TestStatus::passed) continue;
    text += fmt::format("{}'{}': {}", text.empty() ? "" : "; ", test.info.name,
                        first_line(test.output, ""));
  }
  return text;
}

// A student tree of one exercise holding `source`, graded by every test, hidden ones too.
LessonOutcome grade_source(const Exercise& exercise, const std::string& source) {
  const fs::path tree = make_work_folder();
  LessonOutcome outcome;
  try {
    Exercise copy = exercise;
    copy.folder = tree / "lessons" / exercise.folder.filename();
    fs::create_directories(copy.folder);
    std::ofstream(copy.source(), std::ios::binary) << source;
    GradeOptions options;
    options.hidden_tests = true;
    outcome = grade_exercise(copy, options);
  } catch (...) {
    remove_work_folder(tree);
    throw;
  }
  remove_work_folder(tree);
  return outcome;
}

// A student's install takes what a released tree holds of the exercises and cases its course
// lacks: the stub, the header, the hints, the visible cases and the list of the core's functions
// the exercise may call. Nothing here decides a grade (the instructor's attn does), so nothing is
// checked against a solution.
AdditionReport add_to_student_course(const fs::path& tree) {
  const Toolchain& tool = toolchain();
  std::error_code ec;
  if (!fs::is_regular_file(tree / "assignments.json", ec)) {
    throw add_error(fmt::format(
        "'{}' is not a released tree (no assignments.json): a student's attn takes the course's "
        "new exercises from the tree `attn assignments release --out` wrote; cases and exercises "
        "of your own go to an instructor's attn",
        printable(tree.string())));
  }
  const fs::path student = tool.student_course();
  const std::vector<Exercise> existing = find_exercises(student);
  AdditionReport report;
  const HeldSignals held;  // a signal stops the add after what it wrote is put back
  Installation install;
  for (const Exercise& exercise : find_exercises(tree)) {
    const fs::path to = student / "lessons" / exercise.folder.filename();
    const bool known = std::any_of(existing.begin(), existing.end(), [&](const Exercise& e) {
      return e.folder.filename() == exercise.folder.filename();
    });
    int cases = 0;
    if (!known) {
      const fs::path calls = exercise.folder / (exercise.stem + ".core-calls");
      if (!fs::is_regular_file(calls, ec) || !fs::is_regular_file(exercise.header(), ec) ||
          !fs::is_regular_file(exercise.source(), ec)) {
        throw add_error(
            fmt::format("{}: a new exercise needs {}.cpp, {}.hpp and {}.core-calls, "
                        "as `attn assignments release` writes them",
                        exercise.label(), exercise.stem, exercise.stem, exercise.stem));
      }
      const std::string header = read_bytes(exercise.header());
      install.write(tool.include() / exercise.header().filename(), header);
      install.write(to / exercise.header().filename(), header);
      install.write(
          to / exercise.source().filename(),
          strip_solutions(read_bytes(exercise.source()), exercise.source().filename().string()));
      for (const char* extra : {"hints.md", "lesson.md"}) {
        if (fs::is_regular_file(exercise.folder / extra, ec))
          install.write(to / extra, read_bytes(exercise.folder / extra));
      }
      install.write(tool.core_calls(exercise.stem), read_bytes(calls));
    }
    const std::vector<DataCase> tree_cases = read_data_cases(exercise.folder);
    const int removed =
        replace_cases(install, to / "cases", case_files(tree_cases, /*visible_only=*/true));
    for (const DataCase& c : tree_cases) {
      if (c.hidden) continue;
      const fs::path file = to / "cases" / c.file.filename();
      const std::string bytes = read_bytes(c.file);
      if (fs::is_regular_file(file, ec) && read_bytes(file) == bytes) continue;
      install.write(file, bytes);
      for (const std::string& npy : c.npy_files)
        install.write(to / "cases" / npy, read_bytes(c.file.parent_path() / npy));
      ++cases;
    }
    if (!known || cases > 0 || removed > 0) {
      report.lines.push_back(fmt::format("{}: {}{} case{}{}", exercise.label(),
                                         known ? "" : "a new exercise with ", cases,
                                         cases == 1 ? "" : "s", removed_text(removed)));
    }
  }
  if (report.lines.empty()) report.lines.push_back("nothing new: this attn has every exercise");
  report.next = "Run their visible tests with `attn check LESSON` in your tree.";
  if (ending_signal_held()) throw add_error("stopped by a signal: nothing was added");
  install.keep();
  return report;
}

}  // namespace

AdditionReport add_to_course(const fs::path& folder,
                             const std::function<void(const std::string&)>& progress) {
  const Toolchain& tool = toolchain();
  if (!tool.has_grader()) return add_to_student_course(folder);
  std::error_code ec;
  if (!fs::is_directory(folder / "lessons", ec)) {
    throw add_error(fmt::format(
        "'{}' holds no lessons/ folder: put cases in lessons/NN-name/cases/ and a new exercise in "
        "lessons/NN-name/ (docs/instructor-guide.md)",
        printable(folder.string())));
  }
  const fs::path course = tool.instructor_course(), student = tool.student_course();
  const std::vector<Exercise> existing = find_exercises(course);
  std::vector<fs::path> lessons;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder / "lessons", ec)) {
    if (entry.path().filename().string().starts_with(".")) continue;
    if (!entry.is_directory(ec) || !exercise_at(entry.path())) {
      throw add_error(
          fmt::format("lessons/{} is not a lesson folder: name it NN-name, e.g. "
                      "lessons/21-gelu",
                      printable(entry.path().filename().string())));
    }
    lessons.push_back(entry.path());
  }
  std::sort(lessons.begin(), lessons.end());
  if (lessons.empty()) throw add_error("lessons/ holds no lesson folder: nothing to add");

  AdditionReport report;
  const HeldSignals held;  // a signal stops the add after what it wrote is put back
  Installation install;
  struct Touched {
    Exercise exercise;  // in the instructor's course
    std::string solution;
    std::vector<std::string> data_names;
  };
  std::vector<Touched> touched;
  for (const fs::path& from : lessons) {
    const std::string name = from.filename().string();
    Exercise exercise = *exercise_at(course / "lessons" / name);
    const std::vector<DataCase> cases = read_data_cases(from);
    const auto same = std::find_if(existing.begin(), existing.end(),
                                   [&](const Exercise& e) { return e.folder.filename() == name; });
    const bool added_before = same != existing.end() && fs::exists(same->folder / kAddedMark, ec);
    const bool new_exercise = same == existing.end() || added_before;
    for (const Exercise& other : existing) {
      if (other.number == exercise.number && other.folder.filename() != name) {
        throw add_error(
            fmt::format("lessons/{}: lesson {:02} is {} already; give the new exercise "
                        "a number of its own",
                        name, exercise.number, other.label()));
      }
      if (other.lesson == exercise.lesson && other.folder.filename() != name) {
        throw add_error(
            fmt::format("lessons/{}: {} is named {} already; give the new exercise a name of "
                        "its own",
                        name, other.label(), exercise.lesson));
      }
    }
    std::string solution;
    if (new_exercise) {
      for (const std::string& file :
           {exercise.stem + ".cpp", exercise.stem + ".hpp", std::string("hints.md")}) {
        if (!fs::is_regular_file(from / file, ec)) {
          throw add_error(
              fmt::format("lessons/{} lacks {}: a new exercise needs {}.cpp (with its "
                          "solution), {}.hpp and hints.md",
                          name, file, exercise.stem, exercise.stem));
        }
      }
      solution = read_bytes(from / (exercise.stem + ".cpp"));
      const std::string stub = strip_solutions(solution, exercise.stem + ".cpp");
      if (stub == solution) {
        throw add_error(
            fmt::format("lessons/{}/{}.cpp has no // BEGIN SOLUTION ... // END "
                        "SOLUTION block: mark what the student writes",
                        name, exercise.stem));
      }
      const std::string hints = read_bytes(from / "hints.md");
      if (hints.find("## ") == std::string::npos) {
        throw add_error(
            fmt::format("lessons/{}/hints.md has no hint: start each with a line "
                        "'## 1', '## 2', ...",
                        name));
      }
      if (std::none_of(cases.begin(), cases.end(), [](const DataCase& c) { return !c.hidden; })) {
        throw add_error(
            fmt::format("lessons/{}/cases/ has no visible case: a new exercise needs "
                        "at least one that students run with attn check",
                        name));
      }
      const std::string header = read_bytes(from / (exercise.stem + ".hpp"));
      install.write(tool.include() / (exercise.stem + ".hpp"), header);
      for (const fs::path& root : {course, student}) {
        const fs::path to = root / "lessons" / name;
        install.write(to / (exercise.stem + ".cpp"), root == course ? solution : stub);
        install.write(to / (exercise.stem + ".hpp"), header);
        install.write(to / "hints.md", hints);
        if (fs::is_regular_file(from / "lesson.md", ec))
          install.write(to / "lesson.md", read_bytes(from / "lesson.md"));
      }
      install.write(exercise.folder / kAddedMark, "");
      install.write(tool.core_calls(exercise.stem),
                    core_calls(tool, exercise.stem + ".cpp", solution));
    } else {
      for (const fs::directory_entry& entry : fs::directory_iterator(from, ec)) {
        const std::string file = entry.path().filename().string();
        if (file != "cases" && !file.starts_with(".")) {  // .DS_Store and the like: skipped
          throw add_error(
              fmt::format("lessons/{}/{}: {} is one of attn's exercises, which takes "
                          "cases/ alone",
                          name, printable(entry.path().filename().string()), same->label()));
        }
      }
      if (cases.empty()) throw add_error(fmt::format("lessons/{}/cases/ holds no case", name));
      solution = read_bytes(same->source());
    }
    double points = 0.0, hidden_points = 0.0;
    int hidden = 0;
    Touched entry{exercise, solution, {}};
    int removed = 0;
    for (const fs::path& root : {course, student}) {
      const int gone = replace_cases(install, root / "lessons" / name / "cases",
                                     case_files(cases, /*visible_only=*/root == student));
      if (root == course) removed = gone;
    }
    for (const DataCase& c : cases) {
      (c.hidden ? hidden_points : points) += c.points;
      hidden += c.hidden ? 1 : 0;
      entry.data_names.push_back(c.name);
      for (const fs::path& root : {course, student}) {
        if (root == student && c.hidden) continue;
        const fs::path to = root / "lessons" / name / "cases";
        install.write(to / c.file.filename(), read_bytes(c.file));
        for (const std::string& npy : c.npy_files)
          install.write(to / npy, read_bytes(c.file.parent_path() / npy));
      }
    }
    report.lines.push_back(fmt::format(
        "{:02} {}: {}{} case{} ({} point{} visible, {} hidden in {} case{}){}", exercise.number,
        exercise.lesson, new_exercise ? "a new exercise with " : "", cases.size(),
        cases.size() == 1 ? "" : "s", number_string(points), points == 1.0 ? "" : "s",
        number_string(hidden_points), hidden, hidden == 1 ? "" : "s", removed_text(removed)));
    touched.push_back(std::move(entry));
  }

  // The solutions must pass every test, the cases with the ones there before.
  if (progress) progress("grading the solutions by every case");
  for (const Touched& t : touched) {
    if (strip_solutions(t.solution, t.exercise.stem + ".cpp") == t.solution) {
      report.warnings.push_back(fmt::format(
          "this attn's course holds no solution of {} (a grader bundle's has stubs), so its new "
          "cases were not checked against one: add them with the attn you release from",
          t.exercise.label()));
      continue;
    }
    const LessonOutcome solved = grade_source(t.exercise, t.solution);
    if (ending_signal_held()) throw add_error("stopped by a signal: nothing was added");
    if (!solved.passed()) {
      throw add_error(fmt::format(
          "the solution of {} fails its tests, so nothing was added; fix the case or the "
          "solution: {}",
          t.exercise.label(), failures(solved)));
    }
    const LessonOutcome stubbed =
        grade_source(t.exercise, strip_solutions(t.solution, t.exercise.stem + ".cpp"));
    for (const TestOutcome& test : stubbed.tests) {
      if (test.status == TestStatus::passed && std::find(t.data_names.begin(), t.data_names.end(),
                                                         test.info.name) != t.data_names.end()) {
        report.warnings.push_back(
            fmt::format("{}: the stub passes '{}', so it gives points for nothing",
                        t.exercise.label(), test.info.name));
      }
    }
  }
  report.next =
      "Each solution passes every case. Release again for students and Gradescope: `attn "
      "assignments release --out DIR --grader DIR`; a student's attn takes the new exercises "
      "from the released tree with `attn assignments add TREE`.";
  if (ending_signal_held()) throw add_error("stopped by a signal: nothing was added");
  install.keep();
  return report;
}

}  // namespace attn::course
