// The vocabulary loader plus the tokenizer. The input is a vocab.txt, a NUL byte, then the text
// (a vocab.txt cannot hold a NUL, the text may); no NUL: the whole input is both. GPT-2's BPE
// too: the first part read as a vocab.json and the text as a merges.txt, and the text encoded
// by a small byte-level tokenizer, then decoded back byte for byte.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "io/bpe.hpp"
#include "io/tokenizer.hpp"

namespace {

// The 256 byte symbols and a few merges ("Ġt", "he", "Ġthe", "in", "ing").
const attn::BpeTokenizer& small_bpe() {
  static const attn::BpeTokenizer tokenizer = [] {
    std::string vocab = "{";
    std::size_t id = 0;
    const auto add = [&](const std::string& token) {
      vocab += id == 0 ? "\"" : ", \"";
      if (token == "\"" || token == "\\") vocab += '\\';
      vocab += token + "\": " + std::to_string(id++);
    };
    for (const std::string& symbol : attn::byte_symbols())
      add(symbol);
    for (const char* token : {"Ġt", "he", "Ġthe", "in", "ing", "<|endoftext|>"})
      add(token);
    return attn::parse_bpe(vocab + "}", "Ġ t\nh e\nĠt he\ni n\nin g\n", "small");
  }();
  return tokenizer;
}

void bpe(std::string_view vocab_text, std::string_view text) {
  try {
    (void)attn::parse_bpe(vocab_text, text, "fuzz vocab.json");
  } catch (const attn::Error&) {
  }
  try {
    (void)attn::parse_bpe_tokenizer_json(vocab_text, "fuzz tokenizer.json");
  } catch (const attn::Error&) {
  }
  try {
    const std::vector<std::int64_t> ids = attn::encode(small_bpe(), text);
    if (attn::decode(small_bpe(), ids) != text) __builtin_trap();
  } catch (const attn::Error&) {
    if (attn::is_valid_utf8(text)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view vocab_text = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? input : input.substr(nul + 1);

  if (attn::is_valid_utf8(text)) (void)attn::escape_invisible(text);
  bpe(vocab_text, text);
  attn::Vocabulary vocab;
  try {
    vocab = attn::parse_vocabulary(vocab_text, "fuzz vocab.txt");
  } catch (const attn::Error&) {
    // Still tokenize: the basic stage needs no vocabulary.
    try {
      (void)attn::basic_tokenize(text);
    } catch (const attn::Error&) {
    }
    return 0;
  }
  for (const bool special : {false, true}) {
    try {
      const attn::Encoding encoding = attn::encode(text, vocab, special);
      if (encoding.ids.size() != encoding.tokens.size() ||
          encoding.word.size() != encoding.tokens.size()) {
        __builtin_trap();
      }
      for (const std::int64_t id : encoding.ids) {
        if (id < 0 || static_cast<std::size_t>(id) >= vocab.size()) __builtin_trap();
      }
    } catch (const attn::Error&) {
    }
  }
  return 0;
}
