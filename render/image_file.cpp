#include "image_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "base/error.hpp"
#include "file_mark.hpp"
#include "signals_held.hpp"

namespace attn::render {

namespace fs = std::filesystem;

namespace {

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::string extension_of(std::string_view path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::optional<ImageFormat> image_format(std::string_view path) {
  const std::string ext = extension_of(path);
  if (ext == ".svg") return ImageFormat::svg;
  if (ext == ".png") return ImageFormat::png;
  return std::nullopt;
}

void check_output_file(const std::string& path, const std::vector<std::string>& extensions,
                       std::string_view example, std::string_view subject) {
  const auto error = [&](const std::string& message) {
    return Error(ErrorKind::bad_file, subject, message).about(std::string(subject));
  };
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) {
    std::string dir = path;
    while (dir.size() > 1 && dir.back() == '/')
      dir.pop_back();
    throw error(fmt::format("'{}' is a folder: give a file name, e.g. <{}> {}/{}", printable(path),
                            subject, printable(dir), example));
  }
  const std::string ext = extension_of(path);
  bool known = false;
  for (const std::string& e : extensions)
    known = known || e == ext;
  if (!known) {
    std::string list;
    for (std::size_t i = 0; i < extensions.size(); ++i)
      list += (i == 0 ? "" : i + 1 == extensions.size() ? " or " : ", ") + extensions[i];
    throw error(fmt::format("'{}': attn writes {}, chosen by the extension: name the file e.g. {}",
                            printable(path), list, example));
  }
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw error(
        fmt::format("'{}' exists and is not a regular file: choose another name", printable(path)));
  refuse_foreign_file(path, subject);
  const fs::path parent = fs::path(path).lexically_normal().parent_path();
  const fs::path folder = parent.empty() ? fs::path(".") : parent;
  const fs::file_status folder_status = fs::status(folder, ec);
  if (!fs::exists(folder_status))
    throw error(fmt::format(
        "cannot write '{}': its folder '{}' does not exist; create it first or choose another path",
        printable(path), printable(folder.string())));
  if (!fs::is_directory(folder_status))
    throw error(
        fmt::format("cannot write '{}': '{}' is a file, not a directory; choose another path",
                    printable(path), printable(folder.string())));
  if (::access(folder.c_str(), W_OK) != 0)
    throw error(fmt::format("cannot write '{}' in '{}': {}; choose a writable directory",
                            printable(path), printable(folder.string()), std::strerror(errno)));
}

void write_file_whole(const std::string& path, std::string_view bytes, std::string_view subject) {
  const auto failed = [&](int error) {
    return Error(ErrorKind::write_failed, subject,
                 fmt::format("cannot write '{}': {}; free space or choose another path",
                             printable(path), std::strerror(error)))
        .about(std::string(subject));
  };
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string temporary =
      (folder / fmt::format(".{}.attn-XXXXXX", target.filename().string())).string();
  SignalsHeld held;
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0)
    throw Error(ErrorKind::write_failed, subject,
                fmt::format("cannot write '{}': {}; choose a writable directory", printable(path),
                            std::strerror(errno)))
        .about(std::string(subject));
  // mkstemp makes the file 0600; a picture is as readable as any file the user makes.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  const bool written = write_all(fd, bytes);
  const int write_error = errno;
  const bool closed = ::close(fd) == 0;
  const int close_error = errno;
  if (!written || !closed) {
    ::unlink(temporary.c_str());
    throw failed(written ? close_error : write_error);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    ::unlink(temporary.c_str());
    throw failed(rename_error);
  }
}

}  // namespace attn::render
