// Counts attn computes and prints: parameters, mult-adds, sizes in bytes. They are int64, as
// PyTorch's numel() and torchinfo's totals are, and every sum and product is checked: a count
// past 2^63-1 becomes "too large" instead of wrapping around, and stays too large through any
// later arithmetic (as NaN does), so the code that prints or uses it checks once and throws
// Error(ErrorKind::too_large, ...) saying what is too large.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/array.hpp"

namespace attn {

class Count {
 public:
  constexpr Count() = default;
  // A count of n (too large past 2^63-1).
  constexpr explicit Count(std::uint64_t n)
      : value_(n <= kLargest ? static_cast<std::int64_t>(n) : 0), fits_(n <= kLargest) {}
  // The product of shape[begin, end): 1 when the range is empty.
  static Count product(const Shape& shape, std::size_t begin = 0,
                       std::size_t end = std::numeric_limits<std::size_t>::max());

  bool fits() const { return fits_; }
  // The count as a size, SIZE_MAX when it is too large.
  std::size_t saturated() const {
    return fits_ ? static_cast<std::size_t>(value_) : std::numeric_limits<std::size_t>::max();
  }
  bool is_zero() const { return fits_ && value_ == 0; }
  // The count; throws Error(ErrorKind::too_large, "Count", ...) when it is too large.
  std::int64_t value() const;

  // Equal counts that fit; a too large count equals nothing, as NaN.
  friend bool operator==(Count a, Count b) { return a.fits_ && b.fits_ && a.value_ == b.value_; }
  friend Count operator+(Count a, Count b);
  friend Count operator*(Count a, Count b);
  Count& operator+=(Count b) { return *this = *this + b; }
  Count& operator*=(Count b) { return *this = *this * b; }

 private:
  static constexpr std::uint64_t kLargest = std::numeric_limits<std::int64_t>::max();
  std::int64_t value_ = 0;
  bool fits_ = true;
};

// The "," of f"{n:,}" and f"{x:,.2f}": groups of three digits left of the point.
std::string group_thousands(std::string_view digits);
// 2362368 -> "2,362,368": counts as torchinfo and the lessons print them.
std::string with_commas(std::int64_t n);

}  // namespace attn
