#include "grader.hpp"

#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "grade_report.hpp"
#include "grade_toolchain.hpp"
#include "process.hpp"

namespace attn::cli {

namespace fs = std::filesystem;

double LessonOutcome::score() const {
  double total = 0.0;
  for (const TestOutcome& test : tests)
    total += test.score;
  return total;
}

double LessonOutcome::max_score() const {
  double total = 0.0;
  for (const TestOutcome& test : tests)
    total += test.info.points;
  return total;
}

bool LessonOutcome::passed() const {
  if (!built) return false;
  for (const TestOutcome& test : tests) {
    if (test.status != TestStatus::passed) return false;
  }
  return true;
}

namespace {

constexpr std::size_t kMaxEvidence = 4000;

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;)
    words.push_back(word);
  return words;
}

// Where objects and the test program go: <tree>/.attn/build/<stem>, or a temporary folder when
// the tree cannot be written.
fs::path build_dir(const fs::path& tree, const Exercise& exercise) {
  std::error_code ec;
  fs::path dir = tree / ".attn" / "build" / exercise.stem;
  fs::create_directories(dir, ec);
  if (!ec && access(dir.c_str(), W_OK) == 0) return dir;
  dir = fs::temp_directory_path() /
        fmt::format("attn-grade-{:x}", std::hash<std::string>{}(tree.string())) / exercise.stem;
  fs::create_directories(dir, ec);
  return dir;
}

std::vector<std::string> compile_command(const Exercise& exercise, const fs::path& source,
                                         const fs::path& object) {
  std::vector<std::string> command;
  if (*toolchain::kLauncher != '\0') command.push_back(toolchain::kLauncher);
  command.push_back(toolchain::kCompiler);
  for (const std::string& flag : split_words(toolchain::kFlags))
    command.push_back(flag);
  for (const char* flag : {"-std=c++20", "-O1", "-Wall", "-fdiagnostics-color=never"}) {
    command.push_back(flag);
  }
  for (const char* definition : toolchain::kDefinitions)
    command.push_back(std::string("-D") + definition);
  command.push_back(fmt::format("-DATTN_EXERCISE_FIXTURES_DIR=\"{}\"", toolchain::kFixturesDir));
  command.push_back("-I" + exercise.folder.string());
  for (const char* dir : toolchain::kIncludeDirs)
    command.push_back(std::string("-I") + dir);
  command.insert(command.end(), {"-c", source.string(), "-o", object.string()});
  return command;
}

// The compiler's messages, paths shortened to the file names a student sees.
std::string compiler_messages(const ProcessResult& result, const Exercise& exercise,
                              double timeout) {
  std::string text = result.err + result.out;
  const std::string folder = exercise.folder.string() + "/";
  for (std::size_t at = text.find(folder); at != std::string::npos; at = text.find(folder, at)) {
    text.erase(at, folder.size());
  }
  if (!result.started || result.timed_out || result.signal != 0) {
    text += fmt::format("\nthe compiler {}", result.status(timeout));
  }
  return text;
}

// A failed assertion, as the student should read it.
// The location is given when it is in the exercise's own files, not in the shared test helpers.
std::string describe_failure(const nlohmann::json& failure, const Exercise& exercise) {
  std::string text;
  const std::string kind = failure.value("kind", "failed");
  const std::string file = fs::path(failure.value("file", "")).filename().string();
  if (file == exercise.tests().filename().string() ||
      file == exercise.source().filename().string()) {
    text += fmt::format("{} at {}:{}\n", kind, file, failure.value("line", 0));
  } else {
    text += kind + "\n";
  }
  if (failure.contains("message")) {
    const std::string message = failure["message"].get<std::string>();
    text += indent(kind == "threw an exception" ? "exception: " + message : message, "  ");
  }
  if (failure.contains("expression") && kind != "threw an exception") {
    const std::string expression = failure["expression"].get<std::string>();
    const std::string expanded = failure.value("expanded", "");
    text += indent(expression, "  ");
    if (!expanded.empty() && expanded != expression.substr(expression.find('(') + 1)) {
      text += indent("with values: " + expanded, "  ");
    }
  }
  if (failure.contains("info")) {
    for (const auto& info : failure["info"])
      text += indent(info.get<std::string>(), "  ");
  }
  return text;
}

std::string capped(std::string text, std::size_t limit) {
  if (text.size() > limit) {
    text.resize(limit);
    text += "\n[... cut]\n";
  }
  return text;
}

TestOutcome run_test(const Exercise& exercise, const fs::path& program, const fs::path& dir,
                     const TestCaseInfo& info, const GradeOptions& options) {
  TestOutcome outcome;
  outcome.info = info;
  const fs::path report = dir / "report.json";
  std::error_code ec;
  fs::remove(report, ec);
  ProcessOptions process;
  process.timeout_seconds = options.test_timeout_seconds;
  process.working_dir = dir.string();
  process.max_output = 64 * 1024;
  const ProcessResult result = run_process(
      {program.string(), info.name, "-r", "attn-grade", "-o", report.string()}, process);
  outcome.seconds = result.seconds;

  nlohmann::json entry;
  {
    std::ifstream in(report);
    std::string line, last;
    while (std::getline(in, line)) {
      if (!line.empty()) last = line;
    }
    const nlohmann::json json = nlohmann::json::parse(last, nullptr, false);
    if (json.is_object() && json.contains("tests")) {
      for (const auto& test : json["tests"]) {
        if (test.value("name", "") == info.name) entry = test;
      }
    }
  }
  std::string evidence;
  if (entry.is_object() && entry.contains("failures")) {
    const auto& failures = entry["failures"];
    for (std::size_t i = 0; i < failures.size() && i < 3; ++i)
      evidence += describe_failure(failures[i], exercise);
    if (failures.size() > 3)
      evidence += fmt::format("... and {} more failed checks\n", failures.size() - 3);
  }
  if (result.timed_out) {
    outcome.status = TestStatus::error;
    evidence = fmt::format("timed out after {:g} s: the test did not finish (an endless loop?)\n",
                           options.test_timeout_seconds) +
               evidence;
  } else if (result.signal != 0 || (entry.is_object() && entry.contains("fatal"))) {
    outcome.status = TestStatus::error;
    const std::string what = entry.is_object() && entry.contains("fatal")
                                 ? entry["fatal"].get<std::string>()
                                 : result.status(options.test_timeout_seconds);
    evidence = fmt::format("crashed: {}\n", what) + evidence;
  } else if (!result.started) {
    outcome.status = TestStatus::error;
    evidence = result.start_error + "\n";
  } else if (!entry.is_object()) {
    outcome.status = TestStatus::error;
    evidence = fmt::format("the test program ended ({}) without reporting this test\n",
                           result.status(options.test_timeout_seconds));
  } else {
    outcome.status = entry.value("passed", false) ? TestStatus::passed : TestStatus::failed;
  }
  // What the student's code printed, if anything.
  std::string printed = result.out + result.err;
  if (!printed.empty() && outcome.status != TestStatus::passed) {
    if (printed.size() > 1000) printed = "..." + printed.substr(printed.size() - 1000);
    evidence += "your code printed:\n" + indent(printed, "  ");
  }
  outcome.output = capped(evidence, kMaxEvidence);
  outcome.score = outcome.status == TestStatus::passed ? info.points : 0.0;
  return outcome;
}

}  // namespace

LessonOutcome grade_exercise(const fs::path& tree, const Exercise& exercise,
                             const GradeOptions& options) {
  LessonOutcome lesson;
  lesson.exercise = exercise;
  const std::vector<TestCaseInfo> cases = parse_test_cases(exercise.tests());
  for (const TestCaseInfo& info : cases)
    lesson.tests.push_back({info, TestStatus::error, 0.0, "", 0.0});

  std::error_code ec;
  if (!fs::exists(exercise.source(), ec)) {
    lesson.build_log =
        fmt::format("{} is missing: restore it (the released tree has it) and fill in the TODOs",
                    exercise.source().filename().string());
  } else {
    if (options.progress) options.progress(fmt::format("building {}", exercise.label()));
    const fs::path dir = build_dir(tree, exercise);
    const fs::path program = dir / exercise.stem;
    fs::remove(program, ec);
    ProcessOptions process;
    process.timeout_seconds = options.build_timeout_seconds;
    process.env = {{"CCACHE_BASEDIR", tree.string()}, {"LC_ALL", "C"}};
    ProcessResult compiled[2];
    const fs::path sources[2] = {exercise.source(), exercise.tests()};
    const fs::path objects[2] = {dir / (exercise.stem + ".o"), dir / (exercise.stem + "_test.o")};
    std::thread other([&] {
      compiled[1] = run_process(compile_command(exercise, sources[1], objects[1]), process);
    });
    compiled[0] = run_process(compile_command(exercise, sources[0], objects[0]), process);
    other.join();
    lesson.build_seconds = std::max(compiled[0].seconds, compiled[1].seconds);
    if (!compiled[0].ok()) {
      lesson.build_log = compiler_messages(compiled[0], exercise, process.timeout_seconds);
    } else if (!compiled[1].ok()) {
      lesson.build_log = "the tests did not compile against your header:\n" +
                         compiler_messages(compiled[1], exercise, process.timeout_seconds);
    } else {
      std::vector<std::string> link{toolchain::kCompiler};
      for (const std::string& flag : split_words(toolchain::kFlags))
        link.push_back(flag);
      link.insert(link.end(), {objects[0].string(), objects[1].string()});
      for (const char* item : toolchain::kLinkItems)
        link.push_back(item);
      link.insert(link.end(), {"-o", program.string()});
      const ProcessResult linked = run_process(link, process);
      lesson.build_seconds += linked.seconds;
      if (!linked.ok()) {
        lesson.build_log = "linking failed (is every declared function defined?):\n" +
                           compiler_messages(linked, exercise, process.timeout_seconds);
      } else {
        lesson.built = true;
      }
    }
    if (lesson.built) {
      if (options.progress) options.progress(fmt::format("testing {}", exercise.label()));
      for (TestOutcome& test : lesson.tests)
        test = run_test(exercise, program, dir, test.info, options);
    }
  }
  if (!lesson.built) {
    for (TestOutcome& test : lesson.tests) {
      test.status = TestStatus::error;
      test.output = fmt::format("{} did not compile, so no test ran:\n{}",
                                exercise.source().filename().string(),
                                capped(lesson.build_log, kMaxEvidence));
    }
  }
  return lesson;
}

void record_progress(const fs::path& tree, const std::vector<LessonOutcome>& outcomes) {
  Progress progress = load_progress(tree);
  for (const LessonOutcome& outcome : outcomes) {
    LessonProgress& lesson = progress.lessons[outcome.exercise.lesson];
    lesson.passed = outcome.passed();
    lesson.score = outcome.score();
    lesson.max_score = outcome.max_score();
    lesson.fingerprint = fingerprint(outcome.exercise.source());
  }
  try {
    save_progress(tree, progress);
  } catch (const std::exception&) {
    // A tree that cannot be written still gets graded; only the progress marks are lost.
  }
}

}  // namespace attn::cli
