// Array: a dtype-tagged, row-major n-d array of any rank. It is what a .npy file holds, what the
// printer prints and what a lesson saves; the math itself works on xt::xtensor<float, N>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class Dtype { float32, float64, int32, int64, boolean };

std::size_t dtype_size(Dtype dtype);
// numpy's name: "float32", "float64", "int32", "int64", "bool".
std::string_view dtype_name(Dtype dtype);
bool is_floating(Dtype dtype);

using Shape = std::vector<std::size_t>;

// Python's tuple spelling, as numpy and torch print shapes: "()", "(5,)", "(2, 5, 12)".
std::string shape_string(const Shape& shape);
// Product of the sizes (1 for rank 0); throws attn::Error if it overflows size_t.
std::size_t element_count(const Shape& shape);

struct Array {
  Dtype dtype = Dtype::float32;
  Shape shape;
  std::vector<unsigned char> bytes;  // native (little-endian) element bytes, row-major

  std::size_t rank() const { return shape.size(); }
  std::size_t size() const;
  // Element i (flat, row-major) as a double: exact for float32, float64, int32, bools, and
  // int64 up to 2^53.
  double real(std::size_t i) const;
  // Element i of an integer or bool array.
  std::int64_t integer(std::size_t i) const;
  float float32_at(std::size_t i) const;
};

// Builders; each checks that values.size() matches the shape.
Array make_float32(Shape shape, const std::vector<float>& values);
Array make_float64(Shape shape, const std::vector<double>& values);
Array make_int32(Shape shape, const std::vector<std::int32_t>& values);
Array make_int64(Shape shape, const std::vector<std::int64_t>& values);
Array make_bool(Shape shape, const std::vector<bool>& values);

// All elements as float (float32 exactly; other dtypes converted).
std::vector<float> to_float_vector(const Array& array);

}  // namespace attn
