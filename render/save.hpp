// Every output of one run, all or nothing: the save directory (every step as <step>.npy plus
// manifest.json), the weights file, and the text or JSON on stdout.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "lesson.hpp"
#include "output.hpp"

namespace attn::render {

// Refuses, before anything is computed, outputs that cannot be written: an empty name, a save
// directory that exists and is not an attn save (or holds anything but one), that is or holds
// the current directory, or whose parent is missing or read-only; a weights file that is a
// directory, has another extension than .safetensors or .npz, or whose folder is missing or
// read-only. Errors are attn::Error about "save" or "save_weights", naming the user's path.
void check_outputs(const OutputOptions& options);

// The same checks for a checkpoint file (attn train --save-checkpoint): a .safetensors, not a
// folder, in a writable folder, and nothing there that attn did not write (file_mark.hpp).
// Errors are about "save_checkpoint".
void check_checkpoint_file(const std::string& path);
// The checks for a checkpoint folder (attn train --model gpt --save-checkpoint DIR): a folder that
// does not exist yet in a writable folder, or one attn wrote (its model.safetensors marked as
// attn's) holding nothing but `names`. Errors are about "save_checkpoint".
void check_checkpoint_folder(const std::string& path, const std::vector<std::string>& names);

// Writes the run's outputs: the save directory and the weights file are written beside their
// targets under temporary names, moved into place together, and only then is the text (or JSON)
// written to `out`. When anything fails (a full disk, a closed stdout, another run replacing the
// same save, SIGINT, SIGTERM or SIGHUP), the targets are left as they were and no temporary file
// or directory stays behind. A save directory is replaced only when it is one attn wrote and
// holds nothing else; a file is replaced only when attn wrote it (file_mark.hpp). `files` (at most
// kMostFiles) are written in the same transaction. Errors are attn::Error about "save",
// "save_weights", a file's subject or "stdout".
void write_outputs(const lessons::LessonRun& run, const OutputOptions& options, std::FILE* out,
                   const std::vector<FileOutput>& files = {});

}  // namespace attn::render
