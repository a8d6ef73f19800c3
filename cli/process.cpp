#include "process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

extern char** environ;

namespace attn::cli {

std::string ProcessResult::status(double timeout_seconds) const {
  if (!started) return start_error;
  if (timed_out) return fmt::format("timed out after {:g} s", timeout_seconds);
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit code {}", exit_code);
}

namespace {

void append_capped(std::string& to, const char* data, std::size_t n, std::size_t cap) {
  if (to.size() < cap) to.append(data, std::min(n, cap - to.size()));
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult result;
  const auto start = std::chrono::steady_clock::now();
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0 || pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.start_error = fmt::format("cannot create pipes: {}", std::strerror(errno));
    return result;
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [name, value] : options.env)
      replaced = replaced || name == key;
    if (!replaced) env_strings.push_back(entry);
  }
  for (const auto& [name, value] : options.env)
    env_strings.push_back(name + "=" + value);
  std::vector<char*> child_env, child_argv;
  for (std::string& s : env_strings)
    child_env.push_back(s.data());
  child_env.push_back(nullptr);
  std::vector<std::string> args = argv;
  for (std::string& s : args)
    child_argv.push_back(s.data());
  child_argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    result.start_error = fmt::format("cannot start {}: {}", argv.front(), std::strerror(errno));
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: a timeout kills the program and its children
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    const int null_in = open("/dev/null", O_RDONLY);
    if (null_in >= 0) dup2(null_in, STDIN_FILENO);
    close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]),
        close(exec_pipe[0]);
    if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) {
      const int code = errno;
      (void)!write(exec_pipe[1], &code, sizeof code);
      _exit(127);
    }
    environ = child_env.data();
    execvp(child_argv[0], child_argv.data());
    const int code = errno;
    (void)!write(exec_pipe[1], &code, sizeof code);
    _exit(127);
  }
  setpgid(pid, pid);
  close(out_pipe[1]), close(err_pipe[1]), close(exec_pipe[1]);
  int exec_errno = 0;
  if (read(exec_pipe[0], &exec_errno, sizeof exec_errno) ==
      static_cast<ssize_t>(sizeof exec_errno)) {
    result.start_error = fmt::format("cannot run {}: {}", argv.front(), std::strerror(exec_errno));
  }
  close(exec_pipe[0]);

  const auto deadline = start + std::chrono::duration<double>(options.timeout_seconds);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_streams = 2;
  char buffer[65536];
  while (open_streams > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        append_capped(i == 0 ? result.out : result.err, buffer, static_cast<std::size_t>(n),
                      options.max_output);
      } else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_streams;
      }
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  // The program may have closed its streams and kept running: wait for it up to the deadline.
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (!result.timed_out && std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
    }
    usleep(5000);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.start_error.empty()) return result;
  result.started = true;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !result.timed_out) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace attn::cli
