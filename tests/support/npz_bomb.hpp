// A zip bomb in .npz form, for the tests that check attn refuses it before inflating: members of
// float32 zeros, deflated in 16 MiB blocks that each compress to the same few KiB, so that a GiB of
// zeros costs about 1 MB of archive and a few milliseconds to make.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::testing {

namespace bomb_detail {

inline std::string le(std::uint64_t value, std::size_t width) {
  std::string out;
  for (std::size_t i = 0; i < width; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

// Deflates `input` into the raw stream `stream` with `flush`, appending what it writes.
inline void deflate_into(z_stream& stream, const std::string& input, int flush, std::string& out) {
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.avail_in = static_cast<uInt>(input.size());
  char buffer[1 << 16];
  do {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    if (deflate(&stream, flush) == Z_STREAM_ERROR) throw std::runtime_error("deflate failed");
    out.append(buffer, sizeof buffer - stream.avail_out);
  } while (stream.avail_out == 0 || stream.avail_in > 0);
}

}  // namespace bomb_detail

// An .npz of one deflated member per key, each a float32 array of shape (blocks * 4Mi,): zeros,
// 16 MiB per block. Sizes and CRC-32s are all correct: only the memory it needs is hostile.
inline std::string deflated_zeros_npz(const std::vector<std::string>& keys, std::uint64_t blocks) {
  using bomb_detail::le;
  constexpr std::uint64_t kBlock = std::uint64_t{16} << 20;
  const std::uint64_t elements = blocks * kBlock / 4;
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(elements) + ",), }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  header = std::string("\x93NUMPY\x01\x00", 8) + le(header.size(), 2) + header;

  // The member's stream: the header, then the same compressed block again and again.
  z_stream stream{};
  if (deflateInit2(&stream, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  const std::string zeros(kBlock, '\0');
  std::string start, block, again, end;
  bomb_detail::deflate_into(stream, header, Z_FULL_FLUSH, start);
  bomb_detail::deflate_into(stream, zeros, Z_FULL_FLUSH, block);
  bomb_detail::deflate_into(stream, zeros, Z_FULL_FLUSH, again);
  bomb_detail::deflate_into(stream, "", Z_FINISH, end);
  deflateEnd(&stream);
  if (block != again)
    throw std::runtime_error("a flushed block of zeros did not compress the same twice");
  std::string packed = start;
  for (std::uint64_t i = 0; i < blocks; ++i)
    packed += block;
  packed += end;

  const uLong zeros_crc =
      crc32(0, reinterpret_cast<const Bytef*>(zeros.data()), static_cast<uInt>(zeros.size()));
  uLong crc =
      crc32(0, reinterpret_cast<const Bytef*>(header.data()), static_cast<uInt>(header.size()));
  for (std::uint64_t i = 0; i < blocks; ++i)
    crc = crc32_combine(crc, zeros_crc, static_cast<z_off_t>(kBlock));
  const std::uint64_t size = header.size() + blocks * kBlock;
  if (size >= 0xffffffffu) throw std::runtime_error("a member past 4 GiB needs zip64");

  std::string out, central;
  for (const std::string& key : keys) {
    const std::string name = key + ".npy";
    const std::uint64_t offset = out.size();
    const std::string fields = le(8, 2) + le(0, 2) + le(0x21, 2) + le(crc, 4) +
                               le(packed.size(), 4) + le(size, 4) + le(name.size(), 2) + le(0, 2);
    out += le(0x04034b50, 4) + le(20, 2) + le(0, 2) + fields + name + packed;
    central += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + fields + le(0, 2) + le(0, 2) +
               le(0, 2) + le(0, 4) + le(offset, 4) + name;
  }
  const std::uint64_t cd_offset = out.size();
  out += central + le(0x06054b50, 4) + le(0, 4) + le(keys.size(), 2) + le(keys.size(), 2) +
         le(central.size(), 4) + le(cd_offset, 4) + le(0, 2);
  return out;
}

}  // namespace attn::testing
