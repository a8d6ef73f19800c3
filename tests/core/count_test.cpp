// Count: int64 counts whose sums and products past 2^63-1 are "too large", never wrapped.
#include "base/count.hpp"

#include <cstdint>
#include <limits>

#include <catch2/catch.hpp>

#include "base/error.hpp"

using attn::Count;

namespace {
constexpr std::int64_t kLargest = std::numeric_limits<std::int64_t>::max();  // 2^63-1
constexpr std::uint64_t k2To32 = std::uint64_t{1} << 32;
}  // namespace

TEST_CASE("counts up to 2^63-1 fit, one more is too large", "[count]") {
  CHECK(Count().value() == 0);
  CHECK(Count(std::uint64_t{kLargest}).value() == kLargest);
  CHECK_FALSE(Count(std::uint64_t{kLargest} + 1).fits());
  CHECK((Count(std::uint64_t{kLargest} - 1) + Count(1)).value() == kLargest);
  CHECK_FALSE((Count(std::uint64_t{kLargest}) + Count(1)).fits());
  // 3037000499^2 < 2^63 <= 3037000500^2
  CHECK((Count(3037000499) * Count(3037000499)).value() == 9223372030926249001);
  CHECK_FALSE((Count(3037000500) * Count(3037000500)).fits());
  CHECK_FALSE((Count(k2To32) * Count(k2To32)).fits());  // 2^64 would wrap to 0 in uint64
}

TEST_CASE("too large stays too large, as NaN does", "[count]") {
  const Count huge = Count(k2To32) * Count(k2To32);
  CHECK_FALSE((huge + Count(0)).fits());
  CHECK_FALSE((huge * Count(1)).fits());
  CHECK_FALSE((Count(5) + huge).fits());
  CHECK_FALSE(huge == huge);
  CHECK_FALSE(huge.is_zero());
  CHECK(Count(7) == Count(7));
  CHECK(Count(0).is_zero());
}

TEST_CASE("a shape's element count, and a range of its sizes", "[count]") {
  CHECK(Count::product({}).value() == 1);
  CHECK(Count::product({2, 5, 12}).value() == 120);
  CHECK(Count::product({2, 5, 12}, 0, 2).value() == 10);  // all but the last axis
  CHECK(Count::product({2, 5, 12}, 2).value() == 12);
  CHECK_FALSE(Count::product({1000000000, 1000000000, 1000000000}).fits());
  // Zero elements however large the other sizes (the product passes 2^63-1 before the zero).
  CHECK(Count::product({k2To32, k2To32, 0}).is_zero());
}

TEST_CASE("the value of a too large count is refused as too large", "[count]") {
  const Count huge = Count::product({k2To32, k2To32});
  CHECK_THROWS_AS(huge.value(), attn::Error);
  try {
    (void)huge.value();
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::too_large);
    CHECK(std::string(e.what()).find("more than 2^63-1") != std::string::npos);
  }
}
