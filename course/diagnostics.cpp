#include "diagnostics.hpp"

#include <algorithm>
#include <regex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace attn::course {

namespace {

enum class Kind { error, warning, note, excerpt, context, include, required, other };

struct Line {
  std::string text;
  Kind kind = Kind::other;
  std::string file;  // of a diagnostic, a context or a required-from line
  std::string at;    // "82:12"
};

constexpr std::size_t kMaxLine = 300;  // characters of one shown line

bool is_message(Kind kind) {
  return kind == Kind::error || kind == Kind::warning || kind == Kind::note;
}

std::vector<Line> classify(const std::string& log) {
  // file:line:col: kind: message (GCC and clang)
  static const std::regex diagnostic(
      R"(^(\S(?:.*?\S)?):([0-9]+):([0-9]+): (fatal error|error|warning|note): .*)");
  // GCC's template backtrace: "file:line:col:   required from here"
  static const std::regex required(
      R"(^(\S(?:.*?\S)?):([0-9]+):([0-9]+):\s+(required (from|by)|recursively required).*)");
  // GCC's "file: In function 'f':", "file: In instantiation of '...':", "file: At global scope:"
  static const std::regex context(R"(^(\S(?:.*?\S)?): (In |At global scope).*:$)");
  static const std::regex include(R"(^(In file included from |\s+from ).*[:,]$)");
  static const std::regex caret(R"(^\s*[0-9]* \|.*)");  // GCC's source excerpt
  std::vector<Line> lines;
  std::istringstream in(log);
  for (std::string text; std::getline(in, text);) {
    Line line;
    line.text = text;
    std::smatch m;
    if (std::regex_match(text, m, diagnostic)) {
      const std::string kind = m[4];
      line.kind = kind == "warning" ? Kind::warning : kind == "note" ? Kind::note : Kind::error;
      line.file = m[1];
      line.at = std::string(m[2]) + ":" + std::string(m[3]);
    } else if (std::regex_match(text, m, required)) {
      line.kind = Kind::required;
      line.file = m[1];
      line.at = std::string(m[2]) + ":" + std::string(m[3]);
    } else if (std::regex_match(text, m, context)) {
      line.kind = Kind::context;
      line.file = m[1];
    } else if (std::regex_match(text, include)) {
      line.kind = Kind::include;
    } else if (std::regex_match(text, caret) || (!lines.empty() && is_message(lines.back().kind)) ||
               (!text.empty() && (text[0] == ' ' || text[0] == '\t') && !lines.empty() &&
                lines.back().kind == Kind::excerpt)) {
      // clang's excerpt has no '|': the source line right after a message, as it is in the
      // file (a line such as "#error" starts at column 0), then its indented caret lines.
      line.kind = Kind::excerpt;
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string clipped(const std::string& text) {
  if (text.size() <= kMaxLine) return text;
  std::size_t cut = kMaxLine;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80)
    --cut;
  return text.substr(0, cut) + " [...]";
}

std::string plural(int n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

TrimmedMessages trim_compiler_messages(const std::string& log, const std::string& file,
                                       int max_errors) {
  const std::vector<Line> lines = classify(log);
  TrimmedMessages trimmed;
  std::vector<std::size_t> errors;
  int warnings = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].kind == Kind::error) errors.push_back(i);
    if (lines[i].kind == Kind::warning) ++warnings;
  }
  trimmed.errors = static_cast<int>(errors.size());
  if (errors.empty()) {
    trimmed.text = log;
    return trimmed;
  }
  std::vector<std::string> shown;
  std::vector<std::string> places;  // the student's lines already shown an error for
  std::string last_context;
  std::size_t last_place = lines.size();  // the student's line of the last error in a header
  // The excerpt lines right after line i.
  auto excerpt = [&](std::size_t i) {
    for (std::size_t k = i + 1; k < lines.size() && lines[k].kind == Kind::excerpt; ++k)
      shown.push_back(clipped(lines[k].text));
  };
  for (std::size_t e = 0; e < errors.size(); ++e) {
    if (trimmed.errors_shown >= max_errors) break;
    const std::size_t i = errors[e];
    const std::size_t previous = e == 0 ? 0 : errors[e - 1] + 1;
    const std::size_t next = e + 1 < errors.size() ? errors[e + 1] : lines.size();
    const Line& error = lines[i];
    if (error.file == file) {
      if (std::find(places.begin(), places.end(), error.at) != places.end()) continue;
      places.push_back(error.at);
      // The function it is in, once for each run of errors in the same function.
      for (std::size_t k = i; k-- > previous;) {
        if (lines[k].kind == Kind::context && lines[k].file == file) {
          if (lines[k].text != last_context) shown.push_back(clipped(lines[k].text));
          last_context = lines[k].text;
          break;
        }
      }
      shown.push_back(clipped(error.text));
      excerpt(i);
      ++trimmed.errors_shown;
      last_place = lines.size();
      continue;
    }
    // An error inside a header: where the student's line led there. GCC says it before the
    // error ("file:82:12:   required from here"), clang after it ("note: in instantiation of
    // ... requested here").
    std::size_t place = lines.size();
    for (std::size_t k = i; k-- > previous;) {
      if (lines[k].kind == Kind::required && lines[k].file == file) {
        place = k;
        break;
      }
    }
    for (std::size_t k = i + 1; place == lines.size() && k < next; ++k) {
      if (lines[k].kind == Kind::note && lines[k].file == file) place = k;
    }
    // A second error of the same instantiation has no backtrace of its own.
    if (place == lines.size()) place = last_place;
    last_place = place;
    if (place != lines.size()) {
      if (std::find(places.begin(), places.end(), lines[place].at) != places.end()) continue;
      places.push_back(lines[place].at);
      shown.push_back(clipped(lines[place].text));
      if (lines[place].kind == Kind::note) excerpt(place);
    }
    shown.push_back(clipped(error.text));
    if (place == lines.size()) excerpt(i);
    ++trimmed.errors_shown;
  }
  std::string text;
  for (const std::string& line : shown)
    text += line + "\n";
  const int more = trimmed.errors - trimmed.errors_shown;
  trimmed.lines_cut = static_cast<int>(lines.size() - shown.size());
  if (trimmed.lines_cut > 0) {
    std::string what;
    if (more > 0) what += plural(more, "more error", "more errors") + ", ";
    if (warnings > 0) what += plural(warnings, "warning", "warnings") + ", ";
    text += fmt::format(
        "[{} of {} lines cut: {}notes and template backtraces; fix the first error first, the "
        "rest often follow from it (--full-errors shows every line)]\n",
        trimmed.lines_cut, lines.size(), what);
  }
  trimmed.text = text;
  return trimmed;
}

}  // namespace attn::course
