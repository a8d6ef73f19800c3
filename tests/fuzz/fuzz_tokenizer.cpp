// The vocabulary loader plus the tokenizer. The input is a vocab.txt, a NUL byte, then the text
// (a vocab.txt cannot hold a NUL, the text may); no NUL: the whole input is both.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "io/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view vocab_text = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? input : input.substr(nul + 1);

  if (attn::is_valid_utf8(text)) (void)attn::escape_invisible(text);
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
