// The encoder-decoder's tasks, batches and decoding (core/train/seq2seq.hpp): number words as English
// writes them, sources parsed and refused, held-out numbers kept out of training, batches framed
// for teacher forcing, and sampling's filters.
#include "train/seq2seq.hpp"

#include <set>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "loss.hpp"
#include "train/trainer.hpp"

using attn::Seq2SeqTask;

namespace {
std::string words_of(const std::string& digits) {
  const auto source = attn::parse_source(Seq2SeqTask::number_words, digits);
  return attn::target_text(Seq2SeqTask::number_words,
                           attn::seq2seq_answer(Seq2SeqTask::number_words, source));
}
}  // namespace

TEST_CASE("number words are English's", "[seq2seq]") {
  CHECK(words_of("0") == "zero");
  CHECK(words_of("7") == "seven");
  CHECK(words_of("10") == "ten");
  CHECK(words_of("19") == "nineteen");
  CHECK(words_of("90") == "ninety");
  CHECK(words_of("305") == "three hundred five");
  CHECK(words_of("1000") == "one thousand");
  CHECK(words_of("1305") == "one thousand three hundred five");
  CHECK(words_of("7777") == "seven thousand seven hundred seventy seven");
  CHECK(words_of("2040") == "two thousand forty");
}

TEST_CASE("reverse and sort answer with the target's letters", "[seq2seq]") {
  const auto source = attn::parse_source(Seq2SeqTask::reverse, "cab");
  CHECK(attn::target_text(Seq2SeqTask::reverse,
                          attn::seq2seq_answer(Seq2SeqTask::reverse, source)) == "bac");
  CHECK(attn::target_text(Seq2SeqTask::sort, attn::seq2seq_answer(Seq2SeqTask::sort, source)) ==
        "abc");
}

TEST_CASE("sources outside a task are refused", "[seq2seq][bad-input]") {
  CHECK_THROWS_AS(attn::parse_source(Seq2SeqTask::reverse, "abz"), attn::Error);
  CHECK_THROWS_AS(attn::parse_source(Seq2SeqTask::reverse, ""), attn::Error);
  CHECK_THROWS_AS(attn::parse_source(Seq2SeqTask::reverse, "abcdefgha"), attn::Error);
  CHECK_THROWS_AS(attn::parse_source(Seq2SeqTask::number_words, "0305"), attn::Error);
  CHECK_THROWS_AS(attn::parse_source(Seq2SeqTask::number_words, "12345"), attn::Error);
  CHECK_THROWS_AS(attn::parse_source(Seq2SeqTask::number_words, "3a"), attn::Error);
  CHECK_NOTHROW(attn::parse_source(Seq2SeqTask::number_words, "0"));
}

TEST_CASE("number-words never trains on a held-out number", "[seq2seq]") {
  attn::Rng train(1), held(2);
  std::set<std::string> seen, held_out;
  for (int i = 0; i < 3000; ++i) {
    seen.insert(attn::source_text(
        Seq2SeqTask::number_words,
        attn::make_example(Seq2SeqTask::number_words, train, attn::Seq2SeqSplit::train).source));
    held_out.insert(attn::source_text(
        Seq2SeqTask::number_words,
        attn::make_example(Seq2SeqTask::number_words, held, attn::Seq2SeqSplit::held_out).source));
  }
  for (const std::string& n : held_out)
    CHECK(seen.count(n) == 0);
  // Every last digit occurs among the held-out numbers: no digit is kept from training.
  std::set<char> last;
  for (const std::string& n : held_out)
    last.insert(n.back());
  CHECK(last.size() == 10);
}

TEST_CASE("a batch is framed for teacher forcing: <s> y in, y </s> out, padding ignored",
          "[seq2seq]") {
  const attn::Seq2SeqExample a{{1, 2, 3}, {5, 4, 3}}, b{{4}, {6}};
  const attn::Seq2SeqBatch batch = attn::make_batch({a, b});
  CHECK(batch.source(1, 0) == 4);
  CHECK(batch.source(1, 2) == attn::kPadId);
  CHECK(batch.target_input(0, 0) == attn::kStartId);
  CHECK(batch.target_input(0, 3) == 3);
  CHECK(batch.labels(0, 3) == attn::kEndId);
  CHECK(batch.labels(1, 1) == attn::kEndId);
  CHECK(batch.labels(1, 2) == attn::kIgnoredLabel);
  CHECK(batch.source_mask.shape == attn::Shape{2, 1, 1, 3});
  CHECK(batch.target_mask.shape == attn::Shape{2, 1, 4, 4});
}

TEST_CASE("sampling's options are checked", "[seq2seq][bad-input]") {
  attn::DecodeOptions o;
  o.temperature = 0.0f;
  CHECK_THROWS_AS(attn::check_decode_options(o), attn::Error);
  o.temperature = 1.0f;
  o.top_p = 0.0f;
  CHECK_THROWS_AS(attn::check_decode_options(o), attn::Error);
  o.top_p = 1.01f;
  CHECK_THROWS_AS(attn::check_decode_options(o), attn::Error);
  o.top_p = 1.0f;
  CHECK_NOTHROW(attn::check_decode_options(o));
}

TEST_CASE("a short training run lowers the loss, and the same seed gives the same model",
          "[seq2seq][train]") {
  attn::TrainConfig c;
  c.steps = 30;
  c.task = Seq2SeqTask::sort;
  attn::Trainer a(c), b(c);
  double first = 0.0, last = 0.0;
  for (std::size_t i = 0; i < c.steps; ++i) {
    const attn::TrainStep s = a.step();
    b.step();
    if (i == 0) first = s.loss;
    last = s.loss;
  }
  CHECK(last < first);
  attn::Transformer ma = std::get<attn::Transformer>(a.model()),
                    mb = std::get<attn::Transformer>(b.model());
  std::vector<float> va, vb;
  attn::visit_parameters(ma, [&](const std::string&, float* d, const attn::Shape& s) {
    va.insert(va.end(), d, d + attn::element_count(s));
  });
  attn::visit_parameters(mb, [&](const std::string&, float* d, const attn::Shape& s) {
    vb.insert(vb.end(), d, d + attn::element_count(s));
  });
  CHECK(va == vb);
}
