// Training a byte-level BPE as minbpe's RegexTokenizer(GPT2_SPLIT_PATTERN).train does (Karpathy's
// minbpe, after GPT-2's encoder.py): the text is cut by GPT-2's pattern into chunks, each chunk
// becomes its UTF-8 bytes (ids 0..255), and then, merge after merge,
//
//   count    every adjacent pair of ids in every chunk (merges never cross a chunk's edge)
//   choose   the most frequent pair; among equal counts the pair seen first, scanning the chunks
//            in order and each chunk left to right (Python's max over a dict keeps its first
//            maximum, and the dict is filled in that order)
//   merge    the pair, left to right, everywhere, into the new id 256 + i
//
// train_bpe_reference does exactly that, recounting everything each merge. train_bpe gives the
// same merges fast: each distinct chunk once with its number of occurrences, the pair counts kept
// up to date from the chunks a merge changes, and a heap ordered by count and by where each pair
// first occurs (its first chunk, then the byte where it starts there).
//
// The special token <|endoftext|> is not trained on: it takes the id after the last merge, and
// encode keeps it whole (minbpe's register_special_tokens and encode(allowed_special="all")).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

using BpeIds = std::vector<std::int32_t>;
using BpePair = std::pair<std::int32_t, std::int32_t>;

struct BpePairCount {
  BpePair pair;
  std::int64_t count = 0;
};

struct BpeTraining {
  std::vector<BpePair> merges;          // merge i joins this pair into id 256 + i
  std::vector<std::int64_t> counts;     // how often merge i's pair occurred when it was chosen
  std::vector<std::size_t> tokens;      // the text's tokens after merge i
  std::vector<std::string> vocabulary;  // id -> its bytes: 256 single bytes, then the merges
  std::size_t text_bytes = 0;           // the text's length in bytes (its tokens before merging)
  std::string special = "<|endoftext|>";

  std::int32_t special_id() const { return static_cast<std::int32_t>(vocabulary.size()); }
};

// The text's chunks as byte ids (GPT-2's pattern; <|endoftext|> is cut like any text).
std::vector<BpeIds> bpe_chunks(std::string_view text);
// minbpe's get_stats over all chunks: every adjacent pair with its count, in the order the pairs
// are first seen (the chunks in order, each left to right).
std::vector<BpePairCount> bpe_pair_counts(const std::vector<BpeIds>& chunks);
// minbpe's max(stats, key=stats.get): the first pair with the largest count. Throws
// attn::Error(bad_value) when there is no pair.
BpePairCount bpe_most_frequent(const std::vector<BpePairCount>& counts);
// minbpe's merge: `ids` with every occurrence of `pair`, left to right, replaced by `id`.
BpeIds bpe_merge(const BpeIds& ids, BpePair pair, std::int32_t id);

// minbpe's training as written (every pair recounted each merge); for the lesson and the tests.
// vocab_size counts the 256 bytes and the merges, as minbpe's does; throws attn::Error(bad_value)
// when it is below 256 or the text runs out of pairs first.
BpeTraining train_bpe_reference(std::string_view text, std::size_t vocab_size);
// The same merges, fast (see above).
BpeTraining train_bpe(std::string_view text, std::size_t vocab_size);

// minbpe's encode(text, allowed_special="all"): <|endoftext|> whole, each chunk of the rest merged
// pair by pair, the lowest merge first, until no pair of it was learned.
BpeIds encode_trained(const BpeTraining& training, std::string_view text);
// The ids' bytes (invalid UTF-8 when the ids cut a character); throws attn::Error(bad_value) for
// an id outside the vocabulary.
std::string decode_trained(const BpeTraining& training, const BpeIds& ids);

// The token an id stands for as GPT-2's files write it: each byte as its byte-to-unicode
// character.
std::string gpt2_token(const BpeTraining& training, std::int32_t id);
// GPT-2's vocab.json (token -> id, <|endoftext|> last) and merges.txt ("#version: 0.2", then one
// "left right" line per merge). Throws attn::Error(bad_value) when two merges make the same bytes
// (minbpe keeps both ids, a vocab.json can hold the token once).
std::string gpt2_vocab_json(const BpeTraining& training);
std::string gpt2_merges_txt(const BpeTraining& training);

}  // namespace attn
