// BPE training (core/io/bpe_train.hpp) against minbpe's RegexTokenizer(GPT2_SPLIT_PATTERN):
// merges, encodings and decodings equal to data/fixtures/bpe_train/*.json (made by
// data/make_bpe_train_fixtures.py); the fast trainer equal to the literal one on texts full of
// ties; the GPT-2 files it writes read back by attn's GPT-2 tokenizer with the same encodings.
#include "io/bpe_train.hpp"

#include <functional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/bpe.hpp"

namespace {

using attn::BpeIds;
using attn::BpePair;
using attn::BpeTraining;

const std::vector<std::string> kCases = {"english", "ties", "unicode", "special"};

nlohmann::json fixture(const std::string& name) {
  return nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("bpe_train/" + name + ".json")));
}

std::vector<BpePair> merges_of(const nlohmann::json& doc) {
  std::vector<BpePair> out;
  for (const auto& m : doc["merges"])
    out.emplace_back(m[0].get<std::int32_t>(), m[1].get<std::int32_t>());
  return out;
}

std::string refusal(const std::function<void()>& run) {
  try {
    run();
  } catch (const attn::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A text over a few letters and spaces: most pairs tie, chunks repeat and overlap ("aaa").
std::string tie_text(std::mt19937& rng) {
  const std::string letters = "aab c";
  std::uniform_int_distribution<std::size_t> length(1, 60), pick(0, letters.size() - 1);
  std::string text;
  for (std::size_t i = 0, n = length(rng); i < n; ++i)
    text += letters[pick(rng)];
  return text;
}

}  // namespace

TEST_CASE("train_bpe's merges are minbpe's, and so are the literal trainer's") {
  for (const std::string& name : kCases) {
    INFO("fixture " << name);
    const nlohmann::json doc = fixture(name);
    const std::string text = doc["text"];
    const std::size_t vocab_size = doc["vocab_size"];
    const BpeTraining fast = attn::train_bpe(text, vocab_size);
    const BpeTraining reference = attn::train_bpe_reference(text, vocab_size);
    CHECK(fast.merges == merges_of(doc));
    CHECK(reference.merges == merges_of(doc));
    CHECK(fast.counts == reference.counts);
    CHECK(fast.tokens == reference.tokens);
    CHECK(fast.vocabulary.size() == vocab_size);
  }
}

TEST_CASE("encode is minbpe's encode(allowed_special='all'), decode gives the text back") {
  for (const std::string& name : kCases) {
    const nlohmann::json doc = fixture(name);
    const BpeTraining t = attn::train_bpe(doc["text"].get<std::string>(), doc["vocab_size"]);
    for (const auto& sample : doc["samples"]) {
      const std::string text = sample["text"];
      INFO("fixture " << name << ", text '" << attn::printable(text, 60) << "'");
      const BpeIds ids = attn::encode_trained(t, text);
      CHECK(ids == sample["ids"].get<BpeIds>());
      CHECK(attn::decode_trained(t, ids) == text);
    }
  }
}

TEST_CASE("the fast trainer breaks ties as minbpe does on random texts of few letters") {
  std::mt19937 rng(31);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text = tie_text(rng);
    if (trial % 3 == 0) text += "<|endoftext|>" + tie_text(rng);
    INFO("text '" << text << "'");
    for (const std::size_t vocab_size : {257u, 262u, 280u}) {
      std::string reference_error, fast_error;
      BpeTraining reference, fast;
      reference_error = refusal([&] { reference = attn::train_bpe_reference(text, vocab_size); });
      fast_error = refusal([&] { fast = attn::train_bpe(text, vocab_size); });
      CHECK(fast_error == reference_error);
      CHECK(fast.merges == reference.merges);
      CHECK(fast.counts == reference.counts);
      CHECK(fast.tokens == reference.tokens);
    }
  }
}

TEST_CASE("ties: the pair seen first wins, and overlapping runs count every pair") {
  // "cd" comes before "ab" in the text; both occur twice.
  const BpeTraining t = attn::train_bpe("cd ab cd ab", 257);
  CHECK(t.merges == std::vector<BpePair>{{'c', 'd'}});
  // "aaaa": get_stats counts 3 pairs (a,a), merge replaces 2 of them.
  const std::vector<BpeIds> chunks = attn::bpe_chunks("aaaa bc");
  const auto counts = attn::bpe_pair_counts(chunks);
  REQUIRE(counts.size() == 3);
  CHECK(counts[0].pair == BpePair{'a', 'a'});
  CHECK(counts[0].count == 3);
  CHECK(attn::bpe_merge(chunks[0], {'a', 'a'}, 256) == BpeIds{256, 256});
  CHECK(attn::bpe_merge({'a', 'a', 'a'}, {'a', 'a'}, 256) == BpeIds{256, 'a'});
  const BpeTraining runs = attn::train_bpe("aaaa bc", 257);
  CHECK(runs.counts == std::vector<std::int64_t>{3});
  CHECK(runs.tokens == std::vector<std::size_t>{5});  // "aaaa" -> 2 tokens, " bc" 3
}

TEST_CASE("GPT-2 files of a trained BPE: attn's GPT-2 tokenizer reads them and encodes alike") {
  for (const std::string& name : kCases) {
    const nlohmann::json doc = fixture(name);
    const BpeTraining t = attn::train_bpe(doc["text"].get<std::string>(), doc["vocab_size"]);
    const std::string vocab = attn::gpt2_vocab_json(t), merges = attn::gpt2_merges_txt(t);
    CHECK(merges.rfind("#version: 0.2\n", 0) == 0);
    const attn::BpeTokenizer tokenizer = attn::parse_bpe(vocab, merges, name);
    REQUIRE(tokenizer.size() == t.vocabulary.size() + 1);
    CHECK(tokenizer.tokens.back() == "<|endoftext|>");
    CHECK(tokenizer.tokens['A'] == "A");  // byte b is id b (minbpe's ids, not GPT-2's order)
    CHECK(tokenizer.tokens[' '] == "Ġ");
    for (const auto& sample : doc["samples"]) {
      const std::string text = sample["text"];
      INFO("fixture " << name << ", text '" << attn::printable(text, 60) << "'");
      const BpeIds ids = attn::encode_trained(t, text);
      CHECK(attn::encode(tokenizer, text) == std::vector<std::int64_t>(ids.begin(), ids.end()));
      CHECK(attn::decode(tokenizer, attn::encode(tokenizer, text)) == text);
    }
  }
}

TEST_CASE("decode gives back bytes that are not UTF-8 when the ids cut a character") {
  const BpeTraining t = attn::train_bpe("🙂🙂🙂 🙂🙂 🙂", 260);
  const BpeIds ids = attn::encode_trained(t, "🙂");
  CHECK(attn::decode_trained(t, ids) == "🙂");
  // The emoji's first byte alone, then its three others: the bytes, not a replacement character.
  CHECK(attn::decode_trained(t, {0xf0}) == "\xf0");
  CHECK(attn::decode_trained(t, {0xf0, 0x9f, 0x99, 0x82}) == "🙂");
  CHECK_THAT(refusal([&] { attn::decode_trained(t, {261}); }),
             Catch::Contains("id 261 is outside the vocabulary of 261 tokens (0 to 260)"));
}

TEST_CASE("bad training inputs are refused in one line") {
  CHECK_THAT(refusal([] { attn::train_bpe("some text", 255); }),
             Catch::Contains("<vocab_size> 255 is below 256"));
  CHECK_THAT(
      refusal([] { attn::train_bpe("ab ab", 300); }),
      Catch::Contains(
          "no pair left to merge after 2 merges: give more text or a <vocab_size> of at most 258"));
  CHECK_THAT(refusal([] { attn::train_bpe("ok \xff bytes", 260); }),
             Catch::Contains("not valid UTF-8"));
  // Two merges that make the same bytes: minbpe keeps both ids, a vocab.json cannot.
  BpeTraining t = attn::train_bpe_reference("ab bc", 256);
  t.merges = {{'a', 'b'}, {'b', 'c'}, {256, 'c'}, {'a', 257}};
  for (const std::string s : {"ab", "bc", "abc", "abc"})
    t.vocabulary.push_back(s);
  CHECK_THAT(refusal([&] { attn::gpt2_vocab_json(t); }),
             Catch::Contains("merge 3 makes 'abc', which id 258 is already"));
}
