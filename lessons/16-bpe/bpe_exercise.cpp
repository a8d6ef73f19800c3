// Lesson 16's exercise. Fill in each function where it says TODO, then run
//
//     attn check bpe        (the tests, with what was expected and what came out)
//     attn hint bpe         (a hint, one stage at a time)
//
// TokenIds is std::vector<std::int32_t>: ids[i], ids.size(), ids.push_back(id). A TokenPair is
// {left, right}: p.left, p.right; pairs compare with == and < (so a std::map can key on them).
#include "bpe_exercise.hpp"

#include <limits>
#include <map>
#include <stdexcept>

namespace attn::exercise {

MergeStep merge_step(const std::vector<TokenIds>& chunks, std::int32_t new_id) {
  // TODO(lesson 16): one training step. Count the pairs of each chunk (ids[i], ids[i + 1]) and
  // remember the order in which each pair was first seen; choose the largest count, the first
  // seen among equal counts; then merge it in every chunk, left to right, skipping the two ids a
  // replacement used. The checks: chunks {{1, 2, 3}, {1, 2}} give the pair (1, 2), count 2 and
  // chunks {{new_id, 3}, {new_id}}; {{5, 6}, {7, 8}} give (5, 6); {{4, 4, 4}} counts (4, 4) twice
  // and becomes {{new_id, 4}}.
  // minbpe: stats = get_stats over the chunks; pair = max(stats, key=stats.get); merge(ids, pair, idx)
  // BEGIN SOLUTION
  std::map<TokenPair, std::size_t> index;                // pair -> its place in `seen`
  std::vector<std::pair<TokenPair, std::int64_t>> seen;  // in the order first seen
  for (const TokenIds& ids : chunks)
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const TokenPair pair{ids[i], ids[i + 1]};
      const auto [it, added] = index.try_emplace(pair, seen.size());
      if (added) seen.emplace_back(pair, 0);
      ++seen[it->second].second;
    }
  if (seen.empty()) throw std::invalid_argument("merge_step: no chunk has two tokens");
  std::size_t best = 0;
  for (std::size_t i = 1; i < seen.size(); ++i)
    if (seen[i].second > seen[best].second) best = i;  // strictly larger: the first seen stays
  MergeStep step;
  step.pair = seen[best].first;
  step.count = seen[best].second;
  for (const TokenIds& ids : chunks) {
    TokenIds merged;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i + 1 < ids.size() && ids[i] == step.pair.left && ids[i + 1] == step.pair.right) {
        merged.push_back(new_id);
        ++i;
      } else {
        merged.push_back(ids[i]);
      }
    }
    step.chunks.push_back(std::move(merged));
  }
  return step;
  // END SOLUTION
}

TokenIds encode_chunk(const TokenIds& bytes, const std::vector<TokenPair>& merges) {
  // TODO(lesson 16): encode one chunk. Repeat: find, among the adjacent pairs of the ids, the one
  // learned first (the lowest index in `merges`); stop when none was learned; otherwise replace
  // it everywhere, left to right, by 256 + its index. The checks: with merges {(1, 2), (2, 3)},
  // {1, 2, 3} becomes {256, 3} (merge 0 comes first though (2, 3) is learned too) and {2, 3, 1}
  // becomes {257, 1}; with no merges the bytes come back unchanged.
  // minbpe: pair = min(stats, key=lambda p: self.merges.get(p, float("inf")))
  // BEGIN SOLUTION
  std::map<TokenPair, std::int32_t> rank;
  for (std::size_t i = 0; i < merges.size(); ++i)
    rank.emplace(merges[i], static_cast<std::int32_t>(i));
  TokenIds ids = bytes;
  while (ids.size() >= 2) {
    std::int32_t lowest = std::numeric_limits<std::int32_t>::max();
    for (std::size_t i = 0; i + 1 < ids.size(); ++i)
      if (const auto it = rank.find({ids[i], ids[i + 1]}); it != rank.end() && it->second < lowest)
        lowest = it->second;
    if (lowest == std::numeric_limits<std::int32_t>::max()) break;
    const TokenPair pair = merges[static_cast<std::size_t>(lowest)];
    TokenIds merged;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i + 1 < ids.size() && ids[i] == pair.left && ids[i + 1] == pair.right) {
        merged.push_back(256 + lowest);
        ++i;
      } else {
        merged.push_back(ids[i]);
      }
    }
    ids = std::move(merged);
  }
  return ids;
  // END SOLUTION
}

}  // namespace attn::exercise
