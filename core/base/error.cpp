#include "base/error.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "base/names.hpp"
#include "base/utf8.hpp"

namespace attn {

std::string_view kind_name(ErrorKind kind) {
  static constexpr Named<ErrorKind> kKinds[] = {
      {ErrorKind::bad_value, "bad value"},       {ErrorKind::bad_size, "bad size"},
      {ErrorKind::bad_file, "bad file"},         {ErrorKind::too_large, "too large"},
      {ErrorKind::write_failed, "write failed"}, {ErrorKind::internal, "internal error"}};
  return name_in(kKinds, kind, "error");
}

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size() && i < limit) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_sequence_length(text, i);
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

std::string printable_character(std::string_view text, std::size_t at) {
  const std::size_t length = std::max<std::size_t>(utf8_sequence_length(text, at), 1);
  return fmt::format("'{}'", printable(text.substr(at, length)));
}

Error::Error(ErrorKind kind, std::string_view function, std::string_view message)
    : std::runtime_error(fmt::format("[{}] {}", function, message)),
      kind_(kind),
      function_(function),
      detail_(message) {}

Error& Error::about(std::string subject) & {
  subject_ = std::move(subject);
  return *this;
}

Error&& Error::about(std::string subject) && {
  return std::move(about(std::move(subject)));
}

Error& Error::driven_by(std::vector<std::string> sizes) & {
  sizes_ = std::move(sizes);
  return *this;
}

Error&& Error::driven_by(std::vector<std::string> sizes) && {
  return std::move(driven_by(std::move(sizes)));
}

}  // namespace attn
