// --save DIR: every step as DIR/<step>.npy plus DIR/manifest.json. The files are written into a
// temporary sibling directory that is renamed into place, so DIR is either complete or untouched.
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "error.hpp"
#include "file_io.hpp"
#include "npy.hpp"

namespace attn::cli {

namespace fs = std::filesystem;

namespace {
// DIR may be replaced only when it is empty or holds an earlier attn save.
void check_replaceable(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status)) {
    throw Error("--save", fmt::format("'{}' is a file, not a directory: choose a directory path", dir.string()));
  }
  if (fs::is_empty(dir, ec) || fs::exists(dir / "manifest.json", ec)) return;
  throw Error("--save", fmt::format("'{}' exists and is not an attn save (no manifest.json): choose a new or "
                                    "empty directory",
                                    dir.string()));
}
}  // namespace

void save_run(const lessons::LessonRun& run, const std::string& dir_text) {
  fs::path dir = fs::path(dir_text).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "out/" -> "out"
  check_replaceable(dir);
  fs::path parent = dir.parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  if (!fs::exists(parent, ec)) {
    throw Error("--save", fmt::format("cannot create '{}': its parent '{}' does not exist; create it first or "
                                      "choose another path",
                                      dir_text, parent.string()));
  }
  if (!fs::is_directory(parent, ec)) {
    throw Error("--save", fmt::format("cannot create '{}': its parent '{}' is not a directory; create it "
                                      "first or choose another path",
                                      dir_text, parent.string()));
  }
  const fs::path temp = parent / fmt::format(".{}.attn-tmp{}", dir.filename().string(), static_cast<long>(getpid()));
  fs::remove_all(temp, ec);
  if (!fs::create_directory(temp, ec)) {
    throw Error("--save", fmt::format("cannot create '{}': {}; choose a writable directory", dir_text, ec.message()));
  }
  try {
    nlohmann::ordered_json manifest;
    manifest["lesson"] = run.lesson();
    manifest["settings"] = nlohmann::ordered_json::object();
    for (const auto& [name, value] : run.settings()) manifest["settings"][name] = value;
    manifest["steps"] = nlohmann::ordered_json::array();
    for (const lessons::Step* step : run.steps()) {
      const std::string file = step->name + ".npy";
      write_npy((temp / file).string(), step->value);
      manifest["steps"].push_back({{"name", step->name},
                                   {"file", file},
                                   {"shape", step->value.shape},
                                   {"dtype", std::string(dtype_name(step->value.dtype))}});
    }
    manifest["parameters"] = run.parameters;
    write_file_atomic((temp / "manifest.json").string(), manifest.dump(2) + "\n");
    // An earlier save is moved aside, not deleted, until the new one is in place.
    const fs::path old = parent / fmt::format(".{}.attn-old{}", dir.filename().string(), static_cast<long>(getpid()));
    const bool replacing = fs::exists(dir, ec);
    if (replacing) fs::rename(dir, old);
    try {
      fs::rename(temp, dir);
    } catch (...) {
      if (replacing) fs::rename(old, dir, ec);
      throw;
    }
    if (replacing) fs::remove_all(old, ec);
  } catch (const std::exception& e) {
    fs::remove_all(temp, ec);
    if (dynamic_cast<const Error*>(&e) != nullptr) throw;
    throw Error("--save", fmt::format("cannot write '{}': {}", dir_text, e.what()));
  }
}

}  // namespace attn::cli
