#include "train/tasks.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <set>

#include "base/error.hpp"
#include "base/names.hpp"
#include "io/shipped.hpp"

namespace attn {

const std::vector<TaskInfo>& task_list() {
  static const std::vector<TaskInfo> tasks = {
      {Task::reverse, "reverse", "position i outputs the token at position T-1-i",
       "the anti-diagonal, query i looking at key T-1-i", "the mirrored key", HeadsClaim::pattern},
      {Task::sort, "sort", "position i outputs the i-th smallest token",
       "each query looking at the tokens of its rank", "the keys of its rank", HeadsClaim::spread},
      {Task::histogram, "histogram", "position i outputs how often its token occurs",
       "each query looking at every copy of its own token", "the copies of its token",
       HeadsClaim::spread},
      {Task::previous_token, "previous-token", "position i outputs the token at i-1 ('-' at 0)",
       "the diagonal just below the main one, query i looking at key i-1", "the previous key",
       HeadsClaim::pattern},
      {Task::masked, "masked",
       "each '?' in a window of English text outputs the character it hides",
       "each '?' looking at the letters beside it, which spell its word",
       "the letters beside the '?'", HeadsClaim::none},
      {Task::previous_minus_mirror, "previous-minus-mirror",
       "position i outputs (x[i-1] - x[T-1-i]) mod V, x[-1] counting as a",
       "two relations at once: key i-1 and key T-1-i, one head each", "keys i-1 and T-1-i",
       HeadsClaim::pattern},
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

bool held_out_tokens(const std::vector<std::int64_t>& ids) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a, one step per token
  for (std::int64_t id : ids) {
    hash ^= static_cast<std::uint64_t>(id);
    hash *= 0x100000001b3ULL;
  }
  hash ^= ids.size();
  hash *= 0x100000001b3ULL;
  return (hash >> 40) % 8 == 5;
}

void check_task_split(Task task, const TaskSizes& sizes) {
  if (task == Task::masked) return;
  // Small enough to count: every sequence of V^T, on each side.
  constexpr std::size_t kCounted = std::size_t{1} << 16;
  std::size_t count = 1;
  for (std::size_t i = 0; i < sizes.tokens && count <= kCounted; ++i)
    count *= sizes.vocab;
  if (count > kCounted) return;
  std::size_t held_out = 0;
  std::vector<std::int64_t> ids(sizes.tokens);
  for (std::size_t n = 0; n < count; ++n) {
    std::size_t rest = n;
    for (std::int64_t& id : ids) {
      id = static_cast<std::int64_t>(rest % sizes.vocab);
      rest /= sizes.vocab;
    }
    held_out += held_out_tokens(ids) ? 1 : 0;
  }
  if (held_out == 0 || held_out == count) {
    throw Error(ErrorKind::bad_size, "train",
                fmt::format("{} letters in {} tokens make {} sequences, too few to hold some out "
                            "of training: give more letters or tokens",
                            sizes.vocab, sizes.tokens, count))
        .about("tokens");
  }
}

namespace {
constexpr double kMaskedFraction = 0.15;  // BERT's

// The held-out paragraph's windows of T characters.
std::set<std::vector<std::int64_t>> held_out_windows(std::size_t t) {
  const std::vector<std::int64_t>& text = task_text(TaskSplit::held_out);
  std::set<std::vector<std::int64_t>> windows;
  for (std::size_t start = 0; start + t <= text.size(); ++start)
    windows.emplace(text.begin() + static_cast<std::ptrdiff_t>(start),
                    text.begin() + static_cast<std::ptrdiff_t>(start + t));
  return windows;
}

// Where the windows of T characters a split draws may start: every start in the held-out
// paragraph; in the training text, every start whose window is not one of the held-out ones.
const std::vector<std::size_t>& window_starts(std::size_t t, TaskSplit split) {
  static std::mutex guard;
  static std::map<std::pair<std::size_t, TaskSplit>, std::vector<std::size_t>> starts;
  const std::lock_guard<std::mutex> lock(guard);
  const auto key = std::pair(t, split);
  if (const auto found = starts.find(key); found != starts.end()) return found->second;
  const std::vector<std::int64_t>& text = task_text(split);
  std::vector<std::size_t> out;
  const std::set<std::vector<std::int64_t>> excluded =
      split == TaskSplit::train ? held_out_windows(t) : std::set<std::vector<std::int64_t>>{};
  for (std::size_t start = 0; start + t <= text.size(); ++start) {
    const std::vector<std::int64_t> window(text.begin() + static_cast<std::ptrdiff_t>(start),
                                           text.begin() + static_cast<std::ptrdiff_t>(start + t));
    if (excluded.count(window) == 0) out.push_back(start);
  }
  return starts.emplace(key, std::move(out)).first->second;
}

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
  const std::vector<std::size_t>& starts = window_starts(t, split);
  if (starts.empty()) {
    throw Error(ErrorKind::bad_size, "masked_task",
                fmt::format("every training window of T = {} repeats a held-out one: give fewer "
                            "<tokens>",
                            t))
        .about("tokens");
  }
  TaskBatch b{Ids({batch, t}), Ids({batch, t})};
  for (std::size_t s = 0; s < batch; ++s) {
    const std::size_t start = starts[below(rng, starts.size())];
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
  const bool held_out = split == TaskSplit::held_out;
  for (std::size_t s = 0; s < batch; ++s) {
    do {  // each split keeps to its own side of held_out_tokens
      for (std::int64_t& id : ids)
        id = static_cast<std::int64_t>(rng.uniform() * static_cast<double>(sizes.vocab)) %
             static_cast<std::int64_t>(sizes.vocab);
    } while (held_out_tokens(ids) != held_out);
    const std::vector<std::int64_t> labels = task_labels(task, sizes, ids);
    for (std::size_t i = 0; i < sizes.tokens; ++i)
      b.ids(s, i) = ids[i], b.labels(s, i) = labels[i];
  }
  return b;
}

SequenceTargets task_targets(Task task, const std::vector<std::int64_t>& ids) {
  const std::size_t t = ids.size();
  switch (task) {
    case Task::reverse:
      return mirror_targets(t);
    case Task::previous_token:
      return previous_targets(t);
    case Task::histogram:
      return same_token_targets(ids);
    case Task::sort: {
      std::vector<std::int64_t> sorted = ids;
      std::sort(sorted.begin(), sorted.end());
      SequenceTargets out(t);
      for (std::size_t i = 0; i < t; ++i) {
        out[i].visible = t;
        for (std::size_t j = 0; j < t; ++j)
          if (ids[j] == sorted[i]) out[i].keys.push_back(j);
      }
      return out;
    }
    case Task::previous_minus_mirror: {
      SequenceTargets out = previous_targets(t);
      for (std::size_t i = 0; i < t; ++i)
        if (out[i].keys.empty() || out[i].keys.front() != t - 1 - i)
          out[i].keys.push_back(t - 1 - i);
      return out;
    }
    case Task::masked: {
      SequenceTargets out(t);
      for (std::size_t i = 0; i < t; ++i) {
        out[i].visible = t;
        if (ids[i] != kTextMask) continue;
        for (std::size_t j : {i - 1, i + 1})  // i - 1 wraps past t at i = 0
          if (j < t && ids[j] != kTextMask) out[i].keys.push_back(j);
      }
      return out;
    }
  }
  return {};
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
  for (std::size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    if (masked && (c == ' ' || c == '_' || c == '?')) {
      ids.push_back(c == '?' ? kTextMask : kTextSpace);
      continue;
    }
    if (c == ' ') continue;
    const int id = c - 'a';
    if (id < 0 || static_cast<std::size_t>(id) >= (masked ? 26 : sizes.vocab)) {
      const std::string shown = printable_character(text, at);
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
