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

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size() && i < limit) {
    const auto lead = static_cast<unsigned char>(text[i]);
    // The length of a well-formed UTF-8 sequence starting here, or 0.
    std::size_t length = lead < 0x80                    ? 1
                         : lead >= 0xc2 && lead <= 0xdf ? 2
                         : lead >= 0xe0 && lead <= 0xef ? 3
                         : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                        : 0;
    if (length > text.size() - i) length = 0;
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) length = 0;
    }
    if (length >= 3) {  // overlong forms, surrogates and code points past U+10FFFF
      const auto second = static_cast<unsigned char>(text[i + 1]);
      if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second >= 0xa0) ||
          (lead == 0xf0 && second < 0x90) || (lead == 0xf4 && second >= 0x90)) {
        length = 0;
      }
    }
    const bool control =
        length == 1 ? lead < 0x20 || lead == 0x7f
                    : length == 2 && lead == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0;
    if (length == 0 || control) {
      const std::size_t bytes = length == 0 ? 1 : length;
      for (std::size_t k = 0; k < bytes; ++k)
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i + k]));
      i += bytes;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  if (i < text.size()) out += "...";
  return out;
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
