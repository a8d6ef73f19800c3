"""Lesson 17's exercise: the induction score of each head of one causal layer on one sequence
(core/head_patterns.hpp's measurement: the mean, over the queries with an induction target, of the
query's weight on its targets), and one head's zero or mean ablation in the heads' outputs side by
side (B,T,H*hs), as TransformerLens's hook_z ablations compute them.

Induction targets (Olsson et al. 2022): for query t, the key j + 1 after every earlier j < t with
ids[j] == ids[t]. Weights are a causal softmax of random scores, one head given extra score on the
induction targets and one on the previous token, so that a target off by one, or a mean over every
query, moves the planted heads' scores far beyond the tolerance.
"""
import torch

from generator.exercises import save

LESSON = "heads"

# name, seed, ids, heads: the planted induction head and previous-token head (None: not planted)
SEQUENCES = [
    # six distinct tokens, then the six again: TransformerLens's repeated random tokens
    ("repeated", 11, [14, 3, 9, 17, 5, 11, 14, 3, 9, 17, 5, 11], 3, 1, 2),
    # only the last token has occurred before: one scored query of six
    ("one_target", 12, [1, 2, 3, 4, 5, 1], 2, 0, None),
    # a token three and four times, a repeat right after itself (a target on the query itself)
    ("repeats", 13, [7, 2, 7, 7, 4, 2, 9, 7, 4, 2], 4, 2, 0),
]

# name, seed, (B, T, H, hs), the head ablated
ABLATIONS = [
    ("b3_t4_h3_hs2", 21, (3, 4, 3, 2), 1),
    ("b4_t3_h2_hs3", 22, (4, 3, 2, 3), 0),
    ("b2_t5_h4_hs2", 23, (2, 5, 4, 2), 3),
]


def induction_mask(ids):
    """(T,T): 1 at (t, j + 1) for every j < t with ids[j] == ids[t]."""
    t = len(ids)
    mask = torch.zeros(t, t)
    for query in range(t):
        for j in range(query):
            if ids[j] == ids[query]:
                mask[query, j + 1] = 1.0
    return mask


def causal_weights(seed, heads, ids, induction, previous):
    t = len(ids)
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(heads, t, t, generator=generator)
    if induction is not None:
        scores[induction] += 5.0 * induction_mask(ids)
    if previous is not None:
        scores[previous] += 5.0 * torch.diag(torch.ones(t - 1), diagonal=-1)
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)  # (H,T,T)


def induction_score(weights, ids):
    mask = induction_mask(ids)  # (T,T)
    scored = mask.sum(dim=1) > 0  # (T): the queries with a target
    on_target = (weights * mask).sum(dim=-1)  # (H,T)
    return on_target[:, scored].mean(dim=1)  # (H)


def generate(out):
    names = []
    for name, seed, ids, heads, induction, previous in SEQUENCES:
        weights = causal_weights(seed, heads, ids, induction, previous)
        score = induction_score(weights, ids)
        # the mistakes the tests must tell apart: every query averaged, and the copy itself
        # (the duplicate-token pattern) as the target
        everywhere = (weights * induction_mask(ids)).sum(dim=-1).mean(dim=1)
        assert (everywhere - score).abs().max() > 1e-2, name
        names.append(save(out.inputs, f"{name}_ids", torch.tensor(ids, dtype=torch.float32)))
        names.append(save(out.inputs, f"{name}_weights", weights))
        names.append(save(out.expected, f"{name}_induction_score", score))
    for name, seed, (b, t, h, hs), head in ABLATIONS:
        generator = torch.Generator().manual_seed(seed)
        z = torch.randn(b, t, h * hs, generator=generator)  # (B,T,H*hs): hook_z side by side
        head_slice = slice(head * hs, (head + 1) * hs)
        zero = z.clone()
        zero[..., head_slice] = 0.0
        mean = z.clone()
        mean[..., head_slice] = z[..., head_slice].mean(dim=0, keepdim=True)  # over B, per t
        names.append(save(out.inputs, f"ablate_{name}_concatenated", z))
        names.append(save(out.expected, f"ablate_{name}_head{head}_zero", zero))
        names.append(save(out.expected, f"ablate_{name}_head{head}_mean", mean))
    return names
