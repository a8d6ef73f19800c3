#include "module_size.hpp"

#include <algorithm>

namespace attn {

namespace {
// A malloc'd block of `bytes`: 8 bytes of header, rounded up to 16, at least 32.
std::size_t block(std::size_t bytes) {
  return bytes == 0 ? 0 : std::max<std::size_t>(32, (bytes + 8 + 15) / 16 * 16);
}
// A std::string's heap block: none while it fits the 15 characters kept inside the object.
std::size_t text_block(const std::string& s) {
  return s.capacity() > 15 ? block(s.capacity() + 1) : 0;
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
  const std::size_t modules = std::max<std::size_t>(unit.modules.saturated(), 1),
                    bytes = unit.bytes.saturated();
  return {std::move(name), {copies, modules}, std::move(axes), bytes / modules + 1};
}

PlannedTensor planned_weights(std::string name, const ModuleSize& unit, std::size_t copies,
                              std::string axes, Held held) {
  return {std::move(name),
          {copies, unit.parameters.saturated()},
          std::move(axes),
          4,
          held,
          (unit.tensors * Count(copies)).saturated()};
}

}  // namespace attn
