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

Tensor3 softmax(const Tensor3& scores) {
  // TODO(lesson 03): for each row scores(b, t, :), subtract the row's largest score, take exp,
  // and divide by the row's sum. If the largest score is -inf, every score is: write zeros.
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
  // TODO(lesson 03): a (tokens, tokens) tensor with 0 where key <= query and -inf where key > query.
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
  // TODO(lesson 03): add mask(t, s) to scores(b, t, s) for every batch b. Throw
  // std::invalid_argument when mask's shape is not (T,S).
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
