// The module tree: every layer describes itself as the PyTorch module of the notebook it comes
// from (class names and attribute names as there). The tree is the one source of the
// state_dict keys, the parameter counts and the summaries' parameter columns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "array.hpp"
#include "budget.hpp"
#include "count.hpp"
#include "summary.hpp"

namespace attn {

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
// (core/budget.hpp): shape (copies, modules of the unit). `axes` names both axes ("L ", "H ").
PlannedTensor planned_tree(std::string name, const ModuleSize& unit, std::size_t copies,
                           std::string axes);
// The float32 weights of `copies` modules of `unit`'s size: shape (copies, parameters of the
// unit), one object per parameter tensor. `axes` names both axes ("L D/F").
PlannedTensor planned_weights(std::string name, const ModuleSize& unit, std::size_t copies,
                              std::string axes, Held held = Held::computing);

struct StateDictEntry {
  std::string key;  // "heads.3.q.weight"
  Shape shape;
};
// model.state_dict() keys and shapes, in PyTorch's order.
std::vector<StateDictEntry> state_dict_entries(const Module& module);

// The child called `name`; throws attn::Error when there is none.
const Module& child(const Module& module, const std::string& name);

// Records module calls in forward order for a summary. `call` adds a row for `module` at the
// current depth; `enter`/`leave` bracket the calls a module makes to its children.
class Trace {
 public:
  void call(const Module& module, const Shape& input, const Shape& output);
  // A container that never runs (ModuleList): listed before its first child, without shapes.
  void container(const Module& module);
  void enter() { ++depth_; }
  void leave() { --depth_; }
  // A call made from `levels` deeper than the module's own place in the tree (seed 001's
  // ResidualConnection calling its sublayer): step_out before its rows, step_back after, so that
  // they keep their tree depth and parent and the caller's rows resume where they were.
  struct Detour {
    int depth;
    std::vector<std::size_t> open;
  };
  Detour step_out(int levels) {
    Detour saved{depth_, open_};
    depth_ -= levels;
    return saved;
  }
  void step_back(const Detour& saved) {
    depth_ = saved.depth;
    open_ = saved.open;
  }
  // Lists row `row`'s module again at its depth, without shapes, as torchinfo re-inserts the
  // hierarchy of a row whose ancestors other rows came between. `same_object`: torchinfo inserts
  // the LayerInfo of `row` itself (a container's), not a stand-in of its own.
  void relist(std::size_t row, bool same_object);
  // The row of the most recent call at the current depth, to fill in its output later.
  LayerInfo& last() { return layers_.back(); }
  std::vector<LayerInfo> layers() const { return layers_; }
  LayerInfo& row(std::size_t index) { return layers_[index]; }
  std::size_t size() const { return layers_.size(); }

 private:
  void add(LayerInfo row);
  int depth_ = 0;
  std::vector<std::size_t> open_;  // the latest row at each depth: the parents of the next rows
  std::vector<LayerInfo> layers_;
};

// What a summary (attn summary, or mult-adds from a trace) holds for each row beside the module
// tree: the trace's LayerInfo, the row's line of the table, its JSON object and state_dict keys
// (attn summary --format json of 100,000 book heads holds about 2.2 KB a row).
inline constexpr std::size_t kSummaryRowBytes = 2560;
// A summary of a model of `size` as a memory plan: its tree twice (the caller's and the trace's)
// and a row for each module; `axes` names the sizes the rows grow with ("H", "L/H").
MemoryPlan planned_summary(const ModuleSize& size, std::string axes);

// A Linear's output shape for an input: the last axis becomes `out`.
Shape linear_output(Shape input, std::size_t out);

}  // namespace attn
