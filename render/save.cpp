// The outputs of one run as one transaction. Each target is first written beside itself under a
// temporary name (".NAME.attn-XXXXXX", in the same folder, so that moving it is a rename), then
// swapped into place with renameat2: RENAME_EXCHANGE when a target exists (the old one is then at
// the temporary name, ready to be swapped back), RENAME_NOREPLACE when it does not. stdout is
// written last; when it fails, the swaps are undone. SIGINT, SIGTERM and SIGHUP undo whatever is
// done so far from a handler that uses only system calls, then end the process as the signal
// would have.
#include "save.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "file_mark.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "json.hpp"
#include "signals_held.hpp"
#include "text.hpp"

namespace attn::render {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kManifest = "manifest.json";

Error save_error(std::string_view message) {
  return Error(ErrorKind::bad_file, "save", message).about("save");
}
Error weights_error(std::string_view message) {
  return Error(ErrorKind::bad_file, "save_weights", message).about("save_weights");
}
Error checkpoint_error(std::string_view message) {
  return Error(ErrorKind::bad_file, "save_checkpoint", message).about("save_checkpoint");
}
Error write_error(std::string_view subject, std::string_view message) {
  return Error(ErrorKind::write_failed, subject, message).about(std::string(subject));
}

std::string lowercase_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// The save directory as a path without trailing separators, with a final "." or ".." resolved:
// "out/" and "out/." name out, and ".." the directory above.
fs::path save_target(const std::string& text) {
  auto strip = [](const fs::path& p) {
    std::string s = p.string();
    while (s.size() > 1 && s.back() == '/')
      s.pop_back();
    return fs::path(s);
  };
  fs::path p = strip(fs::path(text).lexically_normal());
  if (p.filename() == "." || p.filename() == ".." || p.empty()) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(p.empty() ? fs::path(".") : p, ec);
    if (!ec) p = strip(absolute.lexically_normal());
  }
  return p;
}

fs::path parent_of(const fs::path& p) {
  return p.parent_path().empty() ? fs::path(".") : p.parent_path();
}

// Whether the weights file goes into the save directory (then it is part of the save).
bool weights_into_save(const OutputOptions& o) {
  if (o.save_dir.empty() || o.save_weights.empty()) return false;
  return parent_of(fs::path(o.save_weights).lexically_normal()) == save_target(o.save_dir);
}

// What a target looked like when the run began, so that the commit can see whether another
// program replaced it meanwhile.
struct Identity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const Identity&) const = default;
};

Identity identity_of(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return {};
  return {true, st.st_dev, st.st_ino};
}

// The names of the files an earlier attn save holds: manifest.json, each step's file and the
// weights file it lists. Throws when the directory holds anything else or its manifest is not
// attn's.
std::set<std::string> files_of_save(const fs::path& dir, const std::string& shown) {
  const fs::path manifest = dir / kManifest;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(manifest, ec))) {
    throw save_error(fmt::format(
        "'{}' exists and is not an attn save (it has no manifest.json): choose a new or "
        "empty directory",
        printable(shown)));
  }
  std::set<std::string> allowed = {std::string(kManifest)};
  try {
    std::FILE* file = std::fopen(manifest.c_str(), "rb");
    std::string text;
    if (file != nullptr) {
      char buffer[65536];
      std::size_t n;
      while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0 && text.size() < (1u << 20))
        text.append(buffer, n);
      std::fclose(file);
    }
    const auto doc = nlohmann::json::parse(text);
    if (!doc.is_object() || !doc.contains("lesson") || !doc.contains("steps") ||
        !doc["steps"].is_array()) {
      throw std::runtime_error("not attn's manifest");
    }
    for (const auto& step : doc["steps"])
      allowed.insert(step.at("file").get<std::string>());
    if (doc.contains("weights")) allowed.insert(doc["weights"].get<std::string>());
    for (const auto& file : doc.value("files", nlohmann::json::array()))
      allowed.insert(file.get<std::string>());
  } catch (const std::exception&) {
    throw save_error(fmt::format(
        "'{}' exists and its manifest.json is not one attn wrote: choose a new or empty "
        "directory",
        printable(shown)));
  }
  std::vector<std::string> others;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!allowed.contains(name) || !entry.is_regular_file(ec) || entry.is_symlink(ec))
      others.push_back(name);
  }
  if (ec) throw save_error(fmt::format("cannot read '{}': {}", printable(shown), ec.message()));
  if (!others.empty()) {
    std::sort(others.begin(), others.end());
    const std::size_t shown_count = std::min<std::size_t>(others.size(), 3);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < shown_count; ++i)
      names.push_back(printable(others[i]));
    throw save_error(fmt::format(
        "'{}' holds {} that attn did not write ({}{}): choose a new or empty directory; "
        "attn replaces only its own saves",
        printable(shown), others.size() == 1 ? "a file" : "files", fmt::join(names, ", "),
        others.size() > shown_count ? ", ..." : ""));
  }
  return allowed;
}

// Refuses, with `error`, a folder that `target` (as the user wrote it) cannot be made in.
void check_folder(const fs::path& folder, const std::string& target,
                  Error (*error)(std::string_view)) {
  std::error_code ec;
  const fs::file_status status = fs::status(folder, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw error(fmt::format("cannot write '{}': its folder '{}': {}", printable(target),
                            printable(folder.string()), ec.message()));
  }
  if (!fs::exists(status)) {
    throw error(fmt::format(
        "cannot write '{}': its folder '{}' does not exist; create it first or choose another "
        "path",
        printable(target), printable(folder.string())));
  }
  if (!fs::is_directory(status)) {
    throw error(
        fmt::format("cannot write '{}': '{}' is a file, not a directory; choose another path",
                    printable(target), printable(folder.string())));
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw error(fmt::format("cannot write '{}' in '{}': {}; choose a writable directory",
                            printable(target), printable(folder.string()), std::strerror(errno)));
  }
}

// Checks that the save directory may be written, and returns what it is now.
Identity check_save_target(const std::string& text) {
  if (text.empty()) throw save_error("the directory name is empty: give a path, e.g. <save> out");
  const fs::path dir = save_target(text);
  check_folder(parent_of(dir), text, save_error);
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw save_error(fmt::format("cannot use '{}': {}", printable(text), ec.message()));
  }
  if (!fs::exists(status)) return {};
  if (fs::is_symlink(status)) {
    throw save_error(fmt::format(
        "'{}' is a symbolic link: give the directory itself, or a new name", printable(text)));
  }
  if (!fs::is_directory(status)) {
    throw save_error(
        fmt::format("'{}' is a file, not a directory: choose a directory path", printable(text)));
  }
  const fs::path here = fs::weakly_canonical(fs::current_path(ec), ec),
                 there = fs::weakly_canonical(dir, ec);
  const auto [end, _] = std::mismatch(there.begin(), there.end(), here.begin(), here.end());
  if (!ec && end == there.end()) {
    throw save_error(fmt::format("'{}' is {} directory: save into a new directory, e.g. <save> out",
                                 printable(text),
                                 there == here ? "the current" : "above the current"));
  }
  if (!fs::is_empty(dir, ec)) files_of_save(dir, text);
  return identity_of(dir);
}

// Checks a weights or checkpoint file `path` may be written: about `subject`, with `example` as
// the name to suggest; `in_save` when it goes into the save directory, whose checks cover its
// folder.
void check_weights_file(const std::string& path, std::string_view subject, std::string_view example,
                        bool in_save) {
  const auto error = [&](std::string_view message) {
    return Error(ErrorKind::bad_file, subject, message).about(std::string(subject));
  };
  if (path.empty())
    throw error(fmt::format("the file name is empty: give a path, e.g. <{}> {}", subject, example));
  const std::string ext = lowercase_extension(path);
  const bool checkpoint = subject == "save_checkpoint";
  if (ext == ".pt" || ext == ".pth") {
    throw error(fmt::format(
        "'{}': attn writes {}, not PyTorch pickles: name it {} and load it "
        "with safetensors.torch.load_file",
        printable(path), checkpoint ? ".safetensors" : ".safetensors or .npz", example));
  }
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) {
    std::string dir = path;
    while (dir.size() > 1 && dir.back() == '/')
      dir.pop_back();
    throw error(fmt::format("'{}' is a folder: give a file name, e.g. <{}> {}/{}", printable(path),
                            subject, printable(dir), example));
  }
  if (checkpoint ? ext != ".safetensors" : ext != ".safetensors" && ext != ".npz") {
    throw error(checkpoint
                    ? fmt::format("'{}': checkpoints are .safetensors files; name it e.g. {}",
                                  printable(path), example)
                    : fmt::format("'{}': attn writes .safetensors or .npz, chosen by the "
                                  "extension: name the file e.g. {}",
                                  printable(path), example));
  }
  const fs::file_status itself = fs::symlink_status(path, ec);
  if (fs::exists(itself) && !fs::is_symlink(itself) && !fs::is_regular_file(itself)) {
    throw error(
        fmt::format("'{}' exists and is not a regular file: choose another name", printable(path)));
  }
  if (in_save) return;  // the save directory's checks cover its folder, and the files it lists
  refuse_foreign_file(path, subject);
  check_folder(parent_of(fs::path(path).lexically_normal()), path,
               checkpoint ? checkpoint_error : weights_error);
}

void check_weights_target(const OutputOptions& o) {
  check_weights_file(o.save_weights, "save_weights", "w.safetensors", weights_into_save(o));
}

// ---- The transaction's state, shared with the signal handler. It is changed only while the
// signals are blocked, and the handler only reads it and makes system calls.

struct Swap {
  std::string target;              // where the output goes
  std::string temporary;           // where it was staged; after an exchange, where the old one is
  std::vector<std::string> files;  // a directory's files written so far (names), or empty
  std::vector<std::string> old_files;  // after an exchange: the old directory's files
  bool directory = false;
  bool staged = false;     // something exists at `temporary`
  bool committed = false;  // moved into place
  bool exchanged = false;  // committed by exchange: the old one is at `temporary`
  // On a filesystem without RENAME_EXCHANGE (NFS), the old output steps aside to here first.
  std::string aside;
  bool stepped_aside = false;
};

struct Transaction {
  Swap save, weights;
  std::array<Swap, kMostFiles> files;  // the FileOutputs, in order
  bool finishing = false;              // stdout is written: the run has succeeded
};

Transaction g_transaction;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Removes what is at `path`: a directory's listed files and then the directory, or a file.
void remove_staged(const std::string& path, const std::vector<std::string>& files, bool directory) {
  if (!directory) {
    ::unlink(path.c_str());
    return;
  }
  const int dir = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    for (const std::string& name : files)
      ::unlinkat(dir, name.c_str(), 0);
    ::close(dir);
  }
  ::rmdir(path.c_str());
}

// Puts a target back as it was. After an exchange the new output is at `temporary` again.
void undo(Swap& s) {
  if (s.committed) {
    if (s.exchanged) {
      ::renameat2(AT_FDCWD, s.temporary.c_str(), AT_FDCWD, s.target.c_str(), RENAME_EXCHANGE);
    } else {
      ::rename(s.target.c_str(), s.temporary.c_str());
      if (s.stepped_aside) ::rename(s.aside.c_str(), s.target.c_str());
    }
    s.committed = s.exchanged = s.stepped_aside = false;
  }
  if (s.staged) remove_staged(s.temporary, s.files, s.directory);
  s.staged = false;
}

// After success: the old outputs, now at the temporary names, go.
void finish(Swap& s) {
  if (s.exchanged) remove_staged(s.temporary, s.old_files, s.directory);
  if (s.stepped_aside) remove_staged(s.aside, s.old_files, s.directory);
  s.staged = s.exchanged = s.stepped_aside = false;
}

extern "C" void on_signal(int signal) {
  Transaction& t = g_transaction;
  if (t.finishing) {
    finish(t.save);
    finish(t.weights);
    for (Swap& f : t.files)
      finish(f);
  } else {
    for (Swap& f : t.files)
      undo(f);
    undo(t.weights);
    undo(t.save);
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(signal, &default_action, nullptr);
  ::raise(signal);
}

// Installs on_signal for the life of the transaction, and ignores SIGPIPE so that a reader that
// went away shows as a write error (EPIPE) that can be undone; the SIGPIPE is raised after.
class SignalHandlers {
 public:
  SignalHandlers() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    for (int s : kSignals)
      sigaddset(&action.sa_mask, s);
    for (std::size_t i = 0; i < std::size(kSignals); ++i)
      ::sigaction(kSignals[i], &action, &saved_[i]);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &saved_pipe_);
  }
  ~SignalHandlers() {
    for (std::size_t i = 0; i < std::size(kSignals); ++i)
      ::sigaction(kSignals[i], &saved_[i], nullptr);
    ::sigaction(SIGPIPE, &saved_pipe_, nullptr);
  }
  SignalHandlers(const SignalHandlers&) = delete;
  SignalHandlers& operator=(const SignalHandlers&) = delete;

 private:
  struct sigaction saved_[std::size(kSignals)]{};
  struct sigaction saved_pipe_ {};
};

// A unique name beside `target`: ".NAME.attn-XXXXXX", made as a directory or an empty file.
std::string make_temporary(const fs::path& target, bool directory, std::string_view subject) {
  std::string pattern =
      (parent_of(target) / fmt::format(".{}.attn-XXXXXX", target.filename().string())).string();
  if (directory) {
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw write_error(subject, fmt::format("cannot create '{}': {}; choose a writable directory",
                                             printable(target.string()), std::strerror(errno)));
    }
  } else {
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) {
      throw write_error(subject, fmt::format("cannot write '{}': {}; choose a writable directory",
                                             printable(target.string()), std::strerror(errno)));
    }
    ::close(fd);
  }
  return pattern;
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  bool ok = file != nullptr;
  if (ok) ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  if (file != nullptr) ok = std::fclose(file) == 0 && ok;
  if (!ok) throw std::system_error(errno, std::generic_category());
}

std::vector<unsigned char> weights_bytes(const lessons::LessonRun& run, const std::string& path) {
  return lowercase_extension(path) == ".npz"
             ? marked_npz(serialize_npz(run.state_dict))
             : serialize_safetensors(run.state_dict, {{"written_by", "attn"}});
}

// True when a SIGINT, SIGTERM or SIGHUP arrived while they were blocked.
bool interrupted() {
  sigset_t pending;
  sigpending(&pending);
  for (int s : kSignals)
    if (sigismember(&pending, s) == 1) return true;
  return false;
}

void stage_save(const lessons::LessonRun& run, const OutputOptions& o, Swap& s) {
  const fs::path target = save_target(o.save_dir);
  {
    SignalsHeld blocked;
    s.target = target.string();
    s.directory = true;
    s.temporary = make_temporary(target, true, "save");
    s.staged = true;
  }
  nlohmann::ordered_json manifest;
  manifest["lesson"] = run.lesson();
  manifest["settings"] = nlohmann::ordered_json::object();
  for (const auto& [name, value] : run.settings())
    manifest["settings"][name] = value;
  manifest["steps"] = nlohmann::ordered_json::array();
  auto write = [&](const std::string& name, const std::vector<unsigned char>& bytes) {
    {
      SignalsHeld blocked;  // the handler reads s.files
      s.files.push_back(name);
    }
    try {
      write_bytes((fs::path(s.temporary) / name).string(), bytes);
    } catch (const std::system_error& e) {
      throw write_error("save",
                        fmt::format("cannot write '{}': {}; free space or choose another directory",
                                    printable(o.save_dir), e.code().message()));
    }
  };
  for (const lessons::Step* step : run.steps()) {
    const std::string file = step->name + ".npy";
    write(file, serialize_npy(step->value));
    manifest["steps"].push_back({{"name", step->name},
                                 {"file", file},
                                 {"shape", step->value.shape},
                                 {"dtype", std::string(dtype_name(step->value.dtype))}});
  }
  if (!run.save_files().empty()) manifest["files"] = nlohmann::ordered_json::array();
  for (const auto& [name, bytes] : run.save_files()) {
    write(name, std::vector<unsigned char>(bytes.begin(), bytes.end()));
    manifest["files"].push_back(name);
  }
  manifest["parameters"] = run.parameters;
  if (weights_into_save(o)) {
    const std::string name = fs::path(o.save_weights).filename().string();
    try {
      write(name, weights_bytes(run, o.save_weights));
    } catch (const Error& e) {
      throw Error(e.kind(), "save_weights", e.detail()).about("save_weights");
    }
    manifest["weights"] = name;
  }
  const std::string text = manifest.dump(2) + "\n";
  write(std::string(kManifest), std::vector<unsigned char>(text.begin(), text.end()));
}

// Stages `bytes` beside `target`; errors are about `subject`.
void stage_file(const std::string& target, const std::vector<unsigned char>& bytes,
                std::string_view subject, Swap& s) {
  {
    SignalsHeld blocked;
    s.target = target;
    s.temporary = make_temporary(fs::path(target), false, subject);
    s.staged = true;
  }
  try {
    write_bytes(s.temporary, bytes);
  } catch (const std::system_error& e) {
    throw write_error(subject,
                      fmt::format("cannot write '{}': {}; free space or choose another path",
                                  printable(target), e.code().message()));
  }
}

// Stages a folder of files beside `target`; errors are about `subject`.
void stage_folder(const std::string& target,
                  const std::vector<std::pair<std::string, std::vector<unsigned char>>>& files,
                  std::string_view subject, Swap& s) {
  {
    SignalsHeld blocked;
    s.target = save_target(target).string();
    s.directory = true;
    s.temporary = make_temporary(fs::path(s.target), true, subject);
    s.staged = true;
  }
  for (const auto& [name, bytes] : files) {
    {
      SignalsHeld blocked;  // the handler reads s.files
      s.files.push_back(name);
    }
    try {
      write_bytes((fs::path(s.temporary) / name).string(), bytes);
    } catch (const std::system_error& e) {
      throw write_error(subject,
                        fmt::format("cannot write '{}': {}; free space or choose another folder",
                                    printable(target), e.code().message()));
    }
  }
}

void stage_weights(const lessons::LessonRun& run, const OutputOptions& o, Swap& s) {
  std::vector<unsigned char> bytes;
  try {
    bytes = weights_bytes(run, o.save_weights);
  } catch (const Error& e) {
    throw Error(e.kind(), "save_weights", e.detail()).about("save_weights");
  }
  stage_file(o.save_weights, bytes, "save_weights", s);
}

void commit(Swap& s, bool target_exists, std::string_view subject, const std::string& shown);

// Commits a staged file unless another program changed its target since `before`.
void commit_file(Swap& s, const Identity& before, std::string_view subject,
                 const std::string& shown) {
  if (identity_of(s.target) != before) {
    throw write_error(subject, fmt::format("'{}' was changed by another program while this run was "
                                           "writing it: nothing was written; run again",
                                           printable(shown)));
  }
  commit(s, before.exists, subject, shown);
}

// Moves a staged output into place: swapped with the target when there is one, else renamed. A
// signal that arrived while the signals were blocked is delivered as this returns, and its
// handler undoes everything: so an interrupted run never goes on from here.
void commit(Swap& s, bool target_exists, std::string_view subject, const std::string& shown) {
  SignalsHeld blocked;
  if (interrupted()) return;
  const auto changed = [&] {
    return write_error(
        subject, fmt::format("'{}' was changed by another program while this run was writing it: "
                             "nothing was written; run again",
                             printable(shown)));
  };
  const auto failed = [&](int error) {
    return write_error(
        subject, fmt::format("cannot write '{}': {}", printable(shown), std::strerror(error)));
  };
  const unsigned flags = target_exists ? RENAME_EXCHANGE : RENAME_NOREPLACE;
  if (::renameat2(AT_FDCWD, s.temporary.c_str(), AT_FDCWD, s.target.c_str(), flags) == 0) {
    s.committed = true;
    s.exchanged = target_exists;
    return;
  }
  const int error = errno;
  if (error == EEXIST || (target_exists && error == ENOENT)) throw changed();
  if (error != EINVAL && error != ENOSYS) throw failed(error);
  // A filesystem without renameat2's flags (NFS): the same moves, one at a time.
  struct stat st {};
  if (!target_exists) {
    if (::lstat(s.target.c_str(), &st) == 0) throw changed();
    if (::rename(s.temporary.c_str(), s.target.c_str()) != 0) throw failed(errno);
    s.committed = true;
    return;
  }
  s.aside = s.temporary + "-old";
  if (::rename(s.target.c_str(), s.aside.c_str()) != 0) throw failed(errno);
  s.stepped_aside = true;
  if (::rename(s.temporary.c_str(), s.target.c_str()) != 0) {
    const int rename_error = errno;
    ::rename(s.aside.c_str(), s.target.c_str());
    s.stepped_aside = false;
    throw failed(rename_error);
  }
  s.committed = true;
}

// Holds an exclusive lock on a folder while the outputs move into place, so that two runs
// saving to the same place take turns: the second sees the first's save and fails cleanly.
class FolderLock {
 public:
  explicit FolderLock(const fs::path& folder)
      : fd_(::open(folder.c_str(), O_RDONLY | O_DIRECTORY)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

// Writes the text; `broken_pipe` tells the caller that the reader went away (EPIPE).
void write_stdout(const std::string& text, std::FILE* out, bool& broken_pipe) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0) return;
  const int error = errno;
  broken_pipe = error == EPIPE;
  if (broken_pipe) throw write_error("stdout", "the reader of the output went away");
  if (error == EBADF) {
    throw write_error(
        "stdout",
        "stdout is closed: give the output somewhere to go, e.g. > out.txt or > /dev/null");
  }
  throw write_error(
      "stdout", fmt::format("cannot write the result: {}: free space or send the output elsewhere",
                            std::strerror(error)));
}

}  // namespace

void check_outputs(const OutputOptions& o) {
  if (!o.save_dir.empty()) check_save_target(o.save_dir);
  if (!o.save_weights.empty()) check_weights_target(o);
}

void check_checkpoint_file(const std::string& path) {
  check_weights_file(path, "save_checkpoint", "model.safetensors", false);
}

void check_checkpoint_folder(const std::string& path, const std::vector<std::string>& names) {
  if (path.empty())
    throw checkpoint_error("the folder name is empty: give a path, e.g. <save_checkpoint> my-gpt");
  const fs::path dir = save_target(path);
  check_folder(parent_of(dir), path, checkpoint_error);
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  if (!fs::exists(status)) return;
  if (fs::is_symlink(status) || !fs::is_directory(status))
    throw checkpoint_error(fmt::format(
        "'{}' exists and is not a folder: a GPT's checkpoint is a folder; choose a new name",
        printable(path)));
  std::vector<std::string> others;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::find(names.begin(), names.end(), name) == names.end() || !entry.is_regular_file(ec) ||
        entry.is_symlink(ec))
      others.push_back(printable(name));
  }
  std::sort(others.begin(), others.end());
  if (others.size() > 3) others.resize(3), others.back() = "...";
  if (!others.empty() || !attn_wrote((dir / "model.safetensors").string()))
    throw checkpoint_error(fmt::format(
        "'{}' holds {} attn did not write: choose a new folder; attn replaces only its own "
        "checkpoints",
        printable(path),
        others.empty() ? std::string("a model.safetensors")
                       : fmt::format("{}", fmt::join(others, ", "))));
}

void write_outputs(const lessons::LessonRun& run, const OutputOptions& o, std::FILE* out,
                   const std::vector<FileOutput>& files) {
  if (files.size() > kMostFiles)
    throw Error(ErrorKind::internal, "write_outputs",
                fmt::format("{} files beside the run, more than {}", files.size(), kMostFiles));
  const Identity save_before = o.save_dir.empty() ? Identity{} : check_save_target(o.save_dir);
  const bool separate_weights = !o.save_weights.empty() && !weights_into_save(o);
  if (!o.save_weights.empty()) check_weights_target(o);
  const Identity weights_before = separate_weights ? identity_of(o.save_weights) : Identity{};
  std::vector<Identity> files_before;
  for (const FileOutput& f : files) {
    if (f.folder.empty()) {
      refuse_foreign_file(f.path, f.subject);
      files_before.push_back(identity_of(f.path));
    } else {
      std::vector<std::string> names;
      for (const auto& [name, bytes] : f.folder)
        names.push_back(name);
      check_checkpoint_folder(f.path, names);
      files_before.push_back(identity_of(save_target(f.path)));
    }
  }
  const std::string text =
      o.format == Format::json ? render_json(run) : render_text(run, o, use_color(o.color));

  Transaction& t = g_transaction;
  t = Transaction{};
  bool broken_pipe = false;
  SignalHandlers handlers;
  try {
    if (!o.save_dir.empty()) stage_save(run, o, t.save);
    if (separate_weights) stage_weights(run, o, t.weights);
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (files[i].folder.empty())
        stage_file(files[i].path, files[i].bytes, files[i].subject, t.files[i]);
      else
        stage_folder(files[i].path, files[i].folder, files[i].subject, t.files[i]);
    }
    if (!o.save_dir.empty()) {
      const fs::path target = save_target(o.save_dir);
      FolderLock lock(parent_of(target));
      if (identity_of(target) != save_before) {
        throw write_error(
            "save",
            fmt::format("'{}' was changed by another program while this run was writing it: "
                        "nothing was written; run again",
                        printable(o.save_dir)));
      }
      if (save_before.exists) {
        const std::set<std::string> old_files = files_of_save(target, o.save_dir);
        t.save.old_files.assign(old_files.begin(), old_files.end());
      }
      commit(t.save, save_before.exists, "save", o.save_dir);
    }
    if (separate_weights) commit_file(t.weights, weights_before, "save_weights", o.save_weights);
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (!files[i].folder.empty() && files_before[i].exists) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(t.files[i].target, ec))
          t.files[i].old_files.push_back(entry.path().filename().string());
      }
      commit_file(t.files[i], files_before[i], files[i].subject, files[i].path);
    }
    write_stdout(text, out, broken_pipe);
  } catch (...) {
    {
      SignalsHeld blocked;
      for (Swap& f : t.files)
        undo(f);
      undo(t.weights);
      undo(t.save);
    }
    if (broken_pipe) {
      // End as a program that saves nothing would (`attn ... | head`): by SIGPIPE, quietly, now
      // that nothing of this run is left behind.
      std::signal(SIGPIPE, SIG_DFL);
      ::raise(SIGPIPE);
    }
    throw;
  }
  SignalsHeld blocked;
  t.finishing = true;
  finish(t.save);
  finish(t.weights);
  for (Swap& f : t.files)
    finish(f);
}

}  // namespace attn::render
