// Toy tasks whose solutions are readable in the attention maps, for `attn train`. Each makes
// batches of token ids and one label per token from a seeded stream. Tokens are the letters
// a, b, c, ...; labels are tokens too, or counts, or "-" (no previous token).
//
// The masked task reads text: windows of T characters of English (data/tasks/masked-text.txt,
// lower-cased, every run of non-letters one space), 15% of the positions (at least one) replaced
// by the mask token "?"; each masked position's label is the character it hides, every other
// position's is kIgnoredLabel (scored by nothing). Its tokens are fixed: the letters a..z, the
// space "_" and the mask "?".
//
// Held out means never trained on. The letter tasks split sequences by a hash of their tokens
// (held_out_tokens): training redraws every sequence on the held-out side, the held-out set
// every sequence on the other. The masked task's held-out windows come from the text's last
// paragraph, and training redraws any window whose characters equal one of them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/random.hpp"
#include "embedding.hpp"
#include "head_patterns.hpp"
#include "loss.hpp"

namespace attn {

enum class Task { reverse, sort, histogram, previous_token, masked, previous_minus_mirror };

// The masked task's tokens: a..z are 0..25, the space 26, the mask 27.
inline constexpr std::int64_t kTextSpace = 26, kTextMask = 27;
inline constexpr std::size_t kTextTokens = 28;

struct TaskInfo {
  Task task;
  std::string_view name;         // "reverse"
  std::string_view description;  // one line: what position i outputs
  std::string_view pattern;      // what a head that solves it by attention would do
  std::string_view keys;         // the keys task_targets names, for a table's column
  HeadsClaim claim;              // what the shipped checkpoint's heads show
};

// Every task, in the order the help lists them.
const std::vector<TaskInfo>& task_list();
std::optional<Task> task_named(std::string_view name);
const TaskInfo& task_info(Task task);

struct TaskSizes {
  std::size_t vocab = 8;   // V: tokens a.. (V letters)
  std::size_t tokens = 8;  // T: tokens per sequence
};

// The labels' classes: V for reverse, sort and previous-minus-mirror, T + 1 for histogram (counts 0..T), V + 1 for
// previous-token (the last class is "-", position 0's label), 27 for masked (a..z and the space).
std::size_t task_classes(Task task, const TaskSizes& sizes);
// The tokens the model embeds: V, or kTextTokens for masked.
std::size_t task_vocabulary(Task task, const TaskSizes& sizes);

struct TaskBatch {
  Ids ids;     // (B,T) in 0..V-1
  Ids labels;  // (B,T) in 0..classes-1
};

// Which side of the split a batch is drawn from.
enum class TaskSplit { train, held_out };

// Whether a sequence is on the held-out side: a hash of its tokens (FNV-1a) puts about one
// sequence in eight there, the same in every run. The encoder-decoder's letter tasks split their
// sources by it too.
bool held_out_tokens(const std::vector<std::int64_t>& ids);
// Throws attn::Error(bad_size) about "tokens" when V^T sequences are too few for both sides of
// the split to hold one.
void check_task_split(Task task, const TaskSizes& sizes);

// `batch` sequences of uniformly drawn tokens (or windows of text) and their labels.
TaskBatch make_task_batch(Task task, const TaskSizes& sizes, std::size_t batch, Rng& rng,
                          TaskSplit split = TaskSplit::train);
// The masked task's text, normalised: the training part or the held-out paragraph.
const std::vector<std::int64_t>& task_text(TaskSplit split);
// The labels of one sequence of ids (T); for masked, kIgnoredLabel everywhere (what a "?" hides is
// not in the ids).
std::vector<std::int64_t> task_labels(Task task, const TaskSizes& sizes,
                                      const std::vector<std::int64_t>& ids);

// The keys a head that solves the task by attention would read, for each query of `ids`
// (head_patterns.hpp): reverse the mirrored key, sort every key holding the token of the query's
// rank, histogram every copy of the query's own token, previous-token the key before, masked the
// letters on either side of each "?" (other queries have no target), previous-minus-mirror both
// key i-1 and key T-1-i.
SequenceTargets task_targets(Task task, const std::vector<std::int64_t>& ids);

// A task's default example of T tokens, as text parse_task_text reads.
std::string task_example(Task task, const TaskSizes& sizes);

// Token id as text: "a", "b", ..., "_" for the space and "?" for the mask; a label as text: a
// token, a count, "-", or "" for kIgnoredLabel.
std::string token_text(std::int64_t id);
std::string label_text(Task task, const TaskSizes& sizes, std::int64_t label);
// Text to ids ("dcab" -> 3 2 0 1). Spaces separate nothing in the letter tasks; in masked they
// are tokens (so is "_"), and "?" is the mask. Throws attn::Error naming a character outside the
// task's tokens.
std::vector<std::int64_t> parse_task_text(Task task, std::string_view text, const TaskSizes& sizes);

}  // namespace attn
