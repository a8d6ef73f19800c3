// Lesson 13's exercise. Fill in each function where it says TODO, then run
//
//     attn check decoder        (the tests, with what was expected and what came out)
//     attn hint decoder         (a hint, one stage at a time)
//
// Tensor3 is xt::xtensor<float, 3>: x.shape(0) is its first size, x(b, t, d) an element, and
// Tensor3(x.shape()) a new tensor of x's shape; Ids is the same for int64 ids. The sublayers are
// earlier lessons, already in the core (write attn:: in front of them):
//   attn::forward(norm, x).output                  seed 001's LayerNormalization (lesson 07)
//   attn::forward(attention, q, kv, &mask).output  seed 001's MultiHeadAttention (lessons 05, 12):
//                                                  queries from q, keys and values from kv, mask
//                                                  an attn::ScoreMask (core/attention.hpp)
//   attn::forward(feed_forward, x).output          the feed-forward network (lesson 08)
// A ScoreMask holds `keep` (B,H,T,S), 1 where a query may look, and `fill`, MaskFill::seed for the
// seed's -1e9.
#include "decoder_exercise.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace attn::exercise {

Tensor3 target_mask(const Ids& target, std::int64_t pad) {
  // TODO(lesson 13): what each target position may look at while the decoder predicts the next
  // token: nothing after itself (the answer it is being trained to predict must stay hidden), and
  // no padding. target (B,T) -> keep (B,T,T), keep(b, i, j) for query i and key j. The checks:
  // with no padding every row i keeps i + 1 keys, and the upper triangle is all 0.
  // PyTorch: the target_mask seed 001's decoder is given, as 0s and 1s, without its head axis
  // BEGIN SOLUTION
  const std::size_t batch = target.shape(0), tokens = target.shape(1);
  Tensor3 keep({batch, tokens, tokens});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < tokens; ++i)
      for (std::size_t j = 0; j < tokens; ++j)
        keep(b, i, j) = j <= i && target(b, j) != pad ? 1.0f : 0.0f;
  return keep;
  // END SOLUTION
}

DecoderBlockSteps forward(const DecoderBlock& block, const Tensor3& x, const Tensor3& memory,
                          const Tensor3& target_keep, const Tensor2& source_keep) {
  // TODO(lesson 13): one DecoderBlock, every field of DecoderBlockSteps as the header says, in the
  // order the data flows. Three residual connections, each reading its own norm: masked
  // self-attention over the target (target_keep), cross-attention on the memory (source_keep),
  // the feed-forward. The masks reach the attention as ScoreMasks of (B,H,T,T) and (B,H,T,S).
  // x (B,T,D), memory (B,S,D) -> every step (B,T,D). The checks: an output row does not move when
  // a later token of x changes, and each sublayer's output is added to the stream, not to its norm.
  // PyTorch: seed 001's DecoderBlock.forward(x, encoder_output, src_mask, target_mask), pre-LN
  // BEGIN SOLUTION
  if (block.placement != NormPlacement::pre) {
    throw std::invalid_argument("forward: this exercise's DecoderBlock is pre-LN, as seed 001's");
  }
  const std::size_t batch = x.shape(0), tokens = x.shape(1), sources = memory.shape(1);
  if (target_keep.shape(0) != batch || target_keep.shape(1) != tokens ||
      target_keep.shape(2) != tokens || source_keep.shape(0) != batch ||
      source_keep.shape(1) != sources || memory.shape(0) != batch) {
    throw std::invalid_argument(
        fmt::format("forward: target_keep {} and source_keep {} do not fit x {} and memory {}",
                    shape_string_of(target_keep), shape_string_of(source_keep), shape_string_of(x),
                    shape_string_of(memory)));
  }
  const auto add = [](const Tensor3& a, const Tensor3& b) {  // (B,T,D) + (B,T,D)
    Tensor3 sum(a.shape());
    for (std::size_t i = 0; i < a.size(); ++i)
      sum.data()[i] = a.data()[i] + b.data()[i];
    return sum;
  };
  const std::size_t heads = block.multi_head_attention.heads;
  ScoreMask self_mask{Tensor4({batch, heads, tokens, tokens}), MaskFill::seed};
  ScoreMask cross_mask{Tensor4({batch, heads, tokens, sources}), MaskFill::seed};
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < tokens; ++t) {
        for (std::size_t j = 0; j < tokens; ++j)
          self_mask.keep(b, h, t, j) = target_keep(b, t, j);
        for (std::size_t s = 0; s < sources; ++s)
          cross_mask.keep(b, h, t, s) = source_keep(b, s);
      }
  DecoderBlockSteps steps;  // every step (B,T,D)
  steps.norm_1 = attn::forward(block.residual_connection[0].norm, x).output;
  steps.self_attention =
      attn::forward(block.multi_head_attention, steps.norm_1, steps.norm_1, &self_mask).output;
  steps.residual_1 = add(x, steps.self_attention);
  steps.norm_2 = attn::forward(block.residual_connection[1].norm, steps.residual_1).output;
  steps.cross_attention =
      attn::forward(block.cross_attention, steps.norm_2, memory, &cross_mask).output;
  steps.residual_2 = add(steps.residual_1, steps.cross_attention);
  steps.norm_3 = attn::forward(block.residual_connection[2].norm, steps.residual_2).output;
  steps.feed_forward = attn::forward(block.feed_forward_neural_network, steps.norm_3).output;
  steps.output = add(steps.residual_2, steps.feed_forward);
  return steps;
  // END SOLUTION
}

}  // namespace attn::exercise
