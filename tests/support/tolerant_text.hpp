// Printed output compared the way float32 allows: the text must be equal word by word, and the
// numbers in it equal within a tolerance. Anything that went through BLAS differs in its last
// bits from one CPU, OpenBLAS kernel or thread count to another, so a golden file or a torch
// repr can only be held to the values, not to their last printed digit.
//
// Each line is split into words at whitespace, and each word into numbers and the text between
// them. Lines must match one for one and words text for text; the amount of whitespace between
// words is not compared (a repr pads every column to its widest value). Two numbers are equal
// when
//   - both are whole numbers (no point, no exponent: sizes, counts, indices) and spelt the same;
//   - or |got - expected| <= atol + rtol * |expected|;
//   - or they differ by at most one unit in the last digit either prints (-0.0352 and -0.0351).
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace attn::testing {

// The lines of a text, without their newlines.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

struct TextTolerance {
  double atol = 1e-5;
  double rtol = 1e-4;
  // Line breaks read as spaces: for two runs whose numbers may print at other lengths (1 and 2
  // threads, whose products may go to different libraries), where a wrapped line then breaks
  // at another word.
  bool line_breaks_as_spaces = false;
};

struct TextComparison {
  bool equal = true;
  std::string diff;  // a readable report of the first differences, empty when equal
};

namespace text_detail {

struct Token {
  std::string text;
  bool number = false;
  bool whole = false;  // a number with no point and no exponent
};

inline bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}
inline bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The length of a number starting at s[i] ("-1.5e-07", "0.0352", "12", ".5"), or 0. A sign
// belongs to the number only when nothing word-like stands before it ("1-1" is two numbers;
// "x-1" is a word, a sign and a number), and a number never starts inside a word ("x0", "fp32").
inline std::size_t number_length(std::string_view s, std::size_t i) {
  if (i > 0 && (is_word_char(s[i - 1]) || s[i - 1] == '.')) return 0;
  std::size_t j = i;
  if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
  const std::size_t mantissa = j;
  while (j < s.size() && is_digit(s[j]))
    ++j;
  if (j < s.size() && s[j] == '.') {
    ++j;
    while (j < s.size() && is_digit(s[j]))
      ++j;
  }
  const std::string_view digits = s.substr(mantissa, j - mantissa);
  if (digits.empty() || digits == "." || !std::any_of(digits.begin(), digits.end(), is_digit))
    return 0;
  if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
    std::size_t k = j + 1;
    if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
    const std::size_t exponent = k;
    while (k < s.size() && is_digit(s[k]))
      ++k;
    if (k > exponent) j = k;
  }
  if (j < s.size() && is_word_char(s[j])) return 0;  // "3x", "12th": part of a word
  return j - i;
}

inline std::vector<Token> tokens(std::string_view line) {
  std::vector<Token> out;
  std::string text;
  auto flush_text = [&] {
    if (!text.empty()) out.push_back({text, false, false});
    text.clear();
  };
  for (std::size_t i = 0; i < line.size();) {
    if (std::isspace(static_cast<unsigned char>(line[i]))) {
      flush_text();
      ++i;
      continue;
    }
    if (const std::size_t n = number_length(line, i); n > 0) {
      flush_text();
      const std::string number(line.substr(i, n));
      const bool whole = number.find_first_of(".eE") == std::string::npos;
      out.push_back({number, true, whole});
      i += n;
      continue;
    }
    text += line[i++];
  }
  flush_text();
  return out;
}

// One unit in the last printed digit: 1e-4 for "-0.0352", 1e-10 for "5.96e-08", 1 for "12".
inline double last_digit_unit(const std::string& number) {
  const std::size_t e = number.find_first_of("eE");
  const std::string mantissa = number.substr(0, e);
  const int exponent = e == std::string::npos ? 0 : std::atoi(number.c_str() + e + 1);
  const std::size_t point = mantissa.find('.');
  const int decimals =
      point == std::string::npos ? 0 : static_cast<int>(mantissa.size() - point - 1);
  return std::pow(10.0, exponent - decimals);
}

inline bool numbers_close(const Token& got, const Token& expected, TextTolerance tol) {
  if (got.text == expected.text) return true;
  if (got.whole && expected.whole) return false;
  const double g = std::strtod(got.text.c_str(), nullptr),
               e = std::strtod(expected.text.c_str(), nullptr);
  const double diff = std::fabs(g - e);
  if (diff <= tol.atol + tol.rtol * std::fabs(e)) return true;
  const double unit = std::max(last_digit_unit(got.text), last_digit_unit(expected.text));
  return diff <= unit * (1.0 + 1e-9);
}

// Why two lines differ, or "" when they are equal under the tolerance.
inline std::string line_difference(std::string_view got, std::string_view expected,
                                   TextTolerance tol) {
  if (got == expected) return {};
  const std::vector<Token> g = tokens(got), e = tokens(expected);
  for (std::size_t i = 0; i < std::min(g.size(), e.size()); ++i) {
    if (g[i].number && e[i].number) {
      if (numbers_close(g[i], e[i], tol)) continue;
      return fmt::format(
          "the number {} where {} was expected (atol {:g}, rtol {:g}, or one unit in the last "
          "digit)",
          g[i].text, e[i].text, tol.atol, tol.rtol);
    }
    if (g[i].number != e[i].number || g[i].text != e[i].text) {
      return fmt::format("'{}' where '{}' was expected", g[i].text, e[i].text);
    }
  }
  if (g.size() != e.size()) {
    return g.size() > e.size() ? fmt::format("an extra '{}' at the end", g[e.size()].text)
                               : fmt::format("'{}' missing at the end", e[g.size()].text);
  }
  return {};
}

inline std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    out.push_back(text.substr(0, eol));
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  return out;
}

}  // namespace text_detail

// Compares `got` with `expected`. On a difference, `diff` lists up to `max_reported` differing
// lines as "line N: <why>", each with the expected and the printed line.
inline TextComparison compare_text(std::string_view got, std::string_view expected,
                                   TextTolerance tol = {}, std::size_t max_reported = 8) {
  TextComparison result;
  if (tol.line_breaks_as_spaces) {
    auto spaced = [](std::string_view text) {
      std::string out(text);
      std::replace(out.begin(), out.end(), '\n', ' ');
      return out;
    };
    const std::string why = text_detail::line_difference(spaced(got), spaced(expected), tol);
    if (!why.empty()) result = {false, "the texts, line breaks read as spaces: " + why + "\n"};
    return result;
  }
  const auto g = text_detail::lines(got), e = text_detail::lines(expected);
  std::size_t reported = 0, differing = 0;
  for (std::size_t i = 0; i < std::max(g.size(), e.size()); ++i) {
    std::string why;
    if (i >= g.size()) {
      why = "missing";
    } else if (i >= e.size()) {
      why = "extra";
    } else {
      why = text_detail::line_difference(g[i], e[i], tol);
    }
    if (why.empty()) continue;
    result.equal = false;
    if (++differing > max_reported) continue;
    ++reported;
    result.diff +=
        fmt::format("line {}: {}\n  expected: {}\n  printed:  {}\n", i + 1, why,
                    i < e.size() ? e[i] : "(nothing)", i < g.size() ? g[i] : "(nothing)");
  }
  if (g.size() != e.size()) {
    result.diff += fmt::format("{} lines printed, {} expected\n", g.size(), e.size());
  }
  if (differing > reported)
    result.diff += fmt::format("... and {} more differing lines\n", differing - reported);
  return result;
}

// Whether `printed` (a whole stdout) holds the lines of `repr` (a torch repr, several lines) one
// after the other, under the tolerance. On failure, `diff` compares the repr with the printed
// block that starts like it and differs least.
inline TextComparison find_printed(std::string_view printed, std::string_view repr,
                                   TextTolerance tol = {}) {
  while (!repr.empty() && repr.back() == '\n')
    repr.remove_suffix(1);
  const auto out = text_detail::lines(printed), want = text_detail::lines(repr);
  TextComparison best{false, "no block of the output has as many lines as the expected repr\n"};
  std::size_t best_count = SIZE_MAX;
  if (want.empty()) return {true, {}};
  const auto first_word = text_detail::tokens(want.front());
  for (std::size_t start = 0; start + want.size() <= out.size(); ++start) {
    const auto words = text_detail::tokens(out[start]);
    if (words.empty() || first_word.empty() || words.front().text != first_word.front().text)
      continue;
    std::size_t count = 0;
    std::string diff;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const std::string why = text_detail::line_difference(out[start + i], want[i], tol);
      if (why.empty()) continue;
      if (++count <= 8) {
        diff += fmt::format(
            "line {} of the repr (output line {}): {}\n  expected: {}\n  printed:  {}\n", i + 1,
            start + i + 1, why, want[i], out[start + i]);
      }
    }
    if (count == 0) return {true, {}};
    if (count <= best_count) best_count = count, best = {false, diff};  // ties: the later block
  }
  return best;
}

}  // namespace attn::testing

// CHECK_TEXT(got, expected): equal under compare_text's tolerance, with the differences as the
// failure message. CHECK_PRINTED(stdout, repr): the repr's lines appear in stdout.
#define CHECK_TEXT(got, expected, ...)                                              \
  do {                                                                              \
    const auto attn_text_ =                                                         \
        ::attn::testing::compare_text((got), (expected)__VA_OPT__(, ) __VA_ARGS__); \
    INFO(attn_text_.diff);                                                          \
    CHECK(attn_text_.equal);                                                        \
  } while (false)

#define CHECK_PRINTED(printed, repr, ...)                                           \
  do {                                                                              \
    const auto attn_found_ =                                                        \
        ::attn::testing::find_printed((printed), (repr)__VA_OPT__(, ) __VA_ARGS__); \
    INFO(attn_found_.diff);                                                         \
    CHECK(attn_found_.equal);                                                       \
  } while (false)
