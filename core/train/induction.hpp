// `attn train --task induction`: a 2-layer attention-only GPT (fast/gpt_train.hpp) learning to
// continue a repeated sequence, where induction heads (Olsson et al. 2022) form in a sudden drop
// of the loss. Legend: V random tokens (ids 0..V-1) and the BOS token V, n the longest segment,
// m a sequence's segment length, T = 2n the tokens the model reads.
//
// A sequence is BOS, 2(n - m) random tokens, a segment of m random tokens (m drawn from
// min_period..n) and the segment again: 2n + 1 tokens, whose second m repeat the m before them
// (with m = n, the second half repeats the first). The model reads the first 2n and predicts
// the last 2n. Every token up to the end of the first copy is unpredictable (loss ln V at best);
// the second copy's tokens after its first are the token after the previous copy of the token
// before them, which an induction head finds. m varies so that no fixed offset finds the copy,
// and the random tokens before the segment spoil the shortcut of predicting the least recently
// seen token (which a segment repeated over and over allows).
//
// Held out means never trained on: held_out_tokens (tasks.hpp) puts about one sequence in eight
// on the held-out side; training redraws those, the held-out set draws only those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/random.hpp"
#include "fast/gpt_train.hpp"
#include "head_patterns.hpp"
#include "io/weights.hpp"
#include "train/gpt_run.hpp"

namespace attn {

struct InductionConfig {
  std::size_t vocab = 16;  // V random tokens (at most 52: a to z, A to Z); the BOS token is id V
  std::size_t half = 16;   // n: the longest segment; the model reads T = 2n tokens
  std::size_t min_period = 8;  // the shortest segment
  std::size_t layers = 2, heads = 4, d_model = 32;
  std::size_t batch = 32, steps = 4000;
  float lr = 1e-2f, weight_decay = 0.1f, beta2 = 0.99f, clip = 1.0f;
  std::size_t eval_interval = 250, eval_sequences = 128;
  std::uint64_t seed = 0;
};
// Throws attn::Error(bad_value) about the value at fault.
void check_induction_config(const InductionConfig& config);
// The GPT's config: V + 1 tokens, 2n positions, F = 4D (the MLPs stay zero).
Gpt2Config induction_model_config(const InductionConfig& config);

// One sequence of 2n + 1 ids and its segment length m.
struct InductionSequence {
  std::vector<std::int32_t> ids;
  std::size_t period = 0;  // m
  std::size_t noise = 0;   // the random tokens between BOS and the segment: 2(n - m)
};
// A sequence drawn from `rng` on one side of the split (redrawn until it is on that side).
InductionSequence draw_induction_sequence(const InductionConfig& config, Rng& rng,
                                          bool held_out = false);
// The held-out sequences every evaluation scores, the same for a seed.
std::vector<InductionSequence> held_out_sequences(const InductionConfig& config);
// Which predictions an induction head can make: position t (predicting id t + 1) when t reads the
// second copy (t > 2(n - m) + m); every other prediction is of a random token.
bool predicts_repeat(const InductionSequence& sequence, std::size_t position);

// The proof that the held-out set was never trained on: every sequence every training step drew
// (replayed from the seed), how many of them are on the held-out side, and how many equal one of
// the held-out sequences.
struct InductionReplay {
  std::size_t drawn = 0, on_held_out_side = 0, equal_to_held_out = 0;
};
InductionReplay replay_induction_training(const InductionConfig& config);

// What one measurement of a model on the held-out set gives: the loss on the first copy's
// predictions and on the repeats', and every head's induction and previous-token scores
// (head_patterns.hpp: induction_targets on the second copy's queries, where induction helps;
// previous_targets on every query; causal), [layer][head].
struct InductionMeasure {
  double first_loss = 0.0, repeat_loss = 0.0;
  std::vector<std::vector<HeadPatternScore>> induction, previous;
};
InductionMeasure measure_induction(const GptModel& model,
                                   const std::vector<InductionSequence>& sequences);

// Zero-ablation: the model with head `head` of block `layer` removed, its slice of attn.c_proj's
// input zeroed (Hugging Face's Conv1D rows h·hs..(h+1)·hs): it adds nothing to the stream.
GptModel ablate_head(GptModel model, std::size_t layer, std::size_t head);

// Elhage et al. 2021's composition of head `first` (layer 0) into head `second` (layer 1), with
// LayerNorm left out: ‖A B‖_F / (‖A‖_F ‖B‖_F) for K-composition A = W_QK of the second, B = W_OV
// of the first (the first's output read by the second's keys); Q: A = W_OV of the first
// transposed, B = W_QK; V: A = W_OV of the second, B = W_OV of the first.
struct Composition {
  double q = 0.0, k = 0.0, v = 0.0;
};
Composition composition(const GptModel& model, std::size_t first, std::size_t second);
// The same scores of matrices of the same shapes drawn from N(0, 1), averaged over `draws`.
Composition random_composition(std::size_t d_model, std::size_t head_size, std::size_t draws,
                               std::uint64_t seed);

struct InductionEvaluation {
  std::size_t step = 0;
  InductionMeasure measure;
  double seconds = 0.0;  // since the run began
};

// The run's record, kept in the checkpoint's model.safetensors metadata ("attn_induction"): the
// config and every evaluation (losses, and each head's two scores on target), so that a saved
// model shows the steps that made it. read_induction_record throws attn::Error(bad_file) about
// `source` when the metadata is missing or not attn's.
std::string induction_record(const InductionConfig& config,
                             const std::vector<InductionEvaluation>& history);
struct InductionRecord {
  InductionConfig config;
  std::vector<InductionEvaluation> history;
};
InductionRecord read_induction_record(const Metadata& metadata, std::string_view source);
// The tokens as characters: a, b, ..., z, A, ... for the V random tokens and "|" for BOS (id V), saved as
// GPT-2's vocab.json and merges.txt.
TextTokenizer induction_tokenizer(std::size_t vocab);
// The character of token id (0..51): a to z, then A to Z.
char token_letter(std::size_t id);
// A checkpoint folder's files (gpt_folder_files), the record in model.safetensors' metadata.
std::vector<NamedFile> induction_checkpoint_files(const GptModel& model,
                                                  const InductionConfig& config,
                                                  const std::vector<InductionEvaluation>& history);

class InductionTraining {
 public:
  explicit InductionTraining(const InductionConfig& config);
  // One step on a fresh batch: its loss (every prediction) before the update.
  float step();
  InductionEvaluation evaluate();
  std::size_t steps_done() const { return done_; }
  const InductionConfig& config() const { return config_; }
  const GptModel& model() const { return model_; }
  const std::vector<InductionSequence>& held_out() const { return held_out_; }

 private:
  InductionConfig config_;
  GptModel model_;
  GptOptimizer optimizer_;
  GptEngine engine_;
  std::vector<InductionSequence> held_out_;
  std::size_t done_ = 0;
  std::vector<std::int32_t> x_, y_;
};

}  // namespace attn
