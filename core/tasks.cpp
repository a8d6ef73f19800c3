#include "tasks.hpp"

#include <algorithm>

#include "error.hpp"

namespace attn {

const std::vector<TaskInfo>& task_list() {
  static const std::vector<TaskInfo> tasks = {
      {Task::reverse, "reverse", "position i outputs the token at position T-1-i",
       "the anti-diagonal: query i looks at key T-1-i"},
      {Task::sort, "sort", "position i outputs the i-th smallest token",
       "each query looks at the tokens of its rank"},
      {Task::histogram, "histogram", "position i outputs how often its token occurs",
       "each query looks at every copy of its own token"},
      {Task::previous_token, "previous-token", "position i outputs the token at i-1 ('-' at 0)",
       "the diagonal just below the main one: query i looks at key i-1"},
  };
  return tasks;
}

std::optional<Task> task_named(std::string_view name) {
  for (const TaskInfo& info : task_list())
    if (info.name == name) return info.task;
  return std::nullopt;
}

const TaskInfo& task_info(Task task) {
  for (const TaskInfo& info : task_list())
    if (info.task == task) return info;
  throw Error("task_info", "unknown task");
}

std::size_t task_classes(Task task, const TaskSizes& sizes) {
  switch (task) {
    case Task::reverse:
    case Task::sort:
      return sizes.vocab;
    case Task::histogram:
      return sizes.tokens + 1;
    case Task::previous_token:
      return sizes.vocab + 1;
  }
  return 0;
}

std::vector<std::int64_t> task_labels(Task task, const TaskSizes& sizes,
                                      const std::vector<std::int64_t>& ids) {
  const std::size_t t = ids.size();
  std::vector<std::int64_t> labels(t);
  switch (task) {
    case Task::reverse:
      for (std::size_t i = 0; i < t; ++i)
        labels[i] = ids[t - 1 - i];
      break;
    case Task::sort:
      labels = ids;
      std::sort(labels.begin(), labels.end());
      break;
    case Task::histogram:
      for (std::size_t i = 0; i < t; ++i)
        labels[i] = std::count(ids.begin(), ids.end(), ids[i]);
      break;
    case Task::previous_token:
      labels[0] = static_cast<std::int64_t>(sizes.vocab);  // "-"
      for (std::size_t i = 1; i < t; ++i)
        labels[i] = ids[i - 1];
      break;
  }
  return labels;
}

TaskBatch make_task_batch(Task task, const TaskSizes& sizes, std::size_t batch, Rng& rng) {
  TaskBatch b{Ids({batch, sizes.tokens}), Ids({batch, sizes.tokens})};
  std::vector<std::int64_t> ids(sizes.tokens);
  for (std::size_t s = 0; s < batch; ++s) {
    for (std::int64_t& id : ids)
      id = static_cast<std::int64_t>(rng.uniform() * static_cast<double>(sizes.vocab)) %
           static_cast<std::int64_t>(sizes.vocab);
    const std::vector<std::int64_t> labels = task_labels(task, sizes, ids);
    for (std::size_t i = 0; i < sizes.tokens; ++i)
      b.ids(s, i) = ids[i], b.labels(s, i) = labels[i];
  }
  return b;
}

std::string token_text(std::int64_t id) {
  if (id >= 0 && id < 26) return std::string(1, static_cast<char>('a' + id));
  return fmt::format("<{}>", id);
}

std::string label_text(Task task, const TaskSizes& sizes, std::int64_t label) {
  if (task == Task::histogram) return std::to_string(label);
  if (task == Task::previous_token && label == static_cast<std::int64_t>(sizes.vocab)) return "-";
  return token_text(label);
}

std::vector<std::int64_t> parse_task_text(std::string_view text, const TaskSizes& sizes) {
  std::vector<std::int64_t> ids;
  for (char c : text) {
    if (c == ' ') continue;
    const int id = c - 'a';
    if (id < 0 || static_cast<std::size_t>(id) >= sizes.vocab) {
      const auto byte = static_cast<unsigned char>(c);
      const std::string shown = byte >= 0x20 && byte < 0x7f ? fmt::format("'{}'", c)
                                                            : fmt::format("the byte {:#04x}", byte);
      throw Error(
          ErrorKind::bad_value, "task_text",
          fmt::format("{} is not one of the task's {} tokens: use the letters a to {}", shown,
                      sizes.vocab, token_text(static_cast<std::int64_t>(sizes.vocab) - 1)))
          .about("text");
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace attn
