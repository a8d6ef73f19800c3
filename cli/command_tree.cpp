#include "command_tree.hpp"

#include "options.hpp"

namespace attn::cli {

namespace {

OptionEntry option_entry(CLI::Option& option) {
  OptionEntry entry;
  if (option.get_positional()) {
    entry.names = {option.get_name()};
  } else {
    for (const std::string& name : option.get_snames())
      entry.names.push_back("-" + name);
    for (const std::string& name : option.get_lnames())
      entry.names.push_back("--" + name);
  }
  entry.help = option.get_description();
  if (option.get_items_expected_max() == 0) return entry;  // a flag
  // As --help shows it: the option's text, else its type's name.
  entry.placeholder =
      option.get_option_text().empty() ? option.get_type_name() : option.get_option_text();
  entry.repeatable = option.get_expected_max() > 1;
  entry.choices = offered_words(option);
  if (!entry.choices.empty()) {
    entry.value = ValueKind::choice;
  } else if (entry.placeholder.find("DIR") != std::string::npos) {
    entry.value = ValueKind::folder;
  } else if (entry.placeholder.find("FILE") != std::string::npos) {
    entry.value = ValueKind::file;
  } else {
    entry.value = ValueKind::text;
  }
  return entry;
}

CommandEntry command_entry(CLI::App& app, std::vector<std::string> path) {
  CommandEntry entry;
  entry.path = path;
  entry.description = app.get_description();
  for (CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // hidden from --help
    (option->get_positional() && !option->nonpositional() ? entry.positionals : entry.options)
        .push_back(option_entry(*option));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    std::vector<std::string> sub_path = path;
    sub_path.push_back(sub->get_name());
    entry.subcommands.push_back(command_entry(*sub, std::move(sub_path)));
  }
  return entry;
}

void collect(const CommandEntry& command, std::vector<const CommandEntry*>& out) {
  out.push_back(&command);
  for (const CommandEntry& sub : command.subcommands)
    collect(sub, out);
}

}  // namespace

CommandEntry command_tree(CLI::App& app) {
  CLI::App* root = &app;
  while (root->get_parent() != nullptr)
    root = root->get_parent();
  return command_entry(*root, {});
}

std::vector<const CommandEntry*> every_command(const CommandEntry& root) {
  std::vector<const CommandEntry*> out;
  collect(root, out);
  return out;
}

std::string command_words(const CommandEntry& command) {
  std::string words = "attn";
  for (const std::string& word : command.path)
    words += " " + word;
  return words;
}

}  // namespace attn::cli
