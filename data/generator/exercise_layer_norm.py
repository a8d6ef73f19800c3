"""Lesson 07's exercise: nn.LayerNorm's steps (mean, biased variance, normalised, output)."""
import torch
import torch.nn.functional as F

from generator.exercises import save

LESSON = "layer-norm"


def case(out, name, x, weight, bias, eps):
    """x (B,T,D) through nn.LayerNorm(D, eps) with the given weight and bias, every step saved."""
    width = x.shape[-1]
    norm = torch.nn.LayerNorm(width, eps=eps)
    with torch.no_grad():
        norm.weight.copy_(weight)
        norm.bias.copy_(bias)
        steps = {"x": x, "weight": weight, "bias": bias, "eps": torch.tensor([eps]),
                 "mean": x.mean(-1, keepdim=True), "variance": x.var(-1, unbiased=False, keepdim=True),
                 "normalised": F.layer_norm(x, (width,), eps=eps), "output": norm(x)}
    inputs = ("x", "weight", "bias", "eps")
    return [save(out.inputs if step in inputs else out.expected, f"{name}_{step}", value)
            for step, value in steps.items()]


def generate(out):
    files = []
    # At initialisation (weight 1, bias 0), then a learned-looking weight and bias per feature.
    torch.manual_seed(1)
    files += case(out, "b2_t5_d8", torch.randn(2, 5, 8), torch.ones(8), torch.zeros(8), 1e-5)
    torch.manual_seed(2)
    x, weight, bias = torch.randn(3, 4, 6) * 2 + 0.5, torch.randn(6) + 1, torch.randn(6)
    files += case(out, "affine_b3_t4_d6", x, weight, bias, 1e-5)
    # Token (1, 2) of that x made constant: normalised to zeros, so its output is the bias; the
    # other tokens' outputs are unchanged.
    with torch.no_grad():
        constant = torch.nn.functional.layer_norm(x, (6,), weight, bias, eps=1e-5)
    constant[1, 2, :] = bias
    files.append(save(out.expected, "constant_b3_t4_d6_output", constant))
    # Small D and a spread comparable to sqrt(eps): D - 1 instead of D, or eps outside the root,
    # change these results by far more than rounding.
    torch.manual_seed(3)
    offsets = torch.tensor([0.0, 0.05, -0.1, 0.02]).reshape(1, 4, 1)
    files += case(out, "tiny_b1_t4_d3", offsets + 1e-3 * torch.randn(1, 4, 3), torch.ones(3),
                  torch.zeros(3), 1e-5)
    torch.manual_seed(4)
    files += case(out, "tiny_b2_t3_d4", 0.1 * torch.randn(2, 3, 4), torch.randn(4) + 1,
                  torch.randn(4) * 0.1, 1e-2)
    # One token (T = 1), and BERT's eps with tokens far from 0 compared with their spread.
    torch.manual_seed(5)
    files += case(out, "b3_t1_d5", torch.randn(3, 1, 5), torch.randn(5), torch.randn(5), 1e-5)
    torch.manual_seed(6)
    files += case(out, "bert_b2_t3_d96", 3 + 0.05 * torch.randn(2, 3, 96), torch.randn(96) + 1,
                  torch.randn(96), 1e-12)
    return files
