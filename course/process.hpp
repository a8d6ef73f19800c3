// Running another program with a time limit and capturing its output: the compiler, a check
// program, and (confined) the student's code. POSIX and Linux only: fork, exec, poll, setrlimit,
// Landlock and seccomp.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace attn::course {

// What a confined child may do. Everything the student's code touches runs confined: its
// compilation, its linking and each of its tests.
//   - files: with Landlock (Linux 5.13 and later, also in containers), it reads only `read` and
//     writes only `write`; without it, only what the user it runs as may (see `user`).
//   - user: run as root, the child becomes nobody (65534), so a container's root does not lend it
//     root's files; otherwise it keeps the caller's user.
//   - seccomp: no network sockets, no ptrace, mount, namespaces, BPF or kernel keys; and unless
//     `processes`, no new process at all (threads are allowed), so nothing outlives the test.
//   - limits: CPU seconds, address space, the size of any file it writes, no core files, and
//     its own process group, killed whole when it ends or times out.
struct Confinement {
  std::vector<std::filesystem::path> read;  // trees or single files it may read (and execute)
  std::vector<std::filesystem::path> read_by_name;  // trees whose files it may read, not list
  std::filesystem::path write;                      // the one folder it may write; none when empty
  bool processes = false;                           // compilers start their own; tests start none
  double cpu_seconds = 0.0;                         // 0: no limit beyond the wall-clock timeout
  std::size_t address_space = 0;                    // bytes; 0: none
  std::size_t file_size = 64 << 20;                 // bytes, any one file it writes
};

struct ProcessOptions {
  double timeout_seconds = 60.0;
  std::string working_dir;  // empty: this process's
  std::vector<std::pair<std::string, std::string>>
      env;                               // added to (or replacing in) the environment
  bool clear_env = false;                // start from an empty environment
  std::size_t max_output = 1 << 20;      // bytes kept per stream; the rest dropped
  const Confinement* confine = nullptr;  // run confined when set
  bool channel = false;                  // capture what the child writes on file descriptor 3
  std::size_t max_channel = 64 << 20;
};

struct ProcessResult {
  bool started = false;  // false: the program could not be run (start_error says why)
  std::string start_error;
  int exit_code = -1;      // when it exited normally
  int signal = 0;          // when a signal ended it
  bool timed_out = false;  // killed at the time limit
  std::string out;         // stdout
  std::string err;         // stderr
  std::string channel;     // file descriptor 3, when asked for
  bool channel_cut = false;
  double seconds = 0.0;

  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  // "exit code 1", "killed by signal 11 (Segmentation fault)", "timed out after 10 s", ...
  std::string status(double timeout_seconds) const;
};

// Nothing attn starts outlives it. Each child dies with attn (PR_SET_PDEATHSIG), and a guard
// process, started with the first child or folder, kills the process groups still running and
// removes the folders given here when attn ends: at SIGTERM, SIGINT or SIGHUP before attn ends
// by the same signal, and under SIGKILL or a crash just after.
void guard_folder(const std::filesystem::path& folder);
void release_folder(const std::filesystem::path& folder);  // removed by its owner: forget it

// While one lives, SIGTERM, SIGINT and SIGHUP are held rather than ending attn at once: the
// children running are ended, ending_signal_held() turns true so that the work stops where it
// can put things back, and the destructor then ends attn by that signal. Declared before what it
// protects (an installation rolled back by its destructor), so that it ends after it.
class HeldSignals {
 public:
  HeldSignals();
  ~HeldSignals();
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;
};
bool ending_signal_held();

// Runs argv[0] (searched on PATH) with argv; never throws for the child's failures.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options);

// What confinement this machine gives a child, for reports: "Landlock ABI 7, seccomp, limits,
// user nobody", or what is missing.
std::string confinement_summary();
// Whether Landlock confines files here (its ABI version, 0 when not).
int landlock_abi();

}  // namespace attn::course
