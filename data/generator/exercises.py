"""Fixtures for the course exercises: data/fixtures/exercises/<lesson>/.

Each lesson's cases come from data/generator/exercise_<lesson>.py, a module with LESSON (the
lesson's name) and generate(out_dir) -> list of written file names. Inputs are drawn by torch at
fixed seeds and outputs computed by PyTorch's own functions, never by the notebooks' buggy code.

One lesson alone:  /usr/bin/python3 data/generator/exercises.py softmax
"""
import importlib
import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent


def modules():
    for path in sorted(HERE.glob("exercise_*.py")):
        yield importlib.import_module(f"generator.{path.stem}")


def save(out_dir, name, tensor):
    """Writes tensor as <out_dir>/<name>.npy (float32, C order) and returns the file name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    array = tensor.detach().numpy() if isinstance(tensor, torch.Tensor) else np.asarray(tensor)
    np.save(out_dir / f"{name}.npy", np.ascontiguousarray(array.astype(np.float32)))
    return f"{name}.npy"


def generate(fixtures, only=None):
    written = {}
    for module in modules():
        if only and module.LESSON != only:
            continue
        out_dir = fixtures / "exercises" / module.LESSON
        for old in out_dir.glob("*.npy"):
            old.unlink()
        written[module.LESSON] = sorted(module.generate(out_dir))
    return written


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    torch.set_num_threads(1)
    print(generate(HERE.parent / "fixtures", sys.argv[1] if len(sys.argv) > 1 else None))
