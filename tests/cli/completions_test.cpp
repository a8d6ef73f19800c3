// attn completions bash|zsh|fish, run in the shells themselves: each script is loaded as its shell
// loads it (bash and fish source it, zsh autoloads it from $fpath) and asked to complete command
// lines, and must offer attn's commands, subcommands, options and choices as `attn --help` lists
// them. zsh completes only inside its line editor, so its completions run in an interactive zsh
// under a pseudo-terminal (zsh/zpty). setup.sh installs zsh and fish; these tests fail, rather than
// skip, when one is missing.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "run_attn.hpp"
#include "run_program.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::find_program;
using attn::testing::run_attn;
using attn::testing::run_program;
using attn::testing::ScratchDir;
using Words = std::vector<std::string>;
using attn::testing::help_commands;

namespace {

// `attn completions <shell>` written to dir/name.
void write_script(const std::string& shell, const fs::path& path) {
  const auto result = run_attn({"completions", shell});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  REQUIRE(result.err.empty());
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << result.out;
}

// The non-empty lines of `text`, each up to its first tab (fish adds "\tdescription").
Words lines_of(const std::string& text) {
  Words lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('\t'));
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string joined(const Words& words) {
  std::string out;
  for (const std::string& word : words)
    out += (out.empty() ? "" : " ") + word;
  return out;
}

Words sorted(Words words) {
  std::sort(words.begin(), words.end());
  return words;
}

bool contains(const Words& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// The shells' home and configuration under `dir`, so that no user's setup takes part.
std::vector<std::string> own_home(const fs::path& dir) {
  return {"HOME=" + dir.string(), "XDG_CONFIG_HOME=" + (dir / ".config").string(),
          "XDG_DATA_HOME=" + (dir / ".local/share").string(),
          "XDG_CACHE_HOME=" + (dir / ".cache").string()};
}

// A folder with a file and a folder in it, where the file options complete.
void make_files(const fs::path& dir) {
  std::ofstream(dir / "x.npy") << "not read\n";
  fs::create_directories(dir / "out");
}

// --- bash: the script sourced, COMP_WORDS and COMP_CWORD set as bash sets them, _attn called.

constexpr const char* kBashDriver = R"bash(source "$1"
shift
if [[ "$(complete -p attn)" != "complete -F _attn attn" ]]; then
  echo "the script did not register _attn for attn" >&2
  exit 3
fi
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
_attn
((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}"
)bash";

struct Bash {
  ScratchDir dir{"completions-bash"};
  Bash() {
    make_files(dir.path);
    write_script("bash", dir.path / "attn.bash");
    std::ofstream(dir.path / "complete.bash") << kBashDriver;
  }
  // What _attn offers for `words` ("attn", ..., the word under the cursor), in its order.
  Words complete(const Words& words) {
    Words args = {"bash", "--norc", "--noprofile", "complete.bash", "attn.bash"};
    args.insert(args.end(), words.begin(), words.end());
    const auto result = run_program(args, dir.path, own_home(dir.path));
    INFO("bash: " << joined(words) << "\nstderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.err.empty());
    return lines_of(result.out);
  }
};

// --- zsh: an interactive zsh under a pseudo-terminal types the line and a TAB; compadd, wrapped,
// prints each match it is given. The marks are built when they run, so that the terminal's echo
// of the lines typed does not hold them.

constexpr const char* kZshDriver = R"zsh(zmodload zsh/zpty || exit 3
zpty attn zsh -f -i
zpty -w attn "PROMPT=''; fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -d ${(q)1}/.zcompdump"
zpty -w attn "zstyle ':completion:*' insert-tab false; bindkey '^I' complete-word"
zpty -w attn 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a hits; builtin compadd -A hits "$@"; print -rl -- "${:-match}: "${^hits}; builtin compadd "$@"; }'
zpty -w attn 'attn-done() { print -r -- "${:-completion}-done" }; comppostfuncs=(attn-done)'
zpty -w attn "$2"$'\t'
local line
while zpty -r attn line; do
  line=${line//$'\r'/}
  [[ $line == *completion-done* ]] && break
  [[ $line == *"match: "* ]] && print -r -- ${line#*match: }
done
zpty -d attn
)zsh";

struct Zsh {
  ScratchDir dir{"completions-zsh"};
  fs::path functions = dir.path / "site-functions";
  Zsh() {
    INFO("zsh is missing: ./setup.sh installs it (apt-get install zsh)");
    REQUIRE(!find_program("zsh").empty());
    make_files(dir.path);
    write_script("zsh", functions / "_attn");
    std::ofstream(dir.path / "complete.zsh") << kZshDriver;
  }
  Words complete(const std::string& line) {
    const auto result =
        run_program({"timeout", "30", "zsh", "-f", "complete.zsh", functions.string(), line},
                    dir.path, own_home(dir.path));
    INFO("zsh: " << line << "\nstderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    return sorted(lines_of(result.out));
  }
};

// --- fish: the script sourced, then `complete -C LINE`.

struct Fish {
  ScratchDir dir{"completions-fish"};
  Fish() {
    INFO("fish is missing: ./setup.sh installs it (apt-get install fish)");
    REQUIRE(!find_program("fish").empty());
    make_files(dir.path);
    write_script("fish", dir.path / "attn.fish");
  }
  Words complete(const std::string& line) {
    const auto result =
        run_program({"fish", "--no-config", "-c", "source attn.fish; complete -C $argv[1]", line},
                    dir.path, own_home(dir.path));
    INFO("fish: " << line << "\nstderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.err.empty());
    return sorted(lines_of(result.out));
  }
};

}  // namespace

TEST_CASE("attn completions bash completes commands, subcommands, options and choices",
          "[cli][completions]") {
  Bash bash;
  CHECK(bash.complete({"attn", "sof"}) == Words{"softmax"});
  CHECK(bash.complete({"attn", "view", ""}) == Words{"head", "model", "neuron"});
  // A value of an option is not the view's kind; a kind given is not offered again.
  CHECK(bash.complete({"attn", "view", "--layer", "2", ""}) == Words{"head", "model", "neuron"});
  CHECK(bash.complete({"attn", "view", "head", ""}).empty());
  CHECK(bash.complete({"attn", "completions", ""}) == Words{"bash", "zsh", "fish"});
  CHECK(bash.complete({"attn", "assignments", ""}) == Words{"add", "release"});
  CHECK(bash.complete({"attn", "--"}) == Words{"--help", "--version"});

  const Words softmax = bash.complete({"attn", "softmax", "--"});
  for (const char* option : {"--help", "--temperature", "--mask", "--seed", "--format", "--quiet"})
    CHECK(contains(softmax, option));
  CHECK_FALSE(contains(softmax, "--steps"));

  // A choice's words, after the option and after --mask= (which bash splits into three words).
  CHECK(bash.complete({"attn", "softmax", "--mask", ""}) == Words{"none", "causal"});
  CHECK(bash.complete({"attn", "softmax", "--mask", "=", ""}) == Words{"none", "causal"});
  CHECK(bash.complete({"attn", "softmax", "--mask", "=", "ca"}) == Words{"causal"});
  CHECK(bash.complete({"attn", "dot-product", "--format", ""}) == Words{"text", "json"});
  // FILE options complete file names, DIR options folders.
  CHECK(contains(bash.complete({"attn", "softmax", "--input", ""}), "x.npy"));
  CHECK(bash.complete({"attn", "softmax", "--save", ""}) == Words{"out"});

  // `attn tokenizer train` has options of its own, not those of `attn train`.
  const Words tokenizer_train = bash.complete({"attn", "tokenizer", "train", "--"});
  CHECK(contains(tokenizer_train, "--corpus"));
  CHECK_FALSE(contains(tokenizer_train, "--steps"));
  CHECK(contains(bash.complete({"attn", "train", "--"}), "--steps"));
}

TEST_CASE("attn completions bash offers every command of attn --help, in its order",
          "[cli][completions]") {
  Bash bash;
  CHECK(bash.complete({"attn", ""}) == help_commands());
}

TEST_CASE("attn completions zsh is a completion function zsh autoloads and runs",
          "[cli][completions]") {
  Zsh zsh;
  const fs::path script = zsh.functions / "_attn";
  CHECK(attn::testing::read_text(script.string()).starts_with("#compdef attn\n"));
  const auto syntax = run_program({"zsh", "-n", script.string()}, zsh.dir.path);
  INFO("zsh -n: " << syntax.err);
  CHECK(syntax.exit_code == 0);
  CHECK(syntax.err.empty());

  // compinit binds it to attn from $fpath by its #compdef line; sourced, it binds itself.
  const std::string compinit = "autoload -Uz compinit; compinit -u -d " +
                               (zsh.dir.path / ".zcompdump-check").string() + "; ";
  const auto from_fpath = run_program(
      {"zsh", "-f", "-c",
       "fpath=(" + zsh.functions.string() + " $fpath); " + compinit + "print -r -- $_comps[attn]"},
      zsh.dir.path);
  CHECK(from_fpath.out == "_attn\n");
  const auto sourced = run_program(
      {"zsh", "-f", "-c", compinit + "source " + script.string() + "; print -r -- $_comps[attn]"},
      zsh.dir.path);
  INFO("stderr: " << sourced.err);
  CHECK(sourced.out == "_attn\n");

  CHECK(zsh.complete("attn sof") == Words{"softmax"});
  CHECK(zsh.complete("attn ") == sorted(help_commands()));
  CHECK(zsh.complete("attn view ") == Words{"head", "model", "neuron"});
  CHECK(zsh.complete("attn completions ") == Words{"bash", "fish", "zsh"});
  CHECK(zsh.complete("attn softmax --mask ") == Words{"causal", "none"});
  CHECK(zsh.complete("attn softmax --mask=") == Words{"causal", "none"});
  CHECK(zsh.complete("attn assignments release --") ==
        Words{"--dir", "--grader", "--help", "--lesson", "--out"});
  CHECK(zsh.complete("attn tokenizer train --co") == Words{"--color", "--corpus"});
  CHECK(contains(zsh.complete("attn softmax --input "), "x.npy"));
}

TEST_CASE("attn completions fish is a script fish sources and completes with",
          "[cli][completions]") {
  Fish fish;
  const auto syntax = run_program({"fish", "--no-config", "--no-execute", "attn.fish"},
                                  fish.dir.path, own_home(fish.dir.path));
  INFO("fish --no-execute: " << syntax.err);
  CHECK(syntax.exit_code == 0);
  CHECK(syntax.err.empty());

  CHECK(fish.complete("attn sof") == Words{"softmax"});
  CHECK(fish.complete("attn ") == sorted(help_commands()));
  CHECK(fish.complete("attn view ") == Words{"head", "model", "neuron"});
  CHECK(fish.complete("attn view --layer 2 ") == Words{"head", "model", "neuron"});
  CHECK(fish.complete("attn view head ").empty());
  CHECK(fish.complete("attn completions ") == Words{"bash", "fish", "zsh"});
  CHECK(fish.complete("attn assignments ") == Words{"add", "release"});
  CHECK(fish.complete("attn softmax --mask ") == Words{"causal", "none"});
  CHECK(fish.complete("attn softmax --ma") == Words{"--mask", "--max-memory"});
  CHECK(fish.complete("attn tokenizer train --co") == Words{"--color", "--corpus"});
  CHECK(contains(fish.complete("attn softmax --input "), "x.npy"));
  CHECK(fish.complete("attn softmax --save ") == Words{"out/"});
}

TEST_CASE("the build writes into share/ the scripts and man page attn prints",
          "[cli][completions]") {
  const fs::path share = fs::path(ATTN_EXECUTABLE_DIR) / "share";
  const std::vector<std::pair<std::string, Words>> files = {
      {"bash-completion/completions/attn", {"completions", "bash"}},
      {"zsh/site-functions/_attn", {"completions", "zsh"}},
      {"fish/vendor_completions.d/attn.fish", {"completions", "fish"}},
      {"man/man1/attn.1", {"man"}}};
  for (const auto& [file, args] : files) {
    INFO(file);
    REQUIRE(fs::exists(share / file));
    const auto printed = run_attn(args);
    REQUIRE(printed.exit_code == 0);
    CHECK(attn::testing::read_text((share / file).string()) == printed.out);
  }
}

TEST_CASE("attn completions refuses a shell it does not complete, with the ones it does",
          "[cli][completions][bad-input]") {
  attn::testing::check_refused(
      run_attn({"completions", "tcsh"}),
      "attn completions: 'tcsh' is not a shell attn completes: use bash, zsh or fish\n", 1 << 30);
  attn::testing::check_refused(
      run_attn({"completions"}),
      "attn completions: give a shell, e.g. `attn completions bash`; the shells: bash, zsh or fish\n",
      1 << 30);
  attn::testing::check_refused(run_attn({"completions", "bash", "zsh"}),
                               "attn completions: unexpected argument 'zsh': `attn completions` "
                               "takes one argument, SHELL",
                               1 << 30);
}
