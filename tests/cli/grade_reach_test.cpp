// Without Landlock (a kernel before 5.13), student code reads what its user may: attn grade
// refuses while the grader's part is within that user's reach, and grades once it is not
// (probe-findings-3.md N7). The kernel's lack of Landlock is played by a seccomp filter that makes
// Landlock's three calls fail with ENOSYS, as an older kernel answers, installed before attn runs.
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;
using attn::testing::ScratchDir;
using json = nlohmann::json;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Run {
  int exit_code = -1;
  std::string out, err;
};

// `program args...` with Landlock's calls (444 to 446 on x86-64) answering ENOSYS.
Run run_without_landlock(const fs::path& program, const std::vector<std::string>& args,
                         const fs::path& scratch) {
  const fs::path out = scratch / "out.txt", err = scratch / "err.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1), dup2(e, 2);
    std::vector<sock_filter> filter = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 444, 0, 2),
        BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 446, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    sock_fprog program_filter{static_cast<unsigned short>(filter.size()), filter.data()};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program_filter) != 0) {
      _exit(126);
    }
    std::vector<std::string> all = {program.string()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : all)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_text(out);
  run.err = read_text(err);
  return run;
}

}  // namespace

TEST_CASE(
    "without Landlock, grading waits until the grader's files are out of student code's reach (N7)",
    "[assignments][attacks]") {
  ScratchDir scratch("grade-reach");
  // A grader bundle, as an instructor uploads it: its attn grades with its own share/attn.
  const fs::path bundle = scratch.path / "bundle";
  REQUIRE(run_attn({"assignments", "release", "--grader", bundle.string()}).exit_code == 0);
  const fs::path attn = bundle / "bin" / "attn";
  const fs::path grader = bundle / "share" / "attn" / "grader";

  // The student's file reads the expected values and the hidden tests, and returns what it read.
  const fs::path tree = scratch.path / "student";
  REQUIRE(run_attn({"assignments", "release", "--out", tree.string()}).exit_code == 0);
  const fs::path source = tree / "lessons" / "03-softmax" / "softmax_exercise.cpp";
  const fs::path expected = grader / "expected" / "softmax" / "b2_t4_s6_softmax.npy";
  const fs::path tests = grader / "course" / "lessons" / "03-softmax" / "softmax_exercise_test.cpp";
  REQUIRE(fs::exists(expected));
  std::ofstream(source, std::ios::app) << R"(
#include <cstdio>
namespace {
__attribute__((constructor)) void peek() {
  for (const char* path : {")" << expected.string()
                                       << R"(", ")" << tests.string() << R"("}) {
    std::FILE* file = std::fopen(path, "rb");
    std::printf("OPEN %s -> %s\n", path, file != nullptr ? "READ" : "refused");
    if (file != nullptr) std::fclose(file);
  }
}
}
)";
  const std::vector<std::string> args = {
      "grade",      "--dir",    tree.string(),
      "--lesson",   "softmax",  "--format",
      "gradescope", "--output", (scratch.path / "results.json").string(),
      "--timeout",  "10"};

  // As the bundle is written, the grader's part is readable by all: refused, with the fix.
  const Run refused = run_without_landlock(attn, args, scratch.path);
  INFO(refused.err);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("no Landlock") != std::string::npos);
  const json report = json::parse(read_text(scratch.path / "results.json"));
  CHECK(report["score"] == 0.0);
  CHECK(report["output"].get<std::string>().find("no Landlock") != std::string::npos);
  if (geteuid() != 0) {
    // Student code would run as this user, who reads the grader's part: nothing can help.
    CHECK(refused.err.find("grade as root") != std::string::npos);
    return;
  }
  CHECK(refused.err.find("chmod -R go-rwx") != std::string::npos);

  // Out of nobody's reach, as run_autograder leaves it: graded, and the student's code reads
  // nothing of it.
  REQUIRE(std::system(("chmod -R go-rwx '" + grader.string() + "'").c_str()) == 0);
  const Run graded = run_without_landlock(attn, args, scratch.path);
  INFO(graded.err);
  CHECK(graded.exit_code == 1);
  const std::string results = read_text(scratch.path / "results.json");
  CHECK(results.find("READ") == std::string::npos);
  CHECK(results.find("-> refused") != std::string::npos);
  CHECK(results.find("no Landlock on this kernel") != std::string::npos);
}

TEST_CASE("run as root, grading refuses a share/attn that nobody cannot reach, in one line",
          "[assignments][attacks]") {
  if (geteuid() != 0) {
    WARN("not root: student code keeps this user, who reaches what attn reaches");
    return;
  }
  ScratchDir scratch("grade-private");
  // A bundle inside a folder only its owner may enter, as `mktemp -d` makes.
  const fs::path private_dir = scratch.path / "private";
  fs::create_directory(private_dir);
  fs::permissions(private_dir, fs::perms::owner_all);
  const fs::path bundle = private_dir / "bundle";
  REQUIRE(run_attn({"assignments", "release", "--grader", bundle.string()}).exit_code == 0);
  const fs::path tree = scratch.path / "student";
  REQUIRE(run_attn({"assignments", "release", "--out", tree.string()}).exit_code == 0);
  const std::string command = fmt::format(
      "'{}' grade --dir '{}' --lesson softmax 2>'{}' >/dev/null",
      (bundle / "bin" / "attn").string(), tree.string(), (scratch.path / "err.txt").string());
  const int status = std::system(command.c_str());
  CHECK(WEXITSTATUS(status) == 2);
  const std::string err = read_text(scratch.path / "err.txt");
  CHECK(err.find("nobody, the user student code is compiled and run as, cannot reach") !=
        std::string::npos);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
}
