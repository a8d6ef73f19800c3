// Sequence-to-sequence tasks for seed 001's encoder-decoder (core/transformer.hpp), and its
// decoding; train/trainer.hpp trains it. Every target sequence is framed as the decoder sees it:
// the input is <s> y1 .. yn and the labels are y1 .. yn </s> (teacher forcing: one forward pass
// trains all n + 1 next-token predictions at once, the causal mask hiding each position's future).
//
//   reverse       source: 1 to 8 letters of a..h; target: the same letters backwards
//   sort          source: 1 to 8 letters of a..h; target: the letters in alphabetical order
//   number-words  source: a number 0 to 9999 as digits; target: its English words
//                 ("305" -> three hundred five); the two vocabularies differ
//
// Ids: in both vocabularies 0 is <pad>; in the target's, 1 is <s> and 2 is </s>. Held-out sets:
// reverse and sort draw from a stream of their own; number-words holds out a tenth of the
// numbers (those with ((n * 2654435761) >> 8) % 10 == 3), which training never sees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "head_patterns.hpp"
#include "transformer.hpp"

namespace attn {

enum class Seq2SeqTask { reverse, sort, number_words };

inline constexpr std::int64_t kPadId = 0, kStartId = 1, kEndId = 2;

struct Seq2SeqTaskInfo {
  Seq2SeqTask task;
  std::string_view name;         // "reverse"
  std::string_view description;  // what the target is
  std::string_view pattern;      // what a cross-attention that solves it would read
  std::string_view keys;         // the keys cross_targets names, for a table's column
  HeadsClaim claim;              // what the shipped checkpoint's last layer shows, measured
};
const std::vector<Seq2SeqTaskInfo>& seq2seq_task_list();
std::optional<Seq2SeqTask> seq2seq_task_named(std::string_view name);
const Seq2SeqTaskInfo& seq2seq_task_info(Seq2SeqTask task);

// The tokens of each vocabulary, by id ("<pad>", "a", ... ; "<pad>", "<s>", "</s>", "three", ...).
const std::vector<std::string>& source_tokens(Seq2SeqTask task);
const std::vector<std::string>& target_tokens(Seq2SeqTask task);
// The longest source and target (without <s> and </s>) the task makes.
std::size_t max_source_length(Seq2SeqTask task);
std::size_t max_target_length(Seq2SeqTask task);

struct Seq2SeqExample {
  std::vector<std::int64_t> source;  // source ids, no padding
  std::vector<std::int64_t> target;  // target ids without <s> and </s>
};

// The right answer for a source (ids); throws Error(bad_value) when it has none (no tokens).
std::vector<std::int64_t> seq2seq_answer(Seq2SeqTask task, const std::vector<std::int64_t>& source);
// Text as source ids ("dcab", "305"); throws Error(bad_value) naming the character and the
// task's alphabet, or the length past the task's longest.
std::vector<std::int64_t> parse_source(Seq2SeqTask task, std::string_view text);
// Ids as text: letters run together ("abcd"), words with spaces ("three hundred five").
std::string source_text(Seq2SeqTask task, const std::vector<std::int64_t>& ids);
std::string target_text(Seq2SeqTask task, const std::vector<std::int64_t>& ids);
// A decoder position as one label: the target token it reads and the one it is to write,
// "<s>→h" (lessons 11, 12 and 14 label cross-attention's rows this way).
std::string read_and_written(Seq2SeqTask task, std::int64_t read, std::int64_t written);
// A task's default example source, as text.
std::string seq2seq_example(Seq2SeqTask task);

enum class Seq2SeqSplit { train, held_out };
// The source keys the decoder's query t reads when it writes the answer's token t (the query
// reads token t-1, or <s>): reverse the mirrored letter S-1-t, sort every copy of the letter it
// writes; number-words names none. Queries writing </s> or padding have no target.
SequenceTargets cross_targets(Seq2SeqTask task, const std::vector<std::int64_t>& source,
                              const std::vector<std::int64_t>& target, std::size_t queries);
Seq2SeqExample make_example(Seq2SeqTask task, Rng& rng, Seq2SeqSplit split);

// A batch padded to its longest source and target: the decoder's input <s> y (B,T), the labels
// y </s> (B,T) with kIgnoredLabel on padding, and the masks as the seed's model takes them.
struct Seq2SeqBatch {
  Ids source, target_input, labels;
  Array source_mask;  // (B,1,1,S)
  Array target_mask;  // (B,1,T,T)
};
Seq2SeqBatch make_batch(const std::vector<Seq2SeqExample>& examples);

// Sampling choices for decoding: greedy when `sample` is false; else drawn from a seeded stream
// out of sampling_distribution's. <pad> and <s> are never picked.
struct DecodeOptions {
  bool sample = false;
  float temperature = 1.0f;
  std::size_t top_k = 0;
  float top_p = 1.0f;
  std::uint64_t seed = 0;
  bool cache = true;
  std::size_t max_tokens = 0;  // 0: the target's positions
};
// Throws Error(bad_value) for temperature <= 0, top_p outside (0, 1] (top_k is a count: 0 or more).
void check_decode_options(const DecodeOptions& options);

// What a sampled token is drawn from, in Hugging Face's order (TemperatureLogitsWarper,
// TopKLogitsWarper, TopPLogitsWarper): scores / temperature; only scores at least the k-th largest
// (top_k, 0: all; ties with the k-th stay); softmax; then the smallest set of the most likely
// tokens whose probability is at least top_p (1: all; the most likely always stays), renormalised.
// A score of -inf (a masked token) gets 0. (V) -> (V)
std::vector<float> sampling_distribution(const std::vector<float>& scores,
                                         const DecodeOptions& options);

// One token drawn from `probabilities` (V) with one uniform number of `rng`: the first whose
// cumulative probability passes it, never one of probability 0.
std::int64_t draw_token(const std::vector<float>& probabilities, Rng& rng);

struct DecodeStep {
  std::vector<float> log_probs;      // (V) the model's, before temperature
  std::vector<float> probabilities;  // (V) what the pick was drawn from (specials masked, filters)
  std::int64_t pick = 0;
  std::uint64_t multiply_adds = 0;  // the decoder's and projection's, for this step
};
struct Decoded {
  std::vector<std::int64_t> tokens;  // without <s>, with </s> when it came
  std::vector<DecodeStep> steps;
  Tensor3 memory;  // (1,S,D) the encoder's output
};
// Decodes one source (ids) from <s> until </s> or max_tokens.
Decoded decode(const Transformer& model, const std::vector<std::int64_t>& source,
               const DecodeOptions& options);

struct Seq2SeqEvaluation {
  double exact_match = 0.0;     // held-out sources whose greedy decoding is the answer
  double token_accuracy = 0.0;  // teacher-forced next-token accuracy on the held-out set
  std::size_t examples = 0;
};
// The held-out sequences evaluate() runs forward at once.
inline constexpr std::size_t kEvaluationBatch = 500;
Seq2SeqEvaluation evaluate(const Transformer& model, Seq2SeqTask task,
                           const std::vector<Seq2SeqExample>& examples);

}  // namespace attn
