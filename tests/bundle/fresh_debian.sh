#!/usr/bin/env bash
# The Gradescope bundle, proven on a fresh Debian 12: writes the bundle with
# `attn assignments release --grader`, builds a bare Debian 12 root with debootstrap from Debian's
# archive, installs the bundle there as Gradescope does (its own setup.sh from
# /autograder/source, then run_autograder copied to /autograder), and grades two submissions
# through run_autograder: the instructor's solutions of 01 and 03 (full marks for both) and a
# softmax exercise with its causal mask flipped (fewer points). It checks that the bundle's attn
# finds every library it links and that every path of share/attn/toolchain.json exists there.
#
#   tests/bundle/fresh_debian.sh [ATTN]     (ATTN: default build/attn; run as root, from CI)
#
# Needs root (debootstrap, mount, chroot), debootstrap, python3 and Debian's archive
# (DEBIAN_MIRROR overrides http://deb.debian.org/debian). Everything it makes is in one temporary
# folder, removed at the end with its mounts. It takes minutes: .ci/run runs it, ctest does not.
set -euo pipefail
attn=$(realpath -m "${1:-$(dirname "$0")/../../build/attn}")
cd "$(dirname "$0")/../.."
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

started=$SECONDS
say() { echo "fresh_debian: [$((SECONDS - started)) s] $*"; }
fail() {
  echo "fresh_debian: FAILED: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || fail "run as root: debootstrap, mount and chroot need it"
debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
[ -x "$debootstrap" ] || fail "debootstrap is missing: apt-get install debootstrap (./setup.sh does)"
command -v python3 >/dev/null || fail "python3 is missing"
[ -x "$attn" ] || fail "$attn is not an executable: build attn first (./setup.sh)"

work=$(mktemp -d "${TMPDIR:-/tmp}/attn-fresh-debian.XXXXXX")
root="$work/root"
mounts=()
cleanup() {
  local status=$? at
  for ((at = ${#mounts[@]} - 1; at >= 0; at--)); do
    umount "${mounts[at]}" 2>/dev/null || umount -l "${mounts[at]}" 2>/dev/null ||
      echo "fresh_debian: cannot unmount ${mounts[at]}" >&2
  done
  # Nothing is removed through a mount that is still there.
  if grep -q " $work/" /proc/self/mounts; then
    echo "fresh_debian: $work is left behind: something is still mounted in it" >&2
  else
    rm -rf "$work"
  fi
  say "removed the root and its mounts"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# in_root CMD...: runs CMD in the root, with a clean environment as Gradescope's would be.
in_root() {
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive chroot "$root" "$@"
}

say "writing the grader bundle with $attn assignments release --grader"
"$attn" assignments release --grader "$work/bundle" | sed 's/^/  /'

say "debootstrap --variant=minbase bookworm from $mirror"
"$debootstrap" --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  fail "debootstrap failed; its last lines: $(tail -n 5 "$work/debootstrap.log")"

# /proc, and a /dev of the few devices programs expect.
mount -t proc proc "$root/proc" || fail "cannot mount /proc in the root"
mounts+=("$root/proc")
mount -t tmpfs -o mode=0755,nosuid devices "$root/dev" || fail "cannot mount /dev in the root"
mounts+=("$root/dev")
for device in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
  read -r name major minor <<<"$device"
  mknod -m 0666 "$root/dev/$name" c "$major" "$minor"
done
mkdir -m 1777 "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
cp /etc/resolv.conf "$root/etc/resolv.conf"

say "installing the bundle as Gradescope does: /autograder/source/setup.sh"
mkdir -p "$root/autograder"
cp -a "$work/bundle" "$root/autograder/source"
in_root bash -c 'cd /autograder/source && bash ./setup.sh' >"$work/setup.log" 2>&1 ||
  fail "the bundle's setup.sh failed; its last lines: $(tail -n 10 "$work/setup.log")"
cp "$root/autograder/source/run_autograder" "$root/autograder/run_autograder"

say "ldd /autograder/source/bin/attn in the root"
libraries=$(in_root ldd /autograder/source/bin/attn) || fail "ldd failed: $libraries"
if grep -q 'not found' <<<"$libraries"; then
  fail "the bundle's attn misses libraries that its setup.sh does not install:
$(grep 'not found' <<<"$libraries")"
fi
echo "  every library found ($(grep -c '=>' <<<"$libraries") libraries)"

say "the compiler and libraries of share/attn/toolchain.json in the root"
paths=$(python3 -c '
import json, sys
tool = json.load(open(sys.argv[1]))
for path in [tool["compiler"]] + tool["link"]:
    if path.startswith("/"):
        print(path)
' "$root/autograder/source/share/attn/toolchain.json")
for path in $paths; do
  in_root test -e "$path" || fail "$path (share/attn/toolchain.json) is not in the root after setup.sh"
done
echo "  $(wc -w <<<"$paths") paths, each there"

# grade NAME: runs /autograder/run_autograder on the files staged in $work/NAME; its results.json
# becomes $work/NAME.json.
grade() {
  rm -rf "$root/autograder/submission" "$root/autograder/results"
  cp -a "$work/$1" "$root/autograder/submission"
  local begun=$SECONDS
  in_root /autograder/run_autograder >"$work/$1.log" 2>&1 ||
    fail "run_autograder ended with an error on the $1 submission: $(tail -n 10 "$work/$1.log")"
  [ -s "$root/autograder/results/results.json" ] || fail "run_autograder wrote no results.json"
  cp "$root/autograder/results/results.json" "$work/$1.json"
  say "graded the $1 submission in $((SECONDS - begun)) s"
}

# correct: a repository (03 in its lesson's folder) plus a file uploaded alone (01 at the top).
mkdir -p "$work/correct/lessons/03-softmax"
cp lessons/03-softmax/softmax_exercise.cpp "$work/correct/lessons/03-softmax/"
cp lessons/01-dot-product/dot_product_exercise.cpp "$work/correct/"
# wrong: the causal mask flipped (the future visible, the past hidden).
mkdir -p "$work/wrong"
sed 's/key <= query ? 0.0f/key >= query ? 0.0f/' lessons/03-softmax/softmax_exercise.cpp \
  >"$work/wrong/softmax_exercise.cpp"
cmp -s lessons/03-softmax/softmax_exercise.cpp "$work/wrong/softmax_exercise.cpp" &&
  fail "the causal mask line of lessons/03-softmax/softmax_exercise.cpp changed: update the wrong submission"
grade correct
grade wrong

say "the scores, read from the results.json files"
python3 - "$work/correct.json" "$work/wrong.json" <<'EOF'
import json, sys

def lessons(path):
    report = json.load(open(path))
    scores = {}
    for test in report["tests"]:
        got, top = scores.get(test["tags"][0], (0.0, 0.0))
        scores[test["tags"][0]] = (got + test["score"], top + test["max_score"])
    return report, scores

problems = []
correct, c = lessons(sys.argv[1])
wrong, w = lessons(sys.argv[2])
for name, report, scores in (("correct", correct, c), ("wrong", wrong, w)):
    total = sum(top for _, top in scores.values())
    print(f"  {name}: score {report['score']:g}/{total:g}; "
          + ", ".join(f"{lesson} {got:g}/{top:g}" for lesson, (got, top) in scores.items()
                      if lesson in ("dot-product", "softmax")))
    for line in report["output"].splitlines():
        if line.startswith("  0") and ("dot_product" in line or "softmax" in line):
            print(f"    output:{line}")
for lesson in ("dot-product", "softmax"):
    got, top = c.get(lesson, (0, 0))
    if not (top > 0 and got == top):
        problems.append(f"the correct submission's {lesson} scored {got:g}/{top:g}, not full marks")
got, top = w.get("softmax", (0, 0))
if not (top > 0 and got < top):
    problems.append(f"the wrong submission's softmax scored {got:g}/{top:g}: the flipped mask passed")
if "graded lessons/03-softmax/softmax_exercise.cpp" not in correct["output"]:
    problems.append("the correct submission's output does not name the graded softmax file")
if problems:
    print("fresh_debian: FAILED: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
EOF
say "passed: the bundle installs and grades on a fresh Debian 12"
