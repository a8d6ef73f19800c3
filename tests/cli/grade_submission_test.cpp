// `attn grade --submission DIR`: a submission as Gradescope gives it, graded in a tree of attn's
// own. The graded file is the one at lessons/NN-name/<stem>.cpp, else at the top level, never a
// link; every other file of that name is left ungraded, and the report says so.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::read_text;
using attn::testing::run_attn;
using attn::testing::ScratchDir;
using nlohmann::json;

namespace {

const fs::path kSource = ATTN_SOURCE_DIR;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// The instructor's solution of an exercise (the checkout's source, which has the solution
// blocks), and the stub a student starts from.
std::string solution(const std::string& folder, const std::string& stem) {
  return read_text(kSource / "lessons" / folder / (stem + ".cpp"));
}
std::string stub(const fs::path& scratch, const std::string& folder, const std::string& stem) {
  const fs::path student = scratch / "released";
  if (!fs::exists(student))
    REQUIRE(run_attn({"assignments", "release", "--out", student.string()}).exit_code == 0);
  return read_text(student / "lessons" / folder / (stem + ".cpp"));
}

struct Graded {
  attn::testing::RunResult run;
  json report;
  double score(const std::string& lesson) const {
    double total = 0;
    for (const json& test : report["tests"]) {
      if (test["tags"][0] == lesson) total += test["score"].get<double>();
    }
    return total;
  }
  double max_score(const std::string& lesson) const {
    double total = 0;
    for (const json& test : report["tests"]) {
      if (test["tags"][0] == lesson) total += test["max_score"].get<double>();
    }
    return total;
  }
  std::string output() const { return report.value("output", ""); }
};

// Grades `submission` (lesson softmax unless told) to results.json in `scratch`; the grading's
// private folders go under scratch/tmp, which the test checks is empty afterwards.
Graded grade(const fs::path& scratch, const fs::path& submission,
             std::vector<std::string> lessons = {"softmax"}) {
  const fs::path results = scratch / "results.json";
  const fs::path tmp = scratch / "tmp";
  fs::create_directories(tmp);
  std::vector<std::string> args = {"grade",      "--submission", submission.string(), "--format",
                                   "gradescope", "--output",     results.string()};
  for (const std::string& lesson : lessons)
    args.insert(args.end(), {"--lesson", lesson});
  Graded g;
  g.run = run_attn(args, {"ATTN_GRADE_TMPDIR=" + tmp.string()});
  INFO(g.run.err);
  REQUIRE(fs::exists(results));
  g.report = json::parse(read_text(results));
  CHECK(fs::is_empty(tmp));
  return g;
}

bool has(const std::string& text, const std::string& part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a submission's file at its lesson's path is graded over a stub in another folder",
          "[assignments][submission]") {
  ScratchDir scratch("submission-probe");
  const fs::path submission = scratch.path / "submission";
  write_text(submission / "lessons/03-softmax/softmax_exercise.cpp",
             solution("03-softmax", "softmax_exercise"));
  // "a_backup" sorts before "lessons": the old run_autograder graded this stub.
  write_text(submission / "a_backup/softmax_exercise.cpp",
             stub(scratch.path, "03-softmax", "softmax_exercise"));
  const Graded g = grade(scratch.path, submission);
  CHECK(g.run.exit_code == 0);
  CHECK(g.max_score("softmax") > 10);
  CHECK(g.score("softmax") == g.max_score("softmax"));
  CHECK(g.report["score"].get<double>() == g.max_score("softmax"));
  CHECK(has(g.output(),
            "03 softmax: found 2 files named softmax_exercise.cpp: "
            "lessons/03-softmax/softmax_exercise.cpp (graded), "
            "a_backup/softmax_exercise.cpp (not graded)"));
}

TEST_CASE("files uploaded one by one are graded from the submission's top level",
          "[assignments][submission]") {
  ScratchDir scratch("submission-top");
  const fs::path submission = scratch.path / "submission";
  write_text(submission / "softmax_exercise.cpp", solution("03-softmax", "softmax_exercise"));
  const Graded g = grade(scratch.path, submission);
  CHECK(g.run.exit_code == 0);
  CHECK(g.score("softmax") == g.max_score("softmax"));
  CHECK(has(g.output(), "03 softmax: graded softmax_exercise.cpp\n"));
}

TEST_CASE(
    "a file in a folder of its own choosing is not graded, and the output says where to "
    "move it",
    "[assignments][submission]") {
  ScratchDir scratch("submission-elsewhere");
  const fs::path submission = scratch.path / "submission";
  write_text(submission / "a_b/softmax_exercise.cpp", solution("03-softmax", "softmax_exercise"));
  const Graded g = grade(scratch.path, submission);
  CHECK(g.run.exit_code == 1);
  CHECK(g.max_score("softmax") > 10);
  CHECK(g.score("softmax") == 0);
  CHECK(has(g.output(),
            "03 softmax: softmax_exercise.cpp is not at "
            "lessons/03-softmax/softmax_exercise.cpp or the top level: "
            "a_b/softmax_exercise.cpp was found but not graded; move it there"));
}

TEST_CASE("a submission without the exercise's file says so and scores the exercise 0",
          "[assignments][submission]") {
  ScratchDir scratch("submission-none");
  const fs::path submission = scratch.path / "submission";
  write_text(submission / "README.md", "my work\n");
  const Graded g = grade(scratch.path, submission);
  CHECK(g.run.exit_code == 1);
  CHECK(g.max_score("softmax") > 10);
  CHECK(g.score("softmax") == 0);
  CHECK(has(g.output(), "03 softmax: no softmax_exercise.cpp was submitted"));
}

TEST_CASE("a link at the expected path is refused, not followed", "[assignments][submission]") {
  ScratchDir scratch("submission-link");
  const fs::path submission = scratch.path / "submission";
  const fs::path outside = scratch.path / "outside" / "softmax_exercise.cpp";
  write_text(outside, solution("03-softmax", "softmax_exercise"));
  fs::create_directories(submission / "lessons" / "03-softmax");
  fs::create_symlink(outside, submission / "lessons/03-softmax/softmax_exercise.cpp");
  SECTION("a link to a file") {
    const Graded g = grade(scratch.path, submission);
    CHECK(g.score("softmax") == 0);
    CHECK(has(g.output(),
              "03 softmax: lessons/03-softmax/softmax_exercise.cpp is a link, not "
              "graded: submit the file itself"));
  }
  SECTION("a link to a folder on the way") {
    fs::remove_all(submission / "lessons");
    fs::create_directories(submission / "lessons");
    fs::create_directory_symlink(outside.parent_path(), submission / "lessons" / "03-softmax");
    const Graded g = grade(scratch.path, submission);
    CHECK(g.score("softmax") == 0);
    CHECK(has(g.output(), "03 softmax: lessons/03-softmax is a link, not graded"));
  }
}

TEST_CASE("a repository with several lessons grades each from its own folder, in every format",
          "[assignments][submission]") {
  ScratchDir scratch("submission-several");
  const fs::path submission = scratch.path / "submission";
  write_text(submission / "lessons/01-dot-product/dot_product_exercise.cpp",
             solution("01-dot-product", "dot_product_exercise"));
  write_text(submission / "lessons/03-softmax/softmax_exercise.cpp",
             solution("03-softmax", "softmax_exercise"));
  const Graded g = grade(scratch.path, submission, {"01", "03"});
  CHECK(g.run.exit_code == 0);
  CHECK(g.score("dot-product") == g.max_score("dot-product"));
  CHECK(g.score("softmax") == g.max_score("softmax"));
  CHECK(has(g.output(),
            "Submitted files:\n"
            "  01 dot-product: graded lessons/01-dot-product/dot_product_exercise.cpp\n"
            "  03 softmax: graded lessons/03-softmax/softmax_exercise.cpp\n"));
  // The text report opens with the same lines; JUnit gives each lesson's its suite's system-out.
  const auto text = run_attn({"grade", "--submission", submission.string(), "--lesson", "03"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.starts_with(
      "Submitted files:\n  03 softmax: graded lessons/03-softmax/softmax_exercise.cpp\n"));
  const auto junit = run_attn(
      {"grade", "--submission", submission.string(), "--lesson", "03", "--format", "junit"});
  CHECK(has(junit.out, "<system-out>graded lessons/03-softmax/softmax_exercise.cpp</system-out>"));
}

TEST_CASE("a missing or wrong --submission is one line and exit 2", "[assignments][submission]") {
  ScratchDir scratch("submission-bad");
  write_text(scratch.path / "file", "x");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string missing = (scratch.path / "missing").string();
  const std::string file = (scratch.path / "file").string();
  for (const Case& c : std::vector<Case>{
           {{"--submission", missing}, "'" + missing + "' does not exist: give the folder"},
           {{"--submission", file}, "'" + file + "' is not a folder: give the folder"},
           {{"--submission", scratch.path.string(), "--dir", scratch.path.string()},
            "give --submission or --dir, not both"}}) {
    std::vector<std::string> args = {"grade"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto run = run_attn(args);
    INFO(run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK(has(run.err, c.message));
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  }
}
