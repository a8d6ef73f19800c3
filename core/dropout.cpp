#include "dropout.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn {

Tensor3 dropout_scale(Rng& rng, const Shape& shape, float p) {
  if (!(p >= 0.0f && p < 1.0f)) {
    throw Error(ErrorKind::bad_value, "dropout",
                fmt::format("p = {} is not a probability of dropping in [0, 1)", p))
        .about("dropout");
  }
  if (shape.size() != 3)
    throw Error(ErrorKind::bad_size, "dropout", "the scale is for a (B,T,D) tensor");
  Tensor3 scale = xt::ones<float>({shape[0], shape[1], shape[2]});
  if (p == 0.0f) return scale;
  const float kept = 1.0f / (1.0f - p);  // torch: input * mask / (1 - p), mask ~ Bernoulli(1 - p)
  for (float& s : scale)
    s = rng.uniform() < static_cast<double>(p) ? 0.0f : kept;
  return scale;
}

DropoutSteps dropout(const Tensor3& x, Tensor3 scale) {
  if (scale.shape() != x.shape()) {
    throw Error(
        ErrorKind::bad_size, "dropout",
        fmt::format("the scale {} does not fit x {}", shape_string_of(scale), shape_string_of(x)));
  }
  DropoutSteps s{std::move(scale), Tensor3(x.shape())};
  for (std::size_t i = 0; i < x.size(); ++i)
    s.output.data()[i] = x.data()[i] * s.scale.data()[i];
  return s;
}

DropoutSteps dropout(Rng& rng, const Tensor3& x, float p) {
  return dropout(x, dropout_scale(rng, {x.shape(0), x.shape(1), x.shape(2)}, p));
}

Tensor3 dropout_backward(const DropoutSteps& steps, const Tensor3& d_output) {
  if (d_output.shape() != steps.scale.shape()) {
    throw Error(ErrorKind::bad_size, "dropout_backward",
                fmt::format("dY {} does not fit the steps' {}", shape_string_of(d_output),
                            shape_string_of(steps.scale)));
  }
  Tensor3 d_x(d_output.shape());
  for (std::size_t i = 0; i < d_x.size(); ++i)
    d_x.data()[i] = d_output.data()[i] * steps.scale.data()[i];
  return d_x;
}

}  // namespace attn
