// Lesson 11's exercise. Fill in each function where it says TODO, then run
//
//     attn check train        (the tests, with what was expected and what came out)
//     attn hint train         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: logits.shape(2) is its last size, logits(b, t, c) an element;
// Ids is the same for int64 ids (B,T); Tensor1 is a vector: v(i), v.size().
#include "train_exercise.hpp"

#include <cmath>

namespace attn::exercise {

Tensor3 cross_entropy_backward(const Tensor3& logits, const Ids& labels) {
  // TODO(lesson 11): the gradient of F.cross_entropy's loss (the mean over the tokens whose label
  // is not -100) with respect to the logits. logits (B,T,C), labels (B,T) -> d_logits (B,T,C).
  // The checks: each scored row sums to 0, a row labelled -100 is all 0, the label's entry is the
  // only negative one, and the gradient shrinks as more tokens are scored. Any exp you take must
  // not overflow on large logits.
  // PyTorch: logits.grad after F.cross_entropy(logits.reshape(-1, C), labels.reshape(-1))
  // .backward()
  // BEGIN SOLUTION
  const std::size_t classes = logits.shape(2), rows = labels.size();
  std::size_t scored = 0;
  for (std::size_t r = 0; r < rows; ++r)
    scored += labels.data()[r] != -100 ? 1 : 0;
  Tensor3 d_logits = Tensor3::from_shape(logits.shape());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* z = logits.data() + r * classes;
    float* d = d_logits.data() + r * classes;
    const std::int64_t label = labels.data()[r];
    if (label == -100) {
      for (std::size_t c = 0; c < classes; ++c)
        d[c] = 0.0f;
      continue;
    }
    double largest = z[0], sum = 0.0;
    for (std::size_t c = 1; c < classes; ++c)
      largest = std::max(largest, static_cast<double>(z[c]));
    for (std::size_t c = 0; c < classes; ++c)
      sum += std::exp(z[c] - largest);
    for (std::size_t c = 0; c < classes; ++c) {
      const double p = std::exp(z[c] - largest) / sum;
      const double one_hot = static_cast<std::int64_t>(c) == label ? 1.0 : 0.0;
      d[c] = static_cast<float>((p - one_hot) / static_cast<double>(scored));
    }
  }
  return d_logits;
  // END SOLUTION
}

AdamWState adamw_step(const AdamWState& state, const Tensor1& grad, std::int64_t step,
                      const AdamWSettings& settings) {
  // TODO(lesson 11): one step of torch.optim.AdamW on one parameter: the state after step number
  // `step` (1 for the first) given this step's gradient. The weight decay is decoupled (it shrinks
  // the parameter itself; it is not added to the gradient), the two moments are moving averages of
  // the gradient and of its square, both corrected for starting at zero, in torch's order.
  // state (value, first_moment, second_moment), grad, each (N) -> the next state (N each). The
  // checks: at step 1 without weight decay every element moves by about lr against the sign of its
  // gradient, whatever the gradient's size; the moments match torch's exp_avg and exp_avg_sq.
  // PyTorch: torch.optim.AdamW([p], lr, betas=(β1, β2), eps, weight_decay).step()
  // BEGIN SOLUTION
  AdamWState next = state;
  const double t = static_cast<double>(step);
  const auto correction1 =
      static_cast<float>(1.0 - std::pow(static_cast<double>(settings.beta1), t));
  const auto correction2_root =
      static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(settings.beta2), t)));
  const float step_size = settings.lr / correction1;
  for (std::size_t i = 0; i < next.value.size(); ++i) {
    const float g = grad(i);
    next.value(i) *= 1.0f - settings.lr * settings.weight_decay;
    next.first_moment(i) = next.first_moment(i) * settings.beta1 + g * (1.0f - settings.beta1);
    next.second_moment(i) =
        next.second_moment(i) * settings.beta2 + g * g * (1.0f - settings.beta2);
    const float denominator = std::sqrt(next.second_moment(i)) / correction2_root + settings.eps;
    next.value(i) += -step_size * (next.first_moment(i) / denominator);
  }
  return next;
  // END SOLUTION
}

}  // namespace attn::exercise
