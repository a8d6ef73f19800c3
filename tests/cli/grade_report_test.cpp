// The reports of attn grade, made from outcomes directly (no compiler): the text report keeps its
// points in one column whatever the test names (C3), and every report carries attn's mark, so
// that --output may replace it later and nothing else (render/file_mark.hpp).
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "base/utf8.hpp"
#include "grader.hpp"
#include "io/file_io.hpp"
#include "report.hpp"

using attn::course::LessonOutcome;
using attn::course::TestOutcome;
using attn::course::TestStatus;

namespace {

std::vector<LessonOutcome> outcomes_with(const std::vector<std::string>& names) {
  LessonOutcome lesson;
  lesson.exercise.number = 7;
  lesson.exercise.lesson = "layer-norm";
  lesson.built = true;
  for (const std::string& name : names) {
    TestOutcome test;
    test.info.name = name;
    test.info.points = 2;
    test.info.hidden = true;
    test.status = TestStatus::passed;
    test.score = 2;
    lesson.tests.push_back(test);
  }
  return {lesson};
}

// The column where each test line's points end ("2/2").
std::vector<std::size_t> point_columns(const std::string& report) {
  std::vector<std::size_t> ends;
  std::size_t start = 0;
  while (start < report.size()) {
    const std::size_t end = report.find('\n', start);
    const std::string line = report.substr(start, end - start);
    if (line.starts_with("  ✓") && line.ends_with("2/2")) ends.push_back(attn::column_width(line));
    start = end == std::string::npos ? report.size() : end + 1;
  }
  return ends;
}

}  // namespace

TEST_CASE("the text report keeps its points in one column, long names cut short (C3)",
          "[grade][report]") {
  const std::string long_name(90, 'x');
  const std::string wide_name =
      "normalises with a large eps, ε = 1e-2, and ✓ names of éèêë " + std::string(40, 'y');
  const std::string report =
      attn::course::text_report(outcomes_with({"short", long_name, wide_name, "large eps"}), false);
  INFO(report);
  const std::vector<std::size_t> ends = point_columns(report);
  REQUIRE(ends.size() == 4);
  for (std::size_t end : ends)
    CHECK(end == ends.front());
  CHECK(report.find(long_name) == std::string::npos);
  CHECK(report.find("xxx…") != std::string::npos);
}

TEST_CASE("every report attn grade writes carries attn's mark", "[grade][report]") {
  const auto outcomes = outcomes_with({"short"});
  CHECK(attn::course::gradescope_report(outcomes).find(R"("written_by": "attn")") !=
        std::string::npos);
  const std::string junit = attn::course::junit_report(outcomes, "");
  CHECK(junit.find(attn::kWrittenByComment) < junit.find("<testsuites"));
  const std::string text = attn::course::text_report(outcomes, false);
  CHECK(text.find("\nStudent code ran confined (") != std::string::npos);
}
