// The reports of `attn grade`: text for a terminal, Gradescope's results.json, JUnit XML. A
// submission's notes (LessonOutcome::submitted) head the text and results.json's output, and are
// each lesson's <system-out> in JUnit.
#pragma once

#include <string>
#include <vector>

#include "grader.hpp"

namespace attn::course {

// Per lesson and per test: pass or fail, points, and the evidence of each failure.
// Student output as a report shows it: C0 controls as ^[ ^M ^G (newline and tab kept), DEL as
// ^?, C1 controls and bidirectional overrides as <U+009B>, bytes that are not UTF-8 as \x9b.
std::string escape_controls(const std::string& text);

std::string text_report(const std::vector<LessonOutcome>& outcomes, bool color);
// Gradescope's results.json (score, tests[] with name, score, max_score, status, output,
// visibility). `problem` (a bad --dir, an unknown lesson) gives score 0 with it as the output.
std::string gradescope_report(const std::vector<LessonOutcome>& outcomes,
                              const std::string& problem = "");
// JUnit XML: a testsuite per lesson, a testcase per test, <failure> or <error> with the evidence.
std::string junit_report(const std::vector<LessonOutcome>& outcomes,
                         const std::string& problem = "");

// Every line of `text` with `prefix` in front.
std::string indent(const std::string& text, const std::string& prefix);
// "12", "12.5".
std::string number_string(double value);
// "12/14", "12.5/14".
std::string points_string(double score, double max_score);

}  // namespace attn::course
