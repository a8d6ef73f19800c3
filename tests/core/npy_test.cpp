// core/io/npy.cpp against files numpy wrote (data/fixtures/npy, made by data/generator/npy_files.py).
#include "io/npy.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/file_io.hpp"
#include "memory_limit.hpp"

namespace fs = std::filesystem;
using attn::Array;
using attn::Dtype;
using attn::Shape;
using nlohmann::json;

namespace {

json load_cases() {
  return json::parse(attn::testing::read_text(attn::testing::fixture_path("npy/cases.json")))
      .at("cases");
}

std::string npy_fixture(const std::string& file) {
  return attn::testing::fixture_path("npy/" + file);
}

std::vector<unsigned char> fixture_bytes(const std::string& file) {
  return attn::read_file(npy_fixture(file), "fixture");
}

// A temporary directory, removed with everything in it at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           fmt::format("attn_npy_test_{}_{}", static_cast<long>(getpid()), counter()++);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

// A version 1.0 .npy image with `header` as is (no padding) followed by `data`.
std::vector<unsigned char> npy_image(const std::string& header,
                                     const std::vector<unsigned char>& data = {}) {
  std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<unsigned char>(header.size() & 0xff));
  out.push_back(static_cast<unsigned char>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// parse_npy's message for `bytes`, or "" if it parses. Anything but attn::Error fails the test.
std::string parse_error(const std::vector<unsigned char>& bytes) {
  try {
    attn::parse_npy(bytes, "test.npy");
  } catch (const attn::Error& e) {
    return e.what();
  }
  return "";
}

Array sample(Dtype dtype, const Shape& shape) {
  const std::size_t n = attn::element_count(shape);
  switch (dtype) {
    case Dtype::float32: {
      std::vector<float> v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(i) * 0.5f - 1.0f;
      return attn::make_float32(shape, v);
    }
    case Dtype::float64: {
      std::vector<double> v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<double>(i) / 3.0 - 2.0;
      return attn::make_float64(shape, v);
    }
    case Dtype::int32: {
      std::vector<std::int32_t> v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::int32_t>(i) * -70000 + 3;
      return attn::make_int32(shape, v);
    }
    case Dtype::int64: {
      std::vector<std::int64_t> v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::int64_t>(i) * (1LL << 40) - 5;
      return attn::make_int64(shape, v);
    }
    case Dtype::boolean: {
      std::vector<bool> v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = i % 3 == 0;
      return attn::make_bool(shape, v);
    }
  }
  return {};
}

}  // namespace

TEST_CASE("every good fixture loads with numpy's dtype, shape and values") {
  std::size_t good = 0;
  for (const json& c : load_cases()) {
    if (!c.at("valid").get<bool>()) continue;
    ++good;
    const std::string file = c.at("file");
    INFO(file);
    const Array a = attn::read_npy(npy_fixture(file));
    CHECK(attn::dtype_name(a.dtype) == c.at("dtype").get<std::string>());
    CHECK(a.shape == c.at("shape").get<Shape>());
    const json& values = c.at("values");
    REQUIRE(a.size() == values.size());
    REQUIRE(a.bytes.size() == a.size() * attn::dtype_size(a.dtype));
    for (std::size_t i = 0; i < values.size(); ++i) {
      INFO("element " << i);
      if (attn::is_floating(a.dtype)) {
        CHECK(a.real(i) == values[i].get<double>());
      } else {
        CHECK(a.integer(i) == values[i].get<std::int64_t>());
      }
    }
  }
  CHECK(good >= 20);
}

TEST_CASE("serialize_npy reproduces what numpy.save wrote, byte for byte") {
  for (const json& c : load_cases()) {
    if (!c.at("valid").get<bool>() || !c.at("canonical").get<bool>()) continue;
    const std::string file = c.at("file");
    INFO(file);
    const std::vector<unsigned char> bytes = fixture_bytes(file);
    CHECK(attn::serialize_npy(attn::parse_npy(bytes, file)) == bytes);
  }
}

TEST_CASE("a (2, 3) float32 array serializes exactly as numpy.save writes it") {
  const Array a = attn::make_float32({2, 3}, {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f});
  const std::vector<unsigned char> bytes = attn::serialize_npy(a);
  CHECK(bytes == fixture_bytes("float32_rank2.npy"));
  REQUIRE(bytes.size() == 128 + 24);
  const std::string header(bytes.begin() + 10, bytes.begin() + 128);
  CHECK(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
  CHECK(header.back() == '\n');
}

TEST_CASE("every bad fixture throws one attn::Error naming the file and the problem") {
  std::size_t bad = 0;
  for (const json& c : load_cases()) {
    if (c.at("valid").get<bool>()) continue;
    ++bad;
    const std::string file = c.at("file");
    const std::string expected = c.at("error_contains");
    const std::string path = npy_fixture(file);
    INFO(file);
    std::string message;
    try {
      attn::read_npy(path);
    } catch (const attn::Error& e) {
      message = e.what();
    }
    INFO(message);
    REQUIRE(!message.empty());
    CHECK(message.find(expected) != std::string::npos);
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  CHECK(bad >= 20);
}

TEST_CASE("the fixes the messages suggest") {
  CHECK_THAT(parse_error(fixture_bytes("zip_npz.npy")),
             Catch::Contains(".npz") && Catch::Contains(".pt") && Catch::Contains("t.numpy()"));
  CHECK_THAT(parse_error(fixture_bytes("pickle_pt.npy")), Catch::Contains("t.numpy()"));
  CHECK_THAT(parse_error(fixture_bytes("object_dtype.npy")),
             Catch::Contains("save a numeric array"));
  CHECK_THAT(parse_error(fixture_bytes("complex64.npy")), Catch::Contains("a.real, a.imag"));
  CHECK_THAT(parse_error(fixture_bytes("float16.npy")), Catch::Contains("astype(numpy.float32)"));
}

TEST_CASE("headers are parsed as Python literals, not by offsets") {
  const std::vector<unsigned char> three = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};
  for (const std::string header : {
           "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
           "{\"shape\":(3,),\"descr\":\"<i4\",\"fortran_order\":False}",
           "  {\t'fortran_order' : False ,\n'shape' : ( 3 , ) , 'descr' : '<i4' , }   \n",
           "{'descr': 'i4', 'fortran_order': False, 'shape': (3L,)}",
           "{'descr': '=i4', 'fortran_order': False, 'shape': (+3,)}",
       }) {
    INFO(header);
    const Array a = attn::parse_npy(npy_image(header, three), "test.npy");
    CHECK(a.dtype == Dtype::int32);
    CHECK(a.shape == Shape{3});
    CHECK(a.integer(2) == 3);
  }
  const Array scalar = attn::parse_npy(
      npy_image("{'descr': '|b1', 'fortran_order': True, 'shape': ()}", {7}), "test.npy");
  CHECK(scalar.shape.empty());
  CHECK(scalar.bytes == std::vector<unsigned char>{1});  // bools are normalised to 0/1

  CHECK_THAT(
      parse_error(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (3)}", three)),
      Catch::Contains("not a tuple"));
  CHECK_THAT(parse_error(npy_image("{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, "
                                   "'shape': (3,)}",
                                   three)),
             Catch::Contains("appears twice"));
  CHECK_THAT(parse_error(npy_image("{'descr': '<i4', 'fortran_order': 0, 'shape': (3,)}", three)),
             Catch::Contains("not True or False"));
  CHECK_THAT(
      parse_error(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (3,)} x", three)),
      Catch::Contains("not a valid Python dict"));
  CHECK_THAT(parse_error(npy_image("{'descr': '<i4, 'fortran_order': False}", three)),
             Catch::Contains("not a valid Python dict"));
  CHECK_THAT(parse_error(npy_image(std::string(5000, '(') + "{", three)),
             Catch::Contains("not a valid Python dict"));
  CHECK_THAT(parse_error(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': " +
                                       std::string(4000, '(') + std::string(4000, ')') + "}",
                                   three)),
             Catch::Contains("nested too deeply"));
}

TEST_CASE("write then read gives back every dtype, rank 0 to 4 and empty shapes") {
  TempDir dir;
  const std::vector<Shape> shapes = {{}, {5}, {2, 3}, {2, 3, 4}, {2, 1, 3, 2}, {0}, {2, 0, 3}};
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::int32, Dtype::int64, Dtype::boolean}) {
    for (const Shape& shape : shapes) {
      const Array a = sample(dtype, shape);
      const std::string path = (dir.path / "a.npy").string();
      INFO(attn::dtype_name(dtype) << " " << attn::shape_string(shape));
      attn::write_npy(path, a);
      const std::vector<unsigned char> bytes = attn::read_file(path, "test");
      CHECK(bytes[6] == 1);  // version 1.0
      const std::size_t data_start = 10 + (bytes[8] | (bytes[9] << 8));
      CHECK(data_start % 64 == 0);
      CHECK(bytes.size() == data_start + a.bytes.size());
      const Array b = attn::read_npy(path);
      CHECK(b.dtype == a.dtype);
      CHECK(b.shape == a.shape);
      CHECK(b.bytes == a.bytes);
    }
  }
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);
}

TEST_CASE("a header too long for version 1.0 is written as version 2.0") {
  const Array a{Dtype::float32, Shape(30000, 1), std::vector<unsigned char>(4)};
  const std::vector<unsigned char> bytes = attn::serialize_npy(a);
  CHECK(bytes[6] == 2);
  const std::size_t header_len = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (bytes[11] << 24);
  CHECK((12 + header_len) % 64 == 0);
  CHECK(bytes.size() == 12 + header_len + 4);
  CHECK_THAT(parse_error(bytes), Catch::Contains("more than the 10000 bytes"));
}

TEST_CASE("serialize_npy refuses an array whose bytes do not match its shape") {
  const Array a{Dtype::float64, Shape{2, 2}, std::vector<unsigned char>(8)};
  CHECK_THROWS_AS(attn::serialize_npy(a), attn::Error);
}

TEST_CASE("truncated and corrupted files give attn::Error or an array, never a crash") {
  const unsigned char replacements[] = {0x00, 0xff, '\n', ' ', '(', ')', ',', ':', '\'', '"',
                                        '-',  '9',  'L',  '{', '}', '[', '<', '>', 'T',  'x'};
  for (const std::string file :
       {"float32_rank2.npy", "fortran_f4_2x3x4.npy", "fortran_bigendian_f8_2x2x3.npy",
        "version2_f4_2x3.npy", "version3_i4_3.npy", "handwritten_header.npy",
        "python2_long_shape.npy", "float32_rank0.npy", "empty_float32_2x0x3.npy"}) {
    INFO(file);
    const std::vector<unsigned char> good = fixture_bytes(file);
    REQUIRE(parse_error(good).empty());
    for (std::size_t n = 0; n < good.size(); ++n) {
      const std::vector<unsigned char> cut(good.begin(), good.begin() + static_cast<long>(n));
      const std::string message = parse_error(cut);
      INFO("cut at " << n << ": " << message);
      CHECK(!message.empty());
      CHECK(message.find('\n') == std::string::npos);
    }
    const std::size_t header_end = good.size() - attn::parse_npy(good, file).bytes.size();
    for (std::size_t i = 0; i < header_end; ++i) {
      std::vector<unsigned char> changed = good;
      for (unsigned char flip : {0x01, 0x02, 0x10, 0x20, 0x80, 0xff}) {
        changed[i] = good[i] ^ flip;
        const std::string message = parse_error(changed);
        CHECK(message.find('\n') == std::string::npos);
      }
      for (unsigned char r : replacements) {
        changed[i] = r;
        const std::string message = parse_error(changed);
        CHECK(message.find('\n') == std::string::npos);
      }
    }
  }
}

TEST_CASE("write_npy into a missing directory throws and leaves nothing behind") {
  TempDir dir;
  const fs::path missing = dir.path / "no_such_dir";
  const std::string path = (missing / "a.npy").string();
  CHECK_THROWS_AS(attn::write_npy(path, sample(Dtype::float32, {2, 3})), attn::Error);
  CHECK(!fs::exists(missing));
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("write_npy replaces an existing file whole") {
  TempDir dir;
  const std::string path = (dir.path / "a.npy").string();
  attn::write_npy(path, sample(Dtype::float64, {2, 3, 4}));
  attn::write_npy(path, sample(Dtype::int32, {2}));
  const Array b = attn::read_npy(path);
  CHECK(b.dtype == Dtype::int32);
  CHECK(b.shape == Shape{2});
  CHECK(fs::is_regular_file(path));
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);
}

TEST_CASE("read_npy reads data well past the header, in C and Fortran order, either byte order") {
  TempDir dir;
  const std::string path = (dir.path / "a.npy").string();
  // (30, 400) int32 counting up: 48000 bytes, most of them after the first read.
  std::vector<unsigned char> c_order, fortran_big;
  for (std::uint32_t i = 0; i < 30 * 400; ++i)
    for (int k = 0; k < 4; ++k)
      c_order.push_back(static_cast<unsigned char>(i >> (8 * k)));
  for (std::uint32_t col = 0; col < 400; ++col)
    for (std::uint32_t row = 0; row < 30; ++row)
      for (int k = 3; k >= 0; --k)
        fortran_big.push_back(static_cast<unsigned char>((row * 400 + col) >> (8 * k)));
  const auto write = [&](const std::vector<unsigned char>& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  };
  write(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (30, 400), }", c_order));
  const Array a = attn::read_npy(path);
  CHECK(a.shape == Shape{30, 400});
  CHECK(a.bytes == c_order);
  write(npy_image("{'descr': '>i4', 'fortran_order': True, 'shape': (30, 400), }", fortran_big));
  CHECK(attn::read_npy(path).bytes == c_order);
}

TEST_CASE("read_npy refuses from the header data larger than the memory limit, before reading it") {
  TempDir dir;
  const std::string path = (dir.path / "big.npy").string();
  const attn::testing::MemoryLimit limit(1 << 20);
  // (1024, 1024) float32: 4 MiB, a hole on disk.
  const std::vector<unsigned char> header =
      npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (1024, 1024), }");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(header.data()),
             static_cast<std::streamsize>(header.size()));
  fs::resize_file(path, header.size() + (4u << 20));
  attn::ErrorKind kind = attn::ErrorKind::internal;
  std::string message;
  try {
    attn::NpyFile file(path);
    CHECK(file.header().shape == Shape{1024, 1024});
    file.read();
  } catch (const attn::Error& e) {
    kind = e.kind();
    message = e.detail();
  }
  CHECK(kind == attn::ErrorKind::too_large);
  CHECK(message == path +
                       ": shape (1024, 1024) float32 needs 4 MiB, more than the memory limit of 1 "
                       "MiB (set by the "
                       "test): pass a smaller array");
  // A header whose data the file does not hold is truncated, whatever the limit.
  fs::resize_file(path, header.size() + 8);
  CHECK_THROWS_WITH(attn::read_npy(path),
                    Catch::Contains("truncated data: shape (1024, 1024) float32 needs 4194304"));
}
