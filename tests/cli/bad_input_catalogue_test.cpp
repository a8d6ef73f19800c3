// Runs docs/bad-input.md: every row's command, in a scratch folder holding the bad files it
// names, must exit with the documented code, print exactly the documented line on stderr and
// leave the folder as it was (no output, partial or temporary). The doc is the only list of
// cases: a row added there is run here. This file only knows how to make each named file.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "base/array.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "npz_bomb.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;

namespace {

// --- The catalogue: docs/bad-input.md, its "## " sections and their tables.

struct Row {
  std::size_t line = 0;           // in docs/bad-input.md
  std::string command;            // as written, "attn ..."
  std::vector<std::string> args;  // after "attn", shell-split
  int exit_code = 0;
  std::string stderr_line;  // without its newline; empty for "(none)"
  std::vector<std::string> not_written;
};

struct Section {
  std::string title;
  std::vector<Row> rows;
};

constexpr const char* kColumns[] = {"bad input", "command", "exit", "stderr", "not written"};

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return {};
  const auto end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

// The cells of a table line "| a | b \| c |": split on unescaped bars, "\|" unescaped.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(trim(cell));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

// A whole cell that is one code span (`x` or `` x `` when x holds backticks), as CommonMark
// reads it; empty optional when the cell is not a code span.
std::optional<std::string> code_span(const std::string& cell) {
  std::size_t ticks = 0;
  while (ticks < cell.size() && cell[ticks] == '`')
    ++ticks;
  if (ticks == 0 || cell.size() < 2 * ticks) return std::nullopt;
  const std::string fence(ticks, '`');
  if (cell.compare(cell.size() - ticks, ticks, fence) != 0) return std::nullopt;
  std::string inner = cell.substr(ticks, cell.size() - 2 * ticks);
  if (inner.size() >= 2 && inner.front() == ' ' && inner.back() == ' ' &&
      inner.find_first_not_of(' ') != std::string::npos) {
    inner = inner.substr(1, inner.size() - 2);
  }
  return inner;
}

// Every code span in a cell ("`out` `w.npz`" -> {"out", "w.npz"}).
std::vector<std::string> code_spans(const std::string& cell) {
  std::vector<std::string> spans;
  std::size_t pos = 0;
  while ((pos = cell.find('`', pos)) != std::string::npos) {
    const std::size_t end = cell.find('`', pos + 1);
    if (end == std::string::npos) break;
    spans.push_back(cell.substr(pos + 1, end - pos - 1));
    pos = end + 1;
  }
  return spans;
}

// Splits a command as bash would for the quoting the doc uses: 'single', "double" (with \" and
// \\), $'ansi' (with \xNN, \n, \t, \\, \'), and backslash escapes in bare words.
std::vector<std::string> shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  std::size_t i = 0;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(word), word.clear(), in_word = false;
      ++i;
    } else if (c == '\'') {
      const std::size_t end = text.find('\'', i + 1);
      if (end == std::string::npos) throw std::runtime_error("unterminated ' in: " + text);
      word += text.substr(i + 1, end - i - 1);
      in_word = true;
      i = end + 1;
    } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '\'') {
      i += 2;
      while (i < text.size() && text[i] != '\'') {
        if (text[i] != '\\' || i + 1 >= text.size()) {
          word += text[i++];
          continue;
        }
        const char e = text[i + 1];
        i += 2;
        if (e == 'x') {
          int value = 0, digits = 0;
          while (digits < 2 && i < text.size() && hex(text[i]) >= 0)
            value = value * 16 + hex(text[i++]), ++digits;
          if (digits == 0) throw std::runtime_error("\\x without hex digits in: " + text);
          word += static_cast<char>(value);
        } else if (e == 'n') {
          word += '\n';
        } else if (e == 't') {
          word += '\t';
        } else {
          word += e;
        }
      }
      if (i >= text.size()) throw std::runtime_error("unterminated $' in: " + text);
      ++i;
      in_word = true;
    } else if (c == '"') {
      ++i;
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\'))
          ++i;
        word += text[i++];
      }
      if (i >= text.size()) throw std::runtime_error("unterminated \" in: " + text);
      ++i;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[i + 1];
      i += 2;
      in_word = true;
    } else {
      word += c;
      ++i;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

std::vector<Section> read_catalogue() {
  const std::string path = std::string(ATTN_SOURCE_DIR) + "/docs/bad-input.md";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<Section> sections;
  std::string line;
  std::size_t number = 0;
  bool in_table = false;
  while (std::getline(in, line)) {
    ++number;
    INFO("docs/bad-input.md:" << number << ": " << line);
    if (line.starts_with("## ")) {
      sections.push_back({trim(line.substr(3)), {}});
      in_table = false;
      continue;
    }
    if (!line.starts_with("|")) {
      in_table = false;
      continue;
    }
    REQUIRE_FALSE(sections.empty());
    const std::vector<std::string> cells = cells_of(line);
    REQUIRE(cells.size() == std::size(kColumns));
    if (!in_table) {  // the header row, then the |---| row
      for (std::size_t i = 0; i < cells.size(); ++i)
        REQUIRE(cells[i] == kColumns[i]);
      REQUIRE(std::getline(in, line));
      ++number;
      REQUIRE(line.find("---") != std::string::npos);
      in_table = true;
      continue;
    }
    Row row;
    row.line = number;
    const auto command = code_span(cells[1]);
    REQUIRE(command.has_value());
    row.command = *command;
    row.args = shell_words(row.command);
    REQUIRE(!row.args.empty());
    REQUIRE(row.args.front() == "attn");
    row.args.erase(row.args.begin());
    REQUIRE((cells[2] == "0" || cells[2] == "1" || cells[2] == "2"));
    row.exit_code = std::stoi(cells[2]);
    if (cells[3] != "(none)") {
      const auto text = code_span(cells[3]);
      REQUIRE(text.has_value());
      row.stderr_line = *text;
      REQUIRE_FALSE(row.stderr_line.empty());
    }
    if (cells[4] != "—") {
      row.not_written = code_spans(cells[4]);
      REQUIRE_FALSE(row.not_written.empty());
    }
    sections.back().rows.push_back(std::move(row));
  }
  return sections;
}

// --- The bad files, made on demand in the scratch folder.

// `text` with its first `from` replaced by `to`.
void edit_text(const fs::path& path, const std::string& from, const std::string& to) {
  std::string text = attn::testing::read_text(path.string());
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string u8(std::uint64_t value, std::size_t width) {
  std::string out;
  for (std::size_t i = 0; i < width; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

std::string text_of(const std::vector<unsigned char>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

std::string floats(const std::vector<float>& values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::vector<float> counting(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = 0.25f * static_cast<float>(i) - 1.0f;
  return values;
}

// A version `major`.0 .npy preamble and header dict, padded to 64 bytes as numpy pads it.
std::string npy_header(const std::string& dict_text, int major = 1) {
  std::string dict = dict_text;
  const std::size_t length_size = major == 1 ? 2 : 4;
  while ((8 + length_size + dict.size() + 1) % 64 != 0)
    dict += ' ';
  dict += '\n';
  return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0' +
         u8(dict.size(), length_size) + dict;
}

std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                bool fortran = false) {
  return npy_header("{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                    ", 'shape': " + shape + ", }") +
         data;
}

std::string npy_f32(attn::Shape shape, const std::vector<float>& values) {
  return text_of(attn::serialize_npy(attn::make_float32(std::move(shape), values)));
}

// float32 (1, 3, 4) counting values with `value` at flat index `at`.
std::string npy_with(float value, std::size_t at, attn::Shape shape = {1, 3, 4}) {
  std::size_t n = 1;
  for (std::size_t s : shape)
    n *= s;
  std::vector<float> values = counting(n);
  values[at] = value;
  return npy_f32(std::move(shape), values);
}

std::string safetensors(const std::string& header, const std::string& data) {
  std::string h = header;
  while (h.size() % 8 != 0)
    h += ' ';
  return u8(h.size(), 8) + h + data;
}

std::uint32_t crc32(const std::string& data) {
  std::uint32_t crc = 0xffffffffu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

struct ZipMember {
  std::string name;
  std::string data;
  std::uint16_t method = 0;  // 0 stored; anything else is only declared
  std::uint16_t flags = 0;
};

// A zip as numpy.savez writes it (stored members, a central directory, an end record).
std::string zip(const std::vector<ZipMember>& members) {
  std::string out, central;
  for (const ZipMember& m : members) {
    const std::uint32_t crc = crc32(m.data);
    const std::size_t offset = out.size();
    out +=
        u8(0x04034b50, 4) + u8(20, 2) + u8(m.flags, 2) + u8(m.method, 2) + u8(0, 2) + u8(0x21, 2);
    out +=
        u8(crc, 4) + u8(m.data.size(), 4) + u8(m.data.size(), 4) + u8(m.name.size(), 2) + u8(0, 2);
    out += m.name + m.data;
    central += u8(0x02014b50, 4) + u8(20, 2) + u8(20, 2) + u8(m.flags, 2) + u8(m.method, 2) +
               u8(0, 2) + u8(0x21, 2);
    central += u8(crc, 4) + u8(m.data.size(), 4) + u8(m.data.size(), 4) + u8(m.name.size(), 2);
    central += u8(0, 2) + u8(0, 2) + u8(0, 2) + u8(0, 2) + u8(0, 4) + u8(offset, 4) + m.name;
  }
  const std::size_t cd_offset = out.size();
  out += central;
  out += u8(0x06054b50, 4) + u8(0, 4) + u8(members.size(), 2) + u8(members.size(), 2);
  out += u8(central.size(), 4) + u8(cd_offset, 4) + u8(0, 2);
  return out;
}

class Scratch;
using Maker = std::function<void(Scratch&, const fs::path&)>;

// Writes fixed bytes.
Maker bytes(std::string content) {
  return [content = std::move(content)](Scratch&, const fs::path& path) {
    std::ofstream out(path, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  };
}

// A copy of the BertForMaskedLM fixture folder (data/fixtures/bert/d12_masked_lm), then `change`.
Maker bert_folder(std::function<void(const fs::path&)> change) {
  return [change = std::move(change)](Scratch&, const fs::path& path) {
    fs::copy(attn::testing::fixture_path("bert/d12_masked_lm"), path, fs::copy_options::recursive);
    change(path);
  };
}

// A copy of the GPT2LMHeadModel fixture folder (data/fixtures/gpt2/d21_lm), then `change`.
Maker gpt2_folder(std::function<void(const fs::path&)> change) {
  return [change = std::move(change)](Scratch&, const fs::path& path) {
    fs::copy(attn::testing::fixture_path("gpt2/d21_lm"), path, fs::copy_options::recursive);
    change(path);
  };
}

const std::map<std::string, Maker>& makers();

// A fresh folder (attn::testing::ScratchDir), the working directory of every row, that makes the
// files the rows name.
class Scratch {
 public:
  const fs::path& dir() const { return dir_; }

  // Makes `name` if the table knows it and it is not there yet.
  void ensure(const std::string& name) {
    const auto it = makers().find(name);
    if (it == makers().end()) return;
    std::error_code ec;
    if (fs::exists(fs::symlink_status(dir_ / name, ec))) return;
    it->second(*this, dir_ / name);
    INFO("the maker of " << name);
    // A link to nothing, or to itself, counts.
    REQUIRE(fs::exists(fs::symlink_status(dir_ / name, ec)));
  }

  std::string read(const std::string& name) {
    ensure(name);
    return attn::testing::read_text((dir_ / name).string());
  }

  template <class F>
  auto in_dir(F&& f) {
    const fs::path before = fs::current_path();
    fs::current_path(dir_);
    struct Back {
      fs::path to;
      ~Back() { fs::current_path(to); }
    } back{before};
    return f();
  }

  // attn run in this folder, for files that attn itself writes (the weights of a lesson).
  void attn(const std::vector<std::string>& args) {
    const auto result = in_dir([&] { return run_attn(args); });
    INFO("attn run by a maker: " << result.err);
    REQUIRE(result.exit_code == 0);
  }

  // Every entry under the folder with its type, size and modification time.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> entries;
    for (auto it = fs::recursive_directory_iterator(dir_); it != fs::recursive_directory_iterator();
         ++it) {
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) != 0) continue;
      std::ostringstream what;
      what << (S_ISDIR(st.st_mode) ? "dir" : "file") << " size " << st.st_size << " mtime "
           << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec << " mode " << std::oct
           << (st.st_mode & 07777);
      entries[it->path().lexically_relative(dir_).string()] = what.str();  // links not followed
    }
    return entries;
  }

 private:
  static int next() {
    static int counter = 0;
    return counter++;
  }
  attn::testing::ScratchDir scratch_{"catalogue-" + std::to_string(next())};
  const fs::path& dir_ = scratch_.path;
};

// Weights that attn writes itself: a lesson's whole state_dict, as PyTorch would export it.
Maker lesson_weights(std::vector<std::string> args) {
  return [args = std::move(args)](Scratch& s, const fs::path& path) {
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--save-weights", path.filename().string(), "--quiet"});
    s.attn(all);
  };
}

// `from`'s bytes without the last `cut`.
Maker truncated(std::string from, std::size_t cut) {
  return [from = std::move(from), cut](Scratch& s, const fs::path& path) {
    const std::string whole = s.read(from);
    bytes(whole.substr(0, whole.size() - cut))(s, path);
  };
}

// `start`, then a hole of `hole` bytes: a large file that takes no disk.
Maker sparse(std::string start, std::uint64_t hole) {
  return [start = std::move(start), hole](Scratch& s, const fs::path& path) {
    bytes(start)(s, path);
    fs::resize_file(path, start.size() + hole);
  };
}

Maker symlink_to(std::string target) {
  return [target = std::move(target)](Scratch&, const fs::path& path) {
    fs::create_symlink(target, path);
  };
}

Maker fifo() {
  return [](Scratch&, const fs::path& path) { REQUIRE(::mkfifo(path.c_str(), 0600) == 0); };
}

// attention.safetensors with one more tensor, named `key`.
Maker attention_with_key(std::string key) {
  return [key = std::move(key)](Scratch& s, const fs::path& path) {
    s.ensure("attention.safetensors");
    attn::StateDict weights = attn::read_weights((s.dir() / "attention.safetensors").string());
    weights[key] = attn::make_float32({1}, {0.5f});
    bytes(text_of(attn::serialize_safetensors(weights)))(s, path);
  };
}

// The shipped reverse checkpoint with `change` made to its tensors and metadata.
Maker reverse_checkpoint_with(std::function<void(attn::StateDict&, attn::Metadata&)> change) {
  return [change = std::move(change)](Scratch& s, const fs::path& path) {
    attn::Metadata metadata;
    attn::StateDict weights = attn::read_weights(
        std::string(ATTN_SOURCE_DIR) + "/data/checkpoints/reverse.safetensors", &metadata);
    metadata.erase("format");
    change(weights, metadata);
    bytes(text_of(attn::serialize_safetensors(weights, metadata)))(s, path);
  };
}

const std::map<std::string, Maker>& makers() {
  const std::string good = npy_f32({1, 2, 3}, counting(6));
  const std::string f32x6 = floats(counting(6));
  static const std::map<std::string, Maker> table = {
      // --- .npy
      {"good.npy", bytes(good)},
      {"c_order.npy", bytes(npy_f32({2, 3, 4}, counting(24)))},
      {"fortran.npy",
       [](Scratch& s, const fs::path& path) {
         // The same (2, 3, 4) values as c_order.npy, stored first axis fastest.
         const std::vector<float> c = counting(24);
         std::vector<float> f;
         for (std::size_t k = 0; k < 4; ++k)
           for (std::size_t j = 0; j < 3; ++j)
             for (std::size_t i = 0; i < 2; ++i) f.push_back(c[i * 12 + j * 4 + k]);
         bytes(npy("<f4", "(2, 3, 4)", floats(f), true))(s, path);
       }},
      {"big_endian.npy",
       [](Scratch& s, const fs::path& path) {
         std::string data = floats(counting(6));
         for (std::size_t i = 0; i < data.size(); i += 4) std::swap(data[i], data[i + 3]), std::swap(data[i + 1], data[i + 2]);
         bytes(npy(">f4", "(1, 2, 3)", data))(s, path);
       }},
      {"folder.npy", [](Scratch&, const fs::path& path) { fs::create_directory(path); }},
      {"empty.npy", bytes("")},
      {"text.npy", bytes("hello, world\n")},
      {"archive.npy", bytes(zip({{"x.npy", good}}))},
      {"pickle.npy", bytes(std::string("\x80\x02}q\x00.", 6))},
      {"model.pt", bytes(std::string("\x80\x02}q\x00.", 6))},
      {"cut_preamble.npy", bytes(good.substr(0, 7))},
      {"cut_header.npy", bytes(good.substr(0, 40))},
      {"truncated.npy", bytes(good.substr(0, good.size() - 5))},
      {"header_length_lies.npy", bytes(good.substr(0, 8) + u8(5000, 2) + good.substr(10))},
      {"shape_too_big.npy", bytes(npy("<f4", "(1, 2, 4)", f32x6))},
      {"shape_too_small.npy", bytes(npy("<f4", "(1, 2, 2)", f32x6))},
      {"count_overflow.npy", bytes(npy("<f4", "(4294967296, 4294967296, 2)", ""))},
      {"bytes_overflow.npy", bytes(npy("<f4", "(2305843009213693952, 2, 2)", ""))},
      {"size_t_overflow.npy", bytes(npy("<f4", "(1, 99999999999999999999999, 3)", ""))},
      {"huge_shape.npy", bytes(npy("<f4", "(1, 100000, 100000)", f32x6))},
      {"sparse_huge.npy",
       [](Scratch& s, const fs::path& path) {
         // (1, 17000, 17000) float32, 1.08 GiB, all of it present but sparse on disk.
         const std::string header = npy("<f4", "(1, 17000, 17000)", "");
         bytes(header)(s, path);
         fs::resize_file(path, header.size() + std::uintmax_t{4} * 17000 * 17000);
       }},
      {"sparse_ids.npy", sparse(npy("<i8", "(1, 268435456)", ""), std::uint64_t{2} << 30)},
      {"negative_shape.npy", bytes(npy("<f4", "(1, -2, 3)", f32x6))},
      {"zero_axis.npy", bytes(npy("<f4", "(1, 0, 3)", ""))},
      {"fraction_shape.npy", bytes(npy("<f4", "(1, 2.5, 3)", f32x6))},
      {"shape_not_tuple.npy", bytes(npy("<f4", "6", f32x6))},
      {"unknown_dtype.npy", bytes(npy("<q9", "(1, 2, 3)", f32x6))},
      {"float16.npy", bytes(npy("<f2", "(1, 2, 3)", std::string(12, '\0')))},
      {"object.npy", bytes(npy("|O", "(1, 1, 3)", std::string("\x80\x02]q\x00(K\x01X\x01\x00\x00\x00aNe.", 17)))},
      {"complex64.npy", bytes(npy("<c8", "(1, 2, 3)", std::string(48, '\0')))},
      {"complex128.npy", bytes(npy("<c16", "(1, 2, 3)", std::string(96, '\0')))},
      {"structured.npy",
       bytes(npy_header("{'descr': [('x', '<f4'), ('y', '<f4')], 'fortran_order': False, 'shape': (1, 2, 3), }") +
             std::string(48, '\0'))},
      {"version9.npy", bytes(good.substr(0, 6) + '\x09' + good.substr(7))},
      {"header_not_dict.npy", bytes(npy_header("hello") + f32x6)},
      {"header_missing_key.npy", bytes(npy_header("{'descr': '<f4', 'shape': (1, 2, 3), }") + f32x6)},
      {"float64.npy", bytes(text_of(attn::serialize_npy(attn::make_float64({1, 2, 3}, std::vector<double>(6, 0.5)))))},
      {"int64.npy", bytes(text_of(attn::serialize_npy(attn::make_int64({1, 2, 3}, {1, 2, 3, 4, 5, 6}))))},
      {"rank2.npy", bytes(npy_f32({2, 3}, counting(6)))},
      {"rank4.npy", bytes(npy_f32({1, 1, 2, 3}, counting(6)))},
      {"nan.npy", bytes(npy_with(std::numeric_limits<float>::quiet_NaN(), 5))},
      {"inf.npy", bytes(npy_with(std::numeric_limits<float>::infinity(), 2))},
      {"minus_inf.npy", bytes(npy_with(-std::numeric_limits<float>::infinity(), 7))},
      {"nan_and_inf.npy",
       [](Scratch& s, const fs::path& path) {
         std::vector<float> values = counting(12);
         values[1] = std::numeric_limits<float>::infinity();
         values[4] = values[9] = std::numeric_limits<float>::quiet_NaN();
         bytes(npy_f32({1, 3, 4}, values))(s, path);
       }},
      {"nan_rank2.npy", bytes(npy_with(std::numeric_limits<float>::quiet_NaN(), 0, {3, 4}))},
      {"nan_float64.npy",
       bytes(text_of(attn::serialize_npy(
           attn::make_float64({1, 2, 3}, {0.0, std::numeric_limits<double>::quiet_NaN(), 1, 2, 3, 4}))))},
      {"nan_hidden.npy", bytes(npy_with(std::numeric_limits<float>::quiet_NaN(), 3, {1, 3, 6}))},
      // --- ids for the encoder
      {"ids.npy", bytes(text_of(attn::serialize_npy(attn::make_int64({1, 3}, {1, 2, 3}))))},
      {"ids_float.npy", bytes(npy_f32({1, 3}, {1, 2, 3}))},
      {"ids_negative.npy", bytes(text_of(attn::serialize_npy(attn::make_int64({1, 3}, {1, -1, 2}))))},
      {"ids_too_large.npy", bytes(text_of(attn::serialize_npy(attn::make_int64({1, 3}, {1, 2, 100000}))))},
      {"ids_rank3.npy", bytes(text_of(attn::serialize_npy(attn::make_int64({1, 1, 3}, {1, 2, 3}))))},
      {"ids_empty.npy", bytes(text_of(attn::serialize_npy(attn::make_int64({1, 0}, {}))))},
      // --- weights that attn writes, of several models
      {"attention.safetensors", lesson_weights({"attention"})},
      {"attention_d8.safetensors", lesson_weights({"attention", "--d-model", "8"})},
      {"attention.npz", lesson_weights({"attention"})},
      {"feed_forward.safetensors", lesson_weights({"feed-forward"})},
      {"layer_norm.npz", lesson_weights({"layer-norm"})},
      {"multi_head_wide.safetensors", lesson_weights({"multi-head", "--variant", "wide"})},
      {"embedding.safetensors", lesson_weights({"positional-encoding", "--kind", "learned"})},
      {"nan_weights.safetensors",
       [](Scratch& s, const fs::path& path) {
         s.ensure("attention.safetensors");
         attn::StateDict weights = attn::read_weights((s.dir() / "attention.safetensors").string());
         attn::Array& w = weights.at("toqueries.weight");
         const float nan = std::numeric_limits<float>::quiet_NaN();
         std::memcpy(w.bytes.data() + 4 * 7, &nan, 4);
         bytes(text_of(attn::serialize_safetensors(weights)))(s, path);
       }},
      // --- any input file
      {"fifo.npy", fifo()},
      {"fifo.safetensors", fifo()},
      {"fifo.json", fifo()},
      {"fifo.txt", fifo()},
      {"zero.npy", symlink_to("/dev/zero")},
      {"loop1",
       [](Scratch& s, const fs::path& path) {
         symlink_to("loop1")(s, s.dir() / "loop2");
         symlink_to("loop2")(s, path);
       }},
      {"dangling.npy", symlink_to("gone.npy")},
      {"sparse_big.safetensors",
       sparse(safetensors(R"({"a":{"dtype":"F32","shape":[536870912],"data_offsets":[0,2147483648]}})", ""),
              std::uint64_t{2} << 30)},
      {"sparse_config.json", sparse("{", std::uint64_t{2} << 30)},
      {"sparse_vocab.txt", sparse("[UNK]\n", std::uint64_t{2} << 30)},
      // --- checkpoints of attn train, changed
      {"checkpoint_extra_key.safetensors",
       reverse_checkpoint_with([](attn::StateDict& w, attn::Metadata&) {
         w["evil\x1b[2J"] = attn::make_float32({1}, {0.5f});
       })},
      {"checkpoint_norm_sideways.safetensors",
       reverse_checkpoint_with([](attn::StateDict&, attn::Metadata& m) {
         const std::string pre = "\"norm\":\"pre\"";
         m["attn_model"].replace(m["attn_model"].find(pre), pre.size(), "\"norm\":\"sideways\"");
       })},
      {"checkpoint_not_json.safetensors",
       reverse_checkpoint_with(
           [](attn::StateDict&, attn::Metadata& m) { m["attn_model"] = "{\"task\": reverse}"; })},
      // --- .safetensors
      {"truncated.safetensors", truncated("attention.safetensors", 4)},
      {"cut_size.safetensors", bytes(std::string("\x10\x00\x00\x00\x00", 5))},
      {"header_too_big.safetensors", bytes(u8(std::uint64_t{1} << 63, 8) + "{}")},
      {"header_past_end.safetensors", bytes(u8(1000, 8) + "{}      ")},
      {"not_json.safetensors", bytes(safetensors("{\"a\": tensor}", ""))},
      {"not_utf8.safetensors", bytes(safetensors("{\"\xff\": {}}", ""))},
      {"duplicate_key.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                         std::string(4, '\0')))},
      {"overlap.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         std::string(12, '\0')))},
      {"gap.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                         std::string(20, '\0')))},
      {"past_end.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, '\0')))},
      {"trailing.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(12, '\0')))},
      {"reversed_offsets.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", std::string(8, '\0')))},
      {"shape_lies.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')))},
      {"size_overflow.safetensors",
       bytes(safetensors(
           R"({"a":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,16]}})",
           std::string(16, '\0')))},
      {"offset_overflow.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]}})",
                         std::string(8, '\0')))},
      {"negative_shape.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, '\0')))},
      {"unknown_dtype.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"Q8","shape":[2],"data_offsets":[0,2]}})", std::string(2, '\0')))},
      {"float16.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", std::string(4, '\0')))},
      {"bfloat16.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", std::string(4, '\0')))},
      {"complex64.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"C64","shape":[2],"data_offsets":[0,16]}})", std::string(16, '\0')))},
      {"metadata_not_strings.safetensors",
       bytes(safetensors(R"({"__metadata__":{"format":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                         std::string(4, '\0')))},
      {"entry_extra_key.safetensors",
       bytes(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"stride":[1]}})", std::string(4, '\0')))},
      {"no_offsets.safetensors", bytes(safetensors(R"({"a":{"dtype":"F32","shape":[1]}})", std::string(4, '\0')))},
      {"unicode_key.safetensors", attention_with_key(std::string("\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87\0\xf0\x9f\x98\x80", 13))},
      {"esc_key.safetensors", attention_with_key("\x1b]0;pwned-title\a\x1b[2J\x1b[31mFAKE: all tests passed")},
      {"pickle.safetensors", bytes(std::string("\x80\x02}q\x00.", 6))},
      {"weights.bin", bytes(std::string("\x80\x02}q\x00.", 6))},
      {"weights.txt", bytes("toqueries.weight 1 2 3\n")},
      // --- .npz
      {"truncated.npz", truncated("attention.npz", 10)},
      {"not_zip.npz", bytes("hello, world\n")},
      {"empty.npz", bytes("")},
      {"member_not_npy.npz", bytes(zip({{"notes.txt", "hello\n"}}))},
      {"member_bad_npy.npz", bytes(zip({{"toqueries.weight.npy", "hello\n"}}))},
      {"member_truncated.npz", bytes(zip({{"toqueries.weight.npy", good.substr(0, good.size() - 4)}}))},
      {"torch_zip.npz", bytes(zip({{"archive/data.pkl", "\x80\x02}q\x00."}}))},
      {"deflate64.npz", bytes(zip({{"a.npy", good, 9}}))},
      {"bomb.npz", bytes(attn::testing::deflated_zeros_npz({"toqueries.weight", "tokeys.weight", "tovalues.weight"}, 63))},
      {"emptyname.npz",
       [](Scratch& s, const fs::path& path) {
         s.ensure("attention.npz");
         attn::StateDict weights = attn::read_weights((s.dir() / "attention.npz").string());
         weights[""] = attn::make_float32({1}, {0.5f});
         bytes(text_of(attn::serialize_npz(weights)))(s, path);
       }},
      {"encrypted.npz", bytes(zip({{"a.npy", good, 0, 1}}))},
      {"bad_crc.npz",
       [good](Scratch& s, const fs::path& path) {
         std::string archive = zip({{"a.npy", good}});
         archive[30 + 5 + 128 + 2] ^= 0x40;  // a data byte of the member, after its header
         bytes(archive)(s, path);
       }},
      // --- config.json
      {"config_empty.json", bytes("")},
      {"config_truncated.json", bytes(R"({"hidden_size": 8,)")},
      {"config_array.json", bytes("[6, 2]")},
      {"config_not_utf8.json", bytes("{\"hidden_act\": \"gel\xff\"}")},
      {"config_zero.json", bytes(R"({"hidden_size": 0})")},
      {"config_negative.json", bytes(R"({"num_attention_heads": -2})")},
      {"config_fraction.json", bytes(R"({"hidden_size": 6.5})")},
      {"config_string.json", bytes(R"({"hidden_size": "768"})")},
      {"config_overflow.json", bytes(R"({"intermediate_size": 18446744073709551617})")},
      {"config_1e400.json", bytes(R"({"layer_norm_eps": 1e400})")},
      {"config_too_large.json", bytes(R"({"vocab_size": 5000000000})")},
      {"config_layers.json", bytes(R"({"num_hidden_layers": 1000000000})")},
      {"config_nan.json", bytes(R"({"layer_norm_eps": NaN})")},
      {"config_indivisible.json", bytes(R"({"hidden_size": 10, "num_attention_heads": 4})")},
      {"config_eps.json", bytes(R"({"layer_norm_eps": -1e-12})")},
      {"config_dropout.json", bytes(R"({"hidden_dropout_prob": 1.5})")},
      {"config_attention_dropout.json", bytes(R"({"attention_probs_dropout_prob": 1.0})")},
      {"config_act.json", bytes(R"({"hidden_act": "relu"})")},
      {"configs", [](Scratch&, const fs::path& path) { fs::create_directory(path); }},
      // --- Hugging Face BERT folders (--pretrained): a good one, then each way to break it
      {"bert-mini", bert_folder([](const fs::path&) {})},
      {"bert-no-config", bert_folder([](const fs::path& p) { fs::remove(p / "config.json"); })},
      {"bert-pickle",
       bert_folder([](const fs::path& p) {
         fs::remove(p / "model.safetensors");
         std::ofstream(p / "pytorch_model.bin") << "a pickle";
       })},
      {"bert-llama", bert_folder([](const fs::path& p) {
         edit_text(p / "config.json", "\"model_type\": \"bert\"", "\"model_type\": \"llama\"");
       })},
      {"bert-wider", bert_folder([](const fs::path& p) {
         edit_text(p / "config.json", "\"hidden_size\": 12", "\"hidden_size\": 24");
       })},
      {"bert-three-layers", bert_folder([](const fs::path& p) {
         edit_text(p / "config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3");
       })},
      {"bert-extra-key", bert_folder([](const fs::path& p) {
         attn::StateDict w = attn::read_weights((p / "model.safetensors").string());
         w["classifier.weight"] = attn::make_float32({2, 12}, std::vector<float>(24, 0.5f));
         attn::write_weights((p / "model.safetensors").string(), w, {{"format", "pt"}});
       })},
      {"bert-truncated", bert_folder([](const fs::path& p) {
         fs::resize_file(p / "model.safetensors", fs::file_size(p / "model.safetensors") - 100);
       })},
      {"bert-no-vocab", bert_folder([](const fs::path& p) { fs::remove(p / "vocab.txt"); })},
      // --- Hugging Face GPT-2 folders
      {"gpt2-mini", gpt2_folder([](const fs::path&) {})},
      {"gpt2-no-merges", gpt2_folder([](const fs::path& p) { fs::remove(p / "merges.txt"); })},
      {"gpt2-cross", gpt2_folder([](const fs::path& p) {
         edit_text(p / "config.json", "\"model_type\": \"gpt2\"",
                   "\"model_type\": \"gpt2\", \"add_cross_attention\": true");
       })},
      {"gpt2-untied", gpt2_folder([](const fs::path& p) {
         attn::StateDict w = attn::read_weights((p / "model.safetensors").string());
         attn::Array head = w.at("transformer.wte.weight");
         reinterpret_cast<float*>(head.bytes.data())[0] += 1.0f;
         w["lm_head.weight"] = head;
         attn::write_weights((p / "model.safetensors").string(), w, {{"format", "pt"}});
       })},
      {"gpt2-transposed", gpt2_folder([](const fs::path& p) {
         attn::StateDict w = attn::read_weights((p / "model.safetensors").string());
         attn::Array& c_attn = w.at("transformer.h.0.attn.c_attn.weight");
         std::swap(c_attn.shape[0], c_attn.shape[1]);
         attn::write_weights((p / "model.safetensors").string(), w, {{"format", "pt"}});
       })},
      // --- vocab.txt
      {"vocab_empty.txt", bytes("")},
      {"vocab_not_utf8.txt", bytes("[PAD]\n[UNK]\ncaf\xe9\n")},
      {"vocab_duplicate.txt", bytes("[PAD]\n[UNK]\ntime\nflies\ntime\n")},
      {"vocab_no_unk.txt", bytes("[PAD]\ntime\nflies\n")},
      {"vocab_folder", [](Scratch&, const fs::path& path) { fs::create_directory(path); }},
      // --- corpora (attn tokenizer train)
      {"corpus.txt", bytes("the cat sat on the mat; the cat ate the hat.\n")},
      {"corpus_empty.txt", bytes("")},
      {"corpus_binary.bin", bytes(std::string("\x7f" "ELF\x02\x01\x01\x00\x00", 9))},
      // --- output targets
      {"a-file", bytes("keep me\n")},
      {"thesis.safetensors", bytes("thesis draft, do not lose\n")},
      {"mine.png", bytes("mine\n")},
      {"notes.json", bytes("{\"mine\": true}\n")},
      {"link.safetensors",
       [](Scratch& scratch, const fs::path& path) {
         scratch.ensure("a-file");
         fs::create_symlink("a-file", path);
       }},
      {"a-folder", [](Scratch&, const fs::path& path) { fs::create_directory(path); }},
      // A student's tree, as `attn assignments release` writes it.
      {"course",
       [](Scratch& s, const fs::path& path) {
         s.attn({"assignments", "release", "--out", path.filename().string()});
       }},
      {"a-project",
       [](Scratch&, const fs::path& path) {
         fs::create_directories(path / "src");
         std::ofstream(path / "manifest.json") << "{\"name\": \"my-web-app\"}\n";
         std::ofstream(path / "thesis.tex") << "\\documentclass{article}\n";
       }},
      {"link-to-folder",
       [](Scratch& scratch, const fs::path& path) {
         scratch.ensure("a-folder");
         fs::create_directory_symlink("a-folder", path);
       }},
      {"not-a-save",
       [](Scratch&, const fs::path& path) {
         fs::create_directory(path);
         std::ofstream(path / "notes.txt") << "keep me\n";
       }},
  };
  return table;
}

// Makes the files a row names: any path component of an argument (or of --opt=VALUE's value)
// that the table knows.
void make_named_files(Scratch& scratch, const Row& row) {
  for (const std::string& arg : row.args) {
    std::string value = arg;
    if (value.starts_with("--") && value.find('=') != std::string::npos)
      value = value.substr(value.find('=') + 1);
    for (const auto& part : fs::path(value))
      scratch.ensure(part.string());
  }
}

std::string show(const std::map<std::string, std::string>& entries) {
  std::string out;
  for (const auto& [name, what] : entries)
    out += "\n  " + name + " (" + what + ")";
  return out;
}

// ATTN_UPDATE_CATALOGUE=1 rewrites the exit and stderr cells of every row whose run differs, as
// ATTN_UPDATE_GOLDEN does for goldens: read the diff of docs/bad-input.md before committing it.
struct Observed {
  int exit_code;
  std::string stderr_line;
};
std::map<std::size_t, Observed>& observed_rows() {
  static std::map<std::size_t, Observed> rows;
  return rows;
}

std::string stderr_cell(const std::string& line) {
  if (line.empty()) return "(none)";
  std::string escaped;
  for (char c : line)
    escaped += c == '|' ? std::string("\\|") : std::string(1, c);
  return escaped.find('`') == std::string::npos ? "`" + escaped + "`" : "`` " + escaped + " ``";
}

void update_catalogue() {
  const std::string path = std::string(ATTN_SOURCE_DIR) + "/docs/bad-input.md";
  std::ifstream in(path);
  std::string text, line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (const auto it = observed_rows().find(number); it != observed_rows().end()) {
      std::vector<std::string> cells = cells_of(line);
      cells[2] = std::to_string(it->second.exit_code);
      cells[3] = stderr_cell(it->second.stderr_line);
      line = "|";
      for (std::size_t i = 0; i < cells.size(); ++i) {
        std::string cell;  // the stderr cell is escaped already
        for (char c : cells[i])
          cell += c == '|' && i != 3 ? std::string("\\|") : std::string(1, c);
        line += " " + cell + " |";
      }
    }
    text += line + "\n";
  }
  in.close();
  std::ofstream(path, std::ios::binary) << text;
  WARN("rewrote " << observed_rows().size() << " rows of " << path);
}

void run_row(Scratch& scratch, const Row& row) {
  INFO("docs/bad-input.md:" << row.line << ": " << row.command);
  // Under /proc root gets ENOENT where anyone else gets EACCES: the rows give root's line.
  if (row.command.find("/proc/") != std::string::npos && geteuid() != 0) return;
  make_named_files(scratch, row);
  const auto before = scratch.snapshot();
  const auto result = scratch.in_dir([&] { return run_attn(row.args); });
  INFO("actual exit: " << result.exit_code);
  INFO("actual stderr: " << result.err);
  const std::string actual_line =
      result.err.ends_with("\n") ? result.err.substr(0, result.err.size() - 1) : result.err;
  if (std::getenv("ATTN_UPDATE_CATALOGUE") != nullptr &&
      (result.exit_code != row.exit_code || actual_line != row.stderr_line) &&
      actual_line.find('\n') == std::string::npos) {
    observed_rows()[row.line] = {result.exit_code, actual_line};
  }
  CHECK(result.exit_code == row.exit_code);
  CHECK(result.err == (row.stderr_line.empty() ? std::string() : row.stderr_line + "\n"));
  if (row.exit_code == 2) CHECK(result.out.empty());
  for (const std::string& path : row.not_written) {
    INFO("not written: " << path);
    std::error_code ec;
    CHECK_FALSE(
        (!before.contains(path) && fs::exists(fs::symlink_status(scratch.dir() / path, ec))));
  }
  const auto after = scratch.snapshot();
  if (after != before) {
    std::map<std::string, std::string> changed;
    for (const auto& [name, what] : after)
      if (!before.contains(name) || before.at(name) != what) changed[name] = what;
    for (const auto& [name, what] : before)
      if (!after.contains(name)) changed[name] = "removed";
    FAIL_CHECK("the scratch folder changed:" << show(changed));
  }
}

}  // namespace

TEST_CASE("every row of docs/bad-input.md gives its exit code, its one stderr line and no output",
          "[cli][bad-input][catalogue]") {
  const std::vector<Section> sections = read_catalogue();
  for (const Section& section : sections) {
    if (section.rows.empty()) continue;
    DYNAMIC_SECTION(section.title) {
      Scratch scratch;
      for (const Row& row : section.rows)
        run_row(scratch, row);
    }
  }
  if (std::getenv("ATTN_UPDATE_CATALOGUE") != nullptr && !observed_rows().empty())
    update_catalogue();
}

TEST_CASE("docs/bad-input.md has the catalogue's sections and every file it names can be made",
          "[cli][bad-input][catalogue]") {
  const std::vector<Section> sections = read_catalogue();
  std::size_t rows = 0;
  bool memory_budget = false;
  for (const Section& section : sections) {
    rows += section.rows.size();
    memory_budget = memory_budget || section.title == "Memory budget";
    for (const Row& row : section.rows) {
      INFO("docs/bad-input.md:" << row.line << ": " << row.command);
      // A row either refuses with one line, or runs on: with a warning line, or silently.
      if (row.exit_code == 2) CHECK_FALSE(row.stderr_line.empty());
      CHECK(row.stderr_line.find('\n') == std::string::npos);
    }
  }
  CHECK(memory_budget);
  CHECK(rows >= 100);
}

TEST_CASE("a Fortran-order or big-endian .npy is read as the same values as its C-order twin",
          "[cli][bad-input][catalogue]") {
  Scratch scratch;
  for (const char* name : {"c_order.npy", "fortran.npy", "big_endian.npy", "good.npy"})
    scratch.ensure(name);
  auto saved_input = [&](const std::string& input, const std::string& dir) {
    const auto result = scratch.in_dir([&] {
      return run_attn({"dot-product", "--input", input, "--save", dir, "--quiet"});
    });
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return attn::read_npy((scratch.dir() / dir / "input.npy").string());
  };
  const attn::Array c = saved_input("c_order.npy", "c");
  const attn::Array f = saved_input("fortran.npy", "f");
  CHECK(f.shape == attn::Shape{2, 3, 4});
  CHECK(f.bytes == c.bytes);
  CHECK(saved_input("big_endian.npy", "b").bytes == saved_input("good.npy", "g").bytes);
}
