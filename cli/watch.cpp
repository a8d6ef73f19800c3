// attn watch: attn check again each time the exercise is saved. It checks the exercise of the
// lesson folder it runs in, else the next unfinished one (or the lesson given), then sleeps until inotify says the exercise's source was written
// (an editor that saves by renaming a new file over it counts too); when an exercise passes, it
// moves on to the next. Typed commands: h and Enter for a hint, c to check now, q to quit.
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "check_run.hpp"
#include "command.hpp"
#include "door.hpp"
#include "options.hpp"
#include "output.hpp"

namespace attn::cli {

namespace fs = std::filesystem;
using course::Exercise;

namespace {

struct WatchOptions {
  std::string lesson;
  std::string dir;
  double timeout = 20.0;
  bool full_errors = false;
  std::string color = "auto";
};

// The inotify descriptor, closed with the watch.
class Inotify {
 public:
  Inotify() : fd_(inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    if (fd_ < 0) {
      throw Error(ErrorKind::bad_value, "watch",
                  fmt::format("cannot watch files here ({}): run `attn check` after each save "
                              "instead",
                              std::strerror(errno)));
    }
  }
  ~Inotify() { close(fd_); }
  Inotify(const Inotify&) = delete;
  Inotify& operator=(const Inotify&) = delete;

  // Watches `folder` alone, for files written and closed or moved in.
  void watch(const fs::path& folder) {
    if (wd_ >= 0) inotify_rm_watch(fd_, wd_);
    wd_ = inotify_add_watch(fd_, folder.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO);
    if (wd_ < 0) {
      throw Error(ErrorKind::bad_value, "watch",
                  fmt::format("cannot watch {} ({}): run `attn check` after each save instead",
                              folder.string(), std::strerror(errno)));
    }
  }
  int fd() const { return fd_; }
  // Reads the events waiting; true when one was about `file`.
  bool drain(const std::string& file) const {
    bool about = false;
    alignas(inotify_event) char buffer[16 * (sizeof(inotify_event) + NAME_MAX + 1)];
    for (;;) {
      const ssize_t n = read(fd_, buffer, sizeof buffer);
      if (n <= 0) return about;
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if (event->len > 0 && file == event->name) about = true;
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
  }

 private:
  int fd_;
  int wd_ = -1;
};

enum class Wake { saved, check, hint, quit };

// Sleeps until the exercise's source is saved or a command is typed. A save is acted on once the
// editor has been quiet for a fifth of a second, so that one save is one check.
Wake wait_for_change(const Inotify& inotify, const std::string& file, bool& typing) {
  for (;;) {
    pollfd fds[2] = {{inotify.fd(), POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    const int ready = poll(fds, typing ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::internal, "watch", std::strerror(errno));
    }
    if ((fds[0].revents & POLLIN) != 0 && inotify.drain(file)) {
      for (pollfd quiet = {inotify.fd(), POLLIN, 0}; poll(&quiet, 1, 200) > 0;)
        inotify.drain(file);
      return Wake::saved;
    }
    if (typing && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      char line[64] = {};
      const ssize_t n = read(STDIN_FILENO, line, sizeof line - 1);
      if (n <= 0) {
        typing = false;  // stdin ended: watch the files alone
        continue;
      }
      switch (line[0]) {
        case 'q':
          return Wake::quit;
        case 'h':
          return Wake::hint;
        case 'c':
          return Wake::check;
        default:
          break;
      }
    }
  }
}

int run_watch(const WatchOptions& o) {
  const fs::path tree = course::find_tree(o.dir);
  const std::vector<Exercise> all = course::find_exercises(tree);
  course::refresh_compile_commands(tree, all);
  const bool pinned = !o.lesson.empty();
  const Exercise* current =
      pinned ? &course::exercise_named(all, o.lesson, "") : course::current_exercise(tree, all);
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  const bool color = render::use_color(o.color == "always"  ? render::ColorMode::always
                                       : o.color == "never" ? render::ColorMode::never
                                                            : render::ColorMode::automatic);
  bool typing = isatty(STDIN_FILENO) != 0;
  Inotify inotify;
  std::string note;  // said above the next report: a hint, or the exercise just finished
  while (current != nullptr) {
    const CheckRun run = check_exercises(tree, all, {*current}, {o.timeout, o.full_errors, color});
    const std::string file = current->source().filename().string();
    std::string screen = terminal ? "\x1b[H\x1b[2J" : "\n";
    screen += note + run.text;
    note.clear();
    if (run.passed && !pinned) {
      const Exercise* next = course::next_exercise(tree, all);
      if (next == nullptr) {
        std::fputs((screen + "Every exercise passes. Well done.\n").c_str(), stdout);
        std::fflush(stdout);
        return kExitOk;
      }
      if (next != current) {
        note = fmt::format("✓ {} is done; on to {}.\n\n", current->label(), next->label());
        current = next;
        std::fputs(screen.c_str(), stdout);
        std::fflush(stdout);
        continue;
      }
      // It passed, yet it is the next one still: its progress could not be recorded.
      screen += fmt::format(
          "\n{} passes, but .attn/progress.json could not be written (is .attn a folder you can "
          "write?), so watch stays on it: `attn watch LESSON` watches another.\n",
          current->label());
    }
    inotify.watch(current->folder);
    screen += fmt::format(
        "\nWatching {}: save it to check again{}.\n",
        fs::relative(current->source(), tree).string(),
        typing ? "; type h and Enter for a hint, c to check now, q to quit" : " (Ctrl-C quits)");
    std::fputs(screen.c_str(), stdout);
    std::fflush(stdout);
    for (bool again = false; !again;) {
      switch (wait_for_change(inotify, file, typing)) {
        case Wake::quit:
          return kExitOk;
        case Wake::hint:
          try {
            std::fputs(("\n" + hint_text(tree, *current)).c_str(), stdout);
          } catch (const Error& e) {
            std::fputs(fmt::format("\n{}\n", e.detail()).c_str(), stdout);
          }
          std::fflush(stdout);
          break;
        case Wake::saved:
        case Wake::check:
          again = true;
          break;
      }
    }
  }
  std::fputs(course::exercise_progress_text(tree, all).c_str(), stdout);
  return kExitOk;
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<WatchOptions>();
  CLI::App* sub = app.add_subcommand(
      "watch", "check the exercise again on every save, and move on to the next when it passes");
  sub->add_option("lesson", o->lesson,
                  "watch this lesson's exercise only (default: the lesson folder you are in, else "
                  "the next unfinished one, then the ones after it)")
      ->option_text("LESSON");
  sub->add_option("--dir", o->dir,
                  "the assignment tree (default: the one around the working directory)")
      ->check(not_empty_validator("--dir", "student-tree"))
      ->option_text("DIR");
  sub->add_option("--timeout", o->timeout,
                  "seconds each test may run before it counts as failed (default 20)")
      ->check(real_validator("a time limit in seconds", 0.1, 3600.0, "60"))
      ->option_text("SECONDS");
  sub->add_flag("--full-errors", o->full_errors,
                "print every line the compiler printed (default: the first errors)");
  sub->add_option("--color", o->color, "auto (default), always, never")
      ->check(choice_validator("a color mode", {"auto", "always", "never"}))
      ->option_text("auto|always|never");
  door_callback(*sub, [o, &context] { context.exit_code = run_watch(*o); });
}

const Registration kRegistration{"watch", setup};

}  // namespace

}  // namespace attn::cli
