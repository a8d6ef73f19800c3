// The tasks attn train learns: their labels, and the masked task's windows of text, its masks and
// its held-out paragraph.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "loss.hpp"
#include "train/tasks.hpp"

using attn::Task;

namespace {
std::string as_text(const std::vector<std::int64_t>& ids) {
  std::string s;
  for (std::int64_t id : ids)
    s += attn::token_text(id);
  return s;
}

// Whether `window` (no masks) occurs in `text`.
bool occurs_in(const std::vector<std::int64_t>& window, const std::vector<std::int64_t>& text) {
  return std::search(text.begin(), text.end(), window.begin(), window.end()) != text.end();
}
}  // namespace

TEST_CASE("the letter tasks' labels", "[tasks]") {
  const attn::TaskSizes sizes{8, 5};
  const std::vector<std::int64_t> ids = {2, 0, 1, 0, 7};  // c a b a h
  CHECK(attn::task_labels(Task::reverse, sizes, ids) == std::vector<std::int64_t>{7, 0, 1, 0, 2});
  CHECK(attn::task_labels(Task::sort, sizes, ids) == std::vector<std::int64_t>{0, 0, 1, 2, 7});
  CHECK(attn::task_labels(Task::histogram, sizes, ids) == std::vector<std::int64_t>{1, 2, 1, 2, 1});
  CHECK(attn::task_labels(Task::previous_token, sizes, ids) ==
        std::vector<std::int64_t>{8, 2, 0, 1, 0});
  CHECK(attn::label_text(Task::previous_token, sizes, 8) == "-");
}

TEST_CASE(
    "the masked task's text: lower-case letters and single spaces, its last paragraph held out",
    "[tasks][masked]") {
  const auto& train = attn::task_text(attn::TaskSplit::train);
  const auto& held_out = attn::task_text(attn::TaskSplit::held_out);
  REQUIRE(train.size() > 4000);
  REQUIRE(held_out.size() > 300);
  CHECK(as_text(train).substr(0, 24) == "the_cat_sat_on_the_mat_a");
  CHECK(as_text(held_out).substr(0, 22) == "the_house_on_the_hill_");
  for (const auto* text : {&train, &held_out}) {
    CHECK(std::all_of(text->begin(), text->end(),
                      [](std::int64_t id) { return id >= 0 && id <= attn::kTextSpace; }));
    CHECK(std::adjacent_find(text->begin(), text->end(), [](std::int64_t a, std::int64_t b) {
            return a == attn::kTextSpace && b == attn::kTextSpace;
          }) == text->end());
  }
  // The held-out paragraph's opening is not in the training text.
  const std::vector<std::int64_t> opening(held_out.begin(), held_out.begin() + 40);
  CHECK_FALSE(occurs_in(opening, train));
}

TEST_CASE("masked batches: windows of their part of the text, 15% masked and only those labelled",
          "[tasks][masked]") {
  const attn::TaskSizes sizes{attn::kTextTokens, 16};
  CHECK(attn::task_classes(Task::masked, sizes) == 27);
  CHECK(attn::task_vocabulary(Task::masked, sizes) == 28);
  for (const attn::TaskSplit split : {attn::TaskSplit::train, attn::TaskSplit::held_out}) {
    attn::Rng rng(7);
    const attn::TaskBatch b = attn::make_task_batch(Task::masked, sizes, 400, rng, split);
    std::size_t masked = 0;
    for (std::size_t s = 0; s < 400; ++s) {
      std::vector<std::int64_t> window(16);
      std::size_t in_row = 0;
      for (std::size_t i = 0; i < 16; ++i) {
        const bool is_mask = b.ids(s, i) == attn::kTextMask;
        INFO("sequence " << s << " position " << i);
        // A mask's label is the character it hides; everything else is not scored.
        CHECK((is_mask ? b.labels(s, i) >= 0 && b.labels(s, i) <= attn::kTextSpace
                       : b.labels(s, i) == attn::kIgnoredLabel));
        window[i] = is_mask ? b.labels(s, i) : b.ids(s, i);
        in_row += is_mask;
      }
      CHECK(in_row >= 1);
      masked += in_row;
      CHECK(occurs_in(window, attn::task_text(split)));
    }
    const double fraction = static_cast<double>(masked) / (400.0 * 16.0);
    CHECK(fraction > 0.13);
    CHECK(fraction < 0.19);  // 15%, plus a forced mask in rows that drew none
  }
}

TEST_CASE("masked text: '?' is the mask, spaces are tokens, other characters are refused",
          "[tasks][masked]") {
  const attn::TaskSizes sizes{attn::kTextTokens, 16};
  const auto ids = attn::parse_task_text(Task::masked, "th? c_t", sizes);
  CHECK(as_text(ids) == "th?_c_t");
  CHECK(attn::task_labels(Task::masked, sizes, ids) ==
        std::vector<std::int64_t>(7, attn::kIgnoredLabel));
  CHECK(attn::label_text(Task::masked, sizes, attn::kIgnoredLabel).empty());
  CHECK(attn::task_example(Task::masked, sizes) == "th? cat s?t on t");
  CHECK_THROWS_WITH(attn::parse_task_text(Task::masked, "it's", sizes),
                    Catch::Contains("''' is not one of the masked task's tokens"));
  // The letter tasks skip spaces and know no mask.
  CHECK(attn::parse_task_text(Task::reverse, "c a b", {8, 3}) ==
        std::vector<std::int64_t>{2, 0, 1});
  CHECK_THROWS_WITH(attn::parse_task_text(Task::reverse, "c?b", {8, 3}),
                    Catch::Contains("'?' is not one of the task's 8 tokens"));
}
