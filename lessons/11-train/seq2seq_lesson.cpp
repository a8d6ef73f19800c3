// Lesson 11 with --model transformer. Legend: S source tokens, T target tokens, H heads, V the
// target vocabulary.
#include "11-train/seq2seq_lesson.hpp"

#include "11-train/train_lesson.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/array.hpp"

namespace attn::lessons {

namespace {
constexpr std::size_t kShownExamples = 4;
constexpr std::size_t kMapHeads = 4;

std::string joined(const std::vector<std::string>& tokens) {
  std::string s;
  for (const std::string& t : tokens) {
    if (!s.empty()) s += ' ';
    s += t;
  }
  return s;
}

std::vector<std::string> target_words(Seq2SeqTask task, const std::vector<std::int64_t>& ids) {
  std::vector<std::string> out;
  for (std::int64_t id : ids)
    out.push_back(target_tokens(task).at(static_cast<std::size_t>(id)));
  return out;
}
}  // namespace

Heatmaps cross_attention_maps(const Transformer& model, Seq2SeqTask task,
                              const std::vector<std::int64_t>& source,
                              const std::vector<std::int64_t>& decoded, const std::string& title) {
  Ids s({1, source.size()});
  std::copy(source.begin(), source.end(), s.begin());
  // What the decoder read while writing decoded[i]: <s> and the tokens before it.
  const std::size_t t = std::min(decoded.size(), model.config.target_positions);
  Ids input({1, t});
  input(0, 0) = kStartId;
  for (std::size_t i = 1; i < t; ++i)
    input(0, i) = decoded[i - 1];
  const Array causal = target_causal_mask({t}, t);
  const TransformerTape tape = forward(model, s, input, nullptr, &causal);
  const Tensor4& weights = tape.decoder_layers.back().cross_attention.weights;  // (1,H,T,S)
  std::vector<std::string> rows = target_words(task, {decoded.begin(), decoded.begin() + t}), cols;
  for (std::int64_t id : source)
    cols.push_back(source_tokens(task).at(static_cast<std::size_t>(id)));
  Heatmaps maps{title, {}};
  for (std::size_t h = 0; h < std::min<std::size_t>(weights.shape(1), kMapHeads); ++h)
    maps.maps.push_back({fmt::format("head {}", h), head_matrix(weights, h), rows, cols});
  return maps;
}

Seq2SeqLessonResult run_seq2seq_train(const Seq2SeqLessonOptions& options) {
  const Seq2SeqTrainConfig& c = options.config;
  check_seq2seq_config(c);
  const Seq2SeqTaskInfo& info = seq2seq_task_info(c.task);
  const TransformerConfig mc = model_config(c);
  Seq2SeqTrainer trainer(c);
  Seq2SeqLessonResult result{LessonRun("train"), trainer.model(), {}};
  LessonRun& run = result.run;
  run.setting("model", "transformer");
  run.setting("task", std::string(info.name));
  run.setting("seed", std::to_string(c.seed));
  run.setting("source V", std::to_string(mc.source_vocab));
  run.setting("target V", std::to_string(mc.target_vocab));
  run.setting("layers", std::to_string(c.layers));
  run.setting("D", std::to_string(c.d_model));
  run.setting("H", std::to_string(c.heads));
  run.setting("F", std::to_string(c.d_ff));
  run.setting("norm", c.norm == NormPlacement::pre ? "pre" : "post");
  run.setting("steps", std::to_string(c.steps));
  run.setting("batch", std::to_string(c.batch));
  run.setting("lr", fmt::format("{:g}", c.lr));

  run.section("intro");
  run.section("seq2seq_task");
  run.prose(
      wrapped_prose(fmt::format("The task, `{}`: the target is {}. A trained model's "
                                "cross-attention shows it: {}.",
                                info.name, info.description, info.pattern)));
  Rng stream(c.seed ^ 0x5a3e1ULL);
  std::vector<Seq2SeqExample> shown;
  for (std::size_t i = 0; i < kShownExamples; ++i)
    shown.push_back(make_example(c.task, stream, Seq2SeqSplit::train));
  const Seq2SeqBatch framed = make_batch(shown);
  Table data{"Four examples of the training data, as the decoder sees them",
             {"source", "decoder input", "labels"},
             {}};
  for (std::size_t i = 0; i < kShownExamples; ++i) {
    std::vector<std::string> in{"<s>"};
    for (std::int64_t id : shown[i].target)
      in.push_back(target_tokens(c.task).at(static_cast<std::size_t>(id)));
    std::vector<std::string> labels(in.begin() + 1, in.end());
    labels.push_back("</s>");
    data.rows.push_back({source_text(c.task, shown[i].source), joined(in), joined(labels)});
  }
  run.table(std::move(data));
  run.step("source", "the four sources' ids, padded with 0 (B,S)", to_array(framed.source));
  run.step("target_input", "the decoder's inputs: <s> (1), then the target (B,T)",
           to_array(framed.target_input));
  run.step("labels", "the labels: the target, then </s> (2); -100 is padding, ignored (B,T)",
           to_array(framed.labels));

  std::vector<double> losses, accuracies, rates;
  for (std::size_t step = 1; step <= c.steps; ++step) {
    const Seq2SeqStep s = trainer.step();
    losses.push_back(s.loss);
    accuracies.push_back(100.0 * s.accuracy);
    rates.push_back(s.lr);
    if (options.on_step) options.on_step(s);
  }
  result.model = trainer.model();

  run.section("seq2seq_initial_loss");
  const double chance = std::log(static_cast<double>(mc.target_vocab));
  Table start{"The loss before the first update", {"", "value"}, {}};
  start.rows.push_back({"loss at step 1", fmt::format("{:.4f}", losses.front())});
  start.rows.push_back(
      {fmt::format("ln V = ln {}: every target token equally likely", mc.target_vocab),
       fmt::format("{:.4f}", chance)});
  run.table(std::move(start));

  run.section("training");
  training_curves(run, losses, accuracies, rates, "cross-entropy over its target tokens",
                  "next tokens right, teacher-forced");

  run.section("seq2seq_held_out");
  const std::vector<Seq2SeqExample> held_out = held_out_examples(c);
  result.held_out = evaluate(result.model, c.task, held_out);
  const Seq2SeqEvaluation& e = result.held_out;
  Table accuracy{fmt::format("The held-out set: {} sources training never saw", e.examples),
                 {"measure", "value"},
                 {}};
  accuracy.rows.push_back(
      {"answers entirely right (greedy decoding)", fmt::format("{:.2f}%", 100.0 * e.exact_match)});
  accuracy.rows.push_back(
      {"next tokens right (teacher-forced)", fmt::format("{:.2f}%", 100.0 * e.token_accuracy)});
  run.table(std::move(accuracy));
  run.step(
      "held_out_accuracy", "the fraction of held-out answers and tokens right",
      make_float32({2}, {static_cast<float>(e.exact_match), static_cast<float>(e.token_accuracy)}));

  run.section("seq2seq_after");
  const Seq2SeqExample& example = held_out.front();
  const Decoded decoded = decode(result.model, example.source, DecodeOptions{});
  Table outputs{"A held-out source decoded greedily", {"", "tokens"}, {}};
  outputs.rows.push_back({"source", source_text(c.task, example.source)});
  outputs.rows.push_back({"decoded", joined(target_words(c.task, decoded.tokens))});
  std::vector<std::int64_t> expected = example.target;
  expected.push_back(kEndId);
  outputs.rows.push_back({"expected", joined(target_words(c.task, expected)) +
                                          (decoded.tokens == expected ? "" : "  ✗")});
  run.table(std::move(outputs));
  run.heatmaps(cross_attention_maps(
      result.model, c.task, example.source, decoded.tokens,
      fmt::format("decoder layer {}, cross-attention (rows: tokens written, columns: source)",
                  c.layers - 1)));
  run.parameters = 0;
  visit_parameters(result.model, [&](const std::string&, float*, const Shape& shape) {
    run.parameters += static_cast<std::int64_t>(element_count(shape));
  });
  return result;
}

}  // namespace attn::lessons
