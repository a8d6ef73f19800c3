// nn.Dropout(p). In eval mode it is the identity (what every lesson runs). In train mode each
// element is kept with probability 1 - p and scaled by 1 / (1 - p), or set to 0, so that the
// expected output equals the input. attn draws the keep-or-drop choices from its own seeded Rng,
// so a run is repeatable, but not PyTorch's choices (torch.bernoulli_ has its own generator);
// given the same choices the numbers are PyTorch's.
#pragma once

#include "base/random.hpp"
#include "base/tensor.hpp"

namespace attn {

struct DropoutSteps {
  Tensor3 scale;   // (B,T,D) per element 0 (dropped) or 1 / (1 - p) (kept): backward's mask
  Tensor3 output;  // x * scale
};

// The per-element scales for a tensor of `shape`: 1 / (1 - p) with probability 1 - p, else 0,
// drawn in row-major order. p = 0 keeps everything (scale 1, no draw). Throws attn::Error when p
// is not in [0, 1).
Tensor3 dropout_scale(Rng& rng, const Shape& shape, float p);
// x * scale, elementwise; the scale from dropout_scale (or recovered from PyTorch's output).
DropoutSteps dropout(const Tensor3& x, Tensor3 scale);
DropoutSteps dropout(Rng& rng, const Tensor3& x, float p);
// dX = dY * scale: a dropped element passes no gradient.
Tensor3 dropout_backward(const DropoutSteps& steps, const Tensor3& d_output);

}  // namespace attn
