#!/bin/sh
# Trains the shipped checkpoints with attn itself and writes manifest.json: the command, the seed,
# the steps and the held-out accuracy of each (for the encoder-decoder, its exact match; for the
# character GPT, its validation loss on the corpus's held-out last tenth). Run from
# the repository root after building:
#
#     data/checkpoints/make.sh build/attn
#
# Same machine, same thread count: the same bits (training is seeded and single-threaded here).
# Every accuracy is measured on 10,000 held-out sequences training never draws, and a run stops
# with an error when any of lesson 11's checks fails (what the heads learned, held out unseen).
set -eu
attn=${1:-build/attn}
out=data/checkpoints
manifest="$out/manifest.json"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '{\n  "checkpoints": [\n' > "$tmp"
first=1
# Each encoder checkpoint: its task, its seed and the options beyond the defaults.
# previous-minus-mirror needs two relations at once (lesson 05's head ablation): one layer, two heads.
for entry in "reverse 0" "sort 0" "histogram 0" "previous-token 0" "previous-minus-mirror 1 --layers 1 --heads 2"; do
  # shellcheck disable=SC2086
  set -- $entry
  task=$1 seed=$2
  shift 2
  command="attn train --task $task${*:+ $*} --steps 2000 --seed $seed --threads 1 --save-checkpoint $out/$task.safetensors"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  json=$("$attn" ${command#attn } --format json)
  seconds=$(printf '%s %s' "$start" "$(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
  # The held-out accuracy is lesson 11's step of that name: [tokens, sequences].
  accuracy=$(printf '%s' "$json" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); a=[s for s in d["steps"] if s["name"]=="held_out_accuracy"][0]["values"]; print(a[0], a[1])')
  set -- $accuracy
  [ $first -eq 1 ] || printf ',\n' >> "$tmp"
  first=0
  printf '    {"name": "%s", "command": "%s", "seed": %s, "steps": 2000, "held_out_sequences": 10000,\n     "held_out_token_accuracy": %s, "held_out_sequence_accuracy": %s, "seconds": %s}' \
    "$task" "$command" "$seed" "$1" "$2" "$seconds" >> "$tmp"
done
# Seed 001's encoder-decoder on reverse: its held-out step is [exact match, token accuracy].
command="attn train --model transformer --task reverse --steps 4000 --seed 0 --threads 1 --save-checkpoint $out/transformer-reverse.safetensors"
start=$(date +%s.%N)
# shellcheck disable=SC2086
json=$("$attn" ${command#attn } --format json)
seconds=$(printf '%s %s' "$start" "$(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
accuracy=$(printf '%s' "$json" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); a=[s for s in d["steps"] if s["name"]=="held_out_accuracy"][0]["values"]; print(a[0], a[1])')
set -- $accuracy
printf ',\n    {"name": "transformer-reverse", "kind": "transformer", "command": "%s", "seed": 0, "steps": 4000, "held_out_sources": 10000,\n     "held_out_exact_match": %s, "held_out_token_accuracy": %s, "seconds": %s}' \
  "$command" "$1" "$2" "$seconds" >> "$tmp"
# The character GPT (attn generate --checkpoint gpt-char): a Hugging Face GPT-2 folder, under 2 MB
# (467,520 float32 numbers), trained on the shipped corpus. Its training state (for --resume) is
# left out: the folder holds what Hugging Face and attn generate read.
command="attn train --model gpt --layers 4 --d-model 96 --heads 4 --block 128 --batch 12 --steps 4000 --lr 0.002 --eval-interval 250 --seed 0 --threads 1 --save-checkpoint $out/gpt-char"
rm -rf "$out/gpt-char"
start=$(date +%s.%N)
# shellcheck disable=SC2086
json=$("$attn" ${command#attn } --format json)
seconds=$(printf '%s %s' "$start" "$(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
rm "$out/gpt-char/training_state.safetensors"
losses=$(printf '%s' "$json" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); v=[s for s in d["steps"] if s["name"]=="validation_loss"][0]["values"]; print(v[0], v[-1])')
set -- $losses
printf ',\n    {"name": "gpt-char", "kind": "gpt", "command": "%s", "seed": 0, "steps": 4000, "corpus": "data/corpus/moby-dick.txt",\n     "validation_loss_at_start": %s, "validation_loss": %s, "seconds": %s}' \
  "$command" "$1" "$2" "$seconds" >> "$tmp"
# Lesson 18's induction heads (attn induction, attn heads --checkpoint induction): a 2-layer
# attention-only GPT-2 folder, its run's record (losses and head scores at every evaluation) in
# model.safetensors' metadata.
command="attn train --task induction --seed 0 --threads 1 --save-checkpoint $out/induction"
rm -rf "$out/induction"
start=$(date +%s.%N)
# shellcheck disable=SC2086
json=$("$attn" ${command#attn } --format json)
seconds=$(printf '%s %s' "$start" "$(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
rm -f "$out/induction/training_state.safetensors"
losses=$(printf '%s' "$json" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); v=[s for s in d["steps"] if s["name"]=="repeat_loss"][0]["values"]; print(v[0], v[-1])')
set -- $losses
printf ',\n    {"name": "induction", "kind": "gpt", "command": "%s", "seed": 0, "steps": 3000,\n     "repeat_loss_at_start": %s, "repeat_loss": %s, "seconds": %s}' \
  "$command" "$1" "$2" "$seconds" >> "$tmp"
printf '\n  ]\n}\n' >> "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$manifest"
trap - EXIT
cat "$manifest"
