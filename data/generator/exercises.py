"""Fixtures for the course exercises: data/fixtures/exercises/inputs/<lesson>/ and
data/fixtures/exercises/expected/<lesson>/.

Each lesson's cases come from data/generator/exercise_<lesson>.py, a module with LESSON (the
lesson's name) and generate(out) -> list of written file names, where out.inputs is the folder of
what the tests give the student's code (the grader lets that code read it) and out.expected the
folder of what PyTorch computed (which only the grader reads: a file there is never an input). Inputs are drawn by torch at
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


class Out:
    def __init__(self, fixtures, lesson):
        self.inputs = fixtures / "exercises" / "inputs" / lesson
        self.expected = fixtures / "exercises" / "expected" / lesson


def generate(fixtures, only=None):
    written = {}
    for module in modules():
        if only and module.LESSON != only:
            continue
        out = Out(fixtures, module.LESSON)
        for folder in (out.inputs, out.expected, fixtures / "exercises" / module.LESSON):
            for old in folder.glob("*.npy"):
                old.unlink()
        names = module.generate(out)
        clash = {n for n in names if (out.inputs / n).exists() and (out.expected / n).exists()}
        if clash:
            raise SystemExit(f"{module.LESSON}: both an input and an expected value: {sorted(clash)}")
        written[module.LESSON] = {"inputs": sorted(n.name for n in out.inputs.glob("*.npy")),
                                  "expected": sorted(n.name for n in out.expected.glob("*.npy"))}
    return written


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    torch.set_num_threads(1)
    print(generate(HERE.parent / "fixtures", sys.argv[1] if len(sys.argv) > 1 else None))
