#include "source_check.hpp"

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace attn::course {

namespace {

bool identifier_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}

bool identifier_char(unsigned char c) {
  return identifier_start(c) || (c >= '0' && c <= '9');
}

bool digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

// The source after translation phases 1 and 2 as GCC does them: "\r\n" read as "\n", and a
// backslash, any spaces or tabs and a newline joined away; with the line of the original each
// character came from.
struct Spliced {
  std::string text;
  std::vector<int> line;
};

Spliced splice(std::string_view source) {
  Spliced out;
  int line = 1;
  for (std::size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (c == '\r' && i + 1 < source.size() && source[i + 1] == '\n') continue;
    if (c == '\\') {
      std::size_t j = i + 1;
      while (j < source.size() && (source[j] == ' ' || source[j] == '\t'))
        ++j;
      if (j < source.size() && source[j] == '\r' && j + 1 < source.size() && source[j + 1] == '\n')
        ++j;
      if (j < source.size() && source[j] == '\n') {
        ++line;
        i = j;
        continue;
      }
    }
    out.text += c;
    out.line.push_back(line);
    if (c == '\n') ++line;
  }
  return out;
}

// A scan of the spliced source, token by token, that knows what the preprocessor sees as a
// comment, a literal and a directive.
class SourceScan {
 public:
  explicit SourceScan(const Spliced& spliced) : s_(spliced) {}

  std::string run() {
    if (s_.text.starts_with("\xef\xbb\xbf")) at_ = 3;
    bool line_start = true;
    while (at_ < s_.text.size()) {
      const unsigned char c = peek();
      if (c == '\n') {
        ++at_;
        line_start = true;
      } else if (space(c) || comment()) {
        if (space(c)) ++at_;
      } else if (line_start && (c == '#' || starts("%:"))) {
        at_ += c == '#' ? 1 : 2;
        line_start = false;
        if (std::string problem = directive(); !problem.empty()) return problem;
      } else {
        line_start = false;
        if (std::string problem = token(); !problem.empty()) return problem;
      }
    }
    return "";
  }

 private:
  unsigned char peek(std::size_t ahead = 0) const {
    return at_ + ahead < s_.text.size() ? static_cast<unsigned char>(s_.text[at_ + ahead]) : 0;
  }
  bool starts(std::string_view what) const {
    return std::string_view(s_.text).substr(at_).starts_with(what);
  }
  static bool space(unsigned char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
  std::string at_line(const std::string& what) const {
    const std::size_t index = std::min(at_, s_.line.empty() ? 0 : s_.line.size() - 1);
    return fmt::format("line {}: {}", s_.line.empty() ? 1 : s_.line[index], what);
  }

  // Skips a comment at the current position; false when there is none.
  bool comment() {
    if (starts("//")) {
      while (at_ < s_.text.size() && peek() != '\n')
        ++at_;
      return true;
    }
    if (starts("/*")) {
      const std::size_t end = s_.text.find("*/", at_ + 2);
      at_ = end == std::string::npos ? s_.text.size() : end + 2;
      return true;
    }
    return false;
  }

  void skip_blanks() {
    while (at_ < s_.text.size()) {
      if (space(peek())) {
        ++at_;
      } else if (!comment()) {
        return;
      }
    }
  }

  // A string or character literal from its opening quote; it ends at its quote or the line's end.
  void literal() {
    const char quote = static_cast<char>(peek());
    ++at_;
    while (at_ < s_.text.size() && peek() != '\n') {
      if (peek() == '\\') {
        at_ += 2;
        continue;
      }
      if (peek() == static_cast<unsigned char>(quote)) {
        ++at_;
        return;
      }
      ++at_;
    }
  }

  std::string identifier() {
    const std::size_t start = at_;
    while (at_ < s_.text.size() && identifier_char(peek()))
      ++at_;
    return s_.text.substr(start, at_ - start);
  }

  std::string token() {
    const unsigned char c = peek();
    if (c < 0x20 || c == 0x7f) return at_line("a control character");
    if (c == '"' || c == '\'') {
      literal();
      return "";
    }
    if (digit(c) || (c == '.' && digit(peek(1)))) {
      // A preprocessing number, digit separators (1'000) and exponents' signs included.
      ++at_;
      while (at_ < s_.text.size()) {
        const unsigned char n = peek();
        if ((n == '+' || n == '-') &&
            std::string_view("eEpP").find(s_.text[at_ - 1]) != std::string_view::npos) {
          ++at_;
        } else if (n == '\'' && identifier_char(peek(1))) {
          at_ += 2;
        } else if (identifier_char(n) || n == '.') {
          ++at_;
        } else {
          break;
        }
      }
      return "";
    }
    if (identifier_start(c)) {
      const std::string name = identifier();
      if (peek() == '"' || peek() == '\'') {
        if (name == "R" || name == "LR" || name == "uR" || name == "UR" || name == "u8R")
          return at_line("a raw string literal");
        if (name == "L" || name == "u" || name == "U" || name == "u8") literal();
        return "";
      }
      for (const char* banned :
           {"__has_include", "__has_include_next", "__has_embed", "_Pragma", "__pragma"}) {
        if (name == banned) return at_line(name);
      }
      return "";
    }
    if (starts("##") || starts("%:%:")) return at_line("token pasting (##)");
    if (c == '\\') return at_line("a backslash outside a literal");
    ++at_;
    return "";
  }

  std::string directive() {
    skip_blanks();
    if (!identifier_start(peek())) return "";  // the null directive, or a line GCC refuses
    const std::string name = identifier();
    if (name == "include") return include_operand();
    if (name == "include_next" || name == "import" || name == "embed") return at_line("#" + name);
    if (name == "pragma") {
      skip_blanks();
      const std::string first = identifier_start(peek()) ? identifier() : "";
      skip_blanks();
      const std::string second = identifier_start(peek()) ? identifier() : "";
      // Pragmas that only tune the compiler's warnings or loops.
      const bool gcc = first == "GCC" || first == "clang";
      if (first == "once" || first == "unroll" || first == "omp" ||
          (gcc && (second == "diagnostic" || second == "unroll" || second == "ivdep" ||
                   second == "loop"))) {
        return "";
      }
      return at_line("a #pragma other than once, diagnostic or a loop hint");
    }
    return "";
  }

  std::string include_operand() {
    skip_blanks();
    const std::string refused = at_line("an #include of anything but \"name\" or <name>");
    const unsigned char open = peek();
    if (open != '"' && open != '<') return refused;
    const char close = open == '"' ? '"' : '>';
    ++at_;
    const std::size_t start = at_;
    while (at_ < s_.text.size() && peek() != static_cast<unsigned char>(close) && peek() != '\n')
      ++at_;
    if (peek() != static_cast<unsigned char>(close)) return refused;
    const std::string path = s_.text.substr(start, at_ - start);
    ++at_;
    const bool plain = !path.empty() && path.front() != '/' &&
                       path.find("..") == std::string::npos &&
                       std::all_of(path.begin(), path.end(), [](char ch) {
                         const auto u = static_cast<unsigned char>(ch);
                         return (u < 0x80 && identifier_char(u) && ch != '$') || ch == '.' ||
                                ch == '/' || ch == '-' || ch == '+';
                       });
    if (!plain) return refused;
    skip_blanks();
    if (at_ < s_.text.size() && peek() != '\n') return refused;
    return "";
  }

  const Spliced& s_;
  std::size_t at_ = 0;
};

// The directives GCC 12 and clang 14 write for the exercises (solutions and stubs, -O1, the
// release and the sanitized build), and their near kin: data, symbols, sections, unwind tables.
constexpr std::string_view kDirectives =
    " addrsig addrsig_sym align ascii asciz balign bss byte comm data double file float "
    "globl global hidden ident int internal lcomm local long octa p2align previous protected "
    "quad section set short size sleb128 string text type uleb128 value weak word zero "
    "cfi_startproc cfi_endproc cfi_def_cfa cfi_def_cfa_offset cfi_def_cfa_register "
    "cfi_offset cfi_rel_offset cfi_adjust_cfa_offset cfi_restore cfi_remember_state "
    "cfi_restore_state cfi_personality cfi_lsda cfi_escape cfi_undefined cfi_register "
    "cfi_same_value cfi_return_column cfi_signal_frame cfi_sections ";

bool name_char(unsigned char c) {
  return identifier_char(c) || c == '.' || c == '@';
}

// Operands outside string literals: names, numbers, registers, expressions; nothing that quotes
// or escapes. Strings (directives only) hold no control character, escapes kept whole.
bool operands_ok(std::string_view text, bool strings) {
  static constexpr std::string_view kPunctuation = " \t$%+-*/(),:<>&|^~![]{}";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' && strings) {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (i >= text.size()) return false;
    } else if (!name_char(c) && kPunctuation.find(static_cast<char>(c)) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// A section's name: letters, digits and "_.$-", quoted or not.
bool plain_section(std::string_view operands) {
  const std::size_t start = operands.find_first_not_of(" \t");
  if (start == std::string_view::npos) return false;
  std::string_view name = operands.substr(start);
  name = name.substr(0, name.find(','));
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t'))
    name.remove_suffix(1);
  if (name.size() >= 2 && name.front() == '"' && name.back() == '"')
    name = name.substr(1, name.size() - 2);
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return name_char(static_cast<unsigned char>(c)) || c == '-';
  });
}

std::string line_problem(std::string_view line) {
  const std::string_view marker = line.substr(std::min(line.find_first_not_of(" \t"), line.size()));
  if (marker.starts_with("#APP") || marker.starts_with("#NO_APP")) return "inline assembly (asm)";
  for (const char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return "a control character";
  }
  // The statement: up to a comment ('#' outside a string), which the assembler drops.
  std::size_t end = 0;
  for (bool quoted = false; end < line.size(); ++end) {
    const char c = line[end];
    if (quoted && c == '\\') {
      ++end;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == '#') {
      break;
    } else if (!quoted && c == ';') {
      return "a ';', which starts another statement";
    }
  }
  std::string_view statement = line.substr(0, std::min(end, line.size()));
  while (!statement.empty() && (statement.front() == ' ' || statement.front() == '\t'))
    statement.remove_prefix(1);
  while (!statement.empty() && (statement.back() == ' ' || statement.back() == '\t'))
    statement.remove_suffix(1);
  if (statement.empty()) return "";
  const auto word_end = std::find_if(statement.begin(), statement.end(),
                                     [](char c) { return c == ' ' || c == '\t'; });
  const std::string_view word = statement.substr(0, word_end - statement.begin());
  const std::string_view rest = statement.substr(word.size());
  if (word.ends_with(':') && rest.empty() && word.size() > 1 &&
      std::all_of(word.begin(), word.end() - 1,
                  [](char c) { return name_char(static_cast<unsigned char>(c)); })) {
    return "";  // a label
  }
  if (word.starts_with('.')) {
    const std::string_view name = word.substr(1);
    const bool known = !name.empty() && name.find(' ') == std::string_view::npos &&
                       kDirectives.find(fmt::format(" {} ", name)) != std::string_view::npos;
    std::string shown(word.substr(0, 40));
    for (char& c : shown) {
      if (!name_char(static_cast<unsigned char>(c))) c = '?';
    }
    if (!known) return fmt::format("the assembler directive {}", shown);
    if (!operands_ok(rest, true) || (name == "section" && !plain_section(rest)))
      return fmt::format("operands of {} that no compiler writes", shown);
    return "";
  }
  if (!word.empty() && word.front() >= 'a' && word.front() <= 'z' &&
      std::all_of(word.begin(), word.end(),
                  [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }) &&
      operands_ok(rest, false)) {
    return "";  // an instruction
  }
  return "a line that is neither a label, a directive nor an instruction";
}

}  // namespace

std::string source_problem(const std::string& source) {
  return SourceScan(splice(source)).run();
}

std::string assembly_problem(const std::string& assembly) {
  std::size_t number = 1;
  for (std::size_t start = 0; start < assembly.size(); ++number) {
    std::size_t end = assembly.find('\n', start);
    if (end == std::string::npos) end = assembly.size();
    if (std::string problem = line_problem(std::string_view(assembly).substr(start, end - start));
        !problem.empty()) {
      return fmt::format("line {} of its assembly: {}", number, problem);
    }
    start = end + 1;
  }
  return "";
}

}  // namespace attn::course
