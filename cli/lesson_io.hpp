// What a lesson subcommand reads and writes around the lesson itself: its input files (--input,
// --weights, --config), with a warning for NaN and infinities, and its outputs (render/), with
// the exit code.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "command.hpp"
#include "io/config.hpp"
#include "io/weights.hpp"
#include "lesson.hpp"
#include "options.hpp"
#include "output.hpp"
#include "train/trainer.hpp"
#include "trained.hpp"

namespace attn::cli {

// Reads --input into options.lesson.input and checks the sizes given beside it (--batch, --seq,
// --d-model) against the array's; NaN and infinities become a warning in `context`. Errors are
// about "input" (or the size that disagrees).
void load_lesson_input(LessonCliOptions& options, Context& context);

// Reads --weights (.safetensors or .npz; pickles refused); errors are about "weights".
StateDict load_weights_file(const std::string& path, Context& context);

// Reads --weights, when given, into a lesson's options (their `weights` and `weights_name`).
template <class LessonOptions>
void load_weights_option(LessonOptions& lesson, const std::string& path, Context& context) {
  if (path.empty()) return;
  lesson.weights = load_weights_file(path, context);
  lesson.weights_name = path;
}

// --config: a file, or the name of a shipped config (bert-base, tiny, with or without .json) when
// no such file exists. Errors are about "config".
EncoderConfig resolve_config(const std::string& path);

// --checkpoint: a bare name (letters, digits, '-' and '_': is_shipped_checkpoint_name) is always a
// shipped checkpoint (the files in share/attn/checkpoints beside the executable, from
// data/checkpoints), never a file; anything else is a path. Errors are about "checkpoint": a bare
// name not shipped lists the shipped names and says ./NAME reads a file.
std::string resolve_checkpoint(const std::string& name);
// A shipped checkpoint that is a Hugging Face folder (gpt-char), by its bare name; nullopt when
// there is none of that name.
std::optional<std::string> shipped_checkpoint_folder(const std::string& name);
// The shipped corpus of attn train --model gpt (share/attn/corpus/moby-dick.txt beside the
// executable, from data/corpus).
std::string shipped_corpus();

// Refuses text that is not UTF-8, naming the first bad byte; the error is about `subject` ("text").
void check_utf8(const std::string& text, const std::string& subject, std::string_view command);

// --ids: "2051,10029,2066" -> ids below `vocab_size` (0, [PAD], included); errors are about "ids".
std::vector<std::int64_t> parse_ids(const std::string& text, std::size_t vocab_size);

// A checkpoint of attn train, read whole: its task and sizes, and the model (an encoder with a head
// on every token, or an encoder-decoder: core/train/trainer.hpp).
struct TrainedCheckpoint {
  std::string name;  // as given to --checkpoint
  TrainConfig config;
  TrainedModel model;
};
// --checkpoint NAME|FILE, read as strictly as --weights (read_checkpoint: its attn_model and its
// tensors exactly those attn train writes); NaN and infinities become a warning in `context`.
// Errors are about "checkpoint".
TrainedCheckpoint load_checkpoint(const std::string& name, Context& context);
// The same, refusing an encoder-decoder: the lessons that read an encoder's attention.
TrainedCheckpoint load_encoder_checkpoint(const std::string& name, Context& context);
// The same, refusing an encoder with a head: `command` needs a decoder.
TrainedCheckpoint load_seq2seq_checkpoint(const std::string& name, std::string_view command,
                                          Context& context);
inline constexpr const char* kShippedSeq2Seq = "transformer-reverse";

// --text in the checkpoint's tokens (its task's example when empty): ids (1,T), T at most the
// checkpoint's; errors are about "text".
Ids checkpoint_ids(const TrainedCheckpoint& checkpoint, const std::string& text,
                   std::string_view command);

// --checkpoint, --text and --layer on the attention lessons: a trained layer's attention, on
// what it reads for the task's tokens.
struct CheckpointCliOptions {
  std::string checkpoint, text;
  std::size_t layer = 0;
  std::string pretrained, pair;  // --pretrained: a Hugging Face BERT folder (cli/pretrained.hpp)
};
void add_checkpoint_options(CLI::App& app, CheckpointCliOptions& options);
// Refuses --text and --layer without --checkpoint or --pretrained, and with --checkpoint every option a checkpoint
// replaces (`replaced`: given options by name, such as "--d-model"); errors name the option.
// Without --checkpoint (or with --pretrained, which pretrained_attention reads): nothing. With it: the trained layer's attention on what it reads for
// --text in the task's tokens; `prepare`, when given, may change the model first (--ablate).
std::optional<lessons::TrainedAttention> checkpoint_attention(
    const CLI::App& app, const CheckpointCliOptions& options,
    const std::vector<std::string>& replaced, std::string_view command, Context& context,
    const std::function<void(TrainedCheckpoint&)>& prepare = {});

// Writes the run (text or JSON on stdout, --save, --save-weights and `files`, all or nothing), then the
// warnings on one stderr line, and returns the exit code: kExitOk, or kExitCheckFailed when a
// check failed.
int publish(const lessons::LessonRun& run, const render::OutputOptions& output,
            const Context& context, const std::vector<render::FileOutput>& files = {});
// The warnings of `context`, when there are any, on one stderr line of `attn COMMAND`.
void print_warnings(std::string_view command, const Context& context);

// `attn NAME` for a lesson that takes the shared options and a heatmap, nothing of its own (lessons
// 01 and 02): its outputs checked, its input read, `run` run and published.
void add_plain_lesson_command(CLI::App& app, Context& context, std::string_view name,
                              lessons::LessonRun (*run)(const lessons::LessonOptions&));

}  // namespace attn::cli
