// `attn train --task induction`: a 2-layer attention-only GPT (fast/gpt_train.hpp) learning to
// continue a repeated segment, where induction heads (Olsson et al. 2022) form in a sudden drop
// of the loss. Legend: V random tokens (ids 0..V-1) and the BOS token V, T the tokens the model
// reads, m a sequence's segment length, s where its segment starts.
//
// A sequence is BOS and T random tokens, except that a segment of m of them (m from min_period
// to max_period, s anywhere it fits) is followed at once by its copy: ids[t] = ids[t - m] for
// s + m <= t < s + 2m. The model reads the first T and predicts the last T. A token of the copy
// after its first is the token after the previous occurrence of the token before it, which an
// induction head finds; m and s vary, so that no head finds the copy by position, and tokens
// before and after the pair keep a window of recent tokens from narrowing the guess (a segment
// at the end of every sequence lets a layer-0 head average the window m back, and a layer-1 head
// strike out what the copy already repeated: a shortcut that never needs an induction head).
//
// The rule: outside the segment and its copy, each token from the third on follows, with
// probability p, the token two before it through a fixed permutation (induction_rule): the token
// after the next is predictable from the previous token, which only a head attending to the
// previous token can read. p starts at `rule` and falls linearly to 0 at step `rule_steps`, so
// the model first grows previous-token heads for the rule, and the induction head then forms by
// reading them; the held-out set and every measurement have no rule (p = 0). Without the rule the
// plateau outlasts a minute of training; with it at a constant p, the layer-1 heads learn to read
// a two-back head and the previous-token heads' output instead (the key two after the earlier
// copy, not one): data/induction_sweep.py reproduces both in PyTorch.
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
  std::size_t vocab = 52;   // V random tokens (at most 52: a to z, A to Z); the BOS token is id V
  std::size_t tokens = 48;  // T: the tokens the model reads (and its positions)
  std::size_t min_period = 6, max_period = 16;  // the segment's shortest and longest lengths
  // The rule's probability: `rule` at step 0, falling linearly to rule_floor at rule_steps.
  float rule = 0.5f, rule_floor = 0.0f;
  std::size_t rule_steps = 1000;
  std::size_t layers = 2, heads = 2, d_model = 64;
  std::size_t batch = 32, steps = 3000;
  float lr = 6e-3f, weight_decay = 0.1f, beta2 = 0.99f, clip = 1.0f;
  std::size_t eval_interval = 250, eval_sequences = 128;
  std::uint64_t seed = 0;
};
// Throws attn::Error(bad_value) about the value at fault.
void check_induction_config(const InductionConfig& config);
// The GPT's config: V + 1 tokens, T positions, F = 4D (the MLPs stay zero).
Gpt2Config induction_model_config(const InductionConfig& config);

// One sequence of T + 1 ids, its segment length m and where the segment starts.
struct InductionSequence {
  std::vector<std::int32_t> ids;
  std::size_t period = 0;  // m
  std::size_t start = 0;   // s: the segment is ids[s, s + m), its copy ids[s + m, s + 2m)
};
// The rule's permutation of the V tokens, the same for every run: outside the segment and its
// copy, ids[t] = rule[ids[t - 2]] with the rule's probability.
std::vector<std::int32_t> induction_rule(std::size_t vocab);
// The rule's probability at training step `step` (rule_floor from rule_steps on).
double rule_probability(const InductionConfig& config, std::size_t step);
// A sequence drawn from `rng` on one side of the split (redrawn until it is on that side), its
// tokens outside the pair following the rule with probability `rule`.
InductionSequence draw_induction_sequence(const InductionConfig& config, Rng& rng, double rule,
                                          bool held_out = false);
// The held-out sequences every evaluation scores, the same for a seed, without the rule.
std::vector<InductionSequence> held_out_sequences(const InductionConfig& config);
// Which predictions an induction head can make: position t (predicting id t + 1) when t and t + 1
// are in the copy (s + m <= t and t + 1 < s + 2m); every other prediction is of a random token
// (or, in training while the rule lasts, of the rule's).
bool predicts_repeat(const InductionSequence& sequence, std::size_t position);

// The proof that the held-out set was never trained on: every sequence every training step drew
// (replayed from the seed), how many of them are on the held-out side, and how many equal one of
// the held-out sequences.
struct InductionReplay {
  std::size_t drawn = 0, on_held_out_side = 0, equal_to_held_out = 0;
};
InductionReplay replay_induction_training(const InductionConfig& config);

// What one measurement of a model on the held-out set gives: the loss on the random tokens'
// predictions (first_loss) and on the copy's (repeat_loss, predicts_repeat), and every head's
// induction and previous-token scores (head_patterns.hpp: induction_targets on the copy's
// queries, where induction helps; previous_targets on every query; causal), [layer][head].
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
