// Weights files keyed like a PyTorch state_dict: .safetensors (read and write, with every
// validation rule of the format) and .npz (read stored and deflated members; write stored).
// PyTorch pickles (.pt, .pth, .bin) are refused with how to convert them.
#pragma once

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

// Parses a whole .safetensors image; `name` is named in every error. The __metadata__ goes to
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
