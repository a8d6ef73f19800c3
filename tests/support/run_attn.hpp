// Runs the built `attn` executable as a child process and captures its exit code, stdout and
// stderr, for the command-line tests (golden output, JSON, --save, bad input).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "paths.hpp"

namespace attn::testing {

// AddressSanitizer's shadow memory, redzones and quarantine of freed blocks add hundreds of MiB
// that attn never asked for, so peak memory is asserted only in builds without it; a sanitized
// build still checks every exit code and message.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kPeakMemoryIsAttns = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kPeakMemoryIsAttns = false;
#else
inline constexpr bool kPeakMemoryIsAttns = true;
#endif
#else
inline constexpr bool kPeakMemoryIsAttns = true;
#endif

// Whether attn runs under AddressSanitizer, about ten times slower than without.
inline constexpr bool kSanitized = !kPeakMemoryIsAttns;

// Whether a run's peak memory is within `bound` bytes; always true in a sanitized build.
inline bool peak_within(long max_rss_bytes, double bound) {
  return !kPeakMemoryIsAttns || (max_rss_bytes > 0 && max_rss_bytes <= bound);
}

struct RunResult {
  int exit_code = -1;  // 128 + signal number when killed by a signal
  std::string out;
  std::string err;
  long max_rss_bytes = 0;  // the child's peak resident memory (wait4's ru_maxrss)
};

// `env` entries are "NAME=value" set in the child; "NAME" alone unsets NAME. The child's memory
// limit is 1 GiB (ATTN_MAX_MEMORY) unless `env` says otherwise, so that refusals of large sizes
// are the same on every machine.
inline RunResult run_attn(const std::vector<std::string>& args,
                          const std::vector<std::string>& env = {}) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
    setenv("ATTN_MAX_MEMORY", "1G", 1);
    for (const std::string& e : env) {
      const auto eq = e.find('=');
      if (eq == std::string::npos) {
        unsetenv(e.c_str());
      } else {
        setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
      }
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(ATTN_EXECUTABLE));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(ATTN_EXECUTABLE, argv.data());
    _exit(127);
  }
  close(out_pipe[1]), close(err_pipe[1]);
  RunResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buffer[65536];
  while (open_count > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  result.max_rss_bytes = usage.ru_maxrss * 1024;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

inline std::size_t line_count(const std::string& text) {
  std::size_t lines = 0;
  for (char c : text)
    lines += c == '\n';
  if (!text.empty() && text.back() != '\n') ++lines;
  return lines;
}

// A refusal: exit code 2, nothing on stdout, one stderr line that says `says`, and a peak memory
// of at most `max_rss_bytes`.
inline void check_refused(const RunResult& result, const std::string& says, double max_rss_bytes) {
  INFO("stderr: " << result.err);
  INFO("peak memory: " << result.max_rss_bytes / (1 << 20) << " MiB");
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  CHECK(line_count(result.err) == 1);
  CHECK(result.err.find(says) != std::string::npos);
  CHECK(peak_within(result.max_rss_bytes, max_rss_bytes));
}

}  // namespace attn::testing
