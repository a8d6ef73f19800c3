// BERT's tokenizer: Hugging Face's BertTokenizer(do_lower_case=True), the slow Python one
// (transformers/models/bert/tokenization_bert.py), ported step for step: the special tokens cut
// out whole, the rest lower-cased; BasicTokenizer (clean, space out CJK, split on whitespace,
// strip accents, split off punctuation); then WordpieceTokenizer (greedy longest match first,
// "##" continuations, [UNK]). Unicode (UTF-8, categories, NFD, lower case) comes from utf8proc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attn {

// A Hugging Face vocab.txt: one token per line, id = line number counted from 0.
struct Vocabulary {
  std::vector<std::string> tokens;                    // id -> token
  std::unordered_map<std::string, std::int64_t> ids;  // token -> id

  std::size_t size() const { return tokens.size(); }
  std::optional<std::int64_t> find(std::string_view token) const;
};

// Parses the text of a vocab.txt. Lines end at "\n", "\r\n" or "\r" (Python's universal
// newlines, as HF's load_vocab reads them). `source` names the file in errors. Throws
// attn::Error for an empty text, NUL bytes, invalid UTF-8, a token listed twice (HF would keep
// the later id silently) and a vocabulary without [UNK].
Vocabulary parse_vocabulary(std::string_view text, std::string_view source);
// Reads and parses a vocab.txt file; throws attn::Error for a missing, unreadable or huge file.
Vocabulary read_vocabulary(const std::string& path);

// BERT's special tokens, in PreTrainedTokenizer's all_special_tokens order.
inline constexpr std::string_view kUnknownToken = "[UNK]", kSeparatorToken = "[SEP]",
                                  kPaddingToken = "[PAD]", kClassifierToken = "[CLS]",
                                  kMaskToken = "[MASK]";
bool is_special_token(std::string_view token);

// The text stage by stage, as the slow tokenizer goes. Special tokens in the text pass through
// every stage unchanged and whole.
struct BasicTokens {
  std::string lowered;                // lower-cased one character at a time (special tokens kept)
  std::string cleaned;                // NUL, U+FFFD and control characters dropped, spaces -> ' '
  std::string spaced;                 // a space on both sides of every CJK ideograph
  std::vector<std::string> words;     // split on whitespace
  std::vector<std::string> stripped;  // NFD, then the combining marks (Mn) dropped
  std::vector<std::string> split;     // punctuation split off: the words WordPiece sees
  std::vector<bool> special;          // per word of `split`: a special token cut out of the text
};

// Throws attn::Error("basic_tokenize", ...) when `text` is not valid UTF-8, naming the byte.
BasicTokens basic_tokenize(std::string_view text);

// One word in WordPiece tokens: the longest vocabulary entry that starts the word, then the
// longest "##" entry that continues it, and so on; [UNK] for the whole word when some part has
// no entry or the word is longer than `max_chars` code points.
std::vector<std::string> wordpiece_tokenize(std::string_view word, const Vocabulary& vocab,
                                            std::size_t max_chars = 100);

// tokens[start, end): the tokens of one word (BatchEncoding.word_to_tokens's TokenSpan).
struct TokenSpan {
  std::size_t start = 0, end = 0;
};

struct Encoding {
  BasicTokens basic;
  std::vector<std::string> tokens;     // WordPiece tokens, with [CLS] ... [SEP] when asked
  std::vector<std::int64_t> ids;       // each token's id; [UNK]'s for a token not in the vocabulary
  std::vector<std::int64_t> word;      // index into basic.split of each token; -1 for [CLS]/[SEP]
  std::vector<TokenSpan> word_tokens;  // per word of basic.split: its tokens, the inverse of `word`
};

// BertTokenizer's do_lower_case and strip_accents (tokenizer_config.json). strip_accents unset
// follows lower_case, as BasicTokenizer's None does.
struct TokenizerOptions {
  bool lower_case = true;
  std::optional<bool> strip_accents;
};

// tokenizer(text, add_special_tokens=...). Throws attn::Error when the text is not UTF-8, the
// vocabulary has no [UNK], or add_special_tokens needs a [CLS] or [SEP] it does not have.
Encoding encode(std::string_view text, const Vocabulary& vocab, bool add_special_tokens);
Encoding encode(std::string_view text, const Vocabulary& vocab, bool add_special_tokens,
                const TokenizerOptions& options);

// Whether `text` is valid UTF-8; `bad_offset` gets the offset of the first bad byte.
bool is_valid_utf8(std::string_view text, std::size_t* bad_offset = nullptr);

// Valid UTF-8 `text` with the characters one cannot see written as Python escapes: \t, \n, \r,
// \x00, \u200b, \U000e0001 for control, format, unassigned, private-use and separator
// characters (the plain space stays). For showing what cleaning removes.
std::string escape_invisible(std::string_view text);

}  // namespace attn
