#include "train/tasks.hpp"

#include <algorithm>
#include <array>

#include "base/error.hpp"
#include "base/names.hpp"
#include "io/shipped.hpp"

namespace attn {

const std::vector<TaskInfo>& task_list() {
  static const std::vector<TaskInfo> tasks = {
      {Task::reverse, "reverse", "position i outputs the token at position T-1-i",
       "the anti-diagonal, query i looking at key T-1-i"},
      {Task::sort, "sort", "position i outputs the i-th smallest token",
       "each query looking at the tokens of its rank"},
      {Task::histogram, "histogram", "position i outputs how often its token occurs",
       "each query looking at every copy of its own token"},
      {Task::previous_token, "previous-token", "position i outputs the token at i-1 ('-' at 0)",
       "the diagonal just below the main one, query i looking at key i-1"},
      {Task::masked, "masked",
       "each '?' in a window of English text outputs the character it hides",
       "each '?' looking at the letters beside it, which spell its word"},
      {Task::previous_minus_mirror, "previous-minus-mirror",
       "position i outputs (x[i-1] - x[T-1-i]) mod V, x[-1] counting as a",
       "two relations at once: key i-1 and key T-1-i, one head each"},
  };
  return tasks;
}

std::optional<Task> task_named(std::string_view name) {
  const TaskInfo* info = named_entry(task_list(), name);
  return info != nullptr ? std::optional(info->task) : std::nullopt;
}

const TaskInfo& task_info(Task task) {
  for (const TaskInfo& info : task_list())
    if (info.task == task) return info;
  throw Error(ErrorKind::bad_value, "task_info", "unknown task");
}

std::size_t task_classes(Task task, const TaskSizes& sizes) {
  switch (task) {
    case Task::reverse:
    case Task::sort:
    case Task::previous_minus_mirror:
      return sizes.vocab;
    case Task::histogram:
      return sizes.tokens + 1;
    case Task::previous_token:
      return sizes.vocab + 1;
    case Task::masked:
      return kTextTokens - 1;  // the letters and the space: a mask is never a label
  }
  return 0;
}

std::size_t task_vocabulary(Task task, const TaskSizes& sizes) {
  return task == Task::masked ? kTextTokens : sizes.vocab;
}

const std::vector<std::int64_t>& task_text(TaskSplit split) {
  // Normalised once: letters lower-cased, every run of anything else one space.
  static const auto parts = [] {
    const std::string_view raw = shipped_file("tasks/masked-text.txt");
    const std::size_t last =
        raw.rfind("\n\n");  // the held-out paragraph follows the last blank line
    const auto normalise = [](std::string_view text) {
      std::vector<std::int64_t> ids;
      for (char c : text) {
        const char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
        if (lower >= 'a' && lower <= 'z')
          ids.push_back(lower - 'a');
        else if (!ids.empty() && ids.back() != kTextSpace)
          ids.push_back(kTextSpace);
      }
      if (!ids.empty() && ids.back() == kTextSpace) ids.pop_back();
      return ids;
    };
    if (last == std::string_view::npos)
      throw Error(ErrorKind::internal, "task_text", "the masked task's text has one paragraph");
    return std::array<std::vector<std::int64_t>, 2>{normalise(raw.substr(0, last)),
                                                    normalise(raw.substr(last))};
  }();
  return parts[split == TaskSplit::train ? 0 : 1];
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
    case Task::masked:
      std::fill(labels.begin(), labels.end(), kIgnoredLabel);
      break;
    case Task::previous_minus_mirror: {
      const auto v = static_cast<std::int64_t>(sizes.vocab);
      for (std::size_t i = 0; i < t; ++i)
        labels[i] = ((i > 0 ? ids[i - 1] : 0) + v - ids[t - 1 - i]) % v;
      break;
    }
  }
  return labels;
}

namespace {
constexpr double kMaskedFraction = 0.15;  // BERT's

std::size_t below(Rng& rng, std::size_t n) {
  return static_cast<std::size_t>(rng.uniform() * static_cast<double>(n)) % n;
}

// Windows of the text at uniform offsets, 15% of each window's positions masked (at least one).
TaskBatch masked_batch(const TaskSizes& sizes, std::size_t batch, Rng& rng, TaskSplit split) {
  const std::vector<std::int64_t>& text = task_text(split);
  const std::size_t t = sizes.tokens;
  if (text.size() < t) {
    throw Error(ErrorKind::bad_size, "masked_task",
                fmt::format("T = {} is longer than the held-out text ({} characters): give "
                            "<tokens> {} or fewer",
                            t, text.size(), text.size()))
        .about("tokens");
  }
  TaskBatch b{Ids({batch, t}), Ids({batch, t})};
  for (std::size_t s = 0; s < batch; ++s) {
    const std::size_t start = below(rng, text.size() - t + 1);
    bool any = false;
    for (std::size_t i = 0; i < t; ++i) {
      const bool masked = rng.uniform() < kMaskedFraction;
      b.ids(s, i) = masked ? kTextMask : text[start + i];
      b.labels(s, i) = masked ? text[start + i] : kIgnoredLabel;
      any = any || masked;
    }
    if (!any) {
      const std::size_t i = below(rng, t);
      b.labels(s, i) = b.ids(s, i);
      b.ids(s, i) = kTextMask;
    }
  }
  return b;
}
}  // namespace

TaskBatch make_task_batch(Task task, const TaskSizes& sizes, std::size_t batch, Rng& rng,
                          TaskSplit split) {
  if (task == Task::masked) return masked_batch(sizes, batch, rng, split);
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

std::string task_example(Task task, const TaskSizes& sizes) {
  // Letters a to h, some repeated (histogram counts them); for masked, a sentence with gaps.
  const std::string_view example =
      task == Task::masked ? "th? cat s?t on the m?t and l?oked at the d?or" : "cabhbgad";
  return std::string(example.substr(0, sizes.tokens));
}

std::string token_text(std::int64_t id) {
  if (id >= 0 && id < 26) return std::string(1, static_cast<char>('a' + id));
  if (id == kTextSpace) return "_";
  if (id == kTextMask) return "?";
  return fmt::format("<{}>", id);
}

std::string label_text(Task task, const TaskSizes& sizes, std::int64_t label) {
  if (label == kIgnoredLabel) return "";
  if (task == Task::histogram) return std::to_string(label);
  if (task == Task::previous_token && label == static_cast<std::int64_t>(sizes.vocab)) return "-";
  return token_text(label);
}

std::vector<std::int64_t> parse_task_text(Task task, std::string_view text,
                                          const TaskSizes& sizes) {
  const bool masked = task == Task::masked;
  std::vector<std::int64_t> ids;
  for (char c : text) {
    if (masked && (c == ' ' || c == '_' || c == '?')) {
      ids.push_back(c == '?' ? kTextMask : kTextSpace);
      continue;
    }
    if (c == ' ') continue;
    const int id = c - 'a';
    if (id < 0 || static_cast<std::size_t>(id) >= (masked ? 26 : sizes.vocab)) {
      const auto byte = static_cast<unsigned char>(c);
      const std::string shown = byte >= 0x20 && byte < 0x7f ? fmt::format("'{}'", c)
                                                            : fmt::format("the byte {:#04x}", byte);
      throw Error(
          ErrorKind::bad_value, "task_text",
          masked
              ? fmt::format("{} is not one of the masked task's tokens: use the letters a to z, "
                            "spaces and '?' for the characters to fill in",
                            shown)
              : fmt::format("{} is not one of the task's {} tokens: use the letters a to {}", shown,
                            sizes.vocab, token_text(static_cast<std::int64_t>(sizes.vocab) - 1)))
          .about("text");
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace attn
