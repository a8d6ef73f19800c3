// The probe of an instructor's data cases (course/data_cases.hpp): attn writes a small program for
// each exercise with such cases, one entry per function and number of arguments, e.g.
//
//     void call_0(const Arguments& a) { send_call("gelu", [&] { return attn::exercise::gelu(a[0]); }); }
//
// and links it with the student's code. `PROGRAM KEY FILE` reads the case's arguments from FILE
// (numbers, text, nested lists and nulls, in the bytes of values.hpp), converts each to the type
// of the parameter it is passed to, calls, and sends what came back (or what was thrown) on file
// descriptor 3, like any probe. The grader compares it with the case's expected value.
#pragma once

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "probe.hpp"
#include "value_tree.hpp"

namespace attn::grading::data {

// A case's argument that does not fit the parameter it is given to: the case's fault.
class CaseError : public std::runtime_error {
 public:
  explicit CaseError(const std::string& what) : std::runtime_error("attn data case: " + what) {}
};

template <class>
inline constexpr bool kUnsupported = false;

// The sizes of a nested list of numbers `depth` deep, the same at every level (a tensor's shape).
inline void list_shape(const Node& node, std::size_t depth, std::vector<std::size_t>& shape,
                       std::size_t level = 0) {
  if (level == depth) {
    if (!node.is_number()) throw CaseError("a tensor's elements must be numbers");
    return;
  }
  if (node.none || node.tag != Tag::group) {
    throw CaseError("a " + std::to_string(depth) + "-D tensor needs lists " +
                    std::to_string(depth) + " deep");
  }
  if (shape.size() == level) {
    shape.push_back(node.items.size());
  } else if (shape[level] != node.items.size()) {
    throw CaseError("a tensor's rows must all have the same length");
  }
  for (const Node& item : node.items)
    list_shape(item, depth, shape, level + 1);
}

template <class E>
void list_elements(const Node& node, std::vector<E>& out) {
  if (node.is_number()) {
    out.push_back(static_cast<E>(node.as_double()));
    return;
  }
  for (const Node& item : node.items)
    list_elements(item, out);
}

template <class T>
T convert(const Node& node, std::vector<std::shared_ptr<void>>& kept) {
  if constexpr (std::is_same_v<T, bool>) {
    if (node.none || node.tag != Tag::boolean)
      throw CaseError("a bool parameter needs true or false");
    return node.flag;
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    if (!node.is_number()) throw CaseError("a number parameter needs a number");
    if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
      if (node.tag == Tag::f32 || node.tag == Tag::f64)
        throw CaseError("an integer parameter needs a whole number");
      if constexpr (std::is_unsigned_v<T>) {
        if (node.tag == Tag::i64 && node.integer < 0)
          throw CaseError("an unsigned parameter needs a number of at least 0");
      }
      return static_cast<T>(node.tag == Tag::u64 ? static_cast<std::int64_t>(node.natural)
                                                 : node.integer);
    } else {
      return static_cast<T>(node.as_double());
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (node.none || node.tag != Tag::text) throw CaseError("a string parameter needs text");
    return node.text;
  } else if constexpr (detail::is_xtensor<T>::value) {
    std::vector<std::size_t> sizes;
    list_shape(node, T::rank, sizes);
    typename T::shape_type shape;
    for (std::size_t d = 0; d < T::rank; ++d)
      shape[d] = sizes[d];
    std::vector<typename T::value_type> elements;
    list_elements(node, elements);
    T value(shape);
    std::copy(elements.begin(), elements.end(), value.begin());
    return value;
  } else if constexpr (detail::is_vector<T>::value) {
    if (node.none || node.tag != Tag::group) throw CaseError("a vector parameter needs a list");
    T value;
    for (const Node& item : node.items)
      value.push_back(convert<typename T::value_type>(item, kept));
    return value;
  } else if constexpr (std::is_pointer_v<T>) {
    using U = std::remove_cv_t<std::remove_pointer_t<T>>;
    if (node.none) return nullptr;
    if constexpr (std::is_arithmetic_v<U>) {
      // A pointer to numbers, with their count beside it (entropy(weights, n)): the list's.
      auto values = std::make_shared<std::vector<U>>();
      list_elements(node, *values);
      kept.push_back(values);
      return values->data();
    } else {
      auto value = std::make_shared<U>(convert<U>(node, kept));
      kept.push_back(value);
      return value.get();
    }
  } else {
    static_assert(kUnsupported<T>,
                  "a data case gives numbers, bools, text, tensors, vectors of them, and pointers "
                  "to them (null for nullptr); this parameter is of another type");
  }
}

// One argument: converts to the type of the parameter it is passed to.
class Argument {
 public:
  Argument(const Node& node, std::vector<std::shared_ptr<void>>& kept) : node_(node), kept_(kept) {}
  template <class T>
  operator T() const {
    return convert<T>(node_, kept_);
  }

 private:
  const Node& node_;
  std::vector<std::shared_ptr<void>>& kept_;
};

class Arguments {
 public:
  explicit Arguments(const Node& list) : list_(list) {
    for (const Node& item : list_.items)
      arguments_.emplace_back(item, kept_);
  }
  const Argument& operator[](std::size_t i) const { return arguments_.at(i); }
  std::size_t size() const { return arguments_.size(); }

 private:
  const Node& list_;
  std::vector<std::shared_ptr<void>> kept_;
  std::vector<Argument> arguments_;
};

// Calls `f` (the student's function with the converted arguments) and sends what it returned.
template <class F>
void send_call(const char* label, F&& f) {
  try {
    probe::student_call(label, std::forward<F>(f));
  } catch (...) {
  }
}

struct Entry {
  const char* key;  // "gelu/1": the function and its number of arguments
  void (*call)(const Arguments&);
};

inline int main(int argc, char** argv, const Entry* entries, std::size_t count) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s FUNCTION/N ARGUMENTS-FILE\n", argv[0]);
    return 64;
  }
  std::ifstream in(argv[2], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Node list;
  try {
    Reader reader(bytes.data(), bytes.size());
    list = decode_node(reader);
  } catch (const DeliveryError& e) {
    std::fprintf(stderr, "cannot read the arguments: %s\n", e.what());
    return 65;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (std::string(entries[i].key) == argv[1]) {
      try {
        entries[i].call(Arguments(list));
      } catch (...) {
      }
      probe::send_end();
      std::fflush(nullptr);
      _exit(0);
    }
  }
  std::fprintf(stderr, "no function %s\n", argv[1]);
  return 66;
}

}  // namespace attn::grading::data
