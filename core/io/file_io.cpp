#include "io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/error.hpp"

namespace attn {

namespace {

constexpr std::string_view kFunction = "open_input";

std::string_view type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

// Where the symbolic link `path` points, or "" when `path` is not one.
std::string link_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return {};
  std::string target(4096, '\0');
  const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
  target.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return target;
}

Error not_regular(const std::string& path, mode_t mode, std::string_view expected) {
  const std::string target = link_target(path);
  return Error(
      ErrorKind::bad_file, kFunction,
      fmt::format("'{}' is {}{}, not a regular file: give {}", printable(path), type_name(mode),
                  target.empty() ? "" : fmt::format(" (a link to '{}')", printable(target)),
                  expected));
}

// The first part of `path` that exists and is not a directory: "afile" of "afile/x.npy".
std::string file_on_the_way(const std::string& path) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string part = path.substr(0, slash);
    struct stat st {};
    if (::stat(part.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) return part;
  }
  return {};
}

Error open_error(const std::string& path, int error, std::string_view expected) {
  const std::string shown = printable(path);
  const auto fail = [](std::string message) {
    return Error(ErrorKind::bad_file, kFunction, message);
  };
  struct stat st {};
  switch (error) {
    case ENOENT:
      if (const std::string target = link_target(path); !target.empty()) {
        return fail(
            fmt::format("'{}' is a symbolic link to '{}', which does not exist: point it at {}",
                        shown, printable(target), expected));
      }
      return fail(fmt::format(
          "'{}' does not exist: check the path (relative paths start at the current directory)",
          shown));
    case ELOOP:
      return fail(fmt::format(
          "'{}' cannot be opened: too many levels of symbolic links (a loop of links): point "
          "the link at {}",
          shown, expected));
    case ENOTDIR: {
      const std::string file = file_on_the_way(path);
      return fail(fmt::format("'{}' cannot be opened: '{}' is not a directory: check the path",
                              shown, file.empty() ? "a part of it" : printable(file)));
    }
    case EACCES:
    case EPERM:
      return fail(fmt::format(
          "'{}' cannot be opened: permission denied: make it readable (chmod u+r) or copy it "
          "somewhere you can read",
          shown));
    case ENXIO:  // a socket, or a device without its driver
      if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        return not_regular(path, st.st_mode, expected);
      break;
    case ENAMETOOLONG:
      return fail(fmt::format("'{}' cannot be opened: the name is too long: check the path",
                              printable(path, 80)));
  }
  return fail(fmt::format("'{}' cannot be opened: {}", shown, std::strerror(error)));
}

// `size` 0: a file of unknown size that turned out to hold more than the cap.
Error too_large(const std::string& path, std::uint64_t size, const SizeCap& cap) {
  const std::string what = size > 0 ? fmt::format("is {},", format_bytes(static_cast<double>(size)))
                                    : std::string("holds");
  return Error(ErrorKind::too_large, kFunction,
               fmt::format("'{}' {} more than {}: {}", printable(path), what, cap.limit, cap.fix));
}

}  // namespace

SizeCap memory_cap(std::string fix) {
  // An ATTN_MAX_MEMORY that is not a size is refused by check_budget, which every command runs
  // before it computes: until then files are read within the default limit.
  const bool bad_variable = memory_limit() == 0;
  const std::size_t limit = bad_variable ? default_memory_limit() : memory_limit();
  return {limit,
          fmt::format("the memory limit of {} ({})", format_bytes(static_cast<double>(limit)),
                      bad_variable ? "half this machine's memory" : memory_limit_origin()),
          std::move(fix)};
}

InputFile::InputFile(const std::string& path, std::string_view expected) : path_(path) {
  if (path.empty()) {
    throw Error(ErrorKind::bad_file, kFunction,
                fmt::format("the file name is empty: give {}", expected));
  }
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) throw open_error(path, errno, expected);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    throw Error(ErrorKind::bad_file, kFunction,
                fmt::format("'{}' cannot be read: {}", printable(path), std::strerror(error)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw not_regular(path, st.st_mode, expected);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  // A regular file ignores O_NONBLOCK; reads block as usual.
  if (const int flags = ::fcntl(fd_, F_GETFL); flags >= 0)
    ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t InputFile::read(unsigned char* data, std::size_t count) {
  std::size_t done = 0;
  while (done < count) {
    const std::size_t chunk = std::min<std::size_t>(count - done, std::size_t{1} << 30);
    const ssize_t n = ::read(fd_, data + done, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorKind::bad_file, "read_input",
                  fmt::format("'{}' cannot be read: {}", printable(path_), std::strerror(errno)));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

std::vector<unsigned char> InputFile::read_rest(const SizeCap& cap) {
  if (size_ > cap.bytes) throw too_large(path_, size_, cap);
  // The size fstat gave, plus one byte to see the end; 64 KiB at a time for a size unknown.
  std::vector<unsigned char> bytes(size_ > 0 ? size_ + 1
                                             : std::min<std::uint64_t>(cap.bytes + 1, 1 << 16));
  std::size_t used = 0;
  for (;;) {
    if (used == bytes.size()) {
      if (used > cap.bytes) throw too_large(path_, 0, cap);
      bytes.resize(static_cast<std::size_t>(std::min<std::uint64_t>(2 * used, cap.bytes + 1)));
    }
    const std::size_t n = read(bytes.data() + used, bytes.size() - used);
    if (n == 0) break;
    used += n;
  }
  if (used > cap.bytes) throw too_large(path_, 0, cap);
  bytes.resize(used);
  return bytes;
}

std::vector<unsigned char> read_file(const std::string& path, std::string_view expected,
                                     const SizeCap& cap) {
  return InputFile(path, expected).read_rest(cap);
}

std::vector<unsigned char> read_file(const std::string& path, std::string_view expected) {
  return read_file(path, expected, memory_cap("give a smaller file, or raise the limit"));
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  const std::string temp = fmt::format("{}.tmp{}", path, static_cast<long>(getpid()));
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (file == nullptr) {
    throw Error(ErrorKind::write_failed, "write_file",
                fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  const bool written = std::fwrite(contents.data(), 1, contents.size(), file) == contents.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    std::remove(temp.c_str());
    throw Error(ErrorKind::write_failed, "write_file",
                fmt::format("cannot write '{}': {}", path, std::strerror(saved)));
  }
}

void write_file_atomic(const std::string& path, const std::vector<unsigned char>& contents) {
  write_file_atomic(
      path, std::string_view(reinterpret_cast<const char*>(contents.data()), contents.size()));
}

}  // namespace attn
