// Files made to exhaust memory or to hang a reader: attn must refuse each with one line and exit
// code 2, promptly, with its peak memory (the child's ru_maxrss) well under --max-memory plus a
// fixed base. A memory assertion, not a timing one.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "npz_bomb.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;

namespace {

constexpr long kMiB = 1 << 20;
// attn's own footprint (the executable, OpenBLAS, the C++ runtime) is about 10 MiB; the limit is
// 100 MiB. A reader that reads what it should refuse goes far past both.
constexpr long kBase = 60 * kMiB;
constexpr long kLimit = 100 * kMiB;

// `start`, then a hole up to `size` bytes: no disk used.
void sparse_file(const fs::path& path, const std::string& start, std::uint64_t size) {
  std::ofstream(path, std::ios::binary) << start;
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(size)) == 0);
}

struct Case {
  std::vector<std::string> args;
  std::string says;  // part of the stderr line
};

}  // namespace

TEST_CASE("hostile files are refused within the memory limit, with one line",
          "[cli][bad-input][memory]") {
  attn::testing::ScratchDir dir("hostile-files");
  const std::uint64_t two_gib = std::uint64_t{2} << 30;
  {
    // Three members of 1008 MiB of zeros each, about 1 MB each deflated.
    std::ofstream(dir.path / "bomb.npz", std::ios::binary) << attn::testing::deflated_zeros_npz(
        {"toqueries.weight", "tokeys.weight", "tovalues.weight"}, 63);
  }
  REQUIRE(fs::file_size(dir.path / "bomb.npz") < 4 * kMiB);
  std::string st_header =
      R"({"a":{"dtype":"F32","shape":[536870912],"data_offsets":[0,2147483648]}})";
  while (st_header.size() % 8 != 0)
    st_header += ' ';
  std::string st_size(8, '\0');
  for (std::size_t i = 0; i < 8; ++i)
    st_size[i] = static_cast<char>((st_header.size() >> (8 * i)) & 0xff);
  sparse_file(dir.path / "sparse_big.safetensors", st_size + st_header,
              8 + st_header.size() + two_gib);
  std::string ids_header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 268435456), }";
  while ((10 + ids_header.size() + 1) % 64 != 0)
    ids_header += ' ';
  ids_header = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(ids_header.size() + 1) +
               '\0' + ids_header + "\n";
  sparse_file(dir.path / "sparse_ids.npy", ids_header, ids_header.size() + two_gib);
  sparse_file(dir.path / "sparse_config.json", "{", two_gib);
  sparse_file(dir.path / "sparse_vocab.txt", "[UNK]\n", two_gib);
  fs::create_symlink("/dev/zero", dir.path / "zero.npy");
  REQUIRE(::mkfifo((dir.path / "fifo").c_str(), 0600) == 0);

  const std::vector<Case> cases = {
      {{"attention", "--weights", "bomb.npz"}, "its 3 members hold 2.95 GiB once inflated"},
      {{"attention", "--weights", "sparse_big.safetensors"},
       "'sparse_big.safetensors' is 2 GiB, more than the memory limit"},
      {{"encoder", "--ids-file", "sparse_ids.npy"},
       "holds 268435456 tokens per sequence, more than the 64 positions"},
      {{"encoder", "--ids-file", "sparse_ids.npy", "--max-positions", "1000000000"},
       "needs 2 GiB, more than the memory limit"},
      {{"encoder", "--config", "sparse_config.json"},
       "is 2 GiB, more than a config.json may have (1 MiB)"},
      {{"tokens", "--vocab", "sparse_vocab.txt"},
       "is 2 GiB, more than a vocab.txt may have (64 MiB)"},
      {{"dot-product", "--input", "/dev/zero"},
       "'/dev/zero' is a character device, not a regular file"},
      {{"dot-product", "--input", "/dev/urandom"},
       "'/dev/urandom' is a character device, not a regular file"},
      {{"dot-product", "--input", "zero.npy"},
       "is a character device (a link to '/dev/zero'), not a regular file"},
      {{"attention", "--weights", "/dev/zero"}, "is a character device, not a regular file"},
      {{"encoder", "--config", "/dev/zero"}, "is a character device, not a regular file"},
      {{"tokens", "--vocab", "/dev/zero"}, "is a character device, not a regular file"},
      {{"dot-product", "--input", "fifo"}, "'fifo' is a FIFO (named pipe), not a regular file"},
      {{"attention", "--weights", "fifo"}, "'fifo' is a FIFO (named pipe), not a regular file"},
      {{"encoder", "--config", "fifo"}, "'fifo' is a FIFO (named pipe), not a regular file"},
      {{"tokens", "--vocab", "fifo"}, "'fifo' is a FIFO (named pipe), not a regular file"},
      {{"encoder", "--ids-file", "fifo"}, "'fifo' is a FIFO (named pipe), not a regular file"},
  };
  const fs::path before = fs::current_path();
  fs::current_path(dir.path);
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--max-memory", "100M"});
    std::string command = "attn";
    for (const std::string& a : args)
      command += " " + a;
    INFO(command);
    alarm(60);  // a reader that blocks kills the test instead of hanging it
    const auto result = run_attn(args);
    alarm(0);
    attn::testing::check_refused(result, c.says, kLimit + kBase - 1);
  }
  fs::current_path(before);
}
