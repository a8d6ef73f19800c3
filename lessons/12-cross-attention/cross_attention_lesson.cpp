// Lesson 12, cross-attention. Legend: B batch, T the decoder's tokens, S the source's, D model
// width, H heads, hs = D / H.
#include "12-cross-attention/cross_attention_lesson.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/array.hpp"
#include "base/budget.hpp"
#include "base/count.hpp"
#include "base/random.hpp"
#include "multi_head.hpp"
#include "trained.hpp"

namespace attn::lessons {

namespace {
constexpr std::size_t kMeasuredSources = 2000;  // a checkpoint's cross-attention is measured on
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kMemoryStream =
    0x6d656d6f7279ULL;  // the encoder's memory, apart from x's draws

// What the lesson runs on: random inputs of the given sizes, or a trained model's.
struct CrossInputs {
  std::size_t batch = 1, seq = 0, sources = 0, d = 0, heads = 0;
  Tensor3 x, memory;
  FusedMultiHead layer;
  std::vector<std::string> rows, columns;  // the heatmaps' labels
  std::optional<Tensor4> model_weights;    // the trained model's own forward's weights
};

// For check_budget, on random inputs: x and the memory, the layer's weights, the mask; the steps
// with the forward's own copies of them before they are split into heads and the scores before
// they are scaled; the steps shown (x,
// the memory, Q, K, V, the scores, the weights, the output); sequence 0's weights and up to four
// heads' heatmaps.
MemoryPlan plan_cross_attention_lesson(const CrossAttentionLessonOptions& o, const Sizes3& sizes,
                                       std::size_t heads) {
  const std::size_t b = sizes.batch, t = sizes.seq, s = o.source_seq, d = sizes.d_model;
  MemoryPlan plan = plan_lesson_input(o.common);
  plan.push_back({"the memory", {b, s, d}, "B S D", 4, Held::shown});
  plan.push_back({"the weights", {4, d, d}, " D D"});
  if (!o.source_lengths.empty()) {
    plan.push_back({"the source mask", {b, s}, "B S", 8, Held::shown});
    plan.push_back({"the mask for each head", {b, heads, t, s}, "B H T S"});
  }
  for (Held held : {Held::computing, Held::before_shown}) {
    plan.push_back(
        {"Q, the heads' outputs side by side, the output", {3, b, t, d}, " B T D", 4, held});
    plan.push_back({"K and V", {2, b, s, d}, " B S D", 4, held});
    plan.push_back({"the scores and weights", {2, b, heads, t, s}, " B H T S", 4, held});
  }
  plan.push_back({"the unscaled scores", {b, heads, t, s}, "B H T S", 4, Held::before_shown});
  plan.push_back({"x, Q and the output", {3, b, t, d}, " B T D", 4, Held::shown});
  plan.push_back({"K and V", {2, b, s, d}, " B S D", 4, Held::shown});
  plan.push_back({"the scores and weights", {2, b, heads, t, s}, " B H T S", 4, Held::shown});
  plan.push_back({"sequence 0's weights and heatmaps",
                  {heads + std::min<std::size_t>(heads, 4), t, s},
                  "H T S",
                  4,
                  Held::kept});
  return plan;
}

CrossInputs random_inputs(const CrossAttentionLessonOptions& o) {
  const Sizes3 sizes = lesson_sizes(o.common);
  CrossInputs in;
  in.batch = sizes.batch;
  in.seq = sizes.seq;
  in.sources = o.source_seq;
  in.d = sizes.d_model;
  in.heads = o.heads;
  if (in.heads == 0 || in.d % in.heads != 0)
    throw Error(
        ErrorKind::bad_size, "cross-attention",
        fmt::format("{} heads do not divide D = {}: give a divisor of {}", in.heads, in.d, in.d))
        .about("heads");
  if (!o.source_lengths.empty() && o.source_lengths.size() != in.batch)
    throw Error(ErrorKind::bad_size, "cross-attention",
                fmt::format("{} source lengths for a batch of {}: give one per sequence",
                            o.source_lengths.size(), in.batch))
        .about("source-lengths");
  for (std::size_t n : o.source_lengths)
    if (n == 0 || n > in.sources)
      throw Error(ErrorKind::bad_size, "cross-attention",
                  fmt::format("a source length of {} does not fit S = {}: give 1 to {}", n,
                              in.sources, in.sources))
          .about("source-lengths");
  check_budget("cross-attention", plan_cross_attention_lesson(o, sizes, in.heads));
  in.x = lesson_input(o.common, "(B, T, D)", {in.batch, in.seq, in.d});
  Rng rng(o.common.seed ^ kMemoryStream);  // the memory's stream, apart from x's
  in.memory = randn(rng, in.batch, in.sources, in.d);
  Rng weights(o.common.seed);
  in.layer =
      std::get<FusedMultiHead>(init_multi_head(weights, MultiHeadVariant::fused, in.d, in.heads));
  in.rows = numbered_labels("x", in.seq);
  in.columns = numbered_labels("s", in.sources);
  return in;
}

// The trained model on the task's source and answer: the memory is its encoder's output, x what
// decoder layer `layer`'s cross-attention reads (pre-LN: the normalised stream; post-LN: the
// stream itself).
CrossInputs trained_inputs(const TrainedCrossAttention& t) {
  const TransformerConfig& c = t.model.config;
  if (t.layer >= c.layers)
    throw Error(ErrorKind::bad_size, "cross-attention",
                fmt::format("--layer {} is past the checkpoint's {} decoder layers: give 0 to {}",
                            t.layer, c.layers, c.layers - 1))
        .about("layer");
  std::vector<std::int64_t> target = {kStartId};
  for (std::int64_t id : seq2seq_answer(t.task, t.source))
    target.push_back(id);
  CrossInputs in;
  in.seq = target.size();
  in.sources = t.source.size();
  in.d = c.d_model;
  in.heads = c.heads;
  Ids source_ids({1, in.sources}), target_ids({1, in.seq});
  std::copy(t.source.begin(), t.source.end(), source_ids.begin());
  std::copy(target.begin(), target.end(), target_ids.begin());
  const Array causal = target_causal_mask({in.seq}, in.seq);
  const TransformerTape tape = forward(t.model, source_ids, target_ids, nullptr, &causal);
  const DecoderBlockTape& block = tape.decoder_layers[t.layer];
  in.x =
      c.placement == NormPlacement::pre ? block.residual[1].norm.output : block.residual[1].input;
  in.memory = tape.memory();
  in.layer = t.model.decoder.layers[t.layer].cross_attention;
  in.model_weights = block.cross_attention.weights;
  for (std::size_t i = 0; i < target.size(); ++i)
    in.rows.push_back(
        read_and_written(t.task, target[i], i + 1 < target.size() ? target[i + 1] : kEndId));
  for (std::int64_t id : t.source)
    in.columns.push_back(source_tokens(t.task)[static_cast<std::size_t>(id)]);
  return in;
}

}  // namespace

LessonRun run_cross_attention(const CrossAttentionLessonOptions& o) {
  const CrossInputs in = o.trained ? trained_inputs(*o.trained) : random_inputs(o);
  const std::size_t heads = in.heads, d = in.d, s_count = in.sources;
  const Sizes3 sizes{in.batch, in.seq, in.d};
  LessonRun run("cross-attention");
  if (o.trained) {
    run.setting("checkpoint", checkpoint_label(o.trained->checkpoint));
    run.setting("task", std::string(seq2seq_task_info(o.trained->task).name));
    run.setting("text", source_text(o.trained->task, o.trained->source));
    run.setting("layer", std::to_string(o.trained->layer));
  } else {
    record_settings(run, o.common,
                    {{"batch", sizes.batch},
                     {"T", sizes.seq},
                     {"S", s_count},
                     {"d-model", d},
                     {"heads", heads}});
    run.setting("fill", std::string(fill_text(o.fill)));
  }

  run.section("intro");
  run.section(o.trained ? "inputs_trained" : "inputs");
  const Tensor3& x = in.x;
  const Tensor3& memory = in.memory;
  const FusedMultiHead& layer = in.layer;
  run.step("input", "x, the decoder's side: queries come from it (B,T,D)", to_array(x));
  run.step("memory", "the encoder's output: keys and values come from it (B,S,D)",
           to_array(memory));

  std::optional<ScoreMask> mask;
  if (!o.source_lengths.empty()) {
    const Array src = source_padding_mask(o.source_lengths, s_count);
    mask = broadcast_mask(src, sizes.batch, heads, sizes.seq, s_count, o.fill);
  }
  const MultiHeadSteps steps = forward(layer, x, memory, mask ? &*mask : nullptr);

  run.section("projections");
  run.step("queries", "W_Q(x), split into heads (B,H,T,hs)", to_array(steps.queries));
  run.step("keys", "W_K(memory), split into heads (B,H,S,hs)", to_array(steps.keys));
  run.step("values", "W_V(memory), split into heads (B,H,S,hs)", to_array(steps.values));

  run.section("scores");
  // Each kept score again, summed here left to right: the two orders may differ by the
  // round-off of hs products, at most hs · 2⁻²³ · Σ|q_i k_i| / √hs each.
  const std::size_t hs = d / heads;
  const float divisor = std::sqrt(static_cast<float>(hs));
  double worst_ratio = 0.0, largest = 0.0;
  std::size_t i = 0;
  for (std::size_t b = 0; b < sizes.batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < sizes.seq; ++t)
        for (std::size_t j = 0; j < s_count; ++j, ++i) {
          if (mask && mask->keep.data()[i] == 0.0f) continue;  // replaced by the fill
          double dot = 0.0, magnitude = 0.0;
          for (std::size_t k = 0; k < hs; ++k) {
            dot += static_cast<double>(steps.queries(b, h, t, k)) * steps.keys(b, h, j, k);
            magnitude +=
                std::abs(static_cast<double>(steps.queries(b, h, t, k)) * steps.keys(b, h, j, k));
          }
          const double difference = std::abs(dot / divisor - steps.scores(b, h, t, j));
          const double allowed = (static_cast<double>(hs) + 2.0) * std::ldexp(1.0, -23) *
                                 (magnitude / divisor + std::abs(dot / divisor));
          largest = std::max(largest, difference);
          worst_ratio = std::max(worst_ratio, difference / std::max(allowed, 1e-30));
        }
  run.step("scores", "Q Kᵀ / √hs: T x S for each head, masked as below (B,H,T,S)",
           to_array(steps.scores));
  run.check("the scores are Q Kᵀ / √hs (each recomputed in float64)", worst_ratio <= 1.0,
            fmt::format("largest |difference| {:.2g}, {} float32's round-off", largest,
                        worst_ratio <= 1.0 ? "within" : "past"));

  run.section("mask");
  if (mask) {
    const Array src = source_padding_mask(o.source_lengths, s_count);
    run.step("src_mask", "1 on each source's real tokens, 0 on its padding (B,1,1,S)",
             make_float32(src.shape, to_float_vector(src)));
    std::size_t masked = 0, zero = 0;
    for (std::size_t i = 0; i < mask->keep.size(); ++i)
      if (mask->keep.data()[i] == 0.0f) {
        ++masked;
        zero += steps.weights.data()[i] == 0.0f;
      }
    run.check("every padded source token gets weight exactly 0", masked == zero,
              fmt::format("{} of {} (query, padded key) pairs", zero, masked));
  } else {
    run.prose(o.trained
                  ? "One source, not padded: nothing is masked."
                  : "No --source-lengths: every source token is real, and nothing is masked.");
  }

  run.section("weights");
  run.step("weights", "softmax over the source tokens (B,H,T,S)", to_array(steps.weights));
  double worst = 0.0;
  for (std::size_t r = 0; r < steps.weights.size() / s_count; ++r) {
    double sum = 0.0;
    for (std::size_t j = 0; j < s_count; ++j)
      sum += steps.weights.data()[r * s_count + j];
    worst = std::max(worst, std::abs(sum - 1.0));
  }
  run.check("each row sums to 1 over the S source tokens", worst <= 1e-5,
            fmt::format("largest |row sum - 1| {:.2g}", worst));
  // The sequence with the most padding (the shortest source), or sequence 0.
  std::size_t shown = 0;
  for (std::size_t b = 0; b < o.source_lengths.size(); ++b)
    if (o.source_lengths[b] < o.source_lengths[shown]) shown = b;
  const std::size_t per_sequence = heads * sizes.seq * s_count;
  Tensor4 one({1, heads, sizes.seq, s_count});
  std::copy(steps.weights.data() + shown * per_sequence,
            steps.weights.data() + (shown + 1) * per_sequence, one.data());
  Heatmaps maps{fmt::format("sequence {}'s weights (rows: the decoder's tokens{}, columns: the "
                            "source's{})",
                            shown, o.trained ? ", read→to write" : "",
                            o.source_lengths.empty() ? "" : "; a padded key is ·"),
                {}};
  for (std::size_t h = 0; h < heads && h < 4; ++h) {
    Heatmap map{fmt::format("head {}", h), head_matrix(one, h), in.rows, in.columns};
    map.masked = mask.has_value();
    maps.maps.push_back(std::move(map));
  }
  run.heatmaps(std::move(maps));
  if (o.trained) {
    float apart = 0.0f;
    for (std::size_t i = 0; i < steps.weights.size(); ++i)
      apart = std::max(apart, std::abs(steps.weights.data()[i] - in.model_weights->data()[i]));
    run.check("these are the weights the model's own forward computed", apart <= 1e-6f,
              fmt::format("largest |difference| {:.2g} (allowed 1e-6)", apart));
    const Seq2SeqTaskInfo& info = seq2seq_task_info(o.trained->task);
    if (!info.keys.empty()) {
      run.prose(wrapped_prose(fmt::format(
          "A cross-attention that solves `{}` would show {}. What the trained heads do, "
          "measured with the decoder reading each held-out answer:",
          info.name, info.pattern)));
      TrainConfig measured = o.trained->config;
      measured.held_out = kMeasuredSources;
      show_head_patterns(
          run,
          measure_cross_attention(o.trained->model, o.trained->task, held_out_examples(measured)),
          info.keys, info.claim,
          fmt::format("{} held-out sources",
                      with_commas(static_cast<std::int64_t>(kMeasuredSources))),
          {o.trained->layer, std::nullopt});
    }
  }

  run.section("output");
  run.step("output", "W_O(the heads' weighted values side by side) (B,T,D)",
           to_array(steps.output));
  run.check("the output has the decoder's T rows, not the source's S",
            steps.output.shape(1) == sizes.seq,
            fmt::format("({}, {}, {}) from T = {} queries and S = {} keys", steps.output.shape(0),
                        steps.output.shape(1), steps.output.shape(2), sizes.seq, s_count));
  run.parameters = static_cast<std::int64_t>(4 * d * d);  // this layer's, bias-free
  return run;
}

}  // namespace attn::lessons
