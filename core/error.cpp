#include "error.hpp"

#include <utility>

#include <fmt/format.h>

namespace attn {

std::string_view kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::bad_value: return "bad value";
    case ErrorKind::bad_size: return "bad size";
    case ErrorKind::bad_file: return "bad file";
    case ErrorKind::too_large: return "too large";
    case ErrorKind::write_failed: return "write failed";
    case ErrorKind::internal: return "internal error";
  }
  return "error";
}

Error::Error(ErrorKind kind, std::string_view function, std::string_view message)
    : std::runtime_error(fmt::format("[{}] {}", function, message)),
      kind_(kind),
      function_(function),
      detail_(message) {}

Error::Error(std::string_view function, std::string_view message)
    : Error(ErrorKind::bad_value, function, message) {}

Error& Error::about(std::string subject) & {
  subject_ = std::move(subject);
  return *this;
}

Error&& Error::about(std::string subject) && { return std::move(about(std::move(subject))); }

Error& Error::driven_by(std::vector<std::string> sizes) & {
  sizes_ = std::move(sizes);
  return *this;
}

Error&& Error::driven_by(std::vector<std::string> sizes) && { return std::move(driven_by(std::move(sizes))); }

}  // namespace attn
