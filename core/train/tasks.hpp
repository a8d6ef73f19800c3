// Toy tasks whose solutions are readable in the attention maps, for `attn train`. Each makes
// batches of token ids and one label per token from a seeded stream. Tokens are the letters
// a, b, c, ...; labels are tokens too, or counts, or "-" (no previous token).
//
// The masked task reads text: windows of T characters of English (data/tasks/masked-text.txt,
// lower-cased, every run of non-letters one space), 15% of the positions (at least one) replaced
// by the mask token "?"; each masked position's label is the character it hides, every other
// position's is kIgnoredLabel (scored by nothing). Its tokens are fixed: the letters a..z, the
// space "_" and the mask "?". The held-out set comes from the text's last paragraph, which no
// training window reads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/random.hpp"
#include "embedding.hpp"
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
  std::string_view pattern;      // what a head that solves it does
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

// Which part of the masked task's text a batch reads; the other tasks draw every sequence the
// same way, and their held-out sets come from a stream of their own.
enum class TaskSplit { train, held_out };

// `batch` sequences of uniformly drawn tokens (or windows of text) and their labels.
TaskBatch make_task_batch(Task task, const TaskSizes& sizes, std::size_t batch, Rng& rng,
                          TaskSplit split = TaskSplit::train);
// The masked task's text, normalised: the training part or the held-out paragraph.
const std::vector<std::int64_t>& task_text(TaskSplit split);
// The labels of one sequence of ids (T); for masked, kIgnoredLabel everywhere (what a "?" hides is
// not in the ids).
std::vector<std::int64_t> task_labels(Task task, const TaskSizes& sizes,
                                      const std::vector<std::int64_t>& ids);

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
