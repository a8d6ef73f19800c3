#include "io/bpe.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/utf8.hpp"
#include "io/file_io.hpp"

namespace attn {

namespace {

using Json = nlohmann::json;

// GPT-2's vocab.json has 1 MiB, merges.txt 456 KiB, tokenizer.json 1.4 MiB.
const SizeCap kTokenizerCap{std::uint64_t{64} << 20, "a tokenizer file may have (64 MiB)",
                            "is it the right file? GPT-2's vocab.json has 1 MiB"};

std::string merge_key(std::string_view left, std::string_view right) {
  std::string key;
  key.reserve(left.size() + 1 + right.size());
  key.append(left).append(" ").append(right);
  return key;
}

std::string hex_byte(unsigned char byte) {
  return fmt::format("0x{:02x}", byte);
}

// The vocabulary of a JSON object token -> id; ids must be 0..n-1, each once.
void read_vocab(BpeTokenizer& t, const Json& vocab, std::string_view source) {
  if (!vocab.is_object())
    throw Error(ErrorKind::bad_file, "parse_bpe",
                fmt::format("'{}': the vocabulary is not a JSON object of token -> id, as GPT-2's "
                            "vocab.json {{\"!\": 0, \"\\\"\": 1, ...}}",
                            source));
  const std::size_t n = vocab.size();
  t.tokens.assign(n, std::string());
  std::vector<bool> seen(n, false);
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= static_cast<std::int64_t>(n))
      throw Error(ErrorKind::bad_file, "parse_bpe",
                  fmt::format("'{}': the token '{}' has id {}, not an integer from 0 to {} (the "
                              "vocabulary has {} tokens, numbered from 0)",
                              source, printable(token, 40), printable(id.dump(), 40), n - 1, n));
    const auto i = static_cast<std::size_t>(id.get<std::int64_t>());
    if (seen[i])
      throw Error(ErrorKind::bad_file, "parse_bpe",
                  fmt::format("'{}' lists id {} twice, for '{}' and '{}': each id names one token",
                              source, i, printable(t.tokens[i], 40), printable(token, 40)));
    seen[i] = true;
    t.tokens[i] = token;
    t.ids.emplace(token, static_cast<std::int64_t>(i));
  }
}

void add_merge(BpeTokenizer& t, std::string left, std::string right, std::string_view where,
               std::string_view source) {
  if (left.empty() || right.empty())
    throw Error(ErrorKind::bad_file, "parse_bpe",
                fmt::format("'{}': {} is not two symbols separated by a space, as GPT-2's "
                            "merges.txt \"Ġ t\"",
                            source, where));
  if (!t.ids.contains(left + right))
    throw Error(ErrorKind::bad_file, "parse_bpe",
                fmt::format("'{}': {} merges '{}' and '{}' into '{}', which is not in the "
                            "vocabulary: the vocabulary and the merges do not belong together",
                            source, where, printable(left, 40), printable(right, 40),
                            printable(left + right, 40)));
  // A merge listed twice keeps its first rank.
  t.ranks.emplace(merge_key(left, right), t.merges.size());
  t.merges.emplace_back(std::move(left), std::move(right));
}

Json parse_json(std::string_view text, std::string_view source, std::string_view what) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(ErrorKind::bad_file, "parse_bpe",
                fmt::format("'{}' is not valid JSON ({}): give {}", source, e.what(), what));
  }
}

std::string read_text(const std::string& path, std::string_view expected) {
  const std::vector<unsigned char> bytes = read_file(path, expected, kTokenizerCap);
  return std::string(bytes.begin(), bytes.end());
}

// --- Unicode classes of GPT-2's pattern -----------------------------------------------------

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// \p{L}: Lu, Ll, Lt, Lm, Lo.
bool is_letter(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

// \p{N}: Nd, Nl, No.
bool is_number(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// \s as the `regex` module of OpenAI's encoder.py takes it: Unicode's White_Space property.
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

bool is_other(char32_t c) {
  return !is_space(c) && !is_letter(c) && !is_number(c);
}

// The text's code points and the byte offset where each starts (one more at the end).
struct CodePoints {
  std::vector<char32_t> chars;
  std::vector<std::size_t> offsets;
};

CodePoints code_points_of(std::string_view text) {
  CodePoints out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0)
      throw Error(ErrorKind::bad_value, "pre_tokenize",
                  fmt::format("the text is not valid UTF-8: byte {} at offset {} does not start "
                              "a UTF-8 character; give UTF-8 text",
                              hex_byte(static_cast<unsigned char>(text[i])), i));
    out.chars.push_back(utf8_code_point(text, i, n));
    out.offsets.push_back(i);
    i += n;
  }
  out.offsets.push_back(text.size());
  return out;
}

// The length in code points of the pattern's match at c[i] (at least 1), by its alternatives in
// order: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
std::size_t match_at(const std::vector<char32_t>& c, std::size_t i) {
  const std::size_t n = c.size();
  if (c[i] == U'\'' && i + 1 < n) {
    const char32_t a = c[i + 1];
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    const char32_t b = i + 2 < n ? c[i + 2] : 0;
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
  }
  // ` ?X+` for each class X: an optional space, then a run of X.
  for (bool (*in_class)(char32_t) : {is_letter, is_number, is_other}) {
    const std::size_t start = c[i] == U' ' && i + 1 < n && in_class(c[i + 1]) ? i + 1 : i;
    if (!in_class(c[start])) continue;
    std::size_t end = start;
    while (end < n && in_class(c[end]))
      ++end;
    return end - i;
  }
  // Only whitespace is left: its run, less the last space when a non-space follows (that space
  // goes to the next piece), unless the run is one space.
  std::size_t end = i;
  while (end < n && is_space(c[end]))
    ++end;
  if (end < n && end - i > 1) --end;
  return end - i;
}

void pre_tokenize_into(std::string_view text, std::vector<std::string>& pieces) {
  const CodePoints cp = code_points_of(text);
  std::size_t i = 0;
  while (i < cp.chars.size()) {
    const std::size_t length = match_at(cp.chars, i);
    pieces.emplace_back(text.substr(cp.offsets[i], cp.offsets[i + length] - cp.offsets[i]));
    i += length;
  }
}

// The text cut at each <|endoftext|> (when the vocabulary has it), the parts between
// pre-tokenised on their own, as transformers splits added tokens out first.
std::vector<std::string> pieces_of(std::string_view text, std::string_view special) {
  if (const std::size_t bad = utf8_error(text); bad != std::string_view::npos)
    throw Error(ErrorKind::bad_value, "pre_tokenize",
                fmt::format("the text is not valid UTF-8: byte {} at offset {} does not start "
                            "a UTF-8 character; give UTF-8 text",
                            hex_byte(static_cast<unsigned char>(text[bad])), bad));
  std::vector<std::string> pieces;
  std::size_t start = 0;
  while (!special.empty()) {
    const std::size_t at = text.find(special, start);
    if (at == std::string_view::npos) break;
    pre_tokenize_into(text.substr(start, at - start), pieces);
    pieces.emplace_back(special);
    start = at + special.size();
  }
  pre_tokenize_into(text.substr(start), pieces);
  return pieces;
}

std::int64_t id_of(const BpeTokenizer& t, const std::string& symbol) {
  const auto it = t.ids.find(symbol);
  if (it == t.ids.end()) {
    // A vocabulary without every byte's symbol (a character vocabulary, as attn train --model gpt
    // saves one) cannot spell every text: the text is at fault, not the files.
    const bool every_byte = std::all_of(byte_symbols().begin(), byte_symbols().end(),
                                        [&](const std::string& b) { return t.ids.contains(b); });
    if (!every_byte)
      throw Error(ErrorKind::bad_value, "encode",
                  fmt::format("the text has a character the vocabulary's {} tokens cannot spell "
                              "(no token '{}'): this vocabulary knows only the characters of the "
                              "text it was made from; use those",
                              t.size(), printable(symbol, 40)));
    throw Error(ErrorKind::bad_file, "encode",
                fmt::format("the token '{}' is not in the vocabulary: a byte-level BPE "
                            "vocabulary has all 256 byte characters (GPT-2's vocab.json ids "
                            "0 to 255)",
                            printable(symbol, 40)));
  }
  return it->second;
}

// OpenAI's encoder.py bpe(): the adjacent pair of lowest rank, joined everywhere left to right,
// until no pair has a rank. Each merge is recorded when `steps` is given.
std::vector<std::string> merge_piece(const BpeTokenizer& t, std::vector<std::string> symbols,
                                     std::vector<BpeMerge>* steps) {
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  while (symbols.size() > 1) {
    std::size_t best = kNone;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = t.ranks.find(merge_key(symbols[i], symbols[i + 1]));
      if (it != t.ranks.end()) best = std::min(best, it->second);
    }
    if (best == kNone) break;
    const auto& [left, right] = t.merges[best];
    std::vector<std::string> merged;
    merged.reserve(symbols.size());
    for (std::size_t i = 0; i < symbols.size(); ++i) {
      if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
        merged.push_back(left + right);
        ++i;
      } else {
        merged.push_back(std::move(symbols[i]));
      }
    }
    symbols = std::move(merged);
    if (steps) steps->push_back(BpeMerge{left, right, best, symbols});
  }
  return symbols;
}

std::vector<std::string> initial_symbols(std::string_view piece) {
  const std::vector<std::string>& symbol = byte_symbols();
  std::vector<std::string> out;
  out.reserve(piece.size());
  for (char b : piece)
    out.push_back(symbol[static_cast<unsigned char>(b)]);
  return out;
}

}  // namespace

std::optional<std::int64_t> BpeTokenizer::find(std::string_view token) const {
  const auto it = ids.find(std::string(token));
  if (it == ids.end()) return std::nullopt;
  return it->second;
}

BpeTokenizer parse_bpe(std::string_view vocab_json, std::string_view merges_txt,
                       std::string_view source) {
  BpeTokenizer t;
  read_vocab(t, parse_json(vocab_json, source, "GPT-2's vocab.json, an object of token -> id"),
             source);
  std::size_t line_number = 0;
  std::size_t start = 0;
  while (start < merges_txt.size()) {
    std::size_t end = merges_txt.find('\n', start);
    if (end == std::string_view::npos) end = merges_txt.size();
    std::string_view line = merges_txt.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;
    const std::size_t space = line.find(' ');
    const std::string where = fmt::format("merges line {} '{}'", line_number, printable(line, 60));
    if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
      add_merge(t, "", "", where, source);
    add_merge(t, std::string(line.substr(0, space)), std::string(line.substr(space + 1)), where,
              source);
  }
  return t;
}

BpeTokenizer parse_bpe_tokenizer_json(std::string_view tokenizer_json, std::string_view source) {
  const Json json = parse_json(tokenizer_json, source, "a tokenizer.json saved by transformers");
  const Json* model = json.is_object() && json.contains("model") ? &json["model"] : nullptr;
  if (!model || !model->is_object() || model->value("type", std::string()) != "BPE")
    throw Error(ErrorKind::bad_file, "parse_bpe_tokenizer_json",
                fmt::format("'{}' has no BPE model (its \"model\" needs \"type\": \"BPE\"): "
                            "give GPT-2's tokenizer.json, or vocab.json and merges.txt",
                            source));
  BpeTokenizer t;
  read_vocab(t, model->value("vocab", Json()), source);
  const Json merges = model->value("merges", Json::array());
  if (!merges.is_array())
    throw Error(ErrorKind::bad_file, "parse_bpe_tokenizer_json",
                fmt::format("'{}': model.merges is not a list of merges", source));
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const Json& m = merges[i];
    const std::string where = fmt::format("merge {} {}", i, printable(m.dump(), 60));
    if (m.is_string()) {
      const auto s = m.get<std::string>();
      const std::size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        add_merge(t, "", "", where, source);
      add_merge(t, s.substr(0, space), s.substr(space + 1), where, source);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      add_merge(t, m[0].get<std::string>(), m[1].get<std::string>(), where, source);
    } else {
      add_merge(t, "", "", where, source);
    }
  }
  return t;
}

BpeTokenizer read_bpe(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto has = [&](const char* name) { return fs::exists(fs::path(folder) / name, ec); };
  const std::string vocab = (fs::path(folder) / "vocab.json").string();
  const std::string merges = (fs::path(folder) / "merges.txt").string();
  const std::string tokenizer = (fs::path(folder) / "tokenizer.json").string();
  if (has("vocab.json") && has("merges.txt")) {
    const std::string vocab_text = read_text(vocab, "GPT-2's vocab.json, an object token -> id");
    const std::string merges_text = read_text(merges, "GPT-2's merges.txt, one merge a line");
    return parse_bpe(vocab_text, merges_text, fmt::format("{} + merges.txt", printable(vocab)));
  }
  if (has("tokenizer.json"))
    return parse_bpe_tokenizer_json(read_text(tokenizer, "a tokenizer.json saved by transformers"),
                                    printable(tokenizer));
  std::string missing;
  for (const char* name : {"vocab.json", "merges.txt"})
    if (!has(name)) missing += fmt::format("{}{}", missing.empty() ? "" : " and ", name);
  throw Error(ErrorKind::bad_file, "read_bpe",
              fmt::format("'{}' has no GPT-2 tokenizer: {} missing; it needs vocab.json and "
                          "merges.txt, or tokenizer.json (huggingface-cli download gpt2 brings "
                          "them)",
                          printable(folder), missing));
}

const std::vector<std::string>& byte_symbols() {
  // bytes_to_unicode(): '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves; the other bytes,
  // in order, become U+0100, U+0101, ...
  static const std::vector<std::string> symbols = [] {
    std::vector<std::string> out(256);
    char32_t shifted = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      const bool printable_byte =
          (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      append_utf8(out[b], printable_byte ? static_cast<char32_t>(b) : shifted++);
    }
    return out;
  }();
  return symbols;
}

std::vector<std::string> pre_tokenize(std::string_view text) {
  return pieces_of(text, "<|endoftext|>");
}

std::vector<std::string> split_by_pattern(std::string_view text) {
  return pieces_of(text, "");
}

std::vector<BpePiece> encode_steps(const BpeTokenizer& tokenizer, std::string_view text) {
  const std::string_view special =
      tokenizer.find(tokenizer.end_of_text) ? std::string_view(tokenizer.end_of_text) : "";
  std::vector<BpePiece> out;
  for (std::string& piece : pieces_of(text, special)) {
    BpePiece p;
    if (!special.empty() && piece == special) {
      p.initial = {piece};
      p.tokens = {piece};
    } else {
      p.initial = initial_symbols(piece);
      p.tokens = merge_piece(tokenizer, p.initial, &p.merges);
    }
    for (const std::string& token : p.tokens)
      p.ids.push_back(id_of(tokenizer, token));
    p.text = std::move(piece);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::int64_t> encode(const BpeTokenizer& tokenizer, std::string_view text) {
  const std::string_view special =
      tokenizer.find(tokenizer.end_of_text) ? std::string_view(tokenizer.end_of_text) : "";
  std::vector<std::int64_t> ids;
  for (const std::string& piece : pieces_of(text, special)) {
    if (!special.empty() && piece == special) {
      ids.push_back(id_of(tokenizer, piece));
      continue;
    }
    for (const std::string& token : merge_piece(tokenizer, initial_symbols(piece), nullptr))
      ids.push_back(id_of(tokenizer, token));
  }
  return ids;
}

std::string decode(const BpeTokenizer& tokenizer, const std::vector<std::int64_t>& ids) {
  // The byte each byte-mapped character stands for (all are below U+0144).
  static const std::array<int, 0x144> byte_of = [] {
    std::array<int, 0x144> out{};
    out.fill(-1);
    const std::vector<std::string>& symbols = byte_symbols();
    for (int b = 0; b < 256; ++b)
      out[utf8_code_point(symbols[b], 0, symbols[b].size())] = b;
    return out;
  }();
  std::string out;
  for (const std::int64_t id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= tokenizer.size())
      throw Error(ErrorKind::bad_value, "decode",
                  fmt::format("id {} is outside the vocabulary of {} tokens (0 to {})", id,
                              tokenizer.size(), tokenizer.size() - 1))
          .about("ids");
    const std::string& token = tokenizer.tokens[static_cast<std::size_t>(id)];
    std::size_t i = 0;
    while (i < token.size()) {
      const std::size_t n = utf8_sequence_length(token, i);
      const char32_t c = n ? utf8_code_point(token, i, n) : 0xffff;
      if (c >= byte_of.size() || byte_of[c] < 0)
        throw Error(ErrorKind::bad_file, "decode",
                    fmt::format("token {} '{}' has a character that stands for no byte: a "
                                "byte-level BPE vocabulary writes bytes as GPT-2's "
                                "byte-to-unicode characters",
                                id, printable(token, 40)));
      out.push_back(static_cast<char>(byte_of[c]));
      i += n;
    }
  }
  return out;
}

}  // namespace attn
