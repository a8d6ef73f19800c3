// The tasks attn train learns: their labels, and the masked task's windows of text, its masks and
// its held-out paragraph.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "loss.hpp"
#include "train/tasks.hpp"
#include "train/trainer.hpp"

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

TEST_CASE("held out means never trained on: no task's held-out sequence is among training's draws",
          "[tasks][held-out]") {
  // Training's batch stream replayed and looked up among the held-out set: a split that let a
  // held-out sequence through would show here (the encoder-decoder's old split had 272 of 512).
  const std::vector<attn::TrainTask> tasks = {Task::reverse,
                                              Task::sort,
                                              Task::histogram,
                                              Task::previous_token,
                                              Task::masked,
                                              Task::previous_minus_mirror,
                                              attn::Seq2SeqTask::reverse,
                                              attn::Seq2SeqTask::sort,
                                              attn::Seq2SeqTask::number_words};
  for (const attn::TrainTask& task : tasks) {
    attn::TrainConfig c;
    c.task = task;
    if (task == attn::TrainTask(Task::masked)) c.sizes = {attn::kTextTokens, 16};
    c.steps = 400;
    c.held_out = 2000;
    const attn::HeldOutOverlap o = attn::held_out_overlap(c);
    INFO(attn::task_name(task));
    CHECK(o.found == 0);
    CHECK(o.drawn == 400 * c.batch);
    CHECK(o.held_out > 30);  // the masked paragraph's windows are fewer than 2000
  }
}

TEST_CASE("the hash split holds out about one sequence in eight, each on one side in every run",
          "[tasks][held-out]") {
  std::size_t held_out = 0, count = 0;
  std::vector<std::int64_t> ids(4);
  for (std::int64_t a = 0; a < 8; ++a)
    for (std::int64_t b = 0; b < 8; ++b)
      for (std::int64_t c = 0; c < 8; ++c)
        for (std::int64_t d = 0; d < 8; ++d) {
          ids = {a, b, c, d};
          held_out += attn::held_out_tokens(ids) ? 1 : 0;
          ++count;
        }
  CHECK(static_cast<double>(held_out) / static_cast<double>(count) == Approx(0.125).margin(0.02));
  // Drawn held-out sequences are all on the held-out side, training's never.
  attn::Rng rng(7);
  const attn::TaskSizes sizes{8, 6};
  const attn::TaskBatch h =
      attn::make_task_batch(Task::reverse, sizes, 200, rng, attn::TaskSplit::held_out);
  const attn::TaskBatch t = attn::make_task_batch(Task::reverse, sizes, 200, rng);
  for (std::size_t s = 0; s < 200; ++s) {
    std::vector<std::int64_t> a(6), b(6);
    for (std::size_t i = 0; i < 6; ++i)
      a[i] = h.ids(s, i), b[i] = t.ids(s, i);
    CHECK(attn::held_out_tokens(a));
    CHECK_FALSE(attn::held_out_tokens(b));
  }
}

TEST_CASE("too few sequences to hold some out are refused", "[tasks][held-out]") {
  attn::TrainConfig c;
  c.sizes = {2, 2};  // 4 sequences
  CHECK_THROWS_WITH(attn::check_train_config(c), Catch::Contains("too few to hold some out"));
  c.sizes = {8, 8};
  CHECK_NOTHROW(attn::check_train_config(c));
}
