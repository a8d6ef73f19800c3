#include "base/count.hpp"

#include <algorithm>
#include <string>

#include "base/error.hpp"

namespace attn {

Count Count::product(const Shape& shape, std::size_t begin, std::size_t end) {
  Count result(1);
  for (std::size_t i = begin; i < end && i < shape.size(); ++i) {
    if (shape[i] == 0) return Count(0);  // zero, however large the other sizes
    result *= Count(shape[i]);
  }
  return result;
}

std::int64_t Count::value() const {
  if (!fits_) {
    throw Error(ErrorKind::too_large, "Count",
                "a count of parameters, mult-adds or bytes is more than 2^63-1");
  }
  return value_;
}

Count operator+(Count a, Count b) {
  Count sum;
  sum.fits_ = a.fits_ && b.fits_ && !__builtin_add_overflow(a.value_, b.value_, &sum.value_);
  return sum;
}

Count operator*(Count a, Count b) {
  Count product;
  product.fits_ =
      a.fits_ && b.fits_ && !__builtin_mul_overflow(a.value_, b.value_, &product.value_);
  return product;
}

std::string group_thousands(std::string_view digits) {
  const std::size_t start = !digits.empty() && digits[0] == '-' ? 1 : 0;
  const std::size_t end = std::min(digits.find('.'), digits.size());
  std::string out(digits.substr(0, start));
  for (std::size_t i = start; i < end; ++i) {
    if (i > start && (end - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  out += digits.substr(end);
  return out;
}

std::string with_commas(std::int64_t n) {
  return group_thousands(std::to_string(n));
}

}  // namespace attn
