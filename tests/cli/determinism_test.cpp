// The same command and seed give byte-identical output: run after run, with one or two OpenBLAS
// threads (--threads, or OPENBLAS_NUM_THREADS, which attn overrides), in text, JSON and --save.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Every file of a --save folder, name and bytes, in name order.
std::string folder_bytes(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const fs::path& file : files) all += file.filename().string() + "\n" + read_bytes(file);
  return all;
}

// Sizes large enough that OpenBLAS splits its products over two threads.
const std::vector<std::vector<std::string>> kCommands = {
    {"dot-product", "--seed", "3", "--batch", "2", "--seq", "7", "--d-model", "12"},
    {"softmax", "--seed", "4", "--mask", "causal", "--seq", "9"},
    {"attention", "--seed", "5", "--seq", "64", "--d-model", "96", "--mask", "causal"},
    {"multi-head", "--seed", "6", "--seq", "48", "--d-model", "96", "--heads", "4"},
    {"positional-encoding", "--seed", "7", "--seq", "33", "--d-model", "17"},
    {"layer-norm", "--seed", "8", "--batch", "3", "--seq", "5", "--d-model", "40"},
    {"feed-forward", "--seed", "9", "--seq", "64", "--d-model", "96", "--d-ff", "384"},
    {"encoder", "--seed", "10", "--no-embeddings", "--batch", "2", "--seq", "128", "--max-positions", "128",
     "--d-model", "192", "--heads", "4", "--d-ff", "768", "--layers", "2"},
    {"encoder", "--seed", "11", "--text", "time flies like an arrow", "--add-special-tokens"},
};

}  // namespace

TEST_CASE("every lesson's output is byte-identical across runs and thread counts", "[determinism]") {
  for (const std::vector<std::string>& command : kCommands) {
    INFO(fmt::format("attn {}", fmt::join(command, " ")));
    for (const char* format : {"text", "json"}) {
      std::vector<std::string> args = command;
      args.insert(args.end(), {"--format", format});
      std::vector<std::string> one = args, two = args;
      one.insert(one.end(), {"--threads", "1"});
      two.insert(two.end(), {"--threads", "2"});
      const auto first = run_attn(one);
      REQUIRE(first.err.empty());
      REQUIRE(first.out.size() > 100);
      CHECK(run_attn(one).out == first.out);
      CHECK(run_attn(two).out == first.out);
      CHECK(run_attn(args, {"OPENBLAS_NUM_THREADS=2", "OMP_NUM_THREADS=2"}).out == first.out);
    }
  }
}

TEST_CASE("saved steps are byte-identical files with one or two threads", "[determinism]") {
  ScratchDir scratch("determinism");
  for (const std::vector<std::string>& command : kCommands) {
    INFO(fmt::format("attn {}", fmt::join(command, " ")));
    std::string saved[2];
    for (int threads = 1; threads <= 2; ++threads) {
      const fs::path dir = scratch.path / fmt::format("{}-{}", command.front(), threads);
      fs::remove_all(dir);
      std::vector<std::string> args = command;
      args.insert(args.end(), {"--quiet", "--threads", std::to_string(threads), "--save", dir.string()});
      REQUIRE(run_attn(args).exit_code == 0);
      saved[threads - 1] = folder_bytes(dir);
    }
    CHECK(saved[0].size() > 1000);
    CHECK(saved[0] == saved[1]);
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
