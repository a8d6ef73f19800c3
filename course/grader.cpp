#include "grader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "error.hpp"
#include "process.hpp"
#include "report.hpp"
#include "toolchain.hpp"
#include "values.hpp"

namespace attn::course {

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
constexpr std::size_t kMaxSource = 1 << 20;
constexpr uid_t kNobody = 65534;

fs::path instructor_folder(const Exercise& exercise) {
  return toolchain().course() / "lessons" / exercise.folder.filename();
}

// A folder for one lesson's grading, removed at the end: build/ (the student's copy, objects
// and programs; the confined compiler writes there), trusted/ (what the probes sent and what
// the checks reported; only this process's user may enter it), and one run-N/ per test.
class WorkDir {
 public:
  WorkDir() {
    const char* base = std::getenv("ATTN_GRADE_TMPDIR");
    std::string pattern =
        (base != nullptr && *base != '\0' ? std::string(base) : std::string("/tmp")) +
        "/attn-grade-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      throw Error("grade",
                  fmt::format("cannot make a folder for grading in {}: {}; set "
                              "ATTN_GRADE_TMPDIR to a writable folder",
                              fs::path(pattern).parent_path().string(), std::strerror(errno)));
    }
    root_ = pattern;
    chmod(root_.c_str(), 0711);  // a confined child, maybe nobody, passes through
    fs::create_directory(build());
    fs::create_directory(trusted());
    chmod(trusted().c_str(), 0700);
    for_child(build());
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  fs::path build() const { return root_ / "build"; }
  fs::path trusted() const { return root_ / "trusted"; }
  fs::path run(int index) const {
    const fs::path dir = root_ / fmt::format("run-{}", index);
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directory(dir);
    for_child(dir);
    return dir;
  }
  // A confined child run as root becomes nobody: it may write only what nobody owns.
  static void for_child(const fs::path& dir) {
    if (geteuid() == 0) (void)!chown(dir.c_str(), kNobody, kNobody);
    chmod(dir.c_str(), 0755);
  }

 private:
  fs::path root_;
};

// Bytes that would drive a terminal (escape sequences, carriage returns, bells) written as ^[,
// ^M, ^G; newlines and tabs kept.
std::string escape_controls(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u == '\n' || u == '\t' || (u >= 0x20 && u != 0x7f)) {
      out += c;
    } else if (u == 0x7f) {
      out += "^?";
    } else {
      out += '^';
      out += static_cast<char>(u + 0x40);
    }
  }
  return out;
}

std::string capped(std::string text, std::size_t limit) {
  if (text.size() > limit) {
    text.resize(limit);
    text += "\n[... cut]\n";
  }
  return text;
}

// The student's source, read without following a symbolic link (a link could point at any
// file this user can read): a regular file of at most 1 MiB.
std::string read_student_source(const fs::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw Error("grade", fmt::format("{} cannot be read ({}): it must be a regular file, not a "
                                     "link",
                                     path.filename().string(), std::strerror(errno)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) > kMaxSource) {
    close(fd);
    throw Error("grade", fmt::format("{} must be a regular file of at most 1 MiB",
                                     path.filename().string()));
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

// The source as the preprocessor reads its directives: lines joined where they end in a
// backslash, comments blanked.
std::string directive_view(const std::string& text) {
  std::string spliced;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      continue;
    }
    spliced += text[i];
  }
  std::string out;
  for (std::size_t i = 0; i < spliced.size();) {
    if (spliced.compare(i, 2, "/*") == 0) {
      const std::size_t end = spliced.find("*/", i + 2);
      out += ' ';
      i = end == std::string::npos ? spliced.size() : end + 2;
    } else if (spliced.compare(i, 2, "//") == 0) {
      const std::size_t end = spliced.find('\n', i);
      i = end == std::string::npos ? spliced.size() : end;
    } else {
      out += spliced[i++];
    }
  }
  return out;
}

// An exercise includes only the public headers and the system's: "name.hpp" without a folder,
// or <name> without "..". Anything else (a path into the instructor's files, or any file at
// all) is refused before the compiler reads it; so is .incbin, which embeds a file.
std::string refused_include(const std::string& source, const std::string& file) {
  static const std::regex directive(R"(^\s*#\s*(include|include_next|import|embed)\b\s*(.*)$)");
  static const std::regex quoted(R"(^"([A-Za-z0-9_.+-]+)\"\s*$)");
  static const std::regex angled(R"(^<([A-Za-z0-9_./+-]+)>\s*$)");
  std::istringstream in(directive_view(source));
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::smatch m;
    if (!std::regex_match(line, m, directive)) continue;
    const std::string target = m[2];
    std::smatch t;
    const bool ok =
        m[1] == "include" && (std::regex_match(target, t, quoted) ||
                              (std::regex_match(target, t, angled) &&
                               target.find("..") == std::string::npos && target[1] != '/'));
    if (!ok) {
      return fmt::format(
          "{}: #{} {} is not allowed: include only the exercise's header, attn's "
          "public headers (\"tensor.hpp\", \"softmax.hpp\", ...) and system "
          "headers (<cmath>)",
          file, std::string(m[1]), escape_controls(target.substr(0, 80)));
    }
  }
  if (source.find("incbin") != std::string::npos) {
    return fmt::format("{}: .incbin is not allowed: it embeds another file", file);
  }
  return "";
}

std::vector<fs::path> system_reads() {
  return {"/usr/bin", "/usr/lib", "/usr/libexec", "/usr/include",
          "/bin",     "/lib",     "/lib64",       "/etc/alternatives"};
}

ProcessOptions confined_options(const Confinement& confine, double timeout,
                                const fs::path& working_dir) {
  ProcessOptions options;
  options.timeout_seconds = timeout;
  options.working_dir = working_dir.string();
  options.clear_env = true;
  options.env = {
      {"PATH", "/usr/bin:/bin"},
      {"LC_ALL", "C"},
      {"HOME", working_dir.string()},
      {"TMPDIR", working_dir.string()},
      {"OPENBLAS_NUM_THREADS", "1"},
      {"ASAN_OPTIONS", "detect_leaks=0:hard_rss_limit_mb=1024:allocator_may_return_null=1"},
      {"UBSAN_OPTIONS", "print_stacktrace=0"}};
  options.confine = &confine;
  return options;
}

// The compiler's messages, with the grading folder's paths left out.
std::string compiler_messages(const ProcessResult& result, const fs::path& build, double timeout) {
  std::string text = result.err + result.out;
  for (const std::string& folder : {build.string() + "/", toolchain().include().string() + "/"}) {
    for (std::size_t at = text.find(folder); at != std::string::npos; at = text.find(folder, at))
      text.erase(at, folder.size());
  }
  if (!result.started || result.timed_out || result.signal != 0) {
    text += fmt::format("\nthe compiler {}", result.status(timeout));
  }
  return text;
}

// The short name of a demangled function: "attn::softmax" of "attn::softmax(xt::...)".
std::string short_name(const std::string& signature) {
  return signature.substr(0, signature.find('('));
}

// What the student's object calls in attn's core beyond what the instructor's solution calls
// (`allowed`, the lines of share/attn/grader/<stem>.core-calls) and the helpers any exercise
// may use: the core's own answer to the exercise, or another way to it, is not the student's.
std::vector<std::string> unlisted_core_calls(const std::string& nm_output,
                                             const std::vector<std::string>& allowed) {
  static const std::regex undefined(R"(^\s+U (attn::.*)$)");
  static const char* const kHelpers[] = {
      "attn::shape_string", "attn::Error::", "attn::Rng::", "attn::printable", "attn::error_kind"};
  std::vector<std::string> found;
  std::istringstream in(nm_output);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, undefined)) continue;
    const std::string signature = m[1];
    if (signature.starts_with("attn::exercise::")) continue;
    bool ok = std::find(allowed.begin(), allowed.end(), signature) != allowed.end();
    for (const char* helper : kHelpers)
      ok = ok || signature.starts_with(helper);
    const std::string name = short_name(signature);
    if (!ok && std::find(found.begin(), found.end(), name) == found.end()) found.push_back(name);
  }
  return found;
}

std::string listed(const std::vector<std::string>& names) {
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return list;
}

// A failed assertion of the check, as the student should read it: the location when it is in
// the exercise's test file, and STUDENT(...) calls written as the calls they stand for.
std::string describe_failure(const nlohmann::json& failure, const Exercise& exercise,
                             std::size_t memory_mib) {
  static const std::regex recorded(
      R"(::attn::grading::recorded<std::decay_t<decltype\((.*?)\)>>\("(?:[^"\\]|\\.)*"\))");
  auto readable = [&](const std::string& text) { return std::regex_replace(text, recorded, "$1"); };
  std::string text;
  const std::string kind = failure.value("kind", "failed");
  const std::string file = fs::path(failure.value("file", "")).filename().string();
  if (file == exercise.tests().filename().string()) {
    text += fmt::format("{} at {}:{}\n", kind, file, failure.value("line", 0));
  } else {
    text += kind + "\n";
  }
  if (failure.contains("message")) {
    const std::string message = failure["message"].get<std::string>();
    text += indent(kind == "threw an exception" ? "exception: " + message : message, "  ");
    if (message == "std::bad_alloc") {
      text += indent(fmt::format("(out of memory: each test may use {} MiB)", memory_mib), "  ");
    }
  }
  if (failure.contains("expression") && kind != "threw an exception") {
    const std::string expression = readable(failure["expression"].get<std::string>());
    const std::string expanded = readable(failure.value("expanded", ""));
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

struct Programs {
  fs::path visible;
  fs::path hidden;
};

class LessonGrader {
 public:
  LessonGrader(const Exercise& exercise, const GradeOptions& options)
      : exercise_(exercise), options_(options), tool_(toolchain()) {}

  LessonOutcome run() {
    LessonOutcome lesson;
    lesson.exercise = exercise_;
    for (const TestCaseInfo& info : instructor_tests(exercise_)) {
      if (info.hidden && !options_.hidden_tests) continue;
      lesson.tests.push_back({info, TestStatus::error, 0.0, "", 0.0});
    }
    const auto start = std::chrono::steady_clock::now();
    lesson.built = build(lesson.build_log);
    lesson.build_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!lesson.built) {
      for (TestOutcome& test : lesson.tests) {
        test.status = TestStatus::error;
        test.output = escape_controls(fmt::format("{} did not compile, so no test ran:\n{}",
                                                  exercise_.source().filename().string(),
                                                  capped(lesson.build_log, kMaxEvidence)));
      }
      lesson.build_log = escape_controls(lesson.build_log);
      return lesson;
    }
    if (options_.progress) options_.progress(fmt::format("testing {}", exercise_.label()));
    int index = 0;
    // The visible tests first; the hidden tests' program exists only after they have all ended.
    for (const bool hidden : {false, true}) {
      fs::path program = programs_.visible;
      for (TestOutcome& test : lesson.tests) {
        if (test.info.hidden != hidden) continue;
        if (hidden && programs_.hidden.empty()) {
          // The hidden tests' probe, copied where the confined linker may read it (the grader's
          // folder may be its owner's alone) now that no visible test's process is left.
          const fs::path copy = work_.build() / "hidden_probe.a";
          std::error_code ec;
          fs::copy_file(tool_.hidden_probe(exercise_.stem), copy,
                        fs::copy_options::overwrite_existing, ec);
          chmod(copy.c_str(), 0644);
          std::string log;
          if (ec || !link(copy, "hidden", log)) {
            test.output = escape_controls("the hidden tests did not link:\n" + log);
            continue;
          }
        }
        test = run_test(hidden ? programs_.hidden : program, test.info, ++index);
      }
    }
    return lesson;
  }

 private:
  Confinement build_confinement(std::vector<fs::path> extra) const {
    Confinement c;
    c.read = system_reads();
    c.read.push_back(tool_.include());
    c.read.insert(c.read.end(), extra.begin(), extra.end());
    c.write = work_.build();
    c.processes = true;
    c.cpu_seconds = options_.build_timeout_seconds;
    c.address_space = std::size_t{4} << 30;
    c.file_size = std::size_t{512} << 20;
    return c;
  }

  bool build(std::string& log) {
    const fs::path source = exercise_.source();
    const std::string file = source.filename().string();
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(source, ec))) {
      log = fmt::format(
          "{} is missing: restore it (the released tree has it) and fill in the "
          "TODOs",
          file);
      return false;
    }
    std::string text;
    try {
      text = read_student_source(source);
    } catch (const Error& e) {
      log = e.detail();
      return false;
    }
    if (const std::string refused = refused_include(text, file); !refused.empty()) {
      log = refused;
      return false;
    }
    {
      std::ofstream out(work_.build() / file, std::ios::binary);
      out << text;
    }
    if (options_.progress) options_.progress(fmt::format("building {}", exercise_.label()));
    const Confinement compile = build_confinement({});
    std::vector<std::string> argv = {tool_.compiler};
    argv.insert(argv.end(), tool_.flags.begin(), tool_.flags.end());
    argv.insert(argv.end(), {"-std=c++20", "-O1", "-Wall", "-fdiagnostics-color=never",
                             "-I" + tool_.include().string(), "-c", file, "-o", "student.o"});
    const ProcessResult compiled =
        run_process(argv, confined_options(compile, options_.build_timeout_seconds, work_.build()));
    if (!compiled.ok()) {
      log = compiler_messages(compiled, work_.build(), options_.build_timeout_seconds);
      return false;
    }
    const ProcessResult symbols =
        run_process({"nm", "-C", "student.o"}, confined_options(compile, 60.0, work_.build()));
    if (!symbols.ok()) {
      log = "nm could not read the compiled exercise: " + symbols.status(60.0);
      return false;
    }
    std::vector<std::string> allowed;
    {
      const fs::path list = tool_.grader() / (exercise_.stem + ".core-calls");
      std::ifstream in(list);
      if (!in) {
        log = fmt::format("attn's course files lack {}: rebuild or reinstall attn",
                          list.filename().string());
        return false;
      }
      for (std::string line; std::getline(in, line);)
        allowed.push_back(line);
    }
    if (const std::vector<std::string> calls = unlisted_core_calls(symbols.out, allowed);
        !calls.empty()) {
      std::vector<std::string> names;
      for (const std::string& signature : allowed) {
        if (std::find(names.begin(), names.end(), short_name(signature)) == names.end())
          names.push_back(short_name(signature));
      }
      log =
          fmt::format("{} calls {} from attn's core: this exercise asks you to write it yourself{}",
                      file, listed(calls),
                      names.empty() ? " (it may use no function of the core)"
                                    : fmt::format(" (of the core it may use {})", listed(names)));
      return false;
    }
    return link(tool_.visible_probe(exercise_.stem), "visible", log);
  }

  bool link(const fs::path& probe, const std::string& name, std::string& log) {
    const Confinement linking = build_confinement({tool_.lib(), probe});
    std::vector<std::string> argv = {tool_.compiler};
    argv.insert(argv.end(), tool_.flags.begin(), tool_.flags.end());
    argv.insert(argv.end(), {"student.o", "-Wl,--whole-archive", probe.string(),
                             "-Wl,--no-whole-archive", tool_.probe_main().string()});
    argv.insert(argv.end(), tool_.link.begin(), tool_.link.end());
    argv.insert(argv.end(), {"-o", name});
    const ProcessResult linked =
        run_process(argv, confined_options(linking, options_.build_timeout_seconds, work_.build()));
    if (!linked.ok()) {
      log = "linking failed (is every declared function defined?):\n" +
            compiler_messages(linked, work_.build(), options_.build_timeout_seconds);
      return false;
    }
    (name == "hidden" ? programs_.hidden : programs_.visible) = work_.build() / name;
    return true;
  }

  TestOutcome run_test(const fs::path& program, const TestCaseInfo& info, int index) {
    TestOutcome outcome;
    outcome.info = info;
    const fs::path dir = work_.run(index);
    Confinement c;
    c.read = {program, "/usr/lib", "/lib", "/lib64", tool_.inputs()};
    c.write = dir;
    c.processes = false;
    c.cpu_seconds = options_.test_timeout_seconds;
    c.address_space = options_.test_memory;
    c.file_size = std::size_t{16} << 20;
    ProcessOptions process = confined_options(c, options_.test_timeout_seconds, dir);
    process.env.emplace_back("ATTN_GRADE_INPUTS", tool_.inputs().string());
    process.max_output = 64 * 1024;
    process.channel = true;
    const ProcessResult probe = run_process({program.string(), info.name}, process);
    outcome.seconds = probe.seconds;

    bool whole = false;
    const std::vector<grading::Record> records = grading::parse_records(probe.channel, &whole);
    const bool ended = !records.empty() && records.back().kind == grading::RecordKind::end;
    const bool clean = probe.ok() && ended && whole && !probe.channel_cut;

    // The check, from the instructor's copy, with what the probe sent.
    const fs::path recording = work_.trusted() / fmt::format("recording-{}", index);
    const fs::path report = work_.trusted() / fmt::format("report-{}.json", index);
    {
      std::ofstream out(recording, std::ios::binary);
      out << probe.channel;
    }
    ProcessOptions check;
    check.timeout_seconds = 120.0;
    check.env = {{"ATTN_GRADE_RECORDING", recording.string()},
                 {"ATTN_GRADE_INPUTS", tool_.inputs().string()},
                 {"ATTN_GRADE_EXPECTED", tool_.expected().string()}};
    const ProcessResult checked =
        run_process({tool_.check_program(exercise_.stem).string(), info.name, "-r", "attn-grade",
                     "-o", report.string()},
                    check);
    nlohmann::json entry;
    {
      std::ifstream in(report);
      const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
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
        evidence += describe_failure(failures[i], exercise_, options_.test_memory >> 20);
      if (failures.size() > 3)
        evidence += fmt::format("... and {} more failed checks\n", failures.size() - 3);
    }
    const bool check_passed = entry.is_object() && entry.value("passed", false) &&
                              !entry.contains("fatal") && checked.ok();
    if (!probe.started) {
      outcome.status = TestStatus::error;
      evidence = probe.start_error + "\n";
    } else if (probe.timed_out) {
      outcome.status = TestStatus::error;
      evidence = fmt::format(
                     "timed out after {:g} s: the test did not finish (an endless "
                     "loop?)\n",
                     options_.test_timeout_seconds) +
                 evidence;
    } else if (probe.signal != 0) {
      outcome.status = TestStatus::error;
      evidence =
          fmt::format("crashed: {}\n", probe.status(options_.test_timeout_seconds)) + evidence;
    } else if (!clean) {
      outcome.status = TestStatus::error;
      evidence = fmt::format("the test program ended ({}) before the test finished\n",
                             probe.status(options_.test_timeout_seconds)) +
                 evidence;
    } else if (!entry.is_object()) {
      outcome.status = TestStatus::error;
      evidence = fmt::format("the grader's check did not report ({}): tell your instructor\n",
                             checked.status(check.timeout_seconds));
    } else {
      outcome.status = check_passed ? TestStatus::passed : TestStatus::failed;
    }
    std::string printed = probe.out + probe.err;
    if (!printed.empty() && outcome.status != TestStatus::passed) {
      if (printed.size() > 1000) printed = "..." + printed.substr(printed.size() - 1000);
      evidence += "your code printed:\n" + indent(printed, "  ");
    }
    outcome.output = escape_controls(capped(evidence, kMaxEvidence));
    outcome.score = outcome.status == TestStatus::passed ? info.points : 0.0;
    return outcome;
  }

  const Exercise& exercise_;
  const GradeOptions& options_;
  const Toolchain& tool_;
  WorkDir work_;
  Programs programs_;
};

}  // namespace

std::vector<TestCaseInfo> instructor_tests(const Exercise& exercise) {
  const fs::path tests = instructor_folder(exercise) / exercise.tests().filename();
  std::error_code ec;
  if (!fs::is_regular_file(tests, ec)) {
    throw Error("grade", fmt::format("this attn's course has no lesson {}: grade a tree released "
                                     "by this attn (`attn assignments release`)",
                                     exercise.folder.filename().string()));
  }
  return parse_test_cases(tests);
}

LessonOutcome grade_exercise(const Exercise& exercise, const GradeOptions& options) {
  LessonGrader grader(exercise, options);
  return grader.run();
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

}  // namespace attn::course
