// The course loop in released trees: an assignment's bundle holds its lessons alone and grades
// them alone; a folder of submissions grades to grades.csv; a student's check --all, hint without
// a lesson, reset (asked, kept), compile errors cut to the first ones, compile_commands.json for
// editors, and attn watch in a terminal (tmux) moving on as exercises pass.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"
#include "tmux_pane.hpp"

namespace fs = std::filesystem;
using attn::testing::line_count;
using attn::testing::Pane;
using attn::testing::run_attn;
using attn::testing::ScratchDir;
using attn::testing::shell;
using nlohmann::json;

namespace {

const fs::path kSource = ATTN_SOURCE_DIR;

std::string read_text(const fs::path& path) {
  return attn::testing::read_text(path.string());
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string solution(const std::string& folder, const std::string& stem) {
  return read_text(kSource / "lessons" / folder / (stem + ".cpp"));
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.insert(entry.path().filename().string());
  return names;
}

// A student tree released with the lessons given alone.
fs::path release_student_tree(const fs::path& out, const std::vector<std::string>& lessons) {
  std::vector<std::string> args = {"assignments", "release", "--out", out.string()};
  for (const std::string& lesson : lessons)
    args.insert(args.end(), {"--lesson", lesson});
  const auto run = run_attn(args);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return out;
}

// softmax_exercise.cpp with a missing `;` and a std::sort of a const tensor: two errors, the
// second inside the standard library's templates.
std::string broken_softmax() {
  std::string text = solution("03-softmax", "softmax_exercise");
  const std::string declaration = "Tensor3 weights(scores.shape());";
  REQUIRE(text.find(declaration) != std::string::npos);
  text.replace(text.find(declaration), declaration.size(), "Tensor3 weights(scores.shape())");
  const std::string masked = "Tensor3 masked(scores.shape());";
  REQUIRE(text.find(masked) != std::string::npos);
  text.replace(text.find(masked), masked.size(),
               "Tensor3 masked(scores.shape());\n  std::sort(mask.begin(), mask.end());");
  return text;
}

}  // namespace

TEST_CASE("an assignment's grader bundle holds its lessons alone, and results.json their tests",
          "[course-loop]") {
  ScratchDir scratch("assignment-bundle");
  const fs::path bundle = scratch.path / "source";
  const auto release = run_attn({"assignments", "release", "--grader", bundle.string(), "--lesson",
                                 "softmax", "--lesson", "04"});
  INFO(release.err);
  REQUIRE(release.exit_code == 0);
  CHECK(release.out.find(": attn, the checks and expected values, 2 exercises") !=
        std::string::npos);
  const fs::path share = bundle / "share" / "attn";
  CHECK(names_in(share / "grader" / "course" / "lessons") ==
        std::set<std::string>{"03-softmax", "04-attention"});
  CHECK(names_in(share / "course" / "lessons") ==
        std::set<std::string>{"03-softmax", "04-attention"});
  CHECK(fs::exists(share / "lib" / "libsoftmax_exercise_probe.a"));
  CHECK(!fs::exists(share / "lib" / "libdot_product_exercise_probe.a"));
  CHECK(fs::exists(share / "grader" / "libattention_exercise_probe_all.a"));
  CHECK(!fs::exists(share / "grader" / "libgpt_exercise_probe_all.a"));
  CHECK(!fs::exists(share / "grader" / "gpt_exercise_check"));
  CHECK(fs::exists(share / "inputs" / "softmax"));
  CHECK(!fs::exists(share / "inputs" / "layer-norm"));
  CHECK(!fs::exists(share / "grader" / "expected" / "layer-norm"));

  // Gradescope's run: the softmax solution passes, attention's stub fails, nothing else is there.
  write_text(scratch.path / "submission" / "softmax_exercise.cpp",
             solution("03-softmax", "softmax_exercise"));
  const std::string command =
      fmt::format("AUTOGRADER_ROOT='{}' bash '{}' >'{}' 2>&1", scratch.path.string(),
                  (bundle / "run_autograder").string(), (scratch.path / "log.txt").string());
  CHECK(std::system(command.c_str()) == 0);
  INFO(read_text(scratch.path / "log.txt"));
  const json report = json::parse(read_text(scratch.path / "results" / "results.json"));
  std::set<std::string> lessons;
  double softmax = 0.0, max_score = 0.0;
  for (const json& test : report["tests"]) {
    const std::string lesson = test["tags"][0];
    lessons.insert(lesson);
    INFO(test["name"].get<std::string>());
    CHECK(test["status"] == (lesson == "softmax" ? "passed" : "failed"));
    if (lesson == "softmax") softmax += test["score"].get<double>();
    max_score += test["max_score"].get<double>();
  }
  CHECK(lessons == std::set<std::string>{"softmax", "attention"});
  CHECK(softmax > 0.0);
  CHECK(report["score"].get<double>() == softmax);
  // The points of the two lessons' tests, and no other lesson's.
  const std::string output = report["output"].get<std::string>();
  CHECK(output.find("dot-product") == std::string::npos);
  CHECK(max_score < 80.0);

  // A lesson this attn does not have: one line, nothing written.
  const auto unknown = run_attn({"assignments", "release", "--grader",
                                 (scratch.path / "other").string(), "--lesson", "nonesuch"});
  CHECK(unknown.exit_code == 2);
  CHECK(line_count(unknown.err) == 1);
  CHECK(unknown.err.find("--lesson") != std::string::npos);
  CHECK(!fs::exists(scratch.path / "other"));
}

TEST_CASE("attn grade --submissions grades a folder per student into grades.csv and reports",
          "[course-loop]") {
  ScratchDir scratch("batch");
  const fs::path submissions = scratch.path / "submissions";
  // alice uploads the solution at the top level, bob a repository with the stub, carol code that
  // does not compile; a file beside them is not a student.
  write_text(submissions / "alice" / "softmax_exercise.cpp",
             solution("03-softmax", "softmax_exercise"));
  const fs::path stub_tree = release_student_tree(scratch.path / "stub", {"softmax"});
  write_text(submissions / "bob, the second" / "lessons" / "03-softmax" / "softmax_exercise.cpp",
             read_text(stub_tree / "lessons" / "03-softmax" / "softmax_exercise.cpp"));
  write_text(submissions / "carol" / "softmax_exercise.cpp", broken_softmax());
  write_text(submissions / "notes.txt", "not a student\n");
  const fs::path reports = scratch.path / "grades";
  const auto run = run_attn({"grade", "--submissions", submissions.string(), "--reports",
                             reports.string(), "--lesson", "softmax"});
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.starts_with("graded 3 submissions:\n"));
  CHECK(names_in(reports) == std::set<std::string>{"alice.json", "alice.txt",
                                                   "bob, the second.json", "bob, the second.txt",
                                                   "carol.json", "carol.txt", "grades.csv"});
  std::istringstream csv(read_text(reports / "grades.csv"));
  std::vector<std::string> rows;
  for (std::string line; std::getline(csv, line);)
    rows.push_back(line);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == "student,lesson,score,max");
  const json alice = json::parse(read_text(reports / "alice.json"));
  const double full = alice["score"].get<double>();
  CHECK(full > 0.0);
  double max_score = 0.0;
  for (const json& test : alice["tests"])
    max_score += test["max_score"].get<double>();
  CHECK(full == max_score);  // the hidden tests count too
  const auto number = [](double value) { return fmt::format("{:g}", value); };
  CHECK(rows[1] == fmt::format("alice,softmax,{},{}", number(full), number(max_score)));
  CHECK(rows[2] == fmt::format("\"bob, the second\",softmax,0,{}", number(max_score)));
  CHECK(rows[3] == fmt::format("carol,softmax,0,{}", number(max_score)));
  CHECK(read_text(reports / "carol.txt").find("did not compile") != std::string::npos);
  CHECK(read_text(reports / "alice.txt").find("graded softmax_exercise.cpp") != std::string::npos);

  // The reports folder is never replaced, and --reports is needed.
  const auto again = run_attn({"grade", "--submissions", submissions.string(), "--reports",
                               reports.string(), "--lesson", "softmax"});
  CHECK(again.exit_code == 2);
  CHECK(line_count(again.err) == 1);
  CHECK(again.err.find("already exists") != std::string::npos);
  const auto missing = run_attn({"grade", "--submissions", submissions.string()});
  CHECK(missing.exit_code == 2);
  CHECK(line_count(missing.err) == 1);
  CHECK(missing.err.find("--reports") != std::string::npos);
  const auto empty = run_attn({"grade", "--submissions",
                               (scratch.path / "stub" / "lessons" / "03-softmax").string(),
                               "--reports", (scratch.path / "none").string()});
  CHECK(empty.exit_code == 2);
  CHECK(empty.err.find("holds no student folders") != std::string::npos);
  CHECK(!fs::exists(scratch.path / "none"));
}

TEST_CASE(
    "a student's loop: check --all, hint without a lesson or in its folder, reset asked and "
    "kept",
    "[course-loop]") {
  ScratchDir scratch("loop");
  const fs::path tree = release_student_tree(scratch.path / "tree", {"scaling", "softmax"});
  CHECK(names_in(tree / "lessons") == std::set<std::string>{"02-scaling", "03-softmax"});
  const fs::path source = tree / "lessons" / "03-softmax" / "softmax_exercise.cpp";
  const std::string stub = read_text(source);
  const std::string mine = solution("03-softmax", "softmax_exercise");
  write_text(source, mine);

  const auto all = run_attn({"check", "--all", "--dir", tree.string()});
  INFO(all.out << all.err);
  CHECK(all.exit_code == 1);
  CHECK(all.out.find("1 of 2 exercises pass their visible tests.") != std::string::npos);
  CHECK(all.out.find("02 scaling") != std::string::npos);
  CHECK(all.out.find("1/2 exercises done") != std::string::npos);
  const auto both = run_attn({"check", "--all", "softmax", "--dir", tree.string()});
  CHECK(both.exit_code == 2);
  CHECK(line_count(both.err) == 1);

  // The next unfinished exercise is scaling: hint gives its hints.
  const auto hint = run_attn({"hint", "--dir", tree.string()});
  CHECK(hint.exit_code == 0);
  CHECK(hint.out.starts_with("Hint 1 of "));
  CHECK(hint.out.find(" for 02 scaling:") != std::string::npos);
  // Inside a lesson's folder, check and hint mean that lesson.
  const fs::path here = fs::current_path();
  fs::current_path(tree / "lessons" / "03-softmax");
  const auto hint_here = run_attn({"hint"});
  const auto check_here = run_attn({"check", "--color", "never"});
  fs::current_path(here);
  CHECK(hint_here.out.find(" for 03 softmax:") != std::string::npos);
  CHECK(check_here.exit_code == 0);
  CHECK(check_here.out.starts_with("03 softmax "));
  // attn list: softmax done, scaling with the score of its failed check.
  fs::current_path(tree);
  const auto list = run_attn({"list"});
  fs::current_path(here);
  CHECK(list.out.find("03  softmax              done") != std::string::npos);
  CHECK(std::regex_search(list.out, std::regex(R"(\n02  scaling +0/[0-9]+ +why scores)")));
  // A progress file with a field of another type counts as no progress, and is written again.
  write_text(tree / ".attn" / "progress.json", R"({"lessons": {"softmax": {"passed": 1}}})");
  fs::current_path(tree);
  const auto damaged = run_attn({"list"});
  const auto rechecked = run_attn({"check", "softmax"});
  const auto listed = run_attn({"list"});
  fs::current_path(here);
  CHECK(damaged.exit_code == 0);
  CHECK(damaged.out.find("03  softmax              pending") != std::string::npos);
  CHECK(rechecked.exit_code == 0);
  CHECK(listed.out.find("03  softmax              done") != std::string::npos);

  // reset asks first: without a terminal and without --yes, nothing changes.
  const std::string refused =
      shell(fmt::format("'{}' reset softmax --dir '{}' </dev/null 2>&1; echo EXIT=$?",
                        ATTN_EXECUTABLE, tree.string()));
  CHECK(refused.find("--yes") != std::string::npos);
  CHECK(refused.find("EXIT=2") != std::string::npos);
  CHECK(read_text(source) == mine);
  const auto reset = run_attn({"reset", "softmax", "--yes", "--dir", tree.string()});
  INFO(reset.err);
  CHECK(reset.exit_code == 0);
  CHECK(read_text(source) == stub);
  CHECK(reset.out.find("your version is in .attn/reset/softmax_exercise-1.cpp") !=
        std::string::npos);
  CHECK(read_text(tree / ".attn" / "reset" / "softmax_exercise-1.cpp") == mine);
  const auto again = run_attn({"reset", "softmax", "--yes", "--dir", tree.string()});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("is the stub already") != std::string::npos);
  CHECK(!fs::exists(tree / ".attn" / "reset" / "softmax_exercise-2.cpp"));
  // A link is not followed nor replaced.
  fs::remove(source);
  fs::create_symlink(tree / "README.md", source);
  const auto link = run_attn({"reset", "softmax", "--yes", "--dir", tree.string()});
  CHECK(link.exit_code == 2);
  CHECK(line_count(link.err) == 1);
  CHECK(fs::is_symlink(source));
}

TEST_CASE("compile errors are cut to the first ones, placed in the student's file",
          "[course-loop]") {
  ScratchDir scratch("errors");
  const fs::path tree = release_student_tree(scratch.path / "tree", {"softmax"});
  write_text(tree / "lessons" / "03-softmax" / "softmax_exercise.cpp", broken_softmax());
  const auto cut = run_attn({"check", "softmax", "--dir", tree.string(), "--color", "never"});
  INFO(cut.out);
  CHECK(cut.exit_code == 1);
  // The missing ; first: GCC names the next line (33), clang the end of the declaration (32).
  CHECK(std::regex_search(cut.out,
                          std::regex(R"(softmax_exercise\.cpp:3[23]:[0-9]+: error: expected)")));
  CHECK(cut.out.find("lines cut: ") != std::string::npos);
  // The std::sort error is shown at the student's line: GCC says "required from here", clang
  // "requested here".
  const bool placed = cut.out.find("required from here") != std::string::npos ||
                      cut.out.find("requested here") != std::string::npos;
  CHECK(placed);
  CHECK(cut.out.find("note: candidate") == std::string::npos);
  CHECK(cut.out.find("In file included from") == std::string::npos);
  const auto full =
      run_attn({"check", "softmax", "--dir", tree.string(), "--color", "never", "--full-errors"});
  CHECK(full.exit_code == 1);
  CHECK(full.out.find("lines cut: ") == std::string::npos);
  CHECK(line_count(full.out) > line_count(cut.out) + 20);
}

TEST_CASE("the released tree's compile_commands.json compiles each exercise, and follows a move",
          "[course-loop]") {
  ScratchDir scratch("compile-commands");
  const fs::path tree = release_student_tree(scratch.path / "tree", {"softmax"});
  const auto read_entries = [](const fs::path& dir) {
    return json::parse(read_text(dir / "compile_commands.json"));
  };
  const json entries = read_entries(tree);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["directory"] == (tree / "lessons" / "03-softmax").string());
  // What an editor runs: the entry's command, as a syntax check.
  std::string command = "cd '" + entries[0]["directory"].get<std::string>() + "' &&";
  for (const json& argument : entries[0]["arguments"]) {
    const std::string word = argument.get<std::string>();
    command += " '" + (word == "-c" ? std::string("-fsyntax-only") : word) + "'";
  }
  command += " -o /dev/null 2>&1; echo EXIT=$?";
  const std::string compiled = shell(command);
  INFO(command << "\n" << compiled);
  CHECK(compiled.find("EXIT=0") != std::string::npos);

  // Moved (or cloned elsewhere): the next check writes it again for the new place.
  const fs::path moved = scratch.path / "moved";
  fs::rename(tree, moved);
  run_attn({"check", "softmax", "--dir", moved.string()});
  CHECK(read_entries(moved)[0]["directory"] == (moved / "lessons" / "03-softmax").string());
  // A file of the student's own is left alone.
  write_text(moved / "compile_commands.json", "[{\"file\": \"mine.cpp\"}]\n");
  run_attn({"check", "softmax", "--dir", moved.string()});
  CHECK(read_text(moved / "compile_commands.json") == "[{\"file\": \"mine.cpp\"}]\n");
}

TEST_CASE("attn watch checks on every save and moves on when an exercise passes (tmux)",
          "[course-loop]") {
  REQUIRE(shell("command -v tmux") != "");  // setup.sh installs tmux
  ScratchDir scratch("watch");
  const fs::path tree = release_student_tree(scratch.path / "tree", {"scaling", "softmax"});
  Pane pane(fmt::format("cd '{}' && '{}' watch", tree.string(), ATTN_EXECUTABLE), "attn-watch");
  std::string screen = pane.wait_for("Watching lessons/02-scaling/scaling_exercise.cpp", 300);
  INFO(screen);
  REQUIRE(screen.find("Watching lessons/02-scaling/scaling_exercise.cpp") != std::string::npos);
  CHECK(screen.find("0/2 exercises done") != std::string::npos);
  pane.keys("h Enter");
  screen = pane.wait_for("Hint 1 of ");
  CHECK(screen.find("for 02 scaling:") != std::string::npos);
  // Saved by rename, as many editors do: a new file moved over the old.
  write_text(tree / "lessons" / "02-scaling" / "new.tmp",
             solution("02-scaling", "scaling_exercise"));
  fs::rename(tree / "lessons" / "02-scaling" / "new.tmp",
             tree / "lessons" / "02-scaling" / "scaling_exercise.cpp");
  screen = pane.wait_for("Watching lessons/03-softmax/softmax_exercise.cpp", 300);
  CHECK(screen.find("✓ 02 scaling is done; on to 03 softmax.") != std::string::npos);
  CHECK(screen.find("1/2 exercises done") != std::string::npos);
  // Written in place.
  write_text(tree / "lessons" / "03-softmax" / "softmax_exercise.cpp",
             solution("03-softmax", "softmax_exercise"));
  screen = pane.wait_for("EXIT=", 300);
  CHECK(screen.find("Every exercise passes. Well done.") != std::string::npos);
  CHECK(screen.find("EXIT=0") != std::string::npos);

  // q ends a watch of one lesson.
  Pane pinned(fmt::format("'{}' watch softmax --dir '{}'", ATTN_EXECUTABLE, tree.string()),
              "attn-watch-q");
  screen = pinned.wait_for("Watching lessons/03-softmax", 300);
  CHECK(screen.find("✓ 03 softmax is done.") != std::string::npos);
  pinned.keys("q Enter");
  screen = pinned.wait_for("EXIT=");
  CHECK(screen.find("EXIT=0") != std::string::npos);
}

TEST_CASE("attn watch stays on a passing exercise whose progress cannot be recorded",
          "[course-loop]") {
  ScratchDir scratch("watch-unrecorded");
  const fs::path tree = release_student_tree(scratch.path / "tree", {"scaling", "softmax"});
  write_text(tree / "lessons" / "02-scaling" / "scaling_exercise.cpp",
             solution("02-scaling", "scaling_exercise"));
  // .attn is a file: the pass cannot be written, so the next unfinished exercise is this one.
  fs::remove_all(tree / ".attn");
  write_text(tree / ".attn", "");
  const fs::path out = scratch.path / "watch.txt";
  const std::string seen = shell(fmt::format(
      "cd '{}' && (timeout 120 '{}' watch </dev/null >'{}' 2>&1 & pid=$!; for i in $(seq 1200); "
      "do grep -q '^Watching' '{}' && break; sleep 0.1; done; kill $pid); cat '{}'",
      tree.string(), ATTN_EXECUTABLE, out.string(), out.string(), out.string()));
  INFO(seen);
  CHECK(seen.find("02 scaling passes, but .attn/progress.json could not be written") !=
        std::string::npos);
  CHECK(seen.find("is done; on to") == std::string::npos);
  CHECK(seen.find("Watching lessons/02-scaling/scaling_exercise.cpp") != std::string::npos);
}

namespace {

// An instructor's additions: two cases for softmax (one hidden, expecting a throw) and a new
// exercise, leaky ReLU, with a visible and a hidden case. The expected values are the test's own
// reference, in double precision.
void write_additions(const fs::path& folder, double wrong_by = 0.0) {
  const std::vector<double> scores = {500.0, 501.0, 499.0};
  double sum = 0.0;
  for (const double s : scores)
    sum += std::exp(s - 501.0);
  json expected = json::array();
  for (const double s : scores)
    expected.push_back(std::exp(s - 501.0) / sum + wrong_by);
  const fs::path softmax = folder / "lessons" / "03-softmax" / "cases";
  write_text(softmax / "large.json",
             json{{"name", "softmax of scores near 500 (the instructor's case)"},
                  {"call", "softmax"},
                  {"arguments", {json::array({json::array({scores})})}},
                  {"expected", json::array({json::array({expected})})},
                  {"points", 2},
                  {"tolerance", {{"atol", 1e-5}, {"rtol", 1e-4}}}}
                 .dump());
  // Python's json writes -Infinity bare; attn reads it so.
  write_text(
      softmax / "mask-shape.json",
      "{\"name\": \"apply_mask refuses a (1,2) mask for scores (1,1,3)\", \"call\": \"apply_mask\","
      " \"arguments\": [[[[1, 2, 3]]], [[0, -Infinity]]],"
      " \"throws\": \"std::invalid_argument\", \"points\": 1, \"hidden\": true}\n");

  const fs::path relu = folder / "lessons" / "21-leaky-relu";
  write_text(
      relu / "leaky_relu_exercise.hpp",
      "// Lesson 21: leaky ReLU, max(x, slope * x) elementwise.\n#pragma once\n\n"
      "#include \"base/tensor.hpp\"\n\nnamespace attn::exercise {\n\n"
      "Tensor2 leaky_relu(const Tensor2& x, float slope);\n\n}  // namespace attn::exercise\n");
  write_text(relu / "leaky_relu_exercise.cpp",
             "#include \"leaky_relu_exercise.hpp\"\n\nnamespace attn::exercise {\n\n"
             "Tensor2 leaky_relu(const Tensor2& x, float slope) {\n"
             "  // TODO(lesson 21): x where x > 0, slope * x elsewhere.\n"
             "  // BEGIN SOLUTION\n"
             "  Tensor2 y(x.shape());\n"
             "  for (std::size_t i = 0; i < x.size(); ++i)\n"
             "    y.data()[i] = x.data()[i] > 0 ? x.data()[i] : slope * x.data()[i];\n"
             "  return y;\n"
             "  // END SOLUTION\n}\n\n}  // namespace attn::exercise\n");
  write_text(relu / "hints.md", "# Hints\n\n## 1\n\nLoop over x.data().\n\n## 2\n\nKeep x > 0.\n");
  write_text(relu / "lesson.md", "# Leaky ReLU: x where x > 0, slope * x elsewhere\n");
  const json x = {{-2.0, -0.5, 0.0}, {0.5, 1.0, 3.0}};
  const auto leaky = [&](double slope) {
    json y = x;
    for (auto& row : y)
      for (auto& v : row)
        v = v.get<double>() > 0 ? v.get<double>() : slope * v.get<double>();
    return y;
  };
  write_text(relu / "cases" / "relu.json", json{{"name", "leaky_relu with slope 0 is ReLU"},
                                                {"call", "leaky_relu"},
                                                {"arguments", {x, 0.0}},
                                                {"expected", leaky(0.0)},
                                                {"points", 3}}
                                               .dump());
  write_text(relu / "cases" / "slope.json", json{{"name", "leaky_relu with slope 0.1"},
                                                 {"call", "leaky_relu"},
                                                 {"arguments", {x, 0.1}},
                                                 {"expected", leaky(0.1)},
                                                 {"points", 2},
                                                 {"hidden", true}}
                                                .dump());
}

// attn installed at `prefix`: the student's part, and the grader's when `grader`.
void install_attn(const fs::path& prefix, bool grader) {
  for (const char* component : {"", "--component grader"}) {
    if (!grader && *component != '\0') break;
    REQUIRE(shell(fmt::format("cmake --install '{}' --prefix '{}' {} >/dev/null 2>&1; echo $?",
                              ATTN_EXECUTABLE_DIR, prefix.string(), component)) == "0\n");
  }
}

std::vector<std::string> csv_rows(const fs::path& file) {
  std::istringstream csv(read_text(file));
  std::vector<std::string> rows;
  for (std::string line; std::getline(csv, line);)
    rows.push_back(line);
  return rows;
}

}  // namespace

TEST_CASE(
    "an instructor adds cases and an exercise to an installed attn and grades three "
    "submissions to CSV",
    "[course-loop]") {
  ScratchDir scratch("additions");
  // An instructor's attn, installed: the student's part and the grader's.
  const fs::path installed = scratch.path / "attn";
  install_attn(installed, /*grader=*/true);
  const std::string attn = (installed / "bin" / "attn").string();
  const auto run_installed = [&](const std::string& arguments) {
    return shell(fmt::format("'{}' {} 2>&1; echo EXIT=$?", attn, arguments));
  };
  const fs::path course = installed / "share" / "attn" / "grader" / "course" / "lessons";

  // Expected values that the solution does not reproduce: refused, nothing kept.
  write_additions(scratch.path / "wrong", 0.05);
  const std::string refused =
      run_installed("assignments add '" + (scratch.path / "wrong").string() + "'");
  INFO(refused);
  CHECK(refused.find("EXIT=2") != std::string::npos);
  CHECK(refused.find("the solution of 03 softmax fails its tests, so nothing was added") !=
        std::string::npos);
  CHECK(refused.find("softmax of scores near 500 (the instructor's case)") != std::string::npos);
  CHECK(!fs::exists(course / "21-leaky-relu"));
  CHECK(!fs::exists(course / "03-softmax" / "cases"));
  CHECK(!fs::exists(installed / "share" / "attn" / "include" / "leaky_relu_exercise.hpp"));

  write_additions(scratch.path / "mine");
  const std::string added =
      run_installed("assignments add '" + (scratch.path / "mine").string() + "'");
  INFO(added);
  REQUIRE(added.find("EXIT=0") != std::string::npos);
  CHECK(added.find("03 softmax: 2 cases (2 points visible, 1 hidden in 1 case)") !=
        std::string::npos);
  CHECK(added.find("21 leaky-relu: a new exercise with 2 cases (3 points visible, 2 hidden in 1 "
                   "case)") != std::string::npos);

  // The student tree: the new exercise's stub and visible case, not the hidden one.
  const fs::path tree = scratch.path / "student";
  REQUIRE(run_installed(fmt::format("assignments release --out '{}' --lesson softmax --lesson "
                                    "leaky-relu",
                                    tree.string()))
              .find("EXIT=0") != std::string::npos);
  const fs::path relu = tree / "lessons" / "21-leaky-relu";
  CHECK(fs::exists(relu / "cases" / "relu.json"));
  CHECK(!fs::exists(relu / "cases" / "slope.json"));
  CHECK(!fs::exists(tree / "lessons" / "03-softmax" / "cases" / "mask-shape.json"));
  CHECK(read_text(relu / "leaky_relu_exercise.cpp").find("BEGIN SOLUTION") == std::string::npos);
  const std::string stub_check = run_installed("check leaky-relu --dir '" + tree.string() + "'");
  CHECK(stub_check.find("EXIT=1") != std::string::npos);
  CHECK(stub_check.find("leaky_relu threw std::logic_error: not implemented") != std::string::npos);

  // A student's own attn (no grader's part) takes the new exercise and the visible case from the
  // released tree, and checks a solution by it.
  const fs::path own = scratch.path / "own";
  install_attn(own, /*grader=*/false);
  const auto run_own = [&](const std::string& arguments) {
    return shell(
        fmt::format("'{}' {} 2>&1; echo EXIT=$?", (own / "bin" / "attn").string(), arguments));
  };
  CHECK(run_own("check leaky-relu --dir '" + tree.string() + "'").find("EXIT=2") !=
        std::string::npos);
  const std::string taken = run_own("assignments add '" + tree.string() + "'");
  INFO(taken);
  CHECK(taken.find("21 leaky-relu: a new exercise with 1 case") != std::string::npos);
  CHECK(taken.find("03 softmax: 1 case") != std::string::npos);
  CHECK(taken.find("EXIT=0") != std::string::npos);
  write_text(
      relu / "leaky_relu_exercise.cpp",
      read_text(scratch.path / "mine" / "lessons" / "21-leaky-relu" / "leaky_relu_exercise.cpp"));
  const std::string own_check = run_own("check leaky-relu --dir '" + tree.string() + "'");
  INFO(own_check);
  CHECK(own_check.find("EXIT=0") != std::string::npos);
  CHECK(own_check.find("3/3") != std::string::npos);
  // attn list shows it among the lessons, done; it has no lesson to run.
  const std::string listed = shell(fmt::format("cd '{}' && '{}' list 2>&1; echo EXIT=$?",
                                               tree.string(), (own / "bin" / "attn").string()));
  INFO(listed);
  CHECK(std::regex_search(
      listed,
      std::regex(R"(\n21  leaky-relu +done +\(added\) Leaky ReLU: x where x > 0, slope \* x)")));
  // A title is shown printable, from a file only: never a FIFO's endless read.
  const auto list_own = [&] {
    return shell(fmt::format("cd '{}' && timeout 60 '{}' list 2>&1; echo EXIT=$?", tree.string(),
                             (own / "bin" / "attn").string()));
  };
  write_text(relu / "lesson.md", "\xef\xbb\xbf# \x1b[2JLeaky\r\n");
  CHECK(list_own().find("(added) \\x1b[2JLeaky\n") != std::string::npos);
  fs::remove(relu / "lesson.md");
  REQUIRE(mkfifo((relu / "lesson.md").c_str(), 0600) == 0);
  const std::string fifo = list_own();
  CHECK(fifo.find("(added by your course)") != std::string::npos);
  CHECK(fifo.find("EXIT=0") != std::string::npos);
  const std::string run = run_own("leaky-relu");
  CHECK(run.find("'leaky-relu' is an exercise your course added, with no lesson to run: `attn "
                 "check leaky-relu`") != std::string::npos);
  CHECK(run.find("EXIT=2") != std::string::npos);
  CHECK(run_own("assignments add '" + (scratch.path / "mine").string() + "'").find("EXIT=2") !=
        std::string::npos);
  // A tree released later without the softmax case: taking it again removes the case.
  fs::remove(tree / "lessons" / "03-softmax" / "cases" / "large.json");
  const std::string retaken = run_own("assignments add '" + tree.string() + "'");
  INFO(retaken);
  CHECK(retaken.find("03 softmax: 0 cases; 1 earlier case removed") != std::string::npos);
  CHECK(!fs::exists(own / "share" / "attn" / "course" / "lessons" / "03-softmax" / "cases" /
                    "large.json"));

  // Three submissions: alice solves both, bob only the new one, carol forgets the slope.
  const fs::path submissions = scratch.path / "submissions";
  const std::string relu_solution =
      read_text(scratch.path / "mine" / "lessons" / "21-leaky-relu" / "leaky_relu_exercise.cpp");
  write_text(submissions / "alice" / "softmax_exercise.cpp",
             solution("03-softmax", "softmax_exercise"));
  write_text(submissions / "alice" / "leaky_relu_exercise.cpp", relu_solution);
  write_text(submissions / "bob" / "lessons" / "21-leaky-relu" / "leaky_relu_exercise.cpp",
             relu_solution);
  std::string forgot = relu_solution;
  forgot.replace(forgot.find("slope * x.data()[i]"), std::string("slope * x.data()[i]").size(),
                 "0.0f");
  write_text(submissions / "carol" / "leaky_relu_exercise.cpp", forgot);
  const fs::path reports = scratch.path / "grades";
  const std::string graded =
      run_installed(fmt::format("grade --submissions '{}' --reports '{}' --lesson softmax --lesson "
                                "leaky-relu",
                                submissions.string(), reports.string()));
  INFO(graded);
  REQUIRE(graded.find("EXIT=0") != std::string::npos);
  const std::vector<std::string> rows = csv_rows(reports / "grades.csv");
  REQUIRE(rows.size() == 7);
  CHECK(rows[0] == "student,lesson,score,max");
  const json alice = json::parse(read_text(reports / "alice.json"));
  double softmax_max = 0.0;
  bool instructors_case = false;
  for (const json& test : alice["tests"]) {
    if (test["tags"][0] == "softmax") softmax_max += test["max_score"].get<double>();
    instructors_case =
        instructors_case ||
        test["name"] == "03 softmax: softmax of scores near 500 (the instructor's case)";
  }
  CHECK(instructors_case);
  const std::string softmax_max_text = fmt::format("{:g}", softmax_max);
  CHECK(rows[1] == "alice,softmax," + softmax_max_text + "," + softmax_max_text);
  CHECK(rows[2] == "alice,leaky-relu,5,5");
  CHECK(rows[3] == "bob,softmax,0," + softmax_max_text);
  CHECK(rows[4] == "bob,leaky-relu,5,5");
  CHECK(rows[5] == "carol,softmax,0," + softmax_max_text);
  CHECK(rows[6] == "carol,leaky-relu,3,5");
  CHECK(read_text(reports / "carol.txt").find("the first at [0, 0]: got 0, expected -0.2") !=
        std::string::npos);
}

TEST_CASE("adding a folder again replaces its cases: one gone or hidden since leaves the courses",
          "[course-loop]") {
  ScratchDir scratch("re-add");
  const fs::path installed = scratch.path / "attn";
  install_attn(installed, /*grader=*/true);
  const auto add = [&](const fs::path& folder) {
    return shell(fmt::format("'{}' assignments add '{}' 2>&1; echo EXIT=$?",
                             (installed / "bin" / "attn").string(), folder.string()));
  };
  const fs::path share = installed / "share" / "attn";
  const fs::path course = share / "grader" / "course" / "lessons" / "03-softmax" / "cases";
  const fs::path student = share / "course" / "lessons" / "03-softmax" / "cases";
  // Softmax's two cases, as the other test writes them: large.json visible, mask-shape.json
  // hidden.
  const fs::path first = scratch.path / "first";
  write_additions(first);
  fs::remove_all(first / "lessons" / "21-leaky-relu");
  REQUIRE(add(first).find("EXIT=0") != std::string::npos);
  REQUIRE(fs::exists(student / "large.json"));
  const std::string mask_case = read_text(course / "mask-shape.json");
  // A file attn did not write, and one it did whose mode someone changed.
  write_text(course / "notes.txt", "the instructor's notes\n");
  fs::permissions(course / "large.json", fs::perms::owner_read | fs::perms::owner_write);

  // Again, with mask-shape.json gone and large.json hidden, but large.json's values wrong:
  // refused, and both courses are as they were.
  const fs::path second = scratch.path / "second";
  write_additions(second, 0.05);
  fs::remove_all(second / "lessons" / "21-leaky-relu");
  fs::remove(second / "lessons" / "03-softmax" / "cases" / "mask-shape.json");
  const auto hide = [](const fs::path& file) {
    json c = json::parse(read_text(file));
    c["hidden"] = true;
    write_text(file, c.dump());
  };
  hide(second / "lessons" / "03-softmax" / "cases" / "large.json");
  const std::string refused = add(second);
  INFO(refused);
  CHECK(refused.find("EXIT=2") != std::string::npos);
  CHECK(read_text(course / "mask-shape.json") == mask_case);
  CHECK(fs::exists(student / "large.json"));
  CHECK(fs::status(course / "large.json").permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write));

  // With the right values: the hidden case leaves the student's course, the removed one both.
  write_additions(second);
  fs::remove_all(second / "lessons" / "21-leaky-relu");
  fs::remove(second / "lessons" / "03-softmax" / "cases" / "mask-shape.json");
  hide(second / "lessons" / "03-softmax" / "cases" / "large.json");
  const std::string replaced = add(second);
  INFO(replaced);
  CHECK(replaced.find("EXIT=0") != std::string::npos);
  CHECK(replaced.find("03 softmax: 1 case (0 points visible, 2 hidden in 1 case); 1 earlier case "
                      "removed") != std::string::npos);
  CHECK(!fs::exists(course / "mask-shape.json"));
  CHECK(fs::exists(course / "large.json"));
  CHECK(!fs::exists(student / "large.json"));
  CHECK(!fs::exists(student / "mask-shape.json"));
  CHECK(read_text(course / "notes.txt") == "the instructor's notes\n");

  // A new exercise named as one of attn's.
  fs::create_directories(scratch.path / "clash" / "lessons" / "30-softmax");
  const std::string clash = add(scratch.path / "clash");
  CHECK(clash.find("lessons/30-softmax: 03 softmax is named softmax already") != std::string::npos);
  CHECK(clash.find("EXIT=2") != std::string::npos);

  // A cases folder that is a link is not followed.
  const fs::path elsewhere = scratch.path / "elsewhere";
  write_text(elsewhere / "large.json", "{}");
  fs::remove_all(student);
  fs::create_directory_symlink(elsewhere, student);
  const std::string linked = add(second);
  INFO(linked);
  CHECK(linked.find("is not a folder attn made (a link or a file)") != std::string::npos);
  CHECK(linked.find("EXIT=2") != std::string::npos);
  CHECK(read_text(elsewhere / "large.json") == "{}");

  // Stopped while it grades (SIGTERM; a background job of a shell ignores Ctrl-C's SIGINT): what
  // it wrote is put back, then it ends by the signal.
  fs::remove(student);
  const auto snapshot = [&] {
    return shell(
        fmt::format("cd '{}' && find . -print0 | sort -z | xargs -0 ls -ld "
                    "--time-style=+ | awk '{{print $1, $5, $7}}'; find . -type f -print0 "
                    "| sort -z | xargs -0 md5sum",
                    share.string()));
  };
  const std::string before = snapshot();
  const fs::path log = scratch.path / "interrupted.txt";
  const std::string status = shell(fmt::format(
      "'{}' assignments add '{}' >'{}' 2>&1 & pid=$!; for i in $(seq 1200); do grep -q 'grading "
      "the solutions' '{}' && break; sleep 0.1; done; kill -TERM $pid; wait $pid; echo $?",
      (installed / "bin" / "attn").string(), first.string(), log.string(), log.string()));
  INFO(read_text(log));
  CHECK(status == "143\n");
  CHECK(read_text(log).find("attn: stopping: putting back what it changed first") !=
        std::string::npos);
  CHECK(snapshot() == before);
}

TEST_CASE("attn LESSON --mine runs the student's own functions on the lesson's tensors",
          "[course-loop]") {
  ScratchDir scratch("mine");
  const fs::path tree = release_student_tree(
      scratch.path / "tree", {"dot-product", "softmax", "positional-encoding", "backward"});
  const fs::path softmax = tree / "lessons" / "03-softmax" / "softmax_exercise.cpp";
  write_text(softmax, solution("03-softmax", "softmax_exercise"));
  const fs::path here = fs::current_path();
  const auto in_tree = [&](const std::vector<std::string>& args) {
    fs::current_path(tree / "lessons");
    const auto run = run_attn(args);
    fs::current_path(here);
    return run;
  };

  const auto same = in_tree({"softmax", "--mine", "--color", "never"});
  INFO(same.out << same.err);
  CHECK(same.exit_code == 0);
  CHECK(same.out.find("lessons/03-softmax/softmax_exercise.cpp") != std::string::npos);
  CHECK(same.out.find("output from your softmax(input)") != std::string::npos);
  CHECK(same.out.find("your output is attn's") != std::string::npos);
  CHECK(same.out.find("the same as attn's output within atol 1e-05 + rtol 0.0001") !=
        std::string::npos);
  // With the mask, the student's softmax gets the masked scores, -inf included.
  const auto masked = in_tree({"softmax", "--mine", "--mask", "causal", "--format", "json"});
  CHECK(masked.exit_code == 0);
  CHECK(masked.out.find("\"yours_output\"") != std::string::npos);
  CHECK(masked.out.find("output from your softmax(masked)") != std::string::npos);

  // Rows left unnormalised: the step differs, and the command fails.
  std::string unnormalised = solution("03-softmax", "softmax_exercise");
  const std::string divide = "weights(b, t, s) /= sum;";
  REQUIRE(unnormalised.find(divide) != std::string::npos);
  unnormalised.replace(unnormalised.find(divide), divide.size(), "(void)sum;");
  write_text(softmax, unnormalised);
  const auto differs = in_tree({"softmax", "--mine", "--color", "never"});
  CHECK(differs.exit_code == 1);
  CHECK(differs.out.find("output differs from attn's: ") != std::string::npos);
  CHECK(differs.out.find("elements differ beyond atol") != std::string::npos);

  // A learned table: the student's add_positions gets the lesson's input and its rows of it.
  write_text(tree / "lessons" / "06-positional-encoding" / "positional_encoding_exercise.cpp",
             solution("06-positional-encoding", "positional_encoding_exercise"));
  const auto positions =
      in_tree({"positional-encoding", "--mine", "--kind", "learned", "--color", "never"});
  INFO(positions.out << positions.err);
  CHECK(positions.exit_code == 0);
  CHECK(positions.out.find("output from your add_positions(input, pe)") != std::string::npos);
  CHECK(positions.out.find("your output is attn's") != std::string::npos);
  // What the student's code throws reaches the terminal escaped.
  std::string escaping = solution("06-positional-encoding", "positional_encoding_exercise");
  const std::string body = "Tensor3 add_positions(const Tensor3& x, const Tensor2& pe) {";
  REQUIRE(escaping.find(body) != std::string::npos);
  escaping.insert(escaping.find(body) + body.size(),
                  "\n  throw std::invalid_argument(\"\\x1b[2Jcleared\");");
  write_text(tree / "lessons" / "06-positional-encoding" / "positional_encoding_exercise.cpp",
             escaping);
  const auto escaped = in_tree({"positional-encoding", "--mine", "--color", "never"});
  CHECK(escaped.exit_code == 1);
  CHECK(escaped.out.find('\x1b') == std::string::npos);
  CHECK(escaped.out.find("threw std::invalid_argument: ^[[2Jcleared") != std::string::npos);
  // NaN everywhere: the largest difference is NaN, not 0.
  std::string nan = solution("06-positional-encoding", "positional_encoding_exercise");
  nan.insert(nan.find(body) + body.size(),
             "\n  Tensor3 y = x;\n  for (float& v : y)\n    v = std::nanf(\"\");\n  return y;");
  write_text(tree / "lessons" / "06-positional-encoding" / "positional_encoding_exercise.cpp",
             "#include <cmath>\n" + nan);
  const auto nans = in_tree({"positional-encoding", "--mine", "--color", "never"});
  INFO(nans.out);
  CHECK(nans.exit_code == 1);
  CHECK(nans.out.find("(largest difference nan)") != std::string::npos);

  // softmax_backward on the lesson's P and dP, before the division by √hs.
  write_text(tree / "lessons" / "10-backward" / "backward_exercise.cpp",
             solution("10-backward", "backward_exercise"));
  const auto backward = in_tree({"backward", "--mine", "--color", "never"});
  INFO(backward.out << backward.err);
  CHECK(backward.exit_code == 0);
  CHECK(backward.out.find("d_softmax from your softmax_backward(weights, d_weights)") !=
        std::string::npos);
  CHECK(backward.out.find("your d_softmax is attn's") != std::string::npos);

  // The stub: what it threw, for each of the three steps it computes.
  const auto stub = in_tree({"dot-product", "--mine", "--color", "never"});
  CHECK(stub.exit_code == 1);
  CHECK(stub.out.find("dot_product_attention threw std::logic_error: not implemented") !=
        std::string::npos);
  CHECK(stub.out.find("your weights is attn's") != std::string::npos);

  // Outside a tree, and on a masked attention lesson: one line, exit 2.
  fs::current_path(scratch.path);
  const auto outside = run_attn({"softmax", "--mine"});
  fs::current_path(here);
  CHECK(outside.exit_code == 2);
  CHECK(line_count(outside.err) == 1);
  CHECK(outside.err.find("--mine: it runs your exercise from your assignment tree") !=
        std::string::npos);
  const auto mask = in_tree({"attention", "--mine", "--mask", "causal"});
  CHECK(mask.exit_code == 2);
  CHECK(mask.err.find("drop --mask") != std::string::npos);
}
