// parse_npy on any bytes: either an Array or one attn::Error. What parses must print, and must
// survive serialize_npy and a second parse unchanged.
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.hpp"
#include "io/npy.hpp"
#include "io/print.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attn::Array array;
  try {
    array = attn::parse_npy(std::span<const unsigned char>(data, size), "fuzz.npy");
  } catch (const attn::Error&) {
    return 0;
  }
  (void)attn::format_torch(array);
  // Outside the try: an error on a valid array is a finding.
  const attn::Array again = attn::parse_npy(attn::serialize_npy(array), "fuzz.npy written back");
  if (again.dtype != array.dtype || again.shape != array.shape || again.bytes != array.bytes) {
    __builtin_trap();
  }
  return 0;
}
