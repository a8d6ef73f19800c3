#!/usr/bin/env bash
# Writes data/fixtures/exercises/visible.txt: the fixtures the visible tests read, which is all of
# them a student's install holds (course/CMakeLists.txt); every other fixture is the grader's.
# It runs `attn check` (the visible tests) on each exercise of the checkout under strace and keeps
# the inputs and expected values that were opened. Run it after adding or renaming a fixture or a
# visible test; the install test (tests/cli/install_test.cpp) fails while a visible test needs a
# fixture the list lacks. Needs strace (apt-get install strace) and a build in build/.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v strace >/dev/null || { echo "visible_fixtures.sh: needs strace (apt-get install strace)" >&2; exit 2; }
[ -x build/attn ] || { echo "visible_fixtures.sh: build attn first (./setup.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for test in lessons/*/*_exercise_test.cpp; do
  folder=$(basename "$(dirname "$test")")
  lesson=${folder#*-}
  if ! strace -f -qq -e trace=openat -o "$work/$lesson.log" build/attn check "$lesson" --dir . \
       >"$work/$lesson.out" 2>&1; then
    echo "visible_fixtures.sh: the solution of $lesson fails its visible tests:" >&2
    cat "$work/$lesson.out" >&2
    exit 1
  fi
done
out=data/fixtures/exercises/visible.txt
{
  echo "# The fixtures the visible tests read (relative to this folder): all a student's install holds."
  echo "# Written by tests/assignments/visible_fixtures.sh; a fixture not listed is the grader's alone."
  cat "$work"/*.log | grep -v ENOENT |
    grep -o 'share/attn/\(inputs\|grader/expected\)/[^"]*\.npy' |
    sed 's#share/attn/grader/#share/attn/#; s#share/attn/##' | sort -u
} >"$out.partial"
mv "$out.partial" "$out"
echo "wrote $out: $(grep -vc '^#' "$out") of $(find data/fixtures/exercises/inputs data/fixtures/exercises/expected -name '*.npy' | wc -l) fixtures"
