"""Lesson 10's exercise: softmax's and LayerNorm's backward, from torch autograd."""
import torch

from generator.exercises import save

LESSON = "backward"


def generate(out):
    files = []
    # Softmax over the last axis: weights p = softmax(scores); given dL/dp, autograd's dL/dscores.
    # Odd sizes; one case with -inf scores (masked keys, p = 0: they get no gradient).
    for case, seed, shape, masked in [("b2_t3_s5", 1, (2, 3, 5), False), ("b1_t4_s4", 2, (1, 4, 4), True),
                                      ("b3_t1_s7", 3, (3, 1, 7), False)]:
        torch.manual_seed(seed)
        scores = torch.randn(*shape) * 2.0
        if masked:
            scores = scores + torch.triu(torch.full(shape[1:], float("-inf")), diagonal=1)
        scores.requires_grad_(True)
        weights = torch.softmax(scores, dim=-1)
        d_weights = torch.randn(*shape)
        weights.backward(d_weights)
        files += [save(out.inputs, f"softmax_{case}_weights", weights),
                  save(out.inputs, f"softmax_{case}_d_weights", d_weights),
                  save(out.expected, f"softmax_{case}_d_scores", scores.grad)]
    # nn.LayerNorm(D) with a random weight and bias (so that dL/dx depends on the weight).
    for case, seed, shape, eps in [("b2_t3_d8", 4, (2, 3, 8), 1e-5), ("b1_t5_d12", 5, (1, 5, 12), 1e-5),
                                   ("b2_t2_d3_eps", 6, (2, 2, 3), 1e-2)]:
        torch.manual_seed(seed)
        norm = torch.nn.LayerNorm(shape[-1], eps=eps)
        with torch.no_grad():
            norm.weight.copy_(1.0 + 0.5 * torch.randn(shape[-1]))
            norm.bias.copy_(0.5 * torch.randn(shape[-1]))
        x = (torch.randn(*shape) * 3.0 + 1.0).requires_grad_(True)
        y = norm(x)
        d_output = torch.randn(*shape)
        y.backward(d_output)
        files += [save(out.inputs, f"layer_norm_{case}_x", x), save(out.inputs, f"layer_norm_{case}_weight", norm.weight),
                  save(out.inputs, f"layer_norm_{case}_d_output", d_output),
                  save(out.expected, f"layer_norm_{case}_d_x", x.grad),
                  save(out.expected, f"layer_norm_{case}_d_weight", norm.weight.grad),
                  save(out.expected, f"layer_norm_{case}_d_bias", norm.bias.grad)]
    return files
