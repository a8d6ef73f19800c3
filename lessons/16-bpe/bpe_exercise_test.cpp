// Grades lesson 16's exercise: one BPE training step and encoding a chunk against minbpe's
// RegexTokenizer with GPT-2's pattern (its get_stats, merge, max and _encode_chunk, written out in
// data/generator/exercise_bpe.py). Tags: [bpe] the lesson, [points=N] the marks, [.hidden] shown
// after the due date. The student's functions are called only through STUDENT(...), and expected
// values are used only in checks (see course/harness/grading.hpp).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bpe_exercise.hpp"
#include "grading.hpp"

using attn::Tensor1;
using attn::exercise::MergeStep;
using attn::exercise::TokenIds;
using attn::exercise::TokenPair;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

// Chunks written flat with -1 between them (data/generator/exercise_bpe.py).
std::vector<TokenIds> chunks_of(const Tensor1& flat) {
  std::vector<TokenIds> chunks(1);
  for (const float id : flat) {
    if (id < 0)
      chunks.emplace_back();
    else
      chunks.back().push_back(static_cast<std::int32_t>(id));
  }
  return chunks;
}

Tensor1 flat_of(const std::vector<TokenIds>& chunks) {
  std::vector<float> out;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    if (c > 0) out.push_back(-1.0f);
    for (const std::int32_t id : chunks[c])
      out.push_back(static_cast<float>(id));
  }
  Tensor1 t = Tensor1::from_shape({out.size()});
  for (std::size_t i = 0; i < out.size(); ++i)
    t(i) = out[i];
  return t;
}

Tensor1 ids_of(const TokenIds& ids) {
  return flat_of({ids});
}

// One merge step on a fixture's chunks: the pair, its count and every chunk after, exactly.
void check_step(const std::string& name) {
  const std::string prefix = "bpe/step_" + name + "_";
  const std::vector<TokenIds> chunks = chunks_of(input<1>(prefix + "chunks"));
  const auto new_id = static_cast<std::int32_t>(input<1>(prefix + "new_id")(0));
  const MergeStep step = STUDENT(attn::exercise::merge_step(chunks, new_id));
  const std::string call = "merge_step(" + name + " chunks, " + std::to_string(new_id) + ")";
  check_close(call + ".pair", ids_of({step.pair.left, step.pair.right}),
              expected<1>(prefix + "pair"), {0.0, 0.0});
  check_close(call + ".count", Tensor1{static_cast<float>(step.count)},
              expected<1>(prefix + "count"), {0.0, 0.0});
  check_close(call + ".chunks (flat, -1 between chunks)", flat_of(step.chunks),
              expected<1>(prefix + "merged"), {0.0, 0.0});
}

// Every chunk of a fixture's sample encoded with the fixture's merges.
void check_encode(const std::string& name) {
  const std::string prefix = "bpe/encode_" + name + "_";
  const attn::Tensor2 pairs = input<2>(prefix + "merges");  // (M, 2)
  std::vector<TokenPair> merges;
  for (std::size_t i = 0; i < pairs.shape(0); ++i)
    merges.push_back(
        {static_cast<std::int32_t>(pairs(i, 0)), static_cast<std::int32_t>(pairs(i, 1))});
  std::vector<TokenIds> encoded;
  for (const TokenIds& bytes : chunks_of(input<1>(prefix + "bytes")))
    encoded.push_back(STUDENT(attn::exercise::encode_chunk(bytes, merges)));
  check_close("encode_chunk of each chunk of the " + name + " sample, " +
                  std::to_string(merges.size()) + " merges (flat, -1 between chunks)",
              flat_of(encoded), expected<1>(prefix + "ids"), {0.0, 0.0});
}

}  // namespace

TEST_CASE("merge_step counts pairs inside chunks and merges the most frequent", "[bpe][points=2]") {
  const MergeStep step = STUDENT(attn::exercise::merge_step({{1, 2, 3}, {1, 2}}, 300));
  CHECK(step.pair == TokenPair{1, 2});
  CHECK(step.count == 2);
  CHECK(step.chunks == std::vector<TokenIds>{{300, 3}, {300}});
  // (3, 1) would be counted if the chunks were one list: it is not a pair.
  const MergeStep edges = STUDENT(attn::exercise::merge_step({{5, 3}, {1, 5, 3}, {1}}, 256));
  CHECK(edges.pair == TokenPair{5, 3});
  CHECK(edges.count == 2);
  // Across the edges (6, 4) and (4, 6) would occur twice each; inside, (4, 5) once is all.
  const MergeStep inside =
      STUDENT(attn::exercise::merge_step({{4, 5}, {6}, {4}, {6}, {4}, {6}}, 256));
  CHECK(inside.pair == TokenPair{4, 5});
  CHECK(inside.count == 1);
}

TEST_CASE("merge_step on a sentence's bytes gives minbpe's first merge", "[bpe][points=2]") {
  check_step("english_start");
}

TEST_CASE("merge_step breaks ties as minbpe does: the pair seen first wins", "[bpe][points=2]") {
  const MergeStep first = STUDENT(attn::exercise::merge_step({{5, 6}, {7, 8}}, 256));
  CHECK(first.pair == TokenPair{5, 6});
  const MergeStep later = STUDENT(attn::exercise::merge_step({{7, 8, 5, 6}, {5, 6, 7, 8}}, 256));
  CHECK(later.pair == TokenPair{7, 8});
  check_step("ties_after_3");
}

TEST_CASE("merge_step counts a run's overlapping pairs and merges it left to right",
          "[bpe][points=1]") {
  const MergeStep run = STUDENT(attn::exercise::merge_step({{4, 4, 4}, {9, 4}}, 256));
  CHECK(run.pair == TokenPair{4, 4});
  CHECK(run.count == 2);
  CHECK(run.chunks == std::vector<TokenIds>{{256, 4}, {9, 4}});
  CHECK_THROWS_AS(STUDENT(attn::exercise::merge_step({{1}, {2}}, 256)), std::invalid_argument);
}

TEST_CASE("merge_step after 8 merges works on the merged ids too", "[bpe][points=1]") {
  check_step("english_after_8");
}

TEST_CASE("encode_chunk applies the lowest merge first and again until none is left",
          "[bpe][points=2]") {
  const std::vector<TokenPair> merges = {{1, 2}, {2, 3}, {256, 3}};
  const TokenIds whole = STUDENT(attn::exercise::encode_chunk({1, 2, 3}, merges));
  CHECK(whole == TokenIds{258});
  const TokenIds second = STUDENT(attn::exercise::encode_chunk({2, 3, 1}, merges));
  CHECK(second == TokenIds{257, 1});
  const TokenIds none = STUDENT(attn::exercise::encode_chunk({4, 5}, merges));
  CHECK(none == TokenIds{4, 5});
  const TokenIds one = STUDENT(attn::exercise::encode_chunk({7}, {}));
  CHECK(one == TokenIds{7});
  // (2, 3) was learned before (1, 2): it goes first though (1, 2) is further left.
  const TokenIds order = STUDENT(attn::exercise::encode_chunk({1, 2, 3}, {{2, 3}, {1, 2}}));
  CHECK(order == TokenIds{1, 256});
}

TEST_CASE("encode_chunk with 30 merges learned on a sentence gives minbpe's ids",
          "[bpe][points=2]") {
  check_encode("english");
}

// BEGIN HIDDEN TESTS
TEST_CASE("merge_step on accents and Greek and Japanese and emoji after 12 merges",
          "[bpe][points=2][.hidden]") {
  check_step("unicode_after_12");
}

TEST_CASE("encode_chunk on accents and Greek and Japanese and emoji with 25 merges",
          "[bpe][points=2][.hidden]") {
  check_encode("unicode");
}
// END HIDDEN TESTS
