#include "errors.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <regex>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "assignments.hpp"
#include "command.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

// Levenshtein distance, for "did you mean" on a mistyped command or option.
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
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& suggestion) {
  return suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion);
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// Every long option of `app`, spelt "--name".
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& name : opt->get_lnames())
      names.push_back("--" + name);
  return names;
}

bool given(const CLI::App* sub, const std::string& option) {
  const CLI::Option* opt = sub != nullptr ? sub->get_option_no_throw(option) : nullptr;
  return opt != nullptr && opt->count() > 0;
}

bool has(const CLI::App* sub, const std::string& option) {
  return sub != nullptr && sub->get_option_no_throw(option) != nullptr;
}

// A value to show in "e.g. --seq 8" when an option is missing its value: the option's own
// placeholder (SIZE, FILE) unless a better example is known.
std::string example_value(const CLI::Option* opt, std::string_view name) {
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
      {"--config", "bert-base"},
      {"--text", "'hello world'"},
      {"--weights", "w.safetensors"},
      {"--threads", "2"},
      {"--max-memory", "2G"}};
  for (const auto& [option, value] : examples)
    if (option == name) return std::string(value);
  return opt != nullptr && !opt->get_option_text().empty() ? opt->get_option_text() : "VALUE";
}

// The option names CLI11 put in its message ("--seq", or "--input" and "--seq" for excludes).
std::vector<std::string> options_in(const std::string& message) {
  static const std::regex name(R"(--[A-Za-z0-9][A-Za-z0-9-]*)");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), name);
       it != std::sregex_iterator(); ++it) {
    names.push_back(it->str());
  }
  return names;
}

// Whether `word` names an exercise that the course added (`attn assignments add`), in the tree
// around the working directory or in the course this attn carries.
bool is_added_exercise(std::string_view word) {
  for (const bool here : {true, false}) {
    try {
      const std::filesystem::path tree = here ? course::find_tree("") : course::course_tree();
      for (const course::Exercise& exercise : course::find_exercises(tree))
        if (exercise.lesson == word) return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

std::string unknown_command_message(const CLI::App& app, std::string_view word) {
  if (is_added_exercise(word)) {
    return fmt::format(
        "'{}' is an exercise your course added, with no lesson to run: `attn check {}` checks it, "
        "`attn hint {}` gives its hints",
        word, word, word);
  }
  return fmt::format(
      "unknown command '{}'{}: `attn list` shows the lessons, `attn --help` the commands", word,
      did_you_mean(closest(word, command_names(app))));
}

// One line for an argument CLI11 could not place: an unknown option or a stray word.
std::string extras_message(const CLI::App& app, const CLI::App* sub) {
  const std::string where = command_label(sub);
  std::vector<std::string> extras = sub != nullptr ? sub->remaining() : app.remaining();
  if (extras.empty()) extras = app.remaining(true);
  if (extras.empty()) return fmt::format("unexpected arguments: see `{} --help`", where);
  const std::string& first = extras.front();
  if (sub == nullptr && !first.starts_with("-")) return unknown_command_message(app, first);
  if (first.starts_with("-")) {
    const std::string name = first.substr(0, first.find('='));
    if (sub == nullptr) {
      for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (const CLI::Option* opt = command->get_option_no_throw(name)) {
          return fmt::format(
              "'{}' is not an option of attn itself: put it after a command, e.g. `attn {} {} {}`",
              name, command->get_name(), name, example_value(opt, name));
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
  const bool only_help = option_names(*sub) == std::vector<std::string>{"--help"};
  // A command with positional arguments (attn view VIEW, attn summary MODEL) took them
  // already: name what it takes.
  std::vector<std::string> positionals;
  for (const CLI::Option* opt :
       sub->get_options([](const CLI::Option* o) { return o->get_positional(); }))
    positionals.push_back(opt->get_option_text().empty() ? opt->get_name()
                                                         : opt->get_option_text());
  if (!positionals.empty()) {
    std::string takes = positionals.size() == 1 ? "one argument, " + positionals.front()
                                                : "the arguments " + or_list(positionals, "and");
    return fmt::format("unexpected argument '{}': `{}` takes {}{} (`{} --help` lists {})", first,
                       where, takes, only_help ? "" : ", and options", where,
                       only_help && positionals.size() == 1 ? "it" : "them");
  }
  if (only_help) {
    return fmt::format("unexpected argument '{}': `{}` takes no arguments", first, where);
  }
  return fmt::format("unexpected argument '{}': `{}` takes only options (`{} --help` lists them)",
                     first, where, where);
}

// The options that set a size of the legend, in the order they are suggested.
const std::vector<std::pair<std::string, std::string>>& size_options() {
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"T", "--seq"},        {"B", "--batch"},      {"D", "--d-model"}, {"F", "--d-ff"},
      {"H", "--heads"},      {"hs", "--head-size"}, {"L", "--layers"},  {"P", "--max-positions"},
      {"V", "--vocab-size"}, {"S", "--source-seq"}};
  return table;
}

// What to lower when a run is too large: the options that set the sizes driving it (those the
// user gave first), a shorter token source, or a smaller --input array.
std::string size_advice(const Error& e, const CLI::App* sub) {
  const std::vector<std::string>& sizes = e.sizes();
  const bool from_input =
      given(sub, "--input") && std::all_of(sizes.begin(), sizes.end(), [](const std::string& s) {
        return s == "B" || s == "T" || s == "D";
      });
  if (from_input) return "pass a smaller --input array";
  // A Hugging Face folder's config sets every size but the tokens.
  if (given(sub, "--pretrained") &&
      !std::all_of(sizes.begin(), sizes.end(), [](const std::string& s) { return s == "T"; }))
    return "use a smaller model with --pretrained, or raise --max-memory";
  // Without the facts, the sizes every lesson has.
  static const std::vector<std::string> kUsual = {"T", "B", "D", "F", "H"};
  const std::vector<std::string>& driving_sizes = sizes.empty() ? kUsual : sizes;
  std::vector<std::string> options, given_options;
  for (const auto& [letter, option] : size_options()) {
    const bool driving =
        std::find(driving_sizes.begin(), driving_sizes.end(), letter) != driving_sizes.end();
    if (!driving) continue;
    std::string name = option;
    if (letter == "T") {
      for (const char* source : {"--text", "--ids", "--ids-file"})
        if (given(sub, source)) name = source;
      // A command without --seq counts its tokens in its text, or sets them with --tokens.
      for (const char* other : {"--text", "--tokens"})
        if (!has(sub, name) && has(sub, other)) name = other;
    }
    if (!has(sub, name)) continue;
    options.push_back(name);
    if (given(sub, name)) given_options.push_back(name);
  }
  const std::vector<std::string>& names = given_options.empty() ? options : given_options;
  // A model read from a file: its config sets the sizes.
  if (names.empty()) return has(sub, "--config") ? "use a smaller --config" : "use smaller sizes";
  if (names.size() == 1 &&
      (names[0] == "--text" || names[0] == "--ids" || names[0] == "--ids-file")) {
    return fmt::format("give fewer tokens ({})", names[0]);
  }
  return "lower " + or_list(names);
}

}  // namespace

std::string command_label(const CLI::App* sub) {
  std::string words;
  for (const CLI::App* app = sub; app != nullptr && app->get_parent() != nullptr;
       app = app->get_parent())
    words = " " + app->get_name() + words;
  return "attn" + words;
}

std::string option_for(const CLI::App* sub, const std::string& subject) {
  if (sub == nullptr || subject.empty()) return {};
  if (subject == "tokens") {
    for (const char* source : {"--text", "--ids", "--ids-file", "--seq"})
      if (given(sub, source)) return source;
    return has(sub, "--text") ? "--text" : has(sub, "--seq") ? "--seq" : "";
  }
  std::string option = "--" + subject;
  std::replace(option.begin(), option.end(), '_', '-');
  return has(sub, option) ? option : std::string();
}

namespace {

// Every long option of every command, spelt as a placeholder names it ("max_positions"): the
// names core and the lessons may write as <name>.
std::vector<std::string> placeholder_names(const CLI::App* sub) {
  const CLI::App* root = sub;
  while (root->get_parent() != nullptr)
    root = root->get_parent();
  std::vector<std::string> names = {"tokens"};
  std::vector<const CLI::App*> apps = {root};
  while (!apps.empty()) {
    const CLI::App* app = apps.back();
    apps.pop_back();
    for (const CLI::Option* opt : app->get_options())
      for (std::string name : opt->get_lnames()) {
        std::replace(name.begin(), name.end(), '-', '_');
        names.push_back(std::move(name));
      }
    for (const CLI::App* child : app->get_subcommands([](const CLI::App*) { return true; }))
      apps.push_back(child);
  }
  return names;
}

// The values the user gave on the command line, to `sub` and the commands above it.
std::vector<std::string> given_values(const CLI::App* sub) {
  std::vector<std::string> values;
  for (const CLI::App* app = sub; app != nullptr; app = app->get_parent())
    for (const CLI::Option* opt : app->get_options())
      for (const std::string& value : opt->results())
        values.push_back(value);
  return values;
}

// Whether the placeholder at detail[at, at + size) lies inside text the user gave: some value of
// theirs holds it, and the detail agrees with that value on at least one character beside it.
bool inside_given_text(const std::string& detail, std::size_t at, std::size_t size,
                       const std::vector<std::string>& values) {
  const std::string_view placeholder(detail.data() + at, size);
  for (const std::string& value : values) {
    for (std::size_t in = value.find(placeholder); in != std::string::npos;
         in = value.find(placeholder, in + 1)) {
      const bool before = in > 0 && at > 0 && value[in - 1] == detail[at - 1];
      const bool after = in + size < value.size() && at + size < detail.size() &&
                         value[in + size] == detail[at + size];
      if (before || after) return true;
    }
  }
  return false;
}

// Core and the lessons name the parameters in their advice as <name> ("add <variant> head"):
// here each becomes the subcommand's option ("add --variant head"), or the bare name. A
// placeholder is a word of its own, an option's name, and not part of what the user typed, so
// that a path such as 'x<tag>y.npy' or 'my <text> file.npy' is printed as given.
std::string with_options(const std::string& detail, const CLI::App* sub) {
  static const std::regex placeholder(R"(<([a-z][a-z0-9_]*)>)");
  const std::vector<std::string> names =
      sub != nullptr ? placeholder_names(sub) : std::vector<std::string>();
  const std::vector<std::string> values = given_values(sub);
  const auto stands_alone = [&detail](std::size_t at, std::size_t size) {
    const bool left = at == 0 || detail[at - 1] == ' ';
    const bool right = at + size == detail.size() ||
                       std::string_view(" ,.:;)").find(detail[at + size]) != std::string::npos;
    return left && right;
  };
  std::string out;
  auto last = detail.cbegin();
  for (auto it = std::sregex_iterator(detail.begin(), detail.end(), placeholder);
       it != std::sregex_iterator(); ++it) {
    const auto at = static_cast<std::size_t>(it->position());
    const auto size = static_cast<std::size_t>(it->length());
    const bool known =
        sub == nullptr || std::find(names.begin(), names.end(), (*it)[1].str()) != names.end();
    if (!known || !stands_alone(at, size) || inside_given_text(detail, at, size, values)) continue;
    out.append(last, detail.cbegin() + it->position());
    const std::string option = option_for(sub, (*it)[1].str());
    out += option.empty() ? (*it)[1].str() : option;
    last = detail.cbegin() + it->position() + it->length();
  }
  out.append(last, detail.cend());
  return out;
}
}  // namespace

std::string error_message(const Error& e, const CLI::App* sub) {
  std::string detail = with_options(e.detail(), sub);
  {
    constexpr std::string_view kGeneric = "use smaller sizes";
    if (detail.ends_with(kGeneric))
      detail.replace(detail.size() - kGeneric.size(), kGeneric.size(), size_advice(e, sub));
  }
  std::string option = option_for(sub, e.subject());
  // The memory limit may come from ATTN_MAX_MEMORY, which the message names itself.
  if (option == "--max-memory" && !given(sub, option)) option.clear();
  return option.empty() ? detail : fmt::format("{}: {}", option, detail);
}

std::string parse_error_message(const CLI::App& app, const CLI::App* sub,
                                const CLI::ParseError& e) {
  const std::string what = e.what(), where = command_label(sub);
  const std::vector<std::string> names = options_in(what);
  const std::string name = names.empty() ? std::string() : names.front();
  const CLI::Option* opt =
      sub != nullptr && !name.empty() ? sub->get_option_no_throw(name) : nullptr;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) return extras_message(app, sub);
  if (dynamic_cast<const CLI::ExcludesError*>(&e) != nullptr && names.size() >= 2) {
    return fmt::format("{} and {} exclude each other: give only one of them", names[0], names[1]);
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && opt != nullptr) {
    if (opt->count() > 1)
      return fmt::format("{} is given {} times: give it once", name, opt->count());
    if (opt->get_expected_max() == 0)
      return fmt::format("{} takes no value: write just {}", name, name);
    return fmt::format("{} needs a value: e.g. `{} {} {}` (`{} --help` lists the options)", name,
                       where, name, example_value(opt, name), where);
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr && opt != nullptr) {
    if (opt->get_expected_max() == 0)
      return fmt::format("{} takes no value: write just {}", name, name);
    return fmt::format("{}: the value is not what it takes: e.g. `{} {} {}`", name, where, name,
                       example_value(opt, name));
  }
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr && opt != nullptr) {
    return what;  // "--seq: " and our validator's words: "'0' is not a size: give a whole number ..."
  }
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr && sub != nullptr) {
    // A positional argument's value: CLI11 puts its name ("shell: ") before our validator's
    // words, which say what the argument is.
    for (const CLI::Option* positional :
         sub->get_options([](const CLI::Option* o) { return o->get_positional(); })) {
      const std::string prefix = positional->get_name() + ": ";
      if (what.starts_with(prefix)) return what.substr(prefix.size());
    }
  }
  return fmt::format("{} (see `{} --help`)", what, where);
}

int fail(const std::string& label, const std::string& message) {
  // One line, always: a message must never spill onto a second line, nor carry a NUL or an
  // escape sequence from a name in it to the terminal.
  std::string text = fmt::format("{}: {}", label, message);
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  const std::string line = printable(text, std::string::npos) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  return kExitBadInput;
}

}  // namespace attn::cli
