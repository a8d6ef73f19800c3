// attn man: attn's manual page (roff, section 1) on stdout, made at run time from the App tree
// (command_tree.hpp): every command as `attn --help` lists it, with its description and its
// options' help. Read it with `attn man | man -l -`; `cmake --install` puts it in share/man/man1.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "command.hpp"
#include "command_tree.hpp"
#include "door.hpp"
#include "version.hpp"

namespace attn::cli {

namespace {

// The code point of the UTF-8 sequence at text[at], and its length; a byte that starts no
// sequence reads as U+FFFD.
std::pair<char32_t, std::size_t> next_code_point(std::string_view text, std::size_t at) {
  const auto byte = static_cast<unsigned char>(text[at]);
  const std::size_t length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
  if (length == 1 || at + length > text.size()) return {byte < 0x80 ? byte : 0xfffd, 1};
  char32_t point = byte & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i)
    point = (point << 6) | (static_cast<unsigned char>(text[at + i]) & 0x3f);
  return {point, length};
}

// Text as roff reads it: a backslash as \e, a hyphen that starts a word (--seed, -inf) as the
// minus sign \-, anything past ASCII as \[uXXXX] (groff without preconv reads Latin-1), and \&
// before a . or ' that would start a line and read as a request.
std::string roff_text(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at];
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    line_start = c == '\n';
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      const bool starts_word =
          at == 0 || std::string_view(" \n\t(['`\"/=,-").find(text[at - 1]) != std::string::npos;
      out += starts_word ? "\\-" : "-";
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      const auto [point, length] = next_code_point(text, at);
      out += fmt::format("\\[u{:04X}]", static_cast<std::uint32_t>(point));
      at += length;
      continue;
    } else {
      out += c;
    }
    ++at;
  }
  return out;
}

// An option's name in bold, every hyphen a minus sign: \fB\-\-max\-memory\fR.
std::string roff_option(std::string_view name) {
  std::string out = "\\fB";
  for (char c : name)
    out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out + "\\fR";
}

// A .TP paragraph: the tag line, then the text.
std::string tagged(const std::string& tag, std::string_view text) {
  return ".TP\n" + tag + "\n" + roff_text(text) + "\n";
}

std::string option_tag(const OptionEntry& option) {
  std::string tag;
  for (const std::string& name : option.names)
    tag += (tag.empty() ? "" : ", ") + roff_option(name);
  if (!option.placeholder.empty()) tag += " \\fI" + roff_text(option.placeholder) + "\\fR";
  return tag;
}

bool is_help(const OptionEntry& option) {
  return option.names.back() == "--help";
}

// "teaches the transformer encoder in a terminal" of "attn teaches the transformer encoder in a
// terminal: each command ...": the NAME line's words.
std::string summary_of(std::string description) {
  if (description.starts_with("attn ")) description = description.substr(5);
  return description.substr(0, description.find_first_of(":.\n"));
}

std::string man_page(const CommandEntry& root) {
  std::string out = fmt::format(
      ".\\\" attn's manual page, made by `attn man` from attn's own commands.\n"
      ".TH ATTN 1 \"\" \"attn {}\" \"User Commands\"\n"
      ".\\\" Left-aligned and unhyphenated: option names and paths stay whole.\n"
      ".ad l\n.nh\n",
      attn_version());
  out += ".SH NAME\nattn \\- " + roff_text(summary_of(root.description)) + "\n";

  out += ".SH SYNOPSIS\n.B attn\n.I command\n.RI [ options ]\n.br\n.B attn\n";
  std::string root_options;
  for (const OptionEntry& option : root.options)
    root_options += (root_options.empty() ? "" : " | ") + roff_option(option.names.back());
  out += "[" + root_options + "]\n";

  out += ".SH DESCRIPTION\n" + roff_text(root.description) + "\n";
  out +=
      ".PP\nattn runs one command at a time; \\fBattn\\fR \\fIcommand\\fR \\fB\\-\\-help\\fR "
      "lists its options as this page does.\n";

  out += ".SH OPTIONS\n";
  for (const OptionEntry& option : root.options)
    out += tagged(option_tag(option), option.help);
  out += ".PP\nEvery command takes " + roff_option("-h") + ", " + roff_option("--help") + " too.\n";

  out += ".SH COMMANDS\n";
  for (const CommandEntry* command : every_command(root)) {
    if (command == &root) continue;
    std::string heading = command_words(*command);
    for (const OptionEntry& positional : command->positionals)
      heading += " " + (positional.placeholder.empty() ? positional.names.front()
                                                       : positional.placeholder);
    out += ".SS \"" + roff_text(heading) + "\"\n" + roff_text(command->description) + "\n";
    for (const OptionEntry& positional : command->positionals) {
      const std::string& name =
          positional.placeholder.empty() ? positional.names.front() : positional.placeholder;
      out += tagged("\\fI" + roff_text(name) + "\\fR", positional.help);
    }
    for (const OptionEntry& option : command->options)
      if (!is_help(option)) out += tagged(option_tag(option), option.help);
    if (!command->subcommands.empty()) {
      std::string subs;
      for (const CommandEntry& sub : command->subcommands)
        subs += (subs.empty() ? "" : ", ") + ("\\fB" + roff_text(sub.path.back()) + "\\fR");
      out += ".PP\nSubcommands: " + subs + ".\n";
    }
  }

  out += ".SH EXIT STATUS\n";
  out += tagged(fmt::format(".B {}", kExitOk), "success; also after --help and --version");
  out += tagged(fmt::format(".B {}", kExitCheckFailed),
                "a check failed: a lesson's check of its own results, or an exercise's test "
                "under attn check or attn grade; the output is still printed");
  out += tagged(fmt::format(".B {}", kExitBadInput),
                "bad usage or bad input: nothing on standard output, and one line on standard "
                "error that names the problem and the fix");

  out += ".SH ENVIRONMENT\n";
  out += tagged(".B ATTN_MAX_MEMORY",
                "the memory limit when --max-memory is not given, e.g. 4G (default: half this "
                "machine's memory)");
  out += tagged(".B NO_COLOR",
                "when set and not empty, --color auto prints no colour (as under TERM=dumb, or "
                "when standard output is not a terminal)");
  out += tagged(".B ATTN_GEMM",
                "the library of the large matrix products: auto (default), measure, openblas or "
                "onednn");
  out += tagged(".B ATTN_GEMM_CACHE",
                "the file that keeps the timing that picks that library (default "
                "$XDG_CACHE_HOME/attn/gemm-probe.tsv, else ~/.cache/attn/gemm-probe.tsv)");
  out += tagged(".B HF_HUB_CACHE, HF_HOME",
                "where --pretrained looks up a model's name: $HF_HUB_CACHE, else $HF_HOME/hub, "
                "else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub");
  return out;
}

void setup(CLI::App& app, Context& context) {
  CLI::App* sub = app.add_subcommand(
      "man", "attn's manual page (roff), made from attn's own commands: attn man | man -l -");
  door_callback(*sub, [&app, &context] {
    const std::string page = man_page(command_tree(app));
    std::fwrite(page.data(), 1, page.size(), stdout);
    context.exit_code = kExitOk;
  });
}

const Registration kRegistration{"man", setup};

}  // namespace

}  // namespace attn::cli
