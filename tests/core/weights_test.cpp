// core/io/weights.cpp against .safetensors and .npz files written by Python (data/fixtures/weights,
// made by data/generator/weights_files.py), round trips, and truncated or corrupted copies.
#include "io/weights.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/file_io.hpp"
#include "layer_norm.hpp"
#include "memory_limit.hpp"
#include "npz_bomb.hpp"
#include "state_dict.hpp"

namespace fs = std::filesystem;
using attn::Array;
using attn::Dtype;
using attn::Module;
using attn::Shape;
using attn::StateDict;
using nlohmann::json;

namespace {

constexpr const char* kPickleError = "PyTorch pickles can run code and are not read";

const json& fixtures() {
  static const json document =
      json::parse(attn::testing::read_text(attn::testing::fixture_path("weights/cases.json")));
  return document;
}

std::string weights_fixture(const std::string& file) {
  return attn::testing::fixture_path("weights/" + file);
}

std::vector<unsigned char> fixture_bytes(const std::string& file) {
  return attn::read_file(weights_fixture(file), "fixture");
}

// A temporary directory, removed with everything in it at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           fmt::format("attn_weights_test_{}_{}", static_cast<long>(getpid()), counter++);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The attn::Error message of f(), or "" if it returns. Other exceptions fail the test.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const attn::Error& e) {
    return e.what();
  }
  return "";
}

double json_real(const json& value) {
  if (!value.is_string()) return value.get<double>();
  const std::string text = value.get<std::string>();  // "nan", "inf", "-inf"
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  return text == "inf" ? INFINITY : -INFINITY;
}

// The array a model entry of cases.json describes: {"dtype", "shape", "values"}.
Array expected_array(const json& spec) {
  const std::string dtype = spec.at("dtype").get<std::string>();
  const Shape shape = spec.at("shape").get<Shape>();
  const json& values = spec.at("values");
  if (dtype == "float32" || dtype == "float64") {
    std::vector<double> reals;
    for (const json& v : values)
      reals.push_back(json_real(v));
    if (dtype == "float64") return attn::make_float64(shape, reals);
    return attn::make_float32(shape, std::vector<float>(reals.begin(), reals.end()));
  }
  if (dtype == "int32") return attn::make_int32(shape, values.get<std::vector<std::int32_t>>());
  if (dtype == "int64") return attn::make_int64(shape, values.get<std::vector<std::int64_t>>());
  REQUIRE(dtype == "bool");
  std::vector<bool> flags;
  for (const json& v : values)
    flags.push_back(v.get<int>() != 0);
  return attn::make_bool(shape, flags);
}

void check_same(const Array& got, const Array& want) {
  CHECK(attn::dtype_name(got.dtype) == attn::dtype_name(want.dtype));
  CHECK(attn::shape_string(got.shape) == attn::shape_string(want.shape));
  if (got.dtype == want.dtype && got.shape == want.shape) {
    CHECK_ALLCLOSE(got, want, attn::testing::Tolerance{0.0, 0.0});
    CHECK(got.bytes == want.bytes);  // bit for bit: -0.0, int64 past 2^53, NaN
  }
}

std::vector<std::string> keys_of(const StateDict& dict) {
  std::vector<std::string> keys;
  for (const auto& item : dict)
    keys.push_back(item.first);
  return keys;
}

void check_model(const StateDict& got, const json& model) {
  std::vector<std::string> want_keys;
  for (const auto& item : model.items())
    want_keys.push_back(item.key());
  CHECK(keys_of(got) == want_keys);
  for (const auto& [key, spec] : model.items()) {
    INFO("key '" << key << "'");
    const auto found = got.find(key);
    REQUIRE(found != got.end());
    check_same(found->second, expected_array(spec));
  }
}

void check_equal(const StateDict& got, const StateDict& want) {
  REQUIRE(keys_of(got) == keys_of(want));
  for (const auto& [key, array] : want) {
    INFO("key '" << key << "'");
    check_same(got.at(key), array);
  }
}

// Every dtype, rank 0 to 5, empty tensors, extreme values and awkward names.
StateDict sample_dict() {
  StateDict d;
  d["f32"] = attn::make_float32({2, 3}, {-1.0f, 0.5f, -0.0f, 1e-30f, 3.25f, NAN});
  d["f64"] = attn::make_float64({3}, {0.1, -2.5, INFINITY});
  d["i32"] = attn::make_int32({2, 2}, {std::numeric_limits<std::int32_t>::min(), -1, 0,
                                       std::numeric_limits<std::int32_t>::max()});
  d["i64"] = attn::make_int64({3}, {std::numeric_limits<std::int64_t>::min(), (1LL << 53) + 1,
                                    std::numeric_limits<std::int64_t>::max()});
  d["mask"] = attn::make_bool({2, 2}, {true, false, false, true});
  d["scalar_f32"] = attn::make_float32({}, {2.5f});
  d["scalar_i32"] = attn::make_int32({}, {-7});
  d["scalar_bool"] = attn::make_bool({}, {true});
  d["empty_f64"] = attn::make_float64({0}, {});
  d["empty_bool_3x0"] = attn::make_bool({3, 0}, {});
  d["empty_i64_0x2x0"] = attn::make_int64({0, 2, 0}, {});
  d["rank5"] = attn::make_float32({1, 2, 1, 2, 1}, {1.0f, 2.0f, 3.0f, 4.0f});
  d["layers.0.self_attn.in_proj_weight"] = attn::make_float32({1, 2}, {0.25f, -0.75f});
  d["\xc3\xbc"
    "n"
    "\xc3\xaf"
    "code"] = attn::make_float64({1}, {42.0});  // "ünïcode"
  d[""] = attn::make_int32({1}, {5});
  return d;
}

void put(std::vector<unsigned char>& out, std::uint64_t value, int width) {
  for (int i = 0; i < width; ++i)
    out.push_back(static_cast<unsigned char>(value >> (8 * i)));
}

// A one-member zip whose directory claims `size` uncompressed bytes for `data` (CRC left 0).
std::vector<unsigned char> one_member_zip(const std::string& file,
                                          const std::vector<unsigned char>& data,
                                          std::uint16_t method, std::uint32_t size) {
  std::vector<unsigned char> out;
  put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, method, 2), put(out, 0, 8);
  put(out, data.size(), 4), put(out, size, 4), put(out, file.size(), 2), put(out, 0, 2);
  out.insert(out.end(), file.begin(), file.end());
  out.insert(out.end(), data.begin(), data.end());
  const std::size_t cd_offset = out.size();
  put(out, 0x02014b50, 4), put(out, 0x0314, 2), put(out, 20, 2), put(out, 0, 2);
  put(out, method, 2), put(out, 0, 8), put(out, data.size(), 4), put(out, size, 4);
  put(out, file.size(), 2), put(out, 0, 8), put(out, 0, 4), put(out, 0, 4);
  out.insert(out.end(), file.begin(), file.end());
  const std::size_t cd_size = out.size() - cd_offset;
  put(out, 0x06054b50, 4), put(out, 0, 4), put(out, 1, 2), put(out, 1, 2);
  put(out, cd_size, 4), put(out, cd_offset, 4), put(out, 0, 2);
  return out;
}

}  // namespace

TEST_CASE("good weights files load with the keys, shapes and values Python saved", "[weights]") {
  int checked = 0;
  for (const json& c : fixtures().at("cases")) {
    if (!c.at("valid").get<bool>()) continue;
    const std::string file = c.at("file").get<std::string>();
    INFO("fixture " << file);
    const StateDict got = attn::read_weights(weights_fixture(file));
    check_model(got, fixtures().at("models").at(c.at("model").get<std::string>()));
    ++checked;
  }
  CHECK(checked >= 15);
}

TEST_CASE("the writers reproduce the files Python wrote, byte for byte", "[weights]") {
  // .safetensors: the generator's copy of save_file; .npz: numpy.savez itself.
  int checked = 0;
  for (const json& c : fixtures().at("cases")) {
    if (!c.at("valid").get<bool>() || !c.at("canonical").get<bool>()) continue;
    const std::string file = c.at("file").get<std::string>();
    INFO("fixture " << file);
    const std::vector<unsigned char> bytes = fixture_bytes(file);
    const StateDict dict = attn::read_weights(weights_fixture(file));
    const bool npz = file.ends_with(".npz");
    CHECK((npz ? attn::serialize_npz(dict) : attn::serialize_safetensors(dict)) == bytes);
    ++checked;
  }
  CHECK(checked >= 8);
}

TEST_CASE("every bad file gives a one-line attn::Error saying what is wrong", "[weights]") {
  int checked = 0;
  for (const json& c : fixtures().at("cases")) {
    if (c.at("valid").get<bool>()) continue;
    const std::string file = c.at("file").get<std::string>();
    INFO("fixture " << file);
    const std::string message = error_of([&] { attn::read_weights(weights_fixture(file)); });
    INFO("message: " << message);
    REQUIRE_FALSE(message.empty());
    CHECK_THAT(message, Catch::Contains(c.at("error_contains").get<std::string>()));
    CHECK(message.find('\n') == std::string::npos);
    CHECK_THAT(message, Catch::Contains(file));  // names the file
    ++checked;
  }
  CHECK(checked >= 50);
}

TEST_CASE("the safetensors example of ecosystem.md 6.1, byte for byte", "[weights]") {
  StateDict dict;
  dict["b"] = attn::make_float32({2}, {0.5f, -1.0f});
  dict["w"] = attn::make_float32({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f});
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("w":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]}}   )";
  REQUIRE(header.size() == 144);
  const std::vector<unsigned char> bytes = attn::serialize_safetensors(dict);
  REQUIRE(bytes.size() == 176);
  CHECK(std::vector<unsigned char>(bytes.begin(), bytes.begin() + 8) ==
        std::vector<unsigned char>{0x90, 0, 0, 0, 0, 0, 0, 0});
  CHECK(std::string(bytes.begin() + 8, bytes.begin() + 152) == header);
  CHECK(bytes == fixture_bytes("example.safetensors"));
  check_equal(attn::parse_safetensors(bytes, "example"), dict);
}

TEST_CASE("safetensors: tensors are written by descending dtype, then by name", "[weights]") {
  StateDict dict;
  dict["a_bool"] = attn::make_bool({1}, {true});
  dict["b_i64"] = attn::make_int64({1}, {1});
  dict["c_f32"] = attn::make_float32({1}, {1.0f});
  dict["d_i32"] = attn::make_int32({1}, {1});
  dict["e_f64"] = attn::make_float64({1}, {1.0});
  dict["f_f32"] = attn::make_float32({1}, {2.0f});
  const std::vector<unsigned char> bytes = attn::serialize_safetensors(dict);
  const std::string text(bytes.begin() + 8, bytes.end());
  std::vector<std::size_t> at;
  for (const char* key : {"__metadata__", "b_i64", "e_f64", "c_f32", "f_f32", "d_i32", "a_bool"}) {
    at.push_back(text.find(fmt::format("\"{}\"", key)));
  }
  CHECK(std::is_sorted(at.begin(), at.end()));
  CHECK(at.back() != std::string::npos);
  CHECK((bytes[0] + 8) % 8 == 0);  // the header is padded to a multiple of 8
}

TEST_CASE("round trips keep every dtype, scalars and empty tensors", "[weights]") {
  const StateDict dict = sample_dict();
  SECTION("safetensors in memory") {
    check_equal(attn::parse_safetensors(attn::serialize_safetensors(dict), "mem"), dict);
  }
  SECTION("npz in memory") {
    check_equal(attn::parse_npz(attn::serialize_npz(dict), "mem"), dict);
  }
  SECTION("empty state dicts") {
    CHECK(attn::parse_safetensors(attn::serialize_safetensors({}), "mem").empty());
    CHECK(attn::parse_npz(attn::serialize_npz({}), "mem").empty());
  }
  SECTION("files, by extension") {
    TempDir dir;
    for (const char* name : {"w.safetensors", "w.npz", "W.NPZ"}) {
      INFO(name);
      attn::write_weights(dir.file(name), dict);
      check_equal(attn::read_weights(dir.file(name)), dict);
    }
    CHECK(fixture_bytes("empty.safetensors") == attn::serialize_safetensors({}));
    const auto npz = attn::read_file(dir.file("w.npz"), "test");
    CHECK(npz[0] == 'P');
    CHECK(npz[1] == 'K');
  }
  SECTION("bool bytes are written as 0 and 1") {
    StateDict flags;
    flags["m"] = Array{Dtype::boolean, {3}, {0, 7, 1}};
    for (const auto& round : {attn::parse_safetensors(attn::serialize_safetensors(flags), "mem"),
                              attn::parse_npz(attn::serialize_npz(flags), "mem")}) {
      CHECK(round.at("m").bytes == std::vector<unsigned char>{0, 1, 1});
    }
  }
}

TEST_CASE("PyTorch pickles are refused with how to export the weights", "[weights]") {
  TempDir dir;
  for (const char* name : {"model.pt", "model.pth", "pytorch_model.bin", "last.ckpt", "M.PT"}) {
    INFO(name);
    // A missing file is missing; one that exists is refused by its name alone.
    CHECK_THAT(error_of([&] { attn::read_weights(dir.file(name)); }),
               Catch::Contains("does not exist"));
    std::ofstream(dir.file(name)) << "{}";
    const std::string message = error_of([&] { attn::read_weights(dir.file(name)); });
    CHECK_THAT(message, Catch::Contains(kPickleError));
    CHECK_THAT(message,
               Catch::Contains("safetensors.torch.save_file(model.state_dict(), 'w.safetensors')"));
    CHECK_THAT(message, Catch::Contains("numpy.savez('w.npz', **{k: v.numpy() for k, v in "
                                        "model.state_dict().items()})"));
    CHECK(message.find('\n') == std::string::npos);
  }
  // By content: torch.save's zip (data.pkl) and its legacy pickle, under any name.
  for (const char* file : {"model.pt", "torch_save.npz", "torch_zip.weights",
                           "legacy_pickle.weights", "legacy_pickle.safetensors"}) {
    INFO(file);
    CHECK_THAT(error_of([&] { attn::read_weights(weights_fixture(file)); }),
               Catch::Contains(kPickleError));
  }
  CHECK_THAT(error_of([&] { attn::parse_npz(fixture_bytes("model.pt"), "m.npz"); }),
             Catch::Contains(kPickleError));
}

TEST_CASE("read_weights and write_weights name the formats they support", "[weights]") {
  TempDir dir;
  const std::string message =
      error_of([&] { attn::write_weights(dir.file("w.pt"), sample_dict()); });
  CHECK_THAT(message, Catch::Contains(".safetensors"));
  CHECK_THAT(message, Catch::Contains(".npz"));
  CHECK_FALSE(fs::exists(dir.file("w.pt")));
  CHECK_THAT(error_of([&] { attn::read_weights(weights_fixture("unknown.weights")); }),
             Catch::Contains("attn reads .safetensors and .npz"));
  CHECK_THAT(error_of([&] { attn::read_weights(dir.file("missing.safetensors")); }),
             Catch::Contains("missing.safetensors' does not exist: check the path"));
  // By content first: safetensors bytes under an .npz name still load.
  check_equal(attn::read_weights(weights_fixture("safetensors_named.npz")),
              attn::read_weights(weights_fixture("example.safetensors")));
}

TEST_CASE("the writers refuse what the formats cannot hold", "[weights]") {
  StateDict reserved;
  reserved["__metadata__"] = attn::make_float32({1}, {1.0f});
  CHECK_THAT(error_of([&] { attn::serialize_safetensors(reserved); }),
             Catch::Contains("'__metadata__'"));
  StateDict short_bytes;
  short_bytes["w"] = Array{Dtype::float32, {2}, {0, 0, 0, 0}};
  CHECK_THAT(error_of([&] { attn::serialize_safetensors(short_bytes); }),
             Catch::Contains("needs 8"));
  CHECK_THAT(error_of([&] { attn::serialize_npz(short_bytes); }), Catch::Contains("needs 8"));
  StateDict bad_name;
  bad_name["w\xff"] = attn::make_float32({1}, {1.0f});
  CHECK_THAT(error_of([&] { attn::serialize_safetensors(bad_name); }),
             Catch::Contains("not valid UTF-8"));
  CHECK_THAT(error_of([&] { attn::serialize_npz(bad_name); }), Catch::Contains("not valid UTF-8"));
}

TEST_CASE("npz: deflated members that claim too much are refused before inflating", "[weights]") {
  // More than deflate's 1032:1 can give from the compressed bytes.
  const std::string ratio = error_of([] {
    attn::parse_npz(one_member_zip("w.npy", std::vector<unsigned char>(100), 8, 1 << 20),
                    "bomb.npz");
  });
  CHECK_THAT(ratio, Catch::Contains("more than deflate can produce"));
  // Possible for deflate, but more than 1 GiB.
  const std::vector<unsigned char> packed(1'100'000);
  const std::string cap = error_of(
      [&] { attn::parse_npz(one_member_zip("w.npy", packed, 8, (1u << 30) + 1), "big.npz"); });
  CHECK_THAT(cap, Catch::Contains("more than attn's 1 GiB limit"));
}

TEST_CASE("truncated and byte-flipped good files give attn::Error or a result, never a crash",
          "[weights]") {
  long results = 0, errors = 0;
  const auto parse_both = [&](const std::vector<unsigned char>& bytes, const std::string& what) {
    for (int format = 0; format < 2; ++format) {
      try {
        const StateDict dict =
            format == 0 ? attn::parse_safetensors(bytes, "fuzz") : attn::parse_npz(bytes, "fuzz");
        ++results;
      } catch (const attn::Error& e) {
        ++errors;
        if (std::string_view(e.what()).find('\n') != std::string_view::npos) {
          FAIL(what << ": a message of several lines: " << e.what());
        }
      } catch (const std::exception& e) {
        FAIL(what << ": " << typeid(e).name() << ": " << e.what());
      }
    }
  };
  for (const json& c : fixtures().at("cases")) {
    if (!c.at("valid").get<bool>()) continue;
    const std::string file = c.at("file").get<std::string>();
    const std::vector<unsigned char> good = fixture_bytes(file);
    for (std::size_t length = 0; length < good.size(); ++length) {
      parse_both(std::vector<unsigned char>(good.begin(), good.begin() + length),
                 fmt::format("{} cut to {} bytes", file, length));
    }
    for (std::size_t i = 0; i < good.size(); ++i) {
      for (const unsigned char mask : {0xff, 0x01, 0x80}) {
        std::vector<unsigned char> bad = good;
        bad[i] ^= mask;
        parse_both(bad, fmt::format("{} with byte {} ^ {:#x}", file, i, mask));
      }
    }
  }
  INFO(results << " results, " << errors << " errors");
  CHECK(errors > 0);
  CHECK(results > 0);  // flips inside tensor data still load
}

namespace {

std::vector<unsigned char> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}

}  // namespace

TEST_CASE("npz: the members' declared sizes are summed and refused before any is inflated",
          "[weights]") {
  // Three members of 16 MiB of zeros each, about 16 KiB each once deflated.
  const std::vector<unsigned char> bomb =
      bytes_of(attn::testing::deflated_zeros_npz({"a", "b", "c"}, 1));
  CHECK(bomb.size() < 100'000);
  {
    const attn::testing::MemoryLimit limit(32 << 20);
    attn::ErrorKind kind = attn::ErrorKind::internal;
    const std::string message = error_of([&] {
      try {
        attn::parse_npz(bomb, "bomb.npz");
      } catch (const attn::Error& e) {
        kind = e.kind();
        throw;
      }
    });
    CHECK(kind == attn::ErrorKind::too_large);
    CHECK_THAT(
        message,
        Catch::Contains("bomb.npz: its 3 members hold 48 MiB once inflated, more than the memory "
                        "limit of 32 MiB (set by the test)"));
  }
  // Within the limit the same archive loads: three arrays of zeros.
  const attn::testing::MemoryLimit limit(64 << 20);
  const StateDict dict = attn::parse_npz(bomb, "bomb.npz");
  REQUIRE(dict.size() == 3);
  CHECK(dict.at("b").shape == Shape{4 << 20});
  CHECK(dict.at("c").bytes == std::vector<unsigned char>(16 << 20, 0));
}

TEST_CASE("npz: a member whose deflate stream outgrows its declared size is cut off", "[weights]") {
  std::string zip = attn::testing::deflated_zeros_npz({"a"}, 1);
  // Declare 1000 bytes fewer in both headers: inflating must stop at the declared size.
  const std::uint32_t declared = 128 + (16 << 20);
  for (std::size_t at = 0; (at = zip.find(std::string(reinterpret_cast<const char*>(&declared), 4),
                                          at)) != std::string::npos;) {
    const std::uint32_t lower = declared - 1000;
    zip.replace(at, 4, reinterpret_cast<const char*>(&lower), 4);
  }
  const std::string message = error_of([&] { attn::parse_npz(bytes_of(zip), "lies.npz"); });
  CHECK_THAT(message, Catch::Contains("it inflates to more bytes than the 16776344 declared"));
}

TEST_CASE("npz: more members than attn reads are refused from the end record", "[weights]") {
  // A zip64 end record claiming 100,001 members over a central directory big enough for them.
  const std::uint64_t members = 100'001, cd_size = members * 46;
  std::vector<unsigned char> zip(cd_size, 0);
  const auto put64 = [&](std::uint64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i)
      zip.push_back(static_cast<unsigned char>(value >> (8 * i)));
  };
  put64(0x06064b50, 4), put64(44, 8), put64(45, 2), put64(45, 2), put64(0, 4), put64(0, 4);
  put64(members, 8), put64(members, 8), put64(cd_size, 8), put64(0, 8);
  put64(0x07064b50, 4), put64(0, 4), put64(cd_size, 8), put64(1, 4);
  put64(0x06054b50, 4), put64(0, 4), put64(0xffff, 2), put64(0xffff, 2), put64(0xffffffff, 4),
      put64(0xffffffff, 4), put64(0, 2);
  CHECK_THAT(
      error_of([&] { attn::parse_npz(zip, "many.npz"); }),
      Catch::Contains("many.npz: the archive has 100001 members, more than the 100000 attn reads"));
}

TEST_CASE("safetensors: a header too big to parse within the memory limit is refused",
          "[weights]") {
  const attn::testing::MemoryLimit limit(1 << 20);
  std::string header = "{" + std::string(40'000, ' ') + "}";
  std::string file(8, '\0');
  for (std::size_t i = 0; i < 8; ++i)
    file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header;
  CHECK_THAT(
      error_of([&] { attn::parse_safetensors(bytes_of(file), "big_header.safetensors"); }),
      Catch::Contains(
          "big_header.safetensors: the 40002-byte header would take up to 1.22 MiB to parse, "
          "more than the memory limit of 1 MiB (set by the test)"));
}

TEST_CASE("keys with NUL, escape sequences or no name at all are shown whole and visible",
          "[weights]") {
  const Module model = attn::describe_layer_norm(2);
  std::string header =
      R"({"weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("bias":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("ключ\u0000😀":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},)"
      R"("\u001b]0;pwned\u0007\u001b[2J":{"dtype":"F32","shape":[1],"data_offsets":[20,24]}})";
  std::string file(8, '\0');
  for (std::size_t i = 0; i < 8; ++i)
    file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header + std::string(24, '\0');
  StateDict dict = attn::parse_safetensors(bytes_of(file), "keys.safetensors");
  REQUIRE(dict.size() == 4);
  dict[""] = attn::make_float32({1}, {1.0f});  // an .npz member named .npy
  const std::string message =
      error_of([&] { attn::check_state_dict(model, dict, "keys\x1b.safetensors"); });
  CHECK(message.find('\x1b') == std::string::npos);
  CHECK(message.find('\0') == std::string::npos);
  CHECK_THAT(message,
             Catch::Contains("'keys\\x1b.safetensors' does not fit LayerNorm: unexpected '', "
                             "\\x1b]0;pwned\\x07\\x1b[2J, ключ\\x00😀; export the state_dict"));
}
