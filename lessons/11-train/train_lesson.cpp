// Lesson 11, training. Legend: B batch, T tokens, D model width, H heads, C classes.
#include "11-train/train_lesson.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/array.hpp"
#include "base/budget.hpp"
#include "softmax.hpp"
#include "train/tasks.hpp"

namespace attn::lessons {

namespace {
constexpr std::size_t kShownSequences = 4;  // the data table
constexpr std::size_t kLogRows = 10;        // the log table: about every tenth step
constexpr std::size_t kMapLayers = 4, kMapHeads = 4;

std::string spaced(const Ids& ids, std::size_t row, bool labels, const TrainConfig& c) {
  std::string s;
  for (std::size_t i = 0; i < ids.shape(1); ++i) {
    const std::int64_t v = ids(row, i);
    const std::string text = labels ? label_text(c.task, c.sizes, v) : token_text(v);
    s += (i > 0 ? " " : "") + (text.empty() ? std::string("·") : text);
  }
  return s;
}

// One sequence of a batch, as a (1,T) batch of its own.
Ids sequence(const Ids& ids, std::size_t row) {
  Ids one({1, ids.shape(1)});
  std::copy(ids.data() + row * ids.shape(1), ids.data() + (row + 1) * ids.shape(1), one.data());
  return one;
}

// Every layer's heads (at most kMapLayers x kMapHeads) on one sequence, its tokens as labels.
void attention_maps(LessonRun& run, const TokenClassifier& model, const Ids& example,
                    const std::string& when) {
  const EncoderTape tape = forward_tape(model.encoder, example);
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < example.shape(1); ++i)
    labels.push_back(token_text(example(0, i)));
  for (std::size_t l = 0; l < std::min(tape.layers.size(), kMapLayers); ++l) {
    const Tensor4& weights = tape.layers[l].attention.weights;  // (1,H,T,T)
    Heatmaps maps{fmt::format("layer {}, {} (rows: queries, columns: keys)", l, when), {}};
    for (std::size_t h = 0; h < std::min<std::size_t>(weights.shape(1), kMapHeads); ++h)
      maps.maps.push_back({fmt::format("head {}", h), head_matrix(weights, h), labels, labels});
    run.heatmaps(std::move(maps));
  }
}

}  // namespace

void training_curves(LessonRun& run, const std::vector<double>& losses,
                     const std::vector<double>& accuracies, const std::vector<double>& rates,
                     std::string_view loss_what, std::string_view accuracy_what) {
  run.curve({fmt::format("Loss on each step's batch ({})", loss_what), losses});
  run.curve({fmt::format("Accuracy on each step's batch (% of {})", accuracy_what), accuracies, 5});
  run.curve({"Learning rate (5% warm-up, then a cosine to a tenth)", rates, 4});
  Table progress{"Every tenth of the run", {"step", "loss", "accuracy", "learning rate"}, {}};
  const std::size_t steps = losses.size();
  const std::size_t every = std::max<std::size_t>(1, steps / kLogRows);
  for (std::size_t i = 0; i < steps; ++i) {
    if ((i + 1) % every != 0 && i != 0 && i + 1 != steps) continue;
    progress.rows.push_back({fmt::format("{}", i + 1), fmt::format("{:.4f}", losses[i]),
                             fmt::format("{:.1f}%", accuracies[i]),
                             fmt::format("{:.3g}", rates[i])});
  }
  run.table(std::move(progress));
  const bool finite =
      std::all_of(losses.begin(), losses.end(), [](double l) { return std::isfinite(l); });
  run.check("every step's loss is finite", finite,
            finite ? fmt::format("{} steps", steps) : "a loss is inf or nan: lower --lr");
}

TrainLessonResult run_train(const TrainLessonOptions& options) {
  const TrainConfig& c = options.config;
  check_train_config(c);
  check_budget("train", plan_training(c));
  const TaskInfo& info = task_info(c.task);
  const std::size_t classes = task_classes(c.task, c.sizes);
  TrainLessonResult result{LessonRun("train"), initial_model(c), {}};
  LessonRun& run = result.run;
  run.setting("task", std::string(info.name));
  run.setting("seed", std::to_string(c.seed));
  run.setting("T", std::to_string(c.sizes.tokens));
  run.setting("V", std::to_string(task_vocabulary(c.task, c.sizes)));
  run.setting("layers", std::to_string(c.layers));
  run.setting("D", std::to_string(c.d_model));
  run.setting("H", std::to_string(c.heads));
  run.setting("F", std::to_string(c.d_ff));
  run.setting("norm", c.norm == NormPlacement::pre ? "pre" : "post");
  run.setting("steps", std::to_string(c.steps));
  run.setting("batch", std::to_string(c.batch));
  run.setting("lr", fmt::format("{:g}", c.lr));
  if (c.dropout > 0.0f) run.setting("dropout", fmt::format("{:g}", c.dropout));

  run.section("intro");
  run.section("task");
  run.prose(wrapped_prose(fmt::format("The task, `{}`: {}. A head that solves it shows {}.",
                                      info.name, info.description, info.pattern)));
  Rng stream(c.seed ^ 0x5a3e1ULL);  // a look at the data, apart from the training stream
  const TaskBatch shown = make_task_batch(c.task, c.sizes, kShownSequences, stream);
  Table data{fmt::format("Four sequences of the training data (T = {}, {} classes)", c.sizes.tokens,
                         classes),
             {"tokens", "labels"},
             {}};
  for (std::size_t s = 0; s < kShownSequences; ++s)
    data.rows.push_back({spaced(shown.ids, s, false, c), spaced(shown.labels, s, true, c)});
  run.table(std::move(data));

  const TaskBatch held_out = held_out_set(c);
  const Ids example = sequence(held_out.ids, 0);
  run.section("input");
  run.step("input", "a held-out sequence's token ids, the example below", to_array(example));

  run.section("before");
  attention_maps(run, result.model, example, "before training");

  std::vector<double> losses, accuracies, rates;
  result.model = train(c, [&](const TrainStep& s) {
    losses.push_back(s.loss);
    accuracies.push_back(100.0 * s.accuracy);
    rates.push_back(s.lr);
    if (options.on_step) options.on_step(s);
  });

  run.section("initial_loss");
  const double chance = std::log(static_cast<double>(classes));
  Table start{"The loss before the first update", {"", "value"}, {}};
  start.rows.push_back({"loss at step 1", fmt::format("{:.4f}", losses.front())});
  start.rows.push_back({fmt::format("ln C = ln {}: every class equally likely", classes),
                        fmt::format("{:.4f}", chance)});
  run.table(std::move(start));

  run.section("training");
  training_curves(run, losses, accuracies, rates,
                  "cross-entropy, the mean over its labelled tokens", "its labelled tokens right");
  const std::size_t tenth = std::max<std::size_t>(1, c.steps / 10);
  double first = 0.0, last = 0.0;
  for (std::size_t i = 0; i < tenth; ++i)
    first += losses[i] / static_cast<double>(tenth), last += losses[c.steps - 1 - i] / tenth;
  run.check("training lowered the loss: the last tenth of the steps below the first", last < first,
            fmt::format("mean loss {:.4f} over the first {} steps, {:.4f} over the last {}", first,
                        tenth, last, tenth));

  run.section("held_out");
  result.held_out = evaluate(result.model, held_out);
  const Evaluation& e = result.held_out;
  Table accuracy{fmt::format("The held-out set: {} sequences training never saw", e.sequences),
                 {"measure", "value"},
                 {}};
  accuracy.rows.push_back(
      {c.task == Task::masked ? "'?' positions filled in right" : "tokens right",
       fmt::format("{:.2f}%", 100.0 * e.token_accuracy)});
  accuracy.rows.push_back(
      {"sequences entirely right", fmt::format("{:.2f}%", 100.0 * e.sequence_accuracy)});
  run.table(std::move(accuracy));
  run.step("held_out_accuracy", "the fraction of held-out tokens and sequences right",
           make_float32({2}, {static_cast<float>(e.token_accuracy),
                              static_cast<float>(e.sequence_accuracy)}));

  run.section("after");
  attention_maps(run, result.model, example, "after training");
  const Tensor3 logits =
      forward(result.model.head, forward_tape(result.model.encoder, example).output());
  const std::vector<std::int64_t> labels(held_out.labels.data(),
                                         held_out.labels.data() + c.sizes.tokens);
  Table outputs{"What the trained model outputs for the example",
                {"position", "token", "output", "expected"},
                {}};
  for (std::size_t i = 0; i < c.sizes.tokens; ++i) {
    if (labels[i] == kIgnoredLabel) {
      outputs.rows.push_back({fmt::format("{}", i), token_text(example(0, i)), "", ""});
      continue;
    }
    const float* z = logits.data() + i * classes;
    const auto best = static_cast<std::int64_t>(std::max_element(z, z + classes) - z);
    const std::string got = label_text(c.task, c.sizes, best),
                      expected = label_text(c.task, c.sizes, labels[i]);
    outputs.rows.push_back({fmt::format("{}", i), token_text(example(0, i)), got,
                            expected + (got == expected ? "" : "  ✗")});
  }
  run.table(std::move(outputs));
  run.section("output");
  run.step("output",
           fmt::format("softmax of the trained head's logits: each position's probability of "
                       "each class (1, T, C = {})",
                       classes),
           to_array(softmax(logits)));
  run.parameters = 0;
  visit_parameters(result.model, [&](const std::string&, float*, const Shape& shape) {
    run.parameters += static_cast<std::int64_t>(element_count(shape));
  });
  return result;
}

}  // namespace attn::lessons
