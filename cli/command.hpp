// The subcommands of attn. Each cli/<command>.cpp registers its setup with one Registration
// (cli/plain_lessons.cpp one for each lesson without options of its own); the
// app adds `list` first, then the lessons in the order of lessons::catalog() (the only list of
// lessons), then every other command by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace attn::cli {

// Exit codes of every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;

// What one run of attn::cli::run shares with the subcommand that runs: the exit code it sets,
// and the warnings about its inputs (NaN, infinities) printed once it has succeeded.
struct Context {
  int exit_code = kExitOk;
  std::vector<std::string> warnings;
};

// Adds the subcommand to `app`; its callback runs it and sets context.exit_code.
using Setup = void (*)(CLI::App& app, Context& context);

struct Command {
  std::string_view name;
  Setup setup;
};

// One per command, at namespace scope: `const Registration kRegistration{"name", setup};`.
class Registration {
 public:
  Registration(std::string_view name, Setup setup);
};

// Every registered command, in registration order (which is not defined across files).
const std::vector<Command>& registered_commands();

// For the commands that train: every step frees and allocates the same tensors again, and glibc
// would hand the freed memory back to the kernel each time and fault it in again (page faults and
// zeroing took about a fifth of a small model's step). This keeps it in the process instead; the
// peak is the same.
void keep_freed_memory();

}  // namespace attn::cli
