#include "grader.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "data_cases.hpp"
#include "diagnostics.hpp"
#include "process.hpp"
#include "report.hpp"
#include "source_check.hpp"
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

constexpr std::size_t kMaxEvidence = 4000;  // bytes of a test's output, as shown
constexpr std::size_t kMaxLog = 16 << 10;   // bytes of the compiler's messages, as shown
constexpr std::size_t kMaxSource = 1 << 20;
constexpr uid_t kNobody = 65534;

fs::path instructor_folder(const Exercise& exercise) {
  return course_tree() / "lessons" / exercise.folder.filename();
}

// This process's id namespace ("4026531836" of /proc/self/ns/pid's "pid:[4026531836]"; "0"
// without /proc): a process id names a process only in it.
std::string pid_namespace() {
  std::error_code ec;
  const std::string link = fs::read_symlink("/proc/self/ns/pid", ec).string();
  const std::size_t open = link.find('['), close = link.find(']');
  if (ec || open == std::string::npos || close == std::string::npos || close < open + 2) return "0";
  return link.substr(open + 1, close - open - 1);
}

// The work folder's name: attn-grade-<namespace>-<pid>-XXXXXX.
std::string work_folder_pattern() {
  return fmt::format("attn-grade-{}-{}-XXXXXX", pid_namespace(), getpid());
}

// Work folders of attn runs that are gone: this user's, in `base`, of a process of this id
// namespace that no longer exists (ended by SIGKILL with its guard, or by a crash).
void remove_stale_folders(const fs::path& base) {
  static const std::regex owned(R"(attn-grade-([0-9]{1,20})-([0-9]{1,9})-[A-Za-z0-9]{6})");
  const std::string space = pid_namespace();
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(base, ec)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, owned) || match[1] != space) continue;
    const pid_t owner = static_cast<pid_t>(std::stol(match[2]));
    struct stat st {};
    if (owner == getpid() || lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid()) {
      continue;
    }
    if (kill(owner, 0) == 0 || errno != ESRCH) continue;
    fs::remove_all(entry.path(), ec);
  }
}

// A folder for one lesson's grading, removed at the end (and by the guard, when attn is ended
// first: process.hpp): build/ (the student's copy, objects and programs; the confined compiler
// writes there), trusted/ (what the probes sent and what the checks reported; only this
// process's user may enter it), and one run-N/ per test. Its name carries this process's id, so
// that a later run removes it when this one could not.
class WorkDir {
 public:
  WorkDir() {
    root_ = make_work_folder();
    chmod(root_.c_str(), 0711);  // a confined child, maybe nobody, passes through
    fs::create_directory(build());
    fs::create_directory(trusted());
    chmod(trusted().c_str(), 0700);
    for_child(build());
  }
  ~WorkDir() { remove_work_folder(root_); }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  fs::path build() const { return root_ / "build"; }
  fs::path trusted() const { return root_ / "trusted"; }
  // A test's working folder: empty, and not the test's to write (a test writes no file).
  fs::path run(int index) const {
    const fs::path dir = root_ / fmt::format("run-{}", index);
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directory(dir);
    chmod(dir.c_str(), 0755);
    return dir;
  }
  // A new empty folder <work>/<name>.
  fs::path fresh(const std::string& name) const {
    const fs::path dir = root_ / name;
    fs::create_directory(dir);
    chmod(dir.c_str(), 0755);
    return dir;
  }
  // A confined child run as root becomes nobody: it may write only what nobody owns.
  static void for_child(const fs::path& dir) {
    if (geteuid() == 0) (void)!chown(dir.c_str(), kNobody, kNobody);
    chmod(dir.c_str(), 0755);
  }
  // Back to this process's user once the child that wrote there has ended: no later child
  // (a test) may change what is in it.
  static void lock(const fs::path& dir) {
    if (geteuid() == 0) (void)!chown(dir.c_str(), 0, 0);
    chmod(dir.c_str(), 0755);
  }

 private:
  fs::path root_;
};

// Text for the student's eyes: control characters escaped, then cut to `limit` bytes (escaping
// can make a text four times as long) at a character's start.
std::string shown(const std::string& raw, std::size_t limit) {
  std::string text = escape_controls(raw);
  if (text.size() > limit) {
    std::size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80)
      --cut;
    text.resize(cut);
    text += "\n[... cut]\n";
  }
  return text;
}

// The student's source: <tree>/lessons/<folder>/<file> opened one folder at a time without
// following a symbolic link (a link anywhere on the way could point at any file this user can
// read, the instructor's solution too), a regular file of at most 1 MiB.
std::string read_student_source(const Exercise& exercise) {
  const std::string file = exercise.source().filename().string();
  const fs::path tree = exercise.folder.parent_path().parent_path();
  int dir = open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (const std::string& part : {std::string("lessons"), exercise.folder.filename().string()}) {
    const int next =
        dir < 0 ? -1 : openat(dir, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir >= 0) close(dir);
    dir = next;
  }
  if (dir < 0) {
    throw Error(ErrorKind::bad_file, "grade",
                fmt::format("lessons/{} cannot be opened ({}): it must be a folder, "
                            "not a link",
                            exercise.folder.filename().string(), std::strerror(errno)));
  }
  struct stat link {};
  if (fstatat(dir, file.c_str(), &link, AT_SYMLINK_NOFOLLOW) != 0) {
    close(dir);
    throw Error(ErrorKind::bad_file, "grade",
                fmt::format("{} is missing: restore it (the released tree has it) and "
                            "fill in the TODOs",
                            file));
  }
  const int fd = openat(dir, file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  close(dir);
  std::optional<std::string> text = read_regular_file(fd, kMaxSource);
  if (!text) {
    throw Error(ErrorKind::bad_file, "grade",
                fmt::format("{} must be a regular file of at most 1 MiB, not a link", file));
  }
  return *text;
}

// The first file of a `c++ -M` rule (make syntax: "student.o: a.cpp b.hpp \" lines) outside the
// exercise's own file, attn's public headers and the system's headers (GCC's and clang's own
// among them); "" when there is none.
std::string outside_dependency(const std::string& rule, const std::string& file) {
  const std::string include = toolchain().include().string() + "/";
  std::string word;
  std::vector<std::string> words;
  for (std::size_t i = 0; i <= rule.size(); ++i) {
    const char c = i < rule.size() ? rule[i] : ' ';
    if (c == '\\' && i + 1 < rule.size() && rule[i + 1] == ' ') {
      word += ' ';  // an escaped space inside a name
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\\') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string path = words[i];
    if (i == 0 && path.ends_with(":")) continue;  // the target
    if (path == file) continue;
    // clang names the system's headers from its own folder ("/usr/bin/../lib/gcc/../include/..."):
    // an absolute path through ".." counts as the file it reaches, links followed.
    if (path.starts_with("/") && path.find("/../") != std::string::npos) {
      std::error_code error;
      const fs::path reached = fs::canonical(path, error);
      if (!error) path = reached.string();
    }
    if (path.starts_with(include) && path.find("/../") == std::string::npos) continue;
    if ((path.starts_with("/usr/include/") || path.starts_with("/usr/lib/gcc/") ||
         path.starts_with("/usr/lib/llvm-")) &&
        path.find("/../") == std::string::npos) {
      continue;
    }
    return path.size() > 200 ? path.substr(0, 200) + "..." : path;
  }
  return "";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
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
  static const char* const kHelpers[] = {
      "attn::shape_string", "attn::Error::", "attn::Rng::", "attn::printable", "attn::error_kind"};
  std::vector<std::string> found;
  std::istringstream in(nm_output);
  for (std::string line; std::getline(in, line);) {
    // "                 U attn::softmax(...)": U undefined, w or v weak; all the same here.
    const std::size_t kind = line.find_first_not_of(' ');
    if (kind == std::string::npos || line.compare(kind + 1, 1, " ") != 0) continue;
    const std::string signature = line.substr(kind + 2);
    if (!signature.starts_with("attn::")) continue;
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
  auto readable = [&](const std::string& text) {
    return text.size() > 2000 ? text : std::regex_replace(text, recorded, "$1");
  };
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
  fs::path data;  // the probe of the data cases
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
      lesson.tests.push_back({info, TestStatus::error, 0.0, "", 0.0, {}});
      if (!info.data.empty()) data_tests_.push_back(info);
    }
    const auto start = std::chrono::steady_clock::now();
    lesson.built = build(lesson.build_log);
    lesson.build_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!lesson.built) {
      for (TestOutcome& test : lesson.tests) {
        test.status = TestStatus::error;
        test.output = shown(fmt::format("{} did not compile, so no test ran:\n{}",
                                        exercise_.source().filename().string(), lesson.build_log),
                            kMaxEvidence);
      }
      lesson.build_log = shown(lesson.build_log, kMaxLog);
      return lesson;
    }
    if (options_.progress) options_.progress(fmt::format("testing {}", exercise_.label()));
    int index = 0;
    // The visible tests first; the hidden tests' program exists only after they have all ended.
    for (const bool hidden : {false, true}) {
      for (TestOutcome& test : lesson.tests) {
        if (test.info.hidden != hidden) continue;
        if (!test.info.data.empty()) {
          test = run_data_test(test.info, ++index);
          continue;
        }
        if (hidden && programs_.hidden.empty()) {
          // Only now that no visible test's process is left: the hidden tests' probe, which the
          // linker reads from a copy (the grader's folder may be its owner's alone).
          std::string log;
          if (!link({"-Wl,--whole-archive", "probe.a", "-Wl,--no-whole-archive",
                     tool_.probe_main().string()},
                    tool_.hidden_probe(exercise_.stem), "hidden", log)) {
            test.output = shown("the hidden tests did not link:\n" + log, kMaxEvidence);
            continue;
          }
        }
        test = run_test(hidden ? programs_.hidden : programs_.visible, test.info, ++index);
      }
    }
    return lesson;
  }

  // The student's functions called on `cases`' arguments, each in its own confined run: what
  // each returned, or why it did not.
  CallsOutcome run_calls(const std::vector<DataCase>& cases) {
    CallsOutcome out;
    cases_ = cases;
    link_visible_ = false;
    out.built = build(out.build_log);
    if (!out.built) return out;
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      const fs::path dir = work_.run(static_cast<int>(i) + 1);
      const fs::path arguments = dir / "arguments";
      {
        std::ofstream file(arguments, std::ios::binary);
        file << cases_[i].arguments;
      }
      chmod(arguments.c_str(), 0644);
      const ProcessResult probe =
          run_probe(programs_.data, {data_probe_key(cases_[i]), "arguments"}, dir, arguments);
      CallResult call;
      const std::vector<grading::Record> records = grading::parse_records(probe.channel);
      if (ran_clean(probe) && records.size() == 2 &&
          records.front().kind == grading::RecordKind::value) {
        call.returned = true;
        call.value = records.front().payload;
      } else if (ran_clean(probe) && records.size() == 2) {
        call.problem = judge_data_case(cases_[i], probe.channel).evidence;
      } else {
        call.problem = fmt::format("{} did not return: {}", cases_[i].call,
                                   probe.timed_out || probe.signal != 0 || !probe.started
                                       ? probe.status(options_.test_timeout_seconds)
                                       : "the program ended before the call did");
      }
      out.calls.push_back(call);
    }
    return out;
  }

 private:
  Confinement build_confinement(const fs::path& write, std::vector<fs::path> extra) const {
    Confinement c;
    c.read = system_reads();
    c.read.push_back(tool_.include());
    c.read.insert(c.read.end(), extra.begin(), extra.end());
    c.write = write;
    c.processes = true;
    c.cpu_seconds = options_.build_timeout_seconds;
    c.address_space = std::size_t{4} << 30;
    c.file_size = std::size_t{512} << 20;
    return c;
  }

  bool build(std::string& log) {
    const fs::path source = exercise_.source();
    const std::string file = source.filename().string();
    std::string text;
    try {
      text = read_student_source(exercise_);
    } catch (const Error& e) {
      log = e.detail();
      return false;
    }
    // Anything that could name or probe another file is refused from the text alone, so that
    // the answer is the same whether that file exists or not.
    if (const std::string problem = source_problem(text); !problem.empty()) {
      log = fmt::format(
          "{}, {}, is not allowed in an exercise: include only the exercise's header, attn's "
          "public headers (\"base/tensor.hpp\", \"softmax.hpp\", ...) and system headers "
          "(<cmath>), by name",
          file, escape_controls(problem));
      return false;
    }
    {
      std::ofstream out(work_.build() / file, std::ios::binary);
      out << text;
    }
    if (options_.progress) options_.progress(fmt::format("building {}", exercise_.label()));
    const Confinement compile = build_confinement(work_.build(), {});
    const auto compiler = [&](std::vector<std::string> args) {
      std::vector<std::string> argv = {tool_.compiler};
      argv.insert(argv.end(), tool_.flags.begin(), tool_.flags.end());
      argv.insert(argv.end(), {"-std=c++20", "-O1", "-Wall", "-fdiagnostics-color=never",
                               "-I" + tool_.include().string()});
      argv.insert(argv.end(), args.begin(), args.end());
      return run_process(argv,
                         confined_options(compile, options_.build_timeout_seconds, work_.build()));
    };
    // What the preprocessor reads: the exercise, attn's public headers and the system's, nothing
    // else (asked before compiling, so that no message quotes another file).
    // The compiler's messages about the student's file: the first errors alone, unless asked.
    const auto messages = [&](const ProcessResult& result) {
      const std::string all =
          compiler_messages(result, work_.build(), options_.build_timeout_seconds);
      return options_.full_compiler_messages ? all : trim_compiler_messages(all, file).text;
    };
    const ProcessResult depends = compiler({"-M", file});
    if (!depends.ok()) {
      log = messages(depends);
      return false;
    }
    if (const std::string outside = outside_dependency(depends.out, file); !outside.empty()) {
      log = fmt::format(
          "{} includes {}, which is not allowed: include only the exercise's header, attn's "
          "public headers (\"base/tensor.hpp\", \"softmax.hpp\", ...) and system headers (<cmath>)",
          file, escape_controls(outside));
      return false;
    }
    const ProcessResult assembled = compiler({"-S", file, "-o", "student.s"});
    if (!assembled.ok()) {
      log = messages(assembled);
      return false;
    }
    // Nothing but what the compiler writes for C++ reaches the assembler: directives can read
    // files (.incbin, .include), and section names and asm labels carry text into the assembly.
    if (const std::string problem = assembly_problem(read_text(work_.build() / "student.s"));
        !problem.empty()) {
      log = fmt::format(
          "{}, {}, is not allowed in an exercise: write plain C++ (no asm, no "
          "section or asm-label attributes)",
          file, escape_controls(problem));
      return false;
    }
    const ProcessResult compiled = compiler({"-c", "student.s", "-o", "student.o"});
    if (!compiled.ok()) {
      log = messages(compiled);
      return false;
    }
    const ProcessResult symbols = run_process({"nm", "-C", "-u", "student.o"},
                                              confined_options(compile, 60.0, work_.build()));
    if (!symbols.ok()) {
      log = "nm could not read the compiled exercise: " + symbols.status(60.0);
      return false;
    }
    WorkDir::lock(work_.build());
    std::vector<std::string> allowed;
    {
      const fs::path list = tool_.core_calls(exercise_.stem);
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
    if (link_visible_ && fs::exists(tool_.visible_probe(exercise_.stem)) &&
        !link({"-Wl,--whole-archive", "probe.a", "-Wl,--no-whole-archive",
               tool_.probe_main().string()},
              tool_.visible_probe(exercise_.stem), "visible", log)) {
      return false;
    }
    return build_data_probe(compiler, log);
  }

  // The data cases' probe (data_cases.hpp), written here from the instructor's cases, compiled
  // and linked with the student's object like any probe.
  template <class Compiler>
  bool build_data_probe(const Compiler& compiler, std::string& log) {
    if (cases_.empty()) {
      for (const TestCaseInfo& info : data_tests_)
        cases_.push_back(find_case(info));
    }
    if (cases_.empty()) return true;
    WorkDir::for_child(work_.build());
    {
      std::ofstream out(work_.build() / "data_probe.cpp", std::ios::binary);
      out << data_probe_source(exercise_.header().filename().string(), cases_);
    }
    const ProcessResult compiled = compiler({"-c", "data_probe.cpp", "-o", "data_probe.o"});
    WorkDir::lock(work_.build());
    if (!compiled.ok()) {
      log =
          "the data cases' calls do not compile with this exercise's functions (tell your "
          "instructor):\n" +
          compiler_messages(compiled, work_.build(), options_.build_timeout_seconds);
      return false;
    }
    return link({(work_.build() / "data_probe.o").string()}, {}, "data", log);
  }

  DataCase find_case(const TestCaseInfo& info) const {
    for (const DataCase& c : read_data_cases(info.data.parent_path().parent_path())) {
      if (c.file == info.data) return c;
    }
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("{} is gone: reinstall the course", info.data.filename().string()));
  }

  // Links student.o with `objects` (and `probe`, copied in as probe.a when given) into
  // <work>/<name>/<name>, a folder of its own that the linker writes and nothing writes after it.
  // Unused functions of the core are left out and symbols stripped, so that the program holds no
  // core function the tests do not call.
  bool link(const std::vector<std::string>& objects, const fs::path& probe, const std::string& name,
            std::string& log) {
    const fs::path dir = work_.fresh(name);
    if (!probe.empty()) {
      const fs::path copy = dir / "probe.a";
      std::error_code ec;
      fs::copy_file(probe, copy, ec);
      if (ec) {
        log = fmt::format("cannot read {}: {}", probe.filename().string(), ec.message());
        return false;
      }
      chmod(copy.c_str(), 0644);
    }
    WorkDir::for_child(dir);
    const Confinement linking = build_confinement(dir, {tool_.lib(), work_.build()});
    std::vector<std::string> argv = {tool_.compiler};
    argv.insert(argv.end(), tool_.flags.begin(), tool_.flags.end());
    argv.push_back((work_.build() / "student.o").string());
    argv.insert(argv.end(), objects.begin(), objects.end());
    argv.insert(argv.end(), tool_.link.begin(), tool_.link.end());
    argv.insert(argv.end(), {"-Wl,--gc-sections", "-s", "-o", name});
    const ProcessResult linked =
        run_process(argv, confined_options(linking, options_.build_timeout_seconds, dir));
    WorkDir::lock(dir);
    if (!linked.ok()) {
      log = "linking failed (is every declared function defined?):\n" +
            compiler_messages(linked, work_.build(), options_.build_timeout_seconds);
      return false;
    }
    (name == "hidden" ? programs_.hidden
     : name == "data" ? programs_.data
                      : programs_.visible) = dir / name;
    return true;
  }

  // Runs a probe confined in a fresh folder: it reads the program, the system's libraries, the
  // inputs by name and `readable`, and writes nothing.
  ProcessResult run_probe(const fs::path& program, const std::vector<std::string>& args,
                          const fs::path& dir, const fs::path& readable = {}) {
    Confinement c;
    c.read = {program, "/usr/lib", "/lib", "/lib64"};
    if (!readable.empty()) c.read.push_back(readable);
    c.read_by_name = {tool_.inputs()};  // the inputs by name: their list names hidden tests
    c.processes = false;
    c.cpu_seconds = options_.test_timeout_seconds;
    c.address_space = options_.test_memory;
    c.file_size = std::size_t{16} << 20;
    ProcessOptions process = confined_options(c, options_.test_timeout_seconds, dir);
    process.env.emplace_back("ATTN_GRADE_INPUTS", tool_.inputs().string());
    process.max_output = 64 * 1024;
    process.channel = true;
    std::vector<std::string> argv = {program.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, process);
  }

  // Whether the probe ran to its end and sent whole records, ended.
  static bool ran_clean(const ProcessResult& probe) {
    bool whole = false;
    const std::vector<grading::Record> records = grading::parse_records(probe.channel, &whole);
    const bool ended = !records.empty() && records.back().kind == grading::RecordKind::end;
    return probe.ok() && ended && whole && !probe.channel_cut;
  }

  // The outcome from how the probe ended and, when it ended cleanly, the decision: `decided`
  // (the check reported), `passed`, and the evidence; `undecided` says why the check did not.
  TestOutcome settle(const TestCaseInfo& info, const ProcessResult& probe, bool decided,
                     bool passed, std::string evidence, const std::string& undecided) const {
    TestOutcome outcome;
    outcome.info = info;
    outcome.seconds = probe.seconds;
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
    } else if (!ran_clean(probe)) {
      outcome.status = TestStatus::error;
      evidence = fmt::format("the test program ended ({}) before the test finished\n",
                             probe.status(options_.test_timeout_seconds)) +
                 evidence;
    } else if (!decided) {
      outcome.status = TestStatus::error;
      evidence = undecided;
    } else {
      outcome.status = passed ? TestStatus::passed : TestStatus::failed;
    }
    std::string printed = probe.out + probe.err;
    if (!printed.empty() && outcome.status != TestStatus::passed) {
      if (printed.size() > 1000) printed = "..." + printed.substr(printed.size() - 1000);
      evidence += "your code printed:\n" + indent(printed, "  ");
    }
    outcome.output = shown(evidence, kMaxEvidence);
    outcome.score = outcome.status == TestStatus::passed ? info.points : 0.0;
    return outcome;
  }

  TestOutcome run_test(const fs::path& program, const TestCaseInfo& info, int index) {
    const ProcessResult probe = run_probe(program, {info.name}, work_.run(index));

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
    std::vector<std::string> notes;
    if (entry.is_object() && entry.contains("failures")) {
      const auto& failures = entry["failures"];
      for (std::size_t i = 0; i < failures.size() && i < 3; ++i)
        evidence += describe_failure(failures[i], exercise_, options_.test_memory >> 20);
      if (failures.size() > 3)
        evidence += fmt::format("... and {} more failed checks\n", failures.size() - 3);
    }
    if (entry.is_object() && entry.contains("notes")) {
      for (const auto& note : entry["notes"])
        notes.push_back(shown(note.get<std::string>(), kMaxEvidence));
    }
    const bool check_passed = entry.is_object() && entry.value("passed", false) &&
                              !entry.contains("fatal") && checked.ok();
    // The check is the instructor's program: its last words help them, never the student.
    const std::string said =
        checked.err.size() > 600 ? checked.err.substr(checked.err.size() - 600) : checked.err;
    TestOutcome outcome =
        settle(info, probe, entry.is_object(), check_passed, evidence,
               fmt::format("the grader's check did not report ({}): tell your instructor\n{}",
                           checked.status(check.timeout_seconds),
                           said.empty() ? "" : escape_controls(said) + "\n"));
    outcome.notes = notes;
    return outcome;
  }

  // A data case: its arguments written beside the probe, which alone may read them; attn itself
  // compares what came back with the expected value.
  TestOutcome run_data_test(const TestCaseInfo& info, int index) {
    std::size_t which = 0;
    while (which < data_tests_.size() && data_tests_[which].data != info.data)
      ++which;
    const DataCase& c = cases_.at(which);
    const fs::path dir = work_.run(index);
    const fs::path arguments = dir / "arguments";
    {
      std::ofstream out(arguments, std::ios::binary);
      out << c.arguments;
    }
    chmod(arguments.c_str(), 0644);
    if (programs_.data.empty()) {
      TestOutcome outcome;
      outcome.info = info;
      outcome.output = "the data cases' probe was not built";
      return outcome;
    }
    const ProcessResult probe =
        run_probe(programs_.data, {data_probe_key(c), "arguments"}, dir, arguments);
    const DataVerdict verdict = judge_data_case(c, probe.channel);
    return settle(info, probe, true, verdict.passed,
                  verdict.evidence.empty() ? "" : verdict.evidence + "\n", "");
  }

  const Exercise& exercise_;
  const GradeOptions& options_;
  const Toolchain& tool_;
  WorkDir work_;
  Programs programs_;
  std::vector<TestCaseInfo> data_tests_;
  std::vector<DataCase> cases_;  // the data cases, in data_tests_'s order
  bool link_visible_ = true;     // the visible tests' probe too (not for run_calls)
};

}  // namespace

fs::path make_work_folder() {
  const char* base_variable = std::getenv("ATTN_GRADE_TMPDIR");
  const fs::path base = base_variable != nullptr && *base_variable != '\0'
                            ? fs::absolute(base_variable)
                            : fs::path("/tmp");
  remove_stale_folders(base);
  std::string pattern = (base / work_folder_pattern()).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorKind::write_failed, "grade",
                fmt::format("cannot make a folder for grading in {}: {}; set "
                            "ATTN_GRADE_TMPDIR to a writable folder",
                            base.string(), std::strerror(errno)));
  }
  guard_folder(pattern);
  return pattern;
}

void remove_work_folder(const fs::path& folder) {
  std::error_code ec;
  fs::remove_all(folder, ec);
  release_folder(folder);
}

std::vector<TestCaseInfo> instructor_tests(const Exercise& exercise) {
  const fs::path folder = instructor_folder(exercise);
  if (!has_tests(folder, exercise.stem)) {
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("this attn's course has no lesson {}: grade a tree released "
                            "by this attn (`attn assignments release`)",
                            exercise.folder.filename().string()));
  }
  return lesson_tests(folder, exercise.stem);
}

CallsOutcome run_student_calls(const Exercise& exercise, const std::vector<DataCase>& cases,
                               const GradeOptions& options) {
  require_grader_out_of_reach(toolchain());
  LessonGrader grader(exercise, options);
  return grader.run_calls(cases);
}

LessonOutcome grade_exercise(const Exercise& exercise, const GradeOptions& options) {
  require_grader_out_of_reach(toolchain());
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
