// What the tests of Hugging Face folders share: ids from an int64 .npy, the attention maps'
// invariants on a padded batch, and a Hugging Face cache holding a folder.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "base/tensor.hpp"
#include "close.hpp"
#include "embedding.hpp"
#include "io/npy.hpp"

namespace attn::testing {

// A (B,T) int64 .npy: input_ids, token_type_ids, attention_mask.
inline Ids read_ids(const std::string& path) {
  const Array array = read_npy(path);
  REQUIRE(array.dtype == Dtype::int64);
  REQUIRE(array.rank() == 2);
  Ids ids({array.shape[0], array.shape[1]});
  std::transform(ids.begin(), ids.end(), ids.begin(),
                 [&, i = std::size_t{0}](std::int64_t) mutable { return array.integer(i++); });
  return ids;
}

// Attention weights (B,H,T,T): every row sums to 1 and a padding key (mask 0) gets weight 0.
inline void check_attention_rows(const Tensor4& weights, const Ids& attention_mask) {
  const std::size_t batch = attention_mask.shape(0), tokens = attention_mask.shape(1);
  REQUIRE(weights.shape(0) == batch);
  REQUIRE(weights.shape(3) == tokens);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t h = 0; h < weights.shape(1); ++h) {
      for (std::size_t q = 0; q < tokens; ++q) {
        double sum = 0.0;
        for (std::size_t k = 0; k < tokens; ++k) {
          sum += weights(b, h, q, k);
          if (attention_mask(b, k) == 0) CHECK(weights(b, h, q, k) == 0.0f);
        }
        CHECK(std::abs(sum - 1.0) <= summation_tolerance(tokens));
      }
    }
  }
}

// `root` as a Hugging Face cache (HF_HOME) holding the folder `folder` as the model
// `owner/model`, laid out as huggingface-cli leaves it: blobs, a snapshot of symlinks, refs/main.
inline void make_cache(const std::filesystem::path& root, const std::string& repo,
                       const std::string& folder) {
  std::string flat = repo;
  std::replace(flat.begin(), flat.end(), '/', '-');
  const std::filesystem::path model =
      root / "hub" /
      ("models--" + flat.substr(0, repo.find('/')) + "--" + flat.substr(repo.find('/') + 1));
  const std::string revision = "0123456789abcdef0123456789abcdef01234567";
  std::filesystem::create_directories(model / "blobs");
  std::filesystem::create_directories(model / "refs");
  std::filesystem::create_directories(model / "snapshots" / revision);
  std::ofstream(model / "refs" / "main") << revision;
  int blob = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string id = "blob" + std::to_string(blob++);
    std::filesystem::copy_file(entry.path(), model / "blobs" / id);
    std::filesystem::create_symlink("../../blobs/" + id,
                                    model / "snapshots" / revision / entry.path().filename());
  }
}

}  // namespace attn::testing
