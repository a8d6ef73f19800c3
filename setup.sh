#!/usr/bin/env bash
# Sets attn up on Debian 12: installs the Debian packages it builds with (only those missing, so
# a second run installs nothing), then configures and builds the Release tree in build/.
# `./setup.sh asan` also installs clang and its sanitizer and libFuzzer runtimes and builds
# build-asan/ instead: everything, tests and libFuzzer targets included, with AddressSanitizer and
# UndefinedBehaviorSanitizer (`ctest --preset asan` runs the tests, tests/fuzz/run.sh the fuzz
# targets). `./setup.sh fuzz` is the same: one tree serves both.
set -euo pipefail
cd "$(dirname "$0")"
mode="${1:-release}"
if [ "$mode" = fuzz ]; then
  mode=asan
fi
if [ "$mode" != release ] && [ "$mode" != asan ]; then
  echo "usage: ./setup.sh [asan|fuzz]: builds build/ (Release), or build-asan/ (sanitizers, every test and the fuzz targets)" >&2
  exit 2
fi

packages=(
  build-essential cmake ninja-build ccache pkg-config  # compiler and build tools
  xtensor-dev libxtensor-blas-dev libopenblas-dev       # tensors and BLAS
  libdnnl-dev                                           # oneDNN: the large products where it is faster
  libcli11-dev libfmt-dev nlohmann-json3-dev zlib1g-dev # command line, formatting, JSON, zlib
  libutf8proc-dev                                       # Unicode for the tokenizer (NFD, categories)
  libcairo2-dev fonts-dejavu-core                       # the exported pictures (.svg, .png) and their font
  catch2                                                # tests (Catch2 v2)
  clang-format                                          # the formatting check (clang-format-14)
  tmux                                                  # the test that drives attn view --interactive
  chromium                                              # the browser tests: exported pages, screenshots
  zsh fish groff-base                                   # the tests of attn's completions and man page
  debootstrap                                           # the grader bundle on a fresh Debian 12 (.ci/run)
)
if [ "$mode" = asan ]; then
  packages+=(clang libclang-rt-14-dev  # the compiler, libFuzzer and the ASan/UBSan runtimes
             llvm)                     # llvm-symbolizer: the sanitizers' stack traces, with lines
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
  echo "setup.sh: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Paths below this checkout hash the same in every clone, so ccache serves any clone's objects.
export CCACHE_BASEDIR="$PWD"
cmake --preset "$mode" >/dev/null
cmake --build --preset "$mode"
