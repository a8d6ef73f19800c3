// Runs a program other than attn (a shell, groff) as a child process in a given folder, and
// captures its exit code, stdout and stderr, for the tests of what attn writes for other programs:
// its shell completions and its man page.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures.hpp"
#include "run_attn.hpp"

namespace attn::testing {

// The commands of `attn --help`'s "Subcommands:" section, in its order: what the completions and
// the man page must each hold.
inline std::vector<std::string> help_commands() {
  const auto help = run_attn({"--help"});
  REQUIRE(help.exit_code == 0);
  static const std::regex entry(R"(^  ([a-z][a-z0-9-]*)\s)");
  std::vector<std::string> names;
  std::istringstream in(help.out);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Subcommands:") {
      inside = true;
    } else if (inside && line.empty()) {
      break;
    } else if (std::smatch m; inside && std::regex_search(line, m, entry)) {
      names.push_back(m[1]);
    }
  }
  REQUIRE(names.size() >= 20);
  return names;
}

struct ProgramResult {
  int exit_code = -1;  // 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

// The program `name` on PATH, or an empty path.
inline std::filesystem::path find_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = std::min(dirs.find(':'), dirs.size());
    const std::filesystem::path candidate =
        std::filesystem::path(dirs.substr(0, colon)) / std::string(name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    dirs.remove_prefix(std::min(colon + 1, dirs.size()));
  }
  return {};
}

// Runs `args` (args[0] found on PATH) in `dir` with `env` ("NAME=value") added to the
// environment; stdout and stderr go through files in `dir`, which are removed afterwards.
inline ProgramResult run_program(const std::vector<std::string>& args,
                                 const std::filesystem::path& dir,
                                 const std::vector<std::string>& env = {}) {
  const std::filesystem::path out = dir / ".program.out", err = dir / ".program.err";
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::chdir(dir.c_str()) != 0) _exit(127);
    dup2(o, STDOUT_FILENO);
    dup2(e, STDERR_FILENO);
    close(o), close(e);
    for (const std::string& entry : env) {
      const auto eq = entry.find('=');
      setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
    }
    std::vector<char*> argv;
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ProgramResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_text(out.string());
  result.err = read_text(err.string());
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  return result;
}

}  // namespace attn::testing
