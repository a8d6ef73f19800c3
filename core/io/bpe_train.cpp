#include "io/bpe_train.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "io/bpe.hpp"

namespace attn {

namespace {

constexpr std::int32_t kBytes = 256;

std::uint64_t key_of(BpePair pair) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pair.first)) << 32) |
         static_cast<std::uint32_t>(pair.second);
}

BpePair pair_of(std::uint64_t key) {
  return {static_cast<std::int32_t>(key >> 32), static_cast<std::int32_t>(key & 0xffffffffu)};
}

BpeIds bytes_of(std::string_view chunk) {
  BpeIds ids(chunk.size());
  for (std::size_t i = 0; i < chunk.size(); ++i)
    ids[i] = static_cast<unsigned char>(chunk[i]);
  return ids;
}

std::size_t number_of_merges(std::size_t vocab_size) {
  if (vocab_size < kBytes)
    throw Error(ErrorKind::bad_value, "train_bpe",
                fmt::format("<vocab_size> {} is below 256: a byte-level BPE starts from the 256 "
                            "bytes; give 256 or more",
                            vocab_size))
        .about("vocab_size");
  return vocab_size - kBytes;
}

Error out_of_pairs(std::size_t merged) {
  return Error(ErrorKind::bad_value, "train_bpe",
               fmt::format("the text has no pair left to merge after {} merges: give more text "
                           "or a <vocab_size> of at most {}",
                           merged, kBytes + merged))
      .about("vocab_size");
}

BpeTraining start_training(std::string_view text) {
  BpeTraining t;
  t.text_bytes = text.size();
  for (int b = 0; b < kBytes; ++b)
    t.vocabulary.emplace_back(1, static_cast<char>(b));
  return t;
}

void record_merge(BpeTraining& t, BpePair pair, std::int64_t count, std::size_t tokens) {
  t.merges.push_back(pair);
  t.counts.push_back(count);
  t.tokens.push_back(tokens);
  t.vocabulary.push_back(t.vocabulary[static_cast<std::size_t>(pair.first)] +
                         t.vocabulary[static_cast<std::size_t>(pair.second)]);
}

// --- the fast trainer's state -------------------------------------------------------------

// A distinct chunk, numbered in the order it first occurs in the text, and how often it occurs.
struct Chunk {
  BpeIds ids;
  std::int64_t occurrences = 0;
};

// A pair's count over the text, the chunks that hold it, and where it first occurs: its first
// chunk and the byte offset there of its left token.
struct PairState {
  std::int64_t count = 0;
  std::set<std::uint32_t> chunks;
  std::uint32_t first_chunk = 0;
  std::uint32_t first_byte = 0;
};

// The heap's order: the largest count, then the earliest first occurrence (minbpe's max).
struct Candidate {
  std::int64_t count;
  std::uint32_t first_chunk, first_byte;
  std::uint64_t pair;
  bool operator<(const Candidate& o) const {
    if (count != o.count) return count < o.count;
    if (first_chunk != o.first_chunk) return first_chunk > o.first_chunk;
    return first_byte > o.first_byte;
  }
};

// Each pair of `ids` once with how often it occurs there, sorted by pair.
std::vector<std::pair<std::uint64_t, std::int64_t>> local_pairs(const BpeIds& ids) {
  std::vector<std::uint64_t> keys;
  keys.reserve(ids.size());
  for (std::size_t i = 0; i + 1 < ids.size(); ++i)
    keys.push_back(key_of({ids[i], ids[i + 1]}));
  std::sort(keys.begin(), keys.end());
  std::vector<std::pair<std::uint64_t, std::int64_t>> out;
  for (const std::uint64_t k : keys) {
    if (!out.empty() && out.back().first == k)
      ++out.back().second;
    else
      out.emplace_back(k, 1);
  }
  return out;
}

class FastTrainer {
 public:
  explicit FastTrainer(std::string_view text) {
    std::unordered_map<std::string, std::uint32_t> seen;
    for (std::string& piece : split_by_pattern(text)) {
      const auto [it, added] = seen.try_emplace(std::move(piece), chunks_.size());
      if (added) chunks_.push_back({bytes_of(it->first), 0});
      ++chunks_[it->second].occurrences;
    }
    for (std::int32_t b = 0; b < kBytes; ++b)
      length_.push_back(1);
    for (std::uint32_t c = 0; c < chunks_.size(); ++c) {
      const Chunk& chunk = chunks_[c];
      tokens_ += chunk.ids.size() * static_cast<std::size_t>(chunk.occurrences);
      std::uint32_t byte = 0;
      for (std::size_t i = 0; i + 1 < chunk.ids.size(); ++i, ++byte) {
        PairState& p = pairs_[key_of({chunk.ids[i], chunk.ids[i + 1]})];
        if (p.chunks.empty()) {
          p.first_chunk = c;
          p.first_byte = byte;
        }
        p.count += chunk.occurrences;
        p.chunks.insert(c);
      }
    }
    for (const auto& [key, p] : pairs_)
      heap_.push({p.count, p.first_chunk, p.first_byte, key});
  }

  // minbpe's choice of pair, or false when no pair is left.
  bool best(std::uint64_t& key, std::int64_t& count) {
    while (!heap_.empty()) {
      const Candidate c = heap_.top();
      const auto it = pairs_.find(c.pair);
      if (it != pairs_.end() && it->second.count == c.count &&
          it->second.first_chunk == c.first_chunk && it->second.first_byte == c.first_byte) {
        key = c.pair;
        count = c.count;
        return true;
      }
      heap_.pop();
    }
    return false;
  }

  // Merges `key` into `id` in every chunk that holds it; returns the text's tokens after.
  std::size_t merge(std::uint64_t key, std::int32_t id) {
    const BpePair pair = pair_of(key);
    length_.push_back(length_[static_cast<std::size_t>(pair.first)] +
                      length_[static_cast<std::size_t>(pair.second)]);
    const std::vector<std::uint32_t> holding(pairs_[key].chunks.begin(), pairs_[key].chunks.end());
    std::vector<std::uint64_t> touched;
    for (const std::uint32_t c : holding) {
      Chunk& chunk = chunks_[c];
      BpeIds merged = bpe_merge(chunk.ids, pair, id);
      tokens_ -= (chunk.ids.size() - merged.size()) * static_cast<std::size_t>(chunk.occurrences);
      const auto before = local_pairs(chunk.ids);
      const auto after = local_pairs(merged);
      chunk.ids = std::move(merged);
      // Walk both sorted lists: counts change by the difference, membership where one lacks it.
      std::size_t i = 0, j = 0;
      while (i < before.size() || j < after.size()) {
        const bool take_before =
            j == after.size() || (i < before.size() && before[i].first <= after[j].first);
        const bool take_after =
            i == before.size() || (j < after.size() && after[j].first <= before[i].first);
        const std::uint64_t k = take_before ? before[i].first : after[j].first;
        const std::int64_t old_n = take_before ? before[i].second : 0;
        const std::int64_t new_n = take_after ? after[j].second : 0;
        PairState& p = pairs_[k];
        p.count += (new_n - old_n) * chunk.occurrences;
        if (old_n == 0) p.chunks.insert(c);
        if (new_n == 0) p.chunks.erase(c);
        touched.push_back(k);
        if (take_before) ++i;
        if (take_after) ++j;
      }
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (const std::uint64_t k : touched) {
      const auto it = pairs_.find(k);
      if (it->second.chunks.empty()) {
        pairs_.erase(it);
        continue;
      }
      PairState& p = it->second;
      p.first_chunk = *p.chunks.begin();
      p.first_byte = first_byte_in(chunks_[p.first_chunk].ids, pair_of(k));
      heap_.push({p.count, p.first_chunk, p.first_byte, k});
    }
    return tokens_;
  }

  std::size_t tokens() const { return tokens_; }

 private:
  std::uint32_t first_byte_in(const BpeIds& ids, BpePair pair) const {
    std::uint32_t byte = 0;
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      if (ids[i] == pair.first && ids[i + 1] == pair.second) return byte;
      byte += length_[static_cast<std::size_t>(ids[i])];
    }
    throw Error(ErrorKind::internal, "train_bpe", "a pair's first chunk does not hold it");
  }

  std::vector<Chunk> chunks_;
  std::vector<std::uint32_t> length_;  // id -> its length in bytes
  std::unordered_map<std::uint64_t, PairState> pairs_;
  std::priority_queue<Candidate> heap_;
  std::size_t tokens_ = 0;
};

}  // namespace

std::vector<BpeIds> bpe_chunks(std::string_view text) {
  std::vector<BpeIds> chunks;
  for (const std::string& piece : split_by_pattern(text))
    chunks.push_back(bytes_of(piece));
  return chunks;
}

std::vector<BpePairCount> bpe_pair_counts(const std::vector<BpeIds>& chunks) {
  std::vector<BpePairCount> counts;
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (const BpeIds& ids : chunks)
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const BpePair pair{ids[i], ids[i + 1]};
      const auto [it, added] = index.try_emplace(key_of(pair), counts.size());
      if (added) counts.push_back({pair, 0});
      ++counts[it->second].count;
    }
  return counts;
}

BpePairCount bpe_most_frequent(const std::vector<BpePairCount>& counts) {
  if (counts.empty())
    throw Error(ErrorKind::bad_value, "bpe_most_frequent",
                "no pair to merge: every chunk is one token");
  BpePairCount best = counts.front();
  for (const BpePairCount& c : counts)
    if (c.count > best.count) best = c;
  return best;
}

BpeIds bpe_merge(const BpeIds& ids, BpePair pair, std::int32_t id) {
  BpeIds out;
  out.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == pair.first && ids[i + 1] == pair.second) {
      out.push_back(id);
      ++i;
    } else {
      out.push_back(ids[i]);
    }
  }
  return out;
}

BpeTraining train_bpe_reference(std::string_view text, std::size_t vocab_size) {
  const std::size_t merges = number_of_merges(vocab_size);
  BpeTraining t = start_training(text);
  std::vector<BpeIds> chunks = bpe_chunks(text);
  for (std::size_t m = 0; m < merges; ++m) {
    const std::vector<BpePairCount> counts = bpe_pair_counts(chunks);
    if (counts.empty()) throw out_of_pairs(m);
    const BpePairCount best = bpe_most_frequent(counts);
    const auto id = static_cast<std::int32_t>(kBytes + m);
    std::size_t tokens = 0;
    for (BpeIds& ids : chunks) {
      ids = bpe_merge(ids, best.pair, id);
      tokens += ids.size();
    }
    record_merge(t, best.pair, best.count, tokens);
  }
  return t;
}

BpeTraining train_bpe(std::string_view text, std::size_t vocab_size) {
  const std::size_t merges = number_of_merges(vocab_size);
  BpeTraining t = start_training(text);
  FastTrainer trainer(text);
  for (std::size_t m = 0; m < merges; ++m) {
    std::uint64_t key = 0;
    std::int64_t count = 0;
    if (!trainer.best(key, count)) throw out_of_pairs(m);
    const std::size_t tokens = trainer.merge(key, static_cast<std::int32_t>(kBytes + m));
    record_merge(t, pair_of(key), count, tokens);
  }
  return t;
}

BpeIds encode_trained(const BpeTraining& training, std::string_view text) {
  std::unordered_map<std::uint64_t, std::int32_t> rank;
  for (std::size_t i = 0; i < training.merges.size(); ++i)
    rank.emplace(key_of(training.merges[i]), static_cast<std::int32_t>(i));
  BpeIds out;
  const auto encode_part = [&](std::string_view part) {
    for (const std::string& piece : split_by_pattern(part)) {
      BpeIds ids = bytes_of(piece);
      while (ids.size() >= 2) {
        std::int32_t lowest = std::numeric_limits<std::int32_t>::max();
        for (std::size_t i = 0; i + 1 < ids.size(); ++i)
          if (const auto it = rank.find(key_of({ids[i], ids[i + 1]})); it != rank.end())
            lowest = std::min(lowest, it->second);
        if (lowest == std::numeric_limits<std::int32_t>::max()) break;
        ids = bpe_merge(ids, training.merges[static_cast<std::size_t>(lowest)], kBytes + lowest);
      }
      out.insert(out.end(), ids.begin(), ids.end());
    }
  };
  std::size_t start = 0;
  for (std::size_t at; (at = text.find(training.special, start)) != std::string_view::npos;
       start = at + training.special.size()) {
    encode_part(text.substr(start, at - start));
    out.push_back(training.special_id());
  }
  encode_part(text.substr(start));
  return out;
}

std::string decode_trained(const BpeTraining& training, const BpeIds& ids) {
  std::string out;
  for (const std::int32_t id : ids) {
    if (id == training.special_id()) {
      out += training.special;
    } else if (id >= 0 && static_cast<std::size_t>(id) < training.vocabulary.size()) {
      out += training.vocabulary[static_cast<std::size_t>(id)];
    } else {
      throw Error(ErrorKind::bad_value, "decode_trained",
                  fmt::format("id {} is outside the vocabulary of {} tokens (0 to {})", id,
                              training.vocabulary.size() + 1, training.special_id()))
          .about("ids");
    }
  }
  return out;
}

std::string gpt2_token(const BpeTraining& training, std::int32_t id) {
  if (id == training.special_id()) return training.special;
  std::string out;
  for (const char b : training.vocabulary.at(static_cast<std::size_t>(id)))
    out += byte_symbols()[static_cast<unsigned char>(b)];
  return out;
}

std::string gpt2_vocab_json(const BpeTraining& training) {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  std::unordered_map<std::string, std::int32_t> made;
  for (std::int32_t id = 0; id <= training.special_id(); ++id) {
    const std::string token = gpt2_token(training, id);
    if (const auto [it, added] = made.try_emplace(token, id); !added)
      throw Error(ErrorKind::bad_value, "gpt2_vocab_json",
                  fmt::format("merge {} makes '{}', which id {} is already: minbpe keeps both, "
                              "GPT-2's vocab.json holds a token once; give a <vocab_size> of at "
                              "most {}",
                              id - kBytes, printable(token, 40), it->second, id))
          .about("vocab_size");
    vocab[token] = id;
  }
  return vocab.dump() + "\n";
}

std::string gpt2_merges_txt(const BpeTraining& training) {
  std::string out = "#version: 0.2\n";
  for (const BpePair& pair : training.merges)
    out += gpt2_token(training, pair.first) + " " + gpt2_token(training, pair.second) + "\n";
  return out;
}

}  // namespace attn
