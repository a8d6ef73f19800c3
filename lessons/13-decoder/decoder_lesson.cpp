// Lesson 13, the decoder. Legend: B batch, T the target's tokens, S the source's, D model width,
// H heads, F feed-forward width, V the target vocabulary.
#include "13-decoder/decoder_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/array.hpp"
#include "base/budget.hpp"
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
// One DecoderBlockTape on x (B,T,D) and a memory of S tokens: the three residual streams with
// their norms, both attentions' projections, heads, outputs, scores and weights, the
// feed-forward's four and the output; with the forward's temporaries while an attention runs.
MemoryPlan plan_decoder_block(const DecoderLessonOptions& o, const Sizes3& sizes, Held held) {
  const std::size_t b = sizes.batch, t = sizes.seq, s = o.source_seq, d = sizes.d_model,
                    h = o.heads;
  return {{"a block's streams", {b, t, 28, d}, "B T  D", 4, held},
          {"the cross-attention's keys and values", {b, 4, s, d}, "B  S D", 4, held},
          {"a block's self-attention scores and weights", {b, h, 3, t, t}, "B H  T T", 4, held},
          {"a block's cross-attention scores and weights", {b, h, 3, t, s}, "B H  T S", 4, held},
          {"a block's hidden layers", {b, t, 2, o.d_ff}, "B T  F", 4, held}};
}

// For check_budget: the block's weights and its copy, the projection's; x, the memory and the
// masks; the tape, and the second one of teacher forcing's check; the projection's norm, logits
// and log-probabilities; the rand mask's two attentions; the feed-forward in training mode; the
// steps shown and the heatmaps.
MemoryPlan plan_decoder_lesson(const DecoderLessonOptions& o, const Sizes3& sizes) {
  const std::size_t b = sizes.batch, t = sizes.seq, s = o.source_seq, d = sizes.d_model,
                    h = o.heads, v = o.vocab, f = o.d_ff;
  MemoryPlan plan = plan_lesson_input(o.common);
  plan.push_back({"the block's weights and their copy", {2, 8 * d + 2 * f + 8, d}, " D/F D"});
  // The projection's weights, and the draws they are made from.
  plan.push_back({"the projection's weights", {2, v, d + 1}, " V D"});
  plan.push_back({"the memory and the changed x", {b, t + s, d}, "B T D"});
  plan.push_back({"the causal mask", {b, t, t}, "B T T", 8});
  plan.push_back({"the masks for each head", {2, b, h, t, t}, " B H T T"});
  plan.push_back({"the rand mask", {2, t, t}, " T T"});
  append(plan, plan_decoder_block(o, sizes, Held::kept));
  append(plan, plan_decoder_block(o, sizes, Held::before_shown));
  plan.push_back({"the final norm", {b, t, 2, d}, "B T  D", 4, Held::before_shown});
  plan.push_back(
      {"the logits and log_softmax's temporary", {2, b, t, v}, " B T V", 4, Held::before_shown});
  plan.push_back({"the rand mask's two attentions", {2, b, t, 5, d}, " B T  D", 4, Held::kept});
  plan.push_back(
      {"the rand mask's scores and weights", {2, b, h, 2 * t, t}, " B H T T", 4, Held::kept});
  plan.push_back({"the feed-forward in training mode",
                  {b, t, 3 * f + 2 * d},
                  "B T F/D",
                  4,
                  Held::before_shown});
  // input, target_mask, norm_0, self_weights, after_self_attention, cross_weights,
  // after_cross_attention, block_output, output
  plan.push_back({"the steps shown", {b, t, 5, d}, "B T  D", 4, Held::shown});
  plan.push_back({"the masks and weights shown", {b, 1 + h, t, t}, "B H T T", 4, Held::shown});
  plan.push_back({"the cross weights shown", {b, h, t, s}, "B H T S", 4, Held::shown});
  plan.push_back({"output", {b, t, v}, "B T V", 4, Held::shown});
  plan.push_back(
      {"the heatmaps", {std::min<std::size_t>(h, 4), t, t + s}, "H T T/S", 4, Held::kept});
  return plan;
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
  check_budget("decoder", plan_decoder_lesson(o, sizes));
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
