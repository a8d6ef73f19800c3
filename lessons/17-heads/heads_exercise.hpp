// Lesson 17's exercise: the two measurements behind `attn heads`. The induction score of every
// head of one causal layer on one sequence (core/head_patterns.hpp's measurement with Olsson et
// al. 2022's pattern), and one head's zero or mean ablation in the heads' outputs side by side,
// before the output projection (TransformerLens's hook_z). You write the bodies in
// heads_exercise.cpp.
//
// Legend: T tokens, H heads, B sequences, hs head size; the concatenation's head h is its columns
// h·hs to (h+1)·hs - 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/tensor.hpp"

namespace attn::exercise {

// The induction pattern's keys on one sequence: for each query t, the key j + 1 after every
// earlier position j < t whose token is the query's (ids[j] == ids[t]), in increasing order. In
// [A][B] ... [A] the last [A] targets [B], the token an induction head copies. A query whose token
// has not occurred before has no target.
std::vector<std::vector<std::size_t>> induction_targets(const std::vector<std::int64_t>& ids);

// weights (H,T,T) of one causal layer on the sequence ids (T) -> (H): for each head, the mean over
// the queries that have an induction target of the sum of the query's weights on its targets.
// Queries without a target are left out of the mean. Throws std::invalid_argument when weights
// is not (H,T,T) with T = ids.size(), or when no query has a target.
Tensor1 induction_score(const Tensor3& weights, const std::vector<std::int64_t>& ids);

enum class Ablation { zero, mean };

// concatenated (B,T,H·hs), the heads' outputs side by side, with head `head` of `heads` ablated:
// zero sets its slice to 0; mean replaces its slice at each position t by the slice's mean over
// the B sequences at t. Every other column is the input's. Throws std::invalid_argument when
// `heads` does not divide the width or `head` is not below `heads`.
Tensor3 ablate_head(const Tensor3& concatenated, std::size_t head, std::size_t heads,
                    Ablation mode);

}  // namespace attn::exercise
