// `attn grade` and `attn check` ended from outside (probe findings N5): SIGTERM, SIGINT and SIGHUP
// end every process the grading started and remove its work folder before attn ends by the same
// signal; under SIGKILL its children die with it, and the next run removes a folder whose owner
// is gone. Each case waits (no timing asserted) until the confined compiler or a test runs.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

// The file's text; "" when it cannot be read (a process's /proc entry goes when it ends).
std::string text_or_empty(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A student file whose preprocessing takes minutes: it includes itself twice per level.
const char* kSlowCompile = R"(#if __INCLUDE_LEVEL__ < 26
#include "softmax_exercise.cpp"
#include "softmax_exercise.cpp"
#endif
)";

// A student file that compiles and then spins in its first test, deaf to the signals a polite
// end would send.
const char* kSpinningTest = R"(
#include <csignal>
#include <stdexcept>
#include "softmax_exercise.hpp"
namespace {
__attribute__((constructor)) void deaf() {
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGXCPU, SIG_IGN);
  std::signal(SIGALRM, SIG_IGN);
}
volatile unsigned long spins = 0;
}
namespace attn::exercise {
Tensor3 softmax(const Tensor3&) { for (;;) ++spins; }
Tensor2 causal_mask(std::size_t) { for (;;) ++spins; }
Tensor3 apply_mask(const Tensor3&, const Tensor2&) { for (;;) ++spins; }
}
)";

struct Running {
  pid_t pid = 0;
  pid_t group = 0;
  std::string comm;
};

// The live processes (not zombies) whose working folder is under `dir`, or whose process group
// is one of `groups`.
std::vector<Running> processes_under(const fs::path& dir, const std::set<pid_t>& groups = {}) {
  std::vector<Running> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = text_or_empty(entry.path() / "stat");
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    char state = 0;
    pid_t parent = 0, group = 0;
    fields >> state >> parent >> group;
    if (state == 'Z' || state == 'X') continue;
    const fs::path cwd = fs::read_symlink(entry.path() / "cwd", ec);
    const bool inside = !ec && cwd.string().starts_with(dir.string() + "/");
    if (inside || groups.count(group) > 0) {
      found.push_back({static_cast<pid_t>(std::stol(name)), group,
                       stat.substr(stat.find('(') + 1, paren - stat.find('(') - 1)});
    }
  }
  return found;
}

std::vector<std::string> grading_folders(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  return names;
}

pid_t start_attn(const std::vector<std::string>& args, const fs::path& tmp) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_RDWR);
    dup2(null, STDIN_FILENO), dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
    setenv("ATTN_GRADE_TMPDIR", tmp.c_str(), 1);
    setenv("ATTN_MAX_MEMORY", "1G", 1);
    std::vector<char*> argv = {const_cast<char*>(ATTN_EXECUTABLE)};
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(ATTN_EXECUTABLE, argv.data());
    _exit(127);
  }
  return pid;
}

// Grades a tree whose softmax exercise is `source`, sends `sig` once a process named `waited`
// runs in the grading's folder, and checks that nothing is left behind.
void end_grading(const std::string& source, const std::string& waited, int sig,
                 const std::string& command = "grade") {
  INFO("signal " << sig << " while " << waited << " runs (attn " << command << ")");
  ScratchDir scratch(fmt::format("signals-{}-{}", waited, sig));
  const fs::path tree = scratch.path / "student";
  const fs::path tmp = scratch.path / "tmp";
  fs::create_directories(tmp);
  REQUIRE(run_attn({"assignments", "release", "--out", tree.string()}).exit_code == 0);
  std::ofstream(tree / "lessons" / "03-softmax" / "softmax_exercise.cpp") << source;
  const std::vector<std::string> args =
      command == "grade"
          ? std::vector<std::string>{"grade",   "--dir",     tree.string(), "--lesson",
                                     "softmax", "--timeout", "120"}
          : std::vector<std::string>{"check",       "softmax",   "--dir",
                                     tree.string(), "--timeout", "120"};
  const pid_t attn = start_attn(args, tmp);
  REQUIRE(attn > 0);

  // Wait (generously: the machine may be loaded) for the process, noting the grading's groups.
  std::set<pid_t> groups;
  bool seen = false;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    for (const Running& p : processes_under(tmp)) {
      groups.insert(p.group);
      // GCC's compiler proper runs under its driver; clang's in the driver itself.
      seen = seen || p.comm == waited || (waited == "cc1plus" && p.comm.starts_with("clang"));
    }
    if (waitpid(attn, &status, WNOHANG) == attn) FAIL("attn ended before " << waited << " ran");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!seen) {
    kill(attn, SIGKILL);
    waitpid(attn, &status, 0);
  }
  REQUIRE(seen);
  REQUIRE(kill(attn, sig) == 0);
  REQUIRE(waitpid(attn, &status, 0) == attn);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == sig);
  if (sig != SIGKILL) {
    // Removed before attn ended.
    CHECK(grading_folders(tmp).empty());
  }
  // Killed processes end as soon as the kernel has taken them down.
  std::vector<Running> left = processes_under(tmp, groups);
  for (int i = 0; i < 1000 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = processes_under(tmp, groups);
  }
  for (const Running& p : left)
    UNSCOPED_INFO("left: " << p.pid << " " << p.comm);
  CHECK(left.empty());
  for (const Running& p : left)
    kill(p.pid, SIGKILL);
  if (sig == SIGKILL) {
    // The next run leaves no folder of this one.
    run_attn({"grade", "--dir", tree.string(), "--lesson", "scaling", "--timeout", "10"},
             {"ATTN_GRADE_TMPDIR=" + tmp.string()});
    CHECK(grading_folders(tmp).empty());
  }
}

}  // namespace

TEST_CASE("SIGTERM to attn grade during a long compile ends the compiler and removes its folder",
          "[assignments][signals]") {
  end_grading(kSlowCompile, "cc1plus", SIGTERM);
}

TEST_CASE("SIGINT to attn grade during a long compile ends the compiler and removes its folder",
          "[assignments][signals]") {
  end_grading(kSlowCompile, "cc1plus", SIGINT);
}

TEST_CASE("SIGHUP to attn check during a long compile ends the compiler and removes its folder",
          "[assignments][signals]") {
  end_grading(kSlowCompile, "cc1plus", SIGHUP, "check");
}

TEST_CASE("SIGKILL to attn grade during a long compile takes the compiler with it",
          "[assignments][signals]") {
  end_grading(kSlowCompile, "cc1plus", SIGKILL);
}

TEST_CASE("SIGTERM to attn grade ends a test that ignores SIGTERM", "[assignments][signals]") {
  end_grading(kSpinningTest, "visible", SIGTERM);
}

TEST_CASE("SIGINT to attn check ends a test that ignores SIGTERM", "[assignments][signals]") {
  end_grading(kSpinningTest, "visible", SIGINT, "check");
}

TEST_CASE("SIGHUP to attn grade ends a test that ignores SIGTERM", "[assignments][signals]") {
  end_grading(kSpinningTest, "visible", SIGHUP);
}

TEST_CASE("SIGKILL to attn grade takes a test that ignores SIGTERM with it",
          "[assignments][signals]") {
  end_grading(kSpinningTest, "visible", SIGKILL);
}

TEST_CASE("a grading folder whose attn is gone is removed by the next run, a live one is kept",
          "[assignments][signals]") {
  ScratchDir scratch("signals-stale");
  const fs::path tmp = scratch.path / "tmp";
  // A process id that was in use and is no longer.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  // Folders are named attn-grade-<pid namespace>-<pid>-XXXXXX.
  const std::string link = fs::read_symlink("/proc/self/ns/pid").string();
  const std::string space = link.substr(link.find('[') + 1, link.find(']') - link.find('[') - 1);
  const fs::path stale = tmp / fmt::format("attn-grade-{}-{}-AbC123", space, gone);
  const fs::path live = tmp / fmt::format("attn-grade-{}-{}-AbC123", space, getpid());
  // The same process id in another namespace (another container sharing the folder) is not ours.
  const fs::path elsewhere = tmp / fmt::format("attn-grade-{}1-{}-AbC123", space, gone);
  const fs::path other = tmp / "attn-grade-notmine";
  for (const fs::path& dir : {stale / "build", live / "build", elsewhere, other})
    fs::create_directories(dir);
  std::ofstream(stale / "build" / "student.o") << "x";
  const fs::path tree = scratch.path / "student";
  REQUIRE(run_attn({"assignments", "release", "--out", tree.string()}).exit_code == 0);
  run_attn({"grade", "--dir", tree.string(), "--lesson", "scaling", "--timeout", "10"},
           {"ATTN_GRADE_TMPDIR=" + tmp.string()});
  CHECK(!fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(elsewhere));
  CHECK(fs::exists(other));
}
