// Weights files keyed like a PyTorch state_dict: .safetensors (read and write, with every
// validation rule of the format) and .npz (read stored and deflated members; write stored).
// PyTorch pickles (.pt, .pth, .bin) are refused with how to convert them.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/array.hpp"

namespace attn {

// Sorted by key, as safetensors stores them.
using StateDict = std::map<std::string, Array>;

// The safetensors header's __metadata__: strings to strings.
using Metadata = std::map<std::string, std::string>;

// One tensor of a safetensors header: its dtype as the format spells it ("F32", "BF16"), its
// shape, and where its bytes lie in the data after the header.
struct SafetensorsTensor {
  std::string key;
  std::string dtype;
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

// A header checked by every rule of the format that needs no tensor's bytes: the entries are
// sound and tile the data from the header's end to the file's end, with no hole and no overlap.
struct SafetensorsHeader {
  std::uint64_t data_start = 0;            // 8 + the header's length
  std::vector<SafetensorsTensor> tensors;  // by data offset
  Metadata metadata;
};

// The header's length from the file's first bytes (`start`, 8 of them or fewer when the file is
// shorter), checked against the format's limit, the memory limit and `file_size`.
std::uint64_t safetensors_header_length(std::span<const unsigned char> start,
                                        std::uint64_t file_size, std::string_view name);
// The header's JSON text (the bytes after the first 8) of a file of `file_size` bytes.
SafetensorsHeader parse_safetensors_header(std::string_view text, std::uint64_t file_size,
                                           std::string_view name);
// The bytes a tensor takes once read: F16 and BF16 double as float32.
std::uint64_t safetensors_read_bytes(const SafetensorsTensor& tensor);
// One tensor's stored bytes as an Array: F16 and BF16 converted to float32 as torch's .float()
// does, F32, F64, I32, I64 and BOOL as stored; any other dtype refused naming the key.
Array safetensors_array(const SafetensorsTensor& tensor, std::span<const unsigned char> data,
                        std::string_view name);
// The same on bytes the caller gives up: a tensor that needs no conversion keeps them (no copy).
Array safetensors_array(const SafetensorsTensor& tensor, std::vector<unsigned char>&& data,
                        std::string_view name);

// Parses a whole .safetensors image (F16 and BF16 tensors become float32); `name` is named in every error. The __metadata__ goes to
// `metadata` when given.
StateDict parse_safetensors(std::span<const unsigned char> bytes, std::string_view name,
                            Metadata* metadata = nullptr);
// `metadata` joins {"format": "pt"}, as safetensors.torch.save_file writes it.
std::vector<unsigned char> serialize_safetensors(const StateDict& tensors,
                                                 const Metadata& metadata = {});

// Parses a whole .npz image (a zip of NAME.npy members; the key is NAME).
StateDict parse_npz(std::span<const unsigned char> bytes, std::string_view name);
std::vector<unsigned char> serialize_npz(const StateDict& tensors);

// By content (the zip signature, else safetensors), with the extension checked for pickles. A
// safetensors file's __metadata__ goes to `metadata` when given (an .npz has none).
StateDict read_weights(const std::string& path, Metadata* metadata = nullptr);
// .safetensors or .npz by the path's extension; atomic (never a partial file). Metadata needs a
// .safetensors path.
void write_weights(const std::string& path, const StateDict& tensors,
                   const Metadata& metadata = {});

}  // namespace attn
