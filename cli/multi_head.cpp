// attn multi-head: lesson 05.
#include <memory>
#include <string>

#include "05-multi-head/multi_head_lesson.hpp"
#include "ablate.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "pretrained.hpp"
#include "state_dict.hpp"

namespace attn::cli {

namespace {

struct MultiHeadCliOptions {
  LessonCliOptions cli;
  lessons::MultiHeadLessonOptions lesson;
  MaskCliOptions mask;
  std::string weights;
  CheckpointCliOptions checkpoint;
  AblateCliOptions ablate;
};

// --checkpoint: the trained layer's attention, the book's form, on what the layer reads.
void use_checkpoint(MultiHeadCliOptions& o, const CLI::App& app, Context& context) {
  std::optional<lessons::TrainedAttention> a = checkpoint_attention(
      app, o.checkpoint,
      {"--input", "--weights", "--batch", "--seq", "--d-model", "--variant", "--heads"},
      "multi_head", context);
  if (std::optional<PretrainedLayer> p = pretrained_layer(
          app, o.checkpoint,
          {"--input", "--weights", "--batch", "--seq", "--d-model", "--variant", "--heads"},
          "multi_head")) {
    lessons::MultiHeadLessonOptions& l = o.lesson;
    l.common.input = to_array(p->x);
    l.common.input_name = p->source;
    l.variant = "book";
    l.heads = p->layer.attention.heads.size();
    l.weights = collect_state_dict(p->layer.attention);
    l.weights_name = p->source;
    l.tokens = p->tokens;
    l.pretrained = p->source;
    l.causal = l.causal || p->causal;
    l.pretrained_gpt2 = p->causal;
    return;
  }
  if (!a) {
    refuse_ablate_without_model(app, "multi_head",
                                "add --checkpoint previous-minus-mirror (or another checkpoint)");
    return;
  }
  lessons::MultiHeadLessonOptions& l = o.lesson;
  l.common.input = to_array(a->x);
  l.common.input_name = fmt::format("{}, layer {}", o.checkpoint.checkpoint, o.checkpoint.layer);
  l.variant = "book";
  l.heads = a->attention.heads.size();
  l.weights = collect_state_dict(a->attention);
  l.weights_name = fmt::format("{}, layer {}", o.checkpoint.checkpoint, o.checkpoint.layer);
  l.trained = a->source;
  TrainedCheckpoint c = load_encoder_checkpoint(o.checkpoint.checkpoint, context);
  l.ablation = lessons::HeadAblationInput{std::get<TokenClassifier>(std::move(c.model)), c.config,
                                          o.checkpoint.checkpoint, o.checkpoint.layer,
                                          parse_head_list(o.ablate.ablate, "multi_head")};
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<MultiHeadCliOptions>();
  CLI::App* sub = add_lesson_command(app, "multi-head");
  add_lesson_options(*sub, o->cli);
  add_heatmap_option(*sub, o->cli.output);
  sub->add_option("--variant", o->lesson.variant,
                  "compare (default: all four side by side), narrow, wide, book or fused")
      ->check(
          choice_validator("a multi-head variant", {"compare", "narrow", "wide", "book", "fused"}))
      ->option_text("compare|narrow|wide|book|fused");
  sub->add_option("--heads", o->lesson.heads, "H, heads (default 2)")
      ->check(size_validator())
      ->option_text("H");
  add_mask_options(*sub, o->mask);
  add_weights_options(*sub, o->weights, o->cli.output);
  add_checkpoint_options(*sub, o->checkpoint);
  add_ablate_option(*sub, o->ablate, "with --checkpoint");
  door_callback(*sub, [o, sub, &context] {
    if (o->lesson.variant == "compare" && !o->cli.output.save_weights.empty()) {
      throw Error(
          ErrorKind::bad_value, "multi_head",
          "the compare view runs four models with different state_dicts: add --variant narrow, "
          "wide, book or fused")
          .about("save_weights");
    }
    load_lesson_input(o->cli, context);
    o->lesson.common = o->cli.lesson;
    o->lesson.causal = o->mask.mask == "causal";
    o->lesson.lengths = mask_lengths(o->mask);
    load_weights_option(o->lesson, o->weights, context);
    use_checkpoint(*o, *sub, context);
    context.exit_code = publish(lessons::run_multi_head(o->lesson), o->cli.output, context);
  });
}

const Registration kRegistration{"multi-head", setup};

}  // namespace

}  // namespace attn::cli
