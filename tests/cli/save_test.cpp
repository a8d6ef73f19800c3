// --save, --save-weights and stdout as one transaction (render/save.hpp): a save replaces only an
// earlier attn save that holds nothing else, never the working directory; when any output fails,
// or a signal arrives, or another run saves to the same place at the same time, the earlier save
// is intact and nothing of the failed run is left.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

// Every entry under `dir` (recursively) with its size, or "dir" for folders.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(e.path(), dir).string();
    entries[name] = e.is_directory() ? "dir"
                                     : std::to_string(e.file_size()) + " " +
                                           attn::testing::read_text(e.path().string());
  }
  return entries;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The seed recorded in a save's manifest.
std::string saved_seed(const fs::path& dir) {
  return nlohmann::json::parse(
      attn::testing::read_text((dir / "manifest.json").string()))["settings"]["seed"];
}

// Whether every file a save's manifest lists is there, and nothing else.
bool complete_save(const fs::path& dir) {
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text((dir / "manifest.json").string()));
  std::vector<std::string> listed = {"manifest.json"}, present;
  for (const auto& step : manifest["steps"])
    listed.push_back(step["file"]);
  for (const auto& e : fs::directory_iterator(dir))
    present.push_back(e.path().filename().string());
  std::sort(listed.begin(), listed.end());
  std::sort(present.begin(), present.end());
  return listed == present;
}

// Entries of `dir` that a run leaves behind: anything with ".attn-" in its name.
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".attn-") != std::string::npos)
      found.push_back(e.path().string());
  return found;
}

// Runs attn in `dir` through the shell, for redirections run_attn does not make.
struct ShellRun {
  int exit_code;
  std::string err;
};
ShellRun run_in_shell(const fs::path& dir, const std::string& command) {
  const fs::path err = dir / "stderr.txt";
  const std::string line = fmt::format("cd '{}' && {} 2>'{}'", dir.string(), command, err.string());
  const int status = std::system(line.c_str());
  std::string text = attn::testing::read_text(err.string());
  fs::remove(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text};
}

}  // namespace

TEST_CASE("a save refuses a folder that holds what attn did not write, and touches nothing (D1)",
          "[cli][save]") {
  ScratchDir scratch("save-foreign");
  const fs::path proj = scratch.path / "proj";
  fs::create_directories(proj / "src");
  write(proj / "manifest.json", "{\"name\": \"my-web-app\"}\n");
  write(proj / "thesis.tex", "\\documentclass{article}\n");
  write(proj / "src/main.cpp", "int main() {}\n");
  const auto before = snapshot(scratch.path);
  const auto run = run_attn({"dot-product", "--seq", "3", "--save", proj.string(), "--quiet"});
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("--save") != std::string::npos);
  CHECK(run.err.find("not one attn wrote") != std::string::npos);
  CHECK(snapshot(scratch.path) == before);

  // An attn save with a file added to it is not replaced either.
  const fs::path save = scratch.path / "save";
  REQUIRE(run_attn({"dot-product", "--seq", "3", "--save", save.string(), "--quiet"}).exit_code ==
          0);
  write(save / "notes.txt", "mine\n");
  const auto with_notes = snapshot(scratch.path);
  const auto again =
      run_attn({"dot-product", "--seq", "3", "--seed", "1", "--save", save.string(), "--quiet"});
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("holds a file that attn did not write (notes.txt)") != std::string::npos);
  CHECK(snapshot(scratch.path) == with_notes);
}

TEST_CASE("a save never replaces the working directory or a folder above it (D2)", "[cli][save]") {
  ScratchDir scratch("save-cwd");
  const fs::path save = scratch.path / "save";
  REQUIRE(run_attn({"dot-product", "--seq", "3", "--save", save.string(), "--quiet"}).exit_code ==
          0);
  fs::create_directory(save / "inside");
  write(scratch.path / "notes.txt", "keep\n");
  const auto before = snapshot(scratch.path);
  for (const auto& [where, target] :
       {std::pair{save, "."}, std::pair{save, "../save"}, std::pair{save / "inside", ".."}}) {
    INFO(where.string() << ": --save " << target);
    const ShellRun run = run_in_shell(
        where, fmt::format("{} dot-product --seq 3 --save {} --quiet", ATTN_EXECUTABLE, target));
    CHECK(run.exit_code == 2);
    CHECK(run.err.find("current directory") != std::string::npos);
  }
  CHECK(snapshot(scratch.path) == before);
}

TEST_CASE("an earlier attn save is replaced whole, and nothing else is left", "[cli][save]") {
  ScratchDir scratch("save-replace");
  const fs::path save = scratch.path / "out";
  REQUIRE(run_attn({"attention", "--seq", "4", "--seed", "1", "--save", save.string(),
                    "--save-weights", (save / "w.npz").string(), "--quiet"})
              .exit_code == 0);
  CHECK(fs::exists(save / "w.npz"));
  REQUIRE(run_attn({"dot-product", "--seq", "3", "--seed", "2", "--save", save.string(), "--quiet"})
              .exit_code == 0);
  CHECK(saved_seed(save) == "2");
  CHECK(complete_save(save));  // the old steps and weights went with the old save
  CHECK(leftovers(scratch.path).empty());
}

TEST_CASE("a checkpoint or picture the disk cannot hold names its option, and the old stays (M26)",
          "[cli][save]") {
  ScratchDir scratch("save-full");
  REQUIRE(run_attn({"train", "--steps", "20", "--quiet", "--save-checkpoint",
                    (scratch.path / "ck.safetensors").string(), "--export",
                    (scratch.path / "loss.png").string()})
              .exit_code == 0);
  const auto before = snapshot(scratch.path);
  // A file-size limit stands in for a full disk: past it, write fails (EFBIG, SIGXFSZ ignored).
  for (const char* option : {"--save-checkpoint ck.safetensors", "--export loss.png"}) {
    INFO(option);
    const ShellRun full = run_in_shell(
        scratch.path, fmt::format("(trap '' XFSZ; ulimit -f 8; exec {} train --steps 20 --seed 3 "
                                  "--quiet {})",
                                  ATTN_EXECUTABLE, option));
    INFO("stderr: " << full.err);
    CHECK(full.exit_code == 2);
    const std::string name = std::string(option).substr(0, std::string(option).find(' '));
    CHECK(full.err.starts_with("attn train: " + name + ": cannot write '"));
    CHECK(full.err.find("; free space or choose another path") != std::string::npos);
    CHECK(snapshot(scratch.path) == before);
    CHECK(leftovers(scratch.path).empty());
  }
}

TEST_CASE("when stdout fails, the earlier save is intact and no new one is left (D3, D4)",
          "[cli][save]") {
  ScratchDir scratch("save-stdout");
  const fs::path keep = scratch.path / "keep", fresh = scratch.path / "fresh",
                 weights = scratch.path / "w.safetensors";
  REQUIRE(run_attn({"attention", "--seq", "3", "--seed", "1", "--save", keep.string(), "--quiet"})
              .exit_code == 0);
  const auto before = snapshot(scratch.path);
  const ShellRun full = run_in_shell(
      scratch.path,
      fmt::format(
          "{} attention --seq 3 --seed 2 --save keep --save-weights w.safetensors > /dev/full",
          ATTN_EXECUTABLE));
  CHECK(full.exit_code == 2);
  CHECK(full.err.find("No space left on device") != std::string::npos);
  CHECK(snapshot(scratch.path) == before);
  CHECK(saved_seed(keep) == "1");

  const ShellRun closed = run_in_shell(
      scratch.path, fmt::format("{} dot-product --seq 3 --save fresh >&-", ATTN_EXECUTABLE));
  CHECK(closed.exit_code == 2);
  CHECK(closed.err.find("stdout is closed") != std::string::npos);  // M9: not "free space"
  CHECK_FALSE(fs::exists(fresh));
  CHECK_FALSE(fs::exists(weights));
  CHECK(leftovers(scratch.path).empty());
}

TEST_CASE("when --save-weights cannot be written, the earlier save stays (D3)", "[cli][save]") {
  ScratchDir scratch("save-weights-fail");
  const fs::path keep = scratch.path / "keep";
  REQUIRE(run_attn({"attention", "--seq", "3", "--seed", "1", "--save", keep.string(), "--quiet"})
              .exit_code == 0);
  const auto before = snapshot(scratch.path);
  // /proc takes no new files, root or not.
  const auto run = run_attn({"attention", "--seq", "3", "--seed", "2", "--save", keep.string(),
                             "--save-weights", "/proc/w.safetensors", "--quiet"});
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("--save-weights") != std::string::npos);
  CHECK(run.err.find(".attn-") == std::string::npos);  // never a temporary name (M3)
  CHECK(snapshot(scratch.path) == before);
}

TEST_CASE("weights saved into the save as dir/./w.npz are the save's own file (M11)",
          "[cli][save]") {
  ScratchDir scratch("save-weights-path");
  for (const std::string weights : {"sv/./w.npz", "sv/w.npz", "sv/../w2.npz"}) {
    INFO(weights);
    const ShellRun run = run_in_shell(
        scratch.path,
        fmt::format("{} attention --seq 3 --save sv --save-weights {} --quiet > /dev/null",
                    ATTN_EXECUTABLE, weights));
    CHECK(run.exit_code == 0);
    CHECK(run.err.empty());
    CHECK(fs::exists(scratch.path / fs::path(weights).lexically_normal()));
  }
  CHECK(leftovers(scratch.path).empty());
}

TEST_CASE("SIGINT, SIGTERM and SIGHUP during a save leave no temporary files (R10)",
          "[cli][save][signals]") {
  ScratchDir scratch("save-signals");
  const fs::path keep = scratch.path / "keep";
  REQUIRE(run_attn({"dot-product", "--seq", "3", "--seed", "1", "--save", keep.string(), "--quiet"})
              .exit_code == 0);
  std::mt19937 random(7);
  int interrupted = 0;
  for (int round = 0; round < 12; ++round) {
    const int signal =
        std::vector<int>{SIGINT, SIGTERM, SIGHUP}[static_cast<std::size_t>(round % 3)];
    const pid_t pid = fork();
    if (pid == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
      setenv("ATTN_MAX_MEMORY", "4G", 1);
      execl(ATTN_EXECUTABLE, ATTN_EXECUTABLE, "dot-product", "--seq", "2500", "--d-model", "16",
            "--seed", "2", "--save", keep.c_str(), "--quiet", static_cast<char*>(nullptr));
      _exit(127);
    }
    // Somewhere in the run: computing, staging the files, or moving them into place.
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 900)(random)));
    kill(pid, signal);
    int status = 0;
    waitpid(pid, &status, 0);
    INFO("round " << round << ", signal " << signal << ", status " << status);
    if (WIFSIGNALED(status)) {
      ++interrupted;
      CHECK(WTERMSIG(status) == signal);
    } else {
      CHECK(WEXITSTATUS(status) == 0);  // it finished before the signal
    }
    CHECK(leftovers(scratch.path).empty());
    // Either the earlier save or the new one, and always whole.
    REQUIRE(fs::exists(keep / "manifest.json"));
    CHECK(complete_save(keep));
    const std::string seed = saved_seed(keep);
    CHECK((seed == "1" || seed == "2"));
  }
  CHECK(interrupted > 0);
}

TEST_CASE(
    "two runs saving to the same place at once: each ends whole or refused, nothing left (R11)",
    "[cli][save][concurrency]") {
  ScratchDir scratch("save-race");
  const fs::path same = scratch.path / "same";
  int refused = 0;
  for (int round = 0; round < 25; ++round) {
    pid_t pids[2];
    for (int i = 0; i < 2; ++i) {
      pids[i] = fork();
      if (pids[i] == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
        const std::string seed = std::to_string(10 * round + i);
        execl(ATTN_EXECUTABLE, ATTN_EXECUTABLE, "dot-product", "--seq", "300", "--seed",
              seed.c_str(), "--save", same.c_str(), "--quiet", static_cast<char*>(nullptr));
        _exit(127);
      }
    }
    for (pid_t pid : pids) {
      int status = 0;
      waitpid(pid, &status, 0);
      REQUIRE(WIFEXITED(status));
      CHECK((WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 2));
      refused += WEXITSTATUS(status) == 2;
    }
    INFO("round " << round);
    CHECK(leftovers(scratch.path).empty());
    REQUIRE(complete_save(same));
    const std::string seed = saved_seed(same);
    CHECK((seed == std::to_string(10 * round) || seed == std::to_string(10 * round + 1)));
  }
  WARN(refused << " of 50 runs were refused because the other changed the save meanwhile");
}
