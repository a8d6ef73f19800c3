// attn in a real terminal: tmux runs a command line in a pane of its own server, send-keys types,
// capture-pane reads the screen. The pane's shell ignores Ctrl-C so that it outlives attn, then
// prints attn's exit code (EXIT=N) and the terminal's settings.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

namespace attn::testing {

// What `command` prints on stdout.
inline std::string shell(const std::string& command) {
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
      out.append(buffer, n);
    pclose(pipe);
  }
  return out;
}

class Pane {
 public:
  // Runs `command_line` (a shell command: attn and its arguments) in a 120x50 pane.
  explicit Pane(const std::string& command_line, const std::string& name = "attn-test")
      : socket_(fmt::format("{}-{}", name, getpid())),
        script_(std::filesystem::temp_directory_path() / fmt::format("{}-{}.sh", name, getpid())) {
    std::FILE* f = std::fopen(script_.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fprintf(f, "trap '' INT\n%s\necho EXIT=$?\nstty -a\nsleep 600\n", command_line.c_str());
    std::fclose(f);
    shell(
        fmt::format("tmux -L {} kill-server 2>/dev/null; tmux -L {} -f /dev/null new-session "
                    "-d -x 120 -y 50 -e NO_COLOR=1 -e LANG=C.UTF-8 sh {}",
                    socket_, socket_, script_.string()));
  }
  ~Pane() {
    shell(fmt::format("tmux -L {} kill-server 2>/dev/null", socket_));
    std::filesystem::remove(script_);
  }
  Pane(const Pane&) = delete;
  Pane& operator=(const Pane&) = delete;

  std::string screen() const { return shell(fmt::format("tmux -L {} capture-pane -p", socket_)); }
  void keys(const std::string& keys) const {
    shell(fmt::format("tmux -L {} send-keys {}", socket_, keys));
  }
  // Waits (polling, up to `seconds`) until the screen shows `text`; returns the screen.
  std::string wait_for(const std::string& text, int seconds = 30) const {
    std::string s;
    for (int i = 0; i < seconds * 10; ++i) {
      s = screen();
      if (s.find(text) != std::string::npos) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return s;
  }

 private:
  std::string socket_;
  std::filesystem::path script_;
};

}  // namespace attn::testing
