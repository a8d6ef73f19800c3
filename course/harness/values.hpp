// What a student's code returned, as bytes: the test program that runs the student's code (the
// probe) writes each value here, and the program that decides pass or fail (the check) reads it
// back. The check trusts nothing in these bytes: every size is checked against what is left, and
// a value of the wrong kind or shape is a DeliveryError, which fails the test.
//
// A value is a tagged tree: numbers, float tensors, and groups (a struct's fields in order, or a
// vector's elements). Structs need no declaration: their fields are found by structured binding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

namespace attn::grading {

// The bytes did not hold the value the test asked for.
class DeliveryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Tag : std::uint8_t { f32 = 1, f64, i64, u64, boolean, tensor, group, text };

class Writer {
 public:
  void byte(std::uint8_t b) { bytes_.push_back(static_cast<char>(b)); }
  template <class T>
  void raw(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char* p = reinterpret_cast<const char*>(&v);
    bytes_.append(p, sizeof v);
  }
  void append(const void* data, std::size_t size) {
    if (size == 0) return;  // an empty tensor's data() may be null
    bytes_.append(static_cast<const char*>(data), size);
  }
  const std::string& bytes() const { return bytes_; }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  Reader(const char* data, std::size_t size) : data_(data), size_(size) {}
  std::size_t left() const { return size_ - at_; }
  std::uint8_t byte() {
    need(1);
    return static_cast<std::uint8_t>(data_[at_++]);
  }
  template <class T>
  T raw() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  void copy(void* out, std::size_t size) {
    need(size);
    if (size == 0) return;  // an empty tensor's data() may be null, and memcpy may not take it
    std::memcpy(out, data_ + at_, size);
    at_ += size;
  }
  void expect(Tag tag, const char* what) {
    const std::uint8_t got = byte();
    if (got != static_cast<std::uint8_t>(tag)) {
      throw DeliveryError(std::string("expected ") + what + ", got a value of another kind");
    }
  }

 private:
  void need(std::size_t n) const {
    if (n > left()) throw DeliveryError("the value ends early");
  }
  const char* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

namespace detail {

template <class T>
struct is_xtensor : std::false_type {};
template <class E, std::size_t N, xt::layout_type L, class Tag>
struct is_xtensor<xt::xtensor_container<xt::uvector<E>, N, L, Tag>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

// Any type at all, for counting a struct's fields by brace initialisation.
struct AnyField {
  template <class T>
  operator T() const;
};
template <class T, std::size_t... I>
constexpr bool braces_take(std::index_sequence<I...>) {
  return requires {
    T{(void(I), AnyField{})...};
  };
}
template <class T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (N > 10 || !braces_take<T>(std::make_index_sequence<N + 1>{})) {
    return N;
  } else {
    return field_count<T, N + 1>();
  }
}

// Calls f(field) for each field of the aggregate `value`, in declaration order.
template <class T, class F>
void each_field(T& value, F&& f) {
  constexpr std::size_t n = field_count<std::remove_const_t<T>>();
  static_assert(n >= 1 && n <= 10, "a struct the tests observe has 1 to 10 fields");
  if constexpr (n == 1) {
    auto& [a] = value;
    f(a);
  } else if constexpr (n == 2) {
    auto& [a, b] = value;
    f(a), f(b);
  } else if constexpr (n == 3) {
    auto& [a, b, c] = value;
    f(a), f(b), f(c);
  } else if constexpr (n == 4) {
    auto& [a, b, c, d] = value;
    f(a), f(b), f(c), f(d);
  } else if constexpr (n == 5) {
    auto& [a, b, c, d, e] = value;
    f(a), f(b), f(c), f(d), f(e);
  } else if constexpr (n == 6) {
    auto& [a, b, c, d, e, g] = value;
    f(a), f(b), f(c), f(d), f(e), f(g);
  } else if constexpr (n == 7) {
    auto& [a, b, c, d, e, g, h] = value;
    f(a), f(b), f(c), f(d), f(e), f(g), f(h);
  } else if constexpr (n == 8) {
    auto& [a, b, c, d, e, g, h, i] = value;
    f(a), f(b), f(c), f(d), f(e), f(g), f(h), f(i);
  } else if constexpr (n == 9) {
    auto& [a, b, c, d, e, g, h, i, j] = value;
    f(a), f(b), f(c), f(d), f(e), f(g), f(h), f(i), f(j);
  } else {
    auto& [a, b, c, d, e, g, h, i, j, k] = value;
    f(a), f(b), f(c), f(d), f(e), f(g), f(h), f(i), f(j), f(k);
  }
}

}  // namespace detail

template <class T>
void encode(Writer& out, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    out.byte(static_cast<std::uint8_t>(Tag::boolean));
    out.byte(value ? 1 : 0);
  } else if constexpr (std::is_same_v<T, float>) {
    out.byte(static_cast<std::uint8_t>(Tag::f32));
    out.raw(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    out.byte(static_cast<std::uint8_t>(Tag::f64));
    out.raw(static_cast<double>(value));
  } else if constexpr (std::is_enum_v<T>) {
    out.byte(static_cast<std::uint8_t>(Tag::i64));
    out.raw(static_cast<std::int64_t>(value));
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    out.byte(static_cast<std::uint8_t>(Tag::i64));
    out.raw(static_cast<std::int64_t>(value));
  } else if constexpr (std::is_integral_v<T>) {
    out.byte(static_cast<std::uint8_t>(Tag::u64));
    out.raw(static_cast<std::uint64_t>(value));
  } else if constexpr (std::is_same_v<T, std::string>) {
    out.byte(static_cast<std::uint8_t>(Tag::text));
    out.raw(static_cast<std::uint64_t>(value.size()));
    out.append(value.data(), value.size());
  } else if constexpr (detail::is_xtensor<T>::value) {
    static_assert(std::is_same_v<typename T::value_type, float>, "tensors of float");
    out.byte(static_cast<std::uint8_t>(Tag::tensor));
    out.byte(static_cast<std::uint8_t>(T::rank));
    for (std::size_t d = 0; d < T::rank; ++d)
      out.raw(static_cast<std::uint64_t>(value.shape(d)));
    out.append(value.data(), value.size() * sizeof(float));
  } else if constexpr (detail::is_vector<T>::value) {
    out.byte(static_cast<std::uint8_t>(Tag::group));
    out.raw(static_cast<std::uint64_t>(value.size()));
    for (const auto& element : value)
      encode(out, element);
  } else {
    static_assert(std::is_aggregate_v<T>, "the tests observe numbers, tensors and structs");
    out.byte(static_cast<std::uint8_t>(Tag::group));
    out.raw(static_cast<std::uint64_t>(detail::field_count<T>()));
    detail::each_field(value, [&](const auto& field) { encode(out, field); });
  }
}

template <class T>
void decode_into(Reader& in, T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    in.expect(Tag::boolean, "a bool");
    value = in.byte() != 0;
  } else if constexpr (std::is_same_v<T, float>) {
    in.expect(Tag::f32, "a float");
    value = in.raw<float>();
  } else if constexpr (std::is_floating_point_v<T>) {
    in.expect(Tag::f64, "a double");
    value = static_cast<T>(in.raw<double>());
  } else if constexpr (std::is_enum_v<T>) {
    in.expect(Tag::i64, "an enum");
    value = static_cast<T>(in.raw<std::int64_t>());
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    in.expect(Tag::i64, "an integer");
    value = static_cast<T>(in.raw<std::int64_t>());
  } else if constexpr (std::is_integral_v<T>) {
    in.expect(Tag::u64, "an unsigned integer");
    value = static_cast<T>(in.raw<std::uint64_t>());
  } else if constexpr (std::is_same_v<T, std::string>) {
    in.expect(Tag::text, "text");
    const auto size = in.raw<std::uint64_t>();
    if (size > in.left()) throw DeliveryError("the text ends early");
    value.resize(size);
    in.copy(value.data(), size);
  } else if constexpr (detail::is_xtensor<T>::value) {
    in.expect(Tag::tensor, "a tensor");
    if (in.byte() != T::rank) throw DeliveryError("a tensor of another rank");
    typename T::shape_type shape;
    std::uint64_t count = 1;
    for (std::size_t d = 0; d < T::rank; ++d) {
      const auto size = in.raw<std::uint64_t>();
      if (size != 0 && count > in.left() / size) throw DeliveryError("a tensor larger than sent");
      count *= size;
      shape[d] = static_cast<std::size_t>(size);
    }
    if (count > in.left() / sizeof(float)) throw DeliveryError("a tensor larger than sent");
    value = T(shape);
    in.copy(value.data(), count * sizeof(float));
  } else if constexpr (detail::is_vector<T>::value) {
    in.expect(Tag::group, "a list");
    const auto size = in.raw<std::uint64_t>();
    if (size > in.left()) throw DeliveryError("a list longer than sent");
    value.clear();
    value.resize(size);
    for (auto& element : value)
      decode_into(in, element);
  } else {
    in.expect(Tag::group, "a struct");
    if (in.raw<std::uint64_t>() != detail::field_count<T>()) {
      throw DeliveryError("a struct with another number of fields");
    }
    detail::each_field(value, [&](auto& field) { decode_into(in, field); });
  }
}

// The channel from the probe to the grader: records, each a kind, the label (the STUDENT call's
// text) and the payload (a value, or what was thrown: its type and message as two texts).
enum class RecordKind : std::uint8_t { value = 1, thrown = 2, end = 3 };

struct Record {
  RecordKind kind = RecordKind::end;
  std::string label;
  std::string payload;
};

inline std::string frame(RecordKind kind, const std::string& label, const std::string& payload) {
  Writer out;
  out.byte(static_cast<std::uint8_t>(kind));
  out.raw(static_cast<std::uint64_t>(label.size()));
  out.append(label.data(), label.size());
  out.raw(static_cast<std::uint64_t>(payload.size()));
  out.append(payload.data(), payload.size());
  return out.take();
}

// The whole records in `bytes`, in order; a malformed or cut record ends the list there, and
// `complete` says whether the bytes were all whole records.
inline std::vector<Record> parse_records(const std::string& bytes, bool* complete = nullptr) {
  std::vector<Record> records;
  Reader in(bytes.data(), bytes.size());
  bool whole = true;
  while (in.left() > 0) {
    try {
      Record r;
      const std::uint8_t kind = in.byte();
      if (kind < 1 || kind > 3) throw DeliveryError("not a record");
      r.kind = static_cast<RecordKind>(kind);
      const auto label = in.raw<std::uint64_t>();
      if (label > in.left()) throw DeliveryError("cut");
      r.label.resize(label);
      in.copy(r.label.data(), label);
      const auto payload = in.raw<std::uint64_t>();
      if (payload > in.left()) throw DeliveryError("cut");
      r.payload.resize(payload);
      in.copy(r.payload.data(), payload);
      records.push_back(std::move(r));
    } catch (const DeliveryError&) {
      whole = false;
      break;
    }
  }
  if (complete != nullptr) *complete = whole;
  return records;
}

}  // namespace attn::grading
