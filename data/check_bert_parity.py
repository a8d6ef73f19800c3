#!/usr/bin/python3
"""attn against the PyTorch reference of BERT (data/generator/bert.py) at bert-base size:

    /usr/bin/python3 data/check_bert_parity.py [--attn build/attn] [--text T] [--pair T2] [--dtype float32]

Writes a random Hugging Face folder of bert-base-uncased's sizes (12 layers x 768, H 12, F 3072,
P 512, the real vocabulary data/vocab/bert-base-uncased-vocab.txt: V 30522) into a temporary
directory, runs `attn encoder --pretrained DIR --text T [--pair T2] --save OUT`, reruns the ids attn
saved through the reference, and compares every hidden state, attention map and the MLM logits at
atol 1e-4 (no rtol), printing the largest differences. Exit 0 when all are within, 1 otherwise.
Not part of ctest (it takes a minute and 1.5 GB); the fixtures under data/fixtures/bert/ hold
the small sizes to 1e-5 in ctest.

Token types are BERT's: 0 up to and including the first [SEP], 1 after it.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generator.bert import ARCHITECTURES, make_config, outputs, randomize, write_folder  # noqa: E402

ATOL, RTOL = 1e-4, 0.0
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def token_types(ids, sep):
    types = np.zeros_like(ids)
    for row in range(ids.shape[0]):
        seps = np.flatnonzero(ids[row] == sep)
        if seps.size:
            types[row, seps[0] + 1:] = 1
    return types


def compare(name, got, expected):
    if got.shape != expected.shape:
        print(f"{name:20s} shape {got.shape} differs from the reference's {expected.shape}")
        return False
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    ok = bool(np.all(diff <= ATOL + RTOL * np.abs(expected)))
    print(f"{name:20s} {str(tuple(got.shape)):22s} max |diff| {diff.max():.3e}  {'ok' if ok else 'FAIL'}")
    return ok


def compare_saved(out, expected):
    """Each expected array against attn's <name>.npy in `out`; True when all are there and within."""
    ok = True
    for name, array in expected.items():
        path = out / f"{name}.npy"
        if not path.exists():
            print(f"{name:20s} missing from attn's --save")
            ok = False
            continue
        ok = compare(name, np.load(path), array) and ok
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attn", default=str(HERE.parent / "build" / "attn"))
    parser.add_argument("--text", default="the capital of france is [MASK] .")
    parser.add_argument("--pair", default=None)
    parser.add_argument("--class", dest="architecture", choices=list(ARCHITECTURES), default="BertForMaskedLM")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32")
    parser.add_argument("--seed", type=int, default=28)
    args = parser.parse_args()
    torch.set_num_threads(2)
    vocab = (HERE / "vocab" / "bert-base-uncased-vocab.txt").read_text().splitlines()
    config = make_config(768, 12, 3072, 12, len(vocab), 512)
    # Tables of std 0.1 keep the MLM logits in the tens, as a trained BERT's are.
    model = randomize(ARCHITECTURES[args.architecture](config), args.seed, embedding_scale=0.1)
    dtype = DTYPES[args.dtype]
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = pathlib.Path(tmp) / "bert-base-random", pathlib.Path(tmp) / "out"
        write_folder(folder, model, vocab, dtype)
        if dtype != torch.float32:  # attn computes in float32 on the rounded weights
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p.to(dtype).to(torch.float32))
        command = [args.attn, "encoder", "--pretrained", str(folder), "--text", args.text, "--save", str(out)]
        if args.pair is not None:
            command += ["--pair", args.pair]
        shown = {str(folder): "DIR", str(out): "OUT"}
        print("$", " ".join(shown.get(word, repr(word) if " " in word else word) for word in command))
        run = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            print(f"attn exited with {run.returncode}: {run.stderr.strip()}")
            return 2
        ids = np.load(out / "input_ids.npy")
        types = token_types(ids, vocab.index("[SEP]"))
        print(f"input_ids {ids.tolist()}")
        expected = outputs(model, torch.from_numpy(ids), torch.from_numpy(types))
        ok = compare_saved(out, {k: v for k, v in expected.items() if k != "pooler_output"})
    print(f"torch {torch.__version__}, atol {ATOL:g}, rtol {RTOL:g}: {'all within' if ok else 'some differ'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
