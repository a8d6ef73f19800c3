#include "train/seq2seq.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/names.hpp"
#include "loss.hpp"
#include "train/tasks.hpp"

namespace attn {

namespace {

constexpr std::size_t kLetters = 8, kLongestLetters = 8, kLargestNumber = 9999;

// The special tokens, then the letters a, b, ... (kLetters of them).
std::vector<std::string> then_letters(std::vector<std::string> tokens) {
  for (std::size_t i = 0; i < kLetters; ++i)
    tokens.push_back(std::string(1, static_cast<char>('a' + i)));
  return tokens;
}
const std::vector<std::string>& letters_source() {
  static const std::vector<std::string> tokens = then_letters({"<pad>"});
  return tokens;
}
const std::vector<std::string>& letters_target() {
  static const std::vector<std::string> tokens = then_letters({"<pad>", "<s>", "</s>"});
  return tokens;
}
const std::vector<std::string>& digits_source() {
  static const std::vector<std::string> tokens = [] {
    std::vector<std::string> t{"<pad>"};
    for (char c = '0'; c <= '9'; ++c)
      t.push_back(std::string(1, c));
    return t;
  }();
  return tokens;
}

const char* const kOnes[] = {"zero", "one", "two",   "three", "four",
                             "five", "six", "seven", "eight", "nine"};
const char* const kTeens[] = {"ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                              "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
const char* const kTens[] = {"twenty", "thirty",  "forty",  "fifty",
                             "sixty",  "seventy", "eighty", "ninety"};

const std::vector<std::string>& words_target() {
  static const std::vector<std::string> tokens = [] {
    std::vector<std::string> t{"<pad>", "<s>", "</s>"};
    for (const char* w : kOnes)
      t.push_back(w);
    for (const char* w : kTeens)
      t.push_back(w);
    for (const char* w : kTens)
      t.push_back(w);
    t.push_back("hundred");
    t.push_back("thousand");
    return t;
  }();
  return tokens;
}

std::int64_t word_id(const std::string& word) {
  const auto& t = words_target();
  return std::find(t.begin(), t.end(), word) - t.begin();
}

// 305 -> three hundred five; 0 -> zero.
std::vector<std::string> number_words(std::size_t n) {
  if (n == 0) return {"zero"};
  std::vector<std::string> w;
  if (n >= 1000) {
    w.push_back(kOnes[n / 1000]);
    w.push_back("thousand");
  }
  if ((n / 100) % 10 != 0) {
    w.push_back(kOnes[(n / 100) % 10]);
    w.push_back("hundred");
  }
  const std::size_t r = n % 100;
  if (r >= 20) {
    w.push_back(kTens[r / 10 - 2]);
    if (r % 10 != 0) w.push_back(kOnes[r % 10]);
  } else if (r >= 10) {
    w.push_back(kTeens[r - 10]);
  } else if (r > 0) {
    w.push_back(kOnes[r]);
  }
  return w;
}

// A tenth of the numbers, spread over every digit in every place (Knuth's multiplicative hash).
bool held_out_number(std::size_t n) {
  return ((static_cast<std::uint64_t>(n) * 2654435761ULL) >> 8) % 10 == 3;
}

std::size_t source_number(const std::vector<std::int64_t>& source) {
  std::size_t n = 0;
  for (std::int64_t id : source)
    n = n * 10 + static_cast<std::size_t>(id - 1);
  return n;
}

std::size_t draw(Rng& rng, std::size_t count) {  // uniform in 0..count-1
  return std::min(count - 1, static_cast<std::size_t>(rng.uniform() * static_cast<double>(count)));
}

}  // namespace

const std::vector<Seq2SeqTaskInfo>& seq2seq_task_list() {
  static const std::vector<Seq2SeqTaskInfo> tasks = {
      {Seq2SeqTask::reverse, "reverse", "the source's letters backwards",
       "output i reading source letter n-1-i: the anti-diagonal", "the letter it writes",
       HeadsClaim::reads},
      {Seq2SeqTask::sort, "sort", "the source's letters in alphabetical order",
       "output i reading wherever the i-th smallest letter stands", "the letter it writes",
       HeadsClaim::none},
      {Seq2SeqTask::number_words, "number-words",
       "a number 0 to 9999 in English words: 305 -> three hundred five",
       "each word reading the digit it names: thousands, hundreds, tens, ones", "",
       HeadsClaim::none},
  };
  return tasks;
}

std::optional<Seq2SeqTask> seq2seq_task_named(std::string_view name) {
  const Seq2SeqTaskInfo* info = named_entry(seq2seq_task_list(), name);
  return info != nullptr ? std::optional(info->task) : std::nullopt;
}

const Seq2SeqTaskInfo& seq2seq_task_info(Seq2SeqTask task) {
  for (const Seq2SeqTaskInfo& t : seq2seq_task_list())
    if (t.task == task) return t;
  throw Error(ErrorKind::internal, "seq2seq", "a task outside the list");
}

const std::vector<std::string>& source_tokens(Seq2SeqTask task) {
  return task == Seq2SeqTask::number_words ? digits_source() : letters_source();
}
const std::vector<std::string>& target_tokens(Seq2SeqTask task) {
  return task == Seq2SeqTask::number_words ? words_target() : letters_target();
}
std::size_t max_source_length(Seq2SeqTask task) {
  return task == Seq2SeqTask::number_words ? 4 : kLongestLetters;
}
std::size_t max_target_length(Seq2SeqTask task) {
  return task == Seq2SeqTask::number_words ? 6 : kLongestLetters;  // 7777: six words
}

std::vector<std::int64_t> seq2seq_answer(Seq2SeqTask task,
                                         const std::vector<std::int64_t>& source) {
  if (source.empty())
    throw Error(ErrorKind::bad_value, "seq2seq", "the source is empty: give at least one token");
  switch (task) {
    case Seq2SeqTask::reverse: {
      std::vector<std::int64_t> out;
      for (auto it = source.rbegin(); it != source.rend(); ++it)
        out.push_back(*it + 2);  // a is 1 in the source, 3 in the target
      return out;
    }
    case Seq2SeqTask::sort: {
      std::vector<std::int64_t> out;
      for (std::int64_t id : source)
        out.push_back(id + 2);
      std::sort(out.begin(), out.end());
      return out;
    }
    case Seq2SeqTask::number_words:
      break;
  }
  std::vector<std::int64_t> out;
  for (const std::string& w : number_words(source_number(source)))
    out.push_back(word_id(w));
  return out;
}

std::vector<std::int64_t> parse_source(Seq2SeqTask task, std::string_view text) {
  const std::vector<std::string>& tokens = source_tokens(task);
  const bool digits = task == Seq2SeqTask::number_words;
  const std::string alphabet = digits ? "the digits 0 to 9" : "the letters a to h";
  std::vector<std::int64_t> ids;
  for (std::size_t at = 0; at < text.size(); ++at) {
    const char ch = text[at];
    if (ch == ' ') continue;
    const auto it = std::find(tokens.begin() + 1, tokens.end(), std::string(1, ch));
    if (it == tokens.end())
      throw Error(
          ErrorKind::bad_value, "seq2seq",
          fmt::format("{} is not a token of the {} task: use {}", printable_character(text, at),
                      seq2seq_task_info(task).name, alphabet))
          .about("text");
    ids.push_back(it - tokens.begin());
  }
  if (ids.empty())
    throw Error(ErrorKind::bad_value, "seq2seq",
                fmt::format("the text has no tokens: give 1 to {} of {}", max_source_length(task),
                            alphabet))
        .about("text");
  if (ids.size() > max_source_length(task))
    throw Error(
        ErrorKind::bad_size, "seq2seq",
        fmt::format("{} tokens, more than the {} task's {}: give at most {}", ids.size(),
                    seq2seq_task_info(task).name, max_source_length(task), max_source_length(task)))
        .about("text");
  if (digits && ids.size() > 1 && ids.front() == 1)
    throw Error(ErrorKind::bad_value, "seq2seq",
                fmt::format("'{}' starts with 0: write the number without leading zeros", text))
        .about("text");
  return ids;
}

std::string source_text(Seq2SeqTask task, const std::vector<std::int64_t>& ids) {
  std::string out;
  for (std::int64_t id : ids)
    out += source_tokens(task).at(static_cast<std::size_t>(id));
  return out;
}

std::string target_text(Seq2SeqTask task, const std::vector<std::int64_t>& ids) {
  std::string out;
  const bool words = task == Seq2SeqTask::number_words;
  for (std::int64_t id : ids) {
    const std::string& token = target_tokens(task).at(static_cast<std::size_t>(id));
    if (!out.empty() && (words || token.size() > 1)) out += ' ';
    out += token;
  }
  return out;
}

std::string read_and_written(Seq2SeqTask task, std::int64_t read, std::int64_t written) {
  const std::vector<std::string>& tokens = target_tokens(task);
  return tokens.at(static_cast<std::size_t>(read)) + "→" +
         tokens.at(static_cast<std::size_t>(written));
}

std::string seq2seq_example(Seq2SeqTask task) {
  switch (task) {
    case Seq2SeqTask::reverse:
      return "abcdefgh";
    case Seq2SeqTask::sort:
      return "hadbgce";
    case Seq2SeqTask::number_words:
      break;
  }
  return "1305";
}

Seq2SeqExample make_example(Seq2SeqTask task, Rng& rng, Seq2SeqSplit split) {
  Seq2SeqExample e;
  if (task == Seq2SeqTask::number_words) {
    std::size_t n = 0;
    do {  // as many 1-digit as 4-digit numbers; each split keeps to its own numbers
      const std::size_t digits = 1 + draw(rng, 4);
      const std::size_t low = digits == 1 ? 0 : static_cast<std::size_t>(std::pow(10, digits - 1));
      const std::size_t high = static_cast<std::size_t>(std::pow(10, digits));
      n = low + draw(rng, high - low);
    } while (held_out_number(n) != (split == Seq2SeqSplit::held_out));
    for (char ch : std::to_string(n))
      e.source.push_back(ch - '0' + 1);
  } else {
    do {  // each split keeps to its own side of held_out_tokens (train/tasks.hpp)
      e.source.clear();
      const std::size_t length = 1 + draw(rng, kLongestLetters);
      for (std::size_t i = 0; i < length; ++i)
        e.source.push_back(static_cast<std::int64_t>(1 + draw(rng, kLetters)));
    } while (held_out_tokens(e.source) != (split == Seq2SeqSplit::held_out));
  }
  e.target = seq2seq_answer(task, e.source);
  return e;
}

SequenceTargets cross_targets(Seq2SeqTask task, const std::vector<std::int64_t>& source,
                              const std::vector<std::int64_t>& target, std::size_t queries) {
  SequenceTargets out(queries);
  for (std::size_t t = 0; t < queries; ++t) {
    out[t].visible = source.size();
    if (t >= target.size() || task == Seq2SeqTask::number_words) continue;
    if (task == Seq2SeqTask::reverse) {
      out[t].keys.push_back(source.size() - 1 - t);
      continue;
    }
    for (std::size_t j = 0; j < source.size(); ++j)  // a letter is 2 more in the target's ids
      if (source[j] + 2 == target[t]) out[t].keys.push_back(j);
  }
  return out;
}

Seq2SeqBatch make_batch(const std::vector<Seq2SeqExample>& examples) {
  std::size_t s = 0, t = 0;
  std::vector<std::size_t> source_lengths, target_lengths;
  for (const Seq2SeqExample& e : examples) {
    s = std::max(s, e.source.size());
    t = std::max(t, e.target.size() + 1);
    source_lengths.push_back(e.source.size());
    target_lengths.push_back(e.target.size() + 1);
  }
  Seq2SeqBatch b;
  const std::size_t n = examples.size();
  b.source = xt::zeros<std::int64_t>({n, s});
  b.target_input = xt::zeros<std::int64_t>({n, t});
  b.labels = Ids({n, t});
  b.labels.fill(kIgnoredLabel);
  for (std::size_t i = 0; i < n; ++i) {
    const Seq2SeqExample& e = examples[i];
    std::copy(e.source.begin(), e.source.end(), &b.source(i, 0));
    b.target_input(i, 0) = kStartId;
    for (std::size_t j = 0; j < e.target.size(); ++j) {
      b.target_input(i, j + 1) = e.target[j];
      b.labels(i, j) = e.target[j];
    }
    b.labels(i, e.target.size()) = kEndId;
  }
  b.source_mask = source_padding_mask(source_lengths, s);
  b.target_mask = target_causal_mask(target_lengths, t);
  return b;
}

void check_decode_options(const DecodeOptions& o) {
  if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature))
    throw Error(ErrorKind::bad_value, "generate",
                fmt::format("{} is not a positive number: try 1 (0.5 sharpens, 2 "
                            "flattens)",
                            o.temperature))
        .about("temperature");
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    throw Error(ErrorKind::bad_value, "generate",
                fmt::format("{} is outside (0, 1]: try 0.9, or 1 to keep every token", o.top_p))
        .about("top_p");
}

std::int64_t draw_token(const std::vector<float>& probabilities, Rng& rng) {
  const double u = rng.uniform();
  double cumulative = 0.0;
  auto pick = static_cast<std::int64_t>(probabilities.size()) - 1;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    cumulative += probabilities[i];
    if (probabilities[i] > 0.0f && u < cumulative) {
      pick = static_cast<std::int64_t>(i);
      break;
    }
  }
  while (pick > 0 && probabilities[static_cast<std::size_t>(pick)] == 0.0f)
    --pick;
  return pick;
}

std::vector<float> sampling_distribution(const std::vector<float>& scores, const DecodeOptions& o) {
  const std::size_t v = scores.size();
  const double inf = std::numeric_limits<double>::infinity();
  // TemperatureLogitsWarper: divide the scores.
  std::vector<double> z(v);
  for (std::size_t i = 0; i < v; ++i)
    z[i] = static_cast<double>(scores[i]) / o.temperature;
  // Most likely first; equal scores keep their ids' order.
  std::vector<std::size_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return z[a] > z[b]; });
  // TopKLogitsWarper: remove every score below the k-th largest, so ties with it stay.
  if (o.top_k > 0 && o.top_k < v) {
    const double kth = z[order[o.top_k - 1]];
    for (double& x : z)
      if (x < kth) x = -inf;
  }
  std::vector<double> p(v, 0.0);
  const double largest = z[order[0]];
  if (largest == -inf)
    throw Error(ErrorKind::bad_value, "sampling_distribution",
                "every score is -inf: nothing to draw");
  double sum = 0.0;
  for (std::size_t i = 0; i < v; ++i)
    sum += p[i] = z[i] == -inf ? 0.0 : std::exp(z[i] - largest);
  for (double& x : p)
    x /= sum;
  // TopPLogitsWarper on top-k's renormalised probabilities: from the least likely up, remove a
  // token while it and all below it hold at most 1 - p; the most likely always stays. What is
  // left is the smallest set whose probability is at least p.
  if (o.top_p < 1.0f) {
    double tail = 0.0;
    for (std::size_t r = v; r-- > 1;) {
      tail += p[order[r]];
      if (tail > 1.0 - static_cast<double>(o.top_p)) break;
      p[order[r]] = 0.0;
    }
  }
  double kept = 0.0;
  for (double x : p)
    kept += x;
  std::vector<float> out(v);
  for (std::size_t i = 0; i < v; ++i)
    out[i] = static_cast<float>(p[i] / kept);
  return out;
}

Decoded decode(const Transformer& model, const std::vector<std::int64_t>& source,
               const DecodeOptions& o) {
  check_decode_options(o);
  const TransformerConfig& c = model.config;
  Ids ids({1, source.size()});
  std::copy(source.begin(), source.end(), ids.begin());
  Decoded out;
  out.memory = encode(model, ids, nullptr);
  const std::size_t limit =
      o.max_tokens == 0 ? c.target_positions : std::min(o.max_tokens, c.target_positions);
  DecoderCache cache = start_decoding(model, out.memory, nullptr);
  Rng rng(o.seed);
  std::vector<std::int64_t> prefix{kStartId};
  while (prefix.size() <= limit) {
    Tensor3 log_probs;
    if (o.cache) {
      log_probs = decode_step(model, cache, {prefix.back()});
    } else {
      Ids p({1, prefix.size()});
      std::copy(prefix.begin(), prefix.end(), p.begin());
      log_probs = decode_last(model, out.memory, nullptr, p);
    }
    DecodeStep step;
    step.log_probs.assign(log_probs.begin(), log_probs.end());
    // <pad> and <s> are never written: masked before any filter, greedy or sampled.
    std::vector<float> scores = step.log_probs;
    scores[static_cast<std::size_t>(kPadId)] = scores[static_cast<std::size_t>(kStartId)] =
        -std::numeric_limits<float>::infinity();
    const DecodeCost cost = decode_cost(c, source.size(), prefix.size() - 1);
    step.multiply_adds = o.cache ? cost.cached : cost.recomputed;
    DecodeOptions shown = o;
    if (!o.sample) shown = DecodeOptions{};  // greedy: show the plain softmax
    step.probabilities = sampling_distribution(scores, shown);
    if (o.sample) {
      step.pick = draw_token(step.probabilities, rng);
    } else {
      step.pick = std::max_element(scores.begin(), scores.end()) - scores.begin();
    }
    out.steps.push_back(step);
    out.tokens.push_back(step.pick);
    prefix.push_back(step.pick);
    if (step.pick == kEndId) break;
  }
  return out;
}

Seq2SeqEvaluation evaluate(const Transformer& model, Seq2SeqTask task,
                           const std::vector<Seq2SeqExample>& examples) {
  Seq2SeqEvaluation e;
  e.examples = examples.size();
  if (examples.empty()) return e;
  std::size_t exact = 0;
  for (const Seq2SeqExample& x : examples) {
    std::vector<std::int64_t> expected = x.target;
    expected.push_back(kEndId);
    if (decode(model, x.source, DecodeOptions{}).tokens == expected) ++exact;
  }
  e.exact_match = static_cast<double>(exact) / static_cast<double>(examples.size());
  std::size_t correct = 0, scored = 0;
  for (std::size_t first = 0; first < examples.size(); first += kEvaluationBatch) {
    const Seq2SeqBatch b = make_batch(std::vector<Seq2SeqExample>(
        examples.begin() + static_cast<std::ptrdiff_t>(first),
        examples.begin() +
            static_cast<std::ptrdiff_t>(std::min(examples.size(), first + kEvaluationBatch))));
    const TransformerTape tape =
        forward(model, b.source, b.target_input, &b.source_mask, &b.target_mask);
    const CrossEntropySteps loss = cross_entropy(tape.logits, b.labels);
    correct += loss.correct;
    scored += loss.scored;
  }
  e.token_accuracy =
      static_cast<double>(correct) / static_cast<double>(std::max<std::size_t>(1, scored));
  (void)task;
  return e;
}

}  // namespace attn
