#include "11-train/gpt_train_lesson.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/utf8.hpp"

namespace attn::lessons {

namespace {

std::string with_commas(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// The prompt every sample starts from: a newline when the vocabulary has one, else token 0.
std::vector<std::int64_t> sample_prompt(const TextTokenizer& tokenizer) {
  try {
    const std::vector<std::int32_t> ids = encode_text(tokenizer, "\n");
    if (ids.size() == 1) return {ids[0]};
  } catch (const Error&) {
  }
  return {0};
}

std::string fenced(const std::string& text) {
  return "```\n" + text + (text.ends_with('\n') ? "" : "\n") + "```";
}

}  // namespace

std::string decoded_text(const TextTokenizer& tokenizer, const std::vector<std::int64_t>& ids) {
  const std::string bytes = decode(tokenizer.bpe, ids);
  std::string out;
  for (std::size_t at = 0; at < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[at]);
    const std::size_t n = utf8_sequence_length(bytes, at);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
      ++at;
    } else if (n > 1) {  // a whole character of several bytes
      out += printable(std::string_view(bytes).substr(at, n));
      at += n;
    } else {
      out += printable(std::string_view(bytes).substr(at, 1));
      ++at;
    }
  }
  return out;
}

GptTrainLessonResult run_gpt_train(GptTrainLessonOptions o) {
  GptTrainLessonResult result{LessonRun("train"), nullptr, {}, {}};
  LessonRun& run = result.run;
  result.tokenizer = o.tokenizer ? std::move(*o.tokenizer)
                                 : character_tokenizer(o.text, "the corpus " + o.corpus_name);
  const TextTokenizer& tokenizer = result.tokenizer;
  GptTrainConfig c = o.config;
  Corpus corpus = split_corpus(encode_text(tokenizer, o.text), c.block);
  const std::size_t vocab = tokenizer.bpe.size();
  const std::size_t start_step = o.resumed ? o.resumed->steps_done : 0;
  if (o.resumed) {
    if (o.resumed->model.config.sizes.vocab_size != vocab)
      throw Error(ErrorKind::bad_value, "run_gpt_train",
                  fmt::format("{} has a vocabulary of {} tokens but its tokenizer has {}",
                              o.resumed_name, o.resumed->model.config.sizes.vocab_size, vocab));
    result.training = std::make_unique<GptTraining>(
        c, std::move(corpus), std::move(o.resumed->model), std::move(o.resumed->optimizer),
        o.resumed->steps_done, std::move(o.resumed->history));
  } else {
    result.training = std::make_unique<GptTraining>(c, std::move(corpus), vocab);
  }
  GptTraining& training = *result.training;
  const Corpus& split = training.corpus();

  run.setting("model", "gpt");
  run.setting("corpus", o.corpus_name);
  run.setting("tokens", tokenizer.characters ? "characters" : o.tokenizer_name);
  run.setting("layers", std::to_string(c.layers));
  run.setting("D", std::to_string(c.d_model));
  run.setting("H", std::to_string(c.heads));
  run.setting("F", std::to_string(c.d_ff));
  run.setting("block", std::to_string(c.block));
  run.setting("batch", std::to_string(c.batch));
  run.setting("steps", std::to_string(c.steps));
  run.setting("lr", fmt::format("{:g}", c.lr));
  run.setting("seed", std::to_string(c.seed));
  if (o.resumed) run.setting("resumed", o.resumed_name);
  if (o.stop_after > 0) run.setting("stop_after", std::to_string(o.stop_after));

  run.section("gpt-intro");
  const std::size_t n = split.ids.size();
  Table text{"The text, its tokens and its split", {"", "value"}, {}};
  text.rows.push_back({"corpus", o.corpus_name});
  text.rows.push_back({"bytes", with_commas(o.text.size())});
  text.rows.push_back(
      {"tokens",
       tokenizer.characters
           ? fmt::format("{} characters, {} distinct", with_commas(n), tokenizer.characters_count)
           : fmt::format("{} BPE tokens of a vocabulary of {} ({:.2f} bytes per token)",
                         with_commas(n), with_commas(vocab),
                         static_cast<double>(o.text.size()) / static_cast<double>(n))});
  text.rows.push_back(
      {"training part",
       fmt::format("tokens 0 to {} ({:.0f}%)", with_commas(split.train_tokens - 1),
                   100.0 * static_cast<double>(split.train_tokens) / static_cast<double>(n))});
  text.rows.push_back(
      {"validation part",
       fmt::format("tokens {} to {}", with_commas(split.train_tokens), with_commas(n - 1))});
  run.table(std::move(text));
  const GptWindowCheck windows = training_windows(c, split);
  run.check("no training window reaches the validation part", windows.reach <= split.train_tokens,
            fmt::format("the {} windows of {} steps read tokens below {}; validation starts at {}",
                        with_commas(windows.drawn), with_commas(c.steps),
                        with_commas(windows.reach), with_commas(split.train_tokens)));

  run.section("gpt-model");
  const GptModel& model = training.model();
  run.parameters = static_cast<std::int64_t>(model.params.size());
  Table sizes{"The model: GPT-2's architecture at this size", {"", "value"}, {}};
  sizes.rows.push_back({"blocks", fmt::format("{} (pre-LN, causal self-attention with {} heads, "
                                              "MLP {} -> {} -> {} with GELU)",
                                              c.layers, c.heads, c.d_model, c.d_ff, c.d_model)});
  sizes.rows.push_back({"embeddings", fmt::format("wte ({}, {}), wpe ({}, {})", vocab, c.d_model,
                                                  c.block, c.d_model)});
  sizes.rows.push_back({"LM head", fmt::format("wte again (tied): {} numbers not stored twice",
                                               with_commas(vocab * c.d_model))});
  sizes.rows.push_back({"parameters", with_commas(model.params.size())});
  run.table(std::move(sizes));

  const auto clock = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - clock).count();
  };
  const std::vector<std::int64_t> prompt = sample_prompt(tokenizer);
  const auto sample = [&](std::size_t tokens) {
    return decoded_text(tokenizer, sample_gpt(training.model(), prompt, tokens, o.temperature,
                                              o.top_k, c.seed + training.steps_done()));
  };
  std::string first_sample;
  const auto evaluate = [&] {
    GptEvaluation e = training.evaluate();
    e.seconds = seconds();
    training.history().push_back(e);
    const std::string text = sample(std::min<std::size_t>(o.sample_tokens, 120));
    if (first_sample.empty()) first_sample = sample(o.sample_tokens);
    if (o.on_evaluation) o.on_evaluation(e, text);
  };
  if (training.history().empty() || training.history().back().step != training.steps_done())
    evaluate();
  const std::size_t last = o.stop_after > 0 ? std::min(o.stop_after, c.steps) : c.steps;
  while (training.steps_done() < last) {
    const float loss = training.step();
    result.losses.push_back(loss);
    if (o.on_step) o.on_step(training.steps_done(), loss);
    if (training.steps_done() % c.eval_interval == 0 || training.steps_done() == last) evaluate();
  }

  run.section("gpt-training");
  const std::vector<GptEvaluation>& history = training.history();
  const double initial = history.front().validation_loss;
  Table start{"The loss before training", {"", "value"}, {}};
  start.rows.push_back({fmt::format("validation loss at step {}", history.front().step),
                        fmt::format("{:.4f}", initial)});
  start.rows.push_back({fmt::format("ln V = ln {}: a uniform guess", vocab),
                        fmt::format("{:.4f}", std::log(static_cast<double>(vocab)))});
  run.table(std::move(start));
  if (!result.losses.empty())
    run.curve({fmt::format("Loss on each step's batch (steps {} to {})", start_step + 1, last),
               result.losses});
  Table table{"Every evaluation: the mean loss of the same windows of each part",
              {"step", "training loss", "validation loss"},
              {}};
  std::vector<double> steps, validation;
  for (const GptEvaluation& e : history) {
    table.rows.push_back({std::to_string(e.step), fmt::format("{:.4f}", e.train_loss),
                          fmt::format("{:.4f}", e.validation_loss)});
    steps.push_back(static_cast<double>(e.step));
    validation.push_back(e.validation_loss);
  }
  run.table(std::move(table));
  run.step("evaluation_steps", "the steps after which each evaluation ran",
           make_float64({steps.size()}, steps), false);
  run.step("validation_loss", "the validation loss (nats per token) at each evaluation",
           make_float64({validation.size()}, validation), false);
  const double final_loss = history.back().validation_loss;
  run.check("the validation loss fell", final_loss < initial,
            fmt::format("{:.4f} at step {}, {:.4f} at step {}", initial, history.front().step,
                        final_loss, history.back().step));

  run.section("gpt-samples");
  if (start_step == 0) {
    run.prose(fmt::format("Sampled before training (step 0, temperature {:g}):", o.temperature));
    run.prose(fenced(first_sample));
  }
  run.prose(fmt::format("Sampled after step {} (temperature {:g}):", training.steps_done(),
                        o.temperature));
  run.prose(fenced(sample(o.sample_tokens)));
  return result;
}

}  // namespace attn::lessons
