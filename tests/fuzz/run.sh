#!/usr/bin/env bash
# Runs every built fuzz target for SECONDS each (build them with `./setup.sh asan`, or `cmake
# --preset asan && cmake --build --preset asan`: the sanitized tree, build-asan/, holds them in
# fuzz/), on a copy of its corpus so the repository is not modified, with
# tests/fuzz/regressions/<target>/ as extra seeds. Prints each target's number of executions;
# exits 1 on any finding, leaving the input that caused it in the findings directory.
#   tests/fuzz/run.sh SECONDS [TARGET...]     e.g. tests/fuzz/run.sh 60 npy config
# ATTN_FUZZ_BUILD sets the build directory (default build-asan).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
seconds="${1:-}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: tests/fuzz/run.sh SECONDS [TARGET...]: runs each fuzz target for SECONDS" >&2
  exit 2
fi
shift
build="${ATTN_FUZZ_BUILD:-$root/build-asan}"
bin="$build/fuzz"
if (($# > 0)); then
  targets=("$@")
else
  targets=()
  for exe in "$bin"/fuzz_*; do
    [ -x "$exe" ] && targets+=("${exe##*/fuzz_}")
  done
fi
if ((${#targets[@]} == 0)); then
  echo "run.sh: no fuzz targets in $bin: build them with \`./setup.sh asan\`" >&2
  exit 2
fi

status=0
for what in "${targets[@]}"; do
  exe="$bin/fuzz_$what"
  if [ ! -x "$exe" ]; then
    echo "fuzz_$what: not built ($exe is missing)" >&2
    status=2
    continue
  fi
  work="$build/fuzz-work/$what"
  findings="$build/fuzz-findings/$what"
  rm -rf "$work"
  mkdir -p "$work" "$findings"
  cp -r "$here/corpus/$what" "$work/corpus"
  seeds=("$work/corpus")
  [ -d "$here/regressions/$what" ] && seeds+=("$here/regressions/$what")
  log="$work/fuzz.log"
  "$exe" "${seeds[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1
  code=$?
  done_line="$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1)"
  if ((code == 0)); then
    echo "fuzz_$what: ${done_line:-no summary line (see $log)}"
    [ -n "$done_line" ] || status=1
  else
    status=1
    runs="$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{print $2}' | tail -1)"
    echo "fuzz_$what: FINDING after ${runs:-?} runs (exit $code); log: $log"
    # The report and its stack, so a CI log shows what was found.
    sed -n -E '/==[0-9]+== ?ERROR|runtime error:|terminate called/,$p' "$log" | grep -v '^MS:\|^base64:' |
      head -40 | sed 's/^/  /'
    grep -E 'Test unit written to' "$log" | sed 's/^.*Test unit written to /  input: /'
    echo "  replay: $exe <input>; fix it, then add the input to tests/fuzz/regressions/$what/"
  fi
done
exit $status
