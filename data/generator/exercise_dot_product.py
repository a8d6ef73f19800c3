"""Lesson 01's exercise: torch.bmm with and without the transpose, and dot-product self-attention."""
import math

import torch

from generator.exercises import save

LESSON = "dot-product"


def attention(x, divisor):
    raw = torch.bmm(x, x.transpose(1, 2)) / divisor
    weights = torch.softmax(raw, dim=-1)
    return raw, weights, torch.bmm(weights, x)


def generate(out):
    files = []
    # (B,T,K) @ (B,N,K)^T and (B,T,K) @ (B,K,N) at odd sizes, T != N != K, so that a swapped index,
    # a missing transpose or an ignored batch entry changes the shape or the numbers.
    for seed, (batch, rows, cols, inner) in enumerate([(2, 3, 4, 5), (3, 6, 2, 7), (1, 1, 1, 3)], start=1):
        torch.manual_seed(seed)
        a, b = torch.randn(batch, rows, inner), torch.randn(batch, cols, inner)
        case = f"transposed_b{batch}_t{rows}_n{cols}_k{inner}"
        files += [save(out.inputs, f"{case}_a", a), save(out.inputs, f"{case}_b", b),
                  save(out.expected, f"{case}_out", torch.bmm(a, b.transpose(1, 2)))]
    for seed, (batch, rows, inner, cols) in enumerate([(2, 3, 4, 5), (3, 1, 7, 2), (1, 5, 1, 3)], start=11):
        torch.manual_seed(seed)
        a, b = torch.randn(batch, rows, inner), torch.randn(batch, inner, cols)
        case = f"matmul_b{batch}_t{rows}_k{inner}_n{cols}"
        files += [save(out.inputs, f"{case}_a", a), save(out.inputs, f"{case}_b", b),
                  save(out.expected, f"{case}_out", torch.bmm(a, b))]
    # Self-attention X Xᵀ / divisor -> softmax -> W X: divisor 1 (this lesson), sqrt(D) (lesson 02),
    # and a divisor below 1 on large inputs, whose raw weights overflow exp() unless softmax is stable.
    for case, seed, shape, scale, divisor in [("b2_t5_d6", 21, (2, 5, 6), 1.0, 1.0),
                                             ("b3_t4_d7", 22, (3, 4, 7), 1.0, 1.0),
                                             ("b1_t6_d3", 23, (1, 6, 3), 1.0, 1.0),
                                             ("b1_t1_d5", 24, (1, 1, 5), 1.0, 1.0),
                                             ("sqrt_b2_t5_d12", 25, (2, 5, 12), 1.0, math.sqrt(12)),
                                             ("large_b2_t4_d9", 26, (2, 4, 9), 4.0, 0.5)]:
        torch.manual_seed(seed)
        x = torch.randn(*shape) * scale
        raw, weights, output = attention(x, divisor)
        files += [save(out.inputs, f"{case}_x", x), save(out.expected, f"{case}_raw_weights", raw),
                  save(out.expected, f"{case}_weights", weights), save(out.expected, f"{case}_output", output)]
        if case == "b3_t4_d7":
            # The tokens of x shuffled to order 2 0 3 1 give the output's rows in that order.
            files.append(save(out.expected, f"shuffled_{case}_output", output[:, [2, 0, 3, 1], :]))
    return files
