#!/usr/bin/python3
"""Writes every fixture in data/fixtures/ from PyTorch and numpy, with a manifest.

Run from anywhere with Debian's interpreter, which has python3-torch and python3-numpy:

    /usr/bin/python3 data/generate_fixtures.py

The output is deterministic (fixed seeds); commit what it writes. Tests never need torch.
"""
import json
import pathlib
import platform
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generator import (ablation, attention, bert, encoder, exercises, feed_forward, gpt2, gpt_training, gradients,  # noqa: E402
                       layer_norm, lessons, npy_files, positional_encoding, printing, sampling, tokens, training,
                       transformer, weights_files)

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"


def main() -> None:
    torch.set_num_threads(1)
    manifest = {
        "command": "/usr/bin/python3 data/generate_fixtures.py",
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "parts": {
            "print": printing.generate(FIXTURES / "print"),
            "npy": npy_files.generate(FIXTURES / "npy"),
            "weights": weights_files.generate(FIXTURES / "weights"),
            "lessons": lessons.generate(FIXTURES),
            "attention": attention.generate(FIXTURES),
            "tokens": tokens.generate(FIXTURES),
            "positional-encoding": positional_encoding.generate(FIXTURES),
            "layer-norm": layer_norm.generate(FIXTURES),
            "feed-forward": feed_forward.generate(FIXTURES),
            "encoder": encoder.generate(FIXTURES),
            "exercises": exercises.generate(FIXTURES),
            "gradients": gradients.generate(FIXTURES),
            "training": training.generate(FIXTURES),
            "transformer": transformer.generate(FIXTURES),
            "ablation": ablation.generate(FIXTURES),
            "sampling": sampling.generate(FIXTURES),
            "bert": bert.generate(FIXTURES),
            "gpt2": gpt2.generate(FIXTURES),
            "gpt-training": gpt_training.generate(FIXTURES),
        },
    }
    (FIXTURES / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest, indent=2))


if __name__ == "__main__":
    main()
