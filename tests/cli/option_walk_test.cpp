// Every option of every command, read from the help attn prints (the commands from `attn
// --help`, each command's options from `attn <command> --help`, subcommands of subcommands such
// as `assignments release` too): an option that takes a value refuses an empty one. An empty
// value must never read as "not given" and run the default instead.
#include <cstddef>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "run_attn.hpp"

using attn::testing::check_refused;
using attn::testing::run_attn;

namespace {

// The lines of `section` ("Subcommands:", "Options:", "Positionals:") in a help text: from the
// line after its title to the next blank line.
std::vector<std::string> section_lines(const std::string& help, const std::string& section) {
  std::vector<std::string> lines;
  const std::size_t title = help.find("\n" + section + "\n");
  if (title == std::string::npos) return lines;
  std::size_t at = title + section.size() + 2;
  while (at < help.size()) {
    const std::size_t end = std::min(help.find('\n', at), help.size());
    const std::string line = help.substr(at, end - at);
    if (line.empty()) break;
    lines.push_back(line);
    at = end + 1;
  }
  return lines;
}

// The first word of each entry of a section ("  name  description", not a wrapped line).
std::vector<std::string> entries(const std::string& help, const std::string& section) {
  static const std::regex entry(R"(^  ([a-z][a-z-]*)\b.*)");
  std::vector<std::string> names;
  for (const std::string& line : section_lines(help, section)) {
    std::smatch m;
    if (std::regex_match(line, m, entry)) names.push_back(m[1].str());
  }
  return names;
}

struct ValueOption {
  std::string name;         // "--text"
  std::string placeholder;  // "TEXT"
};

// The options of a help text that take a value: "  --text TEXT  ..." (a flag has no placeholder).
std::vector<ValueOption> value_options(const std::string& help) {
  static const std::regex option(R"(^  (?:-[A-Za-z],)?(--[a-z0-9-]+) (\S+)(?:\s.*)?$)");
  std::vector<ValueOption> out;
  for (const std::string& line : section_lines(help, "Options:")) {
    std::smatch m;
    if (std::regex_match(line, m, option)) out.push_back({m[1].str(), m[2].str()});
  }
  return out;
}

// A command with the arguments its positionals need, e.g. {"view", "head"}.
using Command = std::vector<std::string>;

// A valid value for each positional a command requires: the walk fails on a positional missing
// here, so that a new one is added rather than skipped.
const std::map<std::string, std::string>& positional_values() {
  static const std::map<std::string, std::string> values = {
      {"view kind", "head"},       {"summary model", "encoder"},      {"hint lesson", "softmax"},
      {"check lesson", "softmax"}, {"completions shell", "bash"},     {"watch lesson", "softmax"},
      {"reset lesson", "softmax"}, {"assignments add folder", "mine"}};
  return values;
}

std::string joined(const Command& command) {
  std::string out;
  for (const std::string& word : command)
    out += (out.empty() ? "" : " ") + word;
  return out;
}

// Every command and subcommand, from the help.
std::vector<Command> every_command() {
  std::vector<Command> commands;
  const auto top = run_attn({"--help"});
  REQUIRE(top.exit_code == 0);
  std::vector<Command> pending;
  for (const std::string& name : entries(top.out, "Subcommands:"))
    pending.push_back({name});
  while (!pending.empty()) {
    const Command command = pending.back();
    pending.pop_back();
    std::vector<std::string> args = command;
    args.push_back("--help");
    const auto help = run_attn(args);
    INFO(joined(command));
    REQUIRE(help.exit_code == 0);
    const std::vector<std::string> subcommands = entries(help.out, "Subcommands:");
    for (const std::string& sub : subcommands) {
      Command deeper = command;
      deeper.push_back(sub);
      pending.push_back(deeper);
    }
    if (subcommands.empty()) commands.push_back(command);
  }
  return commands;
}

}  // namespace

TEST_CASE("every option of every command that takes a value refuses an empty one, naming itself",
          "[cli][bad-input]") {
  const std::vector<Command> commands = every_command();
  // The walk reaches the lessons, the course's commands and the two levels of assignments.
  CHECK(commands.size() >= 20);
  std::size_t walked = 0;
  bool saw_release = false;
  for (const Command& command : commands) {
    std::vector<std::string> help_args = command;
    help_args.push_back("--help");
    const std::string help = run_attn(help_args).out;
    Command prefix = command;
    for (const std::string& positional : entries(help, "Positionals:")) {
      const std::string key = joined(command) + " " + positional;
      INFO("a positional without a value in positional_values(): " << key);
      REQUIRE(positional_values().count(key) == 1);
      prefix.push_back(positional_values().at(key));
    }
    saw_release = saw_release || joined(command) == "assignments release";
    for (const ValueOption& option : value_options(help)) {
      std::vector<std::string> args = prefix;
      args.push_back(option.name);
      args.push_back("");
      const auto run = run_attn(args);
      INFO("attn " << joined(prefix) << " " << option.name << " ''");
      check_refused(run, option.name, 1.5 * (1 << 30));
      ++walked;
    }
  }
  CHECK(saw_release);
  // Every command's options: hundreds, not a help text that stopped parsing.
  CHECK(walked >= 250);
}

TEST_CASE("an empty --text is refused by generate and on a checkpoint, never the default example",
          "[cli][bad-input]") {
  const std::vector<std::vector<std::string>> runs = {
      {"generate", "--text", ""},
      {"cross-attention", "--checkpoint", "transformer-reverse", "--text", ""},
      {"attention", "--checkpoint", "reverse", "--text", ""},
      {"encoder", "--checkpoint", "reverse", "--text", ""},
      {"view", "head", "--checkpoint", "reverse", "--text", ""}};
  for (const auto& args : runs) {
    const auto run = run_attn(args);
    INFO("attn " << joined(args));
    check_refused(run, "--text: the value is empty: give one, e.g. --text ", 1 << 30);
  }
}
