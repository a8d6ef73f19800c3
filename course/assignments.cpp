#include "assignments.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "catalog.hpp"
#include "data_cases.hpp"
#include "io/file_io.hpp"
#include "lesson.hpp"
#include "toolchain.hpp"

namespace attn::course {

namespace fs = std::filesystem;

namespace {

const std::regex kLessonFolder(R"(^([0-9][0-9])-([a-z0-9]+(?:-[a-z0-9]+)*)$)");

std::string read_text(const fs::path& path) {
  const std::vector<unsigned char> bytes = read_file(path.string(), path.filename().string());
  return std::string(bytes.begin(), bytes.end());
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines)
    text += line + "\n";
  return text;
}

std::string trimmed(const std::string& line) {
  const auto first = line.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
}

// The function a solution block belongs to: the identifier before '(' on the nearest line above
// that starts at column 0 and is not a comment or a preprocessor line.
std::string enclosing_function(const std::vector<std::string>& lines, std::size_t begin) {
  static const std::regex name(R"(([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  for (std::size_t i = begin; i-- > 0;) {
    const std::string& line = lines[i];
    if (line.empty() || std::isspace(static_cast<unsigned char>(line[0])) ||
        line.starts_with("//") || line.starts_with("#") || line.starts_with("}")) {
      continue;
    }
    std::smatch m;
    if (std::regex_search(line, m, name)) return m[1];
    break;
  }
  return "";
}

}  // namespace

std::optional<Exercise> exercise_at(const fs::path& folder) {
  std::smatch m;
  const std::string name = folder.filename().string();
  if (!std::regex_match(name, m, kLessonFolder)) return std::nullopt;
  Exercise exercise;
  exercise.number = std::stoi(m[1]);
  exercise.lesson = m[2];
  exercise.stem = exercise.lesson;
  std::replace(exercise.stem.begin(), exercise.stem.end(), '-', '_');
  exercise.stem += "_exercise";
  exercise.folder = folder;
  return exercise;
}

bool has_tests(const fs::path& folder, const std::string& stem) {
  std::error_code ec;
  return fs::exists(folder / (stem + "_test.cpp"), ec) || fs::is_directory(folder / "cases", ec);
}

std::vector<TestCaseInfo> lesson_tests(const fs::path& folder, const std::string& stem) {
  std::vector<TestCaseInfo> tests;
  std::error_code ec;
  if (fs::exists(folder / (stem + "_test.cpp"), ec))
    tests = parse_test_cases(folder / (stem + "_test.cpp"));
  const std::optional<Exercise> exercise = exercise_at(folder);
  const std::string lesson = exercise ? exercise->lesson : folder.filename().string();
  for (const DataCase& c : read_data_cases(folder)) {
    for (const TestCaseInfo& test : tests) {
      if (test.name == c.name) {
        throw Error(ErrorKind::bad_value, "assignments",
                    fmt::format("{}: \"name\" is also a test's of {}_test.cpp: give the case a "
                                "name of its own",
                                c.file.filename().string(), stem));
      }
    }
    TestCaseInfo info;
    info.name = c.name;
    info.tags = {lesson, fmt::format("points={}", c.points)};
    if (c.hidden) info.tags.push_back(".hidden");
    info.points = c.points;
    info.hidden = c.hidden;
    info.data = c.file;
    tests.push_back(info);
  }
  return tests;
}

std::string Exercise::label() const {
  return fmt::format("{:02} {}", number, lesson);
}

fs::path course_tree() {
  const Toolchain& tool = toolchain();
  return tool.has_grader() ? tool.instructor_course() : tool.student_course();
}

bool is_assignment_tree(const fs::path& dir) {
  std::error_code ec;
  const fs::path lessons = dir / "lessons";
  if (!fs::is_directory(lessons, ec)) return false;
  for (const fs::directory_entry& entry : fs::directory_iterator(lessons, ec)) {
    std::smatch m;
    const std::string folder = entry.path().filename().string();
    if (!std::regex_match(folder, m, kLessonFolder)) continue;
    std::string stem = m[2];
    std::replace(stem.begin(), stem.end(), '-', '_');
    if (has_tests(entry.path(), stem + "_exercise")) return true;
  }
  return false;
}

fs::path find_tree(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) {
    const fs::path path(dir);
    if (!fs::exists(path, ec)) {
      throw Error(ErrorKind::bad_value, "assignments",
                  fmt::format("'{}' does not exist: give the folder of an assignment tree "
                              "(one written by `attn assignments release`)",
                              dir))
          .about("dir");
    }
    if (!fs::is_directory(path, ec)) {
      throw Error(
          ErrorKind::bad_value, "assignments",
          fmt::format("'{}' is a file, not a folder: give the folder of an assignment tree", dir))
          .about("dir");
    }
    if (!is_assignment_tree(path)) {
      throw Error(
          ErrorKind::bad_value, "assignments",
          fmt::format(
              "'{}' is not an assignment tree (no lessons/NN-name/<name>_exercise_test.cpp): "
              "give the folder written by `attn assignments release`",
              dir))
          .about("dir");
    }
    return fs::absolute(path, ec).lexically_normal();
  }
  for (fs::path at = fs::current_path(ec); !at.empty(); at = at.parent_path()) {
    if (is_assignment_tree(at)) return at;
    if (at == at.parent_path()) break;
  }
  // Never attn's own course: its progress would be written into the install, and an
  // instructor's attn would grade its own solutions.
  throw Error(ErrorKind::bad_value, "assignments",
              "not inside an assignment tree: cd into the folder `attn assignments release "
              "--out DIR` wrote (it holds lessons/ and assignments.json), or give --dir DIR");
}

std::vector<Exercise> find_exercises(const fs::path& tree) {
  std::vector<Exercise> exercises;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(tree / "lessons", ec)) {
    const std::optional<Exercise> exercise = exercise_at(entry.path());
    if (exercise && entry.is_directory(ec) && has_tests(exercise->folder, exercise->stem))
      exercises.push_back(*exercise);
  }
  if (exercises.empty()) {
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("{} holds no exercises (lessons/NN-name/<name>_exercise_test.cpp)",
                            tree.string()));
  }
  std::sort(exercises.begin(), exercises.end(),
            [](const Exercise& a, const Exercise& b) { return a.number < b.number; });
  return exercises;
}

const Exercise& exercise_named(const std::vector<Exercise>& exercises, const std::string& name,
                               const std::string& what) {
  for (const Exercise& exercise : exercises) {
    if (name == exercise.lesson || name == exercise.folder.filename().string() ||
        name == fmt::format("{:02}", exercise.number) || name == std::to_string(exercise.number)) {
      return exercise;
    }
  }
  std::string names;
  for (const Exercise& exercise : exercises)
    names += (names.empty() ? "" : ", ") + exercise.lesson;
  bool is_lesson = false;
  for (const lessons::LessonInfo& info : lessons::catalog())
    is_lesson = is_lesson || info.name == name;
  if (is_lesson) {
    throw Error(ErrorKind::bad_value, "exercise_named",
                fmt::format("lesson '{}' has no exercise: the exercises are {}", name, names))
        .about(what);
  }
  throw Error(ErrorKind::bad_value, "exercise_named",
              fmt::format("unknown lesson '{}': choose one of {}", name, names))
      .about(what);
}

std::vector<TestCaseInfo> parse_test_cases(const fs::path& tests) {
  static const std::regex test_case(
      R"re(^\s*TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"\s*,\s*"((?:\[[^\]]*\])*)"\s*\)\s*\{?\s*$)re");
  static const std::regex tag(R"(\[([^\]]*)\])");
  const std::string file = tests.filename().string();
  const std::vector<std::string> lines = split_lines(read_text(tests));
  std::vector<TestCaseInfo> cases;
  bool in_hidden = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trimmed(lines[i]);
    const int number = static_cast<int>(i + 1);
    if (line == "// BEGIN HIDDEN TESTS") in_hidden = true;
    if (line == "// END HIDDEN TESTS") in_hidden = false;
    if (lines[i].find("TEST_CASE") == std::string::npos || line.starts_with("//")) continue;
    // A TEST_CASE may be wrapped over a few lines (clang-format does that to long names).
    std::string text = lines[i];
    std::smatch m;
    for (std::size_t next = i + 1;
         !std::regex_match(text, m, test_case) && text.find('{') == std::string::npos &&
         next < lines.size() && next <= i + 3;
         ++next) {
      text.append(1, ' ').append(trimmed(lines[next]));
    }
    if (!std::regex_match(text, m, test_case)) {
      throw Error(ErrorKind::bad_value, "assignments",
                  fmt::format("{}:{}: write each TEST_CASE as TEST_CASE(\"name\", "
                              "\"[lesson][points=N]\")",
                              file, number));
    }
    TestCaseInfo info;
    info.name = m[1];
    info.line = number;
    if (info.name.find_first_of(",[]\\*~\"") != std::string::npos || info.name.empty()) {
      throw Error(
          ErrorKind::bad_value, "assignments",
          fmt::format("{}:{}: test name '{}' must not be empty or contain , [ ] \\ * ~ or quotes "
                      "(Catch2 could not select it)",
                      file, number, info.name));
    }
    const std::string tags = m[2];
    bool has_points = false;
    for (auto it = std::sregex_iterator(tags.begin(), tags.end(), tag);
         it != std::sregex_iterator(); ++it) {
      const std::string t = (*it)[1];
      info.tags.push_back(t);
      if (t == ".hidden") info.hidden = true;
      if (t.starts_with("points=")) {
        try {
          std::size_t used = 0;
          info.points = std::stod(t.substr(7), &used);
          has_points = used == t.size() - 7 && info.points >= 0.0;
        } catch (const std::exception&) {
          has_points = false;
        }
      }
    }
    if (!has_points) {
      throw Error(ErrorKind::bad_value, "assignments",
                  fmt::format("{}:{}: test '{}' needs a [points=N] tag with N >= 0", file, number,
                              info.name));
    }
    if (info.hidden != in_hidden) {
      throw Error(
          ErrorKind::bad_value, "assignments",
          fmt::format("{}:{}: test '{}' is {} the hidden block: tag [.hidden] exactly the tests "
                      "between // BEGIN HIDDEN TESTS and // END HIDDEN TESTS",
                      file, number, info.name, in_hidden ? "inside" : "outside"));
    }
    for (const TestCaseInfo& other : cases) {
      if (other.name == info.name) {
        throw Error(ErrorKind::bad_value, "assignments",
                    fmt::format("{}:{}: test name '{}' is used twice", file, number, info.name));
      }
    }
    cases.push_back(info);
  }
  if (in_hidden)
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("{}: // BEGIN HIDDEN TESTS has no // END HIDDEN TESTS", file));
  return cases;
}

namespace {

// A line `const double name = value;  // prediction` with the value replaced by std::nan(""):
// the student writes their own prediction there. Other lines are returned as they are.
std::string released_prediction(const std::string& line) {
  const std::size_t equals = line.find(" = ");
  const std::size_t end = line.rfind(";  // prediction");
  if (equals == std::string::npos || end == std::string::npos || end < equals ||
      !trimmed(line).ends_with("// prediction")) {
    return line;
  }
  return line.substr(0, equals) + " = std::nan(\"\")" + line.substr(end);
}

}  // namespace

std::string strip_solutions(const std::string& text, const std::string& file) {
  const std::vector<std::string> lines = split_lines(text);
  std::vector<std::string> out;
  std::size_t begin = 0;
  bool inside = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trimmed(lines[i]);
    if (line == "// BEGIN SOLUTION") {
      if (inside)
        throw Error(
            ErrorKind::bad_value, "assignments",
            fmt::format("{}:{}: BEGIN SOLUTION inside another solution block", file, i + 1));
      inside = true;
      begin = i;
      const std::string function = enclosing_function(lines, i);
      if (function.empty()) {
        throw Error(
            ErrorKind::bad_value, "assignments",
            fmt::format("{}:{}: no function signature above this solution block", file, i + 1));
      }
      const std::string indent = lines[i].substr(0, lines[i].find('/'));
      out.push_back(
          fmt::format("{}throw std::logic_error(\"not implemented: {}\");", indent, function));
      continue;
    }
    if (line == "// END SOLUTION") {
      if (!inside)
        throw Error(ErrorKind::bad_value, "assignments",
                    fmt::format("{}:{}: END SOLUTION without BEGIN SOLUTION", file, i + 1));
      inside = false;
      continue;
    }
    if (!inside) out.push_back(released_prediction(lines[i]));
  }
  if (inside)
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("{}:{}: BEGIN SOLUTION has no END SOLUTION", file, begin + 1));
  return join_lines(out);
}

std::string strip_hidden_tests(const std::string& text, const std::string& file) {
  const std::vector<std::string> lines = split_lines(text);
  std::vector<std::string> out;
  bool inside = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trimmed(lines[i]);
    if (line == "// BEGIN HIDDEN TESTS") {
      if (inside)
        throw Error(ErrorKind::bad_value, "assignments",
                    fmt::format("{}:{}: nested BEGIN HIDDEN TESTS", file, i + 1));
      inside = true;
      continue;
    }
    if (line == "// END HIDDEN TESTS") {
      if (!inside)
        throw Error(ErrorKind::bad_value, "assignments",
                    fmt::format("{}:{}: END HIDDEN TESTS without BEGIN", file, i + 1));
      inside = false;
      continue;
    }
    if (!inside) out.push_back(lines[i]);
  }
  if (inside)
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("{}: BEGIN HIDDEN TESTS has no END HIDDEN TESTS", file));
  while (!out.empty() && trimmed(out.back()).empty())
    out.pop_back();
  return join_lines(out);
}

namespace {

// `out` may be written: new, or an empty folder, inside an existing folder.
void check_new_folder(const fs::path& out, const char* option) {
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec))) {
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("'{}' already exists: give a new folder (nothing is overwritten)",
                            out.string()))
        .about(option);
  }
  const fs::path parent = fs::absolute(out, ec).parent_path();
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec)) {
    const fs::path shown = out.parent_path().empty() ? parent : out.parent_path();
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("'{}' is a file, not a folder: give <{}> a path inside a folder",
                            printable(shown.string()), option))
        .about(option);
  }
  if (!fs::is_directory(parent, ec)) {
    throw Error(
        ErrorKind::bad_value, "assignments",
        fmt::format("'{}' does not exist: create it first, or give <{}> inside an existing folder",
                    parent.string(), option))
        .about(option);
  }
}

}  // namespace

ReleaseSummary release_tree(const fs::path& tree, const fs::path& out, bool keep_hidden,
                            const fs::path& guide_file, const std::vector<std::string>& only) {
  std::error_code ec;
  check_new_folder(out, "out");
  std::vector<Exercise> exercises;
  for (const Exercise& exercise : find_exercises(tree)) {
    if (only.empty() || std::find(only.begin(), only.end(), exercise.stem) != only.end())
      exercises.push_back(exercise);
  }
  const fs::path target = fs::absolute(out, ec).lexically_normal();
  std::vector<Exercise> released;  // the same exercises in the tree being written
  ReleaseSummary summary;
  // Everything is made in memory first, so that a bad exercise leaves nothing on disk.
  std::vector<std::pair<fs::path, std::string>> files;
  nlohmann::json lessons = nlohmann::json::array();
  for (const Exercise& exercise : exercises) {
    const fs::path folder = fs::path("lessons") / exercise.folder.filename();
    const std::vector<TestCaseInfo> cases = lesson_tests(exercise.folder, exercise.stem);
    double visible = 0.0, hidden = 0.0;
    int hidden_count = 0;
    for (const TestCaseInfo& info : cases) {
      hidden_count += info.hidden ? 1 : 0;
      (info.hidden ? hidden : visible) += info.points;
      (info.hidden ? summary.hidden_tests : summary.visible_tests) += 1;
    }
    summary.visible_points += visible;
    summary.hidden_points += hidden;
    const std::string source = read_text(exercise.source());
    const std::string stubbed = strip_solutions(source, exercise.source().filename().string());
    std::size_t blocks = 0;
    for (std::size_t at = source.find("// BEGIN SOLUTION"); at != std::string::npos;
         at = source.find("// BEGIN SOLUTION", at + 1)) {
      ++blocks;
    }
    summary.stubs += static_cast<int>(blocks);
    files.emplace_back(folder / exercise.source().filename(), stubbed);
    files.emplace_back(folder / exercise.header().filename(), read_text(exercise.header()));
    if (fs::exists(exercise.tests(), ec)) {
      const std::string tests = read_text(exercise.tests());
      files.emplace_back(
          folder / exercise.tests().filename(),
          keep_hidden ? tests : strip_hidden_tests(tests, exercise.tests().filename().string()));
    }
    // The data cases a student may see (all of them in the grader's copy), with their arrays.
    for (const DataCase& c : read_data_cases(exercise.folder)) {
      if (c.hidden && !keep_hidden) continue;
      files.emplace_back(folder / "cases" / c.file.filename(), read_text(c.file));
      for (const std::string& npy : c.npy_files)
        files.emplace_back(folder / "cases" / npy, read_text(c.file.parent_path() / npy));
    }
    for (const char* extra : {"hints.md", "lesson.md"}) {
      if (fs::exists(exercise.folder / extra, ec))
        files.emplace_back(folder / extra, read_text(exercise.folder / extra));
    }
    // An exercise `attn assignments add` made: the core's functions it may call, so that a
    // student's attn can take it from this tree.
    if (fs::exists(exercise.folder / ".attn-added", ec) &&
        fs::is_regular_file(toolchain().core_calls(exercise.stem), ec)) {
      files.emplace_back(folder / (exercise.stem + ".core-calls"),
                         read_text(toolchain().core_calls(exercise.stem)));
    }
    released.push_back(exercise);
    released.back().folder = target / folder;
    lessons.push_back({{"number", exercise.number},
                       {"lesson", exercise.lesson},
                       {"folder", folder.string()},
                       {"edit", (folder / exercise.source().filename()).string()},
                       {"points", visible},
                       {"hidden_points", keep_hidden ? hidden : 0.0},
                       {"tests", keep_hidden ? static_cast<int>(cases.size())
                                             : static_cast<int>(cases.size()) - hidden_count}});
    ++summary.exercises;
  }
  const nlohmann::json manifest = {
      {"format", "attn-assignments/1"}, {"hidden_tests", keep_hidden}, {"lessons", lessons}};
  files.emplace_back("assignments.json", manifest.dump(2) + "\n");
  files.emplace_back(".gitignore", ".attn/\ncompile_commands.json\n");
  const fs::path guide = guide_file.empty() ? toolchain().root / "student-guide.md" : guide_file;
  if (fs::exists(guide, ec)) files.emplace_back("README.md", read_text(guide));
  for (const auto& [path, text] : files) {
    if (text.find("BEGIN SOLUTION") != std::string::npos ||
        text.find("END SOLUTION") != std::string::npos) {
      throw Error(ErrorKind::bad_value, "assignments",
                  fmt::format("{} would still hold a solution marker", path.string()));
    }
  }

  files.emplace_back("compile_commands.json", compile_commands(target, released));
  write_new_folder(out, files, "out");
  if (!keep_hidden) summary.hidden_points = 0.0, summary.hidden_tests = 0;
  return summary;
}

ReleaseSummary release_grader(const fs::path& tree, const fs::path& out,
                              const std::vector<std::string>& only) {
  const Toolchain& tool = toolchain();
  if (!tool.has_grader()) {
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("this attn has no grader's part ({} is missing: a student's install): "
                            "write the bundle with an instructor's attn, built from the checkout "
                            "or installed with `cmake --install build --component grader`",
                            tool.instructor_course().string()))
        .about("grader");
  }
  check_new_folder(out, "grader");
  // What an assignment's bundle leaves out: the other exercises' probes, checks, core-call lists,
  // inputs and expected values (named for the exercise's stem, or its lesson's folder).
  std::vector<std::string> left_out;
  if (!only.empty()) {
    for (const Exercise& exercise : find_exercises(tree)) {
      if (std::find(only.begin(), only.end(), exercise.stem) != only.end()) continue;
      for (const std::string& name : {exercise.stem + "_check", exercise.stem + ".core-calls",
                                      "lib" + exercise.stem + "_probe.a",
                                      "lib" + exercise.stem + "_probe_all.a", exercise.lesson})
        left_out.push_back(name);
    }
  }
  const auto copy_kept = [&](const fs::path& from, const fs::path& to) {
    fs::create_directories(to);
    for (const fs::directory_entry& entry : fs::directory_iterator(from)) {
      const std::string name = entry.path().filename().string();
      if (name == "course" || name == "expected") continue;  // copied on their own
      if (std::find(left_out.begin(), left_out.end(), name) != left_out.end()) continue;
      fs::copy(entry.path(), to / name, fs::copy_options::recursive);
    }
  };
  std::error_code ec;
  const fs::path target = fs::absolute(out, ec).lexically_normal();
  const fs::path temporary = target.parent_path() / (target.filename().string() + ".partial");
  fs::remove_all(temporary, ec);
  try {
    const fs::path share = temporary / "share" / "attn";
    fs::create_directories(share / "grader");
    // The course as students get it, and the grader's copy with the hidden tests: the grader
    // reads the tests' names and points there; both have stubs, so no solution is on the
    // grading machine.
    release_tree(tree, share / "course", false, {}, only);
    const ReleaseSummary summary = release_tree(tree, share / "grader" / "course", true, {}, only);
    fs::copy(tool.include(), share / "include", fs::copy_options::recursive);
    fs::copy(tool.root / "autograder", share / "autograder", fs::copy_options::recursive);
    for (const char* part : {"lib", "inputs", "checks"})
      copy_kept(tool.root / part, share / part);
    copy_kept(tool.grader(), share / "grader");
    if (fs::exists(tool.grader() / "expected", ec))
      copy_kept(tool.grader() / "expected", share / "grader" / "expected");
    if (fs::exists(tool.checks() / "expected", ec))
      copy_kept(tool.checks() / "expected", share / "checks" / "expected");
    for (const char* file : {"toolchain.json", "student-guide.md"})
      fs::copy_file(tool.root / file, share / file);
    fs::create_directories(temporary / "bin");
    fs::copy_file(fs::read_symlink("/proc/self/exe"), temporary / "bin" / "attn");
    for (const char* script : {"setup.sh", "run_autograder"}) {
      fs::copy_file(tool.root / "autograder" / script, temporary / script);
      fs::permissions(temporary / script, fs::perms::owner_all | fs::perms::group_read |
                                              fs::perms::group_exec | fs::perms::others_read |
                                              fs::perms::others_exec);
    }
    if (fs::exists(target, ec)) fs::remove(target);
    fs::rename(temporary, target);
    return summary;
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(temporary, ec);
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("cannot write '{}': {}", out.string(), e.code().message()))
        .about("out");
  } catch (...) {
    fs::remove_all(temporary, ec);
    throw;
  }
}

void write_new_folder(const fs::path& out,
                      const std::vector<std::pair<fs::path, std::string>>& files,
                      const char* option) {
  check_new_folder(out, option);
  // A temporary folder beside `out`, renamed into place at the end.
  std::error_code ec;
  const fs::path target = fs::absolute(out, ec).lexically_normal();
  const fs::path temporary = target.parent_path() / (target.filename().string() + ".partial");
  fs::remove_all(temporary, ec);
  try {
    for (const auto& [path, text] : files) {
      fs::create_directories((temporary / path).parent_path());
      std::ofstream file(temporary / path, std::ios::binary);
      file << text;
      if (!file.flush())
        throw Error(ErrorKind::bad_value, "assignments",
                    fmt::format("cannot write {}", (temporary / path).string()))
            .about(option);
    }
    fs::create_directories(temporary);
    if (fs::exists(target, ec)) fs::remove(target);
    fs::rename(temporary, target);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(temporary, ec);
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("cannot write '{}': {}", out.string(), e.code().message()))
        .about(option);
  } catch (...) {
    fs::remove_all(temporary, ec);
    throw;
  }
}

const Exercise* next_exercise(const fs::path& tree, const std::vector<Exercise>& exercises) {
  const Progress progress = load_progress(tree);
  for (const Exercise& exercise : exercises) {
    if (!lesson_done(progress, exercise)) return &exercise;
  }
  return nullptr;
}

const Exercise* current_exercise(const fs::path& tree, const std::vector<Exercise>& exercises) {
  std::error_code ec;
  const fs::path here = fs::weakly_canonical(fs::current_path(ec), ec);
  if (!ec) {
    for (const Exercise& exercise : exercises) {
      const fs::path folder = fs::weakly_canonical(exercise.folder, ec);
      if (ec) continue;
      const auto [end, rest] =
          std::mismatch(folder.begin(), folder.end(), here.begin(), here.end());
      if (end == folder.end()) return &exercise;
    }
  }
  return next_exercise(tree, exercises);
}

std::string stub_source(const Exercise& exercise) {
  const fs::path source =
      course_tree() / "lessons" / exercise.folder.filename() / exercise.source().filename();
  std::error_code ec;
  if (!fs::is_regular_file(source, ec)) {
    throw Error(ErrorKind::bad_value, "assignments",
                fmt::format("this attn's course has no lesson {}: reset a tree released by this "
                            "attn (`attn assignments release`)",
                            exercise.folder.filename().string()));
  }
  return strip_solutions(read_text(source), source.filename().string());
}

fs::path reset_exercise(const fs::path& tree, const Exercise& exercise) {
  const std::string stub = stub_source(exercise);
  const fs::path source = exercise.source();
  const std::string file = source.filename().string();
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(source, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    throw Error(ErrorKind::bad_file, "reset",
                fmt::format("{} is {}: attn resets a regular file only; move it away first", file,
                            fs::is_symlink(status) ? "a link" : "not a regular file"));
  }
  fs::path kept;
  if (fs::exists(status)) {
    const fs::path folder = tree / ".attn" / "reset";
    fs::create_directories(folder, ec);
    for (int n = 1; n < 100000 && kept.empty(); ++n) {
      const fs::path candidate = folder / fmt::format("{}-{}.cpp", exercise.stem, n);
      if (!fs::exists(fs::symlink_status(candidate, ec))) kept = candidate;
    }
    // A copy of the student's file, made before anything replaces it.
    if (kept.empty() || !fs::copy_file(source, kept, fs::copy_options::none, ec) || ec) {
      throw Error(ErrorKind::write_failed, "reset",
                  fmt::format("cannot keep a copy of {} in .attn/reset ({}): nothing was changed",
                              file, ec ? ec.message() : "no free name"));
    }
  }
  const fs::path temporary = exercise.folder / fmt::format(".{}.reset-{}", file, ::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << stub;
    if (!out.flush()) {
      fs::remove(temporary, ec);
      throw Error(ErrorKind::write_failed, "reset",
                  fmt::format("cannot write in {}: nothing was changed",
                              exercise.folder.filename().string()));
    }
  }
  fs::rename(temporary, source, ec);
  if (ec) {
    fs::remove(temporary, ec);
    throw Error(ErrorKind::write_failed, "reset",
                fmt::format("cannot replace {}: nothing was changed", file));
  }
  return kept.empty() ? fs::path() : fs::relative(kept, tree, ec);
}

std::string compile_commands(const fs::path& tree, const std::vector<Exercise>& exercises) {
  const Toolchain& tool = toolchain();
  nlohmann::json entries = nlohmann::json::array();
  for (const Exercise& exercise : exercises) {
    const fs::path folder = tree / "lessons" / exercise.folder.filename();
    const std::string file = exercise.source().filename().string();
    std::vector<std::string> arguments = {tool.compiler};
    arguments.insert(arguments.end(), tool.flags.begin(), tool.flags.end());
    for (const std::string& flag :
         {std::string("-std=c++20"), std::string("-O1"), std::string("-Wall"),
          "-I" + tool.include().string(), std::string("-c"), file, std::string("-o"),
          exercise.stem + ".o"})
      arguments.push_back(flag);
    entries.push_back({{"directory", folder.string()},
                       {"file", (folder / file).string()},
                       {"arguments", arguments}});
  }
  return entries.dump(2) + "\n";
}

void refresh_compile_commands(const fs::path& tree, const std::vector<Exercise>& exercises) {
  std::error_code ec;
  // A tree attn released (it has assignments.json), not attn's own checkout.
  if (!fs::is_regular_file(tree / "assignments.json", ec)) return;
  try {
    const fs::path path = tree / "compile_commands.json";
    const std::string wanted = compile_commands(tree, exercises);
    const fs::file_status status = fs::symlink_status(path, ec);
    if (fs::exists(status)) {
      if (!fs::is_regular_file(status)) return;
      const std::optional<std::string> text = read_regular_file(
          open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), 1 << 20);
      if (!text || *text == wanted) return;
      // attn's own: every entry compiles an exercise of this course with attn's headers.
      const nlohmann::json json = nlohmann::json::parse(*text, nullptr, false);
      if (!json.is_array() || json.empty()) return;
      for (const auto& entry : json) {
        if (!entry.is_object() || !entry.contains("file") || !entry["file"].is_string() ||
            !entry["file"].get<std::string>().ends_with("_exercise.cpp") ||
            !entry.contains("arguments")) {
          return;
        }
      }
    }
    const fs::path temporary = tree / fmt::format(".compile_commands-{}.json", ::getpid());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << wanted;
      if (!out.flush()) {
        fs::remove(temporary, ec);
        return;
      }
    }
    fs::rename(temporary, path, ec);
    if (ec) fs::remove(temporary, ec);
  } catch (const std::exception&) {
    // Only an editor's convenience: grading goes on without it.
  }
}

std::optional<std::string> read_regular_file(int fd, std::size_t limit) {
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) > limit) {
    close(fd);
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t at = 0;
  while (at < text.size()) {
    const ssize_t n = read(fd, text.data() + at, text.size() - at);
    if (n <= 0) break;
    at += static_cast<std::size_t>(n);
  }
  close(fd);
  text.resize(at);
  return text;
}

namespace {

// A small regular file's bytes, read without following a link and without waiting on a FIFO;
// nullopt for anything else (missing, a link, a device, over `limit` bytes).
std::optional<std::string> read_plain_file(const fs::path& path, std::size_t limit) {
  return read_regular_file(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC),
                           limit);
}

}  // namespace

Progress load_progress(const fs::path& tree) {
  Progress progress;
  const std::optional<std::string> text =
      read_plain_file(tree / ".attn" / "progress.json", 1 << 20);
  if (!text) return progress;
  // A damaged progress file counts as no progress: grading again rewrites it.
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, false);
  if (!json.is_object()) return progress;
  if (json.contains("lessons") && json["lessons"].is_object()) {
    for (const auto& [name, entry] : json["lessons"].items()) {
      // An entry with a field missing or of another type counts as never graded.
      if (!entry.is_object() || !entry.contains("passed") || !entry["passed"].is_boolean() ||
          !entry.contains("score") || !entry["score"].is_number() || !entry.contains("max_score") ||
          !entry["max_score"].is_number() || !entry.contains("fingerprint") ||
          !entry["fingerprint"].is_string()) {
        continue;
      }
      LessonProgress lesson;
      lesson.passed = entry["passed"].get<bool>();
      lesson.score = entry["score"].get<double>();
      lesson.max_score = entry["max_score"].get<double>();
      lesson.fingerprint = entry["fingerprint"].get<std::string>();
      progress.lessons[name] = lesson;
    }
  }
  if (json.contains("hints") && json["hints"].is_object()) {
    for (const auto& [name, seen] : json["hints"].items()) {
      if (seen.is_number_integer()) progress.hints_seen[name] = seen.get<int>();
    }
  }
  return progress;
}

void save_progress(const fs::path& tree, const Progress& progress) {
  nlohmann::json json = {{"lessons", nlohmann::json::object()},
                         {"hints", nlohmann::json::object()}};
  for (const auto& [name, lesson] : progress.lessons) {
    json["lessons"][name] = {{"passed", lesson.passed},
                             {"score", lesson.score},
                             {"max_score", lesson.max_score},
                             {"fingerprint", lesson.fingerprint}};
  }
  for (const auto& [name, seen] : progress.hints_seen)
    json["hints"][name] = seen;
  // Into <tree>/.attn, a real folder (not a link), through a new file of our own (O_EXCL, no
  // link followed) renamed over progress.json: the tree's owner cannot point it elsewhere.
  const fs::path tree_path = tree;
  const int top = open(tree_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0) throw Error(ErrorKind::bad_file, "progress", "the tree cannot be opened");
  mkdirat(top, ".attn", 0755);
  const int dir = openat(top, ".attn", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  close(top);
  if (dir < 0) throw Error(ErrorKind::bad_file, "progress", ".attn is not a folder");
  const std::string temporary = fmt::format(".progress-{}.json", ::getpid());
  unlinkat(dir, temporary.c_str(), 0);
  const int fd =
      openat(dir, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    close(dir);
    throw Error(ErrorKind::write_failed, "progress", "cannot write .attn");
  }
  const std::string text = json.dump(2) + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written || renameat(dir, temporary.c_str(), dir, "progress.json") != 0) {
    unlinkat(dir, temporary.c_str(), 0);
    close(dir);
    throw Error(ErrorKind::write_failed, "progress", "cannot write .attn/progress.json");
  }
  close(dir);
}

std::string fingerprint(const fs::path& file) {
  const std::optional<std::string> text = read_plain_file(file, 1 << 20);
  if (!text) return "";
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (const char c : *text)
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return fmt::format("{:016x}", hash);
}

bool lesson_done(const Progress& progress, const Exercise& exercise) {
  const auto it = progress.lessons.find(exercise.lesson);
  return it != progress.lessons.end() && it->second.passed &&
         it->second.fingerprint == fingerprint(exercise.source());
}

std::string exercise_title(const Exercise& exercise) {
  const fs::path path = exercise.folder / "lesson.md";
  const std::optional<std::string> text = read_regular_file(
      open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), 1 << 20);
  if (!text) return "";
  std::istringstream in(text->starts_with("\xef\xbb\xbf") ? text->substr(3) : *text);
  for (std::string line; std::getline(in, line);) {
    const std::size_t start = line.find_first_not_of("# \t\r");
    if (start == std::string::npos) continue;
    const std::size_t end = line.find_last_not_of(" \t\r");
    return printable(line.substr(start, end + 1 - start), 70);
  }
  return "";
}

// The staged hints of hints.md: the text under each "## N" heading.
std::vector<std::string> read_hints(const Exercise& exercise) {
  std::error_code ec;
  // The instructor's hints, not the copy in the student's tree.
  fs::path path = course_tree() / "lessons" / exercise.folder.filename() / "hints.md";
  if (!fs::exists(path, ec)) path = exercise.hints();
  if (!fs::exists(path, ec)) return {};
  const std::vector<unsigned char> bytes = read_file(path.string(), "hints.md");
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::vector<std::string> hints;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("## ")) {
      hints.emplace_back();
    } else if (!hints.empty()) {
      hints.back() += line + "\n";
    }
  }
  for (std::string& hint : hints) {
    while (!hint.empty() && (hint.front() == '\n'))
      hint.erase(hint.begin());
    while (hint.size() > 1 && hint.ends_with("\n\n"))
      hint.pop_back();
  }
  return hints;
}

namespace {

std::string progress_bar(int done, int total) {
  constexpr int kWidth = 30;
  const int filled = total > 0 ? done * kWidth / total : 0;
  std::string bar(static_cast<std::size_t>(filled), '#');
  if (filled < kWidth) bar += '>' + std::string(static_cast<std::size_t>(kWidth - filled - 1), '-');
  return fmt::format("Progress: [{}] {}/{} exercises done", bar, done, total);
}

}  // namespace

std::string exercise_progress_text(const fs::path& tree, const std::vector<Exercise>& exercises) {
  const Progress progress = load_progress(tree);
  int done = 0;
  const Exercise* next = nullptr;
  for (const Exercise& exercise : exercises) {
    if (lesson_done(progress, exercise)) {
      ++done;
    } else if (next == nullptr) {
      next = &exercise;
    }
  }
  std::string out = progress_bar(done, static_cast<int>(exercises.size())) + "\n";
  if (next != nullptr) {
    out += fmt::format("Next exercise: {} (edit {}, then `attn check {}`)\n", next->label(),
                       fs::relative(next->source(), tree).string(), next->lesson);
  } else {
    out += "Every exercise passes its tests. Well done.\n";
  }
  return out;
}

}  // namespace attn::course
