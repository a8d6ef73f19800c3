// What each head does, measured: every head of every layer scored against the standard patterns
// of the interpretability literature (head_patterns.hpp's on-target weight against uniform
// attention's) over probe sets built to bring each pattern out.
//
//   previous   key t-1                          (Elhage et al. 2021's previous-token head)
//   first      key 0, the BOS or [CLS] token    (a resting place: Xiao et al. 2023's sink)
//   diagonal   key t, the query itself
//   mirror     key T-1-t                        (the reverse task's head; encoders only)
//   duplicate  earlier keys with the query's token
//   induction  the key after each earlier copy of the query's token: [A][B] ... [A] -> [B]
//              (Olsson et al. 2022)
//   task       a trained checkpoint's own keys (train/tasks.hpp's task_targets)
//
// Probe sets: random tokens whose second half repeats the first (TransformerLens's induction
// probe: nothing repeats inside a half, so every duplicate and induction target is the copy, and
// the positional patterns stand alone), a text, and a checkpoint's own held-out sequences. Every
// pattern is scored on every set; each pattern has one set that decides it (its column in the
// summary):
//
//   score(set, pattern, layer, head) = mean over scored queries of sum_{j in targets} P[t, j]
//   lift = score - uniform's score          (how much more than uniform attention)
//   best(layer, head) = the pattern of largest lift, each on its deciding set
//
// A head "is" its best pattern's head when its score is above 0.5 (head_patterns.hpp's
// HeadsClaim::pattern): more than half of each query's weight on the pattern's keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/random.hpp"
#include "base/tensor.hpp"
#include "embedding.hpp"
#include "head_patterns.hpp"

namespace attn {

struct AttentionView;
struct Encoder;
struct Bert;
struct Gpt2;

// One pattern: its name, the keys it names (for a table's words) and its targets on one
// sequence; `causal` says whether query t sees keys 0..t only.
struct ScanPattern {
  std::string name;  // "previous"
  std::string keys;  // "the previous token"
  std::function<SequenceTargets(const std::vector<std::int64_t>& ids, bool causal)> targets;
};
// The standard patterns in the order above (mirror only when `causal` is false: under a causal
// mask half its keys are hidden).
std::vector<ScanPattern> standard_patterns(bool causal);

// Sequences of one length, and the patterns this set decides (names of ScanPattern).
struct ProbeSet {
  std::string name;  // "repeated random tokens"
  Ids ids;           // (N,T)
  std::vector<std::string> decides;
  // repeated_probe: the first position of the second half, the copy of the first drawn token
  // (from there on each next token can be read off the first half); 0 for other sets.
  std::size_t copies_from = 0;
};
// How probe tokens are drawn: ids uniform in [low, high), each sequence opened by `first` when
// set (a BOS or [CLS]) and closed by `last` (a [SEP]).
struct ProbeTokens {
  std::int64_t low = 0, high = 0;
  std::optional<std::int64_t> first, last;
};
// N sequences of T tokens: random tokens without repeats inside the first half (when the range
// allows), and the second half a copy of the first (T - opening - closing tokens split in two; an
// odd one left over is one more fresh token, right after the opening one). It decides every
// standard pattern. Throws
// attn::Error(bad_size) for N of 0, a T that leaves fewer than 2 drawn tokens, or an empty range.
ProbeSet repeated_probe(Rng& rng, std::size_t count, std::size_t tokens, const ProbeTokens& drawn);

// Every layer's attention weights (B,H,T,T) on a batch of ids (B,T).
using LayerWeights = std::function<std::vector<Tensor4>(const Ids& ids)>;
// The readable forwards of the book's encoder, BERT (token types 0) and GPT-2, kept by reference.
LayerWeights encoder_weights(const Encoder& encoder);
LayerWeights bert_weights(const Bert& model);
LayerWeights gpt2_weights(const Gpt2& model);

struct HeadScan {
  std::size_t layers = 0, heads = 0;
  bool causal = false;
  std::vector<ScanPattern> patterns;
  std::vector<std::string> sets;  // the probe sets' names
  // The set deciding each pattern (an index into sets), or none when no set decides it.
  std::vector<std::optional<std::size_t>> deciding;
  // scores[(set * patterns + pattern) * layers + layer]: one PatternScores over the heads.
  std::vector<PatternScores> scores;

  HeadPatternScore score(std::size_t set, std::size_t pattern, std::size_t layer,
                         std::size_t head) const;
  struct Best {
    std::size_t pattern = 0, set = 0;
    HeadPatternScore score;
    double lift() const { return score.on_target - score.uniform; }
    bool holds() const { return score.on_target > 0.5; }
  };
  // The head's pattern of largest lift over the patterns a set decides (patterns with no scored
  // query are skipped); nullopt when none was scored.
  std::optional<Best> best(std::size_t layer, std::size_t head) const;
};

// What a head whose best pattern holds is called: "a previous head", "an induction head".
std::string pattern_head(std::string_view pattern);

// Sequences per forward when a large model is scanned: enough to fill the products, few enough
// that one forward's tapes stay small beside the weights.
inline constexpr std::size_t kScanBatch = 4;

// Scores every head of `layers` x `heads` on every set, `batch` sequences per forward. Patterns
// whose name no set decides are scored but have no summary column. Throws attn::Error(bad_size)
// when a forward's weights do not have the model's layers and heads.
HeadScan scan_heads(const LayerWeights& weights, std::size_t layers, std::size_t heads, bool causal,
                    std::vector<ScanPattern> patterns, const std::vector<ProbeSet>& sets,
                    std::size_t batch);

// Marks each head of a self-attention view with its best pattern on the view's own sequence (a
// token's identity is its label), when more than half of each query's weight lands on its keys:
// view.head_marks. A view whose queries are not its keys (cross-attention, a sentence block) is
// left unmarked.
void mark_heads(AttentionView& view);

}  // namespace attn
