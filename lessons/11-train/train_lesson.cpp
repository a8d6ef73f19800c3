// Lesson 11, training. Legend: B batch, T tokens (an encoder-decoder's target), S source tokens,
// D model width, H heads, C classes, V the target vocabulary.
#include "11-train/train_lesson.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/array.hpp"
#include "base/count.hpp"
#include "softmax.hpp"
#include "trained.hpp"

namespace attn::lessons {

namespace {
constexpr std::size_t kShownSequences = 4;  // the data table
constexpr std::size_t kLogRows = 10;        // the log table: about every tenth step
constexpr std::size_t kAdamWSteps = 3;      // the AdamW table's first steps
constexpr std::size_t kMapLayers = 4, kMapHeads = 4;
// A look at the training data, from a stream apart from the training batches'.
constexpr std::uint64_t kShownStream = 0x5a3e1ULL;

// What attn claims of the heads is how a model that solves the task does it: a run that has not
// solved it yet (fewer steps, another size) has its heads measured with nothing claimed.
constexpr double kSolved = 0.95;  // held-out sequences entirely right
HeadsClaim claim_if_solved(LessonRun& run, HeadsClaim claim, double sequences_right) {
  if (sequences_right >= kSolved || claim == HeadsClaim::none) return claim;
  run.prose(wrapped_prose(fmt::format(
      "This run has not solved the task yet ({:.2f}% of held-out sequences entirely right, "
      "below {:.0f}%), so nothing is claimed of its heads; their measurement says what they "
      "attend to so far.",
      100.0 * sequences_right, 100.0 * kSolved)));
  return HeadsClaim::none;
}

std::string commas(std::size_t n) {
  return with_commas(static_cast<std::int64_t>(n));
}

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

// ---- An encoder task: the book's encoder with a head on every token

std::string spaced(const Ids& ids, std::size_t row, bool labels, Task task,
                   const TaskSizes& sizes) {
  std::string s;
  for (std::size_t i = 0; i < ids.shape(1); ++i) {
    const std::int64_t v = ids(row, i);
    const std::string text = labels ? label_text(task, sizes, v) : token_text(v);
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
    Heatmaps maps{fmt::format("layer {}, {} (rows: queries, columns: keys)", l, when),
                  {},
                  WeightsScale::fixed};
    for (std::size_t h = 0; h < std::min<std::size_t>(weights.shape(1), kMapHeads); ++h)
      maps.maps.push_back({fmt::format("head {}", h), head_matrix(weights, h), labels, labels});
    run.heatmaps(std::move(maps));
  }
}

// What lesson 11 shows of an encoder task around the training loop.
class EncoderTaskView {
 public:
  EncoderTaskView(const TrainConfig& c) : c_(c), task_(std::get<Task>(c.task)) {}

  void settings(LessonRun& run) const {
    run.setting("task", std::string(task_info(task_).name));
    run.setting("seed", std::to_string(c_.seed));
    run.setting("T", std::to_string(c_.sizes.tokens));
    run.setting("V", std::to_string(task_vocabulary(task_, c_.sizes)));
  }

  // The task and its data, a held-out sequence, and the untrained model's attention on it.
  void before(LessonRun& run, const TrainedModel& initial) {
    const TaskInfo& info = task_info(task_);
    run.section("task");
    run.prose(wrapped_prose(fmt::format(
        "The task, `{}`: {}. Attention could solve it with {}; after training, the lesson "
        "measures what the heads do instead of saying it.",
        info.name, info.description, info.pattern)));
    Rng stream(c_.seed ^ kShownStream);
    const TaskBatch shown = make_task_batch(task_, c_.sizes, kShownSequences, stream);
    Table data{fmt::format("Four sequences of the training data (T = {}, {} classes)",
                           c_.sizes.tokens, classes()),
               {"tokens", "labels"},
               {}};
    for (std::size_t s = 0; s < kShownSequences; ++s)
      data.rows.push_back({spaced(shown.ids, s, false, task_, c_.sizes),
                           spaced(shown.labels, s, true, task_, c_.sizes)});
    run.table(std::move(data));
    held_out_ = held_out_set(c_);
    example_ = sequence(held_out_.ids, 0);
    run.section("input");
    run.step("input", "a held-out sequence's token ids, the example below", to_array(example_));
    run.section("before");
    attention_maps(run, std::get<TokenClassifier>(initial), example_, "before training");
  }

  std::string initial_loss_section() const { return "initial_loss"; }
  std::pair<std::string, std::size_t> chance() const {
    return {fmt::format("ln C = ln {}: every class equally likely", classes()), classes()};
  }
  std::pair<std::string_view, std::string_view> curves_what() const {
    return {"cross-entropy, the mean over its labelled tokens", "its labelled tokens right"};
  }

  // The held-out accuracy; the trained model's attention and outputs on the example.
  std::vector<HeldOutMeasure> after(LessonRun& run, const TrainedModel& trained) const {
    const TokenClassifier& model = std::get<TokenClassifier>(trained);
    run.section("held_out");
    const HeldOutOverlap overlap = held_out_overlap(c_);
    run.check("held_out_unseen", overlap.found == 0,
              fmt::format("{} of the {} distinct held-out sequences occur among the {} sequences "
                          "training drew",
                          overlap.found, overlap.held_out, commas(overlap.drawn)));
    const Evaluation e = evaluate(model, held_out_);
    Table accuracy{fmt::format("The held-out set: {} sequences", commas(e.sequences)),
                   {"measure", "value"},
                   {}};
    accuracy.rows.push_back(
        {task_ == Task::masked ? "'?' positions filled in right" : "tokens right",
         fmt::format("{:.2f}%", 100.0 * e.token_accuracy)});
    accuracy.rows.push_back(
        {"sequences entirely right", fmt::format("{:.2f}%", 100.0 * e.sequence_accuracy)});
    run.table(std::move(accuracy));
    run.step("held_out_accuracy", "the fraction of held-out tokens and sequences right",
             make_float32({2}, {static_cast<float>(e.token_accuracy),
                                static_cast<float>(e.sequence_accuracy)}));

    show_wrong(run, e);

    run.section("after");
    attention_maps(run, model, example_, "after training");
    const TaskInfo& info = task_info(task_);
    show_head_patterns(run, measure_heads(model, task_, held_out_), info.keys,
                       claim_if_solved(run, info.claim, e.sequence_accuracy),
                       fmt::format("the {} held-out sequences", commas(e.sequences)));
    const Tensor3 logits = forward(model.head, forward_tape(model.encoder, example_).output());
    const std::vector<std::int64_t> labels(held_out_.labels.data(),
                                           held_out_.labels.data() + c_.sizes.tokens);
    Table outputs{"What the trained model outputs for the example",
                  {"position", "token", "output", "expected"},
                  {}};
    for (std::size_t i = 0; i < c_.sizes.tokens; ++i) {
      if (labels[i] == kIgnoredLabel) {
        outputs.rows.push_back({fmt::format("{}", i), token_text(example_(0, i)), "", ""});
        continue;
      }
      const float* z = logits.data() + i * classes();
      const auto best = static_cast<std::int64_t>(std::max_element(z, z + classes()) - z);
      const std::string got = label_text(task_, c_.sizes, best),
                        expected = label_text(task_, c_.sizes, labels[i]);
      outputs.rows.push_back({fmt::format("{}", i), token_text(example_(0, i)), got,
                              expected + (got == expected ? "" : "  ✗")});
    }
    run.table(std::move(outputs));
    run.section("output");
    run.step("output",
             fmt::format("softmax of the trained head's logits: each position's probability of "
                         "each class (1, T, C = {})",
                         classes()),
             to_array(softmax(logits)));
    return {{"token_accuracy", "held-out tokens right", e.token_accuracy},
            {"sequence_accuracy", "held-out sequences right", e.sequence_accuracy}};
  }

  bool checks_lowered_loss() const { return true; }

 private:
  std::size_t classes() const { return task_classes(task_, c_.sizes); }

  // The held-out sequences the model gets wrong, a few of them, with what it answered.
  void show_wrong(LessonRun& run, const Evaluation& e) const {
    if (e.wrong.empty()) return;
    Table wrong{fmt::format("Held-out sequences it gets wrong: {} of {}, the first {}",
                            commas(e.sequences_wrong), commas(e.sequences), e.wrong.size()),
                {"tokens", "expected", "answered"},
                {}};
    for (const Evaluation::Wrong& w : e.wrong) {
      std::vector<std::string> answered;
      for (std::int64_t a : w.answer)
        answered.push_back(a == kIgnoredLabel ? "·" : label_text(task_, c_.sizes, a));
      wrong.rows.push_back({spaced(held_out_.ids, w.index, false, task_, c_.sizes),
                            spaced(held_out_.labels, w.index, true, task_, c_.sizes),
                            joined(answered)});
    }
    run.table(std::move(wrong));
  }
  const TrainConfig& c_;
  Task task_;
  TaskBatch held_out_;
  Ids example_;
};

// ---- A sequence-to-sequence task: seed 001's encoder-decoder

class Seq2SeqTaskView {
 public:
  Seq2SeqTaskView(const TrainConfig& c)
      : c_(c), task_(std::get<Seq2SeqTask>(c.task)), model_config_(transformer_config(c)) {}

  void settings(LessonRun& run) const {
    run.setting("model", "transformer");
    run.setting("task", std::string(seq2seq_task_info(task_).name));
    run.setting("seed", std::to_string(c_.seed));
    run.setting("source V", std::to_string(model_config_.source_vocab));
    run.setting("target V", std::to_string(model_config_.target_vocab));
  }

  // The task and its data, framed for teacher forcing.
  void before(LessonRun& run, const TrainedModel&) {
    const Seq2SeqTaskInfo& info = seq2seq_task_info(task_);
    run.section("seq2seq_task");
    run.prose(
        wrapped_prose(fmt::format("The task, `{}`: the target is {}. A trained model's "
                                  "cross-attention shows it: {}.",
                                  info.name, info.description, info.pattern)));
    Rng stream(c_.seed ^ kShownStream);
    std::vector<Seq2SeqExample> shown;
    for (std::size_t i = 0; i < kShownSequences; ++i)
      shown.push_back(make_example(task_, stream, Seq2SeqSplit::train));
    const Seq2SeqBatch framed = make_batch(shown);
    Table data{"Four examples of the training data, as the decoder sees them",
               {"source", "decoder input", "labels"},
               {}};
    for (std::size_t i = 0; i < kShownSequences; ++i) {
      std::vector<std::string> in{"<s>"};
      for (std::int64_t id : shown[i].target)
        in.push_back(target_tokens(task_).at(static_cast<std::size_t>(id)));
      std::vector<std::string> labels(in.begin() + 1, in.end());
      labels.push_back("</s>");
      data.rows.push_back({source_text(task_, shown[i].source), joined(in), joined(labels)});
    }
    run.table(std::move(data));
    run.step("source", "the four sources' ids, padded with 0 (B,S)", to_array(framed.source));
    run.step("target_input", "the decoder's inputs: <s> (1), then the target (B,T)",
             to_array(framed.target_input));
    run.step("labels", "the labels: the target, then </s> (2); -100 is padding, ignored (B,T)",
             to_array(framed.labels));
  }

  std::string initial_loss_section() const { return "seq2seq_initial_loss"; }
  std::pair<std::string, std::size_t> chance() const {
    return {
        fmt::format("ln V = ln {}: every target token equally likely", model_config_.target_vocab),
        model_config_.target_vocab};
  }
  std::pair<std::string_view, std::string_view> curves_what() const {
    return {"cross-entropy over its target tokens", "next tokens right, teacher-forced"};
  }

  // The held-out exact match and next-token accuracy; a held-out source decoded greedily, with
  // the cross-attention that wrote it.
  std::vector<HeldOutMeasure> after(LessonRun& run, const TrainedModel& trained) const {
    const Transformer& model = std::get<Transformer>(trained);
    run.section("seq2seq_held_out");
    const std::vector<Seq2SeqExample> held_out = held_out_examples(c_);
    const HeldOutOverlap overlap = held_out_overlap(c_);
    run.check("held_out_unseen", overlap.found == 0,
              fmt::format("{} of the {} distinct held-out sources occur among the {} sources "
                          "training drew",
                          overlap.found, overlap.held_out, commas(overlap.drawn)));
    const Seq2SeqEvaluation e = evaluate(model, task_, held_out);
    Table accuracy{
        fmt::format("The held-out set: {} sources", commas(e.examples)), {"measure", "value"}, {}};
    accuracy.rows.push_back({"answers entirely right (greedy decoding)",
                             fmt::format("{:.2f}%", 100.0 * e.exact_match)});
    accuracy.rows.push_back(
        {"next tokens right (teacher-forced)", fmt::format("{:.2f}%", 100.0 * e.token_accuracy)});
    run.table(std::move(accuracy));
    run.step("held_out_accuracy", "the fraction of held-out answers and tokens right",
             make_float32(
                 {2}, {static_cast<float>(e.exact_match), static_cast<float>(e.token_accuracy)}));

    run.section("seq2seq_after");
    const Seq2SeqExample& example = held_out.front();
    const Decoded decoded = decode(model, example.source, DecodeOptions{});
    Table outputs{"A held-out source decoded greedily", {"", "tokens"}, {}};
    outputs.rows.push_back({"source", source_text(task_, example.source)});
    outputs.rows.push_back({"decoded", joined(target_words(task_, decoded.tokens))});
    std::vector<std::int64_t> expected = example.target;
    expected.push_back(kEndId);
    outputs.rows.push_back({"expected", joined(target_words(task_, expected)) +
                                            (decoded.tokens == expected ? "" : "  ✗")});
    run.table(std::move(outputs));
    run.heatmaps(cross_attention_maps(
        model, task_, example.source, decoded.tokens,
        fmt::format(
            "decoder layer {}, cross-attention (rows: token read→token written, columns: source)",
            c_.layers - 1)));
    const Seq2SeqTaskInfo& info = seq2seq_task_info(task_);
    if (!info.keys.empty())
      show_head_patterns(run, measure_cross_attention(model, task_, held_out), info.keys,
                         claim_if_solved(run, info.claim, e.exact_match),
                         fmt::format("the {} held-out sources (the decoder reading each answer)",
                                     commas(held_out.size())));
    return {{"exact_match", "held-out answers right (greedy)", e.exact_match},
            {"token_accuracy", "held-out next tokens right", e.token_accuracy}};
  }

  bool checks_lowered_loss() const { return false; }

 private:
  const TrainConfig& c_;
  Seq2SeqTask task_;
  TransformerConfig model_config_;
};

// The curves of a training run (loss, accuracy in %, learning rate, one value a step), a table of
// every tenth step, and the check that every loss is finite. `loss_what` and `accuracy_what` say
// what the loss averages and what the accuracy counts.
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

// The mean loss of the first and the last tenth of the steps: training must have lowered it.
void check_lowered_loss(LessonRun& run, const std::vector<double>& losses) {
  const std::size_t steps = losses.size(), tenth = std::max<std::size_t>(1, steps / 10);
  double first = 0.0, last = 0.0;
  for (std::size_t i = 0; i < tenth; ++i)
    first += losses[i] / static_cast<double>(tenth), last += losses[steps - 1 - i] / tenth;
  run.check("training lowered the loss: the last tenth of the steps below the first", last < first,
            fmt::format("mean loss {:.4f} over the first {} steps, {:.4f} over the last {}", first,
                        tenth, last, tenth));
}

// One weight's AdamW state after each of the first steps, read from the trainer's optimizer: the
// last weight matrix (the output head's), at its largest gradient of step 1.
class AdamWWatch {
 public:
  explicit AdamWWatch(const Trainer& trainer) : trainer_(trainer) {
    const std::vector<ParameterSlot>& slots = trainer.parameters();
    slot_ = slots.size() - 1;
    while (slot_ > 0 &&
           (slots[slot_].count < 2 || slots[slot_].key.find("weight") == std::string::npos))
      --slot_;
  }
  // Around each trainer.step(): the weight before it, then what the step did.
  void before(std::size_t step) {
    if (step > kAdamWSteps) return;
    const ParameterSlot& s = trainer_.parameters()[slot_];
    kept_.assign(s.value, s.value + s.count);
  }
  void after(std::size_t step) {
    if (step > kAdamWSteps) return;
    const ParameterSlot& s = trainer_.parameters()[slot_];
    if (step == 1)
      element_ = static_cast<std::size_t>(
          std::max_element(s.grad, s.grad + s.count,
                           [](float a, float b) { return std::fabs(a) < std::fabs(b); }) -
          s.grad);
    const AdamW& adamw = trainer_.optimizer();
    rows_.push_back({adamw.lr, s.grad[element_], adamw.m[slot_][element_], adamw.v[slot_][element_],
                     kept_[element_], s.value[element_]});
  }

  // The table of the first steps and the check that step 1 is lr·sign(g).
  void report(LessonRun& run) const {
    if (rows_.empty()) return;
    const AdamW& adamw = trainer_.optimizer();
    Table table{
        fmt::format("AdamW on one weight, {} entry {} (its largest gradient at step 1)",
                    trainer_.parameters()[slot_].key, element_),
        {"step", "lr", "g", "m", "v", "m̂ = m/(1-β1ᵗ)", "v̂ = v/(1-β2ᵗ)", "m̂/√v̂", "update Δp"},
        {}};
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const Row& r = rows_[i];
      const double t = static_cast<double>(i + 1);
      const double m_hat = r.m / (1.0 - std::pow(static_cast<double>(adamw.beta1), t));
      const double v_hat = r.v / (1.0 - std::pow(static_cast<double>(adamw.beta2), t));
      table.rows.push_back(
          {fmt::format("{}", i + 1), fmt::format("{:.3g}", r.lr), fmt::format("{:.4g}", r.grad),
           fmt::format("{:.4g}", r.m), fmt::format("{:.4g}", r.v), fmt::format("{:.4g}", m_hat),
           fmt::format("{:.4g}", v_hat), fmt::format("{:.4f}", m_hat / std::sqrt(v_hat)),
           fmt::format("{:.4g}", r.after - r.before)});
    }
    run.table(std::move(table));
    // Step 1 without the decay (p·lr·wd, applied first) against -lr·sign(g); float32 round-off of
    // p, and eps against |g|, allow a little.
    const Row& first = rows_.front();
    const double decayed =
        static_cast<double>(first.before * (1.0f - first.lr * adamw.weight_decay));
    const double step = static_cast<double>(first.after) - decayed;
    const double expected = -static_cast<double>(first.lr) * (first.grad > 0.0f ? 1.0 : -1.0);
    const double ulp = std::fabs(std::nextafter(static_cast<float>(decayed), INFINITY) -
                                 static_cast<float>(decayed));
    const double allowed = 4.0 * ulp + first.lr * adamw.eps / std::fabs(first.grad);
    run.check("step 1 moves the weight by -lr·sign(g), whatever the size of g",
              std::fabs(step - expected) <= allowed,
              fmt::format("{:.6g} against -lr·sign(g) = {:.6g}, beside the decay; difference "
                          "{:.1e}, float round-off allows {:.1e}",
                          step, expected, std::fabs(step - expected), allowed));
  }

 private:
  struct Row {
    float lr, grad, m, v, before, after;
  };
  const Trainer& trainer_;
  std::size_t slot_ = 0, element_ = 0;
  std::vector<float> kept_;
  std::vector<Row> rows_;
};

template <class View>
TrainLessonResult run_with(View view, const TrainLessonOptions& options) {
  const TrainConfig& c = options.config;
  Trainer trainer(c);
  TrainLessonResult result{LessonRun("train"), trainer.model(), {}};
  LessonRun& run = result.run;
  view.settings(run);
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
  view.before(run, trainer.model());

  std::vector<double> losses, accuracies, rates;
  AdamWWatch adamw(trainer);
  for (std::size_t step = 1; step <= c.steps; ++step) {
    adamw.before(step);
    const TrainStep s = trainer.step();
    adamw.after(step);
    losses.push_back(s.loss);
    accuracies.push_back(100.0 * s.accuracy);
    rates.push_back(s.lr);
    if (options.on_step) options.on_step(s);
  }
  result.model = trainer.model();

  run.section(view.initial_loss_section());
  const auto [chance_what, choices] = view.chance();
  Table start{"The loss before the first update", {"", "value"}, {}};
  start.rows.push_back({"loss at step 1", fmt::format("{:.4f}", losses.front())});
  start.rows.push_back(
      {chance_what, fmt::format("{:.4f}", std::log(static_cast<double>(choices)))});
  run.table(std::move(start));

  run.section("adamw");
  adamw.report(run);

  run.section("training");
  const auto [loss_what, accuracy_what] = view.curves_what();
  training_curves(run, losses, accuracies, rates, loss_what, accuracy_what);
  if (view.checks_lowered_loss()) check_lowered_loss(run, losses);

  result.held_out = view.after(run, result.model);
  run.parameters = 0;
  std::visit(
      [&](auto& model) {
        visit_parameters(model, [&](const std::string&, float*, const Shape& shape) {
          run.parameters += static_cast<std::int64_t>(element_count(shape));
        });
      },
      result.model);
  return result;
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
  std::vector<std::string> rows, cols;
  for (std::size_t i = 0; i < t; ++i)
    rows.push_back(read_and_written(task, input(0, i), decoded[i]));
  for (std::int64_t id : source)
    cols.push_back(source_tokens(task).at(static_cast<std::size_t>(id)));
  Heatmaps maps{title, {}};
  for (std::size_t h = 0; h < std::min<std::size_t>(weights.shape(1), kMapHeads); ++h)
    maps.maps.push_back({fmt::format("head {}", h), head_matrix(weights, h), rows, cols});
  return maps;
}

HeldOutResults held_out_results(const std::vector<HeldOutMeasure>& measures) {
  HeldOutResults out;
  for (const HeldOutMeasure& m : measures)
    out.emplace_back(m.key, m.value);
  return out;
}

TrainLessonResult run_train(const TrainLessonOptions& options) {
  check_train_config(options.config);
  if (is_seq2seq(options.config.task)) return run_with(Seq2SeqTaskView(options.config), options);
  return run_with(EncoderTaskView(options.config), options);
}

}  // namespace attn::lessons
