// Input files, opened one way by every reader, and atomic writes (a temporary file in the same
// directory, renamed into place).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// The most a reader takes from one file, and how a refusal says so:
// "'w.safetensors' is 2 GiB, more than <limit>: <fix>".
struct SizeCap {
  std::uint64_t bytes = 0;
  std::string limit;  // "the memory limit of 100 MiB (set by ATTN_MAX_MEMORY)"
  std::string fix;    // "pass a smaller array"
};

// The memory limit of core/base/budget.hpp as a cap. When ATTN_MAX_MEMORY is not a size, the default
// limit: check_budget refuses the variable, naming it, once the files are read.
SizeCap memory_cap(std::string fix);

// An input file, opened without blocking (a FIFO cannot hang the open) and checked on the open
// descriptor: only a regular file is accepted. Errors are attn::Error(bad_file) naming the path:
// it does not exist, a symlink loop, a path through a file, permission denied, or not a regular
// file (a FIFO, a device such as /dev/zero, a directory, a socket); `expected` says what to give
// instead ("a .npy file written by numpy.save(path, array)").
class InputFile {
 public:
  InputFile(const std::string& path, std::string_view expected);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  // The size fstat reports. 0 for an empty file, and for files such as /proc/self/status whose
  // size is known only once read.
  std::uint64_t size() const { return size_; }
  // Up to `count` bytes from the current position; fewer only at the end of the file.
  std::size_t read(unsigned char* data, std::size_t count);
  // The rest of the file, refused with attn::Error(too_large) before anything is read when its
  // size is over the cap, and while reading when a file of unknown size turns out to be.
  std::vector<unsigned char> read_rest(const SizeCap& cap);

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// A whole input file: InputFile's checks, then read_rest(cap).
std::vector<unsigned char> read_file(const std::string& path, std::string_view expected,
                                     const SizeCap& cap);
// The same within the memory limit.
std::vector<unsigned char> read_file(const std::string& path, std::string_view expected);

// attn's mark on the files it writes (render/file_mark.hpp tells them apart by it): the words, and
// the comment at the top of an .svg, .html or .xml.
inline constexpr std::string_view kWrittenBy = "written by attn";
inline constexpr std::string_view kWrittenByComment = "<!-- written by attn -->";

void write_file_atomic(const std::string& path, std::string_view contents);
void write_file_atomic(const std::string& path, const std::vector<unsigned char>& contents);

}  // namespace attn
