// The module tree: every layer describes itself as the PyTorch module of the notebook it comes
// from (class names and attribute names as there). The tree is the one source of the
// state_dict keys, the parameter counts and the summaries' parameter columns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/array.hpp"
#include "base/count.hpp"

namespace attn {

struct ParameterInfo {
  std::string name;  // "weight", "bias", "gamma"
  Shape shape;
  bool trainable = true;
};

struct Module {
  std::string class_name;                 // "Linear"
  std::string name;                       // attribute in the parent: "tokeys", "3" in a ModuleList
  std::vector<ParameterInfo> parameters;  // own parameters, registration order
  std::vector<Module> children;           // registration order
};

// nn.Linear(in, out, bias): weight (out, in), bias (out).
Module linear_module(std::string name, std::size_t in, std::size_t out, bool bias);
// A module without parameters or children (GELU, Dropout).
Module leaf_module(std::string class_name, std::string name);

// sum(p.numel() for p in model.parameters()); throws Error(ErrorKind::too_large) past 2^63-1,
// where torch's int64 count would overflow.
std::int64_t count_parameters(const Module& module);
// The same sum, too large past 2^63-1 instead of throwing.
Count parameter_count(const Module& module);
// Throws Error(ErrorKind::too_large, function, "<what> has more than 2^63-1 parameters"), driven
// by `sizes`, when `count` is too large. For describe functions, which know the sizes that made
// the module.
void check_parameter_count(Count count, std::string_view function, std::string_view what,
                           std::vector<std::string> sizes);

struct StateDictEntry {
  std::string key;  // "heads.3.q.weight"
  Shape shape;
};
// model.state_dict() keys and shapes, in PyTorch's order.
std::vector<StateDictEntry> state_dict_entries(const Module& module);

// The child called `name`; throws attn::Error when there is none.
const Module& child(const Module& module, const std::string& name);

}  // namespace attn
