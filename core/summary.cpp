// torchinfo's summary table, byte for byte. Each part names the torchinfo function it mirrors:
// formatting.py (FormattingOptions), layer_info.py (LayerInfo), model_statistics.py
// (ModelStatistics) and torchinfo.py (summary). The rules, and the 0.1.0 "seed" format, are
// written down in reference/torchinfo-format.md.
//
// Rows arrive as torchinfo's summary_list would hold them: one per module call, in call order,
// containers that never run (ModuleList) placed just before their first child. A row's
// descendants are the rows after it with a greater depth (torchinfo's get_children_layers).
// Parameters and outputs are float32 (4 bytes an element): LayerInfo carries no dtype. Counts
// and sizes are int64, as torch's; past 2^63-1 the table is refused (Error kind too_large).
#include "summary.hpp"
#include "base/utf8.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/count.hpp"
#include "base/error.hpp"
#include "module.hpp"

namespace attn {

MemoryPlan planned_summary(const ModuleSize& size, std::string axes) {
  return {planned_tree("the module tree, twice", size, 2, " " + axes),
          {"the summary's rows", {size.modules.saturated()}, std::move(axes), kSummaryRowBytes}};
}

namespace {

constexpr std::string_view kFunction = "format_summary";
constexpr Count kFloatBytes(4);
// sys.getsizeof(tensor.storage()) minus its data on torch 1.13: get_total_memory_used.
constexpr Count kInputObjectBytes(56);

struct Column {
  std::string_view name;
  std::string_view title;
  bool in_v0_1;  // torchinfo 0.1.0 knew only five columns
};

// HEADER_TITLES, in the order torchinfo's ColumnSettings lists them.
constexpr std::array kColumns = {
    Column{"kernel_size", "Kernel Shape", true}, Column{"input_size", "Input Shape", true},
    Column{"output_size", "Output Shape", true}, Column{"num_params", "Param #", true},
    Column{"params_percent", "Param %", false},  Column{"mult_adds", "Mult-Adds", true},
    Column{"trainable", "Trainable", false},
};

// ---------------------------------------------------------------------------------------------
// Python's str() and format() for the values in the table.

// f"{text:<{width}}": left-aligned, padded with spaces to width code points, never cut.
void append_padded(std::string& out, std::string_view text, std::size_t width) {
  out += text;
  const std::size_t length = code_points(text);
  if (length < width) out.append(width - length, ' ');
}

// str(list(shape)): "[1, 5, 768]".
std::string shape_list(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Count numel(const ParameterInfo& parameter) {
  return Count::product(parameter.shape);
}

// A total the table prints; past 2^63-1, Error(too_large) with `message` ("... is more than
// 2^63-1"). Python's integers would go on; torch's int64 and attn's do not.
std::int64_t checked(Count total, const std::string& message) {
  if (!total.fits()) throw Error(ErrorKind::too_large, kFunction, message);
  return total.value();
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// ---------------------------------------------------------------------------------------------
// The tree: parents, descendants and module.named_parameters().

struct Tree {
  const std::vector<LayerInfo>& layers;
  const Module* model;                   // the module tree of row 0, when known
  std::vector<std::size_t> parent;       // index of the parent row; npos for the top rows
  std::vector<std::size_t> subtree_end;  // one past the last descendant
  std::vector<Count> num_params;         // own + descendants' (module.named_parameters())
  std::vector<Count> trainable_params;
  std::vector<Count> own_params;
  std::vector<Count> own_trainable_params;
  // leftover_params: what the row holds that the rows after it and deeper (torchinfo's
  // "children") do not show. Where rows nest as the modules do, that is its own.
  std::vector<std::int64_t> leftover;  // filled only when some row is out of place
  bool out_of_place = false;
  std::vector<std::size_t> last_listing;  // the last row listing the same LayerInfo object
  std::vector<bool> recursive;            // LayerInfo.is_recursive
};

Tree build_tree(const std::vector<LayerInfo>& layers, const Module* model) {
  const std::size_t n = layers.size();
  Tree tree{layers,
            model,
            std::vector<std::size_t>(n, std::string::npos),
            std::vector<std::size_t>(n, n),
            std::vector<Count>(n),
            std::vector<Count>(n),
            std::vector<Count>(n),
            std::vector<Count>(n),
            {},
            false,
            {},
            {}};
  std::vector<std::size_t> open;  // the chain of ancestors of the current row
  bool out_of_place = false;      // a row whose module's parent is not the row above it
  for (std::size_t i = 0; i < n; ++i) {
    while (!open.empty() && layers[open.back()].depth >= layers[i].depth)
      open.pop_back();
    if (layers[i].parent && *layers[i].parent < i) {
      tree.parent[i] = *layers[i].parent;
    } else if (!open.empty()) {
      tree.parent[i] = open.back();
    }
    out_of_place =
        out_of_place || (layers[i].parent && !open.empty() && *layers[i].parent != open.back());
    open.push_back(i);
    tree.subtree_end[i] = i + 1;
    for (std::size_t up = tree.parent[i]; up != std::string::npos; up = tree.parent[up])
      tree.subtree_end[up] = i + 1;
    for (const ParameterInfo& parameter : layers[i].parameters) {
      tree.own_params[i] += numel(parameter);
      if (parameter.trainable) tree.own_trainable_params[i] += numel(parameter);
    }
  }
  for (std::size_t i = n; i-- > 0;) {
    if (layers[i].stands_for) continue;  // counted at the row of its module
    tree.num_params[i] += tree.own_params[i];
    tree.trainable_params[i] += tree.own_trainable_params[i];
    if (tree.parent[i] != std::string::npos) {
      tree.num_params[tree.parent[i]] += tree.num_params[i];
      tree.trainable_params[tree.parent[i]] += tree.trainable_params[i];
    }
  }
  // A tied parameter adds to its row and to the ancestors up to the first that holds its owner.
  for (std::size_t i = 0; i < n; ++i) {
    for (const TiedParameter& tied : layers[i].tied) {
      out_of_place = true;
      for (std::size_t up = i; up != std::string::npos; up = tree.parent[up]) {
        if (tied.owner >= up && tied.owner < tree.subtree_end[up]) break;
        tree.num_params[up] += numel(tied.parameter);
        if (tied.parameter.trainable) tree.trainable_params[up] += numel(tied.parameter);
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!layers[i].stands_for) continue;
    out_of_place = true;
    tree.num_params[i] = tree.num_params[*layers[i].stands_for];
    tree.trainable_params[i] = tree.trainable_params[*layers[i].stands_for];
    tree.own_params[i] = Count();
    tree.own_trainable_params[i] = Count();
  }
  // Every listing of one LayerInfo object (same_as) shows its last listing's children.
  tree.last_listing.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    tree.last_listing[i] = i;
  for (std::size_t i = 0; i < n; ++i)
    if (layers[i].same_as) tree.last_listing[*layers[i].same_as] = i;
  for (std::size_t i = 0; i < n; ++i)
    if (layers[i].same_as) tree.last_listing[i] = tree.last_listing[*layers[i].same_as];
  // LayerInfo.check_recursive: a row torchinfo inserts for a module it has listed before is
  // "(recursive)", and when the row is an earlier row's LayerInfo object, so is every listing
  // of that object (the flag lives on the object).
  tree.recursive.assign(n, false);
  for (std::size_t i = 0; i < n; ++i)
    if (layers[i].stands_for) tree.recursive[layers[i].same_as.value_or(i)] = true;
  for (std::size_t i = 0; i < n; ++i)
    if (layers[i].same_as && tree.recursive[*layers[i].same_as]) tree.recursive[i] = true;
  // ModelStatistics: a row whose parameters were all counted at earlier rows is recursive.
  for (std::size_t i = 0; i < n; ++i)
    if (!layers[i].tied.empty() && tree.own_params[i].is_zero()) tree.recursive[i] = true;
  tree.out_of_place = out_of_place;
  if (out_of_place) tree.leftover.resize(n);
  auto module_of = [&](std::size_t row) { return layers[row].stands_for.value_or(row); };
  for (std::size_t i = n; out_of_place && i-- > 0;) {
    // LayerInfo._leftover: num_params less each deeper row that follows (a leaf's num_params,
    // another row's leftover); a recursive row's module is taken off once, whole, and the rows
    // below it are skipped.
    if (tree.last_listing[i] != i) continue;  // filled from its last listing below
    std::int64_t left = tree.num_params[i].value();
    std::vector<std::size_t> seen;
    std::size_t j = i + 1;
    while (j < n && layers[j].depth > layers[i].depth) {
      const std::size_t module = module_of(j);
      if (tree.recursive[j]) {
        if (std::find(seen.begin(), seen.end(), module) == seen.end()) {
          seen.push_back(module);
          left -= tree.num_params[j].value();
        }
        const int depth = layers[j].depth;
        for (++j; j < n && layers[j].depth > depth; ++j) {
        }
        continue;
      }
      seen.push_back(module);
      left -= layers[j].is_leaf ? tree.num_params[j].value() : tree.leftover[tree.last_listing[j]];
      ++j;
    }
    tree.leftover[i] = left;
  }
  for (std::size_t i = 0; out_of_place && i < n; ++i)
    tree.leftover[i] = tree.leftover[tree.last_listing[i]];
  return tree;
}

struct NamedParameter {
  std::string name;  // "weight" for the row's own, "q.weight" for a child's
  const ParameterInfo* parameter;
};

// Whether row d is in row's subtree (rows come after their parents).
bool descends(const Tree& tree, std::size_t d, std::size_t row) {
  for (std::size_t up = tree.parent[d]; up != std::string::npos && up >= row; up = tree.parent[up])
    if (up == row) return true;
  return false;
}

// The module of `row` in the model's tree, found by the attribute names on the way down; null
// when the rows and the tree disagree.
const Module* module_of_row(const Tree& tree, std::size_t row) {
  if (tree.model == nullptr) return nullptr;
  std::vector<const std::string*> path;
  for (std::size_t up = row; tree.parent[up] != std::string::npos; up = tree.parent[up])
    path.push_back(&tree.layers[up].var_name);
  if (tree.layers[row].depth != static_cast<int>(path.size())) return nullptr;
  const Module* module = tree.model;
  for (auto name = path.rbegin(); name != path.rend(); ++name) {
    const auto found = std::find_if(module->children.begin(), module->children.end(),
                                    [&](const Module& c) { return c.name == **name; });
    if (found == module->children.end()) return nullptr;
    module = &*found;
  }
  return module->class_name == tree.layers[row].class_name ? module : nullptr;
}

void add_named_parameters(const Module& module, const std::string& prefix,
                          std::vector<NamedParameter>& result) {
  for (const ParameterInfo& parameter : module.parameters)
    result.push_back({prefix + parameter.name, &parameter});
  for (const Module& child : module.children)
    add_named_parameters(child, prefix + child.name + ".", result);
}

// module.named_parameters(): the row's own first, then each descendant's, dotted with the
// attribute names on the way down, in registration order when the module tree is known (else in
// the order the rows ran). A row torchinfo lists again has its module's parameters.
std::vector<NamedParameter> named_parameters(const Tree& tree, std::size_t row) {
  row = tree.layers[row].stands_for.value_or(row);
  std::vector<NamedParameter> result;
  const Module* module = module_of_row(tree, row);
  if (module != nullptr) {
    add_named_parameters(*module, "", result);
  } else {
    for (const ParameterInfo& parameter : tree.layers[row].parameters)
      result.push_back({parameter.name, &parameter});
  }
  for (const TiedParameter& tied : tree.layers[row].tied)  // after its own, as it registers them
    result.push_back({tied.parameter.name, &tied.parameter});
  if (module != nullptr) return result;
  for (std::size_t d = row + 1; d < tree.subtree_end[row]; ++d) {
    if (!descends(tree, d, row)) continue;
    std::string prefix;
    for (std::size_t up = d; up != row; up = tree.parent[up])
      prefix = tree.layers[up].var_name + "." + prefix;
    for (const ParameterInfo& parameter : tree.layers[d].parameters)
      result.push_back({prefix + parameter.name, &parameter});
  }
  return result;
}

// LayerInfo.calculate_macs (current): full-tensor multiply-adds, batch included. Container rows
// get a value too (their dotted names count as RNN-style weights); it only decides "--".
Count current_macs(const Tree& tree, std::size_t row) {
  const LayerInfo& layer = tree.layers[row];
  if (!layer.executed) return Count(0);  // computed in the forward hook, which never ran
  const Shape& out = layer.output_shape;
  Count macs;
  for (const NamedParameter& named : named_parameters(tree, row)) {
    const Count count = numel(*named.parameter);
    if (named.name == "weight" || named.name == "bias") {
      if (contains(layer.class_name, "Conv")) {
        macs += count * Count::product(out, 0, 1) * Count::product(out, 2, out.size());  // ignore C
      } else if (contains(layer.class_name, "Linear")) {
        macs += count * Count::product(out, 0, out.empty() ? 0 : out.size() - 1);
      } else {
        macs += Count::product(out, 0, 1) * count;  // output_size[0] * params
      }
    } else if (contains(named.name, "weight") || contains(named.name, "bias")) {
      macs += Count::product(out, 0, 2) * count;  // RNN weights such as weight_ih_l0
    }
  }
  return macs;
}

// LayerInfo.calculate_macs in 0.1.0: only parameters named "weight", bias ignored.
Count v0_1_macs(const Tree& tree, std::size_t row) {
  const LayerInfo& layer = tree.layers[row];
  if (!layer.executed) return Count(0);
  const Shape& out = layer.output_shape;
  Count macs;
  for (const NamedParameter& named : named_parameters(tree, row)) {
    const Count count = numel(*named.parameter);
    if (named.name == "weight") {
      macs += contains(layer.class_name, "Conv")
                  ? count * Count::product(out, 0, 1) * Count::product(out, 2, out.size())
                  : Count::product(out, 0, 1) * count;
    } else if (contains(named.name, "weight")) {
      macs += Count::product(out, 0, 2) * count;
    }
  }
  return macs;
}

// ---------------------------------------------------------------------------------------------
// FormattingOptions: widths, tree prefixes, one row.

struct Table {
  std::vector<std::string_view> columns;  // col_names
  std::size_t col_width = 25;
  std::size_t name_width = 40;  // layer_name_width
  bool ascii_tree = false;      // 0.1.0 drew "|    " where the current format draws "│    "
};

using Values = std::array<std::string, kColumns.size()>;  // by kColumns index; "" if absent

std::size_t column_index(std::string_view name) {
  for (std::size_t i = 0; i < kColumns.size(); ++i)
    if (kColumns[i].name == name) return i;
  return kColumns.size();
}

// FormattingOptions.get_start_str.
std::string start_str(int depth, bool ascii_tree) {
  if (depth == 1) return "├─";
  std::string prefix;
  for (int d = 1; d < depth; ++d)
    prefix += ascii_tree ? "|    " : "│    ";
  if (depth == 0 && !ascii_tree) return prefix;
  return prefix + "└─";  // 0.1.0 gave a depth-0 row "└─" too ("|    " * -1 is "")
}

// FormattingOptions.set_layer_name_width: the longest name plus 5 per depth level plus one,
// rounded up to a multiple of 5 once it reaches 40.
std::size_t layer_name_width(const std::vector<std::pair<std::string, int>>& names) {
  std::size_t longest = 0;
  for (const auto& [name, depth] : names)
    longest = std::max(longest, code_points(name) + static_cast<std::size_t>(depth) * 5 + 1);
  return longest >= 40 ? (longest + 4) / 5 * 5 : 40;
}

// FormattingOptions.format_row: every cell padded and followed by a space, then rstrip.
std::string format_row(const Table& table, std::string_view name, const Values& values) {
  std::string line;
  append_padded(line, name, table.name_width);
  line += ' ';
  for (const std::string_view column : table.columns) {
    append_padded(line, values[column_index(column)], table.col_width);
    line += ' ';
  }
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

std::string header_row(const Table& table) {
  Values titles;
  for (std::size_t i = 0; i < kColumns.size(); ++i)
    titles[i] = kColumns[i].title;
  return format_row(table, "Layer (type:depth-idx)", titles);
}

std::string divider(const Table& table) {
  return std::string(table.name_width + table.columns.size() * table.col_width, '=') + "\n";
}

// ---------------------------------------------------------------------------------------------
// ModelStatistics.format_output_num and to_readable (current). Parameter counts use Units.NONE
// ("Total params: 7,087,872"); mult-adds and sizes use Units.AUTO: k/M/G/T steps of 1e3, a whole
// value without decimals, otherwise two, "B" appended for bytes, nothing under 1,000.
enum class Units { none, automatic, automatic_bytes };

std::string format_output_num(std::int64_t number, Units units) {
  struct Unit {
    double factor;
    std::string_view name;
  };
  constexpr std::array kUnits = {Unit{1e12, "T"}, Unit{1e9, "G"}, Unit{1e6, "M"}, Unit{1e3, "k"}};
  const auto value = static_cast<double>(number);
  for (const Unit& unit : kUnits) {
    if (units == Units::none || value < unit.factor) continue;
    const double converted = value / unit.factor;
    const std::string digits = converted == std::floor(converted)
                                   ? fmt::format("{:.0f}", converted)
                                   : fmt::format("{:.2f}", converted);
    return fmt::format(" ({}{}): {}", unit.name, units == Units::automatic_bytes ? "B" : "",
                       group_thousands(digits));
  }
  return ": " + with_commas(number);
}

void check_options(const std::vector<LayerInfo>& layers, const SummaryOptions& options) {
  const bool v0_1 = options.format == TorchinfoFormat::v0_1;
  for (const std::string& name : options.col_names) {
    const std::size_t index = column_index(name);
    if (index < kColumns.size() && (!v0_1 || kColumns[index].in_v0_1)) continue;
    std::vector<std::string_view> valid;
    for (const Column& column : kColumns)
      if (!v0_1 || column.in_v0_1) valid.push_back(column.name);
    throw Error(ErrorKind::bad_value, kFunction,
                fmt::format("unknown column \"{}\"{}; valid columns: {}", printable(name),
                            v0_1 ? " for torchinfo 0.1.0" : "", fmt::join(valid, ", ")))
        .about("col_names");
  }
  if (options.col_width < 1)
    throw Error(ErrorKind::bad_value, kFunction,
                fmt::format("col_width={} must be at least 1", options.col_width))
        .about("col_width");
  if (options.depth < 0)
    throw Error(ErrorKind::bad_value, kFunction,
                fmt::format("depth={} must be 0 or more", options.depth))
        .about("depth");
  if (options.verbose < 0 || options.verbose > 2)
    throw Error(ErrorKind::bad_value, kFunction,
                fmt::format("verbose={} must be 0 (quiet), 1 (table) or 2 (also "
                            "parameters)",
                            options.verbose))
        .about("verbose");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const int previous = i == 0 ? -1 : layers[i - 1].depth;
    if (layers[i].depth < 0 || layers[i].depth > previous + 1 || (i > 0 && layers[i].depth == 0))
      throw Error(ErrorKind::bad_value, kFunction,
                  fmt::format("layer {} ({}) has depth {} after depth {}: the rows "
                              "must be one tree, the model first at depth 0",
                              i, layers[i].class_name, layers[i].depth, previous));
  }
}

Table make_table(const SummaryOptions& options) {
  Table table;
  table.columns.assign(options.col_names.begin(), options.col_names.end());
  table.col_width = static_cast<std::size_t>(options.col_width);
  table.ascii_tree = options.format == TorchinfoFormat::v0_1;
  return table;
}

// ---------------------------------------------------------------------------------------------
// ModelStatistics' totals. Each is checked before anything is printed: every count in a row is
// a part of one of them, so it fits too.

struct Totals {
  Count params, trainable_params, mult_adds;
  Count input_bytes, output_bytes, param_bytes;  // the size lines, without the estimated total
};

struct CheckedTotals {
  std::int64_t params, trainable_params, mult_adds;
  std::int64_t input_bytes, output_bytes, param_bytes, total_bytes;
};

// Throws Error(too_large) naming the first total past 2^63-1. The size lines are checked only
// when there are inputs, which is when they are printed.
CheckedTotals check_totals(const Tree& tree, const std::vector<SummaryInput>& inputs,
                           const Totals& t) {
  const std::string model = tree.layers.empty() ? "the model" : tree.layers.front().class_name;
  std::vector<std::string> shapes;
  for (const SummaryInput& input : inputs)
    shapes.push_back(shape_string(input.shape));
  const std::string on = fmt::format("{}", fmt::join(shapes, " and "));
  // Every row's parameters are part of the model's, which 0.1.0's total may not all count.
  Count all_params;
  for (const Count& own : tree.own_params)
    all_params += own;
  checked(all_params, fmt::format("{} has more than 2^63-1 parameters", model));
  CheckedTotals c{};
  c.params = t.params.value();                      // at most all_params
  c.trainable_params = t.trainable_params.value();  // at most params
  c.mult_adds = checked(t.mult_adds, fmt::format("{} on {} makes more than 2^63-1 mult-adds", model,
                                                 shapes.empty() ? "its input" : on));
  if (inputs.empty()) return c;
  c.input_bytes = checked(t.input_bytes, fmt::format("the input {} is more than 2^63-1 bytes", on));
  c.output_bytes =
      checked(t.output_bytes,
              fmt::format("{}'s forward/backward pass on {} is more than 2^63-1 bytes", model, on));
  c.param_bytes =
      checked(t.param_bytes, fmt::format("{}'s parameters are more than 2^63-1 bytes", model));
  c.total_bytes =
      checked(t.input_bytes + t.output_bytes + t.param_bytes,
              fmt::format("{}'s estimated total size on {} is more than 2^63-1 bytes", model, on));
  return c;
}

// ---------------------------------------------------------------------------------------------
// Current torchinfo (1.8.0 and main as of 2026).

// FormattingOptions.layer_info_to_row (current): the cells of one row, by kColumns index.
// Its counts are parts of the checked totals (format_summary), so they fit.
Values current_row_values(const Tree& tree, std::size_t i, bool reached_max_depth,
                          const std::vector<Count>& macs, std::int64_t total_params) {
  const LayerInfo& layer = tree.layers[i];
  const bool whole = reached_max_depth || layer.is_leaf;
  const std::int64_t num_params = tree.num_params[i].value();
  const std::int64_t trainable_params = tree.trainable_params[i].value();
  const std::int64_t leftover = tree.out_of_place ? tree.leftover[i] : tree.own_params[i].value();
  Values values;
  auto set = [&](std::string_view column, std::string value) {
    values[column_index(column)] = std::move(value);
  };
  // FormattingOptions.str_: empty or zero prints "--".
  set("input_size",
      layer.executed && !layer.input_shape.empty() ? shape_list(layer.input_shape) : "--");
  set("output_size",
      layer.executed && !layer.output_shape.empty() ? shape_list(layer.output_shape) : "--");
  // get_kernel_size reads module.kernel_size, which only conv and pool layers have; a conv's
  // is its weight's trailing dimensions. Pools hold no weight, so they print "--" here.
  std::string kernel = "--";
  if (contains(layer.class_name, "Conv"))
    for (const ParameterInfo& parameter : layer.parameters)
      if (parameter.name == "weight" && parameter.shape.size() >= 3)
        kernel = shape_list(Shape(parameter.shape.begin() + 2, parameter.shape.end()));
  set("kernel_size", kernel);
  // num_params_to_str
  std::string params = "--";
  if (num_params > 0) {
    if (tree.recursive[i]) {
      params = "(recursive)";
    } else if (whole) {
      params = with_commas(num_params);
      if (trainable_params == 0) params = "(" + params + ")";
    } else if (leftover > 0) {
      params = with_commas(leftover);
    }
  }
  set("num_params", params);
  // params_percent: right-aligned in 7, "     --" for nothing.
  const std::int64_t shown = whole ? num_params : leftover;
  set("params_percent",
      total_params == 0   ? "     --"
      : tree.recursive[i] ? "(recursive)"
      : shown == 0
          ? "     --"
          : fmt::format("{:>7}",
                        fmt::format("{:.2f}%", static_cast<double>(shown) /
                                                   static_cast<double>(total_params) * 100.0)));
  // macs_to_str: a container at the maximum depth sums its leaves.
  std::string mult_adds = "--";
  if (!macs[i].is_zero() && layer.is_leaf) {
    mult_adds = with_commas(macs[i].value());
  } else if (!macs[i].is_zero() && reached_max_depth) {
    Count sum;
    for (std::size_t d = i + 1; d < tree.subtree_end[i]; ++d)
      if (tree.layers[d].is_leaf && descends(tree, d, i)) sum += macs[d];
    mult_adds = with_commas(sum.value());
  }
  set("mult_adds", mult_adds);
  // LayerInfo.trainable
  set("trainable", num_params == 0                  ? "--"
                   : trainable_params == 0          ? "False"
                   : trainable_params == num_params ? "True"
                                                    : "Partial");
  return values;
}

// layers_to_str and ModelStatistics (current).

std::string format_current(const Tree& tree, const std::vector<SummaryInput>& inputs,
                           const SummaryOptions& options) {
  const std::vector<LayerInfo>& layers = tree.layers;
  const std::size_t n = layers.size();
  Table table = make_table(options);

  // set_children_layers: a running index per depth over the whole list.
  std::vector<std::string> names(n);
  std::vector<std::pair<std::string, int>> widths;
  std::vector<int> counters, indices(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int depth = layers[i].depth;
    if (counters.size() <= static_cast<std::size_t>(depth)) counters.resize(depth + 1, 0);
    indices[i] = ++counters[depth];
  }
  for (std::size_t i = 0; i < n; ++i) {
    const int depth = layers[i].depth;
    // One LayerInfo listed several times shows the index its last listing set.
    const int index = indices[tree.last_listing[i]];
    names[i] = depth == 0 ? layers[i].class_name
                          : fmt::format("{}: {}-{}", layers[i].class_name, depth, index);
    widths.emplace_back(names[i], depth);
  }
  table.name_width = layer_name_width(widths);

  std::vector<Count> macs(n);
  for (std::size_t i = 0; i < n; ++i)
    macs[i] = current_macs(tree, i);

  // ModelStatistics.__init__: every parameter once (own counts of every row); mult-adds and
  // activations of the leaves; activations only of leaves that hold parameters.
  Totals totals;
  for (std::size_t i = 0; i < n; ++i) {
    totals.params += tree.own_params[i];
    totals.trainable_params += tree.own_trainable_params[i];
    totals.param_bytes += tree.own_params[i] * kFloatBytes;
    if (!layers[i].is_leaf) continue;
    totals.mult_adds += macs[i];
    if (!tree.num_params[i].is_zero() && layers[i].executed)
      totals.output_bytes +=
          Count(2) * Count::product(layers[i].output_shape) * kFloatBytes;  // x2 for gradients
  }
  for (const SummaryInput& input : inputs)
    totals.input_bytes +=
        Count::product(input.shape) * Count(input.element_size) + kInputObjectBytes;
  const CheckedTotals total = check_totals(tree, inputs, totals);

  std::string rows;
  for (std::size_t i = 0; i < n; ++i) {
    const LayerInfo& layer = layers[i];
    if (layer.depth > options.depth) continue;
    const bool reached_max_depth = layer.depth == options.depth;
    const Values values = current_row_values(tree, i, reached_max_depth, macs, total.params);
    rows += format_row(table, start_str(layer.depth, false) + names[i], values);

    // verbose=2, from calculate_num_params: the top row lists only its own parameters.
    if (options.verbose == 2) {
      std::vector<NamedParameter> shown;
      for (NamedParameter& named : named_parameters(tree, i))
        if (layer.depth > 0 || !contains(named.name, ".")) shown.push_back(std::move(named));
      for (std::size_t k = 0; k < shown.size(); ++k) {
        Shape kernel_shape = shown[k].parameter->shape;
        if (shown[k].name == "weight" && kernel_shape.size() > 1)
          std::swap(kernel_shape[0], kernel_shape[1]);  // [in, out, k, k]
        Values inner;
        inner[column_index("kernel_size")] = shape_list(kernel_shape);
        inner[column_index("num_params")] =
            (k + 1 == shown.size() ? "└─" : "├─") + with_commas(numel(*shown[k].parameter).value());
        rows += format_row(table, start_str(layer.depth + 1, false) + shown[k].name, inner);
      }
    }
  }

  const std::string line = divider(table);
  std::string out = line + header_row(table) + line + rows + line;
  out += "Total params" + format_output_num(total.params, Units::none) + "\n";
  out += "Trainable params" + format_output_num(total.trainable_params, Units::none) + "\n";
  out += "Non-trainable params" +
         format_output_num(total.params - total.trainable_params, Units::none) + "\n";
  if (!inputs.empty()) {
    out += "Total mult-adds" + format_output_num(total.mult_adds, Units::automatic) + "\n" + line;
    out += "Input size" + format_output_num(total.input_bytes, Units::automatic_bytes) + "\n";
    out += "Forward/backward pass size" +
           format_output_num(total.output_bytes, Units::automatic_bytes) + "\n";
    out += "Params size" + format_output_num(total.param_bytes, Units::automatic_bytes) + "\n";
    out += "Estimated Total Size" + format_output_num(total.total_bytes, Units::automatic_bytes) +
           "\n";
  }
  return out + line;
}

// ---------------------------------------------------------------------------------------------
// torchinfo 0.1.0, the layout of seed 004's tables.

std::string format_v0_1(const Tree& tree, const std::vector<SummaryInput>& inputs,
                        const SummaryOptions& options) {
  const std::vector<LayerInfo>& layers = tree.layers;
  const std::size_t n = layers.size();
  Table table = make_table(options);

  // apply_hooks: the model itself is hooked only when it has no children; hooks go down to
  // depth + 1; a container that never runs is not in summary_list and gets no index.
  std::vector<bool> hooked(n, false);
  std::vector<std::string> names(n);
  std::vector<std::pair<std::string, int>> widths;
  std::vector<int> counters;
  for (std::size_t i = 0; i < n; ++i) {
    const LayerInfo& layer = layers[i];
    const bool listed = layer.depth > 0 || layer.is_leaf;
    hooked[i] = listed && layer.executed && layer.depth <= options.depth + 1;
    if (!hooked[i]) {
      names[i] = fmt::format("{}: {}", layer.class_name, layer.depth);
      continue;
    }
    if (counters.size() <= static_cast<std::size_t>(layer.depth))
      counters.resize(layer.depth + 1, 0);
    names[i] = fmt::format("{}: {}-{}", layer.class_name, layer.depth, ++counters[layer.depth]);
    widths.emplace_back(names[i], layer.depth);
  }
  table.name_width = layer_name_width(widths);

  std::vector<Count> macs(n);
  for (std::size_t i = 0; i < n; ++i)
    macs[i] = v0_1_macs(tree, i);

  // ModelStatistics.__init__ (0.1.0): parameters of the rows at the maximum depth and of the
  // leaves above it; mult-adds of every hooked row; activations of leaves with parameters. The
  // sizes are element counts, as float32 whatever the dtype; to_bytes multiplies by 4.
  Totals totals;
  for (std::size_t i = 0; i < n; ++i) {
    if (!hooked[i]) continue;
    const LayerInfo& layer = layers[i];
    totals.mult_adds += macs[i];
    if (layer.depth == options.depth || (layer.is_leaf && layer.depth < options.depth)) {
      totals.params += tree.num_params[i];
      if (tree.trainable_params[i] == tree.num_params[i])
        totals.trainable_params += tree.num_params[i];
    }
    if (!tree.num_params[i].is_zero() && layer.is_leaf)
      totals.output_bytes +=
          Count(2) * Count::product(layer.output_shape) * kFloatBytes;  // x2 for gradients
  }
  for (const SummaryInput& input : inputs)
    totals.input_bytes += Count::product(input.shape) * kFloatBytes;
  totals.param_bytes = totals.params * kFloatBytes;
  const CheckedTotals total = check_totals(tree, inputs, totals);

  std::string rows;
  for (std::size_t i = 0; i < n; ++i) {
    const LayerInfo& layer = layers[i];
    if (layer.depth > options.depth || (layer.depth == 0 && !layer.is_leaf)) continue;
    // A container that never ran is drawn as hierarchy, with reached_max_depth=False.
    const bool reached_max_depth = hooked[i] && layer.depth == options.depth;
    const bool whole = reached_max_depth || layer.is_leaf;
    Values values;
    values[column_index("input_size")] = shape_list(layer.input_shape);
    values[column_index("output_size")] = shape_list(layer.output_shape);
    // calculate_num_params: the kernel shape is the weight's, first two dimensions swapped.
    std::string kernel = "--";
    for (const ParameterInfo& parameter : layer.parameters) {
      if (parameter.name != "weight") continue;
      Shape shape = parameter.shape;
      if (shape.size() > 1) std::swap(shape[0], shape[1]);
      kernel = shape_list(shape);
    }
    values[column_index("kernel_size")] = kernel;
    std::string params = "--";
    std::string mult_adds = "--";
    if (!tree.num_params[i].is_zero() && whole) {
      params = with_commas(tree.num_params[i].value());
      if (!(tree.trainable_params[i] == tree.num_params[i])) params = "(" + params + ")";
      mult_adds = with_commas(macs[i].value());
    }
    values[column_index("num_params")] = params;
    values[column_index("mult_adds")] = mult_adds;
    rows += format_row(table, start_str(layer.depth, true) + names[i], values);

    // verbose=2 lists only RNN-style weights ("weight_ih_l0"), never a plain "weight".
    if (options.verbose == 2) {
      for (const NamedParameter& named : named_parameters(tree, i)) {
        if (named.name == "weight" || !contains(named.name, "weight")) continue;
        Values inner;
        inner[column_index("kernel_size")] = shape_list(named.parameter->shape);
        rows += format_row(table, start_str(layer.depth + 1, true) + named.name, inner);
      }
    }
  }

  const std::string line = divider(table);
  std::string out = line + header_row(table) + line + rows + line;
  out += fmt::format("Total params: {}\n", with_commas(total.params));
  out += fmt::format("Trainable params: {}\n", with_commas(total.trainable_params));
  out +=
      fmt::format("Non-trainable params: {}\n", with_commas(total.params - total.trainable_params));
  if (!inputs.empty()) {
    const auto mult_adds = static_cast<double>(total.mult_adds);
    const char* unit = mult_adds >= 1e12 ? "T" : mult_adds >= 1e9 ? "G" : "M";
    const double scale = mult_adds >= 1e12 ? 1e12 : mult_adds >= 1e9 ? 1e9 : 1e6;
    // to_bytes: `num * 4 / 1e6`, megabytes of 10^6 bytes (not 1024**2, which torchinfo dropped
    // before 0.1.0): the int product turned into a double, then one division.
    auto megabytes = [](std::int64_t bytes) { return static_cast<double>(bytes) / 1e6; };
    out += fmt::format("Total mult-adds ({}): {:.2f}\n", unit, mult_adds / scale) + line;
    out += fmt::format("Input size (MB): {:.2f}\n", megabytes(total.input_bytes));
    out += fmt::format("Forward/backward pass size (MB): {:.2f}\n", megabytes(total.output_bytes));
    out += fmt::format("Params size (MB): {:.2f}\n", megabytes(total.param_bytes));
    out += fmt::format("Estimated Total Size (MB): {:.2f}\n", megabytes(total.total_bytes));
  }
  return out + line;
}

std::string summary_of(const Module* model, const std::vector<LayerInfo>& layers,
                       const std::vector<SummaryInput>& inputs, const SummaryOptions& options) {
  check_options(layers, options);
  if (options.verbose == 0) return "";  // Verbosity.QUIET prints nothing
  const Tree tree = build_tree(layers, model);
  return options.format == TorchinfoFormat::v0_1 ? format_v0_1(tree, inputs, options)
                                                 : format_current(tree, inputs, options);
}

}  // namespace

std::string format_summary(const std::vector<LayerInfo>& layers,
                           const std::vector<SummaryInput>& inputs, const SummaryOptions& options) {
  return summary_of(nullptr, layers, inputs, options);
}

std::string format_summary(const Module& model, const std::vector<LayerInfo>& layers,
                           const std::vector<SummaryInput>& inputs, const SummaryOptions& options) {
  return summary_of(&model, layers, inputs, options);
}

}  // namespace attn
