#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "lesson.hpp"
#include "train/gpt_run.hpp"

namespace attn::lessons {

struct GptTrainLessonOptions {
  GptTrainConfig config;
  std::string corpus_name;                 // as shown: "moby-dick.txt (shipped)" or the user's path
  std::string text;                        // the corpus's bytes
  std::optional<TextTokenizer> tokenizer;  // --tokenizer (or a resumed folder's); else characters
  std::string tokenizer_name;
  std::optional<GptResumed> resumed;  // --resume
  std::string resumed_name;
  std::size_t stop_after = 0;       // stop after this step (0: at config.steps), to resume later
  std::size_t sample_tokens = 300;  // each shown sample's length
  float temperature = 0.8f;         // nanoGPT's sample.py
  std::size_t top_k = 0;
  // Every step's loss, and every evaluation with a short sample (the CLI's live lines).
  std::function<void(std::size_t step, float loss)> on_step;
  std::function<void(const GptEvaluation&, const std::string& sample)> on_evaluation;
};

struct GptTrainLessonResult {
  LessonRun run;
  std::unique_ptr<GptTraining> training;
  TextTokenizer tokenizer;
  std::vector<double> losses;  // every step's batch loss, for --export
};

// `attn train --model gpt`: the text and its split, the model, the loss at initialisation against
// ln V, every evaluation's training and validation loss, the proof that no training window
// reaches the validation part, and samples from the model before and after training.
GptTrainLessonResult run_gpt_train(GptTrainLessonOptions options);

// The text of ids, as the tokenizer decodes them (bytes that do not make UTF-8 escaped).
std::string decoded_text(const TextTokenizer& tokenizer, const std::vector<std::int64_t>& ids);

}  // namespace attn::lessons
