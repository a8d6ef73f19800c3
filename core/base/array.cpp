#include "base/array.hpp"

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/names.hpp"

namespace attn {

namespace {
constexpr Named<Dtype> kDtypeNames[] = {{Dtype::float32, "float32"},
                                        {Dtype::float64, "float64"},
                                        {Dtype::int32, "int32"},
                                        {Dtype::int64, "int64"},
                                        {Dtype::boolean, "bool"}};
}  // namespace

std::size_t dtype_size(Dtype dtype) {
  return dtype == Dtype::boolean ? 1 : dtype == Dtype::float64 || dtype == Dtype::int64 ? 8 : 4;
}

std::string_view dtype_name(Dtype dtype) {
  return name_in(kDtypeNames, dtype);
}

bool is_floating(Dtype dtype) {
  return dtype == Dtype::float32 || dtype == Dtype::float64;
}

std::string shape_string(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

std::size_t element_count(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) {
    if (s != 0 && n > std::numeric_limits<std::size_t>::max() / s) {
      throw Error(
          ErrorKind::bad_size, "element_count",
          fmt::format("shape {} has more elements than fit in memory", shape_string(shape)));
    }
    n *= s;
  }
  return n;
}

std::size_t Array::size() const {
  return element_count(shape);
}

namespace {
template <class T>
T load(const std::vector<unsigned char>& bytes, std::size_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

template <class T>
Array make(Dtype dtype, Shape shape, const std::vector<T>& values) {
  if (element_count(shape) != values.size()) {
    throw Error(ErrorKind::bad_size, "make_array",
                fmt::format("shape {} needs {} values, got {}", shape_string(shape),
                            element_count(shape), values.size()));
  }
  Array a{dtype, std::move(shape), std::vector<unsigned char>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}
}  // namespace

double Array::real(std::size_t i) const {
  switch (dtype) {
    case Dtype::float32:
      return load<float>(bytes, i);
    case Dtype::float64:
      return load<double>(bytes, i);
    case Dtype::int32:
      return load<std::int32_t>(bytes, i);
    case Dtype::int64:
      return static_cast<double>(load<std::int64_t>(bytes, i));
    case Dtype::boolean:
      return bytes[i] != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

std::int64_t Array::integer(std::size_t i) const {
  switch (dtype) {
    case Dtype::int32:
      return load<std::int32_t>(bytes, i);
    case Dtype::int64:
      return load<std::int64_t>(bytes, i);
    case Dtype::boolean:
      return bytes[i] != 0 ? 1 : 0;
    default:
      return static_cast<std::int64_t>(real(i));
  }
}

float Array::float32_at(std::size_t i) const {
  return dtype == Dtype::float32 ? load<float>(bytes, i) : static_cast<float>(real(i));
}

Array make_float32(Shape shape, const std::vector<float>& values) {
  return make(Dtype::float32, std::move(shape), values);
}
Array make_float64(Shape shape, const std::vector<double>& values) {
  return make(Dtype::float64, std::move(shape), values);
}
Array make_int32(Shape shape, const std::vector<std::int32_t>& values) {
  return make(Dtype::int32, std::move(shape), values);
}
Array make_int64(Shape shape, const std::vector<std::int64_t>& values) {
  return make(Dtype::int64, std::move(shape), values);
}
Array make_bool(Shape shape, const std::vector<bool>& values) {
  std::vector<unsigned char> flags(values.begin(), values.end());
  return make(Dtype::boolean, std::move(shape), flags);
}

std::vector<float> to_float_vector(const Array& array) {
  const std::size_t n = array.size();
  std::vector<float> out(n);
  if (array.dtype == Dtype::float32) {
    if (n != 0) std::memcpy(out.data(), array.bytes.data(), n * sizeof(float));
  } else {
    for (std::size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(array.real(i));
  }
  return out;
}

}  // namespace attn
