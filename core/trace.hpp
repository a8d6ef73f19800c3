// Module calls in forward order, as torchinfo's hooks record them: one LayerInfo per call, the
// rows of `attn summary` (summary.hpp) and of mult-add counts. Each layer traces its own calls
// (trace_layer_norm, trace_feed_forward, ...) on its describe() tree (module.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "module.hpp"

namespace attn {

// A parameter a module holds that is another module's (weight tying: BERT's MLM decoder holds the
// word table and its head's bias).
struct TiedParameter {
  ParameterInfo parameter;  // named as this module names it
  std::size_t owner = 0;    // the row of the module whose parameter it is
};

struct LayerInfo {
  std::string class_name;  // "Linear"
  std::string var_name;    // attribute name in the parent: "tokeys", "0" inside a ModuleList
  int depth = 0;           // 0 for the model itself
  bool executed = true;    // false for containers that never run (ModuleList): shapes print "--"
  Shape input_shape;       // of the first input
  Shape output_shape;
  std::vector<ParameterInfo> parameters;  // the module's own parameters, registration order
  bool is_leaf = true;                    // no child modules
  // The row of the module this one belongs to in the module tree, when a Trace knows it: not
  // always the nearest row above one level up, since a module may be called from outside its
  // parent (seed 001's ResidualConnection calls the attention through a lambda).
  std::optional<std::size_t> parent;
  // torchinfo lists a module's hierarchy again when the rows of another module came between
  // (add_missing_container_layers). Such a row stands for the module of an earlier row (its
  // parameters are that row's; it adds none to its parents), and when torchinfo inserts the same
  // LayerInfo object again it is the same_as an earlier row: every listing of one object shows
  // the index and the parameters of its last.
  std::optional<std::size_t> stands_for, same_as;
  // Parameters of an earlier row's module that this one holds too. torchinfo counts them in this
  // row and in each ancestor that does not hold their owner, and a row holding nothing else is
  // "(recursive)"; the totals count them once, at the owner.
  std::vector<TiedParameter> tied;
};

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

// A Linear's output shape for an input: the last axis becomes `out`.
Shape linear_output(Shape input, std::size_t out);

}  // namespace attn
