"""`attn tokenizer train` against minbpe's RegexTokenizer(GPT2_SPLIT_PATTERN).train, in one run on one
machine: the same text, the same vocabulary size; prints both times, the ratio (minbpe's time /
attn's; the issue asks for at least 20) and whether the merges are the same.

minbpe (https://github.com/karpathy/minbpe) is pure Python on Debian's python3-regex; give the
folder that holds its package. The text is the first --bytes of data/corpus/*.txt when there is
one, else --text FILE.

    /usr/bin/python3 bench/compare_bpe.py MINBPE_FOLDER [--attn build/attn] [--text FILE]
        [--bytes 200000] [--vocab-size 512] [--rounds 3]

attn's time is the whole command (starting, reading, training, writing the files), the median of
--rounds runs; minbpe's is its train() alone, run once (it is the slow side). A benchmark, not a
test: it asserts nothing. Run it on an idle machine.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent


def corpus(args):
    if args.text:
        path = pathlib.Path(args.text)
    else:
        found = sorted((ROOT / "data" / "corpus").glob("*.txt"))
        if not found:
            sys.exit("no data/corpus/*.txt: give a text with --text FILE")
        path = found[0]
    data = path.read_bytes()[: args.bytes]
    return path, data.decode("utf-8", errors="ignore")  # a cut character at the end is dropped


def minbpe_train(folder, text, vocab_size):
    package = types.ModuleType("minbpe")  # without its __init__, which imports tiktoken
    package.__path__ = [str(pathlib.Path(folder) / "minbpe")]
    sys.modules["minbpe"] = package
    from minbpe.regex import GPT2_SPLIT_PATTERN, RegexTokenizer

    tokenizer = RegexTokenizer(GPT2_SPLIT_PATTERN)
    start = time.perf_counter()
    tokenizer.train(text, vocab_size)
    seconds = time.perf_counter() - start
    merges = [list(pair) for pair, _ in sorted(tokenizer.merges.items(), key=lambda m: m[1])]
    return seconds, merges


def attn_train(attn, text_file, vocab_size, rounds):
    times = []
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(rounds):
            out = pathlib.Path(scratch) / f"bpe{r}"
            start = time.perf_counter()
            subprocess.run(
                [attn, "tokenizer", "train", "--corpus", text_file, "--vocab-size",
                 str(vocab_size), "--save", str(out), "--quiet"],
                check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        merges = (out / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]
        vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    return statistics.median(times), merges, vocab


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("minbpe", help="the folder holding minbpe/ (a checkout of karpathy/minbpe)")
    parser.add_argument("--attn", default=str(ROOT / "build" / "attn"))
    parser.add_argument("--text", help="a UTF-8 text file (default: data/corpus/*.txt)")
    parser.add_argument("--bytes", type=int, default=200_000)
    parser.add_argument("--vocab-size", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    path, text = corpus(args)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write(text)
        text_file = f.name
    try:
        attn_seconds, attn_merges, vocab = attn_train(args.attn, text_file, args.vocab_size,
                                                      args.rounds)
    finally:
        pathlib.Path(text_file).unlink()
    minbpe_seconds, minbpe_merges = minbpe_train(args.minbpe, text, args.vocab_size)

    # attn's merges.txt names tokens by GPT-2's characters: back to ids through its vocab.json.
    same = [[vocab[token] for token in line.split(" ")] for line in attn_merges] == minbpe_merges
    print(f"text: {len(text.encode('utf-8'))} bytes of {path.name}, vocab size {args.vocab_size} "
          f"({args.vocab_size - 256} merges)")
    print(f"attn tokenizer train: {attn_seconds:.3f} s (median of {args.rounds}, whole command)")
    print(f"minbpe RegexTokenizer(GPT2_SPLIT_PATTERN).train: {minbpe_seconds:.3f} s")
    print(f"ratio (minbpe / attn): {minbpe_seconds / attn_seconds:.1f}x (target >= 20x)")
    print(f"same merges: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
