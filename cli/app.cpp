// The attn command line: `list`, the lessons in the catalog's order, then the other commands,
// each from its own cli/<command>.cpp; every failure is one line on stderr (errors.hpp).
#include "app.hpp"

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/error.hpp"
#include "catalog.hpp"
#include "command.hpp"
#include "door.hpp"
#include "errors.hpp"
#include "lesson.hpp"
#include "matmul.hpp"
#include "version.hpp"

namespace attn::cli {

namespace {

// The registered command of that name; every lesson of the catalog has one.
const Command& command_named(std::string_view name) {
  for (const Command& c : registered_commands())
    if (c.name == name) return c;
  throw Error(ErrorKind::internal, "command_named",
              fmt::format("the lesson '{}' has no command in cli/", name));
}

// `list`, the lessons in course order, then every other command by name.
std::vector<Command> commands_in_order() {
  std::vector<Command> ordered = {command_named("list")};
  for (const lessons::LessonInfo& lesson : lessons::catalog())
    ordered.push_back(command_named(lesson.name));
  std::vector<Command> others;
  for (const Command& c : registered_commands()) {
    const bool placed = std::any_of(ordered.begin(), ordered.end(),
                                    [&](const Command& o) { return o.name == c.name; });
    if (!placed) others.push_back(c);
  }
  std::sort(others.begin(), others.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  ordered.insert(ordered.end(), others.begin(), others.end());
  return ordered;
}

}  // namespace

int run(int argc, const char* const* argv) {
  Context context;
  CLI::App app{
      "attn teaches the transformer encoder in a terminal: each command runs one concept for\n"
      "real and prints every intermediate tensor as PyTorch prints it.",
      "attn"};
  app.require_subcommand(0, 1);
  app.set_version_flag("-V,--version", fmt::format("attn {}", attn_version()),
                       "print attn's version and exit");
  app.footer("Run `attn <command> --help` for a command's options.");
  for (const Command& command : commands_in_order())
    command.setup(app, context);

  // One BLAS thread unless --threads says otherwise (README: what changes with the threads).
  set_threads(1);

  // The subcommand being run, once CLI11 has seen it (also when a callback threw), and the
  // deepest one (`release` of `assignments release`), whose options an error may be about.
  auto current = [&app]() -> const CLI::App* {
    const auto subs = app.get_subcommands();
    return subs.empty() ? nullptr : subs.front();
  };
  auto deepest = [&current]() -> const CLI::App* {
    const CLI::App* sub = current();
    while (sub != nullptr && !sub->get_subcommands().empty())
      sub = sub->get_subcommands().front();
    return sub;
  };
  try {
    check_every_command_has_a_door(app);
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      std::fputs(app.help().c_str(), stdout);
      return kExitOk;
    }
    return context.exit_code;
  } catch (const CLI::CallForHelp&) {
    const CLI::App* sub = current();
    std::fputs((sub == nullptr ? app.help() : sub->help("attn")).c_str(), stdout);
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    // CLI11 carries the version line as the exception's text.
    std::fputs((std::string(e.what()) + "\n").c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return fail(command_label(current()), parse_error_message(app, deepest(), e));
  } catch (const Error& e) {
    const CLI::App* sub = current();
    if (e.kind() == ErrorKind::internal) {
      return fail(command_label(sub),
                  fmt::format("internal error, please report it: {}", e.what()));
    }
    return fail(command_label(sub), error_message(e, deepest()));
  } catch (const std::bad_alloc&) {
    const CLI::App* sub = current();
    return fail(
        command_label(sub),
        error_message(Error(ErrorKind::too_large, "run", "out of memory: use smaller sizes"), sub));
  } catch (const std::exception& e) {
    return fail(command_label(current()), fmt::format("unexpected error: {}", e.what()));
  }
}

}  // namespace attn::cli
