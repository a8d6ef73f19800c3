#!/usr/bin/env bash
# Makes the pictures in docs/images/ with attn itself: the shipped checkpoints' attention
# (attn view --export) and a training run's curves at a fixed seed (attn train --export). Run it
# from anywhere after ./setup.sh; ATTN=path/to/attn uses another build.
set -euo pipefail
cd "$(dirname "$0")/../.."
attn="${ATTN:-./build/attn}"
out=docs/images

"$attn" view model --checkpoint reverse --export "$out/view-model-reverse.png"
"$attn" view head --checkpoint transformer-reverse --layer 1 \
  --export "$out/view-cross-transformer-reverse.png"
"$attn" view neuron --checkpoint reverse --token 2 --export "$out/view-neuron-reverse.png"
"$attn" train --task reverse --seed 0 --export "$out/train-loss-reverse.png" >/dev/null
echo "wrote $out/train-loss-reverse.png ($(stat -c %s "$out/train-loss-reverse.png") bytes)"
