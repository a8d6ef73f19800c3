// A LessonRun as one JSON document: the lesson, its settings, its listings (lesson 00's tokens
// and ids), every step with its shape, dtype and values, the checks, the tables and the parameter
// count.
#include "json.hpp"

#include <cmath>
#include <cstdlib>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attn::render {

using lessons::Check;
using lessons::LessonRun;
using lessons::Step;
using lessons::Table;

namespace {
// Shortest decimal that reads back as the same float (so 0.1f prints as 0.1, not
// 0.10000000149011612); NaN and infinities become the strings "NaN", "Infinity", "-Infinity".
nlohmann::ordered_json json_number(double value, Dtype dtype) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (dtype == Dtype::float32)
    return std::strtod(fmt::format("{}", static_cast<float>(value)).c_str(), nullptr);
  return value;
}

nlohmann::ordered_json json_values(const Array& a, std::size_t axis, std::size_t& flat) {
  if (axis == a.rank()) {
    const std::size_t i = flat++;
    if (a.dtype == Dtype::boolean) return a.integer(i) != 0;
    if (!is_floating(a.dtype)) return a.integer(i);
    return json_number(a.real(i), a.dtype);
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < a.shape[axis]; ++k)
    list.push_back(json_values(a, axis + 1, flat));
  return list;
}

// A setting as a JSON number when it is one, else as a string.
nlohmann::ordered_json json_setting(const std::string& value) {
  char* end = nullptr;
  const long long integer = std::strtoll(value.c_str(), &end, 10);
  if (!value.empty() && *end == '\0') return integer;
  const double real = std::strtod(value.c_str(), &end);
  if (!value.empty() && *end == '\0') return real;
  return value;
}
}  // namespace

std::string render_json(const LessonRun& run) {
  nlohmann::ordered_json doc;
  doc["lesson"] = run.lesson();
  doc["settings"] = nlohmann::ordered_json::object();
  for (const auto& [name, value] : run.settings())
    doc["settings"][name] = json_setting(value);
  for (const auto& listing : run.listings()) {
    const std::string& name = listing.first;  // a structured binding cannot be captured (clang 14)
    std::visit([&](const auto& list) { doc[name] = list; }, listing.second);
  }
  doc["steps"] = nlohmann::ordered_json::array();
  doc["checks"] = nlohmann::ordered_json::array();
  doc["tables"] = nlohmann::ordered_json::array();
  for (const auto& item : run.items()) {
    if (const auto* step = std::get_if<Step>(&item)) {
      std::size_t flat = 0;
      doc["steps"].push_back({{"name", step->name},
                              {"title", step->title},
                              {"shape", step->value.shape},
                              {"dtype", std::string(dtype_name(step->value.dtype))},
                              {"values", json_values(step->value, 0, flat)}});
    } else if (const auto* check = std::get_if<Check>(&item)) {
      doc["checks"].push_back(
          {{"name", check->name}, {"passed", check->passed}, {"detail", check->detail}});
    } else if (const auto* table = std::get_if<Table>(&item)) {
      std::vector<std::vector<std::string>> rows = table->rows;
      for (auto& row : rows)
        for (std::string& cell : row)
          cell = lessons::without_highlights(std::move(cell));
      doc["tables"].push_back({{"title", table->title}, {"header", table->header}, {"rows", rows}});
    } else if (const auto* curve = std::get_if<lessons::Curve>(&item)) {
      if (!doc.contains("curves")) doc["curves"] = nlohmann::ordered_json::array();
      doc["curves"].push_back({{"title", curve->title}, {"values", curve->values}});
    }
  }
  doc["parameters"] = run.parameters;
  return doc.dump(2) + "\n";
}

}  // namespace attn::render
