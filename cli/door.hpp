// The one door every command goes through. In its setup a command declares what it writes
// (add_output, and the shared --save and --save-weights of options.hpp) and sets its callback
// with door_callback. Before the command's own code runs, the door checks every output that was
// given: its name, its folder, and that nothing is there attn did not write (render/file_mark.hpp:
// an attn checkpoint, picture, page, report or save may be replaced; anything else is refused,
// exit 2). After it, the door holds a command that takes --max-memory to its promise: the
// command must have checked its memory plan (core/base/budget.hpp check_budget) before it
// succeeded. What the commands read passes through core/io/file_io.hpp's InputFile (a regular
// file, within the memory limit); their outputs through render/save.hpp's write_outputs or
// render/image_file.hpp's write_file_whole (all or nothing); their errors through errors.hpp,
// which names the option each one is about. attn::cli::run refuses to start when a subcommand's
// callback was not set here, so a new command cannot walk around the door;
// tests/cli/door_walk_test.cpp walks every command and option through it.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace attn::cli {

// What an output option writes, which decides the names it takes and what it may replace.
enum class OutputKind {
  checkpoint,  // a .safetensors checkpoint (attn train --save-checkpoint)
  picture,     // an .svg or .png
  page,        // an .html page, or an .svg or .png picture
};

// Adds the output option `name` (e.g. "--export") to `sub`, writing to `path`: refused when
// empty, and checked by the door when given. Returns the option, to set its text or exclusions.
CLI::Option* add_output(CLI::App& sub, const std::string& name, std::string& path, OutputKind kind,
                        const std::string& help);

// Declares an output option added elsewhere (--save, --save-weights, attn grade --output):
// `check` runs when the option is given, before the command computes.
void declare_output(CLI::App& sub, const std::string& name, std::function<void()> check);

// Sets `sub`'s callback to `body`, behind the door.
void door_callback(CLI::App& sub, std::function<void()> body);

// Throws an internal attn::Error naming any subcommand of `app` whose callback is not the
// door's.
void check_every_command_has_a_door(const CLI::App& app);

}  // namespace attn::cli
