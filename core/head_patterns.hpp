// How much of a head's attention lands where a pattern says it should: the measurement under
// every sentence attn prints about what a trained head does.
//
// A pattern names, for each query t of a sequence, its target keys (the mirrored key T-1-t, the
// previous token t-1, every copy of the query's own token, a task's own keys). For a query with
// at least one target, the score is the sum of its weights on them:
//
//   on_target(t) = sum over target keys j of P[t, j]
//
// averaged over every such query of every sequence; queries without a target (the first token,
// for "previous token") are left out. Beside it the same average for uniform attention,
// targets(t) / visible(t), where visible(t) is every key in an encoder and keys 0..t under a
// causal mask, and the rows' mean entropy -sum_j P[t, j] ln P[t, j] against the mean of
// ln visible(t), the entropy of uniform attention. One definition for encoders and decoders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/tensor.hpp"

namespace attn {

// One query's target keys, and how many keys it may see (the keys are 0..visible-1).
struct QueryTargets {
  std::vector<std::size_t> keys;
  std::size_t visible = 0;
};
// A pattern over one sequence: one entry per query.
using SequenceTargets = std::vector<QueryTargets>;

// Patterns over a sequence of `tokens` queries, each seeing `tokens` keys (an encoder) or keys up
// to itself (causal).
SequenceTargets mirror_targets(std::size_t tokens, bool causal = false);    // key T-1-t
SequenceTargets previous_targets(std::size_t tokens, bool causal = false);  // key t-1
SequenceTargets first_targets(std::size_t tokens, bool causal = false);     // key 0
SequenceTargets diagonal_targets(std::size_t tokens, bool causal = false);  // key t, itself
// Every key holding the query's own token (the query itself included).
SequenceTargets same_token_targets(const std::vector<std::int64_t>& ids, bool causal = false);
// Every earlier key holding the query's own token (a duplicate-token head's keys): keys j < t with
// ids[j] = ids[t]. A query whose token has not occurred before has none.
SequenceTargets duplicate_targets(const std::vector<std::int64_t>& ids, bool causal = false);
// Induction (Olsson et al. 2022): the key just after each earlier occurrence of the query's token,
// j + 1 for every j < t with ids[j] = ids[t]: where [A][B] ... [A] finds [B], the token to copy.
SequenceTargets induction_targets(const std::vector<std::int64_t>& ids, bool causal = false);

struct HeadPatternScore {
  double on_target = 0.0;    // mean weight on the target keys
  double uniform = 0.0;      // the same mean for uniform attention
  double entropy = 0.0;      // mean entropy of the scored rows, in nats
  double max_entropy = 0.0;  // mean ln(visible): uniform attention's entropy
  std::size_t queries = 0;   // queries scored, over every sequence
};

// What attn claims a trained model's heads do with a pattern's keys; the lessons print the
// measurement and check the claim against it.
enum class HeadsClaim {
  pattern,  // a head puts more than half of each query's weight on the keys
  reads,    // a head puts at least twice uniform attention's weight on them
  spread,   // no head puts half its weight on them: the heads spread their weight over several
            // keys (mean entropy at least 3/4 of uniform attention's)
  none,     // nothing is claimed
};
// Whether the scores of a set of heads bear the claim out.
bool claim_holds(HeadsClaim claim, const std::vector<HeadPatternScore>& heads);

// Each row's entropy -sum_j P[t, j] ln P[t, j] over its keys (a masked key's 0 adds nothing), in
// float64 rounded to float32: (B,H,T) of weights (B,H,T,S).
Tensor3 row_entropies(const Tensor4& weights);

// The scores of every head of one attention layer, summed over batches of sequences.
class PatternScores {
 public:
  explicit PatternScores(std::size_t heads);
  // weights (B,H,T,S) of one layer; targets[b] the pattern over sequence b (T entries). Throws
  // attn::Error(bad_size) when the counts disagree or a target key is not visible. `entropies`,
  // when given, is row_entropies(weights), computed once for several patterns' scores.
  void add(const Tensor4& weights, const std::vector<SequenceTargets>& targets,
           const Tensor3* entropies = nullptr);
  std::size_t heads() const { return sums_.size(); }
  HeadPatternScore head(std::size_t head) const;

 private:
  std::vector<HeadPatternScore> sums_;
};

}  // namespace attn
