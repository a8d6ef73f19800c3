// Toy tasks whose solutions are readable in the attention maps, for `attn train`. Each makes
// batches of token ids and one label per token from a seeded stream. Tokens are the letters
// a, b, c, ...; labels are tokens too, or counts, or "-" (no previous token).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "embedding.hpp"
#include "random.hpp"

namespace attn {

enum class Task { reverse, sort, histogram, previous_token };

struct TaskInfo {
  Task task;
  std::string_view name;         // "reverse"
  std::string_view description;  // one line: what position i outputs
  std::string_view pattern;      // what a head that solves it attends to
};

// Every task, in the order `attn train --help` lists them.
const std::vector<TaskInfo>& task_list();
std::optional<Task> task_named(std::string_view name);
const TaskInfo& task_info(Task task);

struct TaskSizes {
  std::size_t vocab = 8;   // V: tokens a.. (V letters)
  std::size_t tokens = 8;  // T: tokens per sequence
};

// The labels' classes: V for reverse and sort, T + 1 for histogram (counts 0..T), V + 1 for
// previous-token (the last class is "-", position 0's label).
std::size_t task_classes(Task task, const TaskSizes& sizes);

struct TaskBatch {
  Ids ids;     // (B,T) in 0..V-1
  Ids labels;  // (B,T) in 0..classes-1
};

// `batch` sequences of uniformly drawn tokens and their labels.
TaskBatch make_task_batch(Task task, const TaskSizes& sizes, std::size_t batch, Rng& rng);
// The labels of one sequence of ids (T).
std::vector<std::int64_t> task_labels(Task task, const TaskSizes& sizes,
                                      const std::vector<std::int64_t>& ids);

// Token id as text: "a", "b", ...; a label as text: a token, a count, or "-".
std::string token_text(std::int64_t id);
std::string label_text(Task task, const TaskSizes& sizes, std::int64_t label);
// Letters to ids ("dcab" -> 3 2 0 1); throws attn::Error naming a character outside the V letters.
std::vector<std::int64_t> parse_task_text(std::string_view text, const TaskSizes& sizes);

}  // namespace attn
