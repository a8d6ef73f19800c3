"""Lesson 02's exercise: entropies by torch.special.entr, and the population values of the softmax
peak with and without the 1/sqrt(D), estimated by torch over many rows."""
import math

import torch

from generator.exercises import save

LESSON = "scaling"


def generate(out):
    files = []
    # Softmax rows (5,7) with some -inf scores, so that some weights are exactly 0; row 4 is one-hot.
    torch.manual_seed(31)
    scores = torch.randn(5, 7) * 2.0
    scores[1, 5:] = float("-inf")
    scores[3, 0] = float("-inf")
    scores[4, :] = float("-inf")
    scores[4, 2] = 0.0
    weights = torch.softmax(scores, dim=-1)
    files += [save(out.inputs, "entropy_weights", weights),
              save(out.expected, "entropy_expected", torch.special.entr(weights).sum(-1))]
    # Per (D, keys): row 0 the means over `population` rows of [largest weight, entropy] unscaled,
    # then scaled; row 1 their standard deviations over rows, from which the tests set tolerances.
    for seed, (d_model, keys, population) in enumerate([(64, 8, 50000), (5, 13, 50000)], start=32):
        torch.manual_seed(seed)
        q, k = torch.randn(population, 1, d_model), torch.randn(population, keys, d_model)
        dots = (q * k).sum(-1)  # (population, keys) q·k
        stats = []
        for s in (dots, dots / math.sqrt(d_model)):
            w = torch.softmax(s, dim=-1)
            stats += [w.max(dim=-1).values, torch.special.entr(w).sum(-1)]
        table = torch.stack([torch.stack([x.mean() for x in stats]), torch.stack([x.std() for x in stats])])
        files.append(save(out.expected, f"peak_d{d_model}_k{keys}", table))
    return files
