// attn's commands and options as data, read from the CLI11 App tree at run time: what the shell
// completions (cli/completions.cpp) and the man page (cli/man.cpp) are made from, so that they
// hold exactly what `attn --help` and each command's --help list, in the same order.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace attn::cli {

// What an option's value is, for completing it.
enum class ValueKind {
  none,    // a flag: no value
  text,    // anything: a number, a name, text
  choice,  // one of `choices`
  file,    // a file name (the placeholder says FILE)
  folder,  // a folder name (the placeholder says DIR)
};

struct OptionEntry {
  std::vector<std::string> names;  // {"-h", "--help"}; a positional: {"kind"}
  std::string placeholder;         // "FILE", "none|causal"; "" for a flag
  std::string help;
  ValueKind value = ValueKind::none;
  std::vector<std::string> choices;  // the words of a choice, in the validator's order
  bool repeatable = false;           // may be given more than once (attn grade --lesson)
};

struct CommandEntry {
  std::vector<std::string> path;  // {} for attn itself, {"assignments", "release"}
  std::string description;
  std::vector<OptionEntry> options;  // as --help lists them
  std::vector<OptionEntry> positionals;
  std::vector<CommandEntry> subcommands;  // as --help lists them
};

// attn and every command below it, from the root of the App tree `app` belongs to.
CommandEntry command_tree(CLI::App& app);

// Every command of the tree, depth first, each before its subcommands (attn itself first).
std::vector<const CommandEntry*> every_command(const CommandEntry& root);

// "attn assignments release"
std::string command_words(const CommandEntry& command);

}  // namespace attn::cli
