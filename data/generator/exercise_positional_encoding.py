"""Lesson 06's exercise: seed 001's sinusoidal table (div_term, angles, pe) and x + pe."""
import math

import torch

from generator.exercises import save

LESSON = "positional-encoding"


def table(positions, width):
    """Seed 001's PositionalEncoding buffer, with the odd-width fix: the extra cosine is dropped."""
    position = torch.arange(0, positions, dtype=torch.float).unsqueeze(1)  # (P,1)
    div_term = torch.exp(torch.arange(0, width, 2).float() * (-math.log(10000.0) / width))  # (F)
    angles = position * div_term  # (P,F)
    pe = torch.zeros(positions, width)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)[:, : width // 2]
    return div_term, angles, pe


def generate(out):
    files = []
    # (P, D): even and odd widths, D = 1 (one sine column), and angles past 2π and past 125
    # (where torch's sin switches argument reduction) so that only real sin and cos pass.
    for positions, width in [(6, 8), (5, 7), (3, 5), (4, 1), (64, 12), (160, 9)]:
        div_term, angles, pe = table(positions, width)
        case = f"p{positions}_d{width}"
        files += [save(out.expected, f"{case}_div_term", div_term), save(out.expected, f"{case}_angles", angles),
                  save(out.expected, f"{case}_pe", pe)]
    # x + pe[:T] for (B,T,D) = (2,5,7), PyTorch's table given, and seed 001's forward at T = 4 from
    # a table of P = 10.
    torch.manual_seed(1)
    x = torch.randn(2, 5, 7)
    files += [save(out.inputs, "b2_t5_d7_x", x), save(out.inputs, "b2_t5_d7_pe", table(5, 7)[2]),
              save(out.expected, "b2_t5_d7_out", x + table(5, 7)[2])]
    torch.manual_seed(2)
    x = torch.randn(3, 4, 6)
    files += [save(out.inputs, "b3_t4_d6_x", x), save(out.expected, "b3_t4_d6_p10_out", x + table(10, 6)[2][:4])]
    return files
