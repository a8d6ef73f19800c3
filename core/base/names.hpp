// The words of an enum's values, one table per enum: each value's name looked up both ways, so that
// printing a value and reading it back (an option, a file's field) cannot disagree.
#pragma once

#include <optional>
#include <string_view>

namespace attn {

template <class Enum>
struct Named {
  Enum value;
  std::string_view name;
};

// The name of `value` in `table`, or `otherwise` when the table lacks it.
template <class Enum, std::size_t N>
constexpr std::string_view name_in(const Named<Enum> (&table)[N], Enum value,
                                   std::string_view otherwise = "?") {
  for (const Named<Enum>& entry : table)
    if (entry.value == value) return entry.name;
  return otherwise;
}

// The value called `name` in `table`, or nullopt.
template <class Enum, std::size_t N>
constexpr std::optional<Enum> value_in(const Named<Enum> (&table)[N], std::string_view name) {
  for (const Named<Enum>& entry : table)
    if (entry.name == name) return entry.value;
  return std::nullopt;
}

// The entry of a list of descriptions (each with a `name`) called `name`, or null.
template <class List>
auto named_entry(const List& list, std::string_view name) -> decltype(&*list.begin()) {
  for (const auto& entry : list)
    if (entry.name == name) return &entry;
  return nullptr;
}

}  // namespace attn
