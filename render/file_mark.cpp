#include "file_mark.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace attn::render {

namespace {

constexpr unsigned char kPngSignature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
constexpr std::string_view kPngKeyword = "Software";
constexpr std::string_view kPngText = "attn";
// The most of a file's start and end that is read to find a mark; a safetensors header may be
// longer and is read whole up to kLargestHeader.
constexpr std::size_t kLook = 64 * 1024;
constexpr std::uint64_t kLargestHeader = 16 * 1024 * 1024;

std::uint32_t big_endian(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

void put_big_endian(std::string& s, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    s.push_back(static_cast<char>((v >> shift) & 0xff));
}

// The file's first and last bytes (up to kLook each), and its size; false when it cannot be read.
struct Sample {
  std::string head, tail;
  std::uint64_t size = 0;
};

bool read_at(int fd, std::uint64_t offset, std::size_t count, std::string& out) {
  out.assign(count, '\0');
  std::size_t done = 0;
  while (done < count) {
    const ssize_t n =
        ::pread(fd, out.data() + done, count - done, static_cast<off_t>(offset + done));
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool png_marked(const std::string& head) {
  std::size_t at = sizeof kPngSignature;
  while (at + 8 <= head.size()) {
    const std::uint32_t length = big_endian(head, at);
    const std::string type = head.substr(at + 4, 4);
    if (type == "IDAT" || type == "IEND") return false;
    if (type == "tEXt" && at + 8 + length <= head.size()) {
      const std::string expected = std::string(kPngKeyword) + '\0' + std::string(kPngText);
      if (head.compare(at + 8, length, expected) == 0) return true;
    }
    at += 12 + static_cast<std::size_t>(length);
  }
  return false;
}

bool safetensors_marked(int fd, const std::string& head) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(head[static_cast<std::size_t>(i)]);
  if (n == 0 || n > kLargestHeader) return false;
  std::string text;
  if (!read_at(fd, 8, static_cast<std::size_t>(n), text)) return false;
  try {
    const nlohmann::json header = nlohmann::json::parse(text);
    const auto meta = header.find("__metadata__");
    if (meta == header.end() || !meta->is_object()) return false;
    const auto by = meta->find("written_by");
    return meta->contains("attn_model") ||
           (by != meta->end() && by->is_string() && by->get<std::string>() == "attn");
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

bool npz_marked(const std::string& tail) {
  const std::size_t end_record = 22 + kWrittenBy.size();
  if (tail.size() < end_record) return false;
  const std::size_t at = tail.size() - end_record;
  const bool signature = tail.compare(at, 4, "PK\x05\x06") == 0;
  const std::size_t comment =
      static_cast<unsigned char>(tail[at + 20]) |
      (static_cast<std::size_t>(static_cast<unsigned char>(tail[at + 21])) << 8);
  return signature && comment == kWrittenBy.size() &&
         tail.compare(at + 22, comment, kWrittenBy) == 0;
}

bool text_marked(const Sample& s) {
  if (s.head.find(kWrittenByComment) != std::string::npos) return true;
  if (s.head.find("\"written_by\": \"attn\"") != std::string::npos) return true;
  // attn grade's text report ends with its score and the confinement it ran under.
  return s.tail.find("\nScore: ") != std::string::npos &&
         s.tail.find("\nStudent code ran confined (") != std::string::npos &&
         s.tail.ends_with(").\n");
}

}  // namespace

std::string marked_png(std::string bytes) {
  // After the signature and the IHDR chunk (8 + 4 + 4 + 13 + 4 bytes).
  constexpr std::size_t kAfterHeader = 33;
  if (bytes.size() < kAfterHeader || bytes.compare(12, 4, "IHDR") != 0)
    throw Error(ErrorKind::internal, "marked_png", "the PNG does not start with its IHDR chunk");
  std::string chunk;
  const std::string data = std::string(kPngKeyword) + '\0' + std::string(kPngText);
  put_big_endian(chunk, static_cast<std::uint32_t>(data.size()));
  chunk += "tEXt" + data;
  const auto crc = crc32_z(0, reinterpret_cast<const Bytef*>(chunk.data() + 4), chunk.size() - 4);
  put_big_endian(chunk, static_cast<std::uint32_t>(crc));
  bytes.insert(kAfterHeader, chunk);
  return bytes;
}

std::string marked_svg(std::string bytes) {
  // After the XML declaration, which must stay first.
  const std::size_t line = bytes.starts_with("<?xml") ? bytes.find('\n') : std::string::npos;
  const std::size_t at = line == std::string::npos ? 0 : line + 1;
  bytes.insert(at, std::string(kWrittenByComment) + "\n");
  return bytes;
}

std::vector<unsigned char> marked_npz(std::vector<unsigned char> bytes) {
  if (bytes.size() < 22 || bytes[bytes.size() - 22] != 'P' || bytes[bytes.size() - 1] != 0 ||
      bytes[bytes.size() - 2] != 0)
    throw Error(ErrorKind::internal, "marked_npz", "the archive does not end with its end record");
  bytes[bytes.size() - 2] = static_cast<unsigned char>(kWrittenBy.size());
  bytes.insert(bytes.end(), kWrittenBy.begin(), kWrittenBy.end());
  return bytes;
}

bool attn_wrote(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool marked = false;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 8) {
    Sample s;
    s.size = static_cast<std::uint64_t>(st.st_size);
    // The start and the end, each up to kLook bytes (the same bytes for a small file).
    const std::size_t look = static_cast<std::size_t>(std::min<std::uint64_t>(s.size, kLook));
    if (read_at(fd, 0, look, s.head) && read_at(fd, s.size - look, look, s.tail)) {
      if (s.head.compare(0, sizeof kPngSignature,
                         std::string(std::begin(kPngSignature), std::end(kPngSignature))) == 0) {
        marked = png_marked(s.head);
      } else if (s.head.starts_with("PK")) {
        marked = npz_marked(s.tail);
      } else if (s.head[8] == '{') {
        marked = safetensors_marked(fd, s.head);
      } else {
        marked = text_marked(s);
      }
    }
  }
  ::close(fd);
  return marked;
}

void refuse_foreign_file(const std::string& path, std::string_view subject) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  const auto refuse = [&](std::string_view what) {
    return Error(ErrorKind::bad_file, subject,
                 fmt::format("'{}' {}: attn replaces only files it wrote; choose another name, or "
                             "move that file away first",
                             printable(path), what))
        .about(std::string(subject));
  };
  if (S_ISLNK(st.st_mode)) throw refuse("is a symbolic link");
  if (!S_ISREG(st.st_mode)) return;  // a folder or a device: the caller's own checks name it
  if (!attn_wrote(path)) throw refuse("exists and attn did not write it");
}

}  // namespace attn::render
