#include "module.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "error.hpp"

namespace attn {

Module linear_module(std::string name, std::size_t in, std::size_t out, bool bias) {
  Module m{"Linear", std::move(name), {{"weight", {out, in}, true}}, {}};
  if (bias) m.parameters.push_back({"bias", {out}, true});
  return m;
}

Module leaf_module(std::string class_name, std::string name) {
  return Module{std::move(class_name), std::move(name), {}, {}};
}

Count parameter_count(const Module& module) {
  Count n;
  for (const ParameterInfo& p : module.parameters)
    n += Count::product(p.shape);
  for (const Module& c : module.children)
    n += parameter_count(c);
  return n;
}

std::int64_t count_parameters(const Module& module) {
  const Count n = parameter_count(module);
  check_parameter_count(n, "count_parameters", module.class_name, {});
  return n.value();
}

void check_parameter_count(Count count, std::string_view function, std::string_view what,
                           std::vector<std::string> sizes) {
  if (count.fits()) return;
  throw Error(ErrorKind::too_large, function,
              fmt::format("{} has more than 2^63-1 parameters", what))
      .driven_by(std::move(sizes));
}

namespace {
// A malloc'd block of `bytes`: 8 bytes of header, rounded up to 16, at least 32.
std::size_t block(std::size_t bytes) {
  return bytes == 0 ? 0 : std::max<std::size_t>(32, (bytes + 8 + 15) / 16 * 16);
}
// A std::string's heap block: none while it fits the 15 characters kept inside the object.
std::size_t text_block(const std::string& s) {
  return s.capacity() > 15 ? block(s.capacity() + 1) : 0;
}

std::size_t size_t_of(Count count) {
  return count.fits() ? static_cast<std::size_t>(count.value())
                      : std::numeric_limits<std::size_t>::max();
}
}  // namespace

ModuleSize module_size(const Module& module) {
  // The node itself and room for it in the parent's list, which grows by doubling; the list's own
  // block adds only its header.
  std::size_t bytes = 2 * sizeof(Module) + text_block(module.class_name) + text_block(module.name) +
                      block(module.parameters.capacity() * sizeof(ParameterInfo)) +
                      block(module.children.capacity() * sizeof(Module)) -
                      module.children.capacity() * sizeof(Module);
  for (const ParameterInfo& p : module.parameters)
    bytes += text_block(p.name) + block(p.shape.capacity() * sizeof(std::size_t));
  ModuleSize size{Count(1), Count(bytes), Count(), Count(module.parameters.size())};
  for (const ParameterInfo& p : module.parameters)
    size.parameters += Count::product(p.shape);
  for (const Module& c : module.children)
    size = size + module_size(c);
  return size;
}

ModuleSize operator+(const ModuleSize& a, const ModuleSize& b) {
  return {a.modules + b.modules, a.bytes + b.bytes, a.parameters + b.parameters,
          a.tensors + b.tensors};
}

ModuleSize operator*(const ModuleSize& a, Count copies) {
  return {a.modules * copies, a.bytes * copies, a.parameters * copies, a.tensors * copies};
}

PlannedTensor planned_tree(std::string name, const ModuleSize& unit, std::size_t copies,
                           std::string axes) {
  const std::size_t modules = std::max<std::size_t>(size_t_of(unit.modules), 1),
                    bytes = size_t_of(unit.bytes);
  return {std::move(name), {copies, modules}, std::move(axes), bytes / modules + 1};
}

PlannedTensor planned_weights(std::string name, const ModuleSize& unit, std::size_t copies,
                              std::string axes, Held held) {
  return {std::move(name),
          {copies, size_t_of(unit.parameters)},
          std::move(axes),
          4,
          held,
          size_t_of(unit.tensors * Count(copies))};
}

MemoryPlan planned_summary(const ModuleSize& size, std::string axes) {
  return {planned_tree("the module tree, twice", size, 2, " " + axes),
          {"the summary's rows", {size_t_of(size.modules)}, std::move(axes), kSummaryRowBytes}};
}

namespace {
void collect(const Module& module, const std::string& prefix, std::vector<StateDictEntry>& out) {
  for (const ParameterInfo& p : module.parameters)
    out.push_back({prefix + p.name, p.shape});
  for (const Module& c : module.children)
    collect(c, prefix + c.name + ".", out);
}
}  // namespace

std::vector<StateDictEntry> state_dict_entries(const Module& module) {
  std::vector<StateDictEntry> out;
  collect(module, "", out);
  return out;
}

const Module& child(const Module& module, const std::string& name) {
  for (const Module& c : module.children)
    if (c.name == name) return c;
  throw Error("child", fmt::format("{} has no child '{}'", module.class_name, name));
}

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
  if (input.empty()) throw Error("linear_output", "a Linear needs an input of rank 1 or more");
  input.back() = out;
  return input;
}

}  // namespace attn
