// Lesson 13, the decoder. Legend: B batch, T the target's tokens, S the source's, D model width,
// H heads, F feed-forward width, V the target vocabulary.
#include "13-decoder/decoder_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/array.hpp"
#include "base/random.hpp"
#include "transformer.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kMemoryStream =
    0x6d656d6f7279ULL;                                // the encoder's memory, apart from x's draws
constexpr std::uint64_t kRandStream = 0x72616e64ULL;  // the uniform draws of seed 001's rand mask
constexpr std::uint64_t kDropoutStream =
    0x64726f70ULL;  // the dropout masks of the two nn.Dropout rates

Heatmaps head_maps(const Tensor4& weights, std::string title, std::size_t rows, std::size_t cols,
                   std::string_view col_prefix) {
  Heatmaps maps{std::move(title), {}};
  for (std::size_t h = 0; h < weights.shape(1) && h < 4; ++h) {
    Heatmap map{fmt::format("head {}", h), head_matrix(weights, h), numbered_labels("y", rows),
                numbered_labels(col_prefix, cols)};
    map.masked = col_prefix == "y";
    maps.maps.push_back(std::move(map));
  }
  return maps;
}

// The largest |a - b| over rows 0..rows-1 of (B,T,D) tensors.
double largest_difference(const Tensor3& a, const Tensor3& b, std::size_t rows) {
  double largest = 0.0;
  for (std::size_t s = 0; s < a.shape(0); ++s)
    for (std::size_t t = 0; t < rows; ++t)
      for (std::size_t d = 0; d < a.shape(2); ++d)
        largest = std::max(largest, static_cast<double>(std::abs(a(s, t, d) - b(s, t, d))));
  return largest;
}

double fraction_zero(const Tensor3& scale) {
  std::size_t zeros = 0;
  for (float v : scale)
    zeros += v == 0.0f;
  return static_cast<double>(zeros) / static_cast<double>(std::max<std::size_t>(1, scale.size()));
}
}  // namespace

LessonRun run_decoder(const DecoderLessonOptions& o) {
  const Sizes3 sizes = lesson_sizes(o.common);
  const std::size_t b = sizes.batch, t = sizes.seq, d = sizes.d_model, s = o.source_seq;
  TransformerConfig config;
  config.source_vocab = config.target_vocab = o.vocab;
  config.source_positions = s;
  config.target_positions = t;
  config.d_model = d;
  config.heads = o.heads;
  config.d_ff = o.d_ff;
  config.layers = 1;
  try {
    check_config(config);
  } catch (const Error& e) {
    throw Error(e.kind(), "decoder", e.detail())
        .about(o.heads == 0 || d % o.heads ? "heads" : "d-model");
  }
  if (!o.lengths.empty() && o.lengths.size() != b)
    throw Error(
        ErrorKind::bad_size, "decoder",
        fmt::format("{} lengths for a batch of {}: give one per sequence", o.lengths.size(), b))
        .about("lengths");
  for (std::size_t n : o.lengths)
    if (n == 0 || n > t)
      throw Error(ErrorKind::bad_size, "decoder",
                  fmt::format("a length of {} does not fit T = {}: give 1 to {}", n, t, t))
          .about("lengths");
  LessonRun run("decoder");
  record_settings(run, o.common,
                  {{"batch", b},
                   {"T", t},
                   {"S", s},
                   {"d-model", d},
                   {"heads", o.heads},
                   {"d-ff", o.d_ff},
                   {"V", o.vocab}});

  Rng weights(o.common.seed);
  const DecoderBlock block = init_decoder_block(weights, config);
  const LayerNormalization final_norm = init_layer_normalization();
  const Linear projection = init_linear(weights, d, o.vocab, true);
  const Tensor3 x = lesson_input(o.common, "(B, T, D)", {b, t, d});
  Rng rng(o.common.seed ^ kMemoryStream);
  const Tensor3 memory = randn(rng, b, s, d);

  run.section("intro");
  run.step("input", "x, the target's tokens as vectors (B,T,D)", to_array(x));
  run.section("causal");
  const std::vector<std::size_t> lengths =
      o.lengths.empty() ? std::vector<std::size_t>(b, t) : o.lengths;
  const Array causal = target_causal_mask(lengths, t);
  run.step("target_mask", "tril(ones(T, T)), padding zeroed (B,1,T,T)",
           make_float32(causal.shape, to_float_vector(causal)));
  const ScoreMask mask = broadcast_mask(causal, b, o.heads, t, t, MaskFill::seed);

  run.section("teacher_forcing");
  const DecoderBlockTape tape = forward(block, x, memory, &mask, nullptr);
  Tensor3 changed = x;
  for (std::size_t seq = 0; seq < b; ++seq)
    for (std::size_t k = 0; k < d; ++k)
      changed(seq, t - 1, k) += 1.0f;
  const Tensor3 other = forward(block, changed, memory, &mask, nullptr).output;
  const double earlier = t > 1 ? largest_difference(tape.output, other, t - 1) : 0.0;
  const double last = largest_difference(tape.output, other, t);
  run.check("changing the last token moves no earlier position's output",
            earlier <= 1e-6 * (1.0 + last),
            fmt::format("positions 0 to {}: largest change {:.2g}; the last position: {:.3g}",
                        t > 1 ? t - 2 : 0, earlier, last));

  run.section("block");
  run.step("norm_0", "residual_connection[0].norm(x) (B,T,D)",
           to_array(tape.residual[0].norm.output));
  run.step("self_weights", "masked self-attention's weights: zero above the diagonal (B,H,T,T)",
           to_array(tape.self_attention.weights));
  run.heatmaps(head_maps(tape.self_attention.weights,
                         "sequence 0, masked self-attention (rows: queries, columns: keys)", t, t,
                         "y"));
  run.step("after_self_attention", "x + self-attention (B,T,D)", to_array(tape.residual[1].input));
  run.step("cross_weights", "cross-attention's weights on the memory (B,H,T,S)",
           to_array(tape.cross_attention.weights));
  run.heatmaps(head_maps(tape.cross_attention.weights,
                         "sequence 0, cross-attention (rows: the target's tokens, columns: the "
                         "source's)",
                         t, s, "s"));
  run.step("after_cross_attention", "+ cross-attention (B,T,D)", to_array(tape.residual[2].input));
  run.step("block_output", "+ feed-forward: the block's output (B,T,D)", to_array(tape.output));

  run.section("projection");
  const Tensor3 normed = forward(final_norm, tape.output).output;
  const Tensor3 log_probs = log_softmax(forward(projection, normed));
  run.step("output", "log_softmax(Linear(D, V)(norm(the block's output))) (B,T,V)",
           to_array(log_probs));
  double worst = 0.0;
  for (std::size_t r = 0; r < b * t; ++r) {
    double sum = 0.0;
    for (std::size_t v = 0; v < o.vocab; ++v)
      sum += std::exp(static_cast<double>(log_probs.data()[r * o.vocab + v]));
    worst = std::max(worst, std::abs(sum - 1.0));
  }
  run.check("each position's exp(log-probabilities) sums to 1", worst <= 1e-5,
            fmt::format("largest |sum - 1| {:.2g} over {} positions", worst, b * t));

  run.section("bugs");
  run.section("rand_mask");
  Rng draws(o.common.seed ^ kRandStream);
  std::vector<float> uniform(t * t);
  for (float& u : uniform)
    u = static_cast<float>(draws.uniform());
  const Array rand_mask = make_float32({t, t}, uniform);
  const ScoreMask rand_scores = broadcast_mask(rand_mask, b, o.heads, t, t, MaskFill::seed);
  const Tensor3& normed_x = tape.residual[0].norm.output;
  const MultiHeadSteps with_rand =
      forward(block.multi_head_attention, normed_x, normed_x, &rand_scores);
  const MultiHeadSteps unmasked = forward(block.multi_head_attention, normed_x, normed_x, nullptr);
  const bool same =
      std::equal(with_rand.weights.begin(), with_rand.weights.end(), unmasked.weights.begin());
  double future = 0.0;
  for (std::size_t i = 0; i < t; ++i)
    for (std::size_t j = i + 1; j < t; ++j)
      future += with_rand.weights(0, 0, i, j);
  run.check("the seed's rand mask changes nothing: its weights are the unmasked ones", same,
            fmt::format("head 0 of sequence 0 still puts {:.3f} of weight (summed over its {} "
                        "rows) on later tokens, where the causal mask puts 0",
                        future, t));

  run.section("dropout");
  FeedForward seeded = block.feed_forward_neural_network;
  Table dropout{fmt::format("Training mode: the feed-forward's {} hidden units (B x T x F), zeroed",
                            b * t * o.d_ff),
                {"the layer's dropout", "p", "zeroed"},
                {}};
  for (const auto& [what, p] : {std::pair<const char*, float>{"nn.Dropout() (the seed)", 0.5f},
                                {"nn.Dropout(dropout) (fixed)", 0.1f}}) {
    seeded.dropout = p;
    Rng masks(o.common.seed ^ kDropoutStream);
    const FeedForwardSteps steps = forward(seeded, tape.residual[2].norm.output, masks);
    dropout.rows.push_back({what, fmt::format("{:g}", p),
                            fmt::format("{:.0f}%", 100.0 * fraction_zero(steps.dropout_scale))});
  }
  run.table(std::move(dropout));
  run.prose(
      "The rest of seed 001's bugs stop Python before anything is computed:\n" +
      wrapped_prose(
          "- Encoder and Decoder skip super().__init__(): \"AttributeError: cannot assign module "
          "before Module.__init__() call\". Fix: call super().__init__() first.") +
      "\n" +
      wrapped_prose(
          "- Encoder.forward calls layer(x): \"TypeError: EncoderBlock.forward() missing 1 "
          "required positional argument: 'src_mask'\". Fix: forward(x, mask) calls "
          "layer(x, mask).") +
      "\n" +
      wrapped_prose("- Transformer sets self.positional_embedding = position_embedding: "
                    "\"NameError: name 'position_embedding' is not defined\".") +
      "\n" +
      wrapped_prose("- One embedding and one positional encoding serve source and target: a target "
                    "id past the source's vocabulary gives \"IndexError: index out of range in "
                    "self\", and within it source word 7 and target word 7 share a vector. Fix: "
                    "source_embedding and target_embedding, and a positional encoding for each.") +
      "\n" +
      wrapped_prose("- buildingTranformers calls FeedForwardNeuralNetwork() without its sizes: "
                    "\"TypeError: FeedForwardNeuralNetwork.__init__() missing 3 required "
                    "positional arguments: 'd_model', 'dff', and 'dropout'\", and returns "
                    "nothing. Fix: build each block's own modules and return the Transformer."));

  run.parameters = 0;
  DecoderBlock copy = block;
  visit_parameters(copy, [&](const std::string&, float*, const Shape& shape) {
    run.parameters += static_cast<std::int64_t>(element_count(shape));
  });
  run.parameters += 2 + static_cast<std::int64_t>(d * o.vocab + o.vocab);
  return run;
}

}  // namespace attn::lessons
