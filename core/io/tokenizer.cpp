#include "io/tokenizer.hpp"
#include "base/utf8.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "io/file_io.hpp"

namespace attn {

namespace {

// What a token costs in a Vocabulary besides its text: two std::string, an unordered_map node and
// its bucket (2 million 5-letter tokens took about 110 bytes each with glibc).
constexpr std::uint64_t kBytesPerToken = 128;

constexpr std::array<std::string_view, 5> kSpecialTokens = {
    kUnknownToken, kSeparatorToken, kPaddingToken, kClassifierToken, kMaskToken};

// "0xff" for an error message.
std::string byte_hex(unsigned char byte) {
  return fmt::format("0x{:02x}", byte);
}

std::u32string decode(std::string_view text, const char* function) {
  std::u32string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = -1;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                    static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0 || cp < 0) {
      throw Error(ErrorKind::bad_value, function,
                  fmt::format("the text is not valid UTF-8: byte {} (offset {}) does not "
                              "start a UTF-8 character",
                              byte_hex(static_cast<unsigned char>(text[i])), i));
    }
    out.push_back(static_cast<char32_t>(cp));
    i += static_cast<std::size_t>(n);
  }
  return out;
}

std::string encode_utf8(std::u32string_view chars) {
  std::string out;
  out.reserve(chars.size());
  utf8proc_uint8_t buffer[4];
  for (char32_t c : chars) {
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buffer);
    out.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
  }
  return out;
}

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// _is_whitespace: the four ASCII spaces and category Zs.
bool is_whitespace(char32_t c) {
  return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' || category(c) == UTF8PROC_CATEGORY_ZS;
}

// _is_control: every category C* (Cc, Cf, Cs, Co and Cn, unassigned code points included), but
// not tab, newline and carriage return. (HF's Rust tokenizer keeps unassigned code points.)
bool is_control(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r') return false;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

// _is_punctuation: all non-alphanumeric printable ASCII ($, ^, ` and | included, though Unicode
// calls them symbols) and category P*.
bool is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// _is_chinese_char: the CJK Unified Ideographs blocks (not Hiragana, Katakana or Hangul).
bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Python's str.isspace, which str.split() splits on: category Zs or bidirectional class WS, B
// or S. After cleaning, that adds U+2028 and U+2029 to the plain space.
bool is_python_space(char32_t c) {
  if (category(c) == UTF8PROC_CATEGORY_ZS) return true;
  const auto bidi = utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->bidi_class;
  return bidi == UTF8PROC_BIDI_CLASS_WS || bidi == UTF8PROC_BIDI_CLASS_B ||
         bidi == UTF8PROC_BIDI_CLASS_S;
}

// Python's str.lower() of one character: the simple lower-case mapping, except İ (U+0130),
// whose full mapping is i + combining dot above. One character at a time, so never the
// final-sigma rule (HF lower-cases with re.sub over single characters).
void append_lower(std::u32string& out, char32_t c) {
  if (c == 0x130) {
    out += U"i\u0307";
    return;
  }
  out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

// whitespace_tokenize: str.strip() then str.split().
std::vector<std::u32string> split_on_spaces(std::u32string_view text) {
  std::vector<std::u32string> words;
  std::u32string word;
  for (char32_t c : text) {
    if (is_python_space(c)) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// _run_strip_accents: NFD (canonical decomposition and ordering), then no Mn.
std::u32string strip_accents(const std::u32string& word) {
  const std::string utf8 = encode_utf8(word);
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  const auto length = static_cast<utf8proc_ssize_t>(utf8.size());
  const auto options = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | UTF8PROC_STABLE);
  std::vector<utf8proc_int32_t> buffer(word.size() * 4 + 4);
  auto n = utf8proc_decompose(bytes, length, buffer.data(),
                              static_cast<utf8proc_ssize_t>(buffer.size()), options);
  if (n > static_cast<utf8proc_ssize_t>(buffer.size())) {
    buffer.resize(static_cast<std::size_t>(n));
    n = utf8proc_decompose(bytes, length, buffer.data(), n, options);
  }
  if (n < 0) {
    throw Error(ErrorKind::bad_value, "strip_accents",
                fmt::format("utf8proc cannot decompose the word: {}", utf8proc_errmsg(n)));
  }
  std::u32string out;
  for (utf8proc_ssize_t i = 0; i < n; ++i) {
    const auto c = static_cast<char32_t>(buffer[static_cast<std::size_t>(i)]);
    if (category(c) != UTF8PROC_CATEGORY_MN) out.push_back(c);
  }
  return out;
}

// _run_split_on_punc: every punctuation character becomes a word of its own.
std::vector<std::u32string> split_on_punctuation(const std::u32string& word) {
  std::vector<std::u32string> out;
  bool start_new_word = true;
  for (char32_t c : word) {
    if (is_punctuation(c)) {
      out.push_back(std::u32string(1, c));
      start_new_word = true;
    } else {
      if (start_new_word) out.emplace_back();
      start_new_word = false;
      out.back().push_back(c);
    }
  }
  return out;
}

struct TextPart {
  std::u32string text;
  bool special;
};

// PreTrainedTokenizer.tokenize: the special tokens are cut out of the text whole (they cannot
// overlap, so scanning left to right finds what HF's splitting finds).
std::vector<TextPart> split_special_tokens(const std::u32string& text) {
  std::vector<TextPart> parts;
  std::u32string plain;
  std::size_t i = 0;
  while (i < text.size()) {
    bool matched = false;
    for (std::string_view token : kSpecialTokens) {
      if (i + token.size() > text.size()) continue;
      bool same = true;
      for (std::size_t k = 0; k < token.size() && same; ++k)
        same = text[i + k] == static_cast<char32_t>(token[k]);
      if (!same) continue;
      if (!plain.empty()) parts.push_back({std::move(plain), false});
      plain.clear();
      parts.push_back({std::u32string(token.begin(), token.end()), true});
      i += token.size();
      matched = true;
      break;
    }
    if (!matched) plain.push_back(text[i++]);
  }
  if (!plain.empty()) parts.push_back({std::move(plain), false});
  return parts;
}

bool is_special(const std::u32string& word) {
  for (std::string_view token : kSpecialTokens)
    if (word.size() == token.size() && std::equal(word.begin(), word.end(), token.begin()))
      return true;
  return false;
}

}  // namespace

bool is_special_token(std::string_view token) {
  for (std::string_view t : kSpecialTokens)
    if (t == token) return true;
  return false;
}

bool is_valid_utf8(std::string_view text, std::size_t* bad_offset) {
  const std::size_t bad = utf8_error(text);
  if (bad != std::string_view::npos && bad_offset != nullptr) *bad_offset = bad;
  return bad == std::string_view::npos;
}

std::string escape_invisible(std::string_view text) {
  std::string out;
  for (char32_t c : decode(text, "escape_invisible")) {
    const auto cat = category(c);
    const bool invisible =
        c != U' ' && (is_control(c) || cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
                      cat == UTF8PROC_CATEGORY_ZP);
    if (c == U'\t') {
      out += "\\t";
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (!invisible) {
      out += encode_utf8(std::u32string(1, c));
    } else if (c < 0x100) {
      out += fmt::format("\\x{:02x}", static_cast<std::uint32_t>(c));
    } else if (c < 0x10000) {
      out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(c));
    } else {
      out += fmt::format("\\U{:08x}", static_cast<std::uint32_t>(c));
    }
  }
  return out;
}

std::optional<std::int64_t> Vocabulary::find(std::string_view token) const {
  const auto it = ids.find(std::string(token));
  if (it == ids.end()) return std::nullopt;
  return it->second;
}

Vocabulary parse_vocabulary(std::string_view text, std::string_view source) {
  if (text.empty()) {
    throw Error(ErrorKind::bad_file, "parse_vocabulary",
                fmt::format("'{}' is empty: a vocab.txt has one token per line, e.g. Hugging "
                            "Face's bert-base-uncased/vocab.txt",
                            source));
  }
  auto line_of = [&](std::size_t offset) {
    std::size_t line = 1;
    for (std::size_t i = 0; i < offset; ++i)
      if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n')))
        ++line;
    return line;
  };
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw Error(ErrorKind::bad_file, "parse_vocabulary",
                fmt::format("'{}' has a NUL byte at offset {} (line {}): it is a binary file, not "
                            "a vocab.txt (UTF-8 text, one token per line)",
                            source, nul, line_of(nul)));
  }
  if (std::size_t bad = 0; !is_valid_utf8(text, &bad)) {
    throw Error(
        ErrorKind::bad_file, "parse_vocabulary",
        fmt::format("'{}' is not UTF-8 text: byte {} at offset {} (line {}) does not start "
                    "a UTF-8 character; a vocab.txt is UTF-8, one token per line",
                    source, byte_hex(static_cast<unsigned char>(text[bad])), bad, line_of(bad)));
  }
  Vocabulary vocab;
  auto add = [&](std::string token) {
    const auto id = static_cast<std::int64_t>(vocab.tokens.size());
    const auto [it, inserted] = vocab.ids.emplace(token, id);
    if (!inserted) {
      const std::string shown = token.empty() ? "the empty token (a blank line)"
                                              : fmt::format("the token '{}'", printable(token));
      throw Error(ErrorKind::bad_file, "parse_vocabulary",
                  fmt::format("'{}' lists {} twice, on lines {} and {}: each token must appear "
                              "once (Hugging Face would keep id {} and lose id {})",
                              source, shown, it->second + 1, id + 1, id, it->second));
    }
    vocab.tokens.push_back(std::move(token));
  };
  // Universal newlines: "\n", "\r\n" and "\r" each end a line; a last line needs no newline.
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') continue;
    add(std::string(text.substr(start, i - start)));
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < text.size()) add(std::string(text.substr(start)));
  if (!vocab.find(kUnknownToken)) {
    throw Error(ErrorKind::bad_file, "parse_vocabulary",
                fmt::format("'{}' has no [UNK] line ({} tokens): WordPiece needs it for words it "
                            "cannot spell; add a line [UNK] (bert-base-uncased has it on line "
                            "101, id 100)",
                            source, vocab.size()));
  }
  return vocab;
}

Vocabulary read_vocabulary(const std::string& path) {
  // bert-base-uncased's is 226 KiB; multilingual vocabularies are a few MiB.
  const SizeCap cap{std::uint64_t{64} << 20, "a vocab.txt may have (64 MiB)",
                    "is it the right file? bert-base-uncased's has 226 KiB"};
  const std::vector<unsigned char> bytes =
      read_file(path, "a vocab.txt file, one token per line", cap);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  // The text, and each token twice (by id and by text) with the map's node and bucket around it.
  const std::uint64_t lines =
      static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n')) +
      !text.ends_with('\n');
  const std::uint64_t need = 3 * text.size() + lines * kBytesPerToken;
  if (const SizeCap limit = memory_cap("give a smaller vocabulary, or raise the limit");
      need > limit.bytes) {
    throw Error(
        ErrorKind::too_large, "read_vocabulary",
        fmt::format(
            "'{}' has {} lines, which would take about {} as a vocabulary, more than {}: {}",
            printable(path), lines, format_bytes(static_cast<double>(need)), limit.limit,
            limit.fix));
  }
  return parse_vocabulary(text, printable(path));
}

namespace {

// BasicTokenizer with do_lower_case and strip_accents: lower-casing (PreTrainedTokenizer.tokenize
// does it first) only with lower_case; accents stripped when strip_accents says so, else when
// lower-casing.
BasicTokens basic_tokenize(std::string_view text, const TokenizerOptions& options) {
  const bool strip = options.strip_accents.value_or(options.lower_case);
  const std::u32string chars = decode(text, "basic_tokenize");
  BasicTokens out;
  std::vector<std::u32string> split;
  for (const TextPart& part : split_special_tokens(chars)) {
    if (part.special) {
      const std::string token = encode_utf8(part.text);
      out.lowered += token;
      out.cleaned += token;
      out.spaced += token;
      out.words.push_back(token);
      out.stripped.push_back(token);
      out.split.push_back(token);
      out.special.push_back(true);
      continue;
    }
    std::u32string lowered;
    for (char32_t c : part.text) {
      if (options.lower_case) {
        append_lower(lowered, c);
      } else {
        lowered.push_back(c);
      }
    }
    std::u32string cleaned;  // _clean_text
    for (char32_t c : lowered) {
      if (c == 0 || c == 0xFFFD || is_control(c)) continue;
      cleaned.push_back(is_whitespace(c) ? U' ' : c);
    }
    std::u32string spaced;  // _tokenize_chinese_chars
    for (char32_t c : cleaned) {
      if (is_chinese_char(c)) {
        spaced.push_back(U' ');
        spaced.push_back(c);
        spaced.push_back(U' ');
      } else {
        spaced.push_back(c);
      }
    }
    out.lowered += encode_utf8(lowered);
    out.cleaned += encode_utf8(cleaned);
    out.spaced += encode_utf8(spaced);
    std::vector<std::u32string> pieces;
    for (const std::u32string& word : split_on_spaces(spaced)) {
      // never_split: a word that is a special token only once cleaned stays whole.
      const bool keep = is_special(word);
      const std::u32string stripped = keep || !strip ? word : strip_accents(word);
      out.words.push_back(encode_utf8(word));
      out.stripped.push_back(encode_utf8(stripped));
      if (keep) {
        pieces.push_back(stripped);
      } else {
        for (std::u32string& p : split_on_punctuation(stripped))
          pieces.push_back(std::move(p));
      }
    }
    // whitespace_tokenize(" ".join(...)): empty pieces (a word of accents only) disappear.
    for (const std::u32string& piece : pieces) {
      for (const std::u32string& word : split_on_spaces(piece)) {
        out.split.push_back(encode_utf8(word));
        out.special.push_back(false);
      }
    }
  }
  return out;
}

}  // namespace

BasicTokens basic_tokenize(std::string_view text) {
  return basic_tokenize(text, TokenizerOptions{});
}

std::vector<std::string> wordpiece_tokenize(std::string_view word, const Vocabulary& vocab,
                                            std::size_t max_chars) {
  const std::u32string chars = decode(word, "wordpiece_tokenize");
  if (chars.size() > max_chars) return {std::string(kUnknownToken)};
  // Byte offset of every character boundary, to cut substrings from the UTF-8 word.
  std::vector<std::size_t> offset = {0};
  for (char32_t c : chars)
    offset.push_back(offset.back() + encode_utf8(std::u32string(1, c)).size());
  std::vector<std::string> pieces;
  std::size_t start = 0;
  while (start < chars.size()) {
    std::size_t end = chars.size();
    std::string found;
    while (start < end) {
      std::string piece = start > 0 ? "##" : "";
      piece += word.substr(offset[start], offset[end] - offset[start]);
      if (vocab.ids.count(piece) != 0) {
        found = std::move(piece);
        break;
      }
      --end;
    }
    if (start == end) return {std::string(kUnknownToken)};  // no entry covers chars[start]
    pieces.push_back(std::move(found));
    start = end;
  }
  return pieces;
}

Encoding encode(std::string_view text, const Vocabulary& vocab, bool add_special_tokens) {
  return encode(text, vocab, add_special_tokens, TokenizerOptions{});
}

Encoding encode(std::string_view text, const Vocabulary& vocab, bool add_special_tokens,
                const TokenizerOptions& options) {
  const auto unknown = vocab.find(kUnknownToken);
  if (!unknown)
    throw Error(ErrorKind::bad_value, "encode",
                "the vocabulary has no [UNK]: add a line [UNK] to it");
  Encoding e;
  e.basic = basic_tokenize(text, options);
  auto add = [&](std::string token, std::int64_t word) {
    // A token outside the vocabulary (a special token the file lacks) gets [UNK]'s id, as the
    // slow tokenizer's vocab.get(token, vocab.get(unk_token)).
    e.ids.push_back(vocab.find(token).value_or(*unknown));
    e.tokens.push_back(std::move(token));
    e.word.push_back(word);
  };
  if (add_special_tokens) {
    for (std::string_view token : {kClassifierToken, kSeparatorToken}) {
      if (!vocab.find(token)) {
        throw Error(ErrorKind::bad_value, "encode",
                    fmt::format("the vocabulary has no {} token, which "
                                "add_special_tokens puts around the text",
                                token));
      }
    }
    add(std::string(kClassifierToken), -1);
  }
  e.word_tokens.reserve(e.basic.split.size());
  for (std::size_t w = 0; w < e.basic.split.size(); ++w) {
    const auto word = static_cast<std::int64_t>(w);
    const std::size_t start = e.tokens.size();
    if (e.basic.special[w]) {
      add(e.basic.split[w], word);
    } else {
      for (std::string& piece : wordpiece_tokenize(e.basic.split[w], vocab))
        add(std::move(piece), word);
    }
    e.word_tokens.push_back({start, e.tokens.size()});
  }
  if (add_special_tokens) add(std::string(kSeparatorToken), -1);
  return e;
}

}  // namespace attn
