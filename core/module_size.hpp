// What a module tree takes in memory, for the memory plans of base/budget.hpp: a model too large
// to build is measured as a part's size times its copies.
#pragma once

#include <cstddef>
#include <string>

#include "base/budget.hpp"
#include "base/count.hpp"
#include "module.hpp"

namespace attn {

// What a module tree holds and describes: its modules, the bytes they take in memory (nodes,
// names and parameter shapes, as malloc allocates them), its parameters and parameter tensors.
// The size of a tree too large to build is a part's size times its copies.
struct ModuleSize {
  Count modules, bytes, parameters, tensors;
};
ModuleSize module_size(const Module& module);
ModuleSize operator+(const ModuleSize& a, const ModuleSize& b);
ModuleSize operator*(const ModuleSize& a, Count copies);
// `copies` trees of `unit`'s size in a parent's list, as a part of a memory plan
// (core/base/budget.hpp): shape (copies, modules of the unit). `axes` names both axes ("L ", "H ").
PlannedTensor planned_tree(std::string name, const ModuleSize& unit, std::size_t copies,
                           std::string axes);
// The float32 weights of `copies` modules of `unit`'s size: shape (copies, parameters of the
// unit), one object per parameter tensor. `axes` names both axes ("L D/F").
PlannedTensor planned_weights(std::string name, const ModuleSize& unit, std::size_t copies,
                              std::string axes, Held held = Held::computing);

}  // namespace attn
