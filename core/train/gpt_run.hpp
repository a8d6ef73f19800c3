// `attn train --model gpt`: a GPT (GPT-2's architecture, fast/gpt_train.hpp) trained on a text to
// predict its next token, as nanoGPT trains one. The text becomes token ids (one per character by
// default, or a GPT-2 style BPE's); its first 90% is the training part and the rest the validation
// part, and every window a step trains on lies inside the training part (draw_window), so that the
// validation loss is measured on text the model never saw. Each step draws B windows of T + 1
// tokens, trains on predicting tokens 1..T from 0..T-1, and takes one AdamW step (nanoGPT's:
// clipped, decayed matrices) at a learning rate warmed up then decayed along a cosine
// (warmup_cosine). Every `eval_interval` steps the mean loss of the same fixed windows of each
// part is measured. Everything is seeded: the batch of step s comes from (seed, s) alone, so that
// a run resumed from a checkpoint draws what the whole run would have drawn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/budget.hpp"
#include "fast/gpt_train.hpp"
#include "io/bpe.hpp"
#include "io/weights.hpp"

namespace attn {

// A text's tokens: a character vocabulary (every distinct character of the text, by code point)
// or a BPE read from a folder, always as a BpeTokenizer so that it is saved, and read back by
// --pretrained, as GPT-2's files. In a character vocabulary each character is one token; a
// character of several UTF-8 bytes is built by merges of its bytes, whose partial results are
// tokens too (after the characters, never in the text's ids).
struct TextTokenizer {
  BpeTokenizer bpe;
  std::string vocab_json, merges_txt;  // the files, as saved
  bool characters = false;
  std::size_t characters_count = 0;  // characters: the distinct characters (the first ids)
};
// The character vocabulary of `text` (valid UTF-8, not empty). Throws attn::Error(bad_value)
// otherwise, about `source`.
TextTokenizer character_tokenizer(std::string_view text, std::string_view source);
// A folder's vocab.json and merges.txt (read_bpe).
TextTokenizer folder_tokenizer(const std::string& folder);
// A checkpoint folder's vocab.json and merges.txt as saved; `characters`: a character vocabulary
// (its first tokens are each one whole character).
TextTokenizer saved_tokenizer(const std::string& folder, bool characters);
// The text's ids: by character (the fast path, equal to encode()'s) or by the BPE.
std::vector<std::int32_t> encode_text(const TextTokenizer& tokenizer, std::string_view text);

struct Corpus {
  std::vector<std::int32_t> ids;
  std::size_t train_tokens = 0;  // ids [0, train_tokens) train; [train_tokens, size) validate
};
// The split: the first `train_fraction` of the ids, and the rest. Throws attn::Error(bad_size)
// when either part is too short for one window of `block` + 1 tokens.
Corpus split_corpus(std::vector<std::int32_t> ids, std::size_t block, double train_fraction = 0.9);
enum class CorpusPart { train, validation };
// The first token of a window of block + 1 tokens drawn from `part`: uniform over the starts whose
// window lies wholly inside the part.
std::size_t draw_window(const Corpus& corpus, CorpusPart part, std::size_t block, Rng& rng);

struct GptTrainConfig;
// The proof that validation means never trained on: every window of every step of a run
// (steps_done to steps), replayed as GptTraining::step draws them, and the furthest token any
// of them reads.
struct GptWindowCheck {
  std::size_t drawn = 0;  // windows drawn
  std::size_t reach = 0;  // one past the last token any of them reads
};
GptWindowCheck training_windows(const GptTrainConfig& config, const Corpus& corpus);

struct GptTrainConfig {
  std::size_t layers = 4, heads = 4, d_model = 128, d_ff = 512;  // nanoGPT's CPU configuration
  std::size_t block = 64, batch = 12, steps = 2000;
  float lr = 2e-3f;  // peak, decayed to a tenth (nanoGPT: 1e-3; 2e-3 learns faster in a minute)
  float weight_decay = 0.1f, beta2 = 0.99f, clip = 1.0f;
  std::size_t eval_interval = 100, eval_batches = 20;
  std::uint64_t seed = 0;
  bool attention_only = false;  // --attention-only: no MLPs (GptModel::attention_only)
};
// Throws attn::Error(bad_value) about the value at fault: a size of 0, heads not dividing the
// width, a learning rate that is not a positive number.
void check_gpt_train_config(const GptTrainConfig& config);
// The model's config for a vocabulary of `vocab` tokens (positions = block).
Gpt2Config gpt_model_config(const GptTrainConfig& config, std::size_t vocab);
// What a run holds beside the corpus: the engine at (batch, block), a second at (1, block) for
// nothing but sampling's packed copy, the saved state.
MemoryPlan plan_gpt_run(const GptTrainConfig& config, std::size_t vocab);

// One evaluation: after `step` steps, the mean loss of the fixed windows of each part.
struct GptEvaluation {
  std::size_t step = 0;
  double train_loss = 0.0, validation_loss = 0.0;
  double seconds = 0.0;  // since the run (or the resumed run) began: not saved
};

// A run, from its first step or from a saved state.
class GptTraining {
 public:
  GptTraining(const GptTrainConfig& config, Corpus corpus, std::size_t vocab);
  // Resumed: the model, AdamW's state and the evaluations so far; `steps_done` steps were taken.
  GptTraining(const GptTrainConfig& config, Corpus corpus, GptModel model, GptOptimizer optimizer,
              std::size_t steps_done, std::vector<GptEvaluation> history);
  // One step: returns the batch's loss before the update.
  float step();
  GptEvaluation evaluate();
  std::size_t steps_done() const { return done_; }
  const GptTrainConfig& config() const { return config_; }
  const GptModel& model() const { return model_; }
  const GptOptimizer& optimizer() const { return optimizer_; }
  const Corpus& corpus() const { return corpus_; }
  std::vector<GptEvaluation>& history() { return history_; }
  const std::vector<GptEvaluation>& history() const { return history_; }

 private:
  double mean_loss(const std::vector<std::size_t>& starts);
  GptTrainConfig config_;
  Corpus corpus_;
  GptModel model_;
  GptOptimizer optimizer_;
  GptEngine engine_;
  std::size_t done_ = 0;
  std::vector<GptEvaluation> history_;
  std::vector<std::size_t> train_windows_, validation_windows_;  // the evaluations' fixed windows
  std::vector<std::int32_t> x_, y_;
};

// `tokens` tokens sampled from the model after `prompt` (ids): softmax(logits / temperature) over
// the top_k most likely (0: all), drawn from a stream seeded by `seed`. Through the key/value
// cache of fast/gpt2_fast.hpp; stops at the model's positions.
std::vector<std::int64_t> sample_gpt(const GptModel& model, const std::vector<std::int64_t>& prompt,
                                     std::size_t tokens, float temperature, std::size_t top_k,
                                     std::uint64_t seed);

// A checkpoint folder's files, as Hugging Face's save_pretrained writes GPT2LMHeadModel and
// GPT2Tokenizer: config.json, model.safetensors (marked as attn's), vocab.json, merges.txt,
// tokenizer_config.json; and attn's own training_state.safetensors (AdamW's moments, and in its
// metadata the run's config, steps and evaluations) for --resume.
struct NamedFile {
  std::string name;
  std::vector<unsigned char> bytes;
};
std::vector<NamedFile> gpt_checkpoint_files(const GptTraining& run, const TextTokenizer& tokenizer);
// The files of it that Hugging Face reads (all but the training state), for any trained GptModel.
// `metadata` goes into model.safetensors beside {"written_by": "attn"}.
std::vector<NamedFile> gpt_folder_files(const GptModel& model, const TextTokenizer& tokenizer,
                                        const Metadata& metadata = {});
// The names a checkpoint folder holds, for telling attn's folders from others.
const std::vector<std::string>& gpt_checkpoint_names();

// What --resume reads back: the training state's config (sizes), the optimiser and the history.
struct GptResumed {
  GptTrainConfig config;
  GptModel model;
  GptOptimizer optimizer;
  std::size_t steps_done = 0;
  std::vector<GptEvaluation> history;
  bool characters = false;
};
// From the folder's model (load by the caller through check_gpt2_weights) and its
// training_state.safetensors read whole. Throws attn::Error(bad_file) about `source`.
GptResumed read_gpt_training_state(const Gpt2Config& config, Gpt2Weights&& weights,
                                   const StateDict& state, const Metadata& metadata,
                                   std::string_view source);

}  // namespace attn
