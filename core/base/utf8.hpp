// UTF-8, strictly (no overlong forms, no surrogates, nothing past U+10FFFF), and how many
// terminal columns text takes. One place for what messages, tables, heatmaps and file names need.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attn {

// The length of the well-formed UTF-8 sequence at text[at] (1 to 4), or 0 when none starts there.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);
// The code point of the well-formed sequence of `length` bytes at text[at].
char32_t utf8_code_point(std::string_view text, std::size_t at, std::size_t length);
// Offset of the first byte that is not strict UTF-8, or npos.
std::size_t utf8_error(std::string_view text);
void append_utf8(std::string& out, char32_t c);

// Python's len() of a str: the code points of valid UTF-8 ("├─" is 2, not 6).
std::size_t code_points(std::string_view text);
// Terminal columns of a code point: 0 for combining marks, 2 for East Asian wide and fullwidth
// characters and emoji (wcwidth's common ranges, not the whole Unicode tables), else 1.
std::size_t column_width(char32_t c);
// Terminal columns of valid UTF-8 text; a byte that starts no sequence counts one column.
std::size_t column_width(std::string_view text);

// Text for HTML and XML element content and attribute values: & < > " ' as entities.
std::string escape_markup(std::string_view text);

}  // namespace attn
