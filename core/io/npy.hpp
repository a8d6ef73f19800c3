// .npy files (numpy's format, header versions 1.0, 2.0 and 3.0). Reads float32, float64, int32,
// int64 and bool in either byte order and in C or Fortran order; writes version 1.0, C order.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/array.hpp"
#include "io/file_io.hpp"

namespace attn {

// What a .npy header says, checked against the file's size.
struct NpyHeader {
  Dtype dtype = Dtype::float32;
  Shape shape;
  bool fortran_order = false;
  bool big_endian = false;      // of elements wider than a byte
  std::size_t data_offset = 0;  // where the data starts
  std::size_t data_bytes = 0;   // how much of it the shape and dtype need
};

// Parses a whole .npy image. `name` says where it came from (a path, "x.npy in w.npz") and is
// named in every error.
Array parse_npy(std::span<const unsigned char> bytes, std::string_view name);

// A .npy file, opened as core/io/file_io.hpp opens every input (a regular file, nothing that can
// block), its header read and checked against the file's size; the data is read by read().
class NpyFile {
 public:
  explicit NpyFile(const std::string& path);
  const NpyHeader& header() const { return header_; }
  // The array. Data larger than the memory limit (core/base/budget.hpp) is refused from the header,
  // with attn::Error(too_large), before any of it is read.
  Array read();

 private:
  void read_data(unsigned char* data);
  InputFile file_;
  NpyHeader header_;
  std::vector<unsigned char> whole_;       // a file whose size fstat does not know, read whole
  std::vector<unsigned char> data_start_;  // data the header's read took
};

// NpyFile(path).read().
Array read_npy(const std::string& path);

std::vector<unsigned char> serialize_npy(const Array& array);
// Writes through a temporary file renamed into place: never leaves a partial file.
void write_npy(const std::string& path, const Array& array);

}  // namespace attn
