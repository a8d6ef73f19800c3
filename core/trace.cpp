#include "trace.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace attn {

void Trace::call(const Module& module, const Shape& input, const Shape& output) {
  LayerInfo row;
  row.class_name = module.class_name;
  row.var_name = module.name;
  row.depth = depth_;
  row.input_shape = input;
  row.output_shape = output;
  row.parameters = module.parameters;
  row.is_leaf = module.children.empty();
  add(std::move(row));
}

void Trace::add(LayerInfo row) {
  const auto depth = static_cast<std::size_t>(std::max(depth_, 0));
  if (depth > 0 && depth - 1 < open_.size()) row.parent = open_[depth - 1];
  open_.resize(depth + 1);
  open_[depth] = layers_.size();
  layers_.push_back(std::move(row));
}

void Trace::relist(std::size_t row, bool same_object) {
  LayerInfo copy = layers_.at(row);
  copy.executed = false;
  copy.input_shape.clear();
  copy.output_shape.clear();
  copy.stands_for = layers_[row].stands_for.value_or(row);
  if (same_object) copy.same_as = layers_[row].same_as.value_or(row);
  copy.parent.reset();  // it adds nothing to its parents: its module is counted where it ran
  copy.parameters.clear();
  layers_.push_back(std::move(copy));
}

void Trace::container(const Module& module) {
  LayerInfo row;
  row.class_name = module.class_name;
  row.var_name = module.name;
  row.depth = depth_;
  row.executed = false;
  row.parameters = module.parameters;
  row.is_leaf = module.children.empty();
  add(std::move(row));
}

Shape linear_output(Shape input, std::size_t out) {
  if (input.empty())
    throw Error(ErrorKind::bad_size, "linear_output", "a Linear needs an input of rank 1 or more");
  input.back() = out;
  return input;
}

}  // namespace attn
