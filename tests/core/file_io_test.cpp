// core/io/file_io.cpp: every reader (.npy, weights, config.json, vocab.txt) opens its file one way,
// so that none of them can be made to hang on a FIFO, read /dev/zero until memory runs out, or
// read more than its cap; and each says what is wrong with a path that is not a regular file.
#include "io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "io/config.hpp"
#include "io/npy.hpp"
#include "io/tokenizer.hpp"
#include "io/weights.hpp"
#include "memory_limit.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

struct Reader {
  const char* name;
  std::function<void(const std::string&)> read;
};

const std::vector<Reader>& readers() {
  static const std::vector<Reader> all = {
      {"read_npy", [](const std::string& path) { attn::read_npy(path); }},
      {"read_weights", [](const std::string& path) { attn::read_weights(path); }},
      {"load_config", [](const std::string& path) { attn::load_config(path); }},
      {"read_vocabulary", [](const std::string& path) { attn::read_vocabulary(path); }},
  };
  return all;
}

struct Refusal {
  attn::ErrorKind kind = attn::ErrorKind::internal;
  std::string message;  // "" when the reader returned
};

// What `read` throws on `path`. A reader that blocks is killed by the alarm: the test fails, it
// does not hang.
Refusal refusal(const Reader& reader, const std::string& path) {
  alarm(20);
  Refusal r;
  try {
    reader.read(path);
  } catch (const attn::Error& e) {
    r = {e.kind(), e.detail()};
  }
  alarm(0);
  return r;
}

// A file of `size` bytes that takes no disk: `start`, then a hole.
void sparse_file(const fs::path& path, const std::string& start, std::uint64_t size) {
  std::ofstream(path, std::ios::binary) << start;
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(size)) == 0);
}

void check_refused(const std::string& path, const std::string& expected) {
  for (const Reader& reader : readers()) {
    INFO(reader.name << " on " << path);
    const Refusal r = refusal(reader, path);
    INFO(r.message);
    CHECK(r.kind == attn::ErrorKind::bad_file);
    CHECK(r.message.find(expected) != std::string::npos);
    CHECK(r.message.find('\n') == std::string::npos);
  }
}

}  // namespace

TEST_CASE("a FIFO is refused at once by every reader, never read", "[file_io]") {
  attn::testing::ScratchDir dir("file-io-fifo");
  const fs::path fifo = dir.path / "fifo.npy";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_refused(
      fifo.string(),
      fmt::format("'{}' is a FIFO (named pipe), not a regular file: give a", fifo.string()));
}

TEST_CASE("/dev/zero, and a link to it, are refused as character devices", "[file_io]") {
  check_refused("/dev/zero", "'/dev/zero' is a character device, not a regular file: give a");
  check_refused("/dev/urandom", "is a character device, not a regular file");
  attn::testing::ScratchDir dir("file-io-zero");
  fs::create_symlink("/dev/zero", dir.path / "zero.npy");
  check_refused((dir.path / "zero.npy").string(),
                "is a character device (a link to '/dev/zero'), not a regular file");
}

TEST_CASE("a directory is refused as one", "[file_io]") {
  attn::testing::ScratchDir dir("file-io-dir");
  check_refused(dir.path.string(), "is a directory, not a regular file: give a");
}

TEST_CASE("a symlink loop, a path through a file and a dangling link say so", "[file_io]") {
  attn::testing::ScratchDir dir("file-io-paths");
  fs::create_symlink("loop2", dir.path / "loop1");
  fs::create_symlink("loop1", dir.path / "loop2");
  check_refused((dir.path / "loop1").string(), "too many levels of symbolic links");
  std::ofstream(dir.path / "afile") << "a file\n";
  check_refused(
      (dir.path / "afile" / "x.npy").string(),
      fmt::format("cannot be opened: '{}' is not a directory", (dir.path / "afile").string()));
  fs::create_symlink("gone.npy", dir.path / "dangling.npy");
  check_refused((dir.path / "dangling.npy").string(),
                "is a symbolic link to 'gone.npy', which does not exist");
  check_refused((dir.path / "missing.npy").string(), "does not exist: check the path");
  check_refused("", "the file name is empty");
}

TEST_CASE("a file nobody may read is refused as such", "[file_io]") {
  if (::geteuid() == 0) return;  // root reads it all the same
  attn::testing::ScratchDir dir("file-io-access");
  const fs::path path = dir.path / "secret.npy";
  std::ofstream(path) << "x";
  fs::permissions(path, fs::perms::none);
  check_refused(path.string(), "permission denied");
}

TEST_CASE("a sparse file larger than the cap is refused before it is read", "[file_io]") {
  const attn::testing::MemoryLimit limit(1 << 20);
  attn::testing::ScratchDir dir("file-io-sparse");
  const std::uint64_t two_gib = std::uint64_t{2} << 30;
  struct Case {
    const char* reader;
    std::string file, start, expected;
  };
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 268435456), }";
  while ((10 + dict.size() + 1) % 64 != 0)
    dict += ' ';
  dict += '\n';
  const std::string npy_header =
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' + dict;
  const std::vector<Case> cases = {
      {"read_npy", "ids.npy", npy_header,
       "shape (1, 268435456) int64 needs 2 GiB, more than the memory limit of 1 MiB (set by the "
       "test)"},
      {"read_weights", "w.safetensors", std::string("\x10\0\0\0\0\0\0\0{}", 10),
       "w.safetensors' is 2 GiB, more than the memory limit of 1 MiB (set by the test)"},
      {"load_config", "config.json", "{}",
       "config.json' is 2 GiB, more than a config.json may have (1 MiB)"},
      {"read_vocabulary", "vocab.txt", "[UNK]\n",
       "vocab.txt' is 2 GiB, more than a vocab.txt may have (64 MiB)"},
  };
  for (const Case& c : cases) {
    INFO(c.reader);
    sparse_file(dir.path / c.file, c.start, c.start.size() + two_gib);
    for (const Reader& reader : readers()) {
      if (reader.name != std::string(c.reader)) continue;
      const Refusal r = refusal(reader, (dir.path / c.file).string());
      INFO(r.message);
      CHECK(r.kind == attn::ErrorKind::too_large);
      CHECK(r.message.find(c.expected) != std::string::npos);
    }
  }
}

TEST_CASE("a file whose size shows only when read (/proc) is read up to the cap", "[file_io]") {
  const std::vector<unsigned char> status = attn::read_file("/proc/self/status", "a status file");
  const std::string text(status.begin(), status.end());
  CHECK(text.starts_with("Name:"));
  const attn::SizeCap small{16, "the test's 16 bytes", "read less"};
  attn::InputFile file("/proc/self/status", "a status file");
  CHECK(file.size() == 0);
  try {
    file.read_rest(small);
    FAIL("read past the cap");
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::too_large);
    CHECK(e.detail() == "'/proc/self/status' holds more than the test's 16 bytes: read less");
  }
  // Every reader reads it and finds it is not its format: it is not called empty.
  for (const Reader& reader : readers()) {
    INFO(reader.name);
    const Refusal r = refusal(reader, "/proc/self/status");
    INFO(r.message);
    CHECK_FALSE(r.message.empty());
    CHECK(r.message.find("empty") == std::string::npos);
  }
  CHECK_THAT(refusal(readers()[0], "/proc/self/status").message,
             Catch::Contains("not a .npy file: it starts with 'Name:"));
}

TEST_CASE("control characters in a path are escaped in the message", "[file_io]") {
  const std::string path = "x\x1b[2Jy\a\x01.npy";
  for (const Reader& reader : readers()) {
    INFO(reader.name);
    const Refusal r = refusal(reader, path);
    CHECK(r.message.find("'x\\x1b[2Jy\\x07\\x01.npy' does not exist") != std::string::npos);
    CHECK(r.message.find('\x1b') == std::string::npos);
  }
}

TEST_CASE("printable keeps UTF-8 and escapes control characters and stray bytes", "[file_io]") {
  CHECK(attn::printable(std::string_view("ключ\x00😀", 13)) == "ключ\\x00😀");
  CHECK(attn::printable("\x1b]0;pwned\a\x1b[2J") == "\\x1b]0;pwned\\x07\\x1b[2J");
  CHECK(attn::printable("caf\xe9 \xc2\x9b \x7f") == "caf\\xe9 \\xc2\\x9b \\x7f");
  CHECK(attn::printable("\xed\xa0\x80\xc0\xaf") == "\\xed\\xa0\\x80\\xc0\\xaf");
  CHECK(attn::printable("abcdef", 3) == "abc...");
}
