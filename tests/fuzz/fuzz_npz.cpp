// parse_npz on any bytes: either a StateDict or one attn::Error. What parses must survive
// serialize_npz and a second parse unchanged.
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.hpp"
#include "io/weights.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attn::StateDict tensors;
  try {
    tensors = attn::parse_npz(std::span<const unsigned char>(data, size), "fuzz.npz");
  } catch (const attn::Error&) {
    return 0;
  }
  const attn::StateDict again =
      attn::parse_npz(attn::serialize_npz(tensors), "fuzz.npz written back");
  if (again.size() != tensors.size()) __builtin_trap();
  for (auto a = tensors.cbegin(), b = again.cbegin(); a != tensors.end(); ++a, ++b) {
    if (a->first != b->first || a->second.dtype != b->second.dtype ||
        a->second.shape != b->second.shape || a->second.bytes != b->second.bytes) {
      __builtin_trap();
    }
  }
  return 0;
}
