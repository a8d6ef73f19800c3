// Lesson 03's exercise. Fill in each function where it says TODO, then run
//
//     attn check softmax        (the tests, with what was expected and what came out)
//     attn hint softmax         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(0) is its first size, x(b, t, s) an element, and
// Tensor3(shape) a new tensor of that shape.
#include "softmax_exercise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace attn::exercise {

// PREDICT before you run attn check: one query scores three keys 1, 2 and 3. How much of the
// weight does softmax give the key that scored 3? Write your guess in place of the NaN. attn
// check prints it beside the weight your softmax computed; a prediction earns or costs no points.
const double predicted_top_weight = 0.6;  // prediction

Tensor3 softmax(const Tensor3& scores) {
  // TODO(lesson 03): softmax over the last axis: each row of scores (one query against every key)
  // becomes weights exp(s) / (the sum of exp over the row), each in [0, 1], summing to 1. They must
  // stay finite for large scores (the tests use scores of several hundred; a float exp overflows
  // above about 88.7). A -inf score gets weight 0, and a row of only -inf comes out all zeros
  // (torch gives NaN there). (B,T,S) -> (B,T,S). PyTorch: torch.softmax(scores, dim=-1)
  // BEGIN SOLUTION
  const std::size_t batch = scores.shape(0), queries = scores.shape(1), keys = scores.shape(2);
  Tensor3 weights(scores.shape());
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t t = 0; t < queries; ++t) {
      float largest = -std::numeric_limits<float>::infinity();
      for (std::size_t s = 0; s < keys; ++s)
        largest = std::max(largest, scores(b, t, s));
      if (largest == -std::numeric_limits<float>::infinity()) {
        for (std::size_t s = 0; s < keys; ++s)
          weights(b, t, s) = 0.0f;
        continue;
      }
      float sum = 0.0f;
      for (std::size_t s = 0; s < keys; ++s) {
        weights(b, t, s) = std::exp(scores(b, t, s) - largest);
        sum += weights(b, t, s);
      }
      for (std::size_t s = 0; s < keys; ++s)
        weights(b, t, s) /= sum;
    }
  }
  return weights;
  // END SOLUTION
}

Tensor2 causal_mask(std::size_t tokens) {
  // TODO(lesson 03): the additive causal mask: query i sees keys 0..i and none after them, so 0
  // where key <= query and -inf where key > query. tokens T -> (T,T), indexed (query, key).
  // PyTorch: torch.triu(torch.full((T, T), float('-inf')), diagonal=1)
  // BEGIN SOLUTION
  Tensor2 mask({tokens, tokens});
  for (std::size_t query = 0; query < tokens; ++query) {
    for (std::size_t key = 0; key < tokens; ++key) {
      mask(query, key) = key <= query ? 0.0f : -std::numeric_limits<float>::infinity();
    }
  }
  return mask;
  // END SOLUTION
}

Tensor3 apply_mask(const Tensor3& scores, const Tensor2& mask) {
  // TODO(lesson 03): the scores with the mask added, the same (T,S) mask for every batch entry.
  // scores (B,T,S), mask (T,S) -> (B,T,S). Throws std::invalid_argument when the mask is not
  // (T,S). PyTorch: scores + mask (broadcast over B)
  // BEGIN SOLUTION
  if (mask.shape(0) != scores.shape(1) || mask.shape(1) != scores.shape(2)) {
    throw std::invalid_argument(
        fmt::format("apply_mask: mask ({},{}) does not fit scores ({},{},{})", mask.shape(0),
                    mask.shape(1), scores.shape(0), scores.shape(1), scores.shape(2)));
  }
  Tensor3 masked(scores.shape());
  for (std::size_t b = 0; b < scores.shape(0); ++b) {
    for (std::size_t t = 0; t < scores.shape(1); ++t) {
      for (std::size_t s = 0; s < scores.shape(2); ++s)
        masked(b, t, s) = scores(b, t, s) + mask(t, s);
    }
  }
  return masked;
  // END SOLUTION
}

}  // namespace attn::exercise
