#include "view_interactive.hpp"

#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn::cli {

namespace {

// The terminal as it was, and whether it has been changed: read by the signal handler, so only
// async-signal-safe calls (tcsetattr, write) put it back.
termios g_saved{};
volatile std::sig_atomic_t g_changed = 0;
constexpr char kEnter[] = "\x1b[?1049h\x1b[?25l";  // the alternate screen; the cursor hidden
constexpr char kLeave[] = "\x1b[?25h\x1b[?1049l";

void restore_terminal() {
  if (g_changed == 0) return;
  g_changed = 0;
  tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved);
  [[maybe_unused]] const ssize_t n = write(STDOUT_FILENO, kLeave, sizeof kLeave - 1);
}

extern "C" void attn_view_on_signal(int signal_number) {
  restore_terminal();
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);  // dies of the signal, as the shell expects (130 for Ctrl-C)
}

// Raw keys (no echo, no line editing; Ctrl-C still signals) for as long as it lives.
class RawTerminal {
 public:
  RawTerminal() {
    if (tcgetattr(STDIN_FILENO, &g_saved) != 0)
      throw Error(ErrorKind::bad_value, "view",
                  "cannot read the terminal's settings: run it in a terminal, or drop "
                  "--interactive")
          .about("interactive");
    termios raw = g_saved;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      std::signal(s, attn_view_on_signal);
    g_changed = 1;
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
    [[maybe_unused]] const ssize_t n = write(STDOUT_FILENO, kEnter, sizeof kEnter - 1);
  }
  ~RawTerminal() {
    restore_terminal();
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      std::signal(s, SIG_DFL);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
};

enum class Key { none, up, down, left, right, next, previous, quit };

// The next key from the terminal: bytes are read as they come (a paste or a fast typist sends
// several keys in one read) and taken one key at a time.
Key read_key(std::string& pending) {
  while (pending.empty()) {
    char buffer[64];
    const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n <= 0) return Key::quit;  // the terminal went away
    pending.append(buffer, static_cast<std::size_t>(n));
  }
  std::size_t length = 1;
  if (pending[0] == '\x1b' && pending.size() >= 3 && (pending[1] == '[' || pending[1] == 'O'))
    length = 3;
  const std::string k = pending.substr(0, length);
  pending.erase(0, length);
  if (k == "q" || k == "Q" || k == "\x1b") return Key::quit;
  if (k == "\x1b[A" || k == "\x1bOA") return Key::up;
  if (k == "\x1b[B" || k == "\x1bOB") return Key::down;
  if (k == "\x1b[C" || k == "\x1bOC" || k == "l") return Key::right;
  if (k == "\x1b[D" || k == "\x1bOD" || k == "h") return Key::left;
  if (k == "j" || k == "\t" || k == " ") return Key::next;
  if (k == "k" || k == "\x1b[Z") return Key::previous;
  return Key::none;
}

std::size_t step(std::size_t value, std::size_t count, bool forward) {
  return forward ? (value + 1) % count : (value + count - 1) % count;
}

// The token each shown head's query `token` reads most, one line per head.
std::string reading(const AttentionView& v, std::size_t layer, std::size_t token,
                    const std::vector<std::size_t>& heads) {
  std::string out;
  for (std::size_t h : heads) {
    std::size_t best = 0;
    for (std::size_t s = 1; s < v.columns.size(); ++s)
      if (v.weights(layer, h, token, s) > v.weights(layer, h, token, best)) best = s;
    out += fmt::format("head {}: {} reads {} most ({:.2f})\n", h, v.rows[token], v.columns[best],
                       v.weights(layer, h, token, best));
  }
  return out;
}

std::string frame(const AttentionView& v, const InteractiveStart& at, int shown_head,
                  render::ViewStyle style) {
  std::string out = "\x1b[H\x1b[2J";
  std::string keys;
  if (at.kind == "head") {
    std::vector<std::size_t> heads;
    for (std::size_t h = 0; h < v.heads; ++h)
      if (shown_head < 0 || static_cast<std::size_t>(shown_head) == h) heads.push_back(h);
    style.token = at.token;
    out += render::render_head_view(v, at.layer, heads, style);
    out += "\n" + reading(v, at.layer, at.token, heads);
    keys = fmt::format(
        "layer {}/{} · heads {} · query {} ({})  —  ↑↓ layer  ←→ heads  j k "
        "query  q quit",
        at.layer, v.layers, shown_head < 0 ? std::string("all") : std::to_string(shown_head),
        at.token, v.rows[at.token]);
  } else if (at.kind == "model") {
    style.selected = std::pair<std::size_t, std::size_t>{at.layer, at.head};
    out += render::render_model_view(v, style);
    out += "\n" + reading(v, at.layer, at.token, {at.head});
    keys = fmt::format(
        "[L{} H{}] selected, query {} ({})  —  ↑↓ layer  ←→ head  j k query  q "
        "quit",
        at.layer, at.head, at.token, v.rows[at.token]);
  } else {
    out += render::render_neuron_view(v, neuron_view(v, at.layer, at.head, at.token), style);
    keys = fmt::format(
        "layer {} · head {} · query {} ({})  —  ↑↓ layer  ←→ head  j k query  q "
        "quit",
        at.layer, at.head, at.token, v.rows[at.token]);
  }
  return out + "\n" + keys + "\n";
}

}  // namespace

int run_interactive(const AttentionView& view, const InteractiveStart& start,
                    render::ViewStyle style) {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
    throw Error(ErrorKind::bad_value, "view",
                fmt::format("--interactive needs a terminal, and {} is not one: drop "
                            "--interactive to print the view, or --export FILE.html for a page "
                            "to explore",
                            isatty(STDOUT_FILENO) ? "stdin" : "stdout"))
        .about("interactive");
  InteractiveStart at = start;
  int shown_head = -1;  // head view: all heads, or one
  RawTerminal raw;
  std::string pending;
  for (;;) {
    style.width = render::terminal_width();
    if (pending.empty()) {  // redraw once the keys that came together are all taken
      const std::string text = frame(view, at, shown_head, style);
      [[maybe_unused]] const ssize_t n = write(STDOUT_FILENO, text.data(), text.size());
    }
    const Key key = read_key(pending);
    switch (key) {
      case Key::quit:
        return 0;
      case Key::up:
        at.layer = step(at.layer, view.layers, false);
        break;
      case Key::down:
        at.layer = step(at.layer, view.layers, true);
        break;
      case Key::left:
      case Key::right:
        if (at.kind == "head") {  // all heads, then each alone, round
          const int count = static_cast<int>(view.heads) + 1;
          shown_head = ((shown_head + 1) + (key == Key::right ? 1 : count - 1)) % count - 1;
        } else {
          at.head = step(at.head, view.heads, key == Key::right);
        }
        break;
      case Key::next:
        at.token = step(at.token, view.rows.size(), true);
        break;
      case Key::previous:
        at.token = step(at.token, view.rows.size(), false);
        break;
      case Key::none:
        break;
    }
  }
}

}  // namespace attn::cli
