// The encoder-decoder's tasks, batches and decoding (core/train/seq2seq.hpp): number words as English
// writes them, sources parsed and refused, held-out numbers kept out of training, batches framed
// for teacher forcing, sampling's filters in Hugging Face's order against transformers' warpers run
// by torch (data/fixtures/sampling/, data/generator/sampling.py), and special tokens never drawn.
#include "train/seq2seq.hpp"

#include <cmath>
#include <set>

#include <catch2/catch.hpp>

#include "allclose.hpp"
#include "base/error.hpp"
#include "fixture_case.hpp"
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

TEST_CASE("sampling's filters are Hugging Face's: temperature, top-k, renormalise, top-p",
          "[seq2seq][fixture]") {
  // Regenerate with /usr/bin/python3 data/generate_fixtures.py (data/generator/sampling.py).
  const auto c = attn::testing::load_case("sampling", "hugging_face_order");
  const auto& cases = c.meta.at("cases");
  REQUIRE(cases.size() >= 10);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    attn::DecodeOptions o;
    o.sample = true;
    o.temperature = cases[i].at("temperature").get<float>();
    o.top_k = cases[i].at("top_k").get<std::size_t>();
    o.top_p = cases[i].at("top_p").get<float>();
    const std::vector<float> scores = attn::to_float_vector(c.at("scores." + std::to_string(i)));
    const attn::Array& expected = c.at("probabilities." + std::to_string(i));
    const std::vector<float> got = attn::sampling_distribution(scores, o);
    INFO("case " << i << ": temperature " << o.temperature << ", top-k " << o.top_k << ", top-p "
                 << o.top_p);
    CHECK_ALLCLOSE(attn::make_float32({got.size()}, got), expected, {1e-6, 1e-5});
    // The same tokens kept: a filtered token is exactly 0 on both sides.
    const std::vector<float> want = attn::to_float_vector(expected);
    for (std::size_t t = 0; t < got.size(); ++t)
      CHECK((got[t] > 0.0f) == (want[t] > 0.0f));
  }
}

TEST_CASE("top-p is taken after top-k's renormalisation: the review's case keeps one token",
          "[seq2seq]") {
  // h far ahead of g at temperature 5: after top-k 2, h holds 0.857 >= 0.7, so top-p keeps h.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> scores{-inf,   -inf,   -12.0f, -15.0f, -14.0f, -13.5f,
                                  -11.0f, -12.5f, -13.0f, -8.96f, 0.0f};
  attn::DecodeOptions o;
  o.sample = true;
  o.temperature = 5.0f;
  o.top_k = 2;
  o.top_p = 1.0f;
  const std::vector<float> two = attn::sampling_distribution(scores, o);
  CHECK(two[10] == Approx(0.857).margin(1e-3));
  CHECK(two[9] == Approx(0.143).margin(1e-3));
  o.top_p = 0.7f;
  const std::vector<float> one = attn::sampling_distribution(scores, o);
  CHECK(one[10] == 1.0f);
  CHECK(one[9] == 0.0f);
  // A set that reaches p exactly is enough ("at least p"), and the most likely token always stays.
  o.top_k = 0;
  o.temperature = 1.0f;
  o.top_p = 0.5f;
  const std::vector<float> halves =
      attn::sampling_distribution({0.0f, 0.0f, std::log(2.0f), -inf}, o);
  CHECK(halves[2] == 1.0f);
  o.top_p = 0.01f;
  CHECK(attn::sampling_distribution({1.0f, 3.0f, 2.0f}, o)[1] == 1.0f);
}

TEST_CASE("<pad> and <s> are never drawn, however flat the distribution", "[seq2seq]") {
  attn::TrainConfig c;
  c.task = Seq2SeqTask::reverse;
  attn::Trainer untrained(c);
  const attn::Transformer model = std::get<attn::Transformer>(untrained.model());
  const auto source = attn::parse_source(Seq2SeqTask::reverse, "abcdefgh");
  attn::DecodeOptions o;
  o.sample = true;
  o.temperature = 100.0f;  // every token about equally likely: each special near 2 in V
  std::size_t steps = 0;
  double special_mass = 0.0;  // what the unmasked distribution would give them
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    o.seed = seed;
    const attn::Decoded d = attn::decode(model, source, o);
    for (const attn::DecodeStep& s : d.steps) {
      ++steps;
      CHECK(s.pick != attn::kPadId);
      CHECK(s.pick != attn::kStartId);
      CHECK(s.probabilities[attn::kPadId] == 0.0f);
      CHECK(s.probabilities[attn::kStartId] == 0.0f);
      const std::vector<float> unmasked = attn::sampling_distribution(s.log_probs, o);
      special_mass += unmasked[attn::kPadId] + unmasked[attn::kStartId];
    }
  }
  // Unmasked, the specials would hold about 2/V of every draw: dozens of draws over these steps.
  CHECK(steps >= 100);
  CHECK(special_mass / static_cast<double>(steps) > 0.1);
}
