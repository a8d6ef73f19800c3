// What "the same output" means (README, "Same numbers as PyTorch"):
//  - the same command, seed, machine and thread count give byte-identical output, run after run,
//    in text, JSON and --save; OPENBLAS_NUM_THREADS does not count, since attn sets the threads;
//  - another thread count (or another CPU or OpenBLAS kernel) may change the last bits of a
//    matrix product, so the output is the same text with the same numbers within float32
//    round-off, and every check has the same verdict.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "allclose.hpp"
#include "catalog.hpp"
#include "io/npy.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"
#include "tolerant_text.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;
using attn::testing::ScratchDir;
using attn::testing::TextTolerance;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The .npy files of a --save folder, by name.
std::vector<std::pair<std::string, attn::Array>> saved_steps(const fs::path& dir) {
  std::vector<std::pair<std::string, attn::Array>> steps;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".npy") {
      steps.emplace_back(entry.path().filename().string(), attn::read_npy(entry.path().string()));
    }
  }
  std::sort(steps.begin(), steps.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return steps;
}

// Every file of a --save folder, name and bytes, in name order.
std::string folder_bytes(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const fs::path& file : files)
    all += file.filename().string() + "\n" + read_bytes(file);
  return all;
}

// Every example of every lesson in the catalog: sizes large enough that OpenBLAS splits its
// products over two threads.
std::vector<std::vector<std::string>> example_commands() {
  std::vector<std::vector<std::string>> commands;
  for (const attn::lessons::LessonInfo& lesson : attn::lessons::catalog()) {
    for (const auto& example : lesson.examples) {
      std::vector<std::string> command = {std::string(lesson.name)};
      command.insert(command.end(), example.begin(), example.end());
      commands.push_back(command);
    }
  }
  return commands;
}
const std::vector<std::vector<std::string>> kCommands = example_commands();

}  // namespace

TEST_CASE("the same command and thread count print byte-identical output", "[determinism]") {
  for (const std::vector<std::string>& command : kCommands) {
    INFO(fmt::format("attn {}", fmt::join(command, " ")));
    for (const char* format : {"text", "json"}) {
      // Under the sanitizers every run is ten times slower and the suite has a time limit: the
      // JSON output, made of the same numbers as the text, is held byte for byte by the other
      // builds.
      if (attn::testing::kSanitized && std::string(format) == "json") continue;
      for (const char* threads : {"1", "2"}) {
        std::vector<std::string> args = command;
        args.insert(args.end(), {"--format", format, "--threads", threads});
        const auto first = run_attn(args);
        REQUIRE(first.err.empty());
        REQUIRE(first.out.size() > 100);
        CHECK(run_attn(args).out == first.out);
      }
      // attn sets OpenBLAS's threads itself (one unless --threads says otherwise).
      std::vector<std::string> args = command;
      args.insert(args.end(), {"--format", format});
      CHECK(run_attn(args, {"OPENBLAS_NUM_THREADS=2", "OMP_NUM_THREADS=2"}).out ==
            run_attn(args).out);
    }
  }
}

TEST_CASE("one or two threads print the same text and numbers within round-off", "[determinism]") {
  for (const std::vector<std::string>& command : kCommands) {
    INFO(fmt::format("attn {}", fmt::join(command, " ")));
    for (const char* format : {"text", "json"}) {
      std::vector<std::string> one = command, two = command;
      one.insert(one.end(), {"--format", format, "--threads", "1"});
      two.insert(two.end(), {"--format", format, "--threads", "2"});
      const auto a = run_attn(one), b = run_attn(two);
      REQUIRE(a.err.empty());
      CHECK(b.exit_code == a.exit_code);
      // The large products' library may differ between 1 and 2 threads (kernels/gemm.hpp), and a
      // number's printed length with it, and so where a long line wraps.
      CHECK_TEXT(b.out, a.out, TextTolerance{.line_breaks_as_spaces = true});
    }
  }
}

TEST_CASE("saved steps: byte-identical files run after run, equal within round-off across threads",
          "[determinism]") {
  ScratchDir scratch("determinism");
  for (const std::vector<std::string>& command : kCommands) {
    INFO(fmt::format("attn {}", fmt::join(command, " ")));
    auto save = [&](const std::string& threads, const std::string& name) {
      const fs::path dir = scratch.path / fmt::format("{}-{}", command.front(), name);
      fs::remove_all(dir);
      std::vector<std::string> args = command;
      args.insert(args.end(), {"--quiet", "--threads", threads, "--save", dir.string()});
      REQUIRE(run_attn(args).exit_code == 0);
      return dir;
    };
    const fs::path first = save("1", "a"), again = save("1", "b"), two = save("2", "c");
    CHECK(folder_bytes(first).size() > 1000);
    CHECK(folder_bytes(again) == folder_bytes(first));
    const auto one_thread = saved_steps(first), two_threads = saved_steps(two);
    REQUIRE(one_thread.size() == two_threads.size());
    for (std::size_t i = 0; i < one_thread.size(); ++i) {
      INFO(one_thread[i].first);
      CHECK(two_threads[i].first == one_thread[i].first);
      CHECK_ALLCLOSE(two_threads[i].second, one_thread[i].second);
    }
  }
}

TEST_CASE("the thread count must be a whole number from 1 to 256", "[determinism]") {
  for (const char* bad : {"0", "-1", "257", "two"}) {
    const auto run = run_attn({"dot-product", "--threads", bad});
    INFO(run.err);
    CHECK(run.exit_code == 2);
    CHECK(attn::testing::line_count(run.err) == 1);
    CHECK(run.err.find("--threads") != std::string::npos);
  }
}
