// attn multi-head: lesson 05.
#include <memory>
#include <string>

#include "05-multi-head/multi_head_lesson.hpp"
#include "common.hpp"
#include "error.hpp"

namespace attn::cli {

struct MultiHeadCliOptions {
  LessonCliOptions cli;
  lessons::MultiHeadLessonOptions lesson;
  MaskCliOptions mask;
  std::string weights;
};

int run_multi_head(MultiHeadCliOptions& o) {
  load_lesson_input(o.cli);
  o.lesson.common = o.cli.lesson;
  o.lesson.causal = o.mask.mask == "causal";
  o.lesson.lengths = mask_lengths(o.mask);
  if (o.lesson.variant == "compare" && !o.cli.output.save_weights.empty()) {
    throw Error("--save-weights", "the compare view runs four models with different state_dicts: add --variant "
                                  "narrow, wide, book or fused");
  }
  if (!o.weights.empty()) {
    o.lesson.weights = load_weights_file(o.weights);
    o.lesson.weights_name = o.weights;
  }
  try {
    return emit(lessons::run_multi_head(o.lesson), o.cli.output);
  } catch (const Error& e) {
    // The sizes are checked against each other only once the input is known.
    if (e.function() == "attention_mask") throw lengths_error(e);
    if (e.function() == "multi_head" && e.detail().find("not divisible") != std::string::npos) {
      throw Error("--heads", e.detail() + ": give --heads that divides D, or --variant wide, whose heads are D wide");
    }
    throw;
  }
}

void setup_multi_head(CLI::App& app) {
  auto o = std::make_shared<MultiHeadCliOptions>();
  CLI::App* sub = app.add_subcommand("multi-head", std::string(lessons::lesson_info("multi-head").summary));
  add_lesson_options(*sub, o->cli);
  sub->add_option("--variant", o->lesson.variant,
                  "compare (default: all four side by side), narrow, wide, book or fused")
      ->check(CLI::IsMember({"compare", "narrow", "wide", "book", "fused"}))
      ->option_text("compare|narrow|wide|book|fused");
  sub->add_option("--heads", o->lesson.heads, "H, heads (default 2)")->check(size_validator())->option_text("H");
  add_mask_options(*sub, o->mask);
  add_weights_options(*sub, o->weights, o->cli.output);
  sub->callback([o] { exit_code() = run_multi_head(*o); });
}

}  // namespace attn::cli
