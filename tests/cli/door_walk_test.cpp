// Every command and every option of attn, walked from `attn --help` and each command's --help, so
// that a command or option added later is walked too (cli/door.hpp): each command that computes
// takes --max-memory and refuses a limit of one byte before it allocates, naming a size option to
// lower; each output option refuses to replace a file or folder attn did not write, and leaves it
// as it was; each input option refuses what is not the file or folder it reads. The empty value
// of every option is walked by option_walk_test.cpp.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;

namespace {

constexpr double kBase = 40.0 * (1 << 20);  // as memory_peak_test.cpp: attn before it plans

struct Option {
  std::string name;         // "--export"
  std::string placeholder;  // "FILE", "" for a flag
};

struct Command {
  std::vector<std::string> path;  // {"assignments", "release"}
  std::vector<Option> options;
};

// The lines of a --help section ("Options:", "Subcommands:"), up to the next blank line.
std::vector<std::string> section(const std::string& help, const std::string& title) {
  std::vector<std::string> lines;
  std::istringstream in(help);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == title) {
      inside = true;
    } else if (inside) {
      if (line.empty()) break;
      lines.push_back(line);
    }
  }
  return lines;
}

std::string help_of(const std::vector<std::string>& path) {
  std::vector<std::string> args = path;
  args.push_back("--help");
  const auto result = run_attn(args);
  REQUIRE(result.exit_code == 0);
  return result.out;
}

void walk(const std::vector<std::string>& path, std::vector<Command>& out) {
  const std::string help = help_of(path);
  if (!path.empty()) {
    Command command{path, {}};
    static const std::regex option_line(R"(^\s+(?:-\w,)?(--[a-z0-9-]+)(?: (\S+))?)");
    for (const std::string& line : section(help, "Options:")) {
      std::smatch m;
      if (std::regex_search(line, m, option_line) && m[1] != "--help")
        command.options.push_back({m[1], m[2]});
    }
    out.push_back(command);
  }
  static const std::regex sub_line(R"(^\s+([a-z][a-z0-9-]*)\s)");
  for (const std::string& line : section(help, "Subcommands:")) {
    std::smatch m;
    if (!std::regex_search(line, m, sub_line)) continue;
    std::vector<std::string> sub = path;
    sub.push_back(m[1]);
    walk(sub, out);
  }
}

const std::vector<Command>& every_command() {
  static const std::vector<Command> commands = [] {
    std::vector<Command> c;
    walk({}, c);
    return c;
  }();
  return commands;
}

std::string joined(const std::vector<std::string>& words) {
  std::string text = "attn";
  for (const std::string& w : words)
    text += " " + w;
  return text;
}

bool has_option(const Command& c, const std::string& name) {
  for (const Option& o : c.options)
    if (o.name == name) return true;
  return false;
}

// What a command needs beside its options to run at all: the word after it, or a short run.
std::vector<std::string> runnable(const Command& c) {
  static const std::map<std::string, std::vector<std::string>> extra = {{"summary", {"encoder"}},
                                                                        {"view", {"head"}},
                                                                        {"train", {"--steps", "1"}},
                                                                        {"hint", {"softmax"}},
                                                                        {"reset", {"softmax"}}};
  std::vector<std::string> args = c.path;
  if (c.path == std::vector<std::string>{"tokenizer", "train"}) {
    args.insert(args.end(),
                {"--corpus", std::string(ATTN_SOURCE_DIR) + "/lessons/16-bpe/lesson.md"});
    return args;
  }
  if (const auto it = extra.find(c.path.back()); it != extra.end())
    args.insert(args.end(), it->second.begin(), it->second.end());
  return args;
}

// What each option that names a file or folder is: an output attn writes, or an input it reads.
// A new option that takes a FILE or DIR must be added here, and is then walked.
const std::map<std::string, std::string> kOutputs = {
    {"--save", "folder"},       {"--save-weights", "w.safetensors"},
    {"--export", "mine.png"},   {"--save-checkpoint", "thesis.safetensors"},
    {"--output", "notes.json"}, {"--out", "folder"},
    {"--grader", "folder"},     {"--reports", "folder"}};
const std::set<std::string> kInputs = {
    "--input",  "--weights",     "--config", "--checkpoint", "--ids-file",
    "--vocab",  "--grad-output", "--dir",    "--pretrained", "--submission",
    "--corpus", "--tokenizer",   "--resume", "--submissions"};

bool names_a_path(const Option& o) {
  return o.placeholder.find("FILE") != std::string::npos ||
         o.placeholder.find("DIR") != std::string::npos;
}

}  // namespace

TEST_CASE("the walk finds every command, and every file option is an input or an output",
          "[cli][door]") {
  std::set<std::string> names;
  for (const Command& c : every_command()) {
    names.insert(joined(c.path));
    for (const Option& o : c.options) {
      if (!names_a_path(o)) continue;
      INFO(joined(c.path) << " " << o.name << " " << o.placeholder);
      CHECK((kOutputs.contains(o.name) || kInputs.contains(o.name)));
    }
  }
  for (const char* command : {"attn train", "attn view", "attn generate", "attn summary",
                              "attn backward", "attn bench", "attn assignments release"})
    CHECK(names.contains(command));
  CHECK(names.size() >= 24);
}

TEST_CASE("every command that computes refuses --max-memory 1 before it allocates",
          "[cli][door][memory][bad-input]") {
  // These compute no tensors: they list, grade in confined child processes, copy trees, watch
  // files, or print attn's own command table for the shells and man.
  const std::set<std::string> without_tensors = {"attn list",
                                                 "attn grade",
                                                 "attn check",
                                                 "attn hint",
                                                 "attn assignments",
                                                 "attn assignments release",
                                                 "attn assignments add",
                                                 "attn reset",
                                                 "attn watch",
                                                 "attn tokenizer",
                                                 "attn completions",
                                                 "attn man"};
  // The advice names an option to lower; or the file that is too large is named first.
  static const std::regex advice(R"((?:lower |fewer tokens \(|smaller )(--[a-z-]+))");
  static const std::regex file_first(
      R"(^attn [a-z-]+: (--[a-z-]+): .* more than the memory limit)");
  for (const Command& c : every_command()) {
    const std::string name = joined(c.path);
    INFO(name);
    if (without_tensors.contains(name)) {
      CHECK_FALSE(has_option(c, "--max-memory"));
      continue;
    }
    REQUIRE(has_option(c, "--max-memory"));
    std::vector<std::string> args = runnable(c);
    args.insert(args.end(), {"--max-memory", "1"});
    const auto result = run_attn(args);
    attn::testing::check_refused(
        result, "more than the memory limit of 1 bytes (set by --max-memory)", kBase);
    std::smatch m;
    const bool named =
        std::regex_search(result.err, m, advice) || std::regex_search(result.err, m, file_first);
    REQUIRE(named);
    INFO("names " << m[1]);
    CHECK(has_option(c, m[1]));
  }
}

TEST_CASE("every output option refuses to replace what attn did not write",
          "[cli][door][bad-input]") {
  attn::testing::ScratchDir dir("door-walk");
  int walked = 0;
  for (const Command& c : every_command()) {
    for (const Option& o : c.options) {
      const auto it = kOutputs.find(o.name);
      if (it == kOutputs.end()) continue;
      INFO(joined(c.path) << " " << o.name);
      const fs::path target = dir.path / it->second;
      const bool folder = it->second == "folder";
      const std::string notes = "notes, not attn's\n";
      if (folder) {
        fs::create_directories(target);
        std::ofstream(target / "notes.txt") << notes;
      } else {
        std::ofstream(target) << notes;
      }
      std::vector<std::string> args = runnable(c);
      args.insert(args.end(), {o.name, target.string()});
      const auto result = run_attn(args);
      INFO("stderr: " << result.err);
      CHECK(result.exit_code == 2);
      CHECK(result.err.find(": " + o.name + ": ") != std::string::npos);
      const fs::path kept = folder ? target / "notes.txt" : target;
      std::ifstream in(kept);
      CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == notes);
      if (!folder) {
        // A link is not a file attn wrote either, whatever it points to.
        const fs::path link = dir.path / ("link-" + it->second);
        fs::create_symlink(target, link);
        args.back() = link.string();
        const auto linked = run_attn(args);
        INFO("stderr: " << linked.err);
        CHECK(linked.exit_code == 2);
        CHECK(linked.err.find("symbolic link") != std::string::npos);
        CHECK(fs::is_symlink(link));
        fs::remove(link);
      }
      fs::remove_all(target);
      ++walked;
    }
  }
  CHECK(walked >= 15);
}

TEST_CASE("attn replaces its own checkpoint and picture, and writes them with the result",
          "[cli][door]") {
  attn::testing::ScratchDir dir("door-own");
  const std::string checkpoint = (dir.path / "ck.safetensors").string(),
                    picture = (dir.path / "loss.png").string();
  const std::vector<std::string> args = {
      "train", "--steps", "2", "--quiet", "--save-checkpoint", checkpoint, "--export", picture};
  REQUIRE(run_attn(args).exit_code == 0);
  const auto again = run_attn(args);
  INFO("stderr: " << again.err);
  CHECK(again.exit_code == 0);
  CHECK(fs::file_size(checkpoint) > 0);
  CHECK(fs::file_size(picture) > 0);
}

TEST_CASE("every input option refuses what it cannot read", "[cli][door][bad-input]") {
  attn::testing::ScratchDir dir("door-inputs");
  const fs::path a_folder = dir.path / "folder.npy";
  fs::create_directories(a_folder);
  const fs::path a_file = dir.path / "file";
  std::ofstream(a_file) << "not a folder\n";
  int walked = 0;
  for (const Command& c : every_command()) {
    for (const Option& o : c.options) {
      if (!kInputs.contains(o.name)) continue;
      INFO(joined(c.path) << " " << o.name);
      const bool reads_a_folder = o.placeholder.find("DIR") != std::string::npos;
      std::vector<std::string> args = runnable(c);
      // The input under test replaces the one runnable gives (attn tokenizer train --corpus).
      if (const auto given = std::find(args.begin(), args.end(), o.name); given != args.end())
        args.erase(given, given + 2);
      // The options an input needs beside it to be read at all.
      const std::string key = joined(c.path) + " " + o.name;
      if (key == "attn backward --config") args.insert(args.end(), {"--model", "encoder"});
      if (key == "attn train --corpus" || key == "attn train --tokenizer" ||
          key == "attn train --resume")
        args.insert(args.end(), {"--model", "gpt"});
      if (key == "attn assignments release --dir")
        args.insert(args.end(), {"--out", (dir.path / "new-tree").string()});
      args.insert(args.end(), {o.name, (reads_a_folder ? a_file : a_folder).string()});
      const auto result = run_attn(args);
      INFO("stderr: " << result.err);
      CHECK(result.exit_code == 2);
      CHECK(result.err.find(o.name) != std::string::npos);
      CHECK(attn::testing::line_count(result.err) == 1);
      ++walked;
    }
  }
  CHECK(walked >= 15);
}
