"""Fixtures of BPE training: minbpe's RegexTokenizer with GPT-2's split pattern, trained on a few
small texts, its merges and its encodings written as data/fixtures/bpe_train/<case>.json (and the
texts together as corpus.txt).

minbpe (Karpathy, https://github.com/karpathy/minbpe) is pure Python on the `regex` module
(Debian's python3-regex). It is not vendored: give the folder that holds its package,

    python3 data/make_bpe_train_fixtures.py /path/to/minbpe-checkout

minbpe's default pattern is GPT-4's; these fixtures construct RegexTokenizer(GPT2_SPLIT_PATTERN).
Training sees <|endoftext|> as ordinary text (minbpe's train does); the special token is then
registered as the id after the last merge and encode keeps it whole (allowed_special="all").
"""
import json
import pathlib
import sys
import types

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "bpe_train"

ENGLISH = (
    "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs on and on.\n"
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
    "age of foolishness, it was the epoch of belief, it was the epoch of incredulity.\n"
    "There were a king with a large jaw and a queen with a plain face, on the throne of England; "
    "there were a king with a large jaw and a queen with a fair face, on the throne of France.\n"
    "Isn't it? We'll see; they've gone, I'm here, you're there, she'd know. 1999 and 2024: 42!\n"
)

# Pairs whose counts tie, over and over: which is merged first is minbpe's tie-break alone.
# "aaaa" runs overlap (get_stats counts 3 pairs, merge replaces 2).
TIES = (
    "ab cd ef gh cd ab gh ef ba dc fe hg aaaa bbbb aaa bb xyxy yxyx zz zz zzz abcd dcba "
    "cdab ghef efgh hgfe ab cd ef gh\n  \t\n"
)

UNICODE = (
    "café naïve résumé Ærøskøbing Ελληνικά Привет мир 日本語のテキスト 한국어 "
    "🙂 🙂🙂 👍🏽 👩‍👩‍👧 🇫🇷 café café naïve 🙂 ½ ² ٣ é\u0301 \u00a0x\u2003y\n"
)

SPECIAL = (
    "first document, short.<|endoftext|>second document, a bit longer.<|endoftext|>"
    "<|endoftext|>third: the end<|endoftext|> fourth document, the last document."
)

CASES = [
    ("english", ENGLISH, 320),
    ("ties", TIES, 290),
    ("unicode", UNICODE, 300),
    ("special", SPECIAL, 280),
]

SAMPLES = [
    "The fox runs over the dog.",
    "it was the age of times",
    "café 🙂 naïve 👍🏽 日本語",
    "aaaaaaa abab ba",
    "hello<|endoftext|>world<|endoftext|>",
    "  spaces   and\ttabs\n\nnewlines ",
    "",
]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_bpe_train_fixtures.py MINBPE_FOLDER (the checkout holding minbpe/)")
    # The package without its __init__, which imports tiktoken for GPT4Tokenizer.
    package = types.ModuleType("minbpe")
    package.__path__ = [str(pathlib.Path(sys.argv[1]) / "minbpe")]
    sys.modules["minbpe"] = package
    from minbpe.regex import GPT2_SPLIT_PATTERN, RegexTokenizer

    OUT.mkdir(parents=True, exist_ok=True)
    for name, text, vocab_size in CASES:
        tokenizer = RegexTokenizer(GPT2_SPLIT_PATTERN)
        tokenizer.train(text, vocab_size)
        special = {"<|endoftext|>": vocab_size}
        tokenizer.register_special_tokens(special)
        merges = sorted(tokenizer.merges.items(), key=lambda item: item[1])
        samples = []
        for sample in SAMPLES + [text]:
            ids = tokenizer.encode(sample, allowed_special="all")
            assert tokenizer.decode(ids) == sample
            samples.append({"text": sample, "ids": ids})
        doc = {
            "source": "minbpe RegexTokenizer(GPT2_SPLIT_PATTERN).train(text, vocab_size); "
            "encode(sample, allowed_special='all') with <|endoftext|> = vocab_size; "
            "made by data/make_bpe_train_fixtures.py",
            "text": text,
            "vocab_size": vocab_size,
            "merges": [list(pair) for pair, _ in merges],
            "samples": samples,
        }
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path.relative_to(OUT.parent.parent.parent)}: {len(merges)} merges")
    # A small corpus of all four texts, for attn tokenizer train's golden output.
    (OUT / "corpus.txt").write_text("".join(text for _, text, _ in CASES), encoding="utf-8")


if __name__ == "__main__":
    main()
