// attn::Error: the one exception type of the library. It has a kind (what went wrong, for the
// exit code and the advice), the function that threw, a message that names the offending shapes
// or values ("[batched_matmul] inner sizes differ: (2, 5, 12) @ (2, 6, 5)"), and facts a caller
// needs to say which of its inputs to change. Core knows no option names: the CLI maps the kind,
// the subject and the sizes to the option the user gave. Where a message advises changing a
// parameter, it names it as <name> ("raise <max_positions>"), which the CLI prints as its option.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class ErrorKind {
  bad_value,     // a value outside what the function takes (a negative eps, an unknown name)
  bad_size,      // sizes or shapes that do not fit each other (D not divisible by H, T past P)
  bad_file,      // a file that is missing, not a regular file, unreadable or not in its format
  too_large,     // more than the memory limit, or than a format's own limit
  write_failed,  // an output that could not be written (a full disk, a read-only folder)
  internal,      // a mistake of attn's own
};

// "bad value", "bad size", ...
std::string_view kind_name(ErrorKind kind);

// A name or path from outside as a message shows it: valid UTF-8 as it is; control characters
// (C0, DEL, C1) and bytes that are not UTF-8 as \xNN, so that no escape sequence, NUL or line
// break reaches the terminal raw; cut after `limit` bytes with "...".
std::string printable(std::string_view text, std::size_t limit = 200);
// The character that starts at text[at], quoted as a message names it: 'ñ' whole when it is
// printable UTF-8; a control character or a byte that starts no UTF-8 sequence escaped ('\x1b',
// '\xc3'), as printable writes them.
std::string printable_character(std::string_view text, std::size_t at);

class Error : public std::runtime_error {
 public:
  // Every error says its kind: shapes and sizes that do not fit are bad_size.
  Error(ErrorKind kind, std::string_view function, std::string_view message);

  ErrorKind kind() const noexcept { return kind_; }
  const std::string& function() const noexcept { return function_; }
  // The message without the "[function] " prefix.
  const std::string& detail() const noexcept { return detail_; }

  // What the error is about, in the library's words: "input", "weights", "config", "vocab",
  // "ids", "lengths", "heads", ... (empty when it is about nothing the caller passed by name).
  const std::string& subject() const noexcept { return subject_; }
  Error& about(std::string subject) &;
  Error&& about(std::string subject) &&;
  // The sizes that drive a bad_size or too_large error, as the legend's letters: B (batch),
  // T (tokens), D (model width), H (heads), hs (head size), F (feed-forward width), L (layers),
  // P (positions), V (vocabulary).
  const std::vector<std::string>& sizes() const noexcept { return sizes_; }
  Error& driven_by(std::vector<std::string> sizes) &;
  Error&& driven_by(std::vector<std::string> sizes) &&;

 private:
  ErrorKind kind_;
  std::string function_;
  std::string detail_;
  std::string subject_;
  std::vector<std::string> sizes_;
};

}  // namespace attn
