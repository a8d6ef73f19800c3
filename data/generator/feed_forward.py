"""Fixtures for the feed-forward lesson: the notebooks' three FeedForward classes.

Each case saves the module's state_dict (.npz keyed exactly like model.state_dict()), an input
x (B, T, D), every intermediate the lesson saves (hidden, activated or projected, output) and
repr(output). The tests load the weights into attn and must get the same tensors:
`attn feed-forward --weights W --input X --save DIR <args>`. BERT-base sizes use
attention.formula_state_dict (weights computed on both sides, never committed).

Run alone with Debian's interpreter (python3-torch 1.13), from data/:

    cd data && /usr/bin/python3 -m generator.feed_forward
"""
import json
import pathlib

import numpy as np
import torch
from torch import nn

from .attention import formula_state_dict


class FeedForward(nn.Module):
    """Seed 003 (the book): linear_1 -> gelu -> linear_2 -> dropout."""

    def __init__(self, hidden_size, intermediate_size, approximate="none", dropout=0.1):
        super().__init__()
        self.linear_1 = nn.Linear(hidden_size, intermediate_size)
        self.linear_2 = nn.Linear(intermediate_size, hidden_size)
        self.gelu = nn.GELU(approximate=approximate)
        self.dropout = nn.Dropout(dropout)

    def steps(self, x):
        hidden = self.linear_1(x)
        activated = self.gelu(hidden)
        output = self.dropout(self.linear_2(activated))
        return {"hidden": hidden, "activated": activated, "output": output}


class FeedForwardNeuralNetwork(nn.Module):
    """Seed 001, with its bug fixed: nn.Dropout(dropout) (the seed has nn.Dropout(), p = 0.5)."""

    def __init__(self, d_model, dff, dropout=0.1):
        super().__init__()
        self.layer1 = nn.Linear(d_model, dff)
        self.layer2 = nn.Linear(dff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.relu = nn.ReLU()

    def steps(self, x):
        hidden = self.layer1(x)
        activated = self.relu(hidden)
        output = self.layer2(self.dropout(activated))
        return {"hidden": hidden, "activated": activated, "output": output}

    def forward(self, x):
        return self.steps(x)["output"]


class SequentialFeedForward(nn.Module):
    """Seed 000's FeedForward as written: the GELU after the second Linear (the lesson's gelu-last)."""

    def __init__(self, hidden_size, intermediate_size, approximate="none", dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(hidden_size, intermediate_size),
            nn.Linear(intermediate_size, hidden_size),
            nn.GELU(approximate=approximate),
            nn.Dropout(dropout),
        )

    def steps(self, x):
        hidden = self.net[0](x)
        projected = self.net[1](hidden)
        output = self.net[3](self.net[2](projected))
        return {"hidden": hidden, "projected": projected, "output": output}


def build(variant, d, f, gelu):
    approximate = "tanh" if gelu == "tanh" else "none"
    if variant == "book":
        return FeedForward(d, f, approximate)
    if variant == "relu":
        return FeedForwardNeuralNetwork(d, f)
    return SequentialFeedForward(d, f, approximate)


# (case name, torch seed, input shape (B, T, D), F, variant, gelu form)
CASES = [
    ("book_b1_t5_d6", 301, (1, 5, 6), 24, "book", "erf"),
    ("book_b2_t5_d12", 302, (2, 5, 12), 48, "book", "erf"),
    ("book_b1_t7_d10_f30_tanh", 303, (1, 7, 10), 30, "book", "tanh"),
    ("book_b1_t1_d6_f10", 304, (1, 1, 6), 10, "book", "erf"),
    ("book_b1_t1_d1_f1", 305, (1, 1, 1), 1, "book", "erf"),
    ("book_b1_t33_d40_summarised", 306, (1, 33, 40), 160, "book", "erf"),
    ("relu_b2_t5_d12", 311, (2, 5, 12), 48, "relu", None),
    ("relu_b1_t5_d6", 312, (1, 5, 6), 24, "relu", None),
    ("gelu_last_b1_t5_d6", 321, (1, 5, 6), 24, "gelu-last", "erf"),
    ("gelu_last_b2_t5_d12_tanh", 322, (2, 5, 12), 48, "gelu-last", "tanh"),
    ("gelu_last_b1_t1_d1_f4", 323, (1, 1, 1), 4, "gelu-last", "erf"),
    ("book_bert_base_b1_t5", 331, (1, 5, 768), 3072, "book", "erf"),
    ("book_bert_base_b1_t2_tanh", 332, (1, 2, 768), 3072, "book", "tanh"),
]


def generate(out_dir: pathlib.Path) -> dict:
    folder = out_dir / "feed-forward"
    folder.mkdir(parents=True, exist_ok=True)
    cases = []
    for name, seed, shape, f, variant, gelu in CASES:
        torch.manual_seed(seed)
        b, t, d = shape
        model = build(variant, d, f, gelu).eval()
        formula = d >= 256  # too large to commit: both sides compute the weights
        if formula:
            model.load_state_dict(formula_state_dict(model))
        x = torch.randn(b, t, d)
        with torch.no_grad():
            steps = model.steps(x)
        if not formula:
            np.savez(folder / f"{name}_weights.npz", **{k: v.numpy() for k, v in model.state_dict().items()})
        np.save(folder / f"{name}_input.npy", x.numpy())
        for step, value in steps.items():
            np.save(folder / f"{name}_{step}.npy", value.numpy())
        (folder / f"{name}_repr.txt").write_text(repr(steps["output"]))
        args = ["--variant", variant, "--d-ff", str(f)]
        if gelu is not None:
            args += ["--gelu", gelu]
        cases.append({
            "name": name, "seed": seed, "shape": list(shape), "d_ff": f, "variant": variant, "gelu": gelu,
            "args": args, "parameters": sum(p.numel() for p in model.parameters()),
            "state_dict": list(model.state_dict().keys()),
            "weights": None if formula else f"{name}_weights.npz", "weights_formula": formula,
            "input": f"{name}_input.npy", "steps": {step: f"{name}_{step}.npy" for step in steps},
            "repr": f"{name}_repr.txt", "torch": torch.__version__,
        })
    (folder / "cases.json").write_text(json.dumps(cases, indent=2) + "\n")
    return {"feed-forward": len(cases)}


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(generate(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
