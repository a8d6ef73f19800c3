// A value of any shape in the bytes of values.hpp, read without knowing its C++ type: what the
// grader reads back from a data case's probe (whatever the student's function returned), and the
// arguments it sends the probe (numbers, text, lists, and "none" for a null pointer). Every size is
// checked against the bytes left, and nesting is limited, as for any bytes the grader reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "values.hpp"

namespace attn::grading {

inline constexpr std::uint8_t kNoneTag = 9;  // an argument given as null: a null pointer

struct Node {
  Tag tag = Tag::group;
  bool none = false;          // a null argument
  double number = 0.0;        // f32, f64
  std::int64_t integer = 0;   // i64
  std::uint64_t natural = 0;  // u64
  bool flag = false;          // boolean
  std::string text;
  std::vector<std::size_t> shape;  // a tensor's sizes
  std::vector<float> data;         // and its elements, row-major
  std::vector<Node> items;         // a group's

  bool is_number() const {
    return !none && (tag == Tag::f32 || tag == Tag::f64 || tag == Tag::i64 || tag == Tag::u64);
  }
  double as_double() const {
    return tag == Tag::i64   ? static_cast<double>(integer)
           : tag == Tag::u64 ? static_cast<double>(natural)
                             : number;
  }
};

inline Node decode_node(Reader& in, int depth = 0) {
  if (depth > 32) throw DeliveryError("a value nested too deeply");
  Node node;
  const std::uint8_t tag = in.byte();
  if (tag == kNoneTag) {
    node.none = true;
    return node;
  }
  if (tag < 1 || tag > 8) throw DeliveryError("not a value");
  node.tag = static_cast<Tag>(tag);
  switch (node.tag) {
    case Tag::f32:
      node.number = in.raw<float>();
      break;
    case Tag::f64:
      node.number = in.raw<double>();
      break;
    case Tag::i64:
      node.integer = in.raw<std::int64_t>();
      break;
    case Tag::u64:
      node.natural = in.raw<std::uint64_t>();
      break;
    case Tag::boolean:
      node.flag = in.byte() != 0;
      break;
    case Tag::text: {
      const auto size = in.raw<std::uint64_t>();
      if (size > in.left()) throw DeliveryError("the text ends early");
      node.text.resize(size);
      in.copy(node.text.data(), size);
      break;
    }
    case Tag::tensor: {
      const std::uint8_t rank = in.byte();
      if (rank > 8) throw DeliveryError("a tensor of too many dimensions");
      std::uint64_t count = 1;
      for (std::uint8_t d = 0; d < rank; ++d) {
        const auto size = in.raw<std::uint64_t>();
        if (size != 0 && count > in.left() / size) throw DeliveryError("a tensor larger than sent");
        count *= size;
        node.shape.push_back(static_cast<std::size_t>(size));
      }
      if (count > in.left() / sizeof(float)) throw DeliveryError("a tensor larger than sent");
      node.data.resize(count);
      in.copy(node.data.data(), count * sizeof(float));
      break;
    }
    case Tag::group: {
      const auto size = in.raw<std::uint64_t>();
      if (size > in.left()) throw DeliveryError("a list longer than sent");
      for (std::uint64_t i = 0; i < size; ++i)
        node.items.push_back(decode_node(in, depth + 1));
      break;
    }
  }
  return node;
}

inline void encode_node(Writer& out, const Node& node) {
  if (node.none) {
    out.byte(kNoneTag);
    return;
  }
  out.byte(static_cast<std::uint8_t>(node.tag));
  switch (node.tag) {
    case Tag::f32:
      out.raw(static_cast<float>(node.number));
      break;
    case Tag::f64:
      out.raw(node.number);
      break;
    case Tag::i64:
      out.raw(node.integer);
      break;
    case Tag::u64:
      out.raw(node.natural);
      break;
    case Tag::boolean:
      out.byte(node.flag ? 1 : 0);
      break;
    case Tag::text:
      out.raw(static_cast<std::uint64_t>(node.text.size()));
      out.append(node.text.data(), node.text.size());
      break;
    case Tag::tensor:
      out.byte(static_cast<std::uint8_t>(node.shape.size()));
      for (const std::size_t size : node.shape)
        out.raw(static_cast<std::uint64_t>(size));
      out.append(node.data.data(), node.data.size() * sizeof(float));
      break;
    case Tag::group:
      out.raw(static_cast<std::uint64_t>(node.items.size()));
      for (const Node& item : node.items)
        encode_node(out, item);
      break;
  }
}

}  // namespace attn::grading
