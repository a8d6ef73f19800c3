// What a lesson subcommand reads and writes around the lesson itself: its input files (--input,
// --weights, --config), with a warning for NaN and infinities, and its outputs (render/), with
// the exit code.
#pragma once

#include <string>

#include "command.hpp"
#include "config.hpp"
#include "lesson.hpp"
#include "options.hpp"
#include "output.hpp"
#include "weights.hpp"

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

// --checkpoint: a file, or the name of a shipped checkpoint (reverse, sort, ...: the files in
// share/attn/checkpoints beside the executable, from data/checkpoints). Errors are about
// "checkpoint" and list the shipped names.
std::string resolve_checkpoint(const std::string& name);

// Refuses the outputs that cannot be written (render::check_outputs), before a lesson computes.
void check_outputs(const render::OutputOptions& output);

// Writes the run (text or JSON on stdout, --save, --save-weights, all or nothing), then the
// warnings on one stderr line, and returns the exit code: kExitOk, or kExitCheckFailed when a
// check failed.
int publish(const lessons::LessonRun& run, const render::OutputOptions& output,
            const Context& context);

}  // namespace attn::cli
