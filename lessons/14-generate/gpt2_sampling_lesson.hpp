#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fast/gpt2_fast.hpp"
#include "io/bpe.hpp"
#include "lesson.hpp"
#include "train/seq2seq.hpp"

namespace attn::lessons {

struct SamplingDemoOptions {
  const BpeTokenizer* tokenizer = nullptr;
  std::vector<std::int64_t> prompt;
  std::int64_t end_of_text = -1;
  std::size_t length = 80;  // new tokens of each continuation, at most (the positions left cap it)
  std::size_t seeds = 5;    // seeds 0 to seeds - 1
  DecodeOptions sample;     // what the seeds' samples draw with (sample = true)
};

// Lesson 14's sampling, measured on a decoder-only model: the distribution after the prompt under
// temperature, top-k and top-p (sampling_distribution, what generate draws from), continuations
// across seeds and how much they share, and the greedy continuation's repetition against theirs.
void show_sampling(LessonRun& run, const PackedGpt2& model, const SamplingDemoOptions& options);

// The entropy of a distribution in nats, -Σ p ln p (terms with p = 0 are 0).
double entropy(const std::vector<float>& probabilities);
// How many of the most likely tokens it takes to hold `mass` of the probability.
std::size_t tokens_holding(const std::vector<float>& probabilities, double mass);
// The fraction of the text's windows of `width` bytes that already occurred earlier in it (0 when
// it has fewer than two).
double repeated_window_fraction(std::string_view text, std::size_t width);
// The longest stretch of bytes that occurs twice in the text (the two may overlap).
std::size_t longest_repeat(std::string_view text);
// Over every pair of texts, the share of their distinct n-byte grams they have in common
// (|A ∩ B| / |A ∪ B|), averaged; 0 with fewer than two texts.
double shared_ngram_fraction(const std::vector<std::string>& texts, std::size_t n);
// Generated text on one line: a newline as ↵, other control bytes as \xNN.
std::string one_line(std::string_view text, std::size_t limit = 4000);

}  // namespace attn::lessons
