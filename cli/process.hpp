// Running another program (the compiler, an exercise's tests) with a time limit, capturing its
// output. POSIX only: fork, exec, poll.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace attn::cli {

struct ProcessOptions {
  double timeout_seconds = 60.0;
  std::string working_dir;  // empty: this process's
  std::vector<std::pair<std::string, std::string>>
      env;                           // added to (or replacing in) the environment
  std::size_t max_output = 1 << 20;  // bytes kept per stream; the rest dropped
};

struct ProcessResult {
  bool started = false;  // false: the program could not be run (start_error says why)
  std::string start_error;
  int exit_code = -1;      // when it exited normally
  int signal = 0;          // when a signal ended it
  bool timed_out = false;  // killed at the time limit
  std::string out;         // stdout
  std::string err;         // stderr
  double seconds = 0.0;

  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  // "exit code 1", "killed by signal 11 (Segmentation fault)", "timed out after 10 s", ...
  std::string status(double timeout_seconds) const;
};

// Runs argv[0] (searched on PATH) with argv; never throws for the child's failures.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options);

}  // namespace attn::cli
