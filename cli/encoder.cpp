// attn encoder: lesson 09.
#include <charconv>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "09-encoder/encoder_lesson.hpp"
#include "ablate.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "io/shipped.hpp"
#include "io/tokenizer.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "pretrained.hpp"
#include "state_dict.hpp"
#include "train/tasks.hpp"
#include "train/trainer.hpp"
#include "trained.hpp"

namespace attn::cli {

namespace {
struct EncoderCliOptions {
  lessons::EncoderLessonOptions lesson;
  render::OutputOptions output;
  const CLI::Option *batch_option = nullptr, *seq_option = nullptr, *vocab_option = nullptr,
                    *special_option = nullptr;
  std::string config, norm = "pre", text, pair, ids, ids_file, vocab, input, weights, checkpoint,
                      pretrained;
  AblateCliOptions ablate;
  std::size_t d_model = 0, heads = 0, d_ff = 0, layers = 0, max_positions = 0;
  bool no_embeddings = false, add_special_tokens = false;
};

// More tokens than the position table has are refused here, naming where they came from.
void check_positions(std::size_t tokens, const EncoderConfig& c, const std::string& what,
                     std::string_view fix) {
  if (tokens <= c.max_position_embeddings) return;
  throw Error(
      ErrorKind::bad_size, "check_positions",
      fmt::format(
          "{}, more than the {} positions of the position table (max_position_embeddings): {}, or "
          "raise <max_positions>",
          what, c.max_position_embeddings, fix))
      .about("tokens")
      .driven_by({"T"});
}

// --ids-file: ids of shape (B, T), checked from the .npy header before the data is read.
std::vector<std::vector<std::int64_t>> read_ids_file(const std::string& path,
                                                     const EncoderConfig& c) {
  const std::string shown = printable(path);
  Array a;
  try {
    NpyFile file(path);
    const NpyHeader& h = file.header();
    if (h.shape.size() != 2 || (h.dtype != Dtype::int64 && h.dtype != Dtype::int32) ||
        h.shape[0] == 0 || h.shape[1] == 0) {
      throw Error(ErrorKind::bad_file, "read_ids_file",
                  fmt::format("'{}' holds {} {}, expected int64 ids of shape (B, T)", shown,
                              dtype_name(h.dtype), shape_string(h.shape)));
    }
    check_positions(h.shape[1], c,
                    fmt::format("'{}' holds {} tokens per sequence", shown, h.shape[1]),
                    fmt::format("give at most {} per sequence", c.max_position_embeddings));
    a = file.read();
  } catch (const Error& e) {
    throw Error(e.kind(), e.function(), e.detail()).about("ids_file").driven_by(e.sizes());
  }
  std::vector<std::vector<std::int64_t>> ids(a.shape[0], std::vector<std::int64_t>(a.shape[1]));
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::int64_t id = a.integer(i);
    if (id < 0 || static_cast<std::uint64_t>(id) >= c.vocab_size) {
      throw Error(
          ErrorKind::bad_value, "read_ids_file",
          fmt::format(
              "'{}' holds the id {} at [{}, {}], outside the vocabulary (0 to {}): use ids below "
              "vocab_size {}",
              shown, id, i / a.shape[1], i % a.shape[1], c.vocab_size - 1, c.vocab_size))
          .about("ids_file");
    }
    ids[i / a.shape[1]][i % a.shape[1]] = id;
  }
  return ids;
}

// An option that the chosen mode does not use is refused, never ignored.
void refuse_unused(const CLI::Option* option, bool used, std::string_view why) {
  if (option == nullptr || option->count() == 0 || used) return;
  throw Error(ErrorKind::bad_value, "encoder", std::string(why))
      .about(option->get_name().substr(2));
}

// --checkpoint: the model, its weights and its task from a checkpoint of attn train; --text is
// then the task's letters.
void run_checkpoint(EncoderCliOptions& o, const CLI::App& app, Context& context) {
  lessons::EncoderLessonOptions& l = o.lesson;
  TrainedCheckpoint checkpoint = load_encoder_checkpoint(o.checkpoint, context);
  const TrainConfig& c = checkpoint.config;
  const std::optional<Ablation> ablation =
      read_ablation(app, o.ablate, checkpoint.model, ViewPart::encoder, "encoder",
                    encoder_has_one_part(o.checkpoint));
  const Task task = std::get<Task>(c.task);
  TokenClassifier& model = std::get<TokenClassifier>(checkpoint.model);
  l.config = encoder_config(c);
  l.config_name = o.checkpoint;
  l.placement = c.norm;
  l.weights_name = o.checkpoint;
  lessons::TrainedHead trained;
  const TaskInfo& info = task_info(task);
  trained.task = info.name;
  trained.description = info.description;
  trained.pattern = info.pattern;
  trained.checkpoint = o.checkpoint;
  trained.measured = lessons::measured_source(model, c, o.checkpoint);  // every head
  if (ablation) {
    // The steps below run the ablated model: the output projections' columns that read the
    // heads are zeroed in the weights the lesson loads.
    l.ablated = ablation_line(checkpoint.model, c, *ablation,
                              "everything below is computed with these heads ablated.");
    ablate_heads_in_weights(checkpoint.model, ablation->heads, ablation->part);
    l.weights_name = fmt::format("{}, with {} ablated", o.checkpoint,
                                 ablated_heads_words(checkpoint.model, *ablation));
  }
  l.weights = collect_state_dict(model.encoder);
  const std::size_t classes = task_classes(task, c.sizes);
  trained.head = model.head;
  for (std::size_t k = 0; k < classes; ++k)
    trained.class_names.push_back(label_text(task, c.sizes, static_cast<std::int64_t>(k)));
  const std::string text = o.text.empty() ? task_example(task, c.sizes) : o.text;
  std::vector<std::int64_t> ids = parse_task_text(task, text, c.sizes);
  if (ids.empty() || ids.size() > c.sizes.tokens)
    throw Error(ErrorKind::bad_value, "encoder",
                fmt::format("this checkpoint reads 1 to {} letters, the text has {}: give e.g. "
                            "--text '{}'",
                            c.sizes.tokens, ids.size(), task_example(task, c.sizes)))
        .about("text");
  for (std::int64_t label : task_labels(task, c.sizes, ids))
    trained.expected.push_back(label_text(task, c.sizes, label));
  for (std::int64_t id : ids) {
    l.tokens.push_back(token_text(id));
    if (task == Task::masked) trained.asked.push_back(id == kTextMask);
  }
  l.ids = {ids};
  l.trained = std::move(trained);
  context.exit_code = publish(lessons::run_encoder(l), o.output, context);
}

// --pretrained: a Hugging Face BERT folder on --text (and --pair) or --ids.
void run_pretrained(EncoderCliOptions& o, const CLI::App& app, Context& context) {
  refuse_beside_pretrained(
      app,
      {"--config", "--d-model", "--heads", "--d-ff", "--layers", "--max-positions", "--norm",
       "--vocab", "--add-special-tokens", "--ids-file", "--no-embeddings", "--input", "--seed",
       "--batch", "--seq", "--weights", "--save-weights", "--checkpoint", "--ablate"},
      "encoder");
  PretrainedFolder folder = open_folder(o.pretrained);
  if (is_gpt2(folder))
    throw Error(ErrorKind::bad_value, "encoder",
                fmt::format("'{0}' is a GPT-2 folder, a decoder: attn generate --pretrained {0} "
                            "--text \"...\" runs it, and view, attention and multi-head show its "
                            "attention",
                            printable(o.pretrained)))
        .about("pretrained");
  const PretrainedBert bert = open_bert(std::move(folder));
  const BertText text = bert_text(bert, o.text, o.pair, o.ids);
  // Every tensor of the folder is read; a folder without the MLM head has no logits.
  MemoryPlan plan = plan_bert_reading(bert);
  append(plan, lessons::plan_bert_lesson(bert.config, BertHeads::pretraining, text.tokens.size()));
  check_budget("encoder", plan);
  const Bert model = read_bert(bert);
  lessons::BertLessonOptions l;
  l.model = &model;
  l.vocab = &bert.tokenizer.vocab;
  l.name = o.pretrained;
  l.input = text.input;
  l.tokens = text.tokens;
  l.pair_split = text.pair_split;
  l.show_layer = o.lesson.show_layer;
  context.exit_code = publish(lessons::run_bert(l), o.output, context);
}

void run(EncoderCliOptions& o, const CLI::App& app, Context& context) {
  lessons::EncoderLessonOptions& l = o.lesson;
  if (!o.pretrained.empty()) return run_pretrained(o, app, context);
  if (!o.pair.empty())
    throw Error(ErrorKind::bad_value, "encoder",
                "--pair is the second sentence BERT reads: add --pretrained DIR, or drop --pair")
        .about("pair");
  if (o.checkpoint.empty())
    refuse_ablate_without_model(app, "encoder", "add --checkpoint reverse (or another checkpoint)");
  if (!o.checkpoint.empty()) {
    const bool other_model = !o.config.empty() || o.d_model != 0 || o.heads != 0 || o.d_ff != 0 ||
                             o.layers != 0 || o.max_positions != 0 || !o.weights.empty() ||
                             o.no_embeddings || !o.ids.empty() || !o.ids_file.empty() ||
                             !o.vocab.empty();
    if (other_model)
      throw Error(ErrorKind::bad_value, "encoder",
                  "a checkpoint brings its own model, weights and letters: drop --config, the "
                  "sizes, --weights, --ids, --ids-file, --vocab and --no-embeddings, and give "
                  "--text in the task's letters")
          .about("checkpoint");
    return run_checkpoint(o, app, context);
  }
  if (!o.config.empty()) {
    l.config = resolve_config(o.config);
    l.config_name = o.config;
  } else {
    l.config = tiny_config();
  }
  if (o.d_model != 0) l.config.hidden_size = o.d_model;
  if (o.heads != 0) l.config.num_attention_heads = o.heads;
  if (o.d_ff != 0) l.config.intermediate_size = o.d_ff;
  if (o.layers != 0) l.config.num_hidden_layers = o.layers;
  if (o.max_positions != 0) l.config.max_position_embeddings = o.max_positions;
  l.placement = o.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  l.embeddings = !o.no_embeddings;

  const int sources = !o.text.empty() + !o.ids.empty() + !o.ids_file.empty();
  if (sources > 1)
    throw Error(ErrorKind::bad_value, "encoder", "give one of --text, --ids and --ids-file")
        .about("ids");
  const bool text_input = !o.no_embeddings && o.ids.empty() && o.ids_file.empty();
  refuse_unused(o.batch_option, o.no_embeddings,
                "only --no-embeddings uses it (B of the random hidden states): drop it, or add "
                "--no-embeddings; --ids-file gives several sequences of tokens");
  refuse_unused(o.seq_option, o.no_embeddings,
                "only --no-embeddings uses it (T of the random hidden states): drop it, or add "
                "--no-embeddings; with tokens, T is their number");
  refuse_unused(o.vocab_option, text_input,
                "only --text uses it, and this run reads no text: drop it");
  refuse_unused(o.special_option, text_input,
                "only --text uses it, and this run reads no text: drop it");
  if (o.no_embeddings) {
    if (sources > 0) {
      throw Error(
          ErrorKind::bad_value, "encoder",
          "without embeddings the input is hidden states: drop --text/--ids, or pass --input X.npy "
          "of shape (B, T, D)")
          .about("no_embeddings");
    }
    if (!o.input.empty()) {
      LessonCliOptions input;
      input.input_path = o.input;
      input.lesson.batch = l.common.batch;
      input.lesson.seq = l.common.seq;
      input.batch_option = o.batch_option;
      input.seq_option = o.seq_option;
      load_lesson_input(input, context);
      l.common.input = input.lesson.input;
      l.common.input_name = o.input;
    }
  } else {
    if (!o.input.empty()) {
      throw Error(
          ErrorKind::bad_value, "encoder",
          "--input takes hidden states, which skip the embeddings: add --no-embeddings, or give "
          "tokens with --text or --ids")
          .about("input");
    }
    if (!o.ids.empty()) {
      l.ids = {parse_ids(o.ids, l.config.vocab_size)};
      check_positions(l.ids.front().size(), l.config, fmt::format("{} ids", l.ids.front().size()),
                      "give fewer ids");
    } else if (!o.ids_file.empty()) {
      l.ids = read_ids_file(o.ids_file, l.config);
    } else {
      const std::string text = o.text.empty() ? "time flies like an arrow" : o.text;
      check_utf8(text, "text", "encoder");
      // The vocabulary: --vocab, else BERT's when the config's is BERT's, else the lesson's.
      Vocabulary vocab;
      try {
        vocab = !o.vocab.empty()                 ? read_vocabulary(o.vocab)
                : uses_bert_vocabulary(l.config) ? bert_vocabulary()
                                                 : lesson_vocabulary();
      } catch (const Error& e) {
        throw Error(e.kind(), e.function(), e.detail()).about("vocab");
      }
      const Encoding encoding = encode(text, vocab, o.add_special_tokens);
      if (encoding.ids.empty()) {
        throw Error(
            ErrorKind::bad_value, "encoder",
            "the text has no tokens: it is only spaces and control characters; give some words, "
            "e.g. --text \"time flies like an arrow\"")
            .about("text");
      }
      check_positions(encoding.ids.size(), l.config,
                      fmt::format("the {}text has {} tokens", o.text.empty() ? "default " : "",
                                  encoding.ids.size()),
                      "use a shorter --text");
      l.ids = {encoding.ids};
      l.tokens = encoding.tokens;
    }
  }
  load_weights_option(l, o.weights, context);
  context.exit_code = publish(lessons::run_encoder(l), o.output, context);
}
void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<EncoderCliOptions>();
  CLI::App* sub = add_lesson_command(app, "encoder");
  sub->add_option("--config", o->config,
                  "a Hugging Face config.json (data/configs/bert-base.json, tiny.json); "
                  "default: the built-in tiny config")
      ->check(not_empty_validator("--config", "bert-base"))
      ->option_text("FILE");
  sub->add_option("--d-model", o->d_model, "D, overrides hidden_size")
      ->check(size_validator())
      ->option_text("D");
  sub->add_option("--heads", o->heads, "H, overrides num_attention_heads")
      ->check(size_validator())
      ->option_text("H");
  sub->add_option("--d-ff", o->d_ff, "F, overrides intermediate_size")
      ->check(size_validator())
      ->option_text("F");
  sub->add_option("--layers", o->layers, "N, overrides num_hidden_layers")
      ->check(size_validator())
      ->option_text("N");
  sub->add_option("--max-positions", o->max_positions, "P, overrides max_position_embeddings")
      ->check(size_validator())
      ->option_text("P");
  sub->add_option("--norm", o->norm, "pre (the book, default) or post (the paper, BERT)")
      ->check(choice_validator("a placement", {"pre", "post"}))
      ->option_text("pre|post");
  sub->add_option("--text", o->text, "the sentence to encode (default: time flies like an arrow)")
      ->check(not_empty_validator("--text", "'time flies'"))
      ->option_text("TEXT");
  o->vocab_option =
      sub->add_option(
             "--vocab", o->vocab,
             "a vocab.txt for --text (default: BERT's when the config's vocabulary is, else the lesson's)")
          ->check(not_empty_validator("--vocab", "vocab.txt"))
          ->option_text("FILE");
  o->special_option = sub->add_flag("--add-special-tokens", o->add_special_tokens,
                                    "wrap --text in [CLS] ... [SEP]");
  sub->add_option("--pair", o->pair,
                  "with --pretrained, a second sentence: [CLS] text [SEP] pair [SEP]")
      ->check(not_empty_validator("--pair", "'fruit flies like a banana'"))
      ->option_text("TEXT");
  add_pretrained_option(*sub, o->pretrained)
      ->check(not_empty_validator("--pretrained", "bert-base-uncased"));
  sub->add_option("--ids", o->ids, "token ids instead of text, e.g. 2051,10029,2066")
      ->check(not_empty_validator("--ids", "2051,10029,2066"))
      ->option_text("N,N,...");
  sub->add_option("--ids-file", o->ids_file, "an int64 .npy of ids, shape (B, T)")
      ->check(not_empty_validator("--ids-file", "ids.npy"))
      ->option_text("FILE.npy");
  sub->add_flag("--no-embeddings", o->no_embeddings,
                "run only the layers, on hidden states (--input or random)");
  sub->add_option("--input", o->input,
                  "hidden states (B, T, D) as float32 .npy, with --no-embeddings")
      ->check(not_empty_validator("--input", "x.npy"))
      ->option_text("FILE.npy");
  sub->add_option("--seed", o->lesson.common.seed,
                  "random seed of the weights and the random input (default 0)")
      ->check(seed_validator())
      ->option_text("N");
  o->batch_option = sub->add_option("--batch", o->lesson.common.batch,
                                    "B of the random hidden states (--no-embeddings)")
                        ->check(size_validator())
                        ->option_text("B");
  o->seq_option = sub->add_option("--seq", o->lesson.common.seq,
                                  "T of the random hidden states (--no-embeddings)")
                      ->check(size_validator())
                      ->option_text("T");
  sub->add_option("--show-layer", o->lesson.show_layer,
                  "the layer shown step by step, from 0 (default 0)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::size_t value = 0;
            const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec != std::errc() || ptr != text.data() + text.size()) {
              return fmt::format(
                  "'{}' is not a layer: give a whole number from 0, e.g. --show-layer 1",
                  printable(text));
            }
            return {};
          },
          "N"))
      ->option_text("N");
  add_weights_options(*sub, o->weights, o->output);
  sub->add_option("--checkpoint", o->checkpoint,
                  "a trained model from attn train (a .safetensors, or a shipped one: reverse, "
                  "sort, histogram, previous-token); --text is then its letters")
      ->check(not_empty_validator("--checkpoint", "reverse"))
      ->option_text("NAME|FILE");
  add_ablate_option(*sub, o->ablate, "with --checkpoint");
  add_output_options(*sub, o->output);
  add_heatmap_option(*sub, o->output);
  door_callback(*sub, [o, sub, &context] { run(*o, *sub, context); });
}

const Registration kRegistration{"encoder", setup};

}  // namespace

}  // namespace attn::cli
