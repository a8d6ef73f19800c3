// read_checkpoint (what --checkpoint reads) on any bytes taken as a .safetensors image: either a
// checkpoint's config and model or one attn::Error. What it accepts must be what attn train
// writes: the metadata checkpoint_metadata gives for its config, and a state_dict of its tensors.
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.hpp"
#include "io/weights.hpp"
#include "train/trainer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attn::Metadata metadata;
  attn::StateDict weights;
  attn::CheckpointModel checkpoint;
  try {
    weights = attn::parse_safetensors(std::span<const unsigned char>(data, size),
                                      "fuzz.safetensors", &metadata);
    checkpoint = attn::read_checkpoint(weights, metadata, "fuzz.safetensors");
  } catch (const attn::Error&) {
    return 0;
  }
  const attn::TrainConfig& c = checkpoint.config;
  const attn::TrainConfig back = attn::train_config_from_metadata(attn::checkpoint_metadata(c, {}),
                                                                  "fuzz.safetensors written back");
  if (attn::task_name(back.task) != attn::task_name(c.task) ||
      attn::is_seq2seq(back.task) != attn::is_seq2seq(c.task) || back.layers != c.layers ||
      back.d_model != c.d_model || back.heads != c.heads || back.d_ff != c.d_ff ||
      back.norm != c.norm || back.sizes.vocab != c.sizes.vocab ||
      back.sizes.tokens != c.sizes.tokens)
    __builtin_trap();
  const attn::StateDict written = attn::checkpoint_state_dict(checkpoint.model);
  if (written.size() != weights.size()) __builtin_trap();
  for (auto a = written.cbegin(), b = weights.cbegin(); a != written.end(); ++a, ++b)
    if (a->first != b->first || a->second.shape != b->second.shape) __builtin_trap();
  return 0;
}
