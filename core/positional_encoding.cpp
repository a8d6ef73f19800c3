#include "positional_encoding.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/random.hpp"
#include "kernels/torch_order.hpp"

namespace attn {

// ---- The tables

SinusoidalTable sinusoidal_table(std::size_t positions, std::size_t width) {
  if (positions == 0 || width == 0) {
    throw Error(ErrorKind::bad_size, "sinusoidal_table",
                fmt::format("positions={} and width={} must both be at least 1", positions, width));
  }
  const std::size_t frequencies = (width + 1) / 2;
  SinusoidalTable t;
  // torch.arange(0, D, 2).float() * (-math.log(10000.0) / D): the double is rounded to float first.
  const float step = static_cast<float>(-std::log(10000.0) / static_cast<double>(width));
  t.div_term = Tensor1::from_shape({frequencies});
  for (std::size_t i = 0; i < frequencies; ++i)
    t.div_term(i) = torch_exp(static_cast<float>(2 * i) * step);  // (F)
  t.angles = Tensor2({positions, frequencies});
  for (std::size_t p = 0; p < positions; ++p)
    for (std::size_t i = 0; i < frequencies; ++i)
      t.angles(p, i) = static_cast<float>(p) * t.div_term(i);  // (P,1)*(F)
  Tensor2 sines(t.angles.shape()), cosines(t.angles.shape());  // (P,F) each
  torch_sin(t.angles.data(), sines.data(), t.angles.size());
  torch_cos(t.angles.data(), cosines.data(), t.angles.size());
  t.pe = Tensor2({positions, width});
  for (std::size_t p = 0; p < positions; ++p)
    for (std::size_t j = 0; j < width; ++j)
      t.pe(p, j) = j % 2 == 0 ? sines(p, j / 2) : cosines(p, j / 2);  // (P,D)
  return t;
}

MemoryPlan plan_sinusoidal_table(std::size_t positions, std::size_t width) {
  return {{"the table", {positions, width}, "P D"},
          {"the angles, their sines and cosines", {3, positions, (width + 1) / 2}, " P D"}};
}

PositionEmbedding init_position_embedding(Rng& rng, std::size_t positions, std::size_t width) {
  return PositionEmbedding{randn_matrix(rng, positions, width)};  // (P,D)
}

Module describe_position_embedding(std::size_t positions, std::size_t width, std::string name) {
  return Module{"Embedding", std::move(name), {{"weight", {positions, width}, true}}, {}};
}

void visit_parameters(PositionEmbedding& embedding, const ParameterVisitor& visit) {
  visit("weight", embedding.weight.data(), shape_of(embedding.weight));
}

Module describe_sinusoidal_encoding() {
  return Module{"PositionalEncoding", "", {}, {leaf_module("Dropout", "dropout")}};
}

std::vector<LayerInfo> trace_sinusoidal_encoding(const Shape& shape) {
  const Module m = describe_sinusoidal_encoding();
  Trace trace;
  trace.call(m, shape, shape);  // x + pe[:, :T]: the buffer is not a call
  trace.enter();
  trace.call(child(m, "dropout"), shape, shape);
  trace.leave();
  return trace.layers();
}

std::vector<LayerInfo> trace_position_embedding(std::size_t positions, std::size_t width,
                                                const Shape& shape) {
  Trace trace;
  Shape output = shape;
  output.push_back(width);
  trace.call(describe_position_embedding(positions, width), shape, output);
  return trace.layers();
}

Tensor2 first_positions(const Tensor2& table, std::size_t tokens) {
  if (tokens > table.shape(0)) {
    throw Error(ErrorKind::bad_size, "first_positions",
                fmt::format("{} tokens but the table {} has only {} positions", tokens,
                            shape_string_of(table), table.shape(0)));
  }
  Tensor2 out({tokens, table.shape(1)});  // (T,D)
  std::copy(table.data(), table.data() + out.size(), out.data());
  return out;
}

Tensor3 add_positions(const Tensor3& x, const Tensor2& pe) {
  if (pe.shape(0) != x.shape(1) || pe.shape(1) != x.shape(2)) {
    throw Error(ErrorKind::bad_size, "add_positions",
                fmt::format("x {} and pe {} do not fit: expected pe (T, D) = ({}, {})",
                            shape_string_of(x), shape_string_of(pe), x.shape(1), x.shape(2)));
  }
  return add_to_each(x, pe);  // (B,T,D) + (T,D)
}

}  // namespace attn
