#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/utf8.hpp"
#include "io/file_io.hpp"
#include "process.hpp"

namespace attn::course {

// What would drive a terminal or reorder text, written visibly: C0 controls as ^[, ^M, ^G (a
// newline and a tab kept), DEL as ^?, C1 controls and the bidirectional overrides and isolates
// as <U+009B>, bytes that are not UTF-8 as \x9b.
std::string escape_controls(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    const char32_t code = utf8_code_point(text, i, length);
    if (code == '\n' || code == '\t' || (code >= 0x20 && code < 0x7f)) {
      out += static_cast<char>(code);
    } else if (code < 0x20) {
      out += '^';
      out += static_cast<char>(code + 0x40);
    } else if (code == 0x7f) {
      out += "^?";
    } else if (code <= 0x9f || (code >= 0x202a && code <= 0x202e) ||
               (code >= 0x2066 && code <= 0x2069)) {
      out += fmt::format("<U+{:04X}>", static_cast<std::uint32_t>(code));
    } else {
      out.append(text, i, length);
    }
    i += length;
  }
  return out;
}

namespace {

// Text that is valid UTF-8 and holds no control characters but tab and newline: safe in JSON
// (nlohmann throws on bad UTF-8) and in XML (which forbids most control characters).
std::string xml_escape(const std::string& raw) {
  return escape_markup(escape_controls(raw));
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// Which submitted file each lesson graded (attn grade --submission), one line each; "" when the
// lessons were graded in a tree.
std::string submission_notes(const std::vector<LessonOutcome>& outcomes) {
  std::string lines;
  for (const LessonOutcome& lesson : outcomes) {
    if (!lesson.submitted.empty())
      lines += fmt::format("  {}: {}\n", lesson.exercise.label(), lesson.submitted);
  }
  return lines.empty() ? lines : "Submitted files:\n" + lines + "\n";
}

}  // namespace

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out += prefix + line + "\n";
  return out;
}

std::string number_string(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{:g}", value);
}

std::string points_string(double score, double max_score) {
  return number_string(score) + "/" + number_string(max_score);
}

std::string text_report(const std::vector<LessonOutcome>& outcomes, bool color) {
  const auto paint = [color](const char* code, const std::string& text) {
    return color ? fmt::format("\x1b[{}m{}\x1b[0m", code, text) : text;
  };
  // Names in one column as wide as the longest (up to 72 cells), points right-aligned after it.
  std::size_t width = 20;
  for (const LessonOutcome& lesson : outcomes) {
    for (const TestOutcome& test : lesson.tests) {
      width = std::max(width, column_width(test.info.name + (test.info.hidden ? " (hidden)" : "")));
    }
  }
  width = std::min<std::size_t>(width, 72);
  // `text` in exactly `cells` columns: padded with spaces, or cut and ended with "…" when longer,
  // so that the points after it stay in one column.
  const auto padded = [](const std::string& text, std::size_t cells) {
    const std::size_t used = column_width(text);
    if (used <= cells) return text + std::string(cells - used, ' ');
    std::string cut;
    std::size_t at = 0, taken = 0;
    while (at < text.size()) {
      const std::size_t n = std::max<std::size_t>(utf8_sequence_length(text, at), 1);
      const std::size_t w = column_width(std::string_view(text).substr(at, n));
      if (taken + w + 1 > cells) break;
      cut.append(text, at, n);
      taken += w;
      at += n;
    }
    return cut + "…" + std::string(cells - taken - 1, ' ');
  };
  std::string out = submission_notes(outcomes);
  double score = 0.0, max_score = 0.0;
  int passed_lessons = 0;
  for (const LessonOutcome& lesson : outcomes) {
    score += lesson.score();
    max_score += lesson.max_score();
    passed_lessons += lesson.passed() ? 1 : 0;
    out += fmt::format("{} {:>7}\n", padded(lesson.exercise.label(), width + 4),
                       points_string(lesson.score(), lesson.max_score()));
    if (!lesson.built) {
      out += paint("31", fmt::format("  ✗ {} did not compile; no test ran",
                                     lesson.exercise.source().filename().string())) +
             "\n";
      out += indent(lesson.build_log, "      ") + "\n";
      continue;
    }
    for (const TestOutcome& test : lesson.tests) {
      const bool ok = test.status == TestStatus::passed;
      const std::string name = test.info.name + (test.info.hidden ? " (hidden)" : "");
      const std::string mark = ok ? paint("32", "✓") : paint("31", "✗");
      out += fmt::format("  {} {} {:>7}\n", mark, padded(name, width),
                         points_string(test.score, test.info.points));
      for (const std::string& note : test.notes)
        out += indent(note, "      ");
      if (!ok) out += indent(test.output, "      ");
    }
    out += "\n";
  }
  const double percent = max_score > 0 ? 100.0 * score / max_score : 0.0;
  out += fmt::format("Score: {} ({:.0f}%), {} of {} lessons pass\n",
                     points_string(score, max_score), percent, passed_lessons, outcomes.size());
  out += fmt::format("Student code ran confined ({}).\n", confinement_summary());
  return out;
}

std::string gradescope_report(const std::vector<LessonOutcome>& outcomes,
                              const std::string& problem) {
  nlohmann::json tests = nlohmann::json::array();
  double score = 0.0;
  std::string summary;
  for (const LessonOutcome& lesson : outcomes) {
    score += lesson.score();
    summary += fmt::format("{}: {}{}\n", lesson.exercise.label(),
                           points_string(lesson.score(), lesson.max_score()),
                           lesson.built ? "" : " (did not compile)");
    int index = 0;
    if (!lesson.built) {
      tests.push_back({{"name", lesson.exercise.label() + ": compiles"},
                       {"number", fmt::format("{}.0", lesson.exercise.number)},
                       {"score", 0.0},
                       {"max_score", 0.0},
                       {"status", "failed"},
                       {"output", escape_controls(lesson.build_log)},
                       {"output_format", "text"},
                       {"tags", {lesson.exercise.lesson}},
                       {"visibility", "visible"}});
    }
    for (const TestOutcome& test : lesson.tests) {
      nlohmann::json entry = {{"name", lesson.exercise.label() + ": " + test.info.name},
                              {"number", fmt::format("{}.{}", lesson.exercise.number, ++index)},
                              {"score", test.score},
                              {"max_score", test.info.points},
                              {"status", test.status == TestStatus::passed ? "passed" : "failed"},
                              {"output", escape_controls(test.output)},
                              {"output_format", "text"},
                              {"tags", {lesson.exercise.lesson}},
                              {"visibility", test.info.hidden ? "after_due_date" : "visible"}};
      tests.push_back(entry);
    }
  }
  std::string output = problem.empty()
                           ? submission_notes(outcomes) + summary
                           : "attn grade could not grade this submission: " + problem + "\n";
  output += fmt::format("Student code ran confined ({}).\n", confinement_summary());
  const nlohmann::json results = {{"extra_data", {{"written_by", "attn"}}},
                                  {"score", problem.empty() ? score : 0.0},
                                  {"output", escape_controls(output)},
                                  {"output_format", "text"},
                                  {"visibility", "visible"},
                                  {"stdout_visibility", "hidden"},
                                  {"tests", tests}};
  return results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string junit_report(const std::vector<LessonOutcome>& outcomes, const std::string& problem) {
  int tests = 0, failures = 0, errors = 0;
  double seconds = 0.0;
  std::string suites;
  for (const LessonOutcome& lesson : outcomes) {
    int suite_failures = 0, suite_errors = 0;
    double suite_seconds = lesson.build_seconds;
    std::string cases;
    for (const TestOutcome& test : lesson.tests) {
      suite_seconds += test.seconds;
      cases +=
          fmt::format("    <testcase classname=\"attn.{}\" name=\"{}\" time=\"{:.3f}\">\n",
                      xml_escape(lesson.exercise.lesson), xml_escape(test.info.name), test.seconds);
      cases += fmt::format(
          "      <properties>\n        <property name=\"points\" value=\"{}\"/>\n"
          "        <property name=\"score\" value=\"{}\"/>\n"
          "        <property name=\"hidden\" value=\"{}\"/>\n      </properties>\n",
          number_string(test.info.points), number_string(test.score), test.info.hidden);
      if (test.status == TestStatus::failed) {
        ++suite_failures;
        cases += fmt::format("      <failure message=\"{}\" type=\"failed\">{}</failure>\n",
                             xml_escape(first_line(test.output)), xml_escape(test.output));
      } else if (test.status == TestStatus::error) {
        ++suite_errors;
        cases += fmt::format("      <error message=\"{}\" type=\"{}\">{}</error>\n",
                             xml_escape(first_line(test.output)),
                             lesson.built ? "error" : "compile error", xml_escape(test.output));
      }
      cases += "    </testcase>\n";
    }
    tests += static_cast<int>(lesson.tests.size());
    failures += suite_failures;
    errors += suite_errors;
    seconds += suite_seconds;
    suites += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3f}\">\n",
        xml_escape(lesson.exercise.folder.filename().string()), lesson.tests.size(), suite_failures,
        suite_errors, suite_seconds);
    suites += fmt::format(
        "    <properties>\n      <property name=\"score\" value=\"{}\"/>\n"
        "      <property name=\"max_score\" value=\"{}\"/>\n    </properties>\n",
        number_string(lesson.score()), number_string(lesson.max_score()));
    suites += cases;
    if (!lesson.submitted.empty())
      suites += fmt::format("    <system-out>{}</system-out>\n", xml_escape(lesson.submitted));
    if (!lesson.built)
      suites += fmt::format("    <system-err>{}</system-err>\n", xml_escape(lesson.build_log));
    suites += "  </testsuite>\n";
  }
  if (!problem.empty()) {
    ++tests, ++errors;
    suites +=
        "  <testsuite name=\"attn grade\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0\">\n"
        "    <testcase classname=\"attn\" name=\"grading\" time=\"0\">\n";
    suites += fmt::format("      <error message=\"{}\" type=\"usage\">{}</error>\n",
                          xml_escape(problem), xml_escape(problem));
    suites += "    </testcase>\n  </testsuite>\n";
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}\n"
      "<testsuites name=\"attn grade\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n{}</testsuites>\n",
      kWrittenByComment, tests, failures, errors, seconds, suites);
}

}  // namespace attn::course
