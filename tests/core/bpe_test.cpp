// GPT-2's byte-level BPE: the fixture folders' tokenizer (data/generator/gpt2.py's learn_bpe and
// encode) gives their input_ids; GPT-2's real files give the ids of OpenAI's JavaScript port and
// js-tiktoken (data/make_bpe_fixtures.mjs); encode then decode gives the text back byte for byte;
// the pattern's pieces; bad files and invalid UTF-8 refused in one line.
#include "io/bpe.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "embedding.hpp"
#include "fixtures.hpp"
#include "pretrained_case.hpp"
#include "scratch.hpp"

using attn::BpeTokenizer;

namespace {

using Strings = std::vector<std::string>;

// The one-line message of the attn::Error `run` throws ("(no error)" when it throws none).
std::string refusal(const std::function<void()>& run) {
  std::string message = "(no error)";
  try {
    run();
  } catch (const attn::Error& e) {
    message = e.what();
  }
  CHECK(message.find('\n') == std::string::npos);
  return message;
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

const BpeTokenizer& fixture_tokenizer() {
  static const BpeTokenizer t = attn::read_bpe(attn::testing::fixture_path("gpt2/d21_lm"));
  return t;
}

const BpeTokenizer& gpt2_tokenizer() {
  static const BpeTokenizer t = attn::read_bpe(std::string(ATTN_SOURCE_DIR) + "/data/gpt2");
  return t;
}

// Texts for the round trip: every class of the pattern, scripts, emoji sequences, odd spaces.
const Strings kCorpus = {
    "The cat sat on the mat.",
    "",
    " ",
    "   ",
    "  \n  ",
    "trailing spaces   ",
    "\n\nnew lines\r\n\ttabs\t",
    "It's, isn't it? THEY'RE HERE'S we'll I'm you'd they've 'tis",
    "café naïve Ångström Zürich façade",
    "e\u0301 combining acute, a\u0308\u0304 two marks",
    "東京都 中文字符 日本語のテキスト 한국어",
    "Привет, мир! Γειά σου κόσμε",
    "مرحبا بالعالم עברית",
    "emoji 😀🎉 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 skin 👍🏽",
    "numbers 123 4567890 3.14159 1,000,000 ½ ² Ⅻ ٣",
    "punctuation!!! ... ??? --- ((())) {}[]",
    "int main() { return a->b + c[i] * 2; } // done",
    "nbsp\u00a0thin\u2009ideographic\u3000space",
    "<|endoftext|>",
    "before<|endoftext|>after <|endoftext|> more",
    std::string("nul\0byte", 8),
    "\x7f\x01\x1b[31mcontrol\x1b[0m",
};

}  // namespace

TEST_CASE("bpe: the fixture folders' tokenizer gives their input_ids") {
  const nlohmann::json cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("gpt2/cases.json")));
  const BpeTokenizer& t = fixture_tokenizer();
  CHECK(t.size() == 297);
  for (const auto& [name, texts] : cases.at("inputs").items()) {
    const std::string folder = "gpt2/inputs/" + name + "/";
    const attn::Ids ids =
        attn::testing::read_ids(attn::testing::fixture_path(folder + "input_ids.npy"));
    const attn::Ids mask =
        attn::testing::read_ids(attn::testing::fixture_path(folder + "attention_mask.npy"));
    REQUIRE(ids.shape(0) == texts.size());
    for (std::size_t b = 0; b < texts.size(); ++b) {
      INFO(name << " row " << b);
      std::vector<std::int64_t> expected;
      for (std::size_t i = 0; i < ids.shape(1); ++i)
        if (mask(b, i) != 0) expected.push_back(ids(b, i));
      const std::string text = texts[b].get<std::string>();
      CHECK(attn::encode(t, text) == expected);
      CHECK(attn::decode(t, expected) == text);
    }
  }
}

TEST_CASE("bpe: GPT-2's pattern cuts the text into its pieces") {
  using attn::pre_tokenize;
  CHECK(pre_tokenize("Hello world") == Strings{"Hello", " world"});
  CHECK(pre_tokenize("It's") == Strings{"It", "'s"});
  CHECK(pre_tokenize("IT'S") == Strings{"IT", "'", "S"});  // the contractions are lower case
  CHECK(pre_tokenize("we'll they're I've") == Strings{"we", "'ll", " they", "'re", " I", "'ve"});
  CHECK(pre_tokenize("a  b") == Strings{"a", " ", " b"});  // the run leaves its last space
  CHECK(pre_tokenize("a \n b") == Strings{"a", " \n", " b"});
  CHECK(pre_tokenize("a\n\nb") == Strings{"a", "\n", "\n", "b"});
  CHECK(pre_tokenize("end   ") == Strings{"end", "   "});  // at the end the run stays whole
  CHECK(pre_tokenize("x\ny") == Strings{"x", "\n", "y"});
  CHECK(pre_tokenize("abc123 456") == Strings{"abc", "123", " 456"});
  CHECK(pre_tokenize("hi!!! ?") == Strings{"hi", "!!!", " ?"});
  CHECK(pre_tokenize("café") == Strings{"café"});
  CHECK(pre_tokenize("e\u0301") == Strings{"e", "\u0301"});  // a combining mark is not \p{L}
  CHECK(pre_tokenize(" 東京") == Strings{" 東京"});
  CHECK(pre_tokenize("a\u00a0b") == Strings{"a", "\u00a0", "b"});  // NBSP is \s, not ' '
  CHECK(pre_tokenize("x<|endoftext|> y") == Strings{"x", "<|endoftext|>", " y"});
  CHECK(pre_tokenize("").empty());
}

TEST_CASE("bpe: the byte-to-unicode map") {
  const Strings& s = attn::byte_symbols();
  REQUIRE(s.size() == 256);
  CHECK(s[' '] == "Ġ");
  CHECK(s['\n'] == "Ċ");
  CHECK(s['!'] == "!");
  CHECK(s[0] == "\u0100");
  CHECK(s[0xad] == "Ń");  // the soft hyphen is shifted, last of the 68
  CHECK(s[0xff] == "ÿ");
  CHECK(std::set<std::string>(s.begin(), s.end()).size() == 256);
}

TEST_CASE("bpe: encode then decode gives the text back byte for byte") {
  for (const BpeTokenizer* t : {&fixture_tokenizer(), &gpt2_tokenizer()}) {
    for (const std::string& text : kCorpus) {
      INFO(attn::printable(text));
      const std::vector<std::int64_t> ids = attn::encode(*t, text);
      CHECK(attn::decode(*t, ids) == text);
    }
  }
}

TEST_CASE("bpe: encode_steps ends on encode's tokens, one merge at a time") {
  const BpeTokenizer& t = gpt2_tokenizer();
  for (const std::string& text : kCorpus) {
    INFO(attn::printable(text));
    std::vector<std::int64_t> ids;
    std::string bytes;
    for (const attn::BpePiece& piece : attn::encode_steps(t, text)) {
      ids.insert(ids.end(), piece.ids.begin(), piece.ids.end());
      bytes += piece.text;
      Strings before = piece.initial;
      for (const attn::BpeMerge& m : piece.merges) {
        CHECK(m.symbols.size() < before.size());
        CHECK(t.merges.at(m.rank) == std::pair(m.left, m.right));
        before = m.symbols;
      }
      CHECK(before == piece.tokens);
    }
    CHECK(bytes == text);
    CHECK(ids == attn::encode(t, text));
  }
  // " lower": Ġ l o w e r merged by rank into one token.
  const std::vector<attn::BpePiece> pieces = attn::encode_steps(t, " lower");
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].initial == Strings{"Ġ", "l", "o", "w", "e", "r"});
  CHECK(pieces[0].tokens == Strings{"Ġlower"});
  CHECK(pieces[0].ids == std::vector<std::int64_t>{2793});
}

TEST_CASE("bpe: GPT-2's real files give the ids of OpenAI's JavaScript tokenizer and js-tiktoken") {
  const nlohmann::json cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("bpe/cases.json")));
  const BpeTokenizer& t = gpt2_tokenizer();
  CHECK(t.size() == 50257);
  CHECK(t.merges.size() == 50000);
  REQUIRE(cases.at("cases").size() >= 20);
  for (const auto& c : cases.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    INFO(attn::printable(text));
    CHECK(attn::encode(t, text) == c.at("ids").get<std::vector<std::int64_t>>());
  }
}

TEST_CASE("bpe: tokenizer.json's model gives the same tokenizer, merges as strings or pairs") {
  const std::string folder = attn::testing::fixture_path("gpt2/d21_lm");
  const nlohmann::json vocab =
      nlohmann::json::parse(attn::testing::read_text(folder + "/vocab.json"));
  const BpeTokenizer& expected = fixture_tokenizer();
  for (const bool pairs : {false, true}) {
    nlohmann::json merges = nlohmann::json::array();
    for (const auto& [a, b] : expected.merges)
      merges.push_back(pairs ? nlohmann::json::array({a, b}) : nlohmann::json(a + " " + b));
    const nlohmann::json json = {
        {"version", "1.0"}, {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
    const BpeTokenizer t = attn::parse_bpe_tokenizer_json(json.dump(), "tokenizer.json");
    CHECK(t.tokens == expected.tokens);
    CHECK(t.merges == expected.merges);
    CHECK(attn::encode(t, "The cat sat on the mat.") ==
          attn::encode(expected, "The cat sat on the mat."));
  }
  // read_bpe falls back on tokenizer.json when vocab.json and merges.txt are not there.
  const attn::testing::ScratchDir scratch("bpe_tokenizer_json");
  nlohmann::json merges = nlohmann::json::array();
  for (const auto& [a, b] : expected.merges)
    merges.push_back(a + " " + b);
  const nlohmann::json json = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
  write_file(scratch.path / "tokenizer.json", json.dump());
  CHECK(attn::read_bpe(scratch.path.string()).tokens == expected.tokens);
}

TEST_CASE("bpe: bad files are refused in one line") {
  using Catch::Matchers::Contains;
  const std::string vocab = R"({"a": 0, "b": 1, "ab": 2})";
  CHECK(attn::parse_bpe(vocab, "#version: 0.2\na b\n", "x").merges.size() == 1);
  CHECK_THAT(refusal([&] { attn::parse_bpe("{", "", "v"); }), Contains("'v' is not valid JSON"));
  CHECK_THAT(refusal([&] { attn::parse_bpe("[1]", "", "v"); }), Contains("not a JSON object"));
  CHECK_THAT(refusal([&] { attn::parse_bpe(R"({"a": 0, "b": 0})", "", "v"); }),
             Contains("id 1 from 0 to 1") || Contains("lists id 0 twice") ||
                 Contains("not an integer from 0 to 1"));
  CHECK_THAT(refusal([&] { attn::parse_bpe(R"({"a": 0, "b": 5})", "", "v"); }),
             Contains("has id 5, not an integer from 0 to 1"));
  CHECK_THAT(refusal([&] { attn::parse_bpe(vocab, "a b c\n", "v"); }),
             Contains("merges line 1 'a b c' is not two symbols"));
  CHECK_THAT(refusal([&] { attn::parse_bpe(vocab, "b a\n", "v"); }),
             Contains("merges 'b' and 'a' into 'ba', which is not in the vocabulary"));
  CHECK_THAT(refusal([&] {
               attn::parse_bpe_tokenizer_json(R"({"model": {"type": "WordPiece"}})", "t.json");
             }),
             Contains("'t.json' has no BPE model"));
  CHECK_THAT(refusal([&] {
               attn::parse_bpe_tokenizer_json(
                   R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [1]}})", "t.json");
             }),
             Contains("merge 0 1 is not two symbols"));

  const attn::testing::ScratchDir scratch("bpe_missing");
  write_file(scratch.path / "vocab.json", vocab);
  const std::string missing = refusal([&] { attn::read_bpe(scratch.path.string()); });
  CHECK_THAT(missing, Contains(scratch.path.string()));
  CHECK_THAT(missing, Contains("merges.txt missing"));
  CHECK_THAT(missing, Contains("or tokenizer.json"));

  CHECK_THAT(refusal([&] {
               attn::decode(fixture_tokenizer(), {0, 297});
             }),
             Contains("id 297 is outside the vocabulary of 297 tokens"));
  CHECK_THAT(refusal([&] { attn::decode(fixture_tokenizer(), {-1}); }),
             Contains("id -1 is outside"));
}

TEST_CASE("bpe: invalid UTF-8 in the text is refused, naming the byte") {
  using Catch::Matchers::Contains;
  const BpeTokenizer& t = fixture_tokenizer();
  CHECK_THAT(refusal([&] {
               attn::encode(t,
                            "ab\xff"
                            "cd");
             }),
             Contains("byte 0xff at offset 2"));
  CHECK_THAT(refusal([&] { attn::encode(t, "caf\xc3"); }), Contains("byte 0xc3 at offset 3"));
  CHECK_THAT(refusal([&] { attn::encode_steps(t, "\xed\xa0\x80"); }),  // a surrogate
             Contains("offset 0"));
  CHECK_THAT(refusal([&] { attn::pre_tokenize("\xc0\xaf"); }),  // an overlong '/'
             Contains("offset 0"));
}

TEST_CASE("bpe: the fixtures' texts come back byte for byte, one token at a time too") {
  const nlohmann::json cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("bpe/cases.json")));
  for (const auto& c : cases.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    INFO(attn::printable(text));
    const std::vector<std::int64_t> ids = attn::encode(gpt2_tokenizer(), text);
    CHECK(attn::decode(gpt2_tokenizer(), ids) == text);
    // A token may end inside a character (an emoji's 4 bytes): the tokens' bytes still join.
    std::string joined;
    for (const std::int64_t id : ids)
      joined += attn::decode(gpt2_tokenizer(), {id});
    CHECK(joined == text);
  }
}

TEST_CASE("bpe: a toy vocabulary merges by rank, not by place in the word") {
  nlohmann::json vocab = nlohmann::json::object();
  for (const std::string& symbol : attn::byte_symbols())
    vocab[symbol] = vocab.size();
  for (const char* token : {"ab", "bc", "abc"})
    vocab[token] = vocab.size();
  // "a b" ranks before "b c": "abc" is "ab" + "c", then "abc", although "bc" is a merge too.
  const BpeTokenizer t = attn::parse_bpe(vocab.dump(), "#version: 0.2\na b\nb c\nab c\n", "toy");
  const auto tokens_of = [&](std::string_view text) {
    Strings out;
    for (const std::int64_t id : attn::encode(t, text))
      out.push_back(t.tokens[static_cast<std::size_t>(id)]);
    return out;
  };
  CHECK(tokens_of("abc") == Strings{"abc"});
  CHECK(tokens_of("bcab") == Strings{"bc", "ab"});
  CHECK(tokens_of("abab") == Strings{"ab", "ab"});
  // Without the #version line, and with Windows line ends, the same merges.
  CHECK(attn::parse_bpe(vocab.dump(), "a b\r\nb c\r\nab c\r\n", "toy").merges == t.merges);
  // No <|endoftext|> in the vocabulary: the text is only text, one token per byte here.
  CHECK(attn::encode(t, "<|endoftext|>").size() == 13);
}
