// Weights files: .safetensors (huggingface/safetensors, safetensors/src/tensor.rs) and .npz (a zip
// of .npy members, as numpy.savez writes it). The readers check every offset and size before
// they touch a byte; the writers produce what safetensors' save_file and numpy.savez produce.
#include "io/weights.hpp"

#define ZLIB_CONST
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "base/utf8.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"

static_assert(std::endian::native == std::endian::little, "attn assumes a little-endian host");

namespace attn {

namespace {

using Bytes = std::span<const unsigned char>;
using nlohmann::json;

constexpr std::string_view kSmallerWeights = "use smaller weights, or raise the limit";

constexpr std::string_view kPickleAdvice =
    "PyTorch pickles can run code and are not read; export with "
    "`safetensors.torch.save_file(model.state_dict(), 'w.safetensors')` or "
    "`numpy.savez('w.npz', **{k: v.numpy() for k, v in model.state_dict().items()})`";

// Little-endian unsigned integer of `width` bytes at `at`; callers check the bounds.
std::uint64_t le(Bytes bytes, std::size_t at, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t i = width; i-- > 0;)
    value = (value << 8) | bytes[at + i];
  return value;
}

void put(std::vector<unsigned char>& out, std::uint64_t value, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i)
    out.push_back(static_cast<unsigned char>(value >> (8 * i)));
}

void put(std::vector<unsigned char>& out, std::string_view text) {
  out.insert(out.end(), text.begin(), text.end());
}

[[noreturn]] void refuse_pickle(std::string_view function, std::string_view path,
                                std::string_view why) {
  throw Error(ErrorKind::bad_file, function,
              fmt::format("{}: {}; {}", printable(path, 200), why, kPickleAdvice));
}

void normalize_bools(Array& array) {
  if (array.dtype != Dtype::boolean) return;
  for (unsigned char& b : array.bytes)
    b = b != 0 ? 1 : 0;
}

// The array's byte count, checked against its shape and dtype.
std::size_t checked_bytes(const Array& array, std::string_view function, std::string_view key) {
  const std::size_t count = element_count(array.shape);
  const std::size_t size = dtype_size(array.dtype);
  if (count > std::numeric_limits<std::size_t>::max() / size ||
      array.bytes.size() != count * size) {
    throw Error(ErrorKind::bad_size, function,
                fmt::format("'{}' has {} bytes, but a {} array of shape {} needs {}",
                            printable(key), array.bytes.size(), dtype_name(array.dtype),
                            shape_string(array.shape), count * size));
  }
  return array.bytes.size();
}

// ---------------------------------------------------------------------------------------------
// safetensors

constexpr std::uint64_t kMaxHeader = 100'000'000;  // MAX_HEADER_SIZE of the Rust reader
constexpr std::uint64_t kJsonGrowth = 32;
constexpr std::string_view kReads =
    "attn reads F32, F64, I32, I64 and BOOL, and F16 and BF16 as float32";

struct StDtype {
  std::string_view code;
  std::size_t bits;
  std::optional<Dtype> dtype;  // empty: a dtype attn does not read
};

// Every dtype of the format (sizes are needed to validate a file even when attn cannot read it).
constexpr StDtype kStDtypes[] = {
    {"BOOL", 8, Dtype::boolean},
    {"U8", 8, {}},
    {"I8", 8, {}},
    {"I16", 16, {}},
    {"U16", 16, {}},
    {"F16", 16, {}},
    {"BF16", 16, {}},
    {"I32", 32, Dtype::int32},
    {"U32", 32, {}},
    {"F32", 32, Dtype::float32},
    {"F64", 64, Dtype::float64},
    {"I64", 64, Dtype::int64},
    {"U64", 64, {}},
    {"C64", 64, {}},
    {"F4", 4, {}},
    {"F6_E2M3", 6, {}},
    {"F6_E3M2", 6, {}},
    {"F8_E5M2", 8, {}},
    {"F8_E4M3", 8, {}},
    {"F8_E8M0", 8, {}},
    {"F8_E4M3FNUZ", 8, {}},
    {"F8_E5M2FNUZ", 8, {}},
};

const StDtype* find_dtype(std::string_view code) {
  for (const StDtype& type : kStDtypes) {
    if (type.code == code) return &type;
  }
  return nullptr;
}

bool is_half(std::string_view code) {
  return code == "F16" || code == "BF16";
}

// IEEE half to float32 bits, exactly as torch's .float() (c10's fp16_ieee_to_fp32_value):
// subnormals become normal floats, infinities stay infinite, a NaN keeps its payload.
std::uint32_t half_to_float_bits(std::uint16_t half) {
  const std::uint32_t sign = std::uint32_t{half & 0x8000u} << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1f;
  std::uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return sign | 0x7f800000u | (mantissa << 13);
  if (exponent != 0) return sign | ((exponent + 112) << 23) | (mantissa << 13);
  if (mantissa == 0) return sign;
  // A subnormal, mantissa * 2^-24: shift the leading 1 into the implicit bit.
  std::uint32_t shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  return sign | ((113 - shift) << 23) | ((mantissa & 0x3ffu) << 13);
}

// The writer's code and its order: save_file sorts by the Rust enum's position, descending.
std::pair<std::string_view, int> st_code(Dtype dtype) {
  switch (dtype) {
    case Dtype::boolean:
      return {"BOOL", 0};
    case Dtype::int32:
      return {"I32", 1};
    case Dtype::float32:
      return {"F32", 2};
    case Dtype::float64:
      return {"F64", 3};
    case Dtype::int64:
      return {"I64", 4};
  }
  return {"?", -1};
}

[[noreturn]] void st_fail(std::string_view name, std::string_view message) {
  throw Error(ErrorKind::bad_file, "parse_safetensors",
              fmt::format("{}: {}", printable(name, 200), message));
}

// A structural problem: the file is damaged, or was not written by a safetensors library.
[[noreturn]] void st_corrupt(std::string_view name, std::string_view message) {
  st_fail(name, fmt::format("{} (not a valid safetensors file; save it again with "
                            "safetensors.torch.save_file)",
                            message));
}

struct StEntry {
  std::string name;
  const StDtype* type = nullptr;
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

// nlohmann keeps the last of duplicate keys; the callback sees every key of every object.
json parse_header(std::string_view text, std::string_view name) {
  std::vector<std::set<std::string>> open;  // keys seen so far in each enclosing object
  std::optional<std::string> duplicate;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (event == json::parse_event_t::object_end && !open.empty()) {
      open.pop_back();
    } else if (event == json::parse_event_t::key && !open.empty() && !duplicate &&
               !open.back().insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    std::string_view what = e.what();
    if (const auto close = what.find("] "); close != std::string_view::npos) {
      what.remove_prefix(close + 2);
    }
    st_corrupt(name, fmt::format("the header is not valid JSON ({})", printable(what, 160)));
  }
  if (duplicate) {
    st_corrupt(name, fmt::format("the header has the key '{}' twice", printable(*duplicate)));
  }
  return header;
}

void check_metadata(const json& value, std::string_view name) {
  if (!value.is_object()) {
    st_corrupt(name, fmt::format("__metadata__ must map strings to strings, but it is a JSON {}",
                                 value.type_name()));
  }
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      st_corrupt(name,
                 fmt::format("__metadata__ must map strings to strings, but '{}' is a JSON {}",
                             printable(key), item.type_name()));
    }
  }
}

std::uint64_t json_size(const json& value, const std::string& key, std::string_view what,
                        std::string_view name) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer()) {
    st_corrupt(name,
               fmt::format("tensor '{}' has a negative number in its {}", printable(key), what));
  }
  // nlohmann reads a whole number past 2^64-1 as a double.
  const bool too_large = value.is_number_float() && value.get<double>() >= 18446744073709551616.0;
  st_corrupt(name, fmt::format("tensor '{}' has {} in its {}, not a whole number{}", printable(key),
                               printable(value.dump(), 30), what, too_large ? " below 2^64" : ""));
}

StEntry parse_entry(const std::string& key, const json& value, std::string_view name) {
  const std::string shown = printable(key);
  if (!value.is_object()) {
    st_corrupt(name, fmt::format("the entry '{}' is not an object (it is a JSON {}); a tensor is "
                                 "{{\"dtype\", \"shape\", \"data_offsets\"}}",
                                 shown, value.type_name()));
  }
  for (const auto& [field, item] : value.items()) {
    if (field != "dtype" && field != "shape" && field != "data_offsets") {
      st_corrupt(name, fmt::format("the entry '{}' has the unexpected key '{}' (a tensor has "
                                   "only dtype, shape and data_offsets)",
                                   shown, printable(field)));
    }
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(field)) {
      st_corrupt(name, fmt::format("the entry '{}' has no '{}'", shown, field));
    }
  }
  StEntry entry;
  entry.name = key;
  const json& dtype = value["dtype"];
  if (!dtype.is_string())
    st_corrupt(name, fmt::format("tensor '{}': dtype must be a string", shown));
  const auto& code = dtype.get_ref<const std::string&>();
  entry.type = find_dtype(code);
  if (entry.type == nullptr) {
    st_corrupt(name, fmt::format("tensor '{}' has the unknown dtype '{}'", shown, printable(code)));
  }
  const json& shape = value["shape"];
  if (!shape.is_array()) st_corrupt(name, fmt::format("tensor '{}': shape must be a list", shown));
  for (const json& size : shape)
    entry.shape.push_back(json_size(size, key, "shape", name));
  const json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    st_corrupt(name, fmt::format("tensor '{}': data_offsets must be two numbers [begin, end], "
                                 "not {}",
                                 shown, printable(offsets.dump(), 40)));
  }
  entry.begin = json_size(offsets[0], key, "data_offsets", name);
  entry.end = json_size(offsets[1], key, "data_offsets", name);
  return entry;
}

// Bytes of a tensor of this dtype and shape, refusing overflow (as the Rust reader's checked
// products do) and partial bytes.
std::uint64_t tensor_bytes(const StEntry& entry, std::string_view name) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t count = 1;
  bool overflow = false;
  for (const std::uint64_t size : entry.shape) {
    if (size != 0 && count > kMax / size) {
      overflow = true;
      break;
    }
    count *= size;
  }
  if (overflow || count > kMax / entry.type->bits) {
    st_corrupt(name,
               fmt::format("the size of tensor '{}' ({} of {}) overflows", printable(entry.name),
                           shape_string(entry.shape), entry.type->code));
  }
  if (count * entry.type->bits % 8 != 0) {
    st_corrupt(name,
               fmt::format("tensor '{}' ({} of {}) is not a whole number of bytes",
                           printable(entry.name), shape_string(entry.shape), entry.type->code));
  }
  return count * entry.type->bits / 8;
}

// ---------------------------------------------------------------------------------------------
// npz: the zip structures (PKWARE APPNOTE 4.3), read from the central directory.

constexpr std::uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr std::uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22;
constexpr std::size_t kZip64EndSize = 56, kLocatorSize = 20;
constexpr std::uint16_t kEncrypted = 0x0001, kDataDescriptor = 0x0008, kStrongEncryption = 0x0040,
                        kUtf8Name = 0x0800, kMaskedHeader = 0x2000;
constexpr std::uint64_t kMax32 = 0xffffffff;
constexpr std::uint64_t kMaxInflated = std::uint64_t{1} << 30;  // one deflated member, 1 GiB
constexpr std::uint64_t kDeflateRatio = 1032;  // the most deflate can expand a byte
constexpr std::uint64_t kMaxTotal = std::uint64_t{1}
                                    << 62;  // keeps a sum of sizes from overflowing
constexpr std::uint64_t kMaxMembers =
    100'000;  // BERT-base has 199 arrays, large LLMs a few thousand

struct Member {
  std::string name;
  std::uint16_t flags = 0, method = 0;
  std::uint32_t crc = 0;
  std::uint64_t csize = 0, size = 0, offset = 0;
  std::uint64_t data = 0;  // where its bytes start, after the local header
};

struct Directory {
  std::vector<Member> members;
  std::uint64_t offset = 0;  // of the central directory: every member lies before it
};

[[noreturn]] void zip_fail(std::string_view name, std::string_view message) {
  throw Error(ErrorKind::bad_file, "parse_npz",
              fmt::format("{}: {}", printable(name, 200), message));
}

[[noreturn]] void zip_corrupt(std::string_view name, std::string_view message) {
  zip_fail(name, fmt::format("{} (a damaged or truncated archive; save it again with numpy.savez)",
                             message));
}

std::string_view method_name(std::uint16_t method) {
  switch (method) {
    case 1:
      return "shrink";
    case 6:
      return "implode";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "LZMA";
    case 93:
      return "zstd";
    case 95:
      return "xz";
    default:
      return "unknown";
  }
}

// Fields that hold 0xFFFFFFFF (0xFFFF for the disk) are in the zip64 extra field (id 1), in the
// order size, compressed size, offset, disk.
void read_zip64_extra(Bytes extra, std::uint64_t& size, std::uint64_t& csize, std::uint64_t* offset,
                      std::uint64_t* disk, std::string_view what, std::string_view name) {
  if (size != kMax32 && csize != kMax32 && (offset == nullptr || *offset != kMax32) &&
      (disk == nullptr || *disk != 0xffff)) {
    return;
  }
  std::size_t pos = 0;
  while (extra.size() - pos >= 4) {
    const std::size_t id = le(extra, pos, 2), length = le(extra, pos + 2, 2);
    pos += 4;
    if (length > extra.size() - pos) {
      zip_corrupt(name, fmt::format("{}: its extra field {:#06x} runs past its end", what, id));
    }
    if (id == 1) {
      std::size_t at = pos;
      const auto take = [&](std::uint64_t& field, std::uint64_t marker, std::size_t width) {
        if (field != marker) return;
        if (pos + length - at < width) {
          zip_corrupt(name, fmt::format("{}: its zip64 extra field is too short", what));
        }
        field = le(extra, at, width);
        at += width;
      };
      take(size, kMax32, 8);
      take(csize, kMax32, 8);
      if (offset != nullptr) take(*offset, kMax32, 8);
      if (disk != nullptr) take(*disk, 0xffff, 4);
      return;
    }
    pos += length;
  }
  zip_corrupt(name,
              fmt::format("{}: its sizes point to a zip64 extra field that is missing", what));
}

[[noreturn]] void multi_disk(std::string_view name) {
  zip_fail(name,
           "the archive spans several disks (a split zip), which attn does not read; join "
           "the parts into one file or save it again with numpy.savez");
}

Directory read_directory(Bytes bytes, std::string_view name) {
  // The end record: the last one that fits, with its comment ending the file.
  std::optional<std::size_t> end;
  if (bytes.size() >= kEndSize) {
    const std::size_t lowest =
        bytes.size() - kEndSize > 0xffff ? bytes.size() - kEndSize - 0xffff : 0;
    for (std::size_t pos = bytes.size() - kEndSize + 1; pos-- > lowest;) {
      if (le(bytes, pos, 4) == kEndSig && le(bytes, pos + 20, 2) <= bytes.size() - pos - kEndSize) {
        end = pos;
        break;
      }
    }
  }
  if (!end) {
    if (bytes.size() >= 4 && le(bytes, 0, 4) == kLocalSig) {
      zip_fail(name,
               "it starts like a zip archive but has no end-of-central-directory record: "
               "it is truncated; copy it again, or save it again with numpy.savez");
    }
    zip_fail(name,
             "not a zip archive (no end-of-central-directory record); an .npz is the zip "
             "that numpy.savez writes");
  }
  const std::size_t trailing = bytes.size() - *end - kEndSize - le(bytes, *end + 20, 2);
  if (trailing != 0) {
    zip_corrupt(name, fmt::format("{} unexpected bytes after the zip's end record", trailing));
  }
  std::uint64_t disk = le(bytes, *end + 4, 2), cd_disk = le(bytes, *end + 6, 2);
  std::uint64_t disk_entries = le(bytes, *end + 8, 2), entries = le(bytes, *end + 10, 2);
  std::uint64_t cd_size = le(bytes, *end + 12, 4), cd_offset = le(bytes, *end + 16, 4);
  std::uint64_t cd_end = *end;  // the central directory must stop where the end records start

  if (*end >= kLocatorSize && le(bytes, *end - kLocatorSize, 4) == kZip64LocatorSig) {
    const std::size_t locator = *end - kLocatorSize;
    const std::uint64_t record = le(bytes, locator + 8, 8);
    if (le(bytes, locator + 4, 4) != 0 || le(bytes, locator + 16, 4) > 1) multi_disk(name);
    if (record > locator || locator - record < kZip64EndSize ||
        le(bytes, record, 4) != kZip64EndSig) {
      zip_corrupt(name, fmt::format("the zip64 end record is not at offset {}", record));
    }
    const std::uint64_t rest = le(bytes, record + 4, 8);
    if (rest < kZip64EndSize - 12 || rest > locator - record - 12) {
      zip_corrupt(name, fmt::format("the zip64 end record claims {} bytes", rest));
    }
    disk = le(bytes, record + 16, 4), cd_disk = le(bytes, record + 20, 4);
    disk_entries = le(bytes, record + 24, 8), entries = le(bytes, record + 32, 8);
    cd_size = le(bytes, record + 40, 8), cd_offset = le(bytes, record + 48, 8);
    cd_end = record;
  }
  if (disk != 0 || cd_disk != 0 || disk_entries != entries) multi_disk(name);
  if (cd_offset > cd_end || cd_end - cd_offset != cd_size) {
    zip_corrupt(name, fmt::format("the central directory (offset {}, {} bytes) does not end where "
                                  "the end record starts (offset {})",
                                  cd_offset, cd_size, cd_end));
  }
  if (entries > cd_size / kCentralSize) {
    zip_corrupt(name, fmt::format("the end record claims {} members, more than a {}-byte central "
                                  "directory holds",
                                  entries, cd_size));
  }

  if (entries > kMaxMembers) {
    throw Error(
        ErrorKind::too_large, "parse_npz",
        fmt::format(
            "{}: the archive has {} members, more than the {} attn reads: save fewer arrays, or "
            "save them as .safetensors",
            printable(name, 200), entries, kMaxMembers));
  }
  Directory directory{{}, cd_offset};
  directory.members.reserve(entries);
  std::size_t pos = cd_offset;
  for (std::uint64_t i = 0; i < entries; ++i) {
    if (cd_end - pos < kCentralSize || le(bytes, pos, 4) != kCentralSig) {
      zip_corrupt(name, fmt::format("central directory entry {} (offset {}) is missing or damaged",
                                    i, pos));
    }
    Member m;
    m.flags = static_cast<std::uint16_t>(le(bytes, pos + 8, 2));
    m.method = static_cast<std::uint16_t>(le(bytes, pos + 10, 2));
    m.crc = static_cast<std::uint32_t>(le(bytes, pos + 16, 4));
    m.csize = le(bytes, pos + 20, 4), m.size = le(bytes, pos + 24, 4);
    const std::size_t name_length = le(bytes, pos + 28, 2), extra_length = le(bytes, pos + 30, 2);
    const std::size_t comment_length = le(bytes, pos + 32, 2);
    std::uint64_t disk_start = le(bytes, pos + 34, 2);
    m.offset = le(bytes, pos + 42, 4);
    if (cd_end - pos - kCentralSize < name_length + extra_length + comment_length) {
      zip_corrupt(name, fmt::format("central directory entry {} runs past the directory's end", i));
    }
    m.name.assign(reinterpret_cast<const char*>(bytes.data() + pos + kCentralSize), name_length);
    read_zip64_extra(bytes.subspan(pos + kCentralSize + name_length, extra_length), m.size, m.csize,
                     &m.offset, &disk_start, fmt::format("member '{}'", printable(m.name)), name);
    if (disk_start != 0) multi_disk(name);
    directory.members.push_back(std::move(m));
    pos += kCentralSize + name_length + extra_length + comment_length;
  }
  if (pos != cd_end) {
    zip_corrupt(name, fmt::format("the central directory has {} bytes after its {} entries",
                                  cd_end - pos, entries));
  }
  return directory;
}

// Checks the member's local header against the central directory and finds its data.
void locate(Bytes bytes, Member& m, std::uint64_t cd_offset, const std::string& what,
            std::string_view name) {
  if (m.offset > cd_offset || cd_offset - m.offset < kLocalSize ||
      le(bytes, m.offset, 4) != kLocalSig) {
    zip_corrupt(name, fmt::format("{} has no local header at offset {}", what, m.offset));
  }
  const std::size_t at = m.offset;
  const auto flags = static_cast<std::uint16_t>(le(bytes, at + 6, 2));
  const std::size_t name_length = le(bytes, at + 26, 2), extra_length = le(bytes, at + 28, 2);
  if (cd_offset - at - kLocalSize < name_length + extra_length) {
    zip_corrupt(name, fmt::format("the local header of {} runs into the central directory", what));
  }
  const std::string_view local(reinterpret_cast<const char*>(bytes.data() + at + kLocalSize),
                               name_length);
  if (local != m.name) {
    zip_corrupt(name,
                fmt::format("the local header of {} names '{}' instead", what, printable(local)));
  }
  if (le(bytes, at + 8, 2) != m.method || ((flags ^ m.flags) & kEncrypted) != 0) {
    zip_corrupt(name, fmt::format("the local header of {} disagrees with the central directory "
                                  "about its compression or encryption",
                                  what));
  }
  m.data = at + kLocalSize + name_length + extra_length;
  if (m.csize > cd_offset - m.data) {
    zip_corrupt(name,
                fmt::format("the {1} bytes of {0} run past the start of the central directory "
                            "(offset {2})",
                            what, m.csize, cd_offset));
  }
  if ((flags & kDataDescriptor) == 0) {  // else the sizes follow the data; the directory has them
    std::uint64_t size = le(bytes, at + 22, 4), csize = le(bytes, at + 18, 4);
    read_zip64_extra(bytes.subspan(at + kLocalSize + name_length, extra_length), size, csize,
                     nullptr, nullptr, what, name);
    if (le(bytes, at + 14, 4) != m.crc || size != m.size || csize != m.csize) {
      zip_corrupt(name, fmt::format("the local header of {} disagrees with the central directory "
                                    "about its CRC-32 or sizes",
                                    what));
    }
  }
}

// Raw deflate (zlib, -MAX_WBITS) into exactly `size` bytes; a stream that would write more is
// stopped at the first extra byte.
std::vector<unsigned char> inflate_member(Bytes compressed, std::uint64_t size,
                                          const std::string& what, std::string_view name) {
  std::vector<unsigned char> out(size);
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) {
    throw Error(ErrorKind::too_large, "parse_npz",
                "zlib could not start inflating (out of memory?)");
  }
  constexpr std::size_t kChunk = std::size_t{1} << 30;  // avail_in and avail_out are 32-bit
  std::size_t in_used = 0, out_used = 0;
  std::string problem;
  for (;;) {
    unsigned char probe = 0;
    const bool probing = out_used == out.size();  // all declared bytes are in: expect the end
    stream.next_in = compressed.data() + in_used;
    stream.avail_in = static_cast<uInt>(std::min(compressed.size() - in_used, kChunk));
    stream.next_out = probing ? &probe : out.data() + out_used;
    stream.avail_out = probing ? 1 : static_cast<uInt>(std::min(out.size() - out_used, kChunk));
    const uInt in_before = stream.avail_in, out_before = stream.avail_out;
    const int rc = inflate(&stream, Z_NO_FLUSH);
    const std::size_t consumed = in_before - stream.avail_in;
    const std::size_t produced = out_before - stream.avail_out;
    in_used += consumed;
    if (probing && produced > 0) {
      problem = fmt::format("it inflates to more bytes than the {} declared", size);
      break;
    }
    if (!probing) out_used += produced;
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      problem = fmt::format("corrupt deflate data ({})", stream.msg ? stream.msg : "zlib error");
      break;
    }
    if (consumed == 0 && produced == 0) {
      problem = "its deflate data ends early";
      break;
    }
  }
  inflateEnd(&stream);
  if (!problem.empty()) zip_corrupt(name, fmt::format("{}: {}", what, problem));
  if (out_used != size) {
    zip_corrupt(name,
                fmt::format("{} inflates to {} bytes, not the {} declared", what, out_used, size));
  }
  if (in_used != compressed.size()) {
    zip_corrupt(name, fmt::format("{} has {} bytes after its deflate data", what,
                                  compressed.size() - in_used));
  }
  return out;
}

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::uint64_t safetensors_header_length(std::span<const unsigned char> start,
                                        std::uint64_t file_size, std::string_view name) {
  if (start.size() < 8 || file_size < 8) {
    st_corrupt(name, fmt::format("the file has {} bytes, fewer than the 8-byte header size that "
                                 "starts a safetensors file",
                                 file_size));
  }
  const std::uint64_t n = le(start, 0, 8);
  if (n > kMaxHeader) {
    st_corrupt(name,
               fmt::format("the header size is {}, larger than the limit of 100000000 bytes", n));
  }
  if (n > file_size - 8) {
    st_corrupt(name, fmt::format("the {}-byte header runs past the end of the file ({} bytes): "
                                 "the file is truncated",
                                 n, file_size));
  }
  // nlohmann's tree of a JSON text takes up to about 32 times its bytes (nested empty arrays).
  if (const SizeCap cap = memory_cap(std::string(kSmallerWeights)); n > cap.bytes / kJsonGrowth) {
    throw Error(
        ErrorKind::too_large, "parse_safetensors",
        fmt::format("{}: the {}-byte header would take up to {} to parse, more than {}: {}",
                    printable(name, 200), n, format_bytes(static_cast<double>(n * kJsonGrowth)),
                    cap.limit, cap.fix));
  }
  return n;
}

SafetensorsHeader parse_safetensors_header(std::string_view text, std::uint64_t file_size,
                                           std::string_view name) {
  if (const std::size_t bad = utf8_error(text); bad != std::string_view::npos) {
    st_corrupt(name, fmt::format("the header is not valid UTF-8 (byte {} of the header)", bad));
  }
  if (text.empty() || text.front() != '{') {
    st_corrupt(name, "the header does not start with '{' (it must be a JSON object)");
  }
  const json header = parse_header(text, name);

  SafetensorsHeader out;
  out.data_start = 8 + text.size();
  std::vector<StEntry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      check_metadata(value, name);
      for (const auto& [k, v] : value.items())
        out.metadata[k] = v.get<std::string>();
    } else {
      entries.push_back(parse_entry(key, value, name));
    }
  }
  // Sorted by offsets, the tensors must tile the data from 0 with no hole and no overlap.
  std::stable_sort(entries.begin(), entries.end(), [](const StEntry& a, const StEntry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  std::uint64_t position = 0;
  for (const StEntry& e : entries) {
    const std::string shown = printable(e.name);
    if (e.end < e.begin) {
      st_corrupt(name,
                 fmt::format("tensor '{}' has data_offsets [{}, {}]: it ends before it begins",
                             shown, e.begin, e.end));
    }
    if (e.begin < position) {
      st_corrupt(name, fmt::format("tensor '{}' starts at byte {}, inside the tensor before it "
                                   "(which ends at {}): overlapping data_offsets",
                                   shown, e.begin, position));
    }
    if (e.begin > position) {
      st_corrupt(name, fmt::format("a hole in the data: tensor '{}' starts at byte {} but the "
                                   "tensor before it ends at {}",
                                   shown, e.begin, position));
    }
    const std::uint64_t needed = tensor_bytes(e, name);
    if (e.end - e.begin != needed) {
      st_corrupt(name, fmt::format("tensor '{}' is {} of {}, which takes {} bytes, but its "
                                   "data_offsets [{}, {}] hold {}",
                                   shown, shape_string(e.shape), e.type->code, needed, e.begin,
                                   e.end, e.end - e.begin));
    }
    position = e.end;
    out.tensors.push_back({e.name, std::string(e.type->code), e.shape, e.begin, e.end});
  }
  const std::uint64_t available = file_size - out.data_start;
  if (position > available) {
    st_corrupt(name, fmt::format("the tensors need {} bytes of data but the file has {} after the "
                                 "header: it is truncated, or data_offsets point past the end",
                                 position, available));
  }
  if (position < available) {
    st_corrupt(name, fmt::format("{} trailing bytes after the last tensor", available - position));
  }
  return out;
}

std::uint64_t safetensors_read_bytes(const SafetensorsTensor& tensor) {
  const std::uint64_t stored = tensor.end - tensor.begin;
  return is_half(tensor.dtype) ? 2 * stored : stored;
}

Array safetensors_array(const SafetensorsTensor& tensor, std::span<const unsigned char> data,
                        std::string_view name) {
  const StDtype* type = find_dtype(tensor.dtype);
  if (type == nullptr || data.size() != tensor.end - tensor.begin) {
    throw Error(ErrorKind::internal, "safetensors_array",
                fmt::format("{}: tensor '{}' is {} bytes of {}, not what its header says",
                            printable(name, 200), printable(tensor.key), data.size(),
                            printable(tensor.dtype)));
  }
  if (is_half(tensor.dtype)) {
    const bool brain = tensor.dtype == "BF16";
    Array array{Dtype::float32, tensor.shape, std::vector<unsigned char>(2 * data.size())};
    for (std::size_t i = 0; i < data.size() / 2; ++i) {
      const auto half = static_cast<std::uint16_t>(le(data, 2 * i, 2));
      const std::uint32_t bits = brain ? std::uint32_t{half} << 16 : half_to_float_bits(half);
      std::memcpy(array.bytes.data() + 4 * i, &bits, 4);
    }
    return array;
  }
  if (!type->dtype) {
    st_fail(name, fmt::format("tensor '{}' has dtype {}; {}: convert with `.float()` (or "
                              "`.long()` for integers) before saving, e.g. "
                              "save_file({{k: v.float() for k, v in sd.items()}}, 'w.safetensors')",
                              printable(tensor.key), type->code, kReads));
  }
  Array array{*type->dtype, tensor.shape, std::vector<unsigned char>(data.begin(), data.end())};
  normalize_bools(array);
  return array;
}

Array safetensors_array(const SafetensorsTensor& tensor, std::vector<unsigned char>&& data,
                        std::string_view name) {
  const StDtype* type = find_dtype(tensor.dtype);
  if (type == nullptr || is_half(tensor.dtype) || !type->dtype)
    return safetensors_array(tensor, std::span<const unsigned char>(data), name);
  if (data.size() != tensor.end - tensor.begin)
    return safetensors_array(tensor, std::span<const unsigned char>(data), name);  // refuses it
  Array array{*type->dtype, tensor.shape, std::move(data)};
  normalize_bools(array);
  return array;
}

StateDict parse_safetensors(std::span<const unsigned char> bytes, std::string_view name,
                            Metadata* metadata) {
  const std::uint64_t n = safetensors_header_length(bytes, bytes.size(), name);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), n);
  SafetensorsHeader header = parse_safetensors_header(text, bytes.size(), name);
  if (metadata != nullptr) {
    for (auto& [key, value] : header.metadata)
      (*metadata)[key] = std::move(value);
  }
  StateDict out;
  for (const SafetensorsTensor& t : header.tensors) {
    out.emplace(t.key, safetensors_array(
                           t, bytes.subspan(header.data_start + t.begin, t.end - t.begin), name));
  }
  return out;
}

std::vector<unsigned char> serialize_safetensors(const StateDict& tensors,
                                                 const Metadata& metadata) {
  std::vector<const StateDict::value_type*> order;
  for (const auto& item : tensors) {
    if (utf8_error(item.first) != std::string_view::npos) {
      throw Error(ErrorKind::bad_value, "serialize_safetensors",
                  fmt::format("the name '{}' is not valid UTF-8", printable(item.first)));
    }
    if (item.first == "__metadata__") {
      throw Error(ErrorKind::bad_value, "serialize_safetensors",
                  "a tensor cannot be named '__metadata__': the format reserves that key");
    }
    checked_bytes(item.second, "serialize_safetensors", item.first);
    order.push_back(&item);
  }
  // As save_file: by descending dtype, then by name (the map is already in name order).
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return st_code(a->second.dtype).second > st_code(b->second.dtype).second;
  });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  for (const auto& [key, value] : metadata) {
    if (utf8_error(key) != std::string_view::npos || utf8_error(value) != std::string_view::npos)
      throw Error(ErrorKind::bad_value, "serialize_safetensors",
                  fmt::format("metadata '{}' is not valid UTF-8", printable(key)));
    header["__metadata__"][key] = value;
  }
  std::uint64_t offset = 0;
  for (const auto* item : order) {
    const Array& array = item->second;
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = st_code(array.dtype).first;
    entry["shape"] = nlohmann::ordered_json::array();
    for (const std::size_t size : array.shape)
      entry["shape"].push_back(size);
    entry["data_offsets"] = {offset, offset + array.bytes.size()};
    header[item->first] = std::move(entry);
    offset += array.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<unsigned char> out;
  out.reserve(8 + text.size() + offset);
  put(out, text.size(), 8);
  put(out, text);
  for (const auto* item : order) {
    const std::size_t start = out.size();
    out.insert(out.end(), item->second.bytes.begin(), item->second.bytes.end());
    if (item->second.dtype == Dtype::boolean) {
      for (std::size_t i = start; i < out.size(); ++i)
        out[i] = out[i] != 0 ? 1 : 0;
    }
  }
  return out;
}

StateDict parse_npz(std::span<const unsigned char> bytes, std::string_view name) {
  Directory directory = read_directory(bytes, name);
  for (const Member& m : directory.members) {
    if (m.name == "data.pkl" || m.name.ends_with("/data.pkl")) {
      refuse_pickle("parse_npz", name,
                    "it is a PyTorch checkpoint (torch.save's zip with data.pkl)");
    }
  }
  std::set<std::string> seen;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  std::uint64_t declared = 0;  // the arrays' bytes, summed before anything is inflated
  for (Member& m : directory.members) {
    const std::string what = fmt::format("member '{}'", printable(m.name));
    if ((m.flags & (kEncrypted | kStrongEncryption | kMaskedHeader)) != 0 || m.method == 99) {
      zip_fail(name, fmt::format("{} is encrypted; attn reads only unencrypted archives: save the "
                                 "weights again with numpy.savez",
                                 what));
    }
    if (m.method != 0 && m.method != 8) {
      zip_fail(name, fmt::format("{} uses compression method {} ({}); attn reads stored (0) and "
                                 "deflated (8) members: save with numpy.savez or "
                                 "numpy.savez_compressed",
                                 what, m.method, method_name(m.method)));
    }
    if (utf8_error(m.name) != std::string_view::npos) {
      zip_corrupt(name, fmt::format("the name of {} is not valid UTF-8", what));
    }
    if (!m.name.ends_with(".npy")) {
      zip_fail(name, fmt::format("{} is not a .npy file; an .npz holds only NAME.npy members, as "
                                 "numpy.savez writes them",
                                 what));
    }
    if (!seen.insert(m.name).second) zip_corrupt(name, fmt::format("{} appears twice", what));
    locate(bytes, m, directory.offset, what, name);
    if (m.method == 0 && m.csize != m.size) {
      zip_corrupt(name,
                  fmt::format("{} is stored but its sizes differ ({} bytes stored, {} declared)",
                              what, m.csize, m.size));
    }
    if (m.method == 8 && m.size > m.csize * kDeflateRatio + 1024) {
      zip_corrupt(name,
                  fmt::format("{} claims {} bytes from {} compressed bytes, more than deflate "
                              "can produce (a zip bomb?)",
                              what, m.size, m.csize));
    }
    if (m.method == 8 && m.size > kMaxInflated) {
      zip_fail(name, fmt::format("{} would inflate to {} bytes, more than attn's 1 GiB limit for a "
                                 "compressed member; save with numpy.savez (uncompressed) or as "
                                 ".safetensors",
                                 what, m.size));
    }
    spans.emplace_back(m.offset, m.data + m.csize);
    declared += std::min(m.size, kMaxTotal);
  }
  // Declared sizes only: a member that inflates past its own is refused by inflate_member.
  if (const SizeCap cap = memory_cap(std::string(kSmallerWeights)); declared > cap.bytes) {
    throw Error(ErrorKind::too_large, "parse_npz",
                fmt::format("{}: its {} members hold {} once inflated, more than {}: {}",
                            printable(name, 200), directory.members.size(),
                            format_bytes(static_cast<double>(declared)), cap.limit, cap.fix));
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) {
      zip_corrupt(name, fmt::format("two members overlap (bytes {} to {})", spans[i].first,
                                    spans[i - 1].second));
    }
  }

  StateDict out;
  for (const Member& m : directory.members) {
    const std::string what = fmt::format("member '{}'", printable(m.name));
    Bytes data = bytes.subspan(m.data, m.csize);
    std::vector<unsigned char> inflated;
    if (m.method == 8) data = inflated = inflate_member(data, m.size, what, name);
    const auto crc = static_cast<std::uint32_t>(crc32_z(0, data.data(), data.size()));
    if (crc != m.crc) {
      zip_corrupt(name, fmt::format("{} fails its CRC-32 check ({:08x}, expected {:08x})", what,
                                    crc, m.crc));
    }
    const std::string key = m.name.substr(0, m.name.size() - 4);
    out.emplace(key,
                parse_npy(data, fmt::format("{} in {}", printable(m.name), printable(name, 200))));
  }
  return out;
}

std::vector<unsigned char> serialize_npz(const StateDict& tensors) {
  // numpy.savez's layout: stored members dated 1980-01-01, each local header with a zip64 extra
  // field (zipfile's force_zip64), a plain central directory and end record.
  std::vector<unsigned char> out, central;
  const auto too_large = [](std::string_view why) {
    throw Error(ErrorKind::bad_value, "serialize_npz",
                fmt::format("{}, more than attn's .npz writer handles; write "
                            ".safetensors instead",
                            why));
  };
  if (tensors.size() >= 0xffff) too_large(fmt::format("{} arrays", tensors.size()));
  for (const auto& [key, array] : tensors) {
    const std::string file = key + ".npy";
    if (utf8_error(file) != std::string_view::npos) {
      throw Error(ErrorKind::bad_value, "serialize_npz",
                  fmt::format("the name '{}' is not valid UTF-8", printable(key)));
    }
    if (file.size() > 0xffff) too_large(fmt::format("a {}-byte name", file.size()));
    checked_bytes(array, "serialize_npz", key);
    const std::vector<unsigned char> npy = serialize_npy(array);
    const std::uint64_t offset = out.size();
    if (npy.size() >= kMax32 || offset >= kMax32) {
      too_large(fmt::format("'{}' ends past 4 GiB", printable(key)));
    }
    const auto crc = crc32_z(0, npy.data(), npy.size());
    const bool ascii = std::all_of(file.begin(), file.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    const std::uint16_t flags = ascii ? 0 : kUtf8Name;

    put(out, kLocalSig, 4), put(out, 20, 2), put(out, flags, 2), put(out, 0, 2);  // stored
    put(out, 0, 2), put(out, 0x21, 2);  // 00:00, 1980-01-01
    put(out, crc, 4), put(out, npy.size(), 4), put(out, npy.size(), 4);
    put(out, file.size(), 2), put(out, 20, 2), put(out, file);
    put(out, 1, 2), put(out, 16, 2), put(out, npy.size(), 8), put(out, npy.size(), 8);
    out.insert(out.end(), npy.begin(), npy.end());

    put(central, kCentralSig, 4), put(central, 0x0314, 2), put(central, 20, 2);  // Unix, 2.0
    put(central, flags, 2), put(central, 0, 2), put(central, 0, 2), put(central, 0x21, 2);
    put(central, crc, 4), put(central, npy.size(), 4), put(central, npy.size(), 4);
    put(central, file.size(), 2), put(central, 0, 8);  // no extra or comment; disk 0
    put(central, 0600u << 16, 4), put(central, offset, 4), put(central, file);  // rw-------
  }
  const std::uint64_t cd_offset = out.size();
  if (cd_offset + central.size() >= kMax32) too_large("an archive past 4 GiB");
  out.insert(out.end(), central.begin(), central.end());
  put(out, kEndSig, 4), put(out, 0, 4), put(out, tensors.size(), 2), put(out, tensors.size(), 2);
  put(out, central.size(), 4), put(out, cd_offset, 4), put(out, 0, 2);
  return out;
}

StateDict read_weights(const std::string& path, Metadata* metadata) {
  InputFile file(path, "a .safetensors or .npz file");
  const std::string ext = lower_extension(path);
  if (ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt") {
    refuse_pickle("read_weights", path,
                  fmt::format("{} files are PyTorch pickles (torch.save)", ext));
  }
  const std::vector<unsigned char> bytes = file.read_rest(memory_cap(std::string(kSmallerWeights)));
  const Bytes b(bytes);
  const bool zip = b.size() >= 4 && (le(b, 0, 4) == kLocalSig || le(b, 0, 4) == kEndSig);
  if (zip) return parse_npz(b, path);  // torch.save's zips are refused there
  const bool safetensors = b.size() >= 9 && b[8] == '{';
  if (!safetensors && b.size() >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) {
    refuse_pickle("read_weights", path, "it is a Python pickle (torch.save)");
  }
  if (safetensors || ext == ".safetensors") return parse_safetensors(b, path, metadata);
  if (ext == ".npz") return parse_npz(b, path);
  throw Error(ErrorKind::bad_file, "read_weights",
              fmt::format("{}: neither safetensors nor npz; attn reads .safetensors and .npz "
                          "(numpy.savez) weights, and refuses PyTorch pickles (.pt, .pth, .bin, "
                          ".ckpt)",
                          printable(path, 200)));
}

void write_weights(const std::string& path, const StateDict& tensors, const Metadata& metadata) {
  const std::string ext = lower_extension(path);
  if (ext == ".safetensors")
    return write_file_atomic(path, serialize_safetensors(tensors, metadata));
  if (!metadata.empty())
    throw Error(ErrorKind::bad_value, "write_weights",
                fmt::format("{}: only .safetensors keeps metadata; name the file *.safetensors",
                            printable(path, 200)));
  if (ext == ".npz") return write_file_atomic(path, serialize_npz(tensors));
  throw Error(ErrorKind::bad_value, "write_weights",
              fmt::format("{}: cannot tell the format from the extension '{}'; name the file "
                          "*.safetensors or *.npz",
                          printable(path, 200), printable(ext)));
}

}  // namespace attn
