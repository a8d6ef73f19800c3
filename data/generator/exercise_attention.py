"""Lesson 04's exercise: scaled dot-product attention, the additive mask, and one AttentionHead."""
import math

import torch
from torch import nn

from generator.exercises import save

LESSON = "attention"

NEG_INF = float("-inf")


def additive_mask(batch, tokens, causal, lengths):
    """(B, T, T): -inf above the diagonal when causal and on keys at or past lengths[b], else 0."""
    hidden = torch.zeros(batch, tokens, tokens, dtype=torch.bool)
    if causal:
        hidden |= torch.triu(torch.ones(tokens, tokens, dtype=torch.bool), diagonal=1)
    for b, length in enumerate(lengths or []):
        hidden[b, :, length:] = True
    return torch.zeros(batch, tokens, tokens).masked_fill(hidden, NEG_INF)


def attention_steps(queries, keys, values, mask):
    """Q, K, V, every step of softmax(Q Kᵀ / sqrt(hs) + mask) V, and the mask if any, by name."""
    scores = torch.bmm(queries, keys.transpose(1, 2))
    scaled = scores / math.sqrt(keys.shape[-1])
    if mask is not None:
        scaled = scaled + mask
    weights = torch.softmax(scaled, dim=-1)
    steps = {"queries": queries, "keys": keys, "values": values, "scores": scores, "scaled_scores": scaled,
             "weights": weights, "output": torch.bmm(weights, values)}
    if mask is not None:
        steps["mask"] = mask
    return steps


def attend(out, case, queries, keys, values, mask, given=True):
    """Saves Q, K, V and every step of softmax(Q Kᵀ / sqrt(hs) + mask) V as <case>_<step>: Q, K, V
    and the mask as inputs when `given` (the test hands them to the student's code), else as
    expected values (a head computed them from x); the steps after them always as expected values."""
    steps = attention_steps(queries, keys, values, mask)
    inputs = ("queries", "keys", "values", "mask") if given else ()
    return [save(out.inputs if name in inputs else out.expected, f"{case}_{name}", tensor)
            for name, tensor in steps.items()]


def generate(out):
    files = []
    # (case, seed, B, T, S, hs, hv): keys and values are separate draws, so `@ keys` or `Q @ Vᵀ` cannot
    # pass; T != S and hv > hs (never smaller, so a swapped tensor is still read inside its bounds).
    for case, seed, b, t, s, hs, hv in [("b2_t4_s5", 1, 2, 4, 5, 6, 6), ("b1_t1_s7_hv5", 2, 1, 1, 7, 3, 5),
                                        ("b3_t5_s5", 3, 3, 5, 5, 4, 4)]:
        torch.manual_seed(seed)
        files += attend(out, case, torch.randn(b, t, hs), torch.randn(b, s, hs), torch.randn(b, s, hv), None)
    torch.manual_seed(4)
    files += attend(out, "causal_b2_t5", torch.randn(2, 5, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4),
                    additive_mask(2, 5, True, None))
    # Padding keys with T = 3 queries and S = 6 keys: -inf on keys 4.. of sequence 0 and 2.. of sequence 1.
    torch.manual_seed(5)
    padding = torch.zeros(2, 3, 6)
    padding[0, :, 4:] = NEG_INF
    padding[1, :, 2:] = NEG_INF
    files += attend(out, "padded_b2_t3_s6", torch.randn(2, 3, 5), torch.randn(2, 6, 5), torch.randn(2, 6, 7),
                    padding)

    # A finite float mask (a bias per query and key, as ALiBi's), added after the scaling: with
    # -inf alone, (Q Kᵀ + mask) / sqrt(hs) would give the same weights.
    torch.manual_seed(8)
    files += attend(out, "float_mask_b2_t3_s4", torch.randn(2, 3, 4), torch.randn(2, 4, 4), torch.randn(2, 4, 5),
                    2 * torch.randn(2, 3, 4))

    # The masks themselves: causal, padding, and both.
    for case, batch, tokens, causal, lengths in [("mask_causal_b2_t5", 2, 5, True, None),
                                                 ("mask_padding_b2_t5", 2, 5, False, [3, 5]),
                                                 ("mask_both_b3_t4", 3, 4, True, [2, 4, 1])]:
        files.append(save(out.expected, case, additive_mask(batch, tokens, causal, lengths)))

    # Seed 000's AttentionHead(embed_dim, head_dim): q, k, v = nn.Linear(D, hs) with biases.
    for case, seed, (b, t, d), hs, causal, lengths in [("head_d7_hs3", 6, (2, 5, 7), 3, False, None),
                                                       ("head_masked_d5_hs2", 7, (2, 6, 5), 2, True, [6, 3])]:
        torch.manual_seed(seed)
        q, k, v = nn.Linear(d, hs), nn.Linear(d, hs), nn.Linear(d, hs)
        x = torch.randn(b, t, d)
        mask = additive_mask(b, t, causal, lengths) if causal or lengths else None
        with torch.no_grad():
            files += attend(out, case, q(x), k(x), v(x), mask, given=False)
        files.append(save(out.inputs, f"{case}_x", x))
        for name, layer in (("q", q), ("k", k), ("v", v)):
            files += [save(out.inputs, f"{case}_{name}_weight", layer.weight),
                      save(out.inputs, f"{case}_{name}_bias", layer.bias)]
        if case == "head_d7_hs3":
            # x's tokens in order 3 0 4 1 2 give the output's rows, and the weights' rows and
            # columns, in that order.
            order = [3, 0, 4, 1, 2]
            with torch.no_grad():
                steps = attention_steps(q(x), k(x), v(x), mask)
            files += [save(out.expected, f"{case}_shuffled_output", steps["output"][:, order, :]),
                      save(out.expected, f"{case}_shuffled_weights", steps["weights"][:, order][:, :, order])]
    return files
