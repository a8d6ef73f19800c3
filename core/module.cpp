#include "module.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"

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
  throw Error(ErrorKind::bad_value, "child",
              fmt::format("{} has no child '{}'", module.class_name, name));
}

}  // namespace attn
