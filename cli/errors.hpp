// The one line on stderr for every way a command can fail, and its exit code. attn::Error has a
// kind and a subject (core/base/error.hpp); the subject is named like the option it comes from, in
// snake case ("save_weights" is --save-weights), and the CLI prints that option when the
// subcommand has it. A too_large error's advice names the options that set the sizes driving it.
// CLI11's parse errors are told apart by their type; from CLI11's text only the option name is
// taken, never its English.
#pragma once

#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "base/error.hpp"

namespace attn::cli {

// "attn dot-product" for the subcommand `sub`, "attn" for none.
std::string command_label(const CLI::App* sub);

// The option an error about `subject` is about on `sub`, e.g. "--save-weights", or "" when `sub`
// has none. "tokens" is whichever of --text, --ids, --ids-file and --seq was given.
std::string option_for(const CLI::App* sub, const std::string& subject);

// The message of an attn::Error as attn prints it after "attn <command>: ": the option first when
// there is one, and for too_large the options to lower.
std::string error_message(const Error& error, const CLI::App* sub);

// The message for a CLI11 parse error of `sub` (null: attn itself).
std::string parse_error_message(const CLI::App& app, const CLI::App* sub,
                                const CLI::ParseError& error);

// Prints "<label>: <message>" as one line (newlines become spaces, control characters are
// escaped) and returns kExitBadInput.
int fail(const std::string& label, const std::string& message);

}  // namespace attn::cli
