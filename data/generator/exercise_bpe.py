"""Lesson 16's exercise: one training step of a byte-level BPE and encoding a chunk, as minbpe's
RegexTokenizer (Karpathy, github.com/karpathy/minbpe) computes them with GPT-2's split pattern.
minbpe's get_stats, merge, train step and _encode_chunk are written out here (it is not a Debian
package); data/make_bpe_train_fixtures.py holds attn's trainer equal to minbpe itself.

Chunks are written flat as float32 ids with -1 between chunks (ids stay below 2^24: exact).
"""
import regex as re

from generator.exercises import save

LESSON = "bpe"

GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

ENGLISH = ("the cat sat on the mat; the cat ate the hat. That's the cat's hat, not the rat's! "
           "There were three rats at the theatre, and the rats sat there.")
TIES = "ab cd ab cd ba dc ba dc abab cdcd aaa bbbb"
UNICODE = "café naïve café 🙂🙂 🙂 👍🏽 👍🏽 Ελληνικά ελληνικά 日本語 日本 naïveté"


def get_stats(ids, counts):
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids, pair, idx):
    out, i = [], 0
    while i < len(ids):
        if ids[i] == pair[0] and i < len(ids) - 1 and ids[i + 1] == pair[1]:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def chunks_of(text):
    return [list(chunk.encode("utf-8")) for chunk in re.findall(GPT2_SPLIT_PATTERN, text)]


def step(chunks, idx):
    stats = {}
    for ids in chunks:
        get_stats(ids, stats)
    pair = max(stats, key=stats.get)  # the first pair inserted among the largest counts
    return pair, stats[pair], [merge(ids, pair, idx) for ids in chunks]


def train(text, merges):
    chunks, learned = chunks_of(text), []
    for i in range(merges):
        pair, _, chunks = step(chunks, 256 + i)
        learned.append(pair)
    return chunks, learned


def encode_chunk(ids, merges):
    ranks = {pair: i for i, pair in enumerate(merges)}
    while len(ids) >= 2:
        stats = get_stats(ids, {})
        pair = min(stats, key=lambda p: ranks.get(p, float("inf")))
        if pair not in ranks:
            break
        ids = merge(ids, pair, 256 + ranks[pair])
    return ids


def flat(chunks):
    out = []
    for i, ids in enumerate(chunks):
        out += ([-1] if i else []) + list(ids)
    return out


def generate(out):
    names = []
    # merge_step: the chunks after `before` merges, merged once more into 256 + before.
    for name, text, before in [("english_start", ENGLISH, 0), ("english_after_8", ENGLISH, 8),
                               ("ties_after_3", TIES, 3), ("unicode_after_12", UNICODE, 12)]:
        chunks, _ = train(text, before)
        pair, count, merged = step(chunks, 256 + before)
        names.append(save(out.inputs, f"step_{name}_chunks", flat(chunks)))
        names.append(save(out.inputs, f"step_{name}_new_id", [256 + before]))
        names.append(save(out.expected, f"step_{name}_pair", list(pair)))
        names.append(save(out.expected, f"step_{name}_count", [count]))
        names.append(save(out.expected, f"step_{name}_merged", flat(merged)))
    # encode_chunk: merges learned on a text, then every chunk of a sample, one call each.
    for name, text, merges, sample in [
            ("english", ENGLISH, 30, "the rats ate that hat; three cats sat at the theatre"),
            ("unicode", UNICODE, 25, "naïve café 🙂 Ελληνικά 日本語 👍🏽🙂")]:
        _, learned = train(text, merges)
        chunks = chunks_of(sample)
        names.append(save(out.inputs, f"encode_{name}_merges", learned))
        names.append(save(out.inputs, f"encode_{name}_bytes", flat(chunks)))
        names.append(save(out.expected, f"encode_{name}_ids",
                          flat([encode_chunk(ids, learned) for ids in chunks])))
    return names
