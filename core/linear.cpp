#include "linear.hpp"

#include <cmath>

#include "matmul.hpp"

namespace attn {

Linear init_linear(Rng& rng, std::size_t in, std::size_t out, bool bias) {
  const double bound = in == 0 ? 0.0 : 1.0 / std::sqrt(static_cast<double>(in));
  Linear layer;
  layer.weight = Tensor2({out, in});
  for (float& w : layer.weight)
    w = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
  layer.has_bias = bias;
  layer.bias = Tensor1(std::array<std::size_t, 1>{bias ? out : 0});
  for (float& b : layer.bias)
    b = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
  return layer;
}

Tensor3 forward(const Linear& layer, const Tensor3& x) {
  return linear(x, layer.weight, layer.has_bias ? &layer.bias : nullptr);
}

Tensor3d forward_float64(const Linear& layer, const Tensor3d& x) {
  const std::size_t in = layer.weight.shape(1), out = layer.weight.shape(0),
                    rows = x.size() / x.shape(2);
  if (x.shape(2) != in) {
    throw Error(ErrorKind::bad_size, "linear",
                fmt::format("x {} does not fit weight {}", shape_string_of(x),
                            shape_string_of(layer.weight)));
  }
  Tensor3d y({x.shape(0), x.shape(1), out});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < out; ++o) {
      double sum = layer.has_bias ? layer.bias(o) : 0.0;
      for (std::size_t i = 0; i < in; ++i)
        sum += x.data()[r * in + i] * static_cast<double>(layer.weight(o, i));
      y.data()[r * out + o] = sum;
    }
  return y;
}

void visit_parameters(Linear& layer, const std::string& prefix, const ParameterVisitor& visit) {
  visit(prefix + "weight", layer.weight.data(), shape_of(layer.weight));
  if (layer.has_bias) visit(prefix + "bias", layer.bias.data(), shape_of(layer.bias));
}

}  // namespace attn
