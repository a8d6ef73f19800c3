#include "io/npy.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "io/file_io.hpp"

// Array keeps native bytes and promises little-endian; .npy data is converted to that.
static_assert(std::endian::native == std::endian::little, "attn assumes a little-endian host");

namespace attn {

namespace {

// numpy/lib/format.py constants.
constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kMagicLen = sizeof kMagic;
constexpr std::size_t kArrayAlign = 64;
constexpr std::size_t kMaxHeaderSize = 10000;  // numpy's _MAX_HEADER_SIZE
constexpr std::size_t kGrowthAxisMaxDigits = 21;
constexpr std::size_t kMaxDepth = 32;  // nesting limit of the header literal parser

constexpr const char* kHeaderExample =
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
constexpr const char* kSupported = "float32, float64, int32, int64 and bool";

[[noreturn]] void fail(std::string_view name, std::string_view message) {
  throw Error(ErrorKind::bad_file, "parse_npy", fmt::format("{}: {}", name, message));
}

// Header text in a message: control characters and stray bytes escaped, one line, 40 bytes at most.
std::string escaped(std::string_view text, std::size_t limit = 40) {
  return printable(text, limit);
}

// --- The header: a Python literal, parsed as ast.literal_eval would for the forms numpy writes.

struct Entry;

struct Value {
  enum class Kind { string, integer, number, boolean, none, tuple, list, dict };
  Kind kind = Kind::none;
  std::string text;            // string contents, an integer's digits or another number's token
  bool negative = false;       // integer sign
  bool flag = false;           // boolean
  std::vector<Value> items;    // tuple, list
  std::vector<Entry> entries;  // dict
};

// Not std::pair: a pair of an incomplete type does not compile with clang and libstdc++.
struct Entry {
  std::string key;
  Value value;
};

std::string_view kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::string:
      return "a string";
    case Value::Kind::integer:
      return "an integer";
    case Value::Kind::number:
      return "a number that is not an integer";
    case Value::Kind::boolean:
      return "a bool";
    case Value::Kind::none:
      return "None";
    case Value::Kind::tuple:
      return "a tuple";
    case Value::Kind::list:
      return "a list";
    case Value::Kind::dict:
      return "a dict";
  }
  return "?";
}

class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name, bool python2_longs)
      : text_(text), name_(name), python2_longs_(python2_longs) {}

  Value parse() {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != '{') error("it does not start with '{'");
    Value value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the closing '}'");
    return value;
  }

 private:
  [[noreturn]] void error(std::string_view what) const {
    fail(name_, fmt::format("the header is not a valid Python dict ({} at column {}, near '{}'); "
                            "numpy writes e.g. {}",
                            what, pos_ + 1, snippet(), kHeaderExample));
  }

  // The text at the error position, without the padding that follows the header.
  std::string snippet() const {
    std::string_view rest = text_.substr(std::min(pos_, text_.size()));
    std::size_t end = std::min<std::size_t>(rest.size(), 20);
    while (end > 0 && (rest[end - 1] == ' ' || rest[end - 1] == '\n'))
      --end;
    return escaped(rest.substr(0, end)) + (end < rest.size() && end == 20 ? "..." : "");
  }

  void skip_space() {
    while (pos_ < text_.size() && text_[pos_] != '\0' &&
           std::strchr(" \t\n\r\f\v", text_[pos_]) != nullptr) {
      ++pos_;
    }
  }

  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  static bool is_word_char(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == '.';
  }

  Value parse_value(std::size_t depth) {
    if (depth > kMaxDepth) error("nested too deeply");
    skip_space();
    if (pos_ >= text_.size()) error("it ends early");
    const char c = text_[pos_];
    if (c == '{') return parse_dict(depth);
    if (c == '(') return parse_sequence(depth, ')');
    if (c == '[') return parse_sequence(depth, ']');
    if (c == '\'' || c == '"') return parse_string();
    if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) return parse_number();
    std::size_t end = pos_;
    while (end < text_.size() && is_word_char(text_[end]))
      ++end;
    const std::string_view word = text_.substr(pos_, end - pos_);
    Value value;
    if (word == "True" || word == "False") {
      value.kind = Value::Kind::boolean;
      value.flag = word == "True";
    } else if (word == "None") {
      value.kind = Value::Kind::none;
    } else {
      error("unexpected token");
    }
    pos_ = end;
    return value;
  }

  Value parse_dict(std::size_t depth) {
    ++pos_;  // '{'
    Value dict;
    dict.kind = Value::Kind::dict;
    while (!consume('}')) {
      skip_space();
      if (pos_ >= text_.size()) error("it ends before the closing '}'");
      if (text_[pos_] != '\'' && text_[pos_] != '"') error("a dict key that is not a string");
      std::string key = parse_string().text;
      if (!consume(':')) error("expected ':' after a key");
      Value value = parse_value(depth + 1);
      for (const auto& entry : dict.entries) {
        if (entry.key == key) error(fmt::format("the key '{}' appears twice", escaped(key)));
      }
      dict.entries.push_back(Entry{std::move(key), std::move(value)});
      if (!consume(',')) {
        if (!consume('}')) error("expected ',' or '}'");
        break;
      }
    }
    return dict;
  }

  // "(x)" is x itself, as in Python; "(x,)" and "(x, y)" are tuples.
  Value parse_sequence(std::size_t depth, char close) {
    ++pos_;  // '(' or '['
    Value seq;
    seq.kind = close == ')' ? Value::Kind::tuple : Value::Kind::list;
    bool saw_comma = false;
    while (!consume(close)) {
      seq.items.push_back(parse_value(depth + 1));
      if (consume(',')) {
        saw_comma = true;
      } else {
        if (!consume(close)) error(fmt::format("expected ',' or '{}'", close));
        break;
      }
    }
    if (close == ')' && seq.items.size() == 1 && !saw_comma) return std::move(seq.items[0]);
    return seq;
  }

  Value parse_string() {
    const char quote = text_[pos_++];
    Value value;
    value.kind = Value::Kind::string;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') error("an unterminated string");
      const char c = text_[pos_++];
      if (c == quote) break;
      if (c == '\\') {
        if (pos_ >= text_.size()) error("an unterminated string");
        value.text += text_[pos_++];
      } else {
        value.text += c;
      }
    }
    return value;
  }

  // Decimal integers; anything else numeric (2.5, 1e3, 0x10) is kept as a non-integer number.
  Value parse_number() {
    Value value;
    value.kind = Value::Kind::integer;
    if (text_[pos_] == '-' || text_[pos_] == '+') {
      value.negative = text_[pos_] == '-';
      ++pos_;
      skip_space();
    }
    std::size_t end = pos_;
    while (end < text_.size() && is_word_char(text_[end]))
      ++end;
    std::string_view word = text_.substr(pos_, end - pos_);
    // Python 2 wrote longs as "3L"; numpy strips the L from version 1.0 and 2.0 headers.
    if (python2_longs_ && word.size() > 1 && (word.back() == 'L' || word.back() == 'l')) {
      word.remove_suffix(1);
    }
    const bool digits = !word.empty() && std::all_of(word.begin(), word.end(),
                                                     [](char d) { return d >= '0' && d <= '9'; });
    if (word.empty()) error("a sign without a number");
    if (!digits) value.kind = Value::Kind::number;
    value.text = std::string(word);
    pos_ = end;
    return value;
  }

  std::string_view text_;
  std::string_view name_;
  bool python2_longs_;
  std::size_t pos_ = 0;
};

// --- The three header entries.

struct Descr {
  Dtype dtype;
  bool big_endian;
};

std::string dtype_advice() {
  return fmt::format("attn reads {}; convert first, e.g. numpy.save(path, a.astype(numpy.float32))",
                     kSupported);
}

Descr parse_descr(const Value& value, std::string_view name) {
  if (value.kind == Value::Kind::list) {
    fail(name, fmt::format("it holds a structured (record) dtype, which attn does not read; save "
                           "each field as its own array ({})",
                           kSupported));
  }
  if (value.kind != Value::Kind::string) {
    fail(name, fmt::format("the header's 'descr' is {}, not a dtype string like '<f4'",
                           kind_name(value.kind)));
  }
  std::string_view code = value.text;
  bool big_endian = false;
  // On a little-endian host numpy reads '=', '|' and no prefix as little-endian too.
  if (!code.empty() && std::strchr("<>=|", code[0]) != nullptr) {
    big_endian = code[0] == '>';
    code.remove_prefix(1);
  }
  const std::string shown = escaped(value.text);
  if (code == "f4") return {Dtype::float32, big_endian};
  if (code == "f8") return {Dtype::float64, big_endian};
  if (code == "i4") return {Dtype::int32, big_endian};
  if (code == "i8") return {Dtype::int64, big_endian};
  if (code == "b1") return {Dtype::boolean, false};
  if (code == "O" || code.starts_with("O")) {
    fail(name, fmt::format("it holds an object array (dtype '{}'): pickled Python objects are "
                           "refused; save a numeric array instead, e.g. "
                           "numpy.save(path, numpy.asarray(a, dtype=numpy.float32))",
                           shown));
  }
  if (code.starts_with("c")) {
    fail(name, fmt::format("complex dtype '{}' is not supported (attn reads {}); save the "
                           "real and imaginary parts as separate arrays (a.real, a.imag)",
                           shown, kSupported));
  }
  fail(name, fmt::format("unsupported dtype '{}'; {}", shown, dtype_advice()));
}

// Parses one shape entry into size_t, refusing what numpy would and what would not fit.
std::size_t parse_extent(const Value& value, std::string_view name, const std::string& shown) {
  if (value.kind != Value::Kind::integer) {
    fail(name,
         fmt::format(
             "the header's 'shape' {} has {}; sizes must be non-negative integers", shown,
             value.kind == Value::Kind::number ? "a non-integer size" : kind_name(value.kind)));
  }
  std::size_t n = 0;
  for (char d : value.text) {
    const auto digit = static_cast<std::size_t>(d - '0');
    if (n > (std::numeric_limits<std::size_t>::max() - digit) / 10) {
      fail(name, fmt::format("the header's 'shape' {} has a size that overflows size_t", shown));
    }
    n = n * 10 + digit;
  }
  if (value.negative && n != 0) {
    fail(name, fmt::format("the header's 'shape' {} has a negative size -{}", shown, n));
  }
  return n;
}

std::string value_string(const Value& value) {
  switch (value.kind) {
    case Value::Kind::integer:
    case Value::Kind::number:
      return (value.negative ? "-" : "") + value.text;
    case Value::Kind::string:
      return "'" + value.text + "'";
    case Value::Kind::boolean:
      return value.flag ? "True" : "False";
    case Value::Kind::none:
      return "None";
    case Value::Kind::tuple: {
      std::vector<std::string> parts;
      for (const Value& item : value.items)
        parts.push_back(value_string(item));
      if (parts.size() == 1) return "(" + parts[0] + ",)";
      return fmt::format("({})", fmt::join(parts, ", "));
    }
    case Value::Kind::list:
      return "[...]";
    case Value::Kind::dict:
      return "{...}";
  }
  return "?";
}

Shape parse_shape(const Value& value, std::string_view name) {
  if (value.kind != Value::Kind::tuple) {
    fail(name, fmt::format("the header's 'shape' is {}, not a tuple of integers like (2, 3)",
                           kind_name(value.kind)));
  }
  const std::string shown = escaped(value_string(value), 80);
  Shape shape;
  for (const Value& item : value.items)
    shape.push_back(parse_extent(item, name, shown));
  return shape;
}

std::uint32_t read_le(const unsigned char* p, std::size_t n) {
  std::uint32_t v = 0;
  for (std::size_t i = n; i-- > 0;)
    v = (v << 8) | p[i];
  return v;
}

bool starts_with(std::span<const unsigned char> bytes, std::string_view prefix) {
  return bytes.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), bytes.begin(),
                    [](char a, unsigned char b) { return static_cast<unsigned char>(a) == b; });
}

[[noreturn]] void fail_magic(std::span<const unsigned char> bytes, std::string_view name) {
  if (starts_with(bytes, "PK")) {
    fail(name,
         "not a .npy file: it is a zip archive, like an .npz (numpy.savez) or a PyTorch .pt "
         "file (torch.save); save a single array with numpy.save(path, array), for a tensor "
         "numpy.save(path, t.numpy())");
  }
  if (!bytes.empty() && bytes[0] == 0x80) {
    fail(name,
         "not a .npy file: it is a Python pickle, like a PyTorch .pt file (torch.save); save "
         "the tensor with numpy.save(path, t.numpy())");
  }
  const std::string_view head(reinterpret_cast<const char*>(bytes.data()),
                              std::min<std::size_t>(bytes.size(), 8));
  fail(name, fmt::format("not a .npy file: it starts with '{}', not the magic string '\\x93NUMPY'; "
                         "write it with numpy.save(path, array)",
                         escaped(head)));
}

// Copies n elements of `size` bytes from Fortran-ordered `src` into C order, byte-swapping
// each element if `swap`.
void copy_elements(const unsigned char* src, unsigned char* dst, const Shape& shape,
                   std::size_t size, bool fortran, bool swap) {
  const std::size_t n = element_count(shape);
  if (n == 0) return;
  auto put = [&](std::size_t from, std::size_t to) {
    const unsigned char* s = src + from * size;
    unsigned char* d = dst + to * size;
    if (swap) {
      std::reverse_copy(s, s + size, d);
    } else {
      std::memcpy(d, s, size);
    }
  };
  if (!fortran || shape.size() < 2) {
    if (!swap) {
      std::memcpy(dst, src, n * size);
    } else {
      for (std::size_t i = 0; i < n; ++i)
        put(i, i);
    }
    return;
  }
  // Walk the C-order index like an odometer, tracking the Fortran offset of the same element.
  const std::size_t rank = shape.size();
  std::vector<std::size_t> stride(rank), index(rank, 0);
  stride[0] = 1;
  for (std::size_t k = 1; k < rank; ++k)
    stride[k] = stride[k - 1] * shape[k - 1];
  std::size_t from = 0;
  for (std::size_t to = 0; to < n; ++to) {
    put(from, to);
    for (std::size_t k = rank; k-- > 0;) {
      if (++index[k] < shape[k]) {
        from += stride[k];
        break;
      }
      from -= (shape[k] - 1) * stride[k];
      index[k] = 0;
    }
  }
}

// "shape (1, 2, 3) float32"
std::string header_string(const NpyHeader& header) {
  return fmt::format("shape {} {}", shape_string(header.shape), dtype_name(header.dtype));
}

[[noreturn]] void fail_truncated(const NpyHeader& header, std::uint64_t available,
                                 std::string_view name) {
  fail(name, fmt::format("truncated data: {} needs {} bytes after the header, the file has {} "
                         "(it was cut short, or the header's shape is wrong)",
                         header_string(header), header.data_bytes, available));
}

// The header of a .npy image, checked against the size of the whole file. `head` holds the file's
// first bytes: all of them, or at least the preamble and a header of up to kMaxHeaderSize bytes.
NpyHeader parse_header(std::span<const unsigned char> head, std::uint64_t file_size,
                       std::string_view name) {
  if (file_size == 0) fail(name, "the file is empty (0 bytes), not a .npy file");
  const std::size_t magic_checked = std::min(head.size(), kMagicLen);
  if (!std::equal(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(magic_checked),
                  kMagic)) {
    fail_magic(head, name);
  }
  if (file_size < kMagicLen + 2) {
    fail(name, fmt::format("truncated: only {} bytes, cut inside the .npy preamble", file_size));
  }
  const unsigned major = head[6], minor = head[7];
  if (minor != 0 || major < 1 || major > 3) {
    fail(name, fmt::format("unsupported .npy format version {}.{} (attn reads 1.0, 2.0 and 3.0); "
                           "write it again with numpy.save",
                           major, minor));
  }
  const std::size_t length_size = major == 1 ? 2 : 4;
  const std::size_t prefix = kMagicLen + 2 + length_size;
  if (file_size < prefix) {
    fail(name, fmt::format("truncated: only {} bytes, cut inside the .npy preamble", file_size));
  }
  const std::size_t header_len = read_le(head.data() + kMagicLen + 2, length_size);
  if (header_len > file_size - prefix) {
    fail(name, fmt::format("truncated header: the header length says {} bytes but only {} follow; "
                           "the file was cut short or is not a .npy file",
                           header_len, file_size - prefix));
  }
  if (header_len > kMaxHeaderSize) {
    fail(name, fmt::format("the header is {} bytes, more than the {} bytes numpy accepts by "
                           "default (numpy.load refuses it too); write it again with numpy.save",
                           header_len, kMaxHeaderSize));
  }

  const std::string_view text(reinterpret_cast<const char*>(head.data() + prefix), header_len);
  const Value dict = HeaderParser(text, name, major < 3).parse();
  const Value* descr = nullptr;
  const Value* fortran = nullptr;
  const Value* shape_value = nullptr;
  for (const auto& [key, value] : dict.entries) {
    if (key == "descr") {
      descr = &value;
    } else if (key == "fortran_order") {
      fortran = &value;
    } else if (key == "shape") {
      shape_value = &value;
    } else {
      fail(name, fmt::format("the header has an unexpected key '{}' (a .npy header has exactly "
                             "'descr', 'fortran_order' and 'shape')",
                             escaped(key)));
    }
  }
  for (auto [value, key] : {std::pair{descr, "descr"}, std::pair{fortran, "fortran_order"},
                            std::pair{shape_value, "shape"}}) {
    if (value == nullptr) {
      fail(name, fmt::format("the header is missing the key '{}' (a .npy header has 'descr', "
                             "'fortran_order' and 'shape')",
                             key));
    }
  }
  const Descr type = parse_descr(*descr, name);
  if (fortran->kind != Value::Kind::boolean) {
    fail(name, fmt::format("the header's 'fortran_order' is {}, not True or False",
                           kind_name(fortran->kind)));
  }
  Shape shape = parse_shape(*shape_value, name);

  // Sizes are checked against the bytes present before anything is allocated.
  const std::size_t size = dtype_size(type.dtype);
  std::size_t count = 1;
  for (std::size_t s : shape) {
    if (s != 0 && count > std::numeric_limits<std::size_t>::max() / s) {
      fail(name, fmt::format("the header's shape {} overflows: its element count does not fit in "
                             "size_t",
                             shape_string(shape)));
    }
    count *= s;
  }
  if (count > std::numeric_limits<std::size_t>::max() / size) {
    fail(name, fmt::format("the header's shape {} overflows: its size in bytes does not fit in "
                           "size_t",
                           shape_string(shape)));
  }
  NpyHeader header{type.dtype,          std::move(shape),
                   fortran->flag,       type.big_endian && size > 1,
                   prefix + header_len, count * size};
  const std::uint64_t available = file_size - header.data_offset;
  if (available < header.data_bytes) fail_truncated(header, available, name);
  if (available > header.data_bytes) {
    fail(name, fmt::format("{} trailing bytes after the data: {} needs {} bytes, the file has {}; "
                           "the header does not match the data",
                           available - header.data_bytes, header_string(header), header.data_bytes,
                           available));
  }
  return header;
}

// The array of `header` from its data bytes (Fortran order and byte order as the header says).
Array make_array(const NpyHeader& header, const unsigned char* data) {
  Array array{header.dtype, header.shape, std::vector<unsigned char>(header.data_bytes)};
  copy_elements(data, array.bytes.data(), array.shape, dtype_size(array.dtype),
                header.fortran_order, header.big_endian);
  if (array.dtype == Dtype::boolean) {
    for (unsigned char& b : array.bytes)
      b = b != 0 ? 1 : 0;
  }
  return array;
}

constexpr std::string_view kExpected = "a .npy file written by numpy.save(path, array)";

}  // namespace

Array parse_npy(std::span<const unsigned char> bytes, std::string_view name) {
  const NpyHeader header = parse_header(bytes, bytes.size(), name);
  return make_array(header, bytes.data() + header.data_offset);
}

NpyFile::NpyFile(const std::string& path) : file_(path, kExpected) {
  const std::string name = printable(path);
  if (file_.size() == 0) {
    // Empty, or a file such as /proc/self/status whose size shows only once it is read.
    whole_ = file_.read_rest(memory_cap("pass a smaller array"));
    if (whole_.empty()) {
      throw Error(ErrorKind::bad_file, "read_npy",
                  fmt::format("'{}' is empty (0 bytes), not a .npy file: write the array with "
                              "numpy.save(path, array)",
                              name));
    }
    header_ = parse_header(whole_, whole_.size(), name);
    return;
  }
  std::vector<unsigned char> head(static_cast<std::size_t>(
      std::min<std::uint64_t>(file_.size(), kMagicLen + 2 + 4 + kMaxHeaderSize)));
  const std::size_t wanted = head.size();
  head.resize(file_.read(head.data(), wanted));
  // A file cut short since fstat: its length is what could be read.
  header_ = parse_header(head, head.size() < wanted ? head.size() : file_.size(), name);
  // The first read may have taken the start of the data.
  head.erase(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(
                                              head.size(), header_.data_offset)));
  data_start_ = std::move(head);
}

Array NpyFile::read() {
  const std::string name = printable(file_.path());
  const SizeCap cap = memory_cap("pass a smaller array");
  if (header_.data_bytes > cap.bytes) {
    throw Error(
        ErrorKind::too_large, "read_npy",
        fmt::format("{}: {} needs {}, more than {}: {}", name, header_string(header_),
                    format_bytes(static_cast<double>(header_.data_bytes)), cap.limit, cap.fix));
  }
  if (!whole_.empty()) return make_array(header_, whole_.data() + header_.data_offset);
  if (header_.fortran_order && header_.shape.size() >= 2) {
    std::vector<unsigned char> data(header_.data_bytes);
    read_data(data.data());
    return make_array(header_, data.data());
  }
  // C order: straight into the array, then each element put in little-endian order in place.
  Array array{header_.dtype, header_.shape, std::vector<unsigned char>(header_.data_bytes)};
  read_data(array.bytes.data());
  const std::size_t size = dtype_size(array.dtype);
  if (header_.big_endian) {
    for (std::size_t i = 0; i < array.bytes.size(); i += size)
      std::reverse(array.bytes.begin() + static_cast<std::ptrdiff_t>(i),
                   array.bytes.begin() + static_cast<std::ptrdiff_t>(i + size));
  }
  if (array.dtype == Dtype::boolean) {
    for (unsigned char& b : array.bytes)
      b = b != 0 ? 1 : 0;
  }
  return array;
}

void NpyFile::read_data(unsigned char* data) {
  const std::size_t have = std::min(data_start_.size(), header_.data_bytes);
  if (have > 0) std::memcpy(data, data_start_.data(), have);
  const std::size_t got = have + file_.read(data + have, header_.data_bytes - have);
  if (got < header_.data_bytes) fail_truncated(header_, got, printable(file_.path()));
}

Array read_npy(const std::string& path) {
  return NpyFile(path).read();
}

std::vector<unsigned char> serialize_npy(const Array& array) {
  const std::size_t count = element_count(array.shape);
  const std::size_t size = dtype_size(array.dtype);
  if (count > std::numeric_limits<std::size_t>::max() / size ||
      array.bytes.size() != count * size) {
    throw Error(
        ErrorKind::bad_size, "serialize_npy",
        fmt::format("array of shape {} {} has {} bytes of data, expected {} per element",
                    shape_string(array.shape), dtype_name(array.dtype), array.bytes.size(), size));
  }
  const char* descr = "";
  switch (array.dtype) {
    case Dtype::float32:
      descr = "<f4";
      break;
    case Dtype::float64:
      descr = "<f8";
      break;
    case Dtype::int32:
      descr = "<i4";
      break;
    case Dtype::int64:
      descr = "<i8";
      break;
    case Dtype::boolean:
      descr = "|b1";
      break;
  }
  // As numpy 1.24 writes it: sorted keys, repr(shape), then spare room for growing axis 0.
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr, shape_string(array.shape));
  if (!array.shape.empty()) {
    const std::size_t digits = fmt::format("{}", array.shape[0]).size();
    header.append(kGrowthAxisMaxDigits - std::min(digits, kGrowthAxisMaxDigits), ' ');
  }
  // Version 1.0 unless the padded header overflows its u16 length (numpy's guess_version).
  auto padded_length = [&](std::size_t length_size) {
    const std::size_t unpadded = kMagicLen + 2 + length_size + header.size() + 1;
    return header.size() + 1 + (kArrayAlign - unpadded % kArrayAlign);
  };
  const bool v1 = padded_length(2) <= 0xffff;
  const std::size_t length_size = v1 ? 2 : 4;
  const std::size_t header_len = padded_length(length_size);
  header.append(header_len - header.size() - 1, ' ');
  header.push_back('\n');

  std::vector<unsigned char> out(kMagic, kMagic + kMagicLen);
  out.push_back(v1 ? 1 : 2);
  out.push_back(0);
  for (std::size_t i = 0; i < length_size; ++i) {
    out.push_back(static_cast<unsigned char>((header_len >> (8 * i)) & 0xff));
  }
  out.insert(out.end(), header.begin(), header.end());
  const std::size_t data_start = out.size();
  out.insert(out.end(), array.bytes.begin(), array.bytes.end());
  if (array.dtype == Dtype::boolean) {
    for (std::size_t i = data_start; i < out.size(); ++i)
      out[i] = out[i] != 0 ? 1 : 0;
  }
  return out;
}

void write_npy(const std::string& path, const Array& array) {
  write_file_atomic(path, serialize_npy(array));
}

}  // namespace attn
