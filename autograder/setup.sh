#!/usr/bin/env bash
# Gradescope runs this once, when the autograder image is built, from the grader bundle that
# `attn assignments release --grader DIR` wrote. It installs what attn and the students' code
# need at grading time: the compiler and the libraries an exercise links with. The bundle's attn
# was built on Debian 12, so the image must run Debian 12 (or the distribution attn was built on).
set -euo pipefail
# attn's own libraries (the bundle's bin/attn links them, exercises link oneDNN too), then what
# exercises build with.
packages=(libcairo2 libdnnl-dev
          g++ binutils xtensor-dev libopenblas-dev libfmt-dev zlib1g-dev libutf8proc-dev
          nlohmann-json3-dev catch2)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"
