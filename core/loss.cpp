#include "loss.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

namespace {
void check_labels(const Tensor3& logits, const Ids& labels) {
  if (labels.shape(0) != logits.shape(0) || labels.shape(1) != logits.shape(1))
    throw Error(ErrorKind::bad_size, "cross_entropy",
                fmt::format("labels {} do not fit logits {}: one per token",
                            shape_string_of(labels), shape_string_of(logits)));
  const std::size_t classes = logits.shape(2);
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels.data()[i] != kIgnoredLabel &&
        (labels.data()[i] < 0 || static_cast<std::size_t>(labels.data()[i]) >= classes))
      throw Error(ErrorKind::bad_value, "cross_entropy",
                  fmt::format("label {} is outside the {} classes 0..{}", labels.data()[i], classes,
                              classes - 1));
}

std::size_t scored_tokens(const Ids& labels) {
  return static_cast<std::size_t>(std::count_if(labels.begin(), labels.end(),
                                                [](std::int64_t l) { return l != kIgnoredLabel; }));
}
}  // namespace

CrossEntropySteps cross_entropy(const Tensor3& logits, const Ids& labels) {
  check_labels(logits, labels);
  const std::size_t classes = logits.shape(2), rows = labels.size();
  CrossEntropySteps s;
  s.probabilities = Tensor3(logits.shape());
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* z = logits.data() + r * classes;
    std::size_t best = 0;
    double largest = z[0];
    for (std::size_t c = 1; c < classes; ++c)
      if (z[c] > largest) largest = z[c], best = c;
    double sum = 0.0;
    for (std::size_t c = 0; c < classes; ++c)
      sum += std::exp(z[c] - largest);
    for (std::size_t c = 0; c < classes; ++c)
      s.probabilities.data()[r * classes + c] = static_cast<float>(std::exp(z[c] - largest) / sum);
    if (labels.data()[r] == kIgnoredLabel) continue;
    const auto label = static_cast<std::size_t>(labels.data()[r]);
    total += std::log(sum) - (z[label] - largest);
    s.correct += best == label;
    ++s.scored;
  }
  s.loss = s.scored > 0 ? total / static_cast<double>(s.scored) : 0.0;
  return s;
}

Tensor3 cross_entropy_backward(const CrossEntropySteps& s, const Ids& labels) {
  check_labels(s.probabilities, labels);
  const std::size_t classes = s.probabilities.shape(2), rows = labels.size();
  Tensor3 d_logits = s.probabilities;
  const std::size_t scored = scored_tokens(labels);
  const double scale = scored > 0 ? 1.0 / static_cast<double>(scored) : 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    float* d = d_logits.data() + r * classes;
    if (labels.data()[r] == kIgnoredLabel) {
      std::fill(d, d + classes, 0.0f);
      continue;
    }
    d[static_cast<std::size_t>(labels.data()[r])] -= 1.0f;
    for (std::size_t c = 0; c < classes; ++c)
      d[c] = static_cast<float>(d[c] * scale);
  }
  return d_logits;
}

}  // namespace attn
