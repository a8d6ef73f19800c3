#include "toolchain.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "process.hpp"

namespace attn::course {

namespace fs = std::filesystem;

namespace {

fs::path executable_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path(ec) : self.parent_path();
}

Toolchain load() {
  const fs::path dir = executable_dir();
  std::error_code ec;
  fs::path root;
  for (const fs::path& candidate : {dir / "share" / "attn", dir.parent_path() / "share" / "attn"}) {
    if (fs::is_regular_file(candidate / "toolchain.json", ec)) {
      root = candidate;
      break;
    }
  }
  if (root.empty()) {
    throw Error(ErrorKind::bad_file, "course",
                fmt::format("the course files are missing: no share/attn/toolchain.json "
                            "beside {} or above it; rebuild attn, or install it with "
                            "`cmake --install build --prefix DIR`",
                            dir.string()));
  }
  std::ifstream in(root / "toolchain.json");
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (!json.is_object() || !json.contains("compiler")) {
    throw Error(ErrorKind::bad_file, "course",
                fmt::format("{} is damaged: rebuild or reinstall attn",
                            (root / "toolchain.json").string()));
  }
  Toolchain t;
  t.root = root;
  t.compiler = json.value("compiler", "c++");
  for (const auto& flag : json.value("flags", nlohmann::json::array()))
    t.flags.push_back(flag.get<std::string>());
  for (const auto& item : json.value("link", nlohmann::json::array())) {
    std::string text = item.get<std::string>();
    // Paths inside share/attn are written relative to it.
    if (!text.empty() && text[0] != '-' && text[0] != '/') text = (root / text).string();
    t.link.push_back(text);
  }
  return t;
}

constexpr uid_t kNobody = 65534;

// Whether nobody (no supplementary group: the confined child drops them) has `bits` (S_IROTH,
// S_IXOTH) on what `st` describes.
bool nobody_may(const struct stat& st, mode_t bits) {
  if (st.st_uid == kNobody) return (st.st_mode & (bits << 6)) != 0;
  if (st.st_gid == kNobody) return (st.st_mode & (bits << 3)) != 0;
  return (st.st_mode & bits) != 0;
}

// Whether nobody may pass through every folder from the root to `dir`, `dir` included.
bool nobody_may_enter(const fs::path& dir) {
  struct stat st {};
  fs::path at;
  for (const fs::path& part : fs::absolute(dir)) {
    at /= part;
    if (stat(at.c_str(), &st) != 0 || !nobody_may(st, S_IXOTH)) return false;
  }
  return true;
}

// The first file or folder under `dir` that nobody may read, reached through folders nobody may
// enter (`dir` itself included, and its parents); empty when there is none.
fs::path readable_by_nobody(const fs::path& dir) {
  if (!nobody_may_enter(dir)) return {};
  struct stat st {};
  const fs::path absolute = fs::absolute(dir);
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(absolute, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (lstat(it->path().c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && !nobody_may(st, S_IXOTH)) {
      it.disable_recursion_pending();
      continue;
    }
    if (nobody_may(st, S_IROTH)) return it->path();
  }
  return {};
}

}  // namespace

void require_grader_out_of_reach(const Toolchain& tool) {
  // Run as root, the compiler and the tests run as nobody, who must reach the public parts.
  if (geteuid() == 0) {
    for (const fs::path& part : {tool.include(), tool.lib(), tool.inputs()}) {
      if (!nobody_may_enter(part)) {
        throw Error(ErrorKind::bad_value, "grade",
                    fmt::format("nobody, the user student code is compiled and run as, cannot "
                                "reach {}: let others enter the folders above it (`chmod o+x`; "
                                "mktemp -d makes a folder only its owner may enter)",
                                part.string()));
      }
    }
  }
  if (landlock_abi() > 0 || !tool.has_grader()) return;
  const std::string grader = tool.grader().string();
  if (geteuid() != 0) {
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("this kernel has no Landlock (Linux 5.13 or later), so student code "
                            "would run as you and could read the grader's files in {}: grade as "
                            "root (student code then runs as nobody) after `chmod -R go-rwx {}`, "
                            "or on a kernel with Landlock",
                            grader, grader));
  }
  const fs::path open = readable_by_nobody(tool.grader());
  if (!open.empty()) {
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("this kernel has no Landlock (Linux 5.13 or later), and {} can be "
                            "read by nobody, the user student code runs as: run `chmod -R go-rwx "
                            "{}` first (run_autograder does), or grade on a kernel with Landlock",
                            open.string(), grader));
  }
}

bool Toolchain::has_grader() const {
  std::error_code ec;
  return fs::is_directory(instructor_course() / "lessons", ec);
}

const Toolchain& toolchain() {
  static const Toolchain t = load();
  return t;
}

}  // namespace attn::course
