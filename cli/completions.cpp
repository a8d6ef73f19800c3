// attn completions bash|zsh|fish: a completion script for that shell, made at run time from the
// App tree (command_tree.hpp), so it completes exactly the commands, subcommands, options and
// choices attn has. Each script finds the command being completed by walking the words before the
// cursor: a word that names a subcommand of the command so far goes down a level, an option that
// takes a value skips the word after it, and any other word is a positional argument.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "command.hpp"
#include "command_tree.hpp"
#include "door.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

// A name the scripts write unquoted (a command, an option, a choice): attn's names are plain
// words, and one that is not would need quoting this generator does not do.
const std::string& plain(const std::string& word) {
  const bool ok = !word.empty() && word.find_first_not_of(
                                       "abcdefghijklmnopqrstuvwxyz"
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789._+-") == std::string::npos;
  if (!ok)
    throw Error(ErrorKind::internal, "completions",
                fmt::format("'{}' is not a plain word the completion scripts can hold", word));
  return word;
}

std::string joined(const std::vector<std::string>& words, std::string_view separator = " ") {
  std::string out;
  for (const std::string& word : words)
    out += (out.empty() ? "" : std::string(separator)) + plain(word);
  return out;
}

std::vector<std::string> subcommand_names(const CommandEntry& command) {
  std::vector<std::string> names;
  for (const CommandEntry& sub : command.subcommands)
    names.push_back(sub.path.back());
  return names;
}

std::vector<std::string> option_names(const CommandEntry& command) {
  std::vector<std::string> names;
  for (const OptionEntry& option : command.options)
    names.insert(names.end(), option.names.begin(), option.names.end());
  return names;
}

// A text in sh's single quotes, for zsh.
std::string sh_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A text in fish's single quotes, where \ and ' are escaped with a backslash.
std::string fish_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// --- bash: `complete -F _attn attn`, with tables as case statements.

std::string bash_script(const CommandEntry& root) {
  const std::vector<const CommandEntry*> commands = every_command(root);
  auto label = [](const CommandEntry& c) { return "\"" + joined(c.path) + "\""; };
  std::string out =
      "# bash completion for attn, made by `attn completions bash` from attn's own commands.\n"
      "# Load it with `source <(attn completions bash)`, or install it as\n"
      "# share/bash-completion/completions/attn.\n\n";

  out += "# The subcommands of the command $1 (\"\" is attn itself).\n_attn_subcommands() {\n";
  out += "  case \"$1\" in\n";
  for (const CommandEntry* c : commands)
    if (!c->subcommands.empty())
      out += fmt::format("    {}) echo \"{}\" ;;\n", label(*c), joined(subcommand_names(*c)));
  out += "  esac\n}\n\n";

  out += "# The options of the command $1.\n_attn_options() {\n  case \"$1\" in\n";
  for (const CommandEntry* c : commands)
    out += fmt::format("    {}) echo \"{}\" ;;\n", label(*c), joined(option_names(*c)));
  out += "  esac\n}\n\n";

  out +=
      "# What the option $2 of the command $1 takes: nothing for a flag, \"words W...\" for one of\n"
      "# those words, \"file\", \"dir\", or \"text\" for anything else.\n"
      "_attn_value() {\n  case \"$1 $2\" in\n";
  for (const CommandEntry* c : commands) {
    std::vector<std::string> files, folders, texts;
    for (const OptionEntry& o : c->options) {
      std::vector<std::string> patterns;
      for (const std::string& name : o.names)
        patterns.push_back(fmt::format("\"{} {}\"", joined(c->path), plain(name)));
      std::vector<std::string>* group = o.value == ValueKind::file     ? &files
                                        : o.value == ValueKind::folder ? &folders
                                        : o.value == ValueKind::text   ? &texts
                                                                       : nullptr;
      if (group != nullptr) group->insert(group->end(), patterns.begin(), patterns.end());
      if (o.value == ValueKind::choice) {
        std::string pattern;
        for (const std::string& p : patterns)
          pattern += (pattern.empty() ? "" : "|") + p;
        out += fmt::format("    {}) echo \"words {}\" ;;\n", pattern, joined(o.choices));
      }
    }
    for (const auto& [group, kind] :
         {std::pair{&files, "file"}, std::pair{&folders, "dir"}, std::pair{&texts, "text"}}) {
      if (group->empty()) continue;
      std::string pattern;
      for (const std::string& p : *group)
        pattern += (pattern.empty() ? "" : "|") + p;
      out += fmt::format("    {}) echo {} ;;\n", pattern, kind);
    }
  }
  out += "  esac\n}\n\n";

  out +=
      "# The words the positional argument number $2 (from 0) of the command $1 takes, when attn\n"
      "# lists them.\n_attn_positional_words() {\n  case \"$1 $2\" in\n";
  for (const CommandEntry* c : commands) {
    for (std::size_t i = 0; i < c->positionals.size(); ++i) {
      if (c->positionals[i].choices.empty()) continue;
      out += fmt::format("    \"{} {}\") echo \"{}\" ;;\n", joined(c->path), i,
                         joined(c->positionals[i].choices));
    }
  }
  out += "  esac\n}\n\n";

  out += R"bash(_attn() {
  local cur="${COMP_WORDS[COMP_CWORD]}" command="" value="" positionals=0 word i
  COMPREPLY=()
  # The command being completed, from the words before the cursor. bash splits --opt=value into
  # --opt, = and value.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    if [[ -n "$value" ]]; then
      [[ "$word" == "=" ]] || value=""
      continue
    fi
    case "$word" in
      -*=*) ;;
      -*) value="$(_attn_value "$command" "$word")" ;;
      *)
        if [[ " $(_attn_subcommands "$command") " == *" $word "* ]]; then
          command="${command:+$command }$word"
          positionals=0
        else
          positionals=$((positionals + 1))
        fi
        ;;
    esac
  done
  if [[ -n "$value" ]]; then
    [[ "$cur" == "=" ]] && cur=""
    case "$value" in
      words\ *) COMPREPLY=($(compgen -W "${value#words }" -- "$cur")) ;;
      file)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        ;;
      dir)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        ;;
    esac
    return 0
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_attn_options "$command")" -- "$cur"))
    return 0
  fi
  COMPREPLY=($(compgen -W "$(_attn_subcommands "$command") $(_attn_positional_words "$command" "$positionals")" -- "$cur"))
}

complete -F _attn attn
)bash";
  return out;
}

// --- zsh: a function per command, _arguments for its options, _describe for its subcommands.

std::string zsh_function(const CommandEntry& c) {
  std::string name = "_attn";
  for (const std::string& word : c.path)
    name += "__" + plain(word);
  return name;
}

// An explanation in _arguments' [...], where \, [ and ] are escaped.
std::string zsh_explanation(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '[' || c == ']') out += '\\';
    out += c;
  }
  return out;
}

// A message or description between _arguments' colons, where \ and : are escaped.
std::string zsh_message(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == ':') out += '\\';
    out += c;
  }
  return out;
}

std::string zsh_action(const OptionEntry& o) {
  switch (o.value) {
    case ValueKind::choice:
      return "(" + joined(o.choices) + ")";
    case ValueKind::file:
      return "_files";
    case ValueKind::folder:
      return "_files -/";
    case ValueKind::none:
    case ValueKind::text:
      break;
  }
  return " ";  // a value of any text: nothing to offer, the message shows what it is
}

std::string zsh_option_spec(const OptionEntry& o) {
  const bool stops = o.names.back() == "--help" || o.names.back() == "--version";
  std::string prefix = stops ? "(- *)" : o.repeatable ? "*" : "";
  if (!stops && !o.repeatable && o.names.size() > 1) prefix = "(" + joined(o.names) + ")";
  std::string names =
      o.names.size() == 1 ? plain(o.names.front()) : "{" + joined(o.names, ",") + "}";
  std::string rest = "[" + zsh_explanation(o.help) + "]";
  if (o.value != ValueKind::none) {
    const std::string message = o.placeholder.empty() ? "value" : o.placeholder;
    rest = "=" + rest + ":" + zsh_message(message) + ":" + zsh_action(o);
  }
  // Only the explanation and what follows it are quoted, so that {-h,--help} expands.
  return (prefix.empty() ? "" : sh_quoted(prefix)) + names + sh_quoted(rest);
}

std::string zsh_script(const CommandEntry& root) {
  std::string out =
      "#compdef attn\n"
      "# zsh completion for attn, made by `attn completions zsh` from attn's own commands.\n"
      "# Install it as _attn in a folder of $fpath, or load it with\n"
      "# `source <(attn completions zsh)` after compinit.\n";
  for (const CommandEntry* c : every_command(root)) {
    std::vector<std::string> specs;
    for (const OptionEntry& o : c->options)
      specs.push_back(zsh_option_spec(o));
    for (std::size_t i = 0; i < c->positionals.size(); ++i) {
      const OptionEntry& p = c->positionals[i];
      const std::string message = p.placeholder.empty() ? p.names.front() : p.placeholder;
      specs.push_back(
          sh_quoted(fmt::format("{}:{}:{}", i + 1, zsh_message(message), zsh_action(p))));
    }
    out += "\n" + zsh_function(*c) + "() {\n";
    if (c->subcommands.empty()) {
      out += "  _arguments";
      for (const std::string& spec : specs)
        out += " \\\n    " + spec;
      out += "\n}\n";
      continue;
    }
    const std::string words = command_words(*c);
    std::string context = words;
    for (char& ch : context)
      if (ch == ' ') ch = '-';
    out += "  local curcontext=\"$curcontext\" state state_descr line ret=1\n";
    out += "  typeset -A opt_args\n";
    out += "  _arguments -C";
    for (const std::string& spec : specs)
      out += " \\\n    " + spec;
    out += " \\\n    '1: :->command' \\\n    '*:: :->argument' && ret=0\n";
    out += "  case $state in\n    command)\n      local -a commands=(\n";
    for (const CommandEntry& sub : c->subcommands)
      out += "        " + sh_quoted(plain(sub.path.back()) + ":" + sub.description) + "\n";
    out += "      )\n";
    out += fmt::format("      _describe -t commands {} commands && ret=0\n      ;;\n",
                       sh_quoted(words + " command"));
    out += "    argument)\n";
    out += fmt::format("      curcontext=\"${{curcontext%:*:*}}:{}-$words[1]:\"\n", context);
    out += "      case $words[1] in\n";
    for (const CommandEntry& sub : c->subcommands)
      out += fmt::format("        {}) {} && ret=0 ;;\n", plain(sub.path.back()), zsh_function(sub));
    out += "      esac\n      ;;\n  esac\n  return ret\n}\n";
  }
  out +=
      "\n# Autoloaded from $fpath, this file is the body of _attn; sourced, it registers _attn.\n"
      "if [ \"$funcstack[1]\" = \"_attn\" ]; then\n"
      "  _attn \"$@\"\n"
      "else\n"
      "  compdef _attn attn\n"
      "fi\n";
  return out;
}

// --- fish: `complete -c attn` lines, each conditioned on the command being completed.

std::string fish_script(const CommandEntry& root) {
  const std::vector<const CommandEntry*> commands = every_command(root);
  std::string out =
      "# fish completion for attn, made by `attn completions fish` from attn's own commands.\n"
      "# Install it as attn.fish in a folder of $fish_complete_path, or load it with\n"
      "# `attn completions fish | source`.\n\n";

  out +=
      "# The subcommands of the command $argv (nothing: attn itself).\nfunction __attn_subcommands\n";
  out += "    switch \"$argv\"\n";
  for (const CommandEntry* c : commands)
    if (!c->subcommands.empty())
      out += fmt::format("        case '{}'\n            echo {}\n", joined(c->path),
                         joined(subcommand_names(*c)));
  out += "    end\nend\n\n";

  out += "# Whether the option $argv[2] of the command $argv[1] takes a value.\n";
  out += "function __attn_takes_value\n    switch \"$argv[1] $argv[2]\"\n";
  for (const CommandEntry* c : commands) {
    std::string cases;
    for (const OptionEntry& o : c->options)
      if (o.value != ValueKind::none)
        for (const std::string& name : o.names)
          cases += fmt::format(" \\\n                '{} {}'", joined(c->path), plain(name));
    if (!cases.empty()) out += "        case" + cases + "\n            return 0\n";
  }
  out += "    end\n    return 1\nend\n\n";

  out +=
      R"fish(# The command being completed ("", "view", "assignments release") on one line, then how many
# positional arguments it has before the cursor.
function __attn_command
    set -l command
    set -l positionals 0
    set -l skip 0
    for word in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $word
            case '-*=*'
            case '-*'
                __attn_takes_value "$command" $word; and set skip 1
            case '*'
                if contains -- $word (string split ' ' -- (__attn_subcommands $command))
                    set -a command $word
                    set positionals 0
                else
                    set positionals (math $positionals + 1)
                end
        end
    end
    echo "$command"
    echo $positionals
end

# Whether the command being completed is $argv[2..-1], with $argv[1] positional arguments so far
# ("any": however many).
function __attn_at
    set -l now (__attn_command)
    test "$now[1]" = "$argv[2..-1]"; and begin
        test $argv[1] = any; or test $argv[1] = $now[2]
    end
end

complete -c attn -f
)fish";
  for (const CommandEntry* c : commands) {
    const std::string at = fish_quoted("__attn_at any " + joined(c->path));
    out += fmt::format("\n# {}\n", command_words(*c));
    for (const CommandEntry& sub : c->subcommands)
      out += fmt::format("complete -c attn -n {} -a {} -d {}\n", at, plain(sub.path.back()),
                         fish_quoted(sub.description));
    for (const OptionEntry& o : c->options) {
      std::string line = "complete -c attn -n " + at;
      for (const std::string& name : o.names)
        line += (name.starts_with("--") ? " -l " + plain(name).substr(2)
                                        : " -s " + plain(name).substr(1));
      switch (o.value) {
        case ValueKind::none:
          break;
        case ValueKind::choice:
          line += " -x -a " + fish_quoted(joined(o.choices));
          break;
        case ValueKind::file:
          line += " -r -F";
          break;
        case ValueKind::folder:
          line += " -x -a '(__fish_complete_directories)'";
          break;
        case ValueKind::text:
          line += " -x";
          break;
      }
      out += line + " -d " + fish_quoted(o.help) + "\n";
    }
    for (std::size_t i = 0; i < c->positionals.size(); ++i) {
      const OptionEntry& p = c->positionals[i];
      if (p.choices.empty()) continue;
      out += fmt::format("complete -c attn -n {} -a {} -d {}\n",
                         fish_quoted(fmt::format("__attn_at {} {}", i, joined(c->path))),
                         fish_quoted(joined(p.choices)), fish_quoted(p.help));
    }
  }
  return out;
}

void setup(CLI::App& app, Context& context) {
  auto shell = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "completions",
      "a completion script for bash, zsh or fish, made from attn's own commands and options");
  sub->add_option("shell", *shell, "bash, zsh or fish")
      ->check(choice_validator("a shell attn completes", {"bash", "zsh", "fish"}))
      ->option_text("SHELL");
  sub->footer(
      "Examples:\n"
      "  source <(attn completions bash)      # bash, this session; or in ~/.bashrc\n"
      "  source <(attn completions zsh)       # zsh, after compinit\n"
      "  attn completions fish | source       # fish");
  door_callback(*sub, [&app, shell, &context] {
    if (shell->empty())
      throw Error(ErrorKind::bad_value, "completions",
                  "give a shell, e.g. `attn completions bash`; the shells: bash, zsh or fish");
    const CommandEntry root = command_tree(app);
    const std::string script = *shell == "bash"  ? bash_script(root)
                               : *shell == "zsh" ? zsh_script(root)
                                                 : fish_script(root);
    std::fwrite(script.data(), 1, script.size(), stdout);
    context.exit_code = kExitOk;
  });
}

const Registration kRegistration{"completions", setup};

}  // namespace

}  // namespace attn::cli
