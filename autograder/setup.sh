#!/usr/bin/env bash
# Gradescope runs this once, when the autograder image is built, from the grader bundle that
# `attn assignments release --grader DIR` wrote. It installs what attn and the students' code
# need at grading time: attn's own libraries, the compiler and the libraries an exercise links
# with. The bundle's attn was built on Debian 12 and links Debian 12's libraries (libfmt.so.9,
# libdnnl.so.2), and share/attn/toolchain.json names the compiler and libraries by their Debian 12
# paths: so the image must run Debian 12 (docs/instructor-guide.md says why and what to do).
# tests/bundle/fresh_debian.sh runs this in a fresh Debian 12 root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
release=$( (. /etc/os-release && echo "${ID:-?} ${VERSION_ID:-?}") 2>/dev/null || echo "unknown")
if [ "$release" != "debian 12" ]; then
  echo "setup.sh: this image runs '$release', but the bundle's attn was built on Debian 12 and" \
    "needs its libraries (libfmt.so.9, GCC 12's): build the image from Debian 12, or build attn" \
    "where the image's distribution runs (docs/instructor-guide.md, 'Which image')" >&2
  exit 1
fi
# attn's own libraries (what bin/attn links), then what exercises build with: the compiler, the
# headers, and the libraries of share/attn/toolchain.json (the -dev packages hold the .so links).
packages=(libcairo2 libdnnl2 libfmt9 libopenblas0 libgomp1 libutf8proc2 zlib1g
          g++ binutils xtensor-dev libdnnl-dev libopenblas-dev libfmt-dev zlib1g-dev
          libutf8proc-dev nlohmann-json3-dev catch2)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"
# Every library of bin/attn is there now, or the image build fails here with the missing ones
# (rather than every submission scoring 0).
if missing=$(ldd "$here/bin/attn" | grep 'not found' | sed 's/^[[:space:]]*//' | paste -sd ' '); then
  echo "setup.sh: bin/attn cannot load: $missing" >&2
  exit 1
fi
