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

Tensor3 backward(const Linear& layer, const Tensor3& x, const Tensor3& d_output, Linear& grad) {
  const std::size_t in = layer.weight.shape(1), out = layer.weight.shape(0);
  const std::size_t rows = x.shape(0) * x.shape(1);
  if (x.shape(2) != in || d_output.shape(0) != x.shape(0) || d_output.shape(1) != x.shape(1) ||
      d_output.shape(2) != out || grad.weight.shape() != layer.weight.shape() ||
      (layer.has_bias && grad.bias.shape() != layer.bias.shape())) {
    throw Error(
        ErrorKind::bad_size, "linear_backward",
        fmt::format("x {} and d_output {} do not fit weight {}, or the gradient's shapes "
                    "differ from the layer's",
                    shape_string_of(x), shape_string_of(d_output), shape_string_of(layer.weight)));
  }
  Tensor3 d_x = xt::zeros<float>({x.shape(0), x.shape(1), in});
  if (rows == 0) return d_x;
  // dX (rows,in) = dY (rows,out) @ W (out,in); dW (out,in) += dYᵀ (out,rows) @ X (rows,in).
  sgemm(false, false, rows, in, out, 1.0f, d_output.data(), out, layer.weight.data(), in, 0.0f,
        d_x.data(), in);
  sgemm(true, false, out, in, rows, 1.0f, d_output.data(), out, x.data(), in, 1.0f,
        grad.weight.data(), in);
  if (layer.has_bias) {
    for (std::size_t o = 0; o < out; ++o) {
      double sum = 0.0;
      for (std::size_t r = 0; r < rows; ++r)
        sum += d_output.data()[r * out + o];
      grad.bias(o) += static_cast<float>(sum);
    }
  }
  return d_x;
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
