// Lesson 17's exercise. Fill in each function where it says TODO, then run
//
//     attn check heads        (the tests, with what was expected and what came out)
//     attn hint heads         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: w.shape(0) is its first size, w(h, t, j) an element, and
// Tensor3({B, T, D}) a new tensor of that shape; Tensor1({H}, 0.0f) is H zeros. A copy of a
// tensor (Tensor3 out = concatenated;) copies its values.
#include "heads_exercise.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace attn::exercise {

std::vector<std::vector<std::size_t>> induction_targets(const std::vector<std::int64_t>& ids) {
  // TODO(lesson 17): for each query t, the key after every earlier copy of its token: j + 1 for
  // each j < t with ids[j] == ids[t], in increasing order. The checks: ids {5, 7, 5, 7, 5} give
  // {}, {}, {1}, {2}, {1, 3}; ids {4, 4} give {}, {1} (the query itself, right after the copy).
  // TransformerLens: on repeated random tokens of half length n, query t >= n targets t - n + 1
  // BEGIN SOLUTION
  std::vector<std::vector<std::size_t>> targets(ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t)
    for (std::size_t j = 0; j < t; ++j)
      if (ids[j] == ids[t]) targets[t].push_back(j + 1);
  return targets;
  // END SOLUTION
}

Tensor1 induction_score(const Tensor3& weights, const std::vector<std::int64_t>& ids) {
  // TODO(lesson 17): weights (H,T,T) of one causal layer on ids (T) -> each head's induction
  // score (H): for each query with at least one induction target, the sum of its weights on its
  // targets; the score is the mean of these sums over those queries only (a query with no target
  // counts neither in the sum nor in the count). Throws std::invalid_argument when the weights are
  // not (H,T,T) with T = ids.size(), or no query has a target. The check: a head whose rows put
  // all their weight on the targets scores 1; uniform causal attention scores the mean of
  // targets / (t + 1).
  // PyTorch: on = (weights * mask).sum(-1) (H,T) with mask[t, j] = 1 at the targets;
  // on[:, mask.sum(-1) > 0].mean(-1)
  // BEGIN SOLUTION
  const std::size_t tokens = ids.size();
  if (weights.dimension() != 3 || weights.shape(1) != tokens || weights.shape(2) != tokens) {
    throw std::invalid_argument(
        fmt::format("induction_score: weights {} do not fit {} tokens: give (H, {}, {})",
                    shape_string_of(weights), tokens, tokens, tokens));
  }
  const auto targets = induction_targets(ids);
  const std::size_t heads = weights.shape(0);
  std::vector<double> sums(heads, 0.0);
  std::size_t scored = 0;
  for (std::size_t t = 0; t < tokens; ++t) {
    if (targets[t].empty()) continue;
    ++scored;
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t key : targets[t])
        sums[h] += weights(h, t, key);
  }
  if (scored == 0) {
    throw std::invalid_argument(
        "induction_score: no token occurs twice, so no query has an induction target");
  }
  Tensor1 score({heads}, 0.0f);
  for (std::size_t h = 0; h < heads; ++h)
    score(h) = static_cast<float>(sums[h] / static_cast<double>(scored));
  return score;
  // END SOLUTION
}

Tensor3 ablate_head(const Tensor3& concatenated, std::size_t head, std::size_t heads,
                    Ablation mode) {
  // TODO(lesson 17): a copy of concatenated (B,T,H·hs) with head `head`'s columns head·hs to
  // (head+1)·hs - 1 replaced: by 0 (Ablation::zero), or (Ablation::mean) at each position t by
  // their mean over the B sequences at that t (the mean of concatenated(b, t, c) over b, one per
  // t and column). Every other column stays as it was. Throws std::invalid_argument when heads is
  // 0 or does not divide the width, or head >= heads.
  // TransformerLens: z[:, :, head] = 0, or z[:, :, head] = z[:, :, head].mean(0) on hook_z (B,T,H,hs)
  // BEGIN SOLUTION
  const std::size_t batch = concatenated.shape(0), tokens = concatenated.shape(1),
                    width = concatenated.shape(2);
  if (heads == 0 || width % heads != 0 || head >= heads) {
    throw std::invalid_argument(fmt::format(
        "ablate_head: head {} of {} in a concatenation {}: give heads dividing its width and "
        "a head from 0 to heads - 1",
        head, heads, shape_string_of(concatenated)));
  }
  const std::size_t head_size = width / heads;
  Tensor3 out = concatenated;
  for (std::size_t s = 0; s < head_size; ++s) {
    const std::size_t column = head * head_size + s;
    for (std::size_t t = 0; t < tokens; ++t) {
      double mean = 0.0;
      for (std::size_t b = 0; b < batch; ++b)
        mean += concatenated(b, t, column);
      mean /= static_cast<double>(batch);
      for (std::size_t b = 0; b < batch; ++b)
        out(b, t, column) = mode == Ablation::zero ? 0.0f : static_cast<float>(mean);
    }
  }
  return out;
  // END SOLUTION
}

}  // namespace attn::exercise
