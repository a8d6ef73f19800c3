"""Lesson 00, tokens: the lesson vocabulary, a reference BERT tokenizer, and nn.Embedding fixtures.

Three things, all deterministic:

1. `data/vocab/lesson-vocab.txt`, the small vocabulary `attn tokens` uses by default, written from
   the word lists below (Hugging Face's vocab.txt format: one token per line, id = line number).
   core/CMakeLists.txt compiles the file into libattn (core/io/shipped.hpp).
2. A port of Hugging Face's slow `BertTokenizer(do_lower_case=True)`
   (transformers/models/bert/tokenization_bert.py: BasicTokenizer + WordpieceTokenizer, and the
   special-token split and lower-casing of PreTrainedTokenizer.tokenize), on Python's
   unicodedata. It writes `data/fixtures/tokens/tokenizer_cases.json`: hard strings with every
   stage, the tokens and the ids, for the lesson vocabulary and for bert-base-uncased's
   vocab.txt (`data/vocab/bert-base-uncased-vocab.txt`).
3. nn.Embedding fixtures made by torch: the table (.npz keyed like state_dict(): `weight`), the
   ids, the output of `token_emb(input_ids)` (times sqrt(D) for seed 001's InputEmbedding) and
   its repr, listed in `data/fixtures/tokens/cases.json`.

Run with Debian's interpreter: `/usr/bin/python3 data/generator/tokens.py`.
"""
import json
import math
import pathlib
import re
import unicodedata

import numpy as np
import torch
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parents[2]
LESSON_VOCAB = ROOT / "data" / "vocab" / "lesson-vocab.txt"
BERT_VOCAB = ROOT / "data" / "vocab" / "bert-base-uncased-vocab.txt"

# ---------------------------------------------------------------------------------------------
# The lesson vocabulary.

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Every ASCII punctuation mark, digit and letter as a word, and digits and letters again as
# continuations ("##e"): then WordPiece can spell any lower-case ASCII word, as in BERT's vocab,
# and [UNK] is left for characters the vocabulary lacks.
PUNCTUATION = [chr(c) for c in range(33, 127) if not chr(c).isalnum()]
CHARACTERS = [str(d) for d in range(10)] + [chr(c) for c in range(ord("a"), ord("z") + 1)]

# The seeds' sentences first ("time flies like an arrow", seed 003's "fruit flies like a
# banana"), then common English words, roughly by frequency, then the course's own words.
WORDS = """
time flies like an arrow fruit a banana
the of and to in is was he for it with as his on be at by i this had not are but from or have
they which one you were her all she there would their we him been has when who will more no if
out so said what up its about into than them can only other new some could these two may then do
first any my now such our over man me even most made after also did many before must through back
years where much your way well down should because each just those people how too little state
good very make world still own see men work long get here between both life being under never day
same another know while last might us great old year off come since against go came right used
take three
four five six seven eight nine ten hundred thousand part place case point group number problem fact
hand eye face night thing things question answer name story book page letter line end side kind
head mind body friend family child children woman women country government company system program
game music food money business power war history art idea reason example
is are be have do say get make go know take see come think look want give use find tell ask feel
try leave call keep let begin seem help show hear play run move live believe bring happen write
read sit stand lose pay meet include continue set change lead understand watch follow stop create
speak allow add spend grow open walk win offer remember love consider appear buy wait serve die
send expect build stay fall cut reach kill remain
high different large next early young important few public bad able best better sure free true
full special easy clear recent certain personal open red hard late short
house home school city word words sentence text language model models vector vectors number numbers
head heads layer layers query key value values score scores weight weights matrix table row rows
column columns position positions attention transformer transformers encoder decoder token tokens
embedding embeddings learn learning learned train training neural network data input output
sequence softmax dot product sum mean scale sqrt paris london hello world
cat dog sat mat bird tree sun moon water fire red blue green big small happy sad fast slow
""".split()

# Subword pieces: a word-start piece or a "##" continuation. "tokenizer" becomes token ##izer,
# "unaffable" un ##aff ##able (the example in Hugging Face's WordpieceTokenizer docstring).
PIECES = """
un re pre dis over
##s ##es ##ed ##ing ##er ##ers ##est ##ly ##ion ##tion ##ness ##ment ##able ##ful ##less ##ize
##izer ##ization ##ist ##ism ##al ##ous ##ive ##ity ##y ##en ##aff ##piece ##bed ##ding
""".split()

# A few CJK characters: each is a word of its own after basic tokenization.
CJK = ["日", "本", "中", "文"]


def lesson_vocabulary():
    tokens = SPECIAL + PUNCTUATION + CHARACTERS + ["##" + c for c in CHARACTERS] + CJK
    for word in WORDS + PIECES:
        if word not in tokens:
            tokens.append(word)
    assert len(tokens) == len(set(tokens))
    return tokens


def write_lesson_vocabulary():
    text = "".join(t + "\n" for t in lesson_vocabulary())
    LESSON_VOCAB.parent.mkdir(parents=True, exist_ok=True)
    LESSON_VOCAB.write_text(text, encoding="utf-8")
    assert ")attn_data\"" not in text  # the delimiter core/CMakeLists.txt compiles it in with


# ---------------------------------------------------------------------------------------------
# Hugging Face's BertTokenizer (slow, do_lower_case=True), ported line by line.

def load_vocab(path):
    vocab = {}
    with open(path, "r", encoding="utf-8") as reader:  # universal newlines, as HF reads it
        tokens = reader.readlines()
    for index, token in enumerate(tokens):
        vocab[token.rstrip("\n")] = index
    return vocab


def whitespace_tokenize(text):
    text = text.strip()
    if not text:
        return []
    return text.split()


def _is_whitespace(char):
    if char == " " or char == "\t" or char == "\n" or char == "\r":
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    if char == "\t" or char == "\n" or char == "\r":
        return False
    return unicodedata.category(char).startswith("C")


def _is_punctuation(char):
    cp = ord(char)
    if (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126):
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    return ((0x4E00 <= cp <= 0x9FFF) or (0x3400 <= cp <= 0x4DBF) or (0x20000 <= cp <= 0x2A6DF)
            or (0x2A700 <= cp <= 0x2B73F) or (0x2B740 <= cp <= 0x2B81F) or (0x2B820 <= cp <= 0x2CEAF)
            or (0xF900 <= cp <= 0xFAFF) or (0x2F800 <= cp <= 0x2FA1F))


def clean_text(text):
    out = []
    for char in text:
        cp = ord(char)
        if cp == 0 or cp == 0xFFFD or _is_control(char):
            continue
        out.append(" " if _is_whitespace(char) else char)
    return "".join(out)


def tokenize_chinese_chars(text):
    return "".join(f" {c} " if _is_chinese_char(ord(c)) else c for c in text)


def strip_accents(text):
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def split_on_punc(text, never_split):
    if text in never_split:
        return [text]
    output = []
    start_new_word = True
    for char in text:
        if _is_punctuation(char):
            output.append([char])
            start_new_word = True
        else:
            if start_new_word:
                output.append([])
            start_new_word = False
            output[-1].append(char)
    return ["".join(x) for x in output]


def basic_tokenize(text, never_split, lower_case=True, strip_accents_option=None):
    """BasicTokenizer.tokenize, keeping every stage. With lower_case the text arrives lower-cased
    already (see split_special_tokens), so BasicTokenizer's own `token.lower()` changes nothing.
    Accents are stripped when lower-casing unless strip_accents is False, and without
    lower-casing only when strip_accents is True."""
    stages = {}
    text = clean_text(text)
    stages["cleaned"] = text
    text = tokenize_chinese_chars(text)
    stages["spaced"] = text
    words = whitespace_tokenize(text)
    stages["words"] = words
    lowered = [w if w in never_split or not lower_case else w.lower() for w in words]
    assert lowered == words
    strip = strip_accents_option is not False if lower_case else strip_accents_option is True
    stripped = [w if w in never_split or not strip else strip_accents(w) for w in lowered]
    stages["stripped"] = stripped
    split = []
    for w in stripped:
        split.extend(split_on_punc(w, never_split))
    stages["split"] = whitespace_tokenize(" ".join(split))
    return stages


def wordpiece(token, vocab, unk="[UNK]", max_chars=100):
    chars = list(token)
    if len(chars) > max_chars:
        return [unk]
    start, pieces = 0, []
    while start < len(chars):
        end, found = len(chars), None
        while start < end:
            piece = "".join(chars[start:end])
            if start > 0:
                piece = "##" + piece
            if piece in vocab:
                found = piece
                break
            end -= 1
        if found is None:
            return [unk]
        pieces.append(found)
        start = end
    return pieces


def split_special_tokens(text, lower_case=True):
    """PreTrainedTokenizer.tokenize: the text is lower-cased one character at a time (`re.sub`
    with `(.+?)`: no final-sigma rule), except the special tokens, which are then cut out whole.
    Returns the lower-cased text and its parts, (text, is_special)."""
    escaped = [re.escape(t) for t in SPECIAL]
    if lower_case:
            text = re.sub(r"(" + r"|".join(escaped) + r")|" + r"(.+?)",
                      lambda m: m.groups()[0] or m.groups()[1].lower(),
                      text)
    parts = re.split(r"(" + r"|".join(escaped) + r")", text)
    return text, [(p, p in SPECIAL) for p in parts if p]


def encode(text, vocab, add_special_tokens=False, lower_case=True, strip_accents_option=None):
    """tokenizer(text, add_special_tokens=...) of BertTokenizer(do_lower_case=lower_case,
    strip_accents=strip_accents_option): the stages, the words, the tokens and the ids."""
    lowered, parts = split_special_tokens(text, lower_case)
    stages = {"lowered": lowered, "cleaned": [], "spaced": [], "words": [], "stripped": [], "split": []}
    words, tokens, word_of_token = [], [], []
    for part, special in parts:
        if special:
            s = {"cleaned": part, "spaced": part, "words": [part], "stripped": [part], "split": [part]}
        else:
            s = basic_tokenize(part, set(SPECIAL), lower_case, strip_accents_option)
        for k in ["cleaned", "spaced"]:
            stages[k].append(s[k])
        for k in ["words", "stripped", "split"]:
            stages[k].extend(s[k])
        for w in s["split"]:
            words.append(w)
            for p in [w] if special else wordpiece(w, vocab):
                tokens.append(p)
                word_of_token.append(len(words) - 1)
    stages["cleaned"] = "".join(stages["cleaned"])
    stages["spaced"] = "".join(stages["spaced"])
    if add_special_tokens:
        tokens = ["[CLS]"] + tokens + ["[SEP]"]
        word_of_token = [-1] + word_of_token + [-1]
    unk = vocab["[UNK]"]
    ids = [vocab.get(t, unk) for t in tokens]
    return {"stages": stages, "words": words, "tokens": tokens, "ids": ids, "word_of_token": word_of_token}


# ---------------------------------------------------------------------------------------------
# Fixtures.

# Hard strings: case, accents (NFD), CJK, punctuation (ASCII symbols and Unicode P*), symbols that
# are not punctuation, control and format characters, every kind of space, special tokens in the
# text, Hangul (NFD splits syllables into jamo), the 100-character limit.
TEXTS = [
    "time flies like an arrow",
    "fruit flies like a banana",
    "Time FLIES like an Arrow!",
    "Héllo, wörld! Ça va? naïve café résumé",
    "unaffable tokenizer embeddings wordpiece",
    "日本語のテキスト 中文 東京",
    "안녕하세요 세계",
    "a\tb\nc\u0000d\ufffde\u200bf\u00adg\x7fh",
    "line\u2028separator\u2029paragraph\u00a0nbsp\u3000ideographic\u2003em",
    "«quoted» — dash… ¿qué? ¡sí! “curly” ‘single’",
    "$5^2 `code` a_b c|d ~e",
    "€100 ± 5°C © ™ ½",
    "I ❤️ NY 🚀 e\u0301 \u0301 x\u0308y",
    "İstanbul ΟΔΥΣΣΕΥΣ Straße ﬁne ＡＢＣ ǅ",
    "don't U.S.A. 3.14 e-mail",
    "time flies like a [MASK]. [mask] a[SEP]b [CLS]",
    "private\ue000use unassigned\u0378char",
    "a" * 100 + " " + "b" * 101,
    "",
    " \t\n ",
]


CASED_TEXTS = ["Time FLIES like an Arrow!", "Héllo, wörld! Ça va? naïve Café e\u0301 [MASK]"]
CASED_OPTIONS = [(False, None), (False, True), (True, False)]


def tokenizer_cases():
    vocabs = {"lesson": load_vocab(LESSON_VOCAB)}
    if BERT_VOCAB.exists():
        vocabs["bert-base-uncased"] = load_vocab(BERT_VOCAB)
    cases = []
    for vocab_name, vocab in vocabs.items():
        for text in TEXTS:
            for special in (False, True):
                if special and text not in TEXTS[:2]:
                    continue
                e = encode(text, vocab, special)
                cases.append({"vocab": vocab_name, "text": text, "add_special_tokens": special, **e})
    # tokenizer_config.json's do_lower_case and strip_accents: cased checkpoints and their kin.
    vocab_name = "bert-base-uncased" if "bert-base-uncased" in vocabs else "lesson"
    for text in CASED_TEXTS:
        for lower_case, strip in CASED_OPTIONS:
            e = encode(text, vocabs[vocab_name], True, lower_case, strip)
            cases.append({"vocab": vocab_name, "text": text, "add_special_tokens": True,
                          "options": {"do_lower_case": lower_case, "strip_accents": strip}, **e})
    return cases


# (name, text, vocab, d_model, scale_by_sqrt_d, add_special_tokens, torch seed)
EMBEDDING_CASES = [
    ("default_d6", "time flies like an arrow", "lesson", 6, False, False, 1),
    ("special_tokens_d12", "Unaffable tokenizers, time flies!", "lesson", 12, False, True, 2),
    ("scaled_d8", "fruit flies like a banana", "lesson", 8, True, False, 3),
    ("one_token_d5", "hello", "lesson", 5, False, False, 4),
    ("summarised_d40", "the cat sat on the mat and the dog sat on the log", "lesson", 40, True, True, 5),
]


def embedding_cases(out):
    lesson_vocab = load_vocab(LESSON_VOCAB)
    cases = []
    for name, text, vocab_name, d, scaled, special, seed in EMBEDDING_CASES:
        e = encode(text, lesson_vocab, special)
        torch.manual_seed(seed)
        token_emb = nn.Embedding(len(lesson_vocab), d)  # N(0, 1), PyTorch's default
        ids = torch.tensor([e["ids"]], dtype=torch.int64)  # (1, T)
        with torch.no_grad():
            y = token_emb(ids)  # (1, T, D)
            if scaled:
                y = y * math.sqrt(d)  # seed 001's InputEmbedding
        np.savez(out / f"{name}_weights.npz", **{k: v.numpy() for k, v in token_emb.state_dict().items()})
        np.save(out / f"{name}_ids.npy", ids.numpy())
        np.save(out / f"{name}_output.npy", y.numpy())
        (out / f"{name}_repr.txt").write_text(repr(y))
        (out / f"{name}_ids_repr.txt").write_text(repr(ids))
        args = ["--text", text]
        if special:
            args.append("--add-special-tokens")
        if scaled:
            args.append("--scale-by-sqrt-d")
        cases.append({"name": name, "text": text, "vocab": vocab_name, "d_model": d, "scale_by_sqrt_d": scaled,
                      "add_special_tokens": special, "seed": seed, "tokens": e["tokens"], "ids": e["ids"],
                      "args": args, "parameters": sum(p.numel() for p in token_emb.parameters()),
                      "weights": f"{name}_weights.npz", "input_ids": f"{name}_ids.npy",
                      "output": f"{name}_output.npy", "repr": f"{name}_repr.txt", "ids_repr": f"{name}_ids_repr.txt"})
    return cases


def formula_table(v, d):
    """BERT-base's table is too large to commit: element i of weight (V, D) is
    0.02 * (((7919 i) mod 2001) / 1000 - 1), as data/generator/attention.py's formula_state_dict
    with j = 0; attn computes the same numbers."""
    i = np.arange(v * d, dtype=np.int64)
    return (0.02 * (((i * 7919) % 2001) / 1000.0 - 1.0)).astype(np.float32).reshape(v, d)


def bert_base_case(out):
    vocab = load_vocab(BERT_VOCAB)
    e = encode("time flies like an arrow", vocab)
    token_emb = nn.Embedding(len(vocab), 768)
    with torch.no_grad():
        token_emb.weight.copy_(torch.from_numpy(formula_table(len(vocab), 768)))
        y = token_emb(torch.tensor([e["ids"]]))
    np.save(out / "bert_base_formula_output.npy", y.numpy())
    return {"name": "bert_base_formula", "text": "time flies like an arrow", "ids": e["ids"],
            "shape": [len(vocab), 768], "parameters": sum(p.numel() for p in token_emb.parameters()),
            "output": "bert_base_formula_output.npy"}


def generate(out_dir: pathlib.Path) -> dict:
    write_lesson_vocabulary()
    out = out_dir / "tokens"
    out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer_cases()
    (out / "tokenizer_cases.json").write_text(json.dumps(tok, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    emb = embedding_cases(out)
    (out / "cases.json").write_text(json.dumps(emb, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    summary = {"vocab_size": len(lesson_vocabulary()), "tokenizer_cases": len(tok), "embedding_cases": len(emb)}
    if BERT_VOCAB.exists():
        (out / "bert_base.json").write_text(json.dumps(bert_base_case(out), indent=2) + "\n")
    return summary


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(generate(ROOT / "data" / "fixtures"))
