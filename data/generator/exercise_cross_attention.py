"""Lesson 12's exercise: seed 001's MultiHeadAttention as cross-attention (T != S) with the
source's padding mask, and the mask itself from the source's ids.

Weights are saved one .npy per parameter, named <weights>.<state_dict key>. The masked scores are
the seed's masked_fill(mask == 0, -1e9), as lesson 12 shows them.
"""
import torch

from generator.exercises import save
from generator.transformer import SEED_FILL, MultiHeadAttention

LESSON = "cross-attention"
PAD = 0


def generate(out):
    files = []
    # The mask from ids: (src != pad), saved as (B,S) (the seed's (B,1,1,S) without its two 1s).
    torch.manual_seed(71)
    ids = torch.randint(1, 9, (3, 6))
    ids[0, 4:] = PAD
    ids[2, 1:] = PAD
    files += [save(out.inputs, "mask_b3_s6_ids", ids.float()),
              save(out.expected, "mask_b3_s6_keep", (ids != PAD).float())]
    # One layer per (D, H); each case's x (B,T,D), memory (B,S,D) and source lengths.
    for weights, seed, (d, h), cases in [
            ("layer_d8_h2", 72, (8, 2), [("b2_t3_s5", (2, 3, 5), [5, 2])]),
            ("layer_d12_h3", 73, (12, 3), [("b1_t4_s7", (1, 4, 7), [7])]),
            ("layer_d6_h1", 74, (6, 1), [("b3_t1_s1", (3, 1, 1), [1, 1, 1]),
                                         ("b2_t5_s4", (2, 5, 4), [1, 3])])]:
        torch.manual_seed(seed)
        layer = MultiHeadAttention(d, h, 0.0, SEED_FILL).eval()
        files += [save(out.inputs, f"{weights}.{key}", value) for key, value in layer.state_dict().items()]
        for case, (b, t, s), lengths in cases:
            x = torch.randn(b, t, d)
            memory = torch.randn(b, s, d)
            keep = torch.zeros(b, s)
            for i, n in enumerate(lengths):
                keep[i, :n] = 1.0
            prefix = f"{weights}_{case}"
            files += [save(out.inputs, f"{prefix}_x", x), save(out.inputs, f"{prefix}_memory", memory),
                      save(out.inputs, f"{prefix}_keep", keep)]
            with torch.no_grad():
                output = layer(x, memory, memory, keep[:, None, None, :])
                steps = dict(layer.steps, weights=layer.attention_weights, output=output)
                heads = layer.attention_weights @ layer.steps["values"]
                steps["concatenated"] = heads.transpose(1, 2).reshape(b, t, d)
                files += [save(out.expected, f"{prefix}_{k}", v) for k, v in steps.items()]
                # the padded memory rows replaced by other numbers: the output must not move
                if min(lengths) < s:
                    other = memory.clone()
                    other[keep == 0] = 5.0 * torch.randn(int((keep == 0).sum()), d)
                    files.append(save(out.inputs, f"{prefix}_memory_repadded", other))
    return files
