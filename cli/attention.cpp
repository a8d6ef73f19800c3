// attn attention: lesson 04.
#include <memory>
#include <string>

#include "04-attention/attention_lesson.hpp"
#include "ablate.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "mine_option.hpp"
#include "options.hpp"
#include "pretrained.hpp"
#include "state_dict.hpp"

namespace attn::cli {

namespace {

struct AttentionCliOptions {
  LessonCliOptions cli;
  lessons::AttentionLessonOptions lesson;
  std::size_t head_size = 0;
  MaskCliOptions mask;
  std::string weights;
  CheckpointCliOptions checkpoint;
  std::size_t head = 0;
  AblateCliOptions ablate;
  std::string ablated, ablated_words;  // the line --ablate prints, and its heads
  bool mine = false;
};

// Head `o.head` of `attention` on what its layer reads, `x` (1,T,D), as seed 000's AttentionHead.
void use_head(AttentionCliOptions& o, const Tensor3& x, BookMultiHead& attention,
              std::string input_name, std::string weights_name) {
  const std::size_t heads = attention.heads.size();
  if (o.head >= heads)
    throw Error(ErrorKind::bad_value, "attention",
                fmt::format("head {} does not exist: the layer has {} heads, 0 to {}", o.head,
                            heads, heads - 1))
        .about("head");
  lessons::AttentionLessonOptions& l = o.lesson;
  l.common.input = to_array(x);
  l.common.input_name = std::move(input_name);
  l.variant = "head";
  l.head_size = x.shape(2) / heads;
  l.weights = collect_state_dict(attention.heads[o.head]);
  l.weights_name = std::move(weights_name);
}

// --checkpoint: head `o.head` of the trained layer, as seed 000's AttentionHead on what the layer
// reads.
void use_checkpoint(AttentionCliOptions& o, const CLI::App& app, Context& context) {
  std::optional<lessons::TrainedAttention> a = checkpoint_attention(
      app, o.checkpoint,
      {"--input", "--weights", "--batch", "--seq", "--d-model", "--variant", "--head-size"},
      "attention", context, [&](TrainedCheckpoint& c) {
        const std::optional<Ablation> ablation =
            read_ablation(app, o.ablate, c.model, ViewPart::encoder, "attention",
                          encoder_has_one_part(o.checkpoint.checkpoint));
        if (!ablation) return;
        bool earlier = false;  // a head before the layer shown, which changes what it reads
        for (const HeadRef& h : ablation->heads)
          earlier = earlier || h.layer < o.checkpoint.layer;
        o.ablated = ablation_line(
            c.model, c.config, *ablation,
            earlier ? fmt::format("what layer {} reads above was computed with these heads "
                                  "ablated.",
                                  o.checkpoint.layer)
                    : fmt::format("these heads are in layer {} or later, so what layer {} "
                                  "reads above does not change.",
                                  o.checkpoint.layer, o.checkpoint.layer));
        o.ablated_words = ablated_heads_words(c.model, *ablation);
        ablate_heads_in_weights(c.model, ablation->heads, ablation->part);
      });
  if (std::optional<PretrainedLayer> p = pretrained_layer(
          app, o.checkpoint,
          {"--input", "--weights", "--batch", "--seq", "--d-model", "--variant", "--head-size"},
          "attention")) {
    use_head(o, p->x, p->layer.attention, p->source, fmt::format("{} head {}", p->source, o.head));
    o.lesson.tokens = p->tokens;
    o.lesson.pretrained = p->source;
    o.lesson.causal = o.lesson.causal || p->causal;
    o.lesson.pretrained_gpt2 = p->causal;
    return;
  }
  if (!a) {
    refuse_ablate_without_model(app, "attention",
                                "add --checkpoint reverse (or another checkpoint)");
    if (app.count("--head") > 0)
      throw Error(ErrorKind::bad_value, "attention",
                  "--head picks a trained model's head: add --checkpoint reverse "
                  "(or another checkpoint) or --pretrained DIR, or drop --head")
          .about("head");
    return;
  }
  use_head(
      o, a->x, a->attention,
      fmt::format("{}, layer {}", o.checkpoint.checkpoint, o.checkpoint.layer),
      fmt::format("{}, layer {} head {}{}", o.checkpoint.checkpoint, o.checkpoint.layer, o.head,
                  o.ablated.empty() ? "" : fmt::format(", with {} ablated", o.ablated_words)));
  o.lesson.trained = a->source;
  o.lesson.trained_head = o.head;
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<AttentionCliOptions>();
  CLI::App* sub = add_lesson_command(app, "attention");
  add_lesson_options(*sub, o->cli);
  add_heatmap_option(*sub, o->cli.output);
  sub->add_option(
         "--variant", o->lesson.variant,
         "self-attention (seed 004's SelfAttention, default) or head (seed 000's AttentionHead)")
      ->check(choice_validator("an attention variant", {"self-attention", "head"}))
      ->option_text("self-attention|head");
  sub->add_option("--head-size", o->head_size, "hs of the head variant (default D)")
      ->check(size_validator())
      ->option_text("HS");
  add_mask_options(*sub, o->mask);
  add_weights_options(*sub, o->weights, o->cli.output);
  add_checkpoint_options(*sub, o->checkpoint);
  sub->add_option("--head", o->head,
                  "with --checkpoint or --pretrained: which of the layer's heads (default 0)")
      ->check(CLI::NonNegativeNumber)
      ->option_text("H");
  add_ablate_option(*sub, o->ablate, "with --checkpoint");
  add_mine_option(*sub, o->mine);
  door_callback(*sub, [o, sub, &context] {
    if (o->mine && (o->mask.mask != "none" || !o->mask.lengths.empty())) {
      throw Error(ErrorKind::bad_value, "attention",
                  "it runs your scaled_dot_product_attention on the lesson's queries, keys and "
                  "values without a mask: drop --mask and --lengths")
          .about("mine");
    }
    load_lesson_input(o->cli, context);
    o->lesson.common = o->cli.lesson;
    if (o->head_size != 0) o->lesson.head_size = o->head_size;
    o->lesson.causal = o->mask.mask == "causal";
    o->lesson.lengths = mask_lengths(o->mask);
    load_weights_option(o->lesson, o->weights, context);
    use_checkpoint(*o, *sub, context);
    lessons::LessonRun run = lessons::run_attention(o->lesson);
    if (!o->ablated.empty()) run.prose(o->ablated);
    add_mine_steps(run, o->mine);
    context.exit_code = publish(run, o->cli.output, context);
  });
}

const Registration kRegistration{"attention", setup};

}  // namespace

}  // namespace attn::cli
