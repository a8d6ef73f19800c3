#include "toolchain.hpp"

#include <unistd.h>

#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

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

}  // namespace

const Toolchain& toolchain() {
  static const Toolchain t = load();
  return t;
}

}  // namespace attn::course
