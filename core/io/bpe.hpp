// GPT-2's tokenizer: byte-level byte-pair encoding (Sennrich et al. 2016; Radford et al. 2019), as
// OpenAI's encoder.py and Hugging Face's GPT2Tokenizer compute it. Three stages:
//
//   pre-tokenise  the text is cut by GPT-2's pattern
//                   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//                 into pieces (contractions, letters, digits, other symbols, each with at most
//                 one leading space; whitespace runs leave their last space to the next piece)
//   bytes         each piece's UTF-8 bytes become printable characters by GPT-2's byte-to-unicode
//                 map (the 188 printable Latin-1 bytes stand for themselves, the other 68 are
//                 shifted to U+0100..U+0143: a space is "Ġ", a newline "Ċ")
//   merge         in each piece, the adjacent pair of symbols with the lowest rank in merges.txt is
//                 joined everywhere it occurs, until no pair has a rank; each final symbol's id
//                 is its entry in vocab.json
//
// Decoding joins the tokens' strings and maps the characters back to bytes, so encode then
// decode gives the text back byte for byte. Unicode categories come from utf8proc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attn {

struct BpeTokenizer {
  std::vector<std::string> tokens;                     // id -> token (byte-mapped characters)
  std::unordered_map<std::string, std::int64_t> ids;   // token -> id
  std::unordered_map<std::string, std::size_t> ranks;  // "left right" -> merge rank (line order)
  std::vector<std::pair<std::string, std::string>> merges;  // rank -> the pair
  std::string end_of_text = "<|endoftext|>";                // cut out whole when in the text

  std::size_t size() const { return tokens.size(); }
  std::optional<std::int64_t> find(std::string_view token) const;
};

// Parses vocab.json's and merges.txt's texts (merges.txt's "#version" first line is skipped).
// `source` names the files in errors. Throws attn::Error(bad_file) for invalid JSON, an id
// listed twice or out of range, a merge line that is not two symbols, or a merge whose result is
// not in the vocabulary.
BpeTokenizer parse_bpe(std::string_view vocab_json, std::string_view merges_txt,
                       std::string_view source);
// The model's "vocab" and "merges" of a tokenizer.json whose model type is "BPE".
BpeTokenizer parse_bpe_tokenizer_json(std::string_view tokenizer_json, std::string_view source);
// A folder's vocab.json + merges.txt, else its tokenizer.json; throws attn::Error(bad_file)
// naming the folder and the files it needs when neither is there.
BpeTokenizer read_bpe(const std::string& folder);

// GPT-2's byte-to-unicode map: the character (UTF-8) that stands for each byte.
const std::vector<std::string>& byte_symbols();

// The text cut by GPT-2's pattern, <|endoftext|> kept whole. Throws attn::Error when `text` is
// not valid UTF-8, naming the byte.
std::vector<std::string> pre_tokenize(std::string_view text);
// The text cut by GPT-2's pattern alone, <|endoftext|> cut like any text (as minbpe's
// RegexTokenizer.train and encode_ordinary cut it). Throws attn::Error for invalid UTF-8.
std::vector<std::string> split_by_pattern(std::string_view text);

// One piece's merges, for showing them: the symbols before any merge (one per byte), then after
// each merge the pair joined and the symbols.
struct BpeMerge {
  std::string left, right;
  std::size_t rank = 0;
  std::vector<std::string> symbols;  // after this merge
};
struct BpePiece {
  std::string text;                  // the piece's bytes as in the text
  std::vector<std::string> initial;  // byte-mapped characters, one per byte
  std::vector<BpeMerge> merges;      // in the order applied
  std::vector<std::string> tokens;   // the final symbols
  std::vector<std::int64_t> ids;
};
std::vector<BpePiece> encode_steps(const BpeTokenizer& tokenizer, std::string_view text);

std::vector<std::int64_t> encode(const BpeTokenizer& tokenizer, std::string_view text);
// The bytes of the tokens; throws attn::Error for an id outside the vocabulary. The result may
// be invalid UTF-8 when the ids cut a character (a caller prints it escaped).
std::string decode(const BpeTokenizer& tokenizer, const std::vector<std::int64_t>& ids);

}  // namespace attn
