// parse_config on any text: either a checked EncoderConfig or one attn::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "io/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attn::EncoderConfig config;
  try {
    config =
        attn::parse_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const attn::Error&) {
    return 0;
  }
  attn::validate_config(config, "fuzz.json");  // what parse_config accepted must pass its checks
  return 0;
}
