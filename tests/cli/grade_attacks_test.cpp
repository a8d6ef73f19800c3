// A hostile student against `attn grade`: each attack of the probe findings (G1-G7, S1-S6) is
// written into a freshly released tree and graded. The grader decides from what the student's
// code returns, never from what it writes, and confines it: no attack may score, leak the
// instructor's files, change them, outlive the grading or drive the grader's terminal.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
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
using nlohmann::json;

namespace {

const fs::path kShare = fs::path(ATTN_EXECUTABLE_DIR) / "share" / "attn";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool landlock() {
  return syscall(444, nullptr, 0, 1) > 0;
}

// A released student tree in `dir`/student whose softmax exercise is the stub plus `attack`.
fs::path tree_with_attack(const fs::path& dir, const std::string& attack, bool keep_stub = true) {
  const fs::path student = dir / "student";
  const auto released = run_attn({"assignments", "release", "--out", student.string()});
  REQUIRE(released.exit_code == 0);
  const fs::path source = student / "lessons" / "03-softmax" / "softmax_exercise.cpp";
  const std::string stub = read_text(source);
  std::ofstream(source, std::ios::binary) << (keep_stub ? stub + "\n" : std::string()) << attack;
  return student;
}

struct Graded {
  attn::testing::RunResult run;
  json report;
};

Graded grade(const fs::path& tree, std::vector<std::string> lessons = {"softmax"},
             const std::vector<std::string>& more = {}) {
  const fs::path results = tree.parent_path() / "results.json";
  std::vector<std::string> args = {"grade",          "--dir",      tree.string(),
                                   "--format",       "gradescope", "--output",
                                   results.string(), "--timeout",  "10"};
  for (const std::string& lesson : lessons)
    args.insert(args.end(), {"--lesson", lesson});
  args.insert(args.end(), more.begin(), more.end());
  Graded g;
  g.run = run_attn(args);
  INFO(g.run.err);
  REQUIRE(fs::exists(results));
  g.report = json::parse(read_text(results));
  return g;
}

double max_score(const json& report) {
  double total = 0;
  for (const json& test : report["tests"])
    total += test["max_score"].get<double>();
  return total;
}

std::string all_output(const json& report) {
  std::string text = report.value("output", "");
  for (const json& test : report["tests"])
    text += test["output"].get<std::string>() + "\n";
  return text;
}

// Forges every kind of verdict the old grader trusted: a Catch2-style report beside the program
// and in the working folder, and the end record of the probe's channel; then leaves at once.
const char* kForge = R"(
#include <fcntl.h>
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
namespace {
void forge() {
  const char* report = "{\"tests\":[{\"name\":\"x\",\"passed\":true}]}\n";
  for (const char* path : {"report.json", "../report.json", "../trusted/report-1.json"}) {
    if (FILE* f = std::fopen(path, "w")) { std::fputs(report, f); std::fclose(f); }
  }
  const unsigned char end[] = {3, 0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0};
  (void)!write(3, end, sizeof end);
}
)";

}  // namespace

TEST_CASE("a constructor that forges a passing report and leaves scores nothing (G1)",
          "[assignments][attacks]") {
  ScratchDir scratch("attack-ctor");
  const fs::path tree = tree_with_attack(
      scratch.path, std::string(kForge) +
                        "__attribute__((constructor)) void early() { forge(); _exit(0); }\n}\n");
  const Graded g = grade(tree);
  CHECK(g.run.exit_code == 1);
  CHECK(g.report["score"] == 0.0);
  CHECK(max_score(g.report) > 10);
  for (const json& test : g.report["tests"]) {
    INFO(test["name"].get<std::string>() << ": " << test["output"].get<std::string>());
    CHECK(test["status"] == "failed");
  }
}

TEST_CASE("a destructor or atexit handler that forges a report scores nothing (G1)",
          "[assignments][attacks]") {
  for (
      const char* ending :
      {"struct Late { ~Late() { forge(); _exit(0); } } late;\n}\n",
       "__attribute__((constructor)) void early() { std::atexit([] { forge(); _exit(0); }); }\n}\n"}) {
    INFO(ending);
    ScratchDir scratch("attack-dtor");
    const Graded g = grade(tree_with_attack(scratch.path, std::string(kForge) + ending));
    CHECK(g.report["score"] == 0.0);
  }
}

TEST_CASE("student code cannot rewrite another lesson's tests or their points (G3)",
          "[assignments][attacks]") {
  ScratchDir scratch("attack-points");
  const fs::path instructor =
      kShare / "grader" / "course" / "lessons" / "02-scaling" / "scaling_exercise_test.cpp";
  const std::string before = read_text(instructor);
  const fs::path student_tests =
      scratch.path / "student" / "lessons" / "02-scaling" / "scaling_exercise_test.cpp";
  const std::string attack = fmt::format(R"(
#include <cstdio>
namespace {{
__attribute__((constructor)) void rewrite() {{
  for (const char* path : {{"{}", "{}"}}) {{
    if (FILE* f = std::fopen(path, "w")) {{
      std::fputs("TEST_CASE(\"free points\", \"[scaling][points=1000]\") {{}}\n", f);
      std::fclose(f);
    }}
  }}
}}
}}
)",
                                         instructor.string(), student_tests.string());
  const fs::path tree = tree_with_attack(scratch.path, attack);
  // The student's own copy of lesson 02's tests, rewritten by hand, changes nothing either.
  std::ofstream(student_tests) << "TEST_CASE(\"free points\", \"[scaling][points=1000]\") {}\n";
  const Graded g = grade(tree, {"softmax", "scaling"});
  CHECK(read_text(instructor) == before);
  CHECK(g.report["score"] == 0.0);
  double scaling = 0;
  for (const json& test : g.report["tests"]) {
    CHECK(test["name"].get<std::string>().find("free points") == std::string::npos);
    if (test["tags"][0] == "scaling") scaling += test["max_score"].get<double>();
  }
  CHECK(scaling > 0);
  CHECK(scaling < 100);
}

TEST_CASE("an #include of the solution, of any other file, or .incbin does not compile (G2, S4)",
          "[assignments][attacks]") {
  ScratchDir scratch("attack-include");
  const fs::path secret = scratch.path / "secret.txt";
  std::ofstream(secret) << "API_TOKEN=sk-live-0123456789 grader secret line\n";
  const std::string solution =
      (kShare / "grader" / "course" / "lessons" / "03-softmax" / "softmax_exercise.cpp").string();
  for (const std::string& attack : std::vector<std::string>{
           "#include \"../../../lessons/03-softmax/softmax_exercise.cpp\"\n",
           "#include \"" + solution + "\"\n", "#include \"" + secret.string() + "\"\n",
           "#define SECRET \"" + secret.string() + "\"\n#include SECRET\n",
           "#inc\\\nlude \"" + secret.string() + "\"\n",
           "asm(\".section .rodata\\n.incbin \\\"" + secret.string() + "\\\"\\n.previous\");\n",
           "#include </etc/passwd>\n", "%:include \"" + secret.string() + "\"\n",
           "\xef\xbb\xbf#include \"" + secret.string() + "\"\n",
           "const char* s = \"/*\";\n#include \"" + secret.string() + "\"\n// */\n",
           "asm(\".include \\\"" + secret.string() + "\\\"\");\n",
           "asm(\".inc\" \"bin \\\"" + secret.string() + "\\\"\");\n"}) {
    INFO(attack);
    ScratchDir dir("attack-include-case");
    const Graded g = grade(tree_with_attack(dir.path, attack, false));
    CHECK(g.report["score"] == 0.0);
    const std::string output = all_output(g.report);
    CHECK(output.find("sk-live") == std::string::npos);
    CHECK(output.find("root:") == std::string::npos);
    // Refused before compiling, or the file cannot even be opened (Landlock; a relative path
    // from the private copy reaches nothing), in GCC's words or clang's (the sanitized build).
    bool refused = false;
    for (const char* words :
         {"is not allowed", "Permission denied", "No such file", "file not found",
          "Could not find incbin file", "Could not find include file"}) {
      refused = refused || output.find(words) != std::string::npos;
    }
    CHECK(refused);
  }
}

TEST_CASE("calling the core's own answer to the exercise, by any name, does not compile (G4)",
          "[assignments][attacks]") {
  ScratchDir scratch("attack-core");
  const fs::path tree = tree_with_attack(scratch.path, R"(
#include "softmax.hpp"
namespace attn::exercise {
Tensor3 softmax(const Tensor3& scores) { return attn::softmax(scores); }
Tensor2 causal_mask(std::size_t tokens) { return attn::causal_mask(tokens); }
Tensor3 apply_mask(const Tensor3& s, const Tensor2& m) { return attn::apply_mask(s, m); }
}
)",
                                         false);
  const Graded g = grade(tree);
  CHECK(g.report["score"] == 0.0);
  CHECK(all_output(g.report).find("calls attn::apply_mask, attn::causal_mask and attn::softmax "
                                  "from attn's core") != std::string::npos);

  // The same answer under another name of the core's.
  ScratchDir other("attack-core-other");
  const Graded renamed = grade(tree_with_attack(other.path, R"(
#include "softmax.hpp"
#include "matmul.hpp"
namespace attn::exercise {
Tensor3 softmax(const Tensor3& scores) { return attn::softmax_naive(scores); }
Tensor2 causal_mask(std::size_t tokens) {
  Tensor3 unit({1, tokens, tokens});
  unit.fill(0.0f);
  (void)attn::batched_matmul(unit, unit);
  throw std::logic_error("not implemented");
}
Tensor3 apply_mask(const Tensor3&, const Tensor2&) { throw std::logic_error("not implemented"); }
}
)",
                                                false));
  CHECK(renamed.report["score"] == 0.0);
  CHECK(all_output(renamed.report).find("calls attn::softmax_naive and attn::batched_matmul") !=
        std::string::npos);
}

TEST_CASE(
    "student code cannot read the hidden tests, solutions or expected values, nor write "
    "outside its folder (S1, S5)",
    "[assignments][attacks]") {
  if (!landlock()) {
    WARN("this kernel has no Landlock: files are confined by the user's permissions only");
    return;
  }
  ScratchDir scratch("attack-files");
  const fs::path outside = scratch.path / "ESCAPED-FROM-GRADER.txt";
  const std::string attack = fmt::format(
      R"(
#include <cstdio>
#include <string>
namespace attn::exercise {{
Tensor3 softmax(const Tensor3& scores) {{
  for (const char* path : {{"{}", "{}", "{}"}}) {{
    if (FILE* f = std::fopen(path, "r")) {{
      char line[4096];
      while (std::fgets(line, sizeof line, f)) std::printf("LEAK %s", line);
      std::fclose(f);
    }} else {{
      std::printf("cannot read %s\n", path);
    }}
  }}
  for (const char* path : {{"{}"}}) {{
    if (FILE* f = std::fopen(path, "r")) {{ std::printf("can read the inputs\n"); std::fclose(f); }}
  }}
  for (const char* path : {{"{}", "{}", "{}", "{}"}}) {{
    if (FILE* f = std::fopen(path, "a")) {{ std::printf("WRITABLE %s\n", path); std::fclose(f); }}
  }}
  if (FILE* f = std::fopen("{}", "w")) {{ std::fputs("escaped\n", f); std::fclose(f); }}
  throw std::logic_error("done");
}}
}}
)",
      (kShare / "grader" / "course" / "lessons" / "03-softmax" / "softmax_exercise_test.cpp")
          .string(),
      (kShare / "grader" / "course" / "lessons" / "04-attention" / "attention_exercise.cpp")
          .string(),
      (kShare / "grader" / "expected" / "softmax" / "b2_t4_s6_softmax.npy").string(),
      (kShare / "inputs" / "softmax" / "b2_t4_s6_scores.npy").string(),
      (kShare / "grader" / "course" / "lessons" / "03-softmax" / "softmax_exercise_test.cpp")
          .string(),
      (kShare / "grader" / "expected" / "softmax" / "b2_t4_s6_softmax.npy").string(),
      (kShare / "inputs" / "softmax" / "b2_t4_s6_scores.npy").string(),
      (scratch.path / "student" / "lessons" / "03-softmax" / "softmax_exercise.cpp").string(),
      outside.string());
  const fs::path tree = tree_with_attack(scratch.path,
                                         "#include \"softmax_exercise.hpp\"\n"
                                         "#include <stdexcept>\n" +
                                             attack + R"(
namespace attn::exercise {
Tensor2 causal_mask(std::size_t) { throw std::logic_error("not implemented"); }
Tensor3 apply_mask(const Tensor3&, const Tensor2&) { throw std::logic_error("not implemented"); }
}
)",
                                         false);
  const Graded g = grade(tree);
  const std::string output = all_output(g.report);
  CHECK(g.report["score"] == 0.0);
  CHECK(output.find("LEAK") == std::string::npos);
  CHECK(output.find("WRITABLE") == std::string::npos);
  CHECK(output.find("HIDDEN") == std::string::npos);
  CHECK(output.find("cannot read") != std::string::npos);
  CHECK(!fs::exists(outside));
  // The inputs are the one thing it may read, and it may not change them.
  CHECK(output.find("can read the inputs") != std::string::npos);
}

TEST_CASE("nothing the student's code starts outlives attn grade (S2)", "[assignments][attacks]") {
  ScratchDir scratch("attack-daemon");
  // Each process the attack starts names itself with a mark of this run (its comm), so that other
  // tests grading at the same time do not count.
  const std::string mark = fmt::format("attnd{}", ::getpid());
  const fs::path tree = tree_with_attack(scratch.path, fmt::format(R"(
#include <cstdio>
#include <sys/prctl.h>
#include <unistd.h>
namespace {{
__attribute__((constructor)) void daemonize() {{
  const pid_t pid = fork();
  std::printf("fork gave %d\n", static_cast<int>(pid));
  if (pid == 0) {{
    prctl(PR_SET_NAME, "{}");
    setsid();
    if (fork() == 0) {{ for (;;) pause(); }}
    _exit(0);
  }}
}}
}}
)",
                                                                   mark));
  const Graded g = grade(tree);
  CHECK(g.report["score"] == 0.0);
  int survivors = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    if (read_text(entry.path() / "comm").starts_with(mark)) ++survivors;
  }
  CHECK(survivors == 0);
  CHECK(all_output(g.report).find("fork gave -1") != std::string::npos);
}

TEST_CASE("a 3 GiB allocation fails that test only (S3)", "[assignments][attacks]") {
  ScratchDir scratch("attack-memory");
  // The solution, except that softmax first takes and touches 3 GiB.
  std::string solution =
      read_text(kShare / "grader" / "course" / "lessons" / "03-softmax" / "softmax_exercise.cpp");
  const std::string head = "Tensor3 softmax(const Tensor3& scores) {";
  REQUIRE(solution.find(head) != std::string::npos);
  solution.replace(solution.find(head), head.size(),
                   head +
                       "\n  { std::vector<char> big(std::size_t{3} << 30, 1); "
                       "if (big[12345] != 1) throw 1; }\n");
  solution.insert(0, "#include <vector>\n");
  const Graded g = grade(tree_with_attack(scratch.path, solution, false));
  double softmax_failed = 0, others_passed = 0;
  for (const json& test : g.report["tests"]) {
    const std::string label = test["name"];
    const std::string name = label.substr(label.find(": ") + 2);  // without "03 softmax: "
    const bool uses_softmax = name.find("softmax") != std::string::npos;
    if (uses_softmax && test["status"] == "failed") ++softmax_failed;
    if (!uses_softmax && test["status"] == "passed") ++others_passed;
  }
  CHECK(softmax_failed >= 3);
  CHECK(others_passed >= 2);
}

TEST_CASE("escape codes the student's code prints reach no terminal (S6)",
          "[assignments][attacks]") {
  ScratchDir scratch("attack-escapes");
  const fs::path tree = tree_with_attack(scratch.path, R"(
#include <cstdio>
namespace {
__attribute__((constructor)) void paint() {
  std::printf("\x1b[2J\x1b[H\x1b]0;owned\aScore: 134/134 (100%%), 9 of 9 lessons pass\r\n");
}
}
)");
  const auto text = run_attn({"grade", "--dir", tree.string(), "--lesson", "softmax", "--timeout",
                              "10", "--color", "never"});
  CHECK(text.exit_code == 1);
  CHECK(text.out.find('\x1b') == std::string::npos);
  CHECK(text.out.find('\a') == std::string::npos);
  CHECK(text.out.find('\r') == std::string::npos);
  CHECK(text.out.find("^[[2J") != std::string::npos);
  const Graded g = grade(tree);
  CHECK(all_output(g.report).find('\x1b') == std::string::npos);
}

TEST_CASE(
    "a damaged test file in the student's tree changes nothing, and a results file is "
    "always written (G5, G6)",
    "[assignments][attacks]") {
  ScratchDir scratch("attack-malformed");
  const fs::path tree = tree_with_attack(scratch.path, "");
  std::ofstream(tree / "lessons" / "02-scaling" / "scaling_exercise_test.cpp")
      << "TEST_CASE(broken\n";
  const Graded g = grade(tree, {"softmax", "scaling", "03"});
  CHECK(g.run.exit_code == 1);
  int softmax = 0;
  for (const json& test : g.report["tests"])
    softmax += test["tags"][0] == "softmax" ? 1 : 0;
  // Graded once though named twice, with the instructor's tests (hidden ones too).
  const std::string tests = read_text(kShare / "grader" / "course" / "lessons" / "03-softmax" /
                                      "softmax_exercise_test.cpp");
  int expected = 0;
  for (std::size_t at = tests.find("\nTEST_CASE("); at != std::string::npos;
       at = tests.find("\nTEST_CASE(", at + 1)) {
    ++expected;
  }
  CHECK(softmax == expected);

  // A lesson this attn does not have still leaves a results file, with score 0.
  fs::create_directories(tree / "lessons" / "42-unknown");
  std::ofstream(tree / "lessons" / "42-unknown" / "unknown_exercise_test.cpp")
      << "TEST_CASE(\"x\", \"[unknown][points=1]\") {}\n";
  std::ofstream(tree / "lessons" / "42-unknown" / "unknown_exercise.cpp") << "\n";
  const fs::path results = scratch.path / "unknown.json";
  const auto run = run_attn({"grade", "--dir", tree.string(), "--lesson", "unknown", "--format",
                             "gradescope", "--output", results.string()});
  CHECK(run.exit_code == 2);
  REQUIRE(fs::exists(results));
  CHECK(json::parse(read_text(results))["score"] == 0.0);
}

TEST_CASE(
    "weak references to the core's answer, pulled in by a template it defines, score "
    "nothing (review)",
    "[assignments][attacks]") {
  ScratchDir scratch("attack-weak");
  const Graded g = grade(tree_with_attack(scratch.path, R"(
#include "softmax_exercise.hpp"
#include <stdexcept>
namespace attn {
Tensor3 softmax(const Tensor3&) __attribute__((weak));
Tensor2 causal_mask(std::size_t) __attribute__((weak));
Tensor3 apply_mask(const Tensor3&, const Tensor2&) __attribute__((weak));
}
extern "C" void pull() asm("_ZN2xt10xbroadcastINS_7xscalarIfEESt5arrayImLm2EEED1Ev");
__attribute__((used)) void (*volatile keep)() = &pull;
namespace attn::exercise {
Tensor3 softmax(const Tensor3& s) { Tensor3 (*f)(const Tensor3&) = &attn::softmax; return f(s); }
Tensor2 causal_mask(std::size_t t) { Tensor2 (*f)(std::size_t) = &attn::causal_mask; return f(t); }
Tensor3 apply_mask(const Tensor3& s, const Tensor2& m) {
  Tensor3 (*f)(const Tensor3&, const Tensor2&) = &attn::apply_mask;
  return f(s, m);
}
}
)",
                                          false));
  CHECK(g.report["score"] == 0.0);
  CHECK(all_output(g.report).find("from attn's core") != std::string::npos);
}

TEST_CASE(
    "links in the student's tree reach nothing: a linked lesson folder, a linked .attn, "
    "a FIFO for the exercise (review)",
    "[assignments][attacks]") {
  ScratchDir scratch("attack-links");
  const fs::path tree = tree_with_attack(scratch.path, "");
  // The lesson folder as a link to the instructor's copy, which holds the solution.
  const fs::path folder = tree / "lessons" / "03-softmax";
  fs::remove_all(folder);
  fs::create_directory_symlink(kShare / "grader" / "course" / "lessons" / "03-softmax", folder);
  // .attn as a link to a folder elsewhere, with a file the grader must not touch.
  const fs::path elsewhere = scratch.path / "elsewhere";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / "progress.json") << "victim\n";
  fs::create_directory_symlink(elsewhere, tree / ".attn");
  const Graded g = grade(tree);
  CHECK(g.report["score"] == 0.0);
  CHECK(all_output(g.report).find("not a link") != std::string::npos);
  CHECK(read_text(elsewhere / "progress.json") == "victim\n");

  // The exercise file as a FIFO: graded (as missing), never a hang.
  fs::remove(folder);
  fs::create_directories(folder);
  REQUIRE(mkfifo((folder / "softmax_exercise.cpp").c_str(), 0644) == 0);
  const Graded fifo = grade(tree);
  CHECK(fifo.report["score"] == 0.0);
}

TEST_CASE(
    "a test cannot make files, folders, shared memory or signal other processes, and a "
    "huge line or odd bytes break nothing (review)",
    "[assignments][attacks]") {
  ScratchDir scratch("attack-resources");
  const Graded g = grade(tree_with_attack(scratch.path, std::string(R"(
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>
namespace {
__attribute__((constructor)) void resources() {
  std::printf("mkdir: %s\n", mkdir("deep", 0755) == 0 ? "MADE" : std::strerror(errno));
  FILE* f = std::fopen("big.bin", "w");
  std::printf("create: %s\n", f ? "MADE" : std::strerror(errno));
  if (f) std::fclose(f);
  std::printf("shm: %s\n", shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0666) >= 0 ? "MADE"
                                                                               : std::strerror(errno));
  std::printf("kill parent: %s\n", kill(getppid(), 0) == 0 ? "SENT" : std::strerror(errno));
  std::printf("C1 \xc2\x9b" "2J bidi \xe2\x80\xae invalid \x9b end\n");
  std::fflush(stdout);
  throw std::runtime_error("bad bytes \xff\xfe");
}
}
)") + "// " + std::string(60000, ' ') + "\n"));
  CHECK(g.report["score"] == 0.0);
  const std::string output = all_output(g.report);
  CHECK(output.find("MADE") == std::string::npos);
  CHECK(output.find("SENT") == std::string::npos);
  CHECK(output.find("mkdir: ") != std::string::npos);
  CHECK(output.find("<U+009B>") != std::string::npos);
  CHECK(output.find("<U+202E>") != std::string::npos);
  CHECK(output.find("\\x9b") != std::string::npos);
  CHECK(output.find("\xc2\x9b") == std::string::npos);
  CHECK(!fs::exists(scratch.path / "student" / "deep"));
}

TEST_CASE(
    "section names, asm labels and _Pragma carry no directive to the assembler, asm stays "
    "refused (N6)",
    "[assignments][attacks]") {
  const std::string incbin = R"(.incbin \"/usr/include/stdio.h\")";
  for (const std::string& attack : std::vector<std::string>{
           // The probe's attack: newlines in a section name.
           R"(__attribute__((used, section(".rodata\n.globl leak_stdio\nleak_stdio:\n)" + incbin +
               R"(\n.byte 0\n.globl leak_exp\nleak_exp:\n#"))) const char marker1[] = "x";
extern "C" const char leak_stdio[];
)",
           // ';' separates statements as a newline does.
           R"(__attribute__((used, section(".rodata;)" + incbin +
               R"(;#"))) const char marker2[] = "x";
)",
           R"([[gnu::used, gnu::section(".rodata\n)" + incbin +
               R"(\n#")]] const char marker3[] = "x";
)",
           // An asm label is written into the assembly as it is.
           R"(extern "C" int hidden_value asm("hidden_value\n)" + incbin + R"(\n");
int read_hidden() { return hidden_value; }
)",
           R"(_Pragma("GCC dependency \"/usr/include/stdio.h\"")
)",
           "int quiet() { asm(\"nop\"); return 0; }\n"}) {
    INFO(attack);
    ScratchDir dir("attack-assembly");
    const Graded g = grade(tree_with_attack(dir.path, attack));
    CHECK(g.report["score"] == 0.0);
    const std::string output = all_output(g.report);
    CHECK(output.find("is not allowed in an exercise") != std::string::npos);
    // The refusal names what is refused, not the file it would have read.
    CHECK(output.find("stdio.h") == std::string::npos);
  }
}

TEST_CASE("an #include or __has_include of a grader file answers the same whether it exists (N9)",
          "[assignments][attacks]") {
  ScratchDir scratch("attack-oracle");
  const fs::path tree = tree_with_attack(scratch.path, "");
  const fs::path source = tree / "lessons" / "03-softmax" / "softmax_exercise.cpp";
  const fs::path expected = kShare / "grader" / "expected" / "softmax";
  const fs::path exists = expected / "b2_t4_s6_softmax.npy";
  const fs::path missing = expected / "guess_b9_softmax.npy";
  REQUIRE(fs::exists(exists));
  for (const char* form : {"#include \"{}\"\n", "#if __has_include(\"{}\")\n#error found\n#endif\n",
                           "#include <{}>\n"}) {
    std::vector<std::string> seen;
    for (const fs::path& probe : {exists, missing}) {
      std::ofstream(source, std::ios::binary) << fmt::format(fmt::runtime(form), probe.string());
      const auto run = run_attn({"grade", "--dir", tree.string(), "--lesson", "softmax",
                                 "--timeout", "10", "--color", "never"});
      CHECK(run.exit_code == 1);
      seen.push_back(run.out);
    }
    INFO(seen[0]);
    CHECK(seen[0] == seen[1]);
    CHECK(seen[0].find("is not allowed") != std::string::npos);
  }
}

TEST_CASE("a compiler message of megabytes of odd bytes is capped after escaping (N11)",
          "[assignments][attacks]") {
  ScratchDir scratch("attack-long-log");
  // About 900 KB of #error lines of bytes that are not UTF-8: the compiler says each one twice
  // (the message and the line), and each byte is shown as four ("\xff").
  std::string bomb;
  for (int i = 0; i < 2200; ++i)
    bomb += "#error " + std::string(400, '\xff') + "\n";
  const fs::path tree = tree_with_attack(scratch.path, bomb, false);
  // By default the first errors are shown; with --full-errors every line, up to the bounds.
  for (const bool full : {false, true}) {
    INFO((full ? "--full-errors" : "the first errors"));
    const Graded g =
        grade(tree, {"softmax"},
              full ? std::vector<std::string>{"--full-errors"} : std::vector<std::string>{});
    CHECK(g.report["score"] == 0.0);
    // Bounds: 64 KiB per output, 256 KiB for the whole results file.
    CHECK(g.report["output"].get<std::string>().size() < 64 * 1024);
    for (const json& test : g.report["tests"])
      CHECK(test["output"].get<std::string>().size() < 64 * 1024);
    CHECK(g.report.dump().size() < 256 * 1024);
    // GCC quotes the bytes in its message and its excerpt (escaped by attn), clang in its
    // excerpt, as "<FF>".
    const std::string output = all_output(g.report);
    CHECK((output.find("\\xff") != std::string::npos || output.find("<FF>") != std::string::npos));
    CHECK((output.find(" lines cut: ") == std::string::npos) == full);
  }
}
