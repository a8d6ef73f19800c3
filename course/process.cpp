#include "process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

extern char** environ;

namespace attn::course {

namespace {

// Landlock, from linux/landlock.h, written out so that older headers build it too.
constexpr long kLandlockCreateRuleset = 444;
constexpr long kLandlockAddRule = 445;
constexpr long kLandlockRestrictSelf = 446;
constexpr std::uint32_t kLandlockVersion = 1;  // LANDLOCK_CREATE_RULESET_VERSION
constexpr int kRulePathBeneath = 1;
constexpr std::uint64_t kExecute = 1, kWriteFile = 1 << 1, kReadFile = 1 << 2, kReadDir = 1 << 3,
                        kRemoveDir = 1 << 4, kRemoveFile = 1 << 5, kMakeChar = 1 << 6,
                        kMakeDir = 1 << 7, kMakeReg = 1 << 8, kMakeSock = 1 << 9,
                        kMakeFifo = 1 << 10, kMakeBlock = 1 << 11, kMakeSym = 1 << 12,
                        kRefer = 1 << 13, kTruncate = 1 << 14, kIoctlDev = 1 << 15;
constexpr std::uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
constexpr std::uint64_t kNetBindTcp = 1, kNetConnectTcp = 2;
constexpr std::uint64_t kScopeAbstractUnix = 1, kScopeSignal = 2;

struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};
struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

std::uint64_t fs_rights(int abi) {
  std::uint64_t all = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile |
                      kMakeChar | kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock |
                      kMakeSym;
  if (abi >= 2) all |= kRefer;
  if (abi >= 3) all |= kTruncate;
  if (abi >= 5) all |= kIoctlDev;
  return all;
}

// A Landlock ruleset for `confine`, made in the parent (it allocates) and applied in the child;
// -1 when Landlock is not there.
int make_ruleset(const Confinement& confine) {
  const int abi = landlock_abi();
  if (abi <= 0) return -1;
  RulesetAttr attr{fs_rights(abi), 0, 0};
  std::size_t size = sizeof(std::uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    size = 2 * sizeof(std::uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
    size = sizeof attr;
  }
  const int ruleset = static_cast<int>(syscall(kLandlockCreateRuleset, &attr, size, 0));
  if (ruleset < 0) return -1;
  const std::uint64_t file_read = kReadFile | kExecute;
  const std::uint64_t tree_read = file_read | kReadDir;
  auto allow = [&](const std::filesystem::path& path, std::uint64_t tree, std::uint64_t file) {
    const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    const bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    PathBeneathAttr rule{(dir ? tree : file & kFileRights) & fs_rights(abi), fd};
    syscall(kLandlockAddRule, ruleset, kRulePathBeneath, &rule, 0);
    close(fd);
  };
  for (const std::filesystem::path& path : confine.read)
    allow(path, tree_read, file_read);
  for (const std::filesystem::path& path : confine.read_by_name)
    allow(path, file_read, file_read);
  // What every program needs: the dynamic loader's cache, the CPU list (thread pools size
  // themselves by it), /dev/null; its own /proc entry is added in the child.
  for (const char* path : {"/etc/ld.so.cache", "/sys/devices/system/cpu"})
    allow(path, tree_read, file_read);
  allow("/dev/null", kReadFile | kWriteFile, kReadFile | kWriteFile);
  if (!confine.write.empty()) allow(confine.write, fs_rights(abi), fs_rights(abi));
  return ruleset;
}

// In the child: its own /proc entry, which the sanitizers read their memory map from.
void allow_own_proc(int ruleset) {
  const int abi = landlock_abi();
  const int fd = open("/proc/self", O_PATH | O_CLOEXEC);
  if (fd < 0) return;
  PathBeneathAttr rule{(kReadFile | kReadDir) & fs_rights(abi), fd};
  syscall(kLandlockAddRule, ruleset, kRulePathBeneath, &rule, 0);
  close(fd);
}

// The seccomp filter: x86-64 only; the calls below fail with EPERM (clone3 and openat2 with
// ENOSYS, so that the C library falls back to clone and openat, whose flags the filter reads).
// A test (no `processes`) also may not start a process, make folders, links, special files or
// new files, share memory outside its address space, or signal any process but itself.
// The child's pid in the filter, written by the child itself after fork.
constexpr std::uint32_t kSelf = 0x7ffffffe;

std::vector<sock_filter> make_filter(bool processes) {
  std::vector<sock_filter> f;
  auto stmt = [&](std::uint16_t code, std::uint32_t k) { f.push_back(BPF_STMT(code, k)); };
  auto jump = [&](std::uint16_t code, std::uint32_t k, std::uint8_t yes, std::uint8_t no) {
    f.push_back(BPF_JUMP(code, k, yes, no));
  };
  auto deny = [&](long nr, int error) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 1);
    stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(error) & 0xffff));
  };
  const auto load_nr = [&] { stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)); };
  const auto arg_low = [](int i) {
    return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * i);
  };
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  load_nr();
  // x32 calls are the same calls under other numbers.
  jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
  for (long nr : {SYS_ptrace,
                  SYS_process_vm_readv,
                  SYS_process_vm_writev,
                  SYS_mount,
                  SYS_umount2,
                  SYS_pivot_root,
                  SYS_chroot,
                  SYS_unshare,
                  SYS_setns,
                  SYS_bpf,
                  SYS_perf_event_open,
                  SYS_keyctl,
                  SYS_add_key,
                  SYS_request_key,
                  SYS_userfaultfd,
                  SYS_kexec_load,
                  SYS_init_module,
                  SYS_finit_module,
                  SYS_delete_module,
                  SYS_reboot,
                  SYS_swapon,
                  SYS_swapoff,
                  SYS_socket,
                  SYS_socketpair,
                  SYS_io_uring_setup,
                  SYS_personality,
                  SYS_open_by_handle_at,
                  SYS_name_to_handle_at,
                  SYS_shmget,
                  SYS_shmat,
                  SYS_msgget,
                  SYS_semget,
                  SYS_mq_open,
                  SYS_pidfd_open,
                  SYS_pidfd_send_signal}) {
    deny(nr, EPERM);
  }
  if (!processes) {
    for (long nr :
         {SYS_fork, SYS_vfork, SYS_mkdir, SYS_mkdirat, SYS_rename, SYS_renameat, SYS_renameat2,
          SYS_link, SYS_linkat, SYS_symlink, SYS_symlinkat, SYS_mknod, SYS_mknodat, SYS_creat,
          SYS_memfd_create, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo}) {
      deny(nr, EPERM);
    }
    deny(SYS_clone3, ENOSYS);
    deny(SYS_openat2, ENOSYS);
    // clone: a thread (CLONE_THREAD in the flags) may start, a process may not.
    jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(0));
    jump(BPF_JMP | BPF_JSET | BPF_K, 0x00010000u /* CLONE_THREAD */, 1, 0);
    stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    load_nr();
    // open and openat may open what exists, but not create a file (O_CREAT, O_TMPFILE).
    constexpr std::uint32_t kCreates = 0100 /* O_CREAT */ | 020000000 /* __O_TMPFILE */;
    for (const auto& [nr, flags] : {std::pair<long, int>{SYS_open, 1}, {SYS_openat, 2}}) {
      jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 4);
      stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(flags));
      jump(BPF_JMP | BPF_JSET | BPF_K, kCreates, 0, 1);
      stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES);
      load_nr();
    }
    // kill, tkill and tgkill only at itself (or kill(0), its own group: itself alone).
    for (long nr : {SYS_kill, SYS_tkill, SYS_tgkill}) {
      jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 8);
      stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(0) + 4);  // the high word: 0 for a pid
      jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
      stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
      stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(0));
      jump(BPF_JMP | BPF_JEQ | BPF_K, kSelf, 1, 0);
      jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);
      stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
      stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    }
  }
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  return f;
}

// The guard: a process forked once, before the first folder or child it must look after, that
// holds the other end of a socket from attn. attn tells it each process group it starts and each
// work folder it makes, and when they are gone. When the socket reaches its end (attn ended in
// any way, SIGKILL too) or attn asks on a signal, it kills the groups left and removes the
// folders. It was forked from a process that may have threads, so it makes system calls only.
constexpr char kAddGroup = 'g', kDropGroup = 'G', kAddFolder = 'f', kDropFolder = 'F',
               kFinish = 'x';
constexpr int kMaxGroups = 64, kMaxFolders = 16;
constexpr std::size_t kMaxPath = 4096;

int guard_socket = -1;  // attn's end; -1 before the guard starts, or when it could not

struct GuardState {
  pid_t groups[kMaxGroups];
  char folders[kMaxFolders][kMaxPath];
};
GuardState guarded;  // in the guard's copy of memory only

struct LinuxDirent64 {
  std::uint64_t d_ino;
  std::int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

// Removes `name` under the folder `parent` and everything in it, links not followed; 0 when it
// is gone.
int remove_tree(int parent, const char* name, int depth) {
  if (unlinkat(parent, name, 0) == 0 || errno == ENOENT) return 0;
  if (depth > 24) return -1;
  const int dir = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return errno == ENOENT ? 0 : -1;
  alignas(8) char buffer[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, dir, buffer, sizeof buffer);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const LinuxDirent64*>(buffer + at);
      at += entry->d_reclen;
      const char* child = entry->d_name;
      if (std::strcmp(child, ".") == 0 || std::strcmp(child, "..") == 0) continue;
      remove_tree(dir, child, depth + 1);
    }
  }
  close(dir);
  return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

void guard_cleans_up() {
  for (pid_t& group : guarded.groups) {
    if (group > 0) kill(-group, SIGKILL);
    group = 0;
  }
  for (char* folder : guarded.folders) {
    if (folder[0] == '\0') continue;
    // A killed process may still be finishing a write there: try again for a while.
    for (int attempt = 0; attempt < 250 && remove_tree(AT_FDCWD, folder, 0) != 0; ++attempt) {
      const timespec pause{0, 20'000'000};
      nanosleep(&pause, nullptr);
    }
    folder[0] = '\0';
  }
}

[[noreturn]] void run_guard(int socket) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE})
    signal(sig, SIG_IGN);
  setpgid(0, 0);  // out of attn's group: a terminal's ^C or a group kill does not reach it
  (void)!chdir("/");
  // Nothing of attn's stays open here (a reader waiting for attn's output to end, above all):
  // the socket moves to 3, standard streams to /dev/null, the rest is closed.
  if (socket != 3) {
    if (dup2(socket, 3) < 0) _exit(1);
    close(socket);
    socket = 3;
  }
  syscall(SYS_close_range, 4u, ~0u, 0u);
  const int null = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) {
    if (null >= 0 && null != fd) dup2(null, fd);
  }
  if (null > 3) close(null);
  char message[1 + sizeof(pid_t) + kMaxPath];
  for (;;) {
    const ssize_t n = recv(socket, message, sizeof message - 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      guard_cleans_up();
      _exit(0);
    }
    pid_t group = 0;
    if (n >= static_cast<ssize_t>(1 + sizeof group)) std::memcpy(&group, message + 1, sizeof group);
    message[n] = '\0';
    const char* path = message + 1;
    switch (message[0]) {
      case kAddGroup:
        for (pid_t& slot : guarded.groups) {
          if (slot == 0) {
            slot = group;
            break;
          }
        }
        break;
      case kDropGroup:
        for (pid_t& slot : guarded.groups) {
          if (slot == group) slot = 0;
        }
        break;
      case kAddFolder:
        for (char* slot : guarded.folders) {
          if (slot[0] == '\0') {
            std::memcpy(slot, path, static_cast<std::size_t>(n));  // its '\0' included
            break;
          }
        }
        break;
      case kDropFolder:
        for (char* slot : guarded.folders) {
          if (std::strcmp(slot, path) == 0) slot[0] = '\0';
        }
        break;
      case kFinish:
        guard_cleans_up();
        (void)!send(socket, "k", 1, MSG_NOSIGNAL);
        break;
      default:
        break;
    }
  }
}

// While HeldSignals lives: the first ending signal, kept for its end.
volatile sig_atomic_t holding = 0;
volatile sig_atomic_t held_signal = 0;

// SIGTERM, SIGINT and SIGHUP: the guard ends what attn started and removes its folders, then
// attn ends by the same signal (its exit status 128 + the signal's number). While signals are
// held, the signal is kept instead, and the children running are ended.
void end_by_signal(int sig) {
  if (holding != 0) {
    if (held_signal == 0) {
      held_signal = sig;
      static const char message[] = "\nattn: stopping: putting back what it changed first\n";
      (void)!write(STDERR_FILENO, message, sizeof message - 1);
    }
    return;
  }
  if (guard_socket >= 0 && send(guard_socket, &kFinish, 1, MSG_NOSIGNAL) == 1) {
    char done = 0;
    while (recv(guard_socket, &done, 1, 0) < 0 && errno == EINTR) {
    }
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

constexpr int kEndingSignals[] = {SIGTERM, SIGINT, SIGHUP};

bool start_guard() {
  static const bool started = [] {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return false;
    const pid_t pid = fork();
    if (pid < 0) {
      close(pair[0]), close(pair[1]);
      return false;
    }
    if (pid == 0) {
      close(pair[0]);
      run_guard(pair[1]);
    }
    close(pair[1]);
    guard_socket = pair[0];
    struct sigaction action {};
    action.sa_handler = end_by_signal;
    sigemptyset(&action.sa_mask);
    for (const int sig : kEndingSignals)
      sigaddset(&action.sa_mask, sig);
    for (const int sig : kEndingSignals) {
      struct sigaction before {};
      // A signal this process was started to ignore (nohup, a background job) stays ignored.
      if (sigaction(sig, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
      sigaction(sig, &action, nullptr);
    }
    return true;
  }();
  return started;
}

void tell_guard(char what, pid_t group, const std::string& path = "") {
  if (!start_guard()) return;
  char message[1 + kMaxPath];
  message[0] = what;
  std::size_t size = 1;
  if (what == kAddGroup || what == kDropGroup) {
    std::memcpy(message + 1, &group, sizeof group);
    size += sizeof group;
  } else {
    if (path.empty() || path.size() >= kMaxPath) return;  // never a cut path
    std::memcpy(message + 1, path.data(), path.size());
    size += path.size();
  }
  (void)!send(guard_socket, message, size, MSG_NOSIGNAL);
}

}  // namespace

HeldSignals::HeldSignals() {
  start_guard();
  holding = 1;
}

HeldSignals::~HeldSignals() {
  holding = 0;
  const int sig = held_signal;
  if (sig != 0) end_by_signal(sig);
}

bool ending_signal_held() {
  return held_signal != 0;
}

void guard_folder(const std::filesystem::path& folder) {
  tell_guard(kAddFolder, 0, std::filesystem::absolute(folder).string());
}

void release_folder(const std::filesystem::path& folder) {
  tell_guard(kDropFolder, 0, std::filesystem::absolute(folder).string());
}

namespace {

void append_capped(std::string& to, const char* data, std::size_t n, std::size_t cap,
                   bool* cut = nullptr) {
  if (to.size() < cap) to.append(data, std::min(n, cap - to.size()));
  if (cut != nullptr && n > 0 && to.size() >= cap) *cut = true;
}

[[noreturn]] void child_fails(int pipe_fd, int code) {
  (void)!write(pipe_fd, &code, sizeof code);
  _exit(127);
}

void set_limit(int resource, rlim_t value) {
  const rlimit limit{value, value};
  setrlimit(resource, &limit);
}

bool sanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace

int landlock_abi() {
  static const int abi = [] {
    const long v = syscall(kLandlockCreateRuleset, nullptr, 0, kLandlockVersion);
    return v > 0 ? static_cast<int>(v) : 0;
  }();
  return abi;
}

std::string confinement_summary() {
  std::string text = landlock_abi() > 0
                         ? fmt::format("files: Landlock ABI {}", landlock_abi())
                         : "files: no Landlock on this kernel, so the user's permissions only";
  text += "; seccomp: no sockets, no new processes in tests; limits: CPU, memory, file size";
  if (geteuid() == 0) text += "; user: nobody";
  return text;
}

std::string ProcessResult::status(double timeout_seconds) const {
  if (!started) return start_error;
  if (timed_out) return fmt::format("timed out after {:g} s", timeout_seconds);
  if (signal == SIGXCPU) return "killed at its CPU time limit (signal 24, SIGXCPU)";
  if (signal == SIGXFSZ) return "killed for writing a file over its size limit (SIGXFSZ)";
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit code {}", exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult result;
  const auto start = std::chrono::steady_clock::now();
  int out_pipe[2], err_pipe[2], exec_pipe[2], channel_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      pipe2(exec_pipe, O_CLOEXEC) != 0 ||
      (options.channel && pipe2(channel_pipe, O_CLOEXEC) != 0)) {
    result.start_error = fmt::format("cannot create pipes: {}", std::strerror(errno));
    return result;
  }
  std::vector<std::string> env_strings;
  if (!options.clear_env) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const std::string key = entry.substr(0, entry.find('='));
      bool replaced = false;
      for (const auto& [name, value] : options.env)
        replaced = replaced || name == key;
      if (!replaced) env_strings.push_back(entry);
    }
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

  // Everything the child needs is made here: after fork it only makes system calls.
  const Confinement* confine = options.confine;
  const int ruleset = confine != nullptr ? make_ruleset(*confine) : -1;
  std::vector<sock_filter> filter;
  sock_fprog program{};
  if (confine != nullptr) {
    filter = make_filter(confine->processes);
    program.len = static_cast<unsigned short>(filter.size());
    program.filter = filter.data();
  }
  const bool as_root = geteuid() == 0;

  // The guard knows the child's group before a signal can end attn: the ending signals wait
  // until then.
  start_guard();
  sigset_t ending, before;
  sigemptyset(&ending);
  for (const int sig : kEndingSignals)
    sigaddset(&ending, sig);
  pthread_sigmask(SIG_BLOCK, &ending, &before);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    result.start_error = fmt::format("cannot start {}: {}", argv.front(), std::strerror(errno));
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: the end of the run kills the group
    for (const int sig : kEndingSignals)
      signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &before, nullptr);
    // It dies with attn, however attn ends (the guard ends what it started in its group).
    // Checked again after a change of user, which clears the setting.
    const auto die_with_parent = [&] {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) _exit(127);
    };
    die_with_parent();
    int report = exec_pipe[1];
    if (report < 4) report = fcntl(report, F_DUPFD_CLOEXEC, 10);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    const int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_in >= 0) dup2(null_in, STDIN_FILENO);
    if (options.channel) {
      if (channel_pipe[1] == 3) {
        fcntl(3, F_SETFD, 0);
      } else {
        dup2(channel_pipe[1], 3);  // dup2 clears close-on-exec on the copy
      }
    }
    // Nothing else this process holds open reaches the program.
    syscall(SYS_close_range, options.channel ? 4u : 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
    if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) {
      child_fails(report, errno);
    }
    if (confine != nullptr) {
      set_limit(RLIMIT_CORE, 0);
      set_limit(RLIMIT_FSIZE, confine->file_size);
      set_limit(RLIMIT_NOFILE, 256);
      if (confine->cpu_seconds > 0) {
        set_limit(RLIMIT_CPU, static_cast<rlim_t>(confine->cpu_seconds + 1));
      }
      // The sanitizers reserve terabytes of address space they never touch: there the limit
      // is on resident memory instead (ASAN_OPTIONS, set by the caller).
      if (confine->address_space > 0 && !sanitized()) {
        set_limit(RLIMIT_AS, confine->address_space);
      }
      if (as_root) {
        constexpr uid_t kNobody = 65534;
        if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) {
          child_fails(report, errno);
        }
        die_with_parent();
        set_limit(RLIMIT_NPROC, confine->processes ? 256 : 64);
      }
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fails(report, errno);
      if (ruleset >= 0) {
        allow_own_proc(ruleset);
        if (syscall(kLandlockRestrictSelf, ruleset, 0) != 0) child_fails(report, errno);
      }
      const auto self = static_cast<std::uint32_t>(getpid());
      for (std::size_t i = 0; i < program.len; ++i) {
        if (program.filter[i].k == kSelf && BPF_CLASS(program.filter[i].code) == BPF_JMP)
          program.filter[i].k = self;
      }
      if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) child_fails(report, errno);
    }
    environ = child_env.data();
    execvp(child_argv[0], child_argv.data());
    child_fails(report, errno);
  }
  setpgid(pid, pid);
  tell_guard(kAddGroup, pid);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (ruleset >= 0) close(ruleset);
  close(out_pipe[1]), close(err_pipe[1]), close(exec_pipe[1]);
  if (options.channel) close(channel_pipe[1]);
  int exec_errno = 0;
  if (read(exec_pipe[0], &exec_errno, sizeof exec_errno) ==
      static_cast<ssize_t>(sizeof exec_errno)) {
    result.start_error = fmt::format("cannot run {}: {}", argv.front(), std::strerror(exec_errno));
  }
  close(exec_pipe[0]);

  const auto deadline = start + std::chrono::duration<double>(options.timeout_seconds);
  pollfd fds[3] = {{out_pipe[0], POLLIN, 0},
                   {err_pipe[0], POLLIN, 0},
                   {options.channel ? channel_pipe[0] : -1, POLLIN, 0}};
  int open_streams = options.channel ? 3 : 2;
  std::string* sinks[3] = {&result.out, &result.err, &result.channel};
  const std::size_t caps[3] = {options.max_output, options.max_output, options.max_channel};
  char buffer[65536];
  while (open_streams > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (held_signal != 0) {  // attn is stopping: the child's work is no longer wanted
      kill(-pid, SIGKILL);
      break;
    }
    const int ready = poll(fds, 3, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 3; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        append_capped(*sinks[i], buffer, static_cast<std::size_t>(n), caps[i],
                      i == 2 ? &result.channel_cut : nullptr);
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
  // Whatever it started in its group ends with it.
  kill(-pid, SIGKILL);
  tell_guard(kDropGroup, pid);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.start_error.empty()) return result;
  result.started = true;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !result.timed_out) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace attn::course
