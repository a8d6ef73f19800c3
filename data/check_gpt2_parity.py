#!/usr/bin/python3
"""attn against the PyTorch reference of GPT-2 (data/generator/gpt2.py) at gpt2 size:

    /usr/bin/python3 data/check_gpt2_parity.py [--attn build/attn] [--ids 464,3797,...] [--max-new-tokens 8]
                                               [--class GPT2LMHeadModel] [--dtype float32]

Writes a random Hugging Face folder of gpt2's sizes (12 layers x 768, H 12, F 3072, P 1024,
V 50257) into a temporary directory, runs `attn generate --pretrained DIR --ids I,I,...
--max-new-tokens N --format json --save OUT`, compares every hidden state, attention map and the
logits of the prompt's forward at atol 1e-4 (no rtol), and the generated ids and each step's
log-probability of the chosen token with the reference's greedy loop over its key/value cache
(ids equal, log-probabilities at atol 1e-4). Exit 0 when all agree, 1 otherwise, 2 when attn
fails. Not part of ctest (it takes a minute and 2 GB); the fixtures under data/fixtures/gpt2/
hold the small sizes to 1e-5 in ctest.

The folder's vocab.json and merges.txt are GPT-2's real files when data/gpt2/vocab.json and
data/gpt2/merges.txt are there (they ship), else a made-up byte-level vocabulary of the same size
(the 256 byte symbols, 50000 two-symbol merges, <|endoftext|> at 50256): the check runs on ids.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from check_bert_parity import ATOL, RTOL, compare, compare_saved  # noqa: E402  the same comparison at atol 1e-4
from generator.gpt2 import (ARCHITECTURES, END_OF_TEXT, bytes_to_unicode, greedy, make_config,  # noqa: E402
                            outputs, randomize, write_folder)

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
VOCAB_SIZE = 50257
# "The capital of France is" in GPT-2's real vocabulary; any ids below 50257 do.
DEFAULT_IDS = "464,3139,286,4881,318"


def gpt2_vocabulary():
    """(vocab, merges): GPT-2's files from data/gpt2/ when present, else a made-up set of the
    same size and form."""
    vocab_file, merges_file = HERE / "gpt2" / "vocab.json", HERE / "gpt2" / "merges.txt"
    if vocab_file.exists() and merges_file.exists():
        vocab = json.loads(vocab_file.read_text(encoding="utf-8"))
        lines = merges_file.read_text(encoding="utf-8").splitlines()[1:]
        return vocab, [tuple(line.split(" ")) for line in lines if line]
    symbols = list(bytes_to_unicode().values())
    merges = [(a, b) for a in symbols for b in symbols][:VOCAB_SIZE - 257]
    tokens = symbols + [a + b for a, b in merges] + [END_OF_TEXT]
    return {token: i for i, token in enumerate(tokens)}, merges


def generated(report):
    """(ids, log-probabilities) of attn generate's JSON: its steps "generated_ids" and "log_probs"."""
    steps = {step["name"]: step["values"] for step in report["steps"]}
    return steps["generated_ids"], steps["log_probs"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attn", default=str(HERE.parent / "build" / "attn"))
    parser.add_argument("--ids", default=DEFAULT_IDS)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--class", dest="architecture", choices=list(ARCHITECTURES), default="GPT2LMHeadModel")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32")
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()
    torch.set_num_threads(2)
    vocab, merges = gpt2_vocabulary()
    end = vocab[END_OF_TEXT]
    config = make_config(768, 12, 12, len(vocab), 1024, bos_token_id=end, eos_token_id=end)
    # Tables of std 0.1, as a trained GPT-2's are, keep the logits within a few units.
    model = randomize(ARCHITECTURES["GPT2LMHeadModel"](config), args.seed, embedding_scale=0.1)
    saved = model if args.architecture == "GPT2LMHeadModel" else model.transformer
    dtype = DTYPES[args.dtype]
    ids = torch.tensor([[int(i) for i in args.ids.split(",")]], dtype=torch.int64)  # (1,T)
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = pathlib.Path(tmp) / "gpt2-random", pathlib.Path(tmp) / "out"
        write_folder(folder, saved, vocab, merges, dtype)
        if dtype != torch.float32:  # attn computes in float32 on the rounded weights
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p.to(dtype).to(torch.float32))
        command = [args.attn, "generate", "--pretrained", str(folder), "--ids", args.ids, "--max-new-tokens",
                   str(args.max_new_tokens), "--format", "json", "--save", str(out)]
        shown = {str(folder): "DIR", str(out): "OUT"}
        print("$", " ".join(shown.get(word, word) for word in command))
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            print(f"attn exited with {run.returncode}: {run.stderr.strip()}")
            return 2
        print(f"input_ids {ids.tolist()}")
        ok = compare("input_ids", np.load(out / "input_ids.npy"), ids.numpy())
        expected = outputs(model if args.architecture == "GPT2LMHeadModel" else model.transformer, ids)
        ok = compare_saved(out, expected) and ok
    if args.architecture == "GPT2LMHeadModel":
        new_ids, log_probs, gaps = greedy(model, ids, args.max_new_tokens)
        got_ids, got_log_probs = generated(json.loads(run.stdout))
        same = list(got_ids) == new_ids[0].tolist()
        print(f"generated ids        attn {list(got_ids)}\n"
              f"                     torch {new_ids[0].tolist()}  {'equal' if same else 'DIFFER'}"
              f"  (smallest gap between the two best logits {float(gaps.min()):.3f})")
        ok = same and ok
        if same:
            ok = compare("log_probs", np.asarray(got_log_probs, dtype=np.float32), log_probs[0].numpy()) and ok
    print(f"torch {torch.__version__}, atol {ATOL:g}, rtol {RTOL:g}: {'all within' if ok else 'some differ'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
