#!/usr/bin/python3
"""Checks attn against PyTorch at many random seeds and sizes (needs python3-torch; not a ctest).

Bit-identity is a claim about one machine: attn and torch on the same CPU and OpenBLAS kernel.
This script is how to check it on any machine with torch; it prints the CPU and the kernel
setting it ran under. The tests hold attn to the committed fixtures within a tolerance instead.

For each run: `attn <lesson> --seed S --batch B --seq T [--d-model D] --save DIR`, then PyTorch
recomputes the output from DIR/input.npy. The run passes when the saved output equals PyTorch's
within atol 1e-5 + rtol 1e-4 and stdout contains repr(torch.from_numpy(output)) verbatim.

    /usr/bin/python3 data/check_parity.py [--runs 200] [--attn build/attn]
"""
import argparse
import os
import pathlib
import random
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generator.lessons import dot_product, scaling, softmax  # noqa: E402

REFERENCE = {"dot-product": dot_product, "scaling": scaling, "softmax": softmax}


def one_run(attn, lesson, rng, scratch):
    seed, batch, seq, width = rng.randrange(2**32), rng.randint(1, 4), rng.randint(1, 40), rng.randint(1, 64)
    args = [attn, lesson, "--seed", str(seed), "--batch", str(batch), "--seq", str(seq)]
    if lesson != "softmax":
        args += ["--d-model", str(width)]
    out_dir = pathlib.Path(scratch) / f"{lesson}-{seed}"
    result = subprocess.run(args + ["--save", str(out_dir)], capture_output=True, text=True)
    if result.returncode != 0:
        return False, 0.0, f"exit {result.returncode}: {result.stderr.strip()}"
    x = torch.from_numpy(np.load(out_dir / "input.npy"))
    expected = REFERENCE[lesson](x)
    got = torch.from_numpy(np.load(out_dir / "output.npy"))
    diff = (got - expected).abs().max().item()
    close = torch.allclose(got, expected, atol=1e-5, rtol=1e-4)
    printed = repr(got) + "\n" in result.stdout
    return close and printed, diff, " ".join(args[1:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200, help="runs per lesson")
    parser.add_argument("--attn", default=str(pathlib.Path(__file__).resolve().parents[1] / "build" / "attn"))
    options = parser.parse_args()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               "unknown CPU")
    print(f"{cpu}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}, torch {torch.__version__}")
    rng = random.Random(20261122)
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        for lesson in REFERENCE:
            worst, exact = 0.0, 0
            for _ in range(options.runs):
                ok, diff, what = one_run(options.attn, lesson, rng, scratch)
                worst = max(worst, diff)
                exact += diff == 0.0
                if not ok:
                    failures += 1
                    print(f"FAIL {what} (max |diff| {diff:.3g})")
            print(f"{lesson}: {options.runs} runs, max |attn - torch| = {worst:.3g}, bit-identical in {exact}")
    print(f"{3 * options.runs - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
