// The attn command line: every subcommand registered on one CLI11 app, and CLI11's and attn's
// errors turned into one line on stderr with exit code 2.
#include <algorithm>
#include <cstdio>
#include <new>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "app.hpp"
#include "common.hpp"
#include "error.hpp"
#include "matmul.hpp"

namespace {

// Levenshtein distance, for "did you mean" on a mistyped lesson.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The closest of `candidates` to `word` within two edits, or "" when none is that close.
std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 3;
  for (const std::string& candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) best_distance = d, best = candidate;
  }
  return best;
}

std::string did_you_mean(const std::string& suggestion) {
  return suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion);
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// Every long option of `app`, spelt "--name".
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& name : opt->get_lnames())
      names.push_back("--" + name);
  }
  return names;
}

std::string unknown_command_message(const CLI::App& app, std::string_view word) {
  return fmt::format(
      "unknown command '{}'{}: `attn list` shows the lessons, `attn --help` the commands", word,
      did_you_mean(closest(word, command_names(app))));
}

// A value to show in "e.g. --seq 8" when an option is missing its value.
std::string example_value(std::string_view option) {
  static const std::vector<std::pair<std::string_view, std::string_view>> examples = {
      {"--seed", "42"},
      {"--batch", "2"},
      {"--seq", "8"},
      {"--d-model", "16"},
      {"--heads", "2"},
      {"--d-ff", "24"},
      {"--input", "x.npy"},
      {"--save", "out"},
      {"--format", "json"},
      {"--precision", "2"},
      {"--color", "never"},
      {"--temperature", "0.5"},
      {"--mask", "causal"},
      {"--config", "data/configs/tiny.json"},
      {"--text", "'hello world'"},
      {"--weights", "w.safetensors"}};
  for (const auto& [name, value] : examples) {
    if (name == option) return std::string(value);
  }
  return "VALUE";
}

// The option names in a CLI11 message, e.g. "--seq" from "--seq: ..." or "Could not convert: --seq
// = x".
std::string option_in(const std::string& message) {
  static const std::regex name(R"(--[A-Za-z0-9][A-Za-z0-9-]*)");
  std::smatch m;
  return std::regex_search(message, m, name) ? m.str() : std::string();
}

// What to lower when a run is too big: the size options the user gave, or --input.
std::string size_fix(const CLI::App* sub) {
  if (sub == nullptr) return "use smaller sizes";
  if (const CLI::Option* input = sub->get_option_no_throw("--input"); input && input->count() > 0) {
    return "pass a smaller --input array";
  }
  std::vector<std::string> given, all;
  for (const char* name : {"--seq", "--batch", "--d-model", "--d-ff", "--heads"}) {
    if (const CLI::Option* opt = sub->get_option_no_throw(name)) {
      all.push_back(name);
      if (opt->count() > 0) given.push_back(name);
    }
  }
  const std::vector<std::string>& names = given.empty() ? all : given;
  if (names.empty()) return "use smaller sizes";
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += i + 1 == names.size() ? " or " : ", ";
    list += names[i];
  }
  return "lower " + list;
}

// One line for an argument CLI11 could not place: an unknown option or a stray word.
std::string extras_message(const CLI::App& app, const CLI::App* sub, const std::string& where) {
  std::vector<std::string> extras = sub != nullptr ? sub->remaining() : app.remaining();
  if (extras.empty()) extras = app.remaining(true);
  if (extras.empty()) return fmt::format("unexpected arguments: see `{} --help`", where);
  const std::string& first = extras.front();
  if (sub == nullptr && !first.starts_with("-")) return unknown_command_message(app, first);
  if (first.starts_with("-")) {
    const std::string name = first.substr(0, first.find('='));
    if (sub == nullptr) {
      for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (command->get_option_no_throw(name) != nullptr) {
          return fmt::format(
              "'{}' is not an option of attn itself: put it after a command, e.g. "
              "`attn {} {} {}`",
              name, command->get_name(), name, example_value(name));
        }
      }
      return fmt::format("unknown option '{}': `attn --help` lists the commands", name);
    }
    if (option_names(*sub) == std::vector<std::string>{"--help"}) {
      return fmt::format("unknown option '{}': `{}` takes no options", name, where);
    }
    return fmt::format("unknown option '{}'{}: `{} --help` lists the options", name,
                       did_you_mean(closest(name, option_names(*sub))), where);
  }
  const std::vector<std::string> commands = command_names(app);
  if (std::find(commands.begin(), commands.end(), first) != commands.end()) {
    return fmt::format("unexpected argument '{}': attn runs one command at a time, e.g. `attn {}`",
                       first, first);
  }
  if (option_names(*sub) == std::vector<std::string>{"--help"}) {
    return fmt::format("unexpected argument '{}': `{}` takes no arguments", first, where);
  }
  return fmt::format("unexpected argument '{}': `{}` takes only options (`{} --help` lists them)",
                     first, where, where);
}

// Rewrites CLI11's own messages ("--seq: 1 required UINT:SIZE missing", "Could not convert: ...",
// "diagonal not in {none,causal}") into "what is wrong: how to fix it".
std::string parse_error_message(const CLI::App& app, const CLI::App* sub, const std::string& where,
                                const CLI::ParseError& e) {
  const std::string what = e.what();
  const std::string name = option_in(what);
  const CLI::Option* opt =
      sub != nullptr && !name.empty() ? sub->get_option_no_throw(name) : nullptr;
  std::smatch m;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) return extras_message(app, sub, where);
  if (dynamic_cast<const CLI::ExcludesError*>(&e) != nullptr) {
    static const std::regex excludes(R"((--[A-Za-z0-9-]+) excludes (--[A-Za-z0-9-]+))");
    if (std::regex_search(what, m, excludes)) {
      std::string a = m[1], b = m[2];
      if (a == "--input") std::swap(a, b);
      if (b == "--input") {
        return fmt::format(
            "{} and --input exclude each other: the sizes come from the --input "
            "array, so drop {}",
            a, a);
      }
      return fmt::format("{} and {} exclude each other: give only one of them", a, b);
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && !name.empty()) {
    if (opt != nullptr && opt->count() > 1) {
      return fmt::format("{} is given {} times: give it once", name, opt->count());
    }
    if (opt != nullptr && opt->get_expected_max() == 0) {
      return fmt::format("{} takes no value: write just {}", name, name);
    }
    return fmt::format("{} needs a value: e.g. `{} {}` (`{} --help` lists the options)", name, name,
                       example_value(name), where);
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr && !name.empty()) {
    static const std::regex convert(R"(Could not convert: \S+ = (.*)$)");
    const std::string value = std::regex_search(what, m, convert) ? m[1].str() : std::string();
    if (opt != nullptr && opt->get_expected_max() == 0) {
      return fmt::format("{} takes no value: write just {}", name, name);
    }
    const std::string type = opt != nullptr ? opt->get_type_name() : std::string();
    const bool whole = type.find("INT") != std::string::npos;
    return fmt::format("{}: '{}' is not {}: give one, e.g. `{} {}`", name, value,
                       whole ? "a whole number" : "a number", name, example_value(name));
  }
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr && !name.empty()) {
    // CLI::IsMember: "--mask: diagonal not in {none,causal}".
    static const std::regex member(R"(^--[A-Za-z0-9-]+: (.*) not in \{(.*)\}$)");
    // CLI::Range: "--x: Value 99 not in range 0 to 16".
    static const std::regex range(R"(^--[A-Za-z0-9-]+: Value (.*) not in range (\S+) to (\S+)$)");
    // CLI::CheckedTransformer: "--x: Check yaml value in {json->1,text->0} OR {1,0} FAILED".
    static const std::regex checked(
        R"(^--[A-Za-z0-9-]+: Check (.*) value in \{([^}]*)\}.*FAILED$)");
    if (std::regex_match(what, m, range)) {
      return fmt::format("{}: '{}' is out of range: give a number from {} to {}", name, m[1].str(),
                         m[2].str(), m[3].str());
    }
    if (std::regex_match(what, m, member) || std::regex_match(what, m, checked)) {
      std::vector<std::string> words;
      const std::string set = m[2];
      std::size_t start = 0;
      while (start <= set.size()) {
        const std::size_t comma = std::min(set.find(',', start), set.size());
        std::string word = set.substr(start, comma - start);
        word = word.substr(0, word.find("->"));
        if (!word.empty()) words.push_back(word);
        start = comma + 1;
      }
      std::string list;
      for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0) list += i + 1 == words.size() ? " or " : ", ";
        list += words[i];
      }
      return fmt::format("{}: '{}' is not one of the choices: use {}", name, m[1].str(), list);
    }
    return what;  // our validators: "--seq: '0' is not a size: give a whole number from 1 to ..."
  }
  return fmt::format("{} (see `{} --help`)", what, where);
}

int fail(std::string_view where, std::string_view message) {
  // One line, always: a message must never spill onto a second line, nor carry a NUL or an
  // escape sequence from a name in it to the terminal.
  std::string text = fmt::format("{}: {}", where, message);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  const std::string line = attn::printable(text, std::string::npos) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  return attn::cli::kExitBadInput;
}

}  // namespace

namespace attn::cli {

int run(int argc, const char* const* argv) {
  exit_code() = kExitOk;
  CLI::App app{
      "attn teaches the transformer encoder in a terminal: each command runs one concept for\n"
      "real and prints every intermediate tensor as PyTorch prints it.",
      "attn"};
  app.require_subcommand(0, 1);
  app.footer("Run `attn <command> --help` for a command's options.");
  attn::cli::setup_list(app);
  attn::cli::setup_tokens(app);
  attn::cli::setup_dot_product(app);
  attn::cli::setup_scaling(app);
  attn::cli::setup_softmax(app);
  attn::cli::setup_attention(app);
  attn::cli::setup_multi_head(app);
  attn::cli::setup_positional_encoding(app);
  attn::cli::setup_layer_norm(app);
  attn::cli::setup_feed_forward(app);
  attn::cli::setup_encoder(app);
  attn::cli::setup_bench(app);
  attn::cli::setup_summary(app);
  attn::cli::setup_grade(app);

  // The lessons are small: one BLAS thread keeps the output byte-identical across machines.
  attn::set_blas_threads(1);

  std::string where = "attn";
  // The subcommand being run, once CLI11 has seen it (also when a callback threw).
  auto command = [&app, &where]() -> const CLI::App* {
    const auto subs = app.get_subcommands();
    if (subs.empty()) return nullptr;
    where = "attn " + subs.front()->get_name();
    return subs.front();
  };
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      std::fputs(app.help().c_str(), stdout);
      return attn::cli::kExitOk;
    }
    return attn::cli::exit_code();
  } catch (const CLI::CallForHelp&) {
    const auto subs = app.get_subcommands();
    std::fputs((subs.empty() ? app.help() : subs.front()->help("attn")).c_str(), stdout);
    return attn::cli::kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return attn::cli::kExitOk;
  } catch (const CLI::ParseError& e) {
    const CLI::App* sub = command();
    return fail(where, parse_error_message(app, sub, where, e));
  } catch (const attn::Error& e) {
    const CLI::App* sub = command();
    std::string detail = e.detail();
    // The memory limit (core/budget.cpp) names the command and ends "use smaller sizes": say
    // which options to lower.
    constexpr std::string_view kGeneric = "use smaller sizes";
    if (detail.ends_with(kGeneric)) {
      detail.replace(detail.size() - kGeneric.size(), kGeneric.size(), size_fix(sub));
    }
    if (sub != nullptr && e.function() == sub->get_name()) return fail(where, detail);
    return fail(where, fmt::format("{}: {}", e.function(), detail));
  } catch (const std::bad_alloc&) {
    const CLI::App* sub = command();
    return fail(where, fmt::format("out of memory: {}", size_fix(sub)));
  } catch (const std::exception& e) {
    command();
    return fail(where, fmt::format("unexpected error: {}", e.what()));
  }
}

}  // namespace attn::cli
