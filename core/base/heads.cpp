#include "base/heads.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn {

bool heads_divide(std::size_t d_model, std::size_t heads) {
  return d_model > 0 && heads > 0 && d_model % heads == 0;
}

std::size_t head_size(std::size_t d_model, std::size_t heads, std::string_view function,
                      std::string_view advice) {
  if (!heads_divide(d_model, heads))
    throw Error(ErrorKind::bad_size, function,
                fmt::format("d_model={} is not divisible by heads={}: {}", d_model, heads, advice))
        .about("heads")
        .driven_by({"D", "H"});
  return d_model / heads;
}

}  // namespace attn
