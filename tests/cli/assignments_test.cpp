// The course's assignments, end to end: this checkout grades to full marks; the released
// student tree (stubs) grades to zero; each of the notebooks' bugs, planted into a solution,
// fails the tests it should; results.json follows Gradescope's spec and the JUnit XML parses;
// bad trees, bad code, crashes and endless loops get a clear report and never a hang.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::line_count;
using attn::testing::run_attn;
using attn::testing::ScratchDir;
using nlohmann::json;

namespace {

const fs::path kSource = ATTN_SOURCE_DIR;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<fs::path> exercise_folders() {
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(kSource / "lessons")) {
    if (entry.is_directory() && !fs::is_empty(entry.path())) {
      for (const auto& file : fs::directory_iterator(entry.path())) {
        if (file.path().filename().string().ends_with("_exercise_test.cpp"))
          folders.push_back(entry.path());
      }
    }
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

// A tree holding copies of some of this checkout's lesson folders.
void copy_lessons(const fs::path& tree, const std::vector<std::string>& folders) {
  for (const std::string& folder : folders) {
    fs::create_directories(tree / "lessons");
    fs::copy(kSource / "lessons" / folder, tree / "lessons" / folder, fs::copy_options::recursive);
  }
}

// Gradescope's results.json, field by field (gradescope autograder_samples docs/specs.md).
void check_gradescope_schema(const json& results) {
  static const std::set<std::string> visibilities = {"hidden", "after_due_date", "after_published",
                                                     "visible"};
  REQUIRE(results.is_object());
  REQUIRE(results.contains("score"));
  CHECK(results["score"].is_number());
  CHECK(results["output"].is_string());
  CHECK(visibilities.count(results["visibility"].get<std::string>()) == 1);
  CHECK(visibilities.count(results["stdout_visibility"].get<std::string>()) == 1);
  REQUIRE(results["tests"].is_array());
  for (const json& test : results["tests"]) {
    INFO(test.dump());
    REQUIRE(test.is_object());
    CHECK(test["name"].is_string());
    CHECK(test["score"].is_number());
    CHECK(test["max_score"].is_number());
    CHECK(test["score"].get<double>() <= test["max_score"].get<double>());
    CHECK(test["output"].is_string());
    CHECK((test["status"] == "passed" || test["status"] == "failed"));
    CHECK(visibilities.count(test["visibility"].get<std::string>()) == 1);
    CHECK(test["number"].is_string());
  }
}

// A strict check that `xml` is well-formed: one root, balanced tags, quoted attributes, only
// the predefined or numeric entities. Returns the element names in document order.
std::vector<std::string> parse_xml(const std::string& xml) {
  std::vector<std::string> names, open;
  std::size_t i = 0;
  const auto fail = [&](const std::string& why) {
    FAIL("XML not well-formed at byte " << i << ": " << why);
  };
  const auto check_text = [&](const std::string& text) {
    for (std::size_t k = 0; k < text.size(); ++k) {
      if (text[k] == '<') fail("raw < in text");
      if (static_cast<unsigned char>(text[k]) < 0x20 && text[k] != '\n' && text[k] != '\t' &&
          text[k] != '\r') {
        fail("control character in text");
      }
      if (text[k] == '&') {
        const std::size_t end = text.find(';', k);
        if (end == std::string::npos) fail("unterminated entity");
        const std::string entity = text.substr(k + 1, end - k - 1);
        if (entity != "amp" && entity != "lt" && entity != "gt" && entity != "quot" &&
            entity != "apos" && !entity.starts_with("#")) {
          fail("unknown entity &" + entity + ";");
        }
      }
    }
  };
  if (xml.starts_with("<?xml")) i = xml.find("?>") + 2;
  bool root_closed = false;
  while (i < xml.size()) {
    const std::size_t lt = xml.find('<', i);
    const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    check_text(text);
    if (open.empty() && text.find_first_not_of(" \n\t\r") != std::string::npos)
      fail("text outside the root");
    if (lt == std::string::npos) break;
    if (xml.compare(lt, 4, "<!--") == 0) {  // a comment: no "--" inside, closed by "-->"
      const std::size_t end = xml.find("-->", lt + 4);
      if (end == std::string::npos) fail("unterminated comment");
      if (xml.substr(lt + 4, end - lt - 4).find("--") != std::string::npos) fail("-- in a comment");
      i = end + 3;
      continue;
    }
    const std::size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) fail("unterminated tag");
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.starts_with("/")) {
      if (open.empty() || open.back() != tag.substr(1))
        fail("closing tag </" + tag.substr(1) + "> does not match");
      open.pop_back();
      if (open.empty()) root_closed = true;
      continue;
    }
    if (root_closed) fail("a second root element");
    const bool empty = tag.ends_with("/");
    if (empty) tag.pop_back();
    static const std::regex element(
        R"(^([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"<]*")*)\s*$)");
    std::smatch m;
    if (!std::regex_match(tag, m, element)) fail("bad tag <" + tag + ">");
    check_text(m[2]);
    names.push_back(m[1]);
    if (!empty) open.push_back(m[1]);
    if (empty && open.empty()) root_closed = true;
  }
  if (!open.empty()) fail("unclosed <" + open.back() + ">");
  REQUIRE(root_closed);
  return names;
}

// A bug of tests/assignments/bugs/: one or more find/replace pairs, the tests it must fail
// (`expect:`), or `score: 0` when the lesson must earn nothing (a constant answer).
struct PlantedBug {
  struct Edit {
    std::string find, replace;
  };
  std::string name, lesson, file;
  std::vector<Edit> edits;
  std::vector<std::string> expect;
  bool scores_nothing = false;
};

PlantedBug read_bug(const fs::path& path) {
  PlantedBug bug;
  bug.name = path.stem().string();
  std::istringstream in(read_text(path));
  std::string line, *into = nullptr;
  while (std::getline(in, line)) {
    if (line == "--- find") {
      bug.edits.emplace_back();
      into = &bug.edits.back().find;
    } else if (line == "--- replace" && !bug.edits.empty()) {
      into = &bug.edits.back().replace;
    } else if (into != nullptr) {
      *into += line + "\n";
    } else if (line.starts_with("lesson: ")) {
      bug.lesson = line.substr(8);
    } else if (line.starts_with("file: ")) {
      bug.file = line.substr(6);
    } else if (line.starts_with("expect: ")) {
      bug.expect.push_back(line.substr(8));
    } else if (line == "score: 0") {
      bug.scores_nothing = true;
    }
  }
  return bug;
}

std::string lesson_folder(const std::string& lesson) {
  for (const fs::path& folder : exercise_folders()) {
    if (folder.filename().string().substr(3) == lesson) return folder.filename().string();
  }
  FAIL("no exercise folder for lesson " << lesson);
  return "";
}

// Plants the bug in a copy of its lesson and grades it: exit 1, and every expected test fails;
// with `score: 0`, every test of the lesson fails.
void check_bug_is_caught(const std::string& name) {
  const PlantedBug bug = read_bug(kSource / "tests" / "assignments" / "bugs" / (name + ".bug"));
  REQUIRE(!bug.lesson.empty());
  REQUIRE(!bug.edits.empty());
  REQUIRE((!bug.expect.empty() || bug.scores_nothing));
  ScratchDir scratch("bug-" + name);
  const std::string folder = lesson_folder(bug.lesson);
  copy_lessons(scratch.path, {folder});
  const fs::path file = scratch.path / "lessons" / folder / bug.file;
  std::string source = read_text(file);
  for (const PlantedBug::Edit& edit : bug.edits) {
    INFO("planted bug " << name << " finds:\n" << edit.find);
    REQUIRE(!edit.find.empty());
    const std::size_t at = source.find(edit.find);
    REQUIRE(at != std::string::npos);
    REQUIRE(source.find(edit.find, at + 1) == std::string::npos);
    source.replace(at, edit.find.size(), edit.replace);
  }
  write_text(file, source);
  const fs::path results = scratch.path / "results.json";
  const auto run = run_attn({"grade", "--dir", scratch.path.string(), "--format", "gradescope",
                             "--output", results.string()});
  INFO(run.err);
  CHECK(run.exit_code == 1);
  const json report = json::parse(read_text(results));
  check_gradescope_schema(report);
  std::map<std::string, std::string> status;
  for (const json& test : report["tests"])
    status[test["name"].get<std::string>()] = test["status"];
  for (const std::string& expected : bug.expect) {
    const std::string key = fmt::format("{} {}: {}", folder.substr(0, 2), bug.lesson, expected);
    INFO("planted bug " << name << " must fail: " << key);
    REQUIRE(status.count(key) == 1);
    CHECK(status[key] == "failed");
  }
  if (bug.scores_nothing) {
    for (const json& test : report["tests"]) {
      INFO("planted bug " << name << " must earn nothing: " << test["name"].get<std::string>());
      CHECK(test["score"].get<double>() == 0.0);
    }
    CHECK(report["score"].get<double>() == 0.0);
  }
  CHECK(report["score"].get<double>() < [&] {
    double total = 0;
    for (const json& test : report["tests"])
      total += test["max_score"].get<double>();
    return total;
  }());
}

}  // namespace

TEST_CASE("every exercise has tests with points, TODO markers, solutions and staged hints",
          "[assignments]") {
  const std::vector<fs::path> folders = exercise_folders();
  REQUIRE(folders.size() == 17);
  static const std::regex test_case(
      R"re(TEST_CASE\(\s*"[^"]+",\s*"\[([a-z-]+)\](\[points=[0-9.]+\])(\[\.hidden\])?"\))re");
  for (const fs::path& folder : folders) {
    const std::string number = folder.filename().string().substr(0, 2);
    const std::string lesson = folder.filename().string().substr(3);
    std::string stem = lesson;
    std::replace(stem.begin(), stem.end(), '-', '_');
    INFO("lesson " << folder.filename().string());
    const std::string source = read_text(folder / (stem + "_exercise.cpp"));
    const std::string tests = read_text(folder / (stem + "_exercise_test.cpp"));
    const std::string hints = read_text(folder / "hints.md");
    REQUIRE(fs::exists(folder / (stem + "_exercise.hpp")));
    // As many TODO(lesson NN) markers as solution blocks, each block closed.
    std::size_t todos = 0, begins = 0, ends = 0;
    for (std::size_t at = source.find("// TODO(lesson " + number + "):"); at != std::string::npos;
         at = source.find("// TODO(lesson " + number + "):", at + 1)) {
      ++todos;
    }
    for (std::size_t at = source.find("// BEGIN SOLUTION"); at != std::string::npos;
         at = source.find("// BEGIN SOLUTION", at + 1))
      ++begins;
    for (std::size_t at = source.find("// END SOLUTION"); at != std::string::npos;
         at = source.find("// END SOLUTION", at + 1))
      ++ends;
    CHECK(begins >= 2);
    CHECK(begins == ends);
    CHECK(todos == begins);
    // Tests tagged with the lesson, with points, some hidden.
    std::size_t visible = 0, hidden = 0;
    for (auto it = std::sregex_iterator(tests.begin(), tests.end(), test_case);
         it != std::sregex_iterator(); ++it) {
      CHECK((*it)[1] == lesson);
      ((*it)[3].matched ? hidden : visible) += 1;
    }
    std::size_t declared = 0;
    for (std::size_t at = tests.find("\nTEST_CASE("); at != std::string::npos;
         at = tests.find("\nTEST_CASE(", at + 1))
      ++declared;
    CHECK(visible + hidden == declared);
    CHECK(visible >= 5);
    CHECK(hidden >= 1);
    // At least two staged hints, none quoting a line of the solution.
    std::size_t stages = 0;
    for (std::size_t at = hints.find("\n## "); at != std::string::npos;
         at = hints.find("\n## ", at + 1))
      ++stages;
    CHECK(stages >= 2);
    std::istringstream lines(source);
    bool inside = false;
    for (std::string line; std::getline(lines, line);) {
      if (line.find("// BEGIN SOLUTION") != std::string::npos) inside = true;
      if (line.find("// END SOLUTION") != std::string::npos) inside = false;
      const std::string code = line.substr(std::min(line.size(), line.find_first_not_of(' ')));
      if (inside && code.size() >= 24 && !code.starts_with("//") && code.find('{') != 0 &&
          code.find('}') != 0) {
        INFO("hints.md quotes the solution line: " << code);
        CHECK(hints.find(code) == std::string::npos);
      }
    }
  }
}

TEST_CASE("attn grade gives this checkout full marks in every format", "[assignments]") {
  ScratchDir scratch("grade-checkout");
  const fs::path results = scratch.path / "results.json";
  const auto graded = run_attn(
      {"grade", "--dir", kSource.string(), "--format", "gradescope", "--output", results.string()});
  INFO(graded.err);
  CHECK(graded.exit_code == 0);
  CHECK(graded.out.empty());
  const json report = json::parse(read_text(results));
  check_gradescope_schema(report);
  double total = 0;
  std::set<std::string> lessons;
  for (const json& test : report["tests"]) {
    INFO(test["name"].get<std::string>() << "\n" << test["output"].get<std::string>());
    CHECK(test["status"] == "passed");
    CHECK(test["score"] == test["max_score"]);
    total += test["max_score"].get<double>();
    lessons.insert(test["tags"][0].get<std::string>());
  }
  CHECK(report["score"].get<double>() == total);
  CHECK(total > 100);
  CHECK(lessons.size() == 17);

  // The same results as JUnit XML (no rebuild needed: the objects are cached in the tree).
  const auto junit = run_attn({"grade", "--dir", kSource.string(), "--lesson", "softmax",
                               "--lesson", "layer-norm", "--format", "junit"});
  CHECK(junit.exit_code == 0);
  const std::vector<std::string> names = parse_xml(junit.out);
  CHECK(names.front() == "testsuites");
  CHECK(std::count(names.begin(), names.end(), "testsuite") == 2);
  CHECK(std::count(names.begin(), names.end(), "failure") == 0);
  CHECK(junit.out.find("failures=\"0\" errors=\"0\"") != std::string::npos);

  // And as text: one line per test, then the score.
  const auto text =
      run_attn({"grade", "--dir", kSource.string(), "--lesson", "03"}, {"NO_COLOR=1"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("03 softmax") != std::string::npos);
  CHECK(text.out.find("✗") == std::string::npos);
  CHECK(text.out.find("Score: 14/14 (100%), 1 of 1 lessons pass") != std::string::npos);
}

TEST_CASE("the released student tree has stubs and no solutions, and grades to zero",
          "[assignments]") {
  ScratchDir scratch("release");
  const fs::path student = scratch.path / "student";
  const auto released = run_attn({"assignments", "release", "--out", student.string()});
  INFO(released.err);
  REQUIRE(released.exit_code == 0);
  CHECK(released.out.find("17 exercises") != std::string::npos);
  CHECK(!fs::exists(scratch.path / "student.partial"));
  // Nothing between solution markers, no hidden tests, every stub naming its function.
  std::size_t stubs = 0;
  for (const auto& entry : fs::recursive_directory_iterator(student)) {
    if (!entry.is_regular_file()) continue;
    const std::string text = read_text(entry.path());
    INFO(entry.path().string());
    CHECK(text.find("SOLUTION") == std::string::npos);
    CHECK(text.find("[.hidden]\")") == std::string::npos);
    CHECK(text.find("HIDDEN TESTS") == std::string::npos);
    for (std::size_t at = text.find("throw std::logic_error(\"not implemented: ");
         at != std::string::npos;
         at = text.find("throw std::logic_error(\"not implemented: ", at + 1)) {
      ++stubs;
    }
  }
  CHECK(stubs >= 18);
  CHECK(fs::exists(student / "assignments.json"));
  CHECK(fs::exists(student / "README.md"));
  CHECK(fs::exists(student / "lessons" / "03-softmax" / "hints.md"));
  CHECK(json::parse(read_text(student / "assignments.json"))["lessons"].size() == 17);

  // Graded: every test fails (score 0), exit 1, and results.json lists them all with evidence.
  const fs::path results = scratch.path / "results.json";
  const auto graded = run_attn(
      {"grade", "--dir", student.string(), "--format", "gradescope", "--output", results.string()});
  INFO(graded.err);
  CHECK(graded.exit_code == 1);
  const json report = json::parse(read_text(results));
  check_gradescope_schema(report);
  CHECK(report["score"] == 0.0);
  CHECK(report["tests"].size() >= 50);
  for (const json& test : report["tests"]) {
    INFO(test["name"].get<std::string>());
    CHECK(test["status"] == "failed");
    // The hidden tests are attn's own, shown after the due date.
    CHECK((test["visibility"] == "visible" || test["visibility"] == "after_due_date"));
    CHECK(test["output"].get<std::string>().find("not implemented: ") != std::string::npos);
  }

  // The student's progress: nothing done, the next exercise named.
  const auto check = run_attn({"check", "softmax", "--dir", student.string()});
  CHECK(check.exit_code == 1);
  CHECK(check.out.find("exception: not implemented: softmax") != std::string::npos);
  // The prediction is released as NaN: reported as not made yet, beside the failing test.
  CHECK(read_text(student / "lessons" / "03-softmax" / "softmax_exercise.cpp")
            .find("const double predicted_top_weight = std::nan(\"\");  // prediction") !=
        std::string::npos);
  CHECK(check.out.find("prediction, the largest weight of softmax(1, 2, 3): not predicted yet; "
                       "write your guess in predicted_top_weight") != std::string::npos);
  CHECK(check.out.find("Stuck? `attn hint softmax`") != std::string::npos);
  CHECK(check.out.find("Progress: [>") != std::string::npos);
  CHECK(check.out.find("0/17 exercises done") != std::string::npos);

  // The student tree's manifest counts only the visible tests (G7).
  const json manifest = json::parse(read_text(student / "assignments.json"));
  for (const json& lesson : manifest["lessons"])
    CHECK(lesson["hidden_points"] == 0.0);
  const std::string softmax_tests =
      read_text(student / "lessons" / "03-softmax" / "softmax_exercise_test.cpp");
  std::size_t visible = 0;
  for (std::size_t at = softmax_tests.find("\nTEST_CASE("); at != std::string::npos;
       at = softmax_tests.find("\nTEST_CASE(", at + 1)) {
    ++visible;
  }
  for (const json& lesson : manifest["lessons"]) {
    if (lesson["lesson"] == "softmax") CHECK(lesson["tests"].get<std::size_t>() == visible);
  }

  // The grader bundle keeps the hidden tests, marked after_due_date, and holds no solution.
  const fs::path autograder = scratch.path / "autograder";
  REQUIRE(run_attn({"assignments", "release", "--grader", autograder.string()}).exit_code == 0);
  const std::string tests = read_text(autograder / "share" / "attn" / "grader" / "course" /
                                      "lessons" / "03-softmax" / "softmax_exercise_test.cpp");
  CHECK(tests.find("[.hidden]") != std::string::npos);
  // Its student course, as a student's install holds it, has none.
  CHECK(read_text(autograder / "share" / "attn" / "course" / "lessons" / "03-softmax" /
                  "softmax_exercise_test.cpp")
            .find("[.hidden]\"") == std::string::npos);
  for (const auto& entry : fs::recursive_directory_iterator(autograder)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cpp") continue;
    INFO(entry.path().string());
    CHECK(read_text(entry.path()).find("SOLUTION") == std::string::npos);
    if (entry.path().filename().string().ends_with("_exercise.cpp")) {
      CHECK(read_text(entry.path()).find("not implemented") != std::string::npos);
    }
  }
  CHECK(fs::exists(autograder / "run_autograder"));
  CHECK(fs::exists(autograder / "setup.sh"));
  CHECK(fs::exists(autograder / "bin" / "attn"));
  // Releasing onto an existing tree is refused, and leaves it as it was.
  const auto again = run_attn({"assignments", "release", "--out", autograder.string()});
  CHECK(again.exit_code == 2);
  CHECK(line_count(again.err) == 1);
  CHECK(again.err.find("already exists") != std::string::npos);
  CHECK(read_text(autograder / "share" / "attn" / "grader" / "course" / "lessons" / "03-softmax" /
                  "softmax_exercise_test.cpp") == tests);
}

TEST_CASE("a student's solution copied into a released tree passes, and list marks it done",
          "[assignments]") {
  ScratchDir scratch("progress");
  const fs::path student = scratch.path / "student";
  REQUIRE(run_attn({"assignments", "release", "--out", student.string()}).exit_code == 0);
  fs::copy_file(kSource / "lessons" / "03-softmax" / "softmax_exercise.cpp",
                student / "lessons" / "03-softmax" / "softmax_exercise.cpp",
                fs::copy_options::overwrite_existing);
  const auto check = run_attn({"check", "03", "--dir", student.string()});
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
  CHECK(check.out.find("✓ 03 softmax is done.") != std::string::npos);
  CHECK(check.out.find("prediction, the largest weight of softmax(1, 2, 3): your prediction 0.6, "
                       "the run's value 0.665: within 10%") != std::string::npos);
  // A prediction far off is reported as such, and changes no points.
  const fs::path source = student / "lessons" / "03-softmax" / "softmax_exercise.cpp";
  const std::string solution = read_text(source);
  const auto graded_score = [&] {
    const fs::path results = scratch.path / "softmax.json";
    const auto graded = run_attn({"grade", "--dir", student.string(), "--lesson", "softmax",
                                  "--format", "gradescope", "--output", results.string()});
    INFO(graded.err);
    CHECK(graded.exit_code == 0);
    return json::parse(read_text(results))["score"].get<double>();
  };
  const double score = graded_score();
  {
    std::string far = solution;
    const std::string line = "predicted_top_weight = 0.6;";
    REQUIRE(far.find(line) != std::string::npos);
    far.replace(far.find(line), line.size(), "predicted_top_weight = 8.0;");
    std::ofstream(source, std::ios::binary) << far;
  }
  const auto far_check = run_attn({"check", "03", "--dir", student.string()});
  CHECK(far_check.exit_code == 0);
  CHECK(far_check.out.find("your prediction 8, the run's value 0.665: off by 12x; see hint 2") !=
        std::string::npos);
  CHECK(graded_score() == score);
  CHECK(score > 0.0);
  CHECK(check.out.find("1/17 exercises done") != std::string::npos);
  CHECK(check.out.find("Next exercise: 01 dot-product") != std::string::npos);

  // attn list, run inside the tree, marks softmax done and the others pending.
  const fs::path dir = fs::current_path();
  fs::current_path(student / "lessons");
  const auto list = run_attn({"list"});
  fs::current_path(dir);
  CHECK(list.exit_code == 0);
  CHECK(list.out.find("03  softmax              done") != std::string::npos);
  CHECK(list.out.find("04  attention            pending") != std::string::npos);
  CHECK(list.out.find("1/17 exercises done") != std::string::npos);

  // Editing the file again marks it changed until it is checked again.
  std::ofstream(student / "lessons" / "03-softmax" / "softmax_exercise.cpp", std::ios::app) << "\n";
  fs::current_path(student);
  const auto edited = run_attn({"list"});
  fs::current_path(dir);
  CHECK(edited.out.find("03  softmax              changed") != std::string::npos);
  CHECK(edited.out.find("changed: edited since it passed") != std::string::npos);
  CHECK(edited.out.find("0/17 exercises done") != std::string::npos);
}

TEST_CASE("attn hint gives the hints one stage at a time and never past the last",
          "[assignments]") {
  ScratchDir scratch("hints");
  copy_lessons(scratch.path, {"03-softmax"});
  const std::string dir = scratch.path.string();
  const auto first = run_attn({"hint", "softmax", "--dir", dir});
  CHECK(first.exit_code == 0);
  CHECK(first.out.starts_with("Hint 1 of 3 for 03 softmax:"));
  CHECK(first.out.find("Run `attn hint softmax` again for the next hint.") != std::string::npos);
  CHECK(run_attn({"hint", "softmax", "--dir", dir}).out.starts_with("Hint 2 of 3"));
  CHECK(run_attn({"hint", "softmax", "--dir", dir}).out.starts_with("Hint 3 of 3"));
  const auto last = run_attn({"hint", "softmax", "--dir", dir});
  CHECK(last.out.starts_with("Hint 3 of 3"));
  CHECK(last.out.find("That was the last hint.") != std::string::npos);
  CHECK(run_attn({"hint", "softmax", "--dir", dir, "--stage", "1"}).out.starts_with("Hint 1 of 3"));
  const auto beyond = run_attn({"hint", "softmax", "--dir", dir, "--stage", "4"});
  CHECK(beyond.exit_code == 2);
  CHECK(line_count(beyond.err) == 1);
  CHECK(beyond.err.find("has 3 hints: give --stage from 1 to 3") != std::string::npos);
}

TEST_CASE(
    "bad trees, unknown lessons and bad output paths: one line, exit 2, results.json still written",
    "[assignments]") {
  ScratchDir scratch("bad-grade");
  const fs::path results = scratch.path / "results.json";
  const fs::path junit = scratch.path / "junit.xml";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  write_text(scratch.path / "file.txt", "not a folder\n");
  copy_lessons(scratch.path / "tree", {"03-softmax"});
  const std::vector<Case> cases = {
      {{"--dir", (scratch.path / "missing").string()}, "does not exist"},
      {{"--dir", (scratch.path / "file.txt").string()}, "is a file, not a folder"},
      {{"--dir", kSource.string() + "/core"}, "is not an assignment tree"},
      {{"--dir", (scratch.path / "tree").string(), "--lesson", "attention"},
       "lesson 'attention' has no exercise: the exercises are softmax"},
      {{"--lesson", "tokens"}, "lesson 'tokens' has no exercise"},
      {{"--lesson", "softmaxx"}, "unknown lesson 'softmaxx'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"grade", "--format", "gradescope", "--output",
                                     results.string()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    fs::remove(results);
    const auto run = run_attn(args);
    INFO(fmt::format("attn {}", fmt::join(args, " ")) << "\n" << run.err);
    CHECK(run.exit_code == 2);
    CHECK(line_count(run.err) == 1);
    CHECK(run.err.find(c.message) != std::string::npos);
    REQUIRE(fs::exists(results));
    const json report = json::parse(read_text(results));
    check_gradescope_schema(report);
    CHECK(report["score"] == 0.0);
    CHECK(report["output"].get<std::string>().find(c.message) != std::string::npos);

    args[2] = "junit";
    args[4] = junit.string();
    fs::remove(junit);
    CHECK(run_attn(args).exit_code == 2);
    parse_xml(read_text(junit));
  }
  const auto folder = run_attn({"grade", "--lesson", "softmax", "--output", scratch.path.string()});
  CHECK(folder.exit_code == 2);
  CHECK(folder.err.find("is a folder: give a file name") != std::string::npos);
  const auto format = run_attn({"grade", "--format", "xml"});
  CHECK(format.exit_code == 2);
  CHECK(line_count(format.err) == 1);
  const auto check = run_attn({"check", "nothing"});
  CHECK(check.exit_code == 2);
  CHECK(check.err.find("unknown lesson 'nothing'") != std::string::npos);
  const auto hint = run_attn({"hint", "--dir", scratch.path.string()});
  CHECK(hint.exit_code == 2);
  CHECK(line_count(hint.err) == 1);
  const auto release = run_attn({"assignments", "release"});
  CHECK(release.exit_code == 2);
  CHECK(line_count(release.err) == 1);
  const auto nowhere = run_attn(
      {"assignments", "release", "--out", (scratch.path / "no" / "such" / "dir").string()});
  CHECK(nowhere.exit_code == 2);
  CHECK(nowhere.err.find("does not exist: create it first") != std::string::npos);
}

TEST_CASE("code that does not compile, crashes or loops is reported per test without a hang",
          "[assignments]") {
  ScratchDir scratch("broken");
  copy_lessons(scratch.path, {"03-softmax"});
  const fs::path source = scratch.path / "lessons" / "03-softmax" / "softmax_exercise.cpp";
  const std::string solution = read_text(source);
  const fs::path results = scratch.path / "results.json";
  const std::vector<std::string> grade = {"grade",          "--dir",      scratch.path.string(),
                                          "--format",       "gradescope", "--output",
                                          results.string(), "--timeout",  "2"};

  // A syntax error: score 0, the compiler's message in every test's output, exit 1.
  std::string broken = solution;
  broken.replace(broken.find("return weights;"), 15, "return weights");
  write_text(source, broken);
  auto run = run_attn(grade);
  CHECK(run.exit_code == 1);
  json report = json::parse(read_text(results));
  check_gradescope_schema(report);
  CHECK(report["score"] == 0.0);
  CHECK(report["output"].get<std::string>().find("did not compile") != std::string::npos);
  for (const json& test : report["tests"]) {
    CHECK(test["status"] == "failed");
    CHECK(test["output"].get<std::string>().find("softmax_exercise.cpp:") != std::string::npos);
    CHECK(test["output"].get<std::string>().find("error:") != std::string::npos);
  }
  const auto text = run_attn({"grade", "--dir", scratch.path.string()}, {"NO_COLOR=1"});
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("✗ softmax_exercise.cpp did not compile; no test ran") != std::string::npos);

  // An endless loop in causal_mask, and a null dereference in softmax for a batch of 3: those
  // tests fail with "timed out" and "crashed"; the others still pass.
  std::string hostile = solution;
  hostile.replace(hostile.find("  Tensor2 mask({tokens, tokens});"), 0,
                  "  for (volatile int spin = 0; spin >= 0; spin = spin | 1) {\n  }\n");
  hostile.replace(
      hostile.find("  Tensor3 weights(scores.shape());"), 0,
      "  if (batch == 3) {\n    volatile float* nowhere = nullptr;\n    *nowhere = 1.0f;\n  }\n");
  write_text(source, hostile);
  run = run_attn(grade);
  INFO(run.err);
  CHECK(run.exit_code == 1);
  report = json::parse(read_text(results));
  std::map<std::string, json> tests;
  for (const json& test : report["tests"])
    tests[test["name"].get<std::string>()] = test;
  const json& loop = tests["03 softmax: causal_mask matches torch.triu of -inf"];
  CHECK(loop["status"] == "failed");
  CHECK(loop["output"].get<std::string>().find("timed out after 2 s") != std::string::npos);
  const json& crashed = tests["03 softmax: softmax rows sum to one over the last axis"];
  CHECK(crashed["status"] == "failed");
  // The signal is named; under the sanitizers, AddressSanitizer ends the program first.
  const std::string evidence = crashed["output"].get<std::string>();
  INFO(evidence);
  CHECK((evidence.find("crashed: killed by signal 11 (Segmentation fault)") != std::string::npos ||
         evidence.find("before the test finished") != std::string::npos));
  CHECK(tests["03 softmax: softmax matches PyTorch on scores of shape 2x4x6"]["status"] ==
        "passed");
  CHECK(tests["03 softmax: softmax of large scores does not overflow"]["status"] == "passed");

  // A deleted exercise file is a compile failure with a way back.
  fs::remove(source);
  run = run_attn(grade);
  CHECK(run.exit_code == 1);
  report = json::parse(read_text(results));
  CHECK(report["tests"][0]["output"].get<std::string>().find("softmax_exercise.cpp is missing") !=
        std::string::npos);
}

TEST_CASE("planted bug: softmax over the wrong axis", "[assignments][bugs]") {
  check_bug_is_caught("softmax_wrong_axis");
}
TEST_CASE("planted bug: attention multiplies the weights by the keys (seed 001)",
          "[assignments][bugs]") {
  check_bug_is_caught("attention_keys_not_values");
}
TEST_CASE("planted bug: scores from query by value (seed 002)", "[assignments][bugs]") {
  check_bug_is_caught("attention_query_by_value");
}
TEST_CASE("planted bug: multi-head scaled by the model width", "[assignments][bugs]") {
  check_bug_is_caught("multi_head_model_width_scale");
}
TEST_CASE("planted bug: LayerNorm with unbiased std (seed 001)", "[assignments][bugs]") {
  check_bug_is_caught("layer_norm_unbiased_std");
}
TEST_CASE("planted bug: LayerNorm with eps outside the root (seed 001)", "[assignments][bugs]") {
  check_bug_is_caught("layer_norm_eps_outside_root");
}
TEST_CASE("planted bug: GELU after the second Linear (seed 000)", "[assignments][bugs]") {
  check_bug_is_caught("feed_forward_gelu_after_second_linear");
}
TEST_CASE("planted bug: sin and cos swapped in the positional table", "[assignments][bugs]") {
  check_bug_is_caught("positional_encoding_sin_cos_swapped");
}

TEST_CASE("planted bug: softmax backward without the p pᵀ term", "[assignments][bugs]") {
  check_bug_is_caught("softmax_backward_missing_ppt");
}
TEST_CASE("planted bug: LayerNorm backward without the mean and variance terms",
          "[assignments][bugs]") {
  check_bug_is_caught("layer_norm_backward_without_mean_terms");
}
TEST_CASE("planted bug: cross-entropy backward without the one-hot", "[assignments][bugs]") {
  check_bug_is_caught("cross_entropy_backward_no_one_hot");
}
TEST_CASE("planted bug: AdamW without bias correction", "[assignments][bugs]") {
  check_bug_is_caught("adamw_no_bias_correction");
}
TEST_CASE("planted bug: AdamW's weight decay as L2 in the gradient", "[assignments][bugs]") {
  check_bug_is_caught("adamw_l2_weight_decay");
}

TEST_CASE("planted bug: cross-attention's padding filled with 0 instead of -1e9",
          "[assignments][bugs]") {
  check_bug_is_caught("cross_attention_mask_fill_zero");
}
TEST_CASE("planted bug: a decoder residual added to the normalised copy", "[assignments][bugs]") {
  check_bug_is_caught("decoder_residual_on_norm");
}
TEST_CASE("planted bug: top-p before top-k's renormalisation", "[assignments][bugs]") {
  check_bug_is_caught("generate_top_p_before_renormalising");
}
TEST_CASE("planted bug: the KV cache's new value taken from the key", "[assignments][bugs]") {
  check_bug_is_caught("generate_cache_value_from_key");
}
TEST_CASE("planted bug: GPT attention without the causal mask", "[assignments][bugs]") {
  check_bug_is_caught("gpt_no_causal_mask");
}
TEST_CASE("planted bug: GPT's causal mask one key too far", "[assignments][bugs]") {
  check_bug_is_caught("gpt_mask_off_by_one");
}
TEST_CASE("planted bug: a GPT block wired post-LN", "[assignments][bugs]") {
  check_bug_is_caught("gpt_post_ln");
}
TEST_CASE("planted bug: GPT's MLP with the exact erf GELU", "[assignments][bugs]") {
  check_bug_is_caught("gpt_exact_gelu");
}
TEST_CASE("planted bug: BPE ties broken by the last pair met", "[assignments][bugs]") {
  check_bug_is_caught("bpe_tie_last_maximum");
}
TEST_CASE("planted bug: BPE pairs counted across the chunks' edges", "[assignments][bugs]") {
  check_bug_is_caught("bpe_pairs_across_chunks");
}
TEST_CASE("planted bug: BPE encoding merges the leftmost pair, not the first learned",
          "[assignments][bugs]") {
  check_bug_is_caught("bpe_encode_leftmost_merge");
}
TEST_CASE("planted bug: the induction score averaged over every query", "[assignments][bugs]") {
  check_bug_is_caught("heads_score_over_every_query");
}
TEST_CASE("planted bug: the induction target is the earlier copy itself, not the key after it",
          "[assignments][bugs]") {
  check_bug_is_caught("heads_target_off_by_one");
}
TEST_CASE("planted bug: mean ablation over the positions instead of the batch",
          "[assignments][bugs]") {
  check_bug_is_caught("heads_mean_over_positions");
}
TEST_CASE("planted bug: another head's columns ablated", "[assignments][bugs]") {
  check_bug_is_caught("heads_wrong_slice");
}

// Constant answers: every function of the lesson gives back values that do not depend on its
// input. Tests that check only an invariant such answers satisfy are paired with a check they
// fail, so that each of these earns nothing.
TEST_CASE("planted bug: a constant answer to lesson 01 earns nothing", "[assignments][bugs]") {
  check_bug_is_caught("dot_product_constant_answer");
}
TEST_CASE("planted bug: a constant answer to lesson 03 (uniform softmax) earns nothing",
          "[assignments][bugs]") {
  check_bug_is_caught("softmax_constant_answer");
}
TEST_CASE("planted bug: all-zero gradients for lesson 10 earn nothing", "[assignments][bugs]") {
  check_bug_is_caught("backward_constant_answer");
}
TEST_CASE("planted bug: a constant answer to lesson 11 earns nothing", "[assignments][bugs]") {
  check_bug_is_caught("train_constant_answer");
}
TEST_CASE("planted bug: a constant answer to lesson 15 earns nothing", "[assignments][bugs]") {
  check_bug_is_caught("gpt_constant_answer");
}
TEST_CASE("planted bug: a constant answer to lesson 16 earns nothing", "[assignments][bugs]") {
  check_bug_is_caught("bpe_constant_answer");
}
TEST_CASE("planted bug: a constant answer to lesson 17 earns nothing", "[assignments][bugs]") {
  check_bug_is_caught("heads_constant_answer");
}

TEST_CASE("every planted bug file has its test case above", "[assignments][bugs]") {
  const std::string self = read_text(kSource / "tests" / "cli" / "assignments_test.cpp");
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(kSource / "tests" / "assignments" / "bugs")) {
    ++files;
    INFO(entry.path().filename().string());
    CHECK(self.find("check_bug_is_caught(\"" + entry.path().stem().string() + "\")") !=
          std::string::npos);
  }
  CHECK(files == 35);
}

TEST_CASE("the Gradescope run_autograder grades a submission and always writes results.json",
          "[assignments]") {
  ScratchDir scratch("autograder");
  // Uploaded one by one: the file lands at the submission's top level.
  fs::create_directories(scratch.path / "submission");
  fs::copy_file(kSource / "lessons" / "07-layer-norm" / "layer_norm_exercise.cpp",
                scratch.path / "submission" / "layer_norm_exercise.cpp");
  REQUIRE(run_attn({"assignments", "release", "--grader", (scratch.path / "source").string()})
              .exit_code == 0);
  const std::string script = (scratch.path / "source" / "run_autograder").string();
  const std::string command =
      fmt::format("AUTOGRADER_ROOT='{}' bash '{}' >'{}' 2>&1", scratch.path.string(), script,
                  (scratch.path / "log.txt").string());
  CHECK(std::system(command.c_str()) == 0);
  INFO(read_text(scratch.path / "log.txt"));
  const json report = json::parse(read_text(scratch.path / "results" / "results.json"));
  check_gradescope_schema(report);
  double layer_norm = 0, hidden = 0;
  for (const json& test : report["tests"]) {
    const bool ours = test["tags"][0] == "layer-norm";
    INFO(test["name"].get<std::string>());
    CHECK(test["status"] == (ours ? "passed" : "failed"));
    if (ours) layer_norm += test["score"].get<double>();
    if (test["visibility"] == "after_due_date") ++hidden;
  }
  CHECK(layer_norm > 10);
  CHECK(report["score"].get<double>() == layer_norm);
  CHECK(hidden >= 9);  // the grader bundle keeps the hidden tests
  // The student reads which file was graded, and that the others were not submitted.
  const std::string output = report["output"].get<std::string>();
  CHECK(output.find("07 layer-norm: graded layer_norm_exercise.cpp\n") != std::string::npos);
  CHECK(output.find("03 softmax: no softmax_exercise.cpp was submitted") != std::string::npos);

  // attn missing: still a results.json, with score 0 and the reason.
  const std::string broken =
      fmt::format("AUTOGRADER_ROOT='{}' ATTN=/nonexistent/attn bash '{}' >/dev/null 2>&1",
                  scratch.path.string(), script);
  CHECK(std::system(broken.c_str()) == 0);
  const json fallback = json::parse(read_text(scratch.path / "results" / "results.json"));
  CHECK(fallback["score"] == 0);
  CHECK(fallback["output"].get<std::string>().find("attn is not at /nonexistent/attn") !=
        std::string::npos);
}
