// Bad input of every kind (sizes, flags, files, save targets) gets one clear line on stderr,
// exit code 2, nothing on stdout and no output directory, partial or temporary.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "base/array.hpp"
#include "catalog.hpp"
#include "io/npy.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::line_count;
using attn::testing::run_attn;

namespace {

// A fresh directory (attn::testing::ScratchDir) with helpers to write bad files into it.
class Scratch {
 public:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream out(dir_ / name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path(name);
  }
  std::string write_npy(const std::string& name, const attn::Array& array) const {
    attn::write_npy(path(name), array);
    return path(name);
  }
  // Everything in the scratch directory whose name contains `part`.
  std::vector<std::string> entries_containing(const std::string& part) const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name.find(part) != std::string::npos) found.push_back(name);
    }
    return found;
  }

 private:
  static int next() {
    static int counter = 0;
    return counter++;
  }
  attn::testing::ScratchDir scratch_{"bad-input-" + std::to_string(next())};
  const fs::path& dir_ = scratch_.path;
};

attn::Array float32_ones(attn::Shape shape) {
  std::size_t n = 1;
  for (std::size_t s : shape)
    n *= s;
  return attn::make_float32(std::move(shape), std::vector<float>(n, 1.0f));
}

// A version 1.0 .npy header (magic, version, length, dict padded to 64 bytes) with no data.
std::string npy_header(const std::string& descr, const std::string& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64 != 0)
    dict += ' ';
  dict += '\n';
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

struct Case {
  Case(std::vector<std::string> a, std::vector<std::string> p, std::string fresh = {})
      : args(std::move(a)), phrases(std::move(p)), fresh_save_dir(std::move(fresh)) {}
  std::vector<std::string> args;
  std::vector<std::string> phrases;  // each must appear in the one stderr line
  std::string fresh_save_dir;        // a --save DIR that must not exist afterwards
};

std::string joined(const std::vector<std::string>& args) {
  std::string out = "attn";
  for (const std::string& a : args)
    out += " '" + a + "'";
  return out;
}

void check_refused(const Case& c) {
  INFO(joined(c.args));
  const auto result = run_attn(c.args);
  INFO("stderr: " << result.err);
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  CHECK(line_count(result.err) == 1);
  CHECK((!result.err.empty() && result.err.back() == '\n'));
  CHECK(result.err.rfind("attn", 0) == 0);
  for (const std::string& phrase : c.phrases)
    CHECK(result.err.find(phrase) != std::string::npos);
  if (!c.fresh_save_dir.empty()) {
    const fs::path dir(c.fresh_save_dir);
    CHECK_FALSE(fs::exists(dir));
    // save.cpp writes into DIR's sibling .NAME.attn-tmpPID and renames it into place.
    std::string temp_prefix = ".";
    temp_prefix += dir.filename().string();
    temp_prefix += ".attn-tmp";
    for (const auto& entry : fs::directory_iterator(dir.parent_path())) {
      CHECK_FALSE(entry.path().filename().string().starts_with(temp_prefix));
    }
  }
}

void check_all_refused(const std::vector<Case>& cases) {
  for (const Case& c : cases)
    check_refused(c);
}

}  // namespace

TEST_CASE("bad sizes and seeds are refused with the range to use", "[cli][bad-input]") {
  std::vector<Case> cases;
  for (const std::string lesson : {"dot-product", "scaling", "softmax"}) {
    for (const std::string value : {"0", "-1", "abc", "5.5", "", " 5", "+5", "0x10"}) {
      cases.push_back(
          {{lesson, "--seq", value}, {"--seq", "is not a size", "whole number from 1"}});
    }
    cases.push_back(
        {{lesson, "--batch", "0"}, {"--batch", "is not a size", "whole number from 1"}});
    cases.push_back({{lesson, "--seq", "1000000001"}, {"--seq", "too large", "1 to 1000000000"}});
    cases.push_back(
        {{lesson, "--batch", "99999999999999999999"}, {"--batch", "too large", "1 to 1000000000"}});
    // Within the option's range but over the memory limit: refused before allocating.
    cases.push_back({{lesson, "--seq", "100000000"},
                     {"memory limit of 1 GiB (set by ATTN_MAX_MEMORY)", "lower --seq"}});
    cases.push_back({{lesson, "--seq=0"}, {"--seq", "is not a size"}});
    for (const std::string value : {"-1", "x", "1e3", "18446744073709551616"}) {
      cases.push_back({{lesson, "--seed", value}, {"--seed", "is not a seed", "whole number"}});
    }
  }
  for (const std::string lesson : {"dot-product", "scaling"}) {
    cases.push_back({{lesson, "--d-model", "0"}, {"--d-model", "is not a size"}});
    cases.push_back({{lesson, "--d-model", "1000000000"},
                     {"memory limit of 1 GiB (set by ATTN_MAX_MEMORY)", "lower --d-model"}});
  }
  cases.push_back({{"softmax", "--batch", "100000", "--seq", "100"},
                   {"memory limit of 1 GiB (set by ATTN_MAX_MEMORY)", "lower --seq or --batch"}});
  cases.push_back(
      {{"dot-product", "--batch", "1000000000", "--seq", "1000000000", "--d-model", "1000000000"},
       {"memory limit of 1 GiB (set by ATTN_MAX_MEMORY)", "lower --seq, --batch or --d-model"}});
  check_all_refused(cases);
}

TEST_CASE("counts past 2^63-1 are refused, never printed wrapped around (W1)", "[cli][bad-input]") {
  const auto wide = run_attn({"summary", "multi-head", "--variant", "wide", "--heads", "1000000000",
                              "--d-model", "1000000000"});
  CHECK(wide.exit_code == 2);
  CHECK(wide.out.empty());
  CHECK(wide.err ==
        "attn summary: the wide MultiHeadAttention with D = 1000000000 and H "
        "= 1000000000 has "
        "more than 2^63-1 parameters\n");
  const std::vector<std::string> huge = {"--batch",    "1000000000", "--seq",
                                         "1000000000", "--d-model",  "1000000000"};
  std::vector<Case> cases;
  for (const std::string format : {"current", "0.1"}) {
    for (const std::string output : {"text", "json"}) {
      std::vector<std::string> args = {"summary", "multi-head", "--torchinfo-format",
                                       format,    "--format",   output};
      args.insert(args.end(), huge.begin(), huge.end());
      cases.push_back({args, {"attn summary: MultiHeadAttention", "more than 2^63-1"}});
      args[1] = "self-attention";
      cases.push_back({args, {"attn summary: SelfAttention", "more than 2^63-1"}});
    }
  }
  cases.push_back(
      {{"summary", "encoder", "--d-model", "1000000000", "--heads", "1", "--d-ff", "1000000000",
        "--layers", "2", "--no-embeddings"},
       {"attn summary: the TransformerEncoder with L = 2", "more than 2^63-1 parameters"}});
  check_all_refused(cases);
}

TEST_CASE("unknown commands, unknown options and missing values are named", "[cli][bad-input]") {
  check_all_refused({
      {{"dotproduct"}, {"unknown command 'dotproduct'", "did you mean 'dot-product'", "attn list"}},
      {{"softmx"}, {"unknown command 'softmx'", "did you mean 'softmax'"}},
      {{"frobnicate"}, {"unknown command 'frobnicate'", "attn list"}},
      {{"--bogus"}, {"unknown option '--bogus'", "attn --help"}},
      {{"--seq", "3"}, {"'--seq'", "put it after a command"}},
      {{"list", "extra"}, {"'extra'", "takes no arguments"}},
      {{"list", "--seq", "3"}, {"unknown option '--seq'", "takes no options"}},
      {{"dot-product", "--bogus"}, {"unknown option '--bogus'", "attn dot-product --help"}},
      {{"dot-product", "--sed", "3"}, {"unknown option '--sed'", "did you mean '--seed'"}},
      {{"scaling", "-s", "3"}, {"unknown option '-s'", "attn scaling --help"}},
      {{"dot-product", "extra"}, {"unexpected argument 'extra'", "attn dot-product --help"}},
      {{"dot-product", "softmax"}, {"'softmax'", "one command at a time"}},
      {{"dot-product", "--seq"}, {"--seq needs a value", "--seq 8"}},
      {{"dot-product", "--input"}, {"--input needs a value", "--input x.npy"}},
      {{"dot-product", "--save"}, {"--save needs a value", "--save out"}},
      {{"softmax", "--temperature"}, {"--temperature needs a value", "--temperature 0.5"}},
      {{"dot-product", "--seq", "3", "--seq", "4"}, {"--seq is given 2 times", "once"}},
      {{"dot-product", "--quiet=maybe"}, {"--quiet takes no value", "just --quiet"}},
  });
}

TEST_CASE("bad output options list the values to use", "[cli][bad-input]") {
  std::vector<Case> cases;
  for (const attn::lessons::LessonInfo& info : attn::lessons::catalog()) {
    const std::string lesson(info.name);
    for (const std::string value : {"yaml", "JSON", "1", ""}) {
      cases.push_back(
          {{lesson, "--format", value}, {"--format", "is not a format", "text or json"}});
    }
    cases.push_back({{lesson, "--format"}, {"--format needs a value", "--format json"}});
    for (const std::string value : {"sometimes", "2"}) {
      cases.push_back({{lesson, "--color", value},
                       {"--color", "is not a color mode", "auto, always or never"}});
    }
    for (const std::string value : {"-1", "99", "17", "x", "2.5"}) {
      cases.push_back({{lesson, "--precision", value}, {"--precision", "whole number", "0 to 16"}});
    }
  }
  check_all_refused(cases);
}

TEST_CASE("softmax refuses a bad temperature or mask", "[cli][bad-input]") {
  std::vector<Case> cases;
  for (const std::string value : {"0", "-1", "1e40", "1e-300", "1e-4", "1001"}) {
    cases.push_back(
        {{"softmax", "--temperature", value}, {"--temperature", "is outside 0.001 to 1000"}});
  }
  // Decimal numbers only: no NaN, infinities, hex or blanks.
  for (const std::string value : {"nan", "inf", "-inf", "abc", "0x10", " 2", "2 ", ""}) {
    cases.push_back(
        {{"softmax", "--temperature", value}, {"--temperature", "is not a temperature", "0.5"}});
  }
  cases.push_back({{"softmax", "--mask", "diagonal"}, {"--mask", "'diagonal'", "none or causal"}});
  cases.push_back({{"softmax", "--mask", ""}, {"--mask", "none or causal"}});
  check_all_refused(cases);
}

TEST_CASE("sizes given beside --input are accepted when they are the array's", "[cli][bad-input]") {
  Scratch scratch;
  const std::string good = scratch.write_npy("good.npy", float32_ones({1, 2, 3}));
  const auto alone = run_attn({"dot-product", "--input", good, "--quiet"});
  REQUIRE(alone.exit_code == 0);
  for (const std::vector<std::string>& sizes : {std::vector<std::string>{"--seq", "2"},
                                                {"--batch", "1", "--seq", "2", "--d-model", "3"},
                                                {"--d-model", "3"}}) {
    std::vector<std::string> args = {"dot-product", "--input", good, "--quiet"};
    args.insert(args.end(), sizes.begin(), sizes.end());
    const auto result = run_attn(args);
    INFO(fmt::format("{}", fmt::join(args, " ")) << "\nstderr: " << result.err);
    CHECK(result.exit_code == 0);
    CHECK(result.out == alone.out);
  }
}

TEST_CASE("bad --input files are refused with what to do instead", "[cli][bad-input]") {
  Scratch scratch;
  const std::string good = scratch.write_npy("good.npy", float32_ones({1, 2, 3}));
  fs::create_directory(scratch.path("folder.npy"));
  const auto whole = attn::serialize_npy(float32_ones({1, 2, 3}));
  const std::string truncated_bytes(whole.begin(), whole.end() - 5);
  const std::string truncated = scratch.write("truncated.npy", truncated_bytes);
  const std::string cut_header = scratch.write("cut_header.npy", truncated_bytes.substr(0, 20));
  // A header that promises (1, 17000, 17000) float32 (1.08 GiB) in a sparse file: refused from
  // its size, before anything is read.
  const std::string huge_header = npy_header("<f4", "(1, 17000, 17000)");
  const std::string huge = scratch.write("huge.npy", huge_header);
  fs::resize_file(huge, huge_header.size() + std::uintmax_t{4} * 17000 * 17000);
  // The same header without its data: a truncated file, never a 1 GiB allocation.
  const std::string hollow = scratch.write("hollow.npy", huge_header);

  const std::vector<Case> cases = {
      {{"dot-product", "--input", scratch.path("missing.npy")},
       {"--input", "does not exist", "check the path"}},
      {{"dot-product", "--input", scratch.path("folder.npy")},
       {"--input", "is a directory", "numpy.save"}},
      {{"dot-product", "--input", scratch.write("empty.npy", "")},
       {"--input", "is empty", "numpy.save"}},
      {{"dot-product", "--input", scratch.write("text.npy", "hello, world\n")},
       {"--input", "not a .npy file", "numpy.save"}},
      {{"dot-product", "--input", scratch.write_npy("rank2.npy", float32_ones({2, 3}))},
       {"--input", "(2, 3)", "rank 3", "x[None]"}},
      {{"dot-product", "--input", scratch.write_npy("rank4.npy", float32_ones({1, 2, 3, 4}))},
       {"--input", "(1, 2, 3, 4)", "rank 3"}},
      {{"scaling", "--input", scratch.write_npy("rank1.npy", float32_ones({6}))},
       {"--input", "rank 3"}},
      {{"dot-product", "--input",
        scratch.write_npy("float64.npy",
                          attn::make_float64({1, 2, 3}, std::vector<double>(6, 1.0)))},
       {"--input", "dtype float64", "astype(numpy.float32)"}},
      {{"scaling", "--input",
        scratch.write_npy("int64.npy",
                          attn::make_int64({1, 2, 3}, std::vector<std::int64_t>(6, 1)))},
       {"--input", "dtype int64", "astype(numpy.float32)"}},
      {{"softmax", "--input",
        scratch.write_npy("bool.npy", attn::make_bool({1, 2, 3}, std::vector<bool>(6, true)))},
       {"--input", "dtype bool", "astype(numpy.float32)"}},
      {{"dot-product", "--input",
        scratch.write_npy("zero_axis.npy", attn::make_float32({1, 0, 3}, {}))},
       {"--input", "(1, 0, 3)", "at least 1"}},
      {{"dot-product", "--input", truncated}, {"--input", "truncated"}},
      {{"dot-product", "--input", cut_header}, {"--input", "truncated"}},
      {{"dot-product", "--input", scratch.write("model.pt", "\x80\x02}q\x00.")},
       {"--input", "PyTorch", "numpy.save"}},
      {{"dot-product", "--input",
        scratch.write("archive.npy", std::string("PK\x03\x04", 4) + std::string(26, '\0'))},
       {"--input", "zip archive", "numpy.save"}},
      {{"softmax", "--input", huge}, {"--input", "GiB", "pass a smaller array"}},
      {{"dot-product", "--input", hollow}, {"--input", "truncated"}},
      {{"dot-product", "--input", ""}, {"--input", "empty", "--input x.npy"}},
      {{"dot-product", "--input", good, "--seq", "3"},
       {"--seq: the --input array", "T = 2, not 3", "drop --seq"}},
      {{"dot-product", "--seq", "3", "--input", good},
       {"--seq: the --input array", "T = 2, not 3", "drop --seq"}},
      {{"scaling", "--input", good, "--d-model", "4"},
       {"--d-model: the --input array", "D = 3, not 4", "drop --d-model"}},
      {{"softmax", "--input", good, "--batch", "2"},
       {"--batch: the --input array", "B = 1, not 2", "drop --batch"}},
      // (1, 2, 3) scores are not square: a causal mask needs (B, T, T).
      {{"softmax", "--input", good, "--mask", "causal"}, {"--mask", "square"}},
  };
  check_all_refused(cases);
}

TEST_CASE("a bad --save target is refused and nothing is left behind", "[cli][bad-input]") {
  Scratch scratch;
  const std::string file = scratch.write("a-file", "keep me\n");
  fs::create_directory(scratch.path("not-a-save"));
  scratch.write("not-a-save/notes.txt", "keep me\n");

  check_all_refused({
      {{"dot-product", "--save", scratch.path("no/such/parent")}, {"--save", "create it first"}},
      {{"dot-product", "--save", scratch.path("a-file/out")}, {"--save", "not a directory"}},
      {{"dot-product", "--save", file}, {"--save", "is a file", "directory"}},
      {{"dot-product", "--save", scratch.path("not-a-save")},
       {"--save", "not an attn save", "new or empty directory"}},
      {{"dot-product", "--save", ""}, {"--save", "empty", "--save out"}},
  });
  // What was there is untouched, and no temporary directory is left.
  CHECK(fs::file_size(file) == std::string("keep me\n").size());
  CHECK(fs::is_regular_file(scratch.path("not-a-save/notes.txt")));
  CHECK(std::distance(fs::directory_iterator(scratch.path("not-a-save")),
                      fs::directory_iterator()) == 1);
  CHECK(scratch.entries_containing("attn-tmp").empty());

  // A directory nobody may create, not even root: /proc takes no new entries.
  if (fs::is_directory("/proc/self")) {
    const std::string proc_dir = "/proc/attn-bad-input-" + std::to_string(getpid());
    check_refused({{"dot-product", "--save", proc_dir}, {"--save", "cannot create", "writable"}});
    CHECK_FALSE(fs::exists(proc_dir));
  }
  // A read-only directory stops everyone but root.
  if (geteuid() != 0) {
    fs::create_directory(scratch.path("read-only"));
    fs::permissions(scratch.path("read-only"), fs::perms::owner_read | fs::perms::owner_exec);
    check_refused({{"dot-product", "--save", scratch.path("read-only/out")},
                   {"--save", "writable"},
                   scratch.path("read-only/out")});
    fs::permissions(scratch.path("read-only"), fs::perms::owner_all);
  }
}

TEST_CASE("bad input with --save leaves no directory", "[cli][bad-input]") {
  Scratch scratch;
  const std::string text = scratch.write("text.npy", "not numpy\n");
  const std::string out = scratch.path("out");
  check_all_refused({
      {{"dot-product", "--seq", "0", "--save", out}, {"--seq", "is not a size"}, out},
      {{"dot-product", "--save", out, "--format", "yaml"}, {"--format", "text or json"}, out},
      {{"dot-product", "--input", text, "--save", out}, {"--input", "not a .npy file"}, out},
      {{"scaling", "--seq", "100000000", "--save", out},
       {"memory limit of 1 GiB (set by ATTN_MAX_MEMORY)", "lower --seq"},
       out},
      {{"softmax", "--temperature", "0", "--save", out},
       {"--temperature", "outside 0.001 to 1000"},
       out},
      {{"softmax", "--mask", "diagonal", "--save", out}, {"--mask", "none or causal"}, out},
  });
  CHECK(scratch.entries_containing("attn-tmp").empty());
}

TEST_CASE("good input still runs (the controls)", "[cli][bad-input]") {
  Scratch scratch;
  const std::string good = scratch.write_npy("good.npy", float32_ones({1, 2, 3}));
  const std::string square = scratch.write_npy("square.npy", float32_ones({2, 3, 3}));
  const std::vector<std::vector<std::string>> runs = {
      {"list"},
      {"dot-product", "--quiet"},
      {"dot-product", "--seq", "05", "--seed", "18446744073709551615", "--quiet"},
      {"dot-product", "--seq=3", "--batch", "2", "--d-model", "4", "--precision", "0", "--color",
       "never"},
      {"scaling", "--input", good, "--format", "json", "--quiet"},
      {"softmax", "--input", square, "--mask", "causal", "--temperature", "0.5", "--quiet"},
      {"softmax", "--mask", "none", "--format", "text", "--precision", "16", "--quiet"},
      {"dot-product", "--input", good, "--save", scratch.path("saved"), "--quiet"},
      // Replacing an earlier save, spelt with a trailing slash.
      {"dot-product", "--seq", "2", "--save", scratch.path("saved") + "/", "--quiet"},
  };
  for (const auto& args : runs) {
    INFO(joined(args));
    const auto result = run_attn(args);
    INFO("stderr: " << result.err);
    CHECK(result.exit_code == 0);
    CHECK_FALSE(result.out.empty());
    CHECK(result.err.empty());
  }
  CHECK(fs::is_regular_file(scratch.path("saved/manifest.json")));
  CHECK(fs::is_regular_file(scratch.path("saved/input.npy")));
  CHECK(attn::read_npy(scratch.path("saved/input.npy")).shape == attn::Shape{1, 2, 6});
  CHECK(scratch.entries_containing("attn-tmp").empty());
}
