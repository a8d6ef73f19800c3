// Lesson 16's exercise: the two loops of a byte-level BPE. One training step as minbpe takes it
// (count the adjacent pairs, choose the most frequent with minbpe's tie-break, merge it), and
// encoding a chunk with merges already learned. You write the bodies in bpe_exercise.cpp.
//
// Ids: 0..255 are bytes, 256 + i is the token of merge i.
#pragma once

#include <compare>
#include <cstdint>
#include <vector>

namespace attn::exercise {

using TokenIds = std::vector<std::int32_t>;
struct TokenPair {
  std::int32_t left = 0, right = 0;
  auto operator<=>(const TokenPair&) const = default;
};

struct MergeStep {
  TokenPair pair;                // the pair merged
  std::int64_t count = 0;        // how often it occurred, over all chunks, before the merge
  std::vector<TokenIds> chunks;  // the chunks after the merge
};

// One step of minbpe's RegexTokenizer.train: count every adjacent pair inside each chunk (never
// across two chunks; a run "aaa" holds the pair (a, a) twice), choose the pair with the largest
// count and, among equal counts, the one that occurs first (the chunks in order, each left to
// right), and replace it in every chunk, left to right, by `new_id`. Throws std::invalid_argument
// when no chunk has two tokens.
MergeStep merge_step(const std::vector<TokenIds>& chunks, std::int32_t new_id);

// minbpe's _encode_chunk: the bytes of one chunk, then, while some adjacent pair was learned, the
// learned pair of the lowest merge index joined everywhere (left to right) into 256 + its index.
// `merges` lists the pairs in the order they were learned.
TokenIds encode_chunk(const TokenIds& bytes, const std::vector<TokenPair>& merges);

}  // namespace attn::exercise
