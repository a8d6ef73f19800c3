// A lesson's command line: attn::cli::run on argv made from the input. The first byte picks the
// lesson (argv[1]); the rest, split at NUL bytes, are its arguments. Options that read or write
// files and the other commands are dropped, and the memory limit is 16 MiB, so a run stays in
// memory and refuses large sizes quickly. Output goes nowhere; sanitizer reports still show.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "app.hpp"
#include "base/budget.hpp"

namespace {

constexpr std::array<const char*, 10> kLessons = {
    "tokens",     "dot-product",         "scaling",    "softmax",      "attention",
    "multi-head", "positional-encoding", "layer-norm", "feed-forward", "encoder"};
// --max-memory reads no file, but it would lift the limit for every later run; --mine compiles
// the student's exercise of the tree around the working directory.
constexpr std::array<std::string_view, 10> kFileOptions = {
    "--input",  "--weights",  "--save",       "--save-weights", "--vocab",
    "--config", "--ids-file", "--max-memory", "--export",       "--mine"};
constexpr std::array<std::string_view, 10> kOtherCommands = {
    "grade", "check", "hint", "assignments", "bench", "summary", "list", "view", "watch", "reset"};

bool dropped(std::string_view arg) {
  for (std::string_view option : kFileOptions) {
    if (arg == option ||
        (arg.starts_with(option) && arg.size() > option.size() && arg[option.size()] == '=')) {
      return true;
    }
  }
  return std::find(kOtherCommands.begin(), kOtherCommands.end(), arg) != kOtherCommands.end();
}

FILE* null_stream = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // stdout (fd 1) goes to /dev/null for good: libFuzzer and the sanitizers write to stderr only.
  const int null_fd = open("/dev/null", O_WRONLY);
  if (null_fd >= 0) {
    dup2(null_fd, STDOUT_FILENO);
    close(null_fd);
  }
  null_stream = std::fopen("/dev/null", "w");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::string> args = {"attn", kLessons[data[0] % kLessons.size()]};
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::size_t start = rest.empty() ? 1 : 0;  // no bytes: no arguments (not one empty one)
  while (start <= rest.size()) {
    const std::size_t end = std::min(rest.find('\0', start), rest.size());
    const std::string_view arg = rest.substr(start, end - start);
    if (!dropped(arg)) args.emplace_back(arg);
    start = end + 1;
  }
  std::vector<const char*> argv;
  for (const std::string& arg : args)
    argv.push_back(arg.c_str());
  argv.push_back(nullptr);

  attn::set_memory_limit(std::size_t{16} << 20, "the fuzz target");
  // The one-line errors go to stderr through stdio: swap the stream, not fd 2, which the
  // sanitizers and libFuzzer write to.
  FILE* const saved_stderr = stderr;
  if (null_stream != nullptr) stderr = null_stream;
  attn::cli::run(static_cast<int>(args.size()), argv.data());
  stderr = saved_stderr;
  std::fflush(stdout);
  return 0;
}
