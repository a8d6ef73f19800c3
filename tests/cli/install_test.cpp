// attn runs installed: `cmake --install` under a fresh prefix, then the installed attn, run from
// another folder, teaches a lesson, releases a student tree and grades it, with nothing of the
// checkout in its way; and the executable carries no path of the machine that built it.
//
// `cmake --install` alone is a student's attn: it holds no solution, no hidden test, no hidden
// test's name and no fixture but the visible tests' (data/fixtures/exercises/visible.txt), and it
// grades by the visible tests only. `--component grader` adds the grader's part: an instructor's.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::ScratchDir;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `command` through the shell; its exit status.
int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Installs this build under `prefix`: the student's part, and the grader's when asked.
void install(const fs::path& prefix, const fs::path& log, bool grader) {
  REQUIRE(shell(fmt::format("cmake --install '{}' --prefix '{}' >'{}' 2>&1", ATTN_EXECUTABLE_DIR,
                            prefix.string(), log.string())) == 0);
  if (grader) {
    REQUIRE(shell(fmt::format("cmake --install '{}' --prefix '{}' --component grader >>'{}' 2>&1",
                              ATTN_EXECUTABLE_DIR, prefix.string(), log.string())) == 0);
  }
}

struct Lesson03 {
  std::vector<std::string> hidden_names;
  double visible_points = 0;
  double all_points = 0;
};

// The names and points of lesson 03's tests, from the checkout.
Lesson03 lesson_03() {
  const std::string tests = read_bytes(fs::path(ATTN_SOURCE_DIR) / "lessons" / "03-softmax" /
                                       "softmax_exercise_test.cpp");
  static const std::regex test_case(R"re(TEST_CASE\(\s*"([^"]*)"\s*,\s*"[^"]*points=([0-9.]+))re");
  const std::size_t hidden_from = tests.find("// BEGIN HIDDEN TESTS");
  Lesson03 lesson;
  for (auto it = std::sregex_iterator(tests.begin(), tests.end(), test_case);
       it != std::sregex_iterator(); ++it) {
    const double points = std::stod((*it)[2]);
    lesson.all_points += points;
    if (static_cast<std::size_t>(it->position()) > hidden_from) {
      lesson.hidden_names.push_back((*it)[1]);
    } else {
      lesson.visible_points += points;
    }
  }
  return lesson;
}

// Every hidden test's name, over all lessons of the checkout.
std::vector<std::string> hidden_test_names() {
  static const std::regex test_case(R"re(TEST_CASE\(\s*"([^"]*)")re");
  std::vector<std::string> names;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(ATTN_SOURCE_DIR) / "lessons")) {
    if (!entry.path().filename().string().ends_with("_exercise_test.cpp")) continue;
    const std::string text = read_bytes(entry.path());
    const std::size_t from = text.find("// BEGIN HIDDEN TESTS");
    const std::size_t to = text.find("// END HIDDEN TESTS");
    if (from == std::string::npos || to == std::string::npos) continue;
    const std::string block = text.substr(from, to - from);
    for (auto it = std::sregex_iterator(block.begin(), block.end(), test_case);
         it != std::sregex_iterator(); ++it) {
      names.push_back((*it)[1]);
    }
  }
  return names;
}

// The lines of the solutions' blocks that are the solution's alone: long, and nowhere else in
// the lessons' tests, headers and texts or the core's headers.
std::vector<std::string> solution_lines() {
  std::string elsewhere;
  std::vector<fs::path> exercises;
  for (const char* folder : {"lessons", "core"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(ATTN_SOURCE_DIR) / folder)) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with("_exercise.cpp")) {
        exercises.push_back(entry.path());
      } else if (name.ends_with("_test.cpp") || name.ends_with(".hpp") || name.ends_with(".md")) {
        elsewhere += read_bytes(entry.path());
      }
    }
  }
  std::vector<std::string> lines;
  for (const fs::path& exercise : exercises) {
    std::istringstream in(read_bytes(exercise));
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
      const std::size_t first = line.find_first_not_of(' ');
      const std::string text = first == std::string::npos ? "" : line.substr(first);
      if (text == "// BEGIN SOLUTION") inside = true;
      if (text == "// END SOLUTION") inside = false;
      if (inside && text.size() >= 40 && !text.starts_with("//") &&
          elsewhere.find(text) == std::string::npos) {
        lines.push_back(text);
      }
    }
  }
  return lines;
}

}  // namespace

TEST_CASE("the executable carries no path of the checkout or the build folder", "[install]") {
  if (!attn::testing::kPeakMemoryIsAttns) {
    // The sanitizers keep the source locations of their checks as the compiler was given them.
    WARN("a sanitized build carries its sanitizers' source paths; the release build is checked");
    return;
  }
  const std::string binary = read_bytes(ATTN_EXECUTABLE);
  REQUIRE(!binary.empty());
  CHECK(binary.find(ATTN_SOURCE_DIR) == std::string::npos);
  CHECK(binary.find(ATTN_EXECUTABLE_DIR) == std::string::npos);
}

TEST_CASE("a student's install holds no solution, hidden test, hidden name or hidden fixture",
          "[install]") {
  ScratchDir scratch("install-student");
  const fs::path prefix = scratch.path / "prefix";
  install(prefix, scratch.path / "log.txt", false);
  const fs::path share = prefix / "share" / "attn";
  REQUIRE(fs::exists(share / "toolchain.json"));
  CHECK(!fs::exists(share / "grader"));

  std::set<std::string> visible;
  {
    std::ifstream in(fs::path(ATTN_SOURCE_DIR) / "data" / "fixtures" / "exercises" / "visible.txt");
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line[0] != '#') visible.insert(line);
    }
  }
  REQUIRE(visible.size() > 100);
  const std::vector<std::string> hidden = hidden_test_names();
  REQUIRE(hidden.size() >= 14);
  const std::vector<std::string> solution = solution_lines();
  REQUIRE(solution.size() >= 14);

  // Every file under `root`: no hidden test's name; in texts (attn itself holds the markers it
  // looks for) no marker, hidden tag or solution line; fixtures only of the visible tests'.
  const auto holds_nothing_hidden = [&](const fs::path& root) {
    std::size_t files = 0, fixtures = 0;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file()) continue;
      ++files;
      const std::string relative = entry.path().lexically_relative(share).string();
      INFO(entry.path().string());
      const std::string bytes = read_bytes(entry.path());
      for (const std::string& name : hidden) {
        INFO("the hidden test '" << name << "'");
        CHECK(bytes.find(name) == std::string::npos);
      }
      if (bytes.find('\0') == std::string::npos) {
        for (const char* marker :
             {"// BEGIN SOLUTION", "// END SOLUTION", "// BEGIN HIDDEN TESTS", "[.hidden]\""})
          CHECK(bytes.find(marker) == std::string::npos);
        for (const std::string& line : solution) {
          INFO("the solution's line " << line);
          CHECK(bytes.find(line) == std::string::npos);
        }
      }
      if (entry.path().extension() == ".npy") {
        ++fixtures;
        const std::string fixture = relative.starts_with("checks/") ? relative.substr(7) : relative;
        CHECK(visible.count(fixture) == 1);
      }
    }
    return std::pair{files, fixtures};
  };
  const auto [files, fixtures] = holds_nothing_hidden(prefix);
  CHECK(files > 100);
  CHECK(fixtures == visible.size());

  // The tree it releases for a student holds nothing hidden either, and no fixture at all.
  const fs::path attn = prefix / "bin" / "attn";
  REQUIRE(shell(fmt::format("cd '{}' && '{}' assignments release --out course >/dev/null 2>&1",
                            scratch.path.string(), attn.string())) == 0);
  const auto [tree_files, tree_fixtures] = holds_nothing_hidden(scratch.path / "course");
  CHECK(tree_files > 40);
  CHECK(tree_fixtures == 0);

  // It cannot write a grader bundle: it has nothing to grade hidden tests with.
  const fs::path out = scratch.path / "bundle.txt";
  CHECK(shell(fmt::format("cd '{}' && '{}' assignments release --grader ag >'{}' 2>&1",
                          scratch.path.string(), attn.string(), out.string())) == 2);
  CHECK(read_bytes(out).find("this attn has no grader's part") != std::string::npos);
  CHECK(!fs::exists(scratch.path / "ag"));
}

TEST_CASE("an installed attn teaches, releases and grades from any folder", "[install]") {
  const Lesson03 lesson = lesson_03();
  REQUIRE(lesson.hidden_names.size() >= 1);
  REQUIRE(lesson.visible_points < lesson.all_points);
  for (const bool grader : {false, true}) {
    INFO((grader ? "an instructor's install" : "a student's install"));
    ScratchDir scratch(grader ? "install-instructor" : "install");
    const fs::path prefix = scratch.path / "prefix";
    install(prefix, scratch.path / "log.txt", grader);
    const fs::path attn = prefix / "bin" / "attn";
    REQUIRE(fs::exists(attn));
    CHECK(fs::exists(prefix / "share" / "attn" / "toolchain.json"));
    // Its shell completions and man page, where bash-completion, zsh, fish and man look.
    for (const char* file : {"bash-completion/completions/attn", "zsh/site-functions/_attn",
                             "fish/vendor_completions.d/attn.fish", "man/man1/attn.1"}) {
      INFO(file);
      CHECK(fs::exists(prefix / "share" / file));
    }

    // Run from a folder that is neither the checkout nor the build.
    const fs::path work = scratch.path / "work";
    fs::create_directories(work);
    const std::string in_work = fmt::format("cd '{}' && '{}'", work.string(), attn.string());
    CHECK(shell(in_work + " softmax --quiet >out.txt 2>&1") == 0);
    CHECK(read_bytes(work / "out.txt").find("tensor(") != std::string::npos);

    CHECK(shell(in_work + " assignments release --out course >release.txt 2>&1") == 0);
    INFO(read_bytes(work / "release.txt"));
    REQUIRE(fs::exists(work / "course" / "lessons" / "03-softmax" / "softmax_exercise.cpp"));
    // The instructor's course has solutions to replace; a student's has its stubs already.
    CHECK(read_bytes(work / "release.txt")
              .find(grader ? "solutions replaced by stubs" : "each with stubs to fill in") !=
          std::string::npos);

    // A fresh release grades to zero; with the solution copied in, the lesson to full marks: the
    // visible tests' alone in a student's install, and no hidden test named.
    CHECK(shell(in_work + " grade --dir course --lesson softmax --format gradescope --output " +
                "zero.json >grade.txt 2>&1") == 1);
    INFO(read_bytes(work / "grade.txt"));
    const auto zero = nlohmann::json::parse(read_bytes(work / "zero.json"));
    CHECK(zero["score"] == 0.0);
    fs::copy_file(fs::path(ATTN_SOURCE_DIR) / "lessons" / "03-softmax" / "softmax_exercise.cpp",
                  work / "course" / "lessons" / "03-softmax" / "softmax_exercise.cpp",
                  fs::copy_options::overwrite_existing);
    CHECK(shell(in_work + " grade --dir course --lesson softmax --format gradescope --output " +
                "full.json >grade.txt 2>&1") == 0);
    const std::string full_text = read_bytes(work / "full.json");
    const auto full = nlohmann::json::parse(full_text);
    CHECK(full["score"].get<double>() == (grader ? lesson.all_points : lesson.visible_points));
    for (const std::string& name : lesson.hidden_names)
      CHECK((full_text.find(name) != std::string::npos) == grader);
    CHECK(shell(in_work + " grade --dir course --lesson softmax >text.txt 2>&1") == 0);
    CHECK((read_bytes(work / "text.txt").find("(hidden)") != std::string::npos) == grader);

    // Outside a tree, no command grades attn's own course or writes into the install.
    CHECK(shell(in_work + " check softmax >outside.txt 2>&1") == 2);
    CHECK(read_bytes(work / "outside.txt").find("not inside an assignment tree") !=
          std::string::npos);
    CHECK(!fs::exists(prefix / "share" / "attn" / "course" / ".attn"));
    CHECK(!fs::exists(prefix / "share" / "attn" / "grader" / "course" / ".attn"));
  }
}
