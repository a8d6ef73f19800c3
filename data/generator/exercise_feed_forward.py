"""Lesson 08's exercise: nn.Linear, nn.GELU (exact and tanh) and the book's FeedForward block."""
import torch
import torch.nn.functional as F
from torch import nn

from generator.exercises import save

LESSON = "feed-forward"


class FeedForward(nn.Module):  # seed 003 (the book): Linear -> GELU -> Linear -> Dropout
    def __init__(self, d_model, d_ff, approximate="none"):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.gelu = nn.GELU(approximate=approximate)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.linear_2(self.gelu(self.linear_1(x))))


def generate(out):
    files = []
    # F.linear on odd, non-square sizes: in != out so that a transposed weight cannot pass.
    for case, seed, (b, t, i, o), bias in [("b2_t5_i6_o4", 11, (2, 5, 6, 4), True),
                                           ("b3_t1_i5_o9", 12, (3, 1, 5, 9), True),
                                           ("nobias_b1_t3_i7_o5", 13, (1, 3, 7, 5), False)]:
        torch.manual_seed(seed)
        layer = nn.Linear(i, o, bias=bias)
        x = torch.randn(b, t, i)
        files += [save(out.inputs, f"linear_{case}_x", x), save(out.inputs, f"linear_{case}_weight", layer.weight),
                  save(out.expected, f"linear_{case}_out", layer(x))]
        if bias:
            files.append(save(out.inputs, f"linear_{case}_bias", layer.bias))
    # GELU on an even grid from -8 to 8 (7 x 23 = 161 points, 0.1 apart) and on random values.
    torch.manual_seed(14)
    for case, x in [("grid_b7_t23_f1", torch.linspace(-8.0, 8.0, 161).reshape(7, 23, 1)),
                    ("random_b2_t3_f17", torch.randn(2, 3, 17) * 3.0)]:
        files += [save(out.inputs, f"gelu_{case}_x", x), save(out.expected, f"gelu_{case}_none", nn.GELU()(x)),
                  save(out.expected, f"gelu_{case}_tanh", nn.GELU(approximate="tanh")(x))]
    # The whole block, step by step; inputs scaled by 2 so that hidden values reach GELU's bend.
    for case, seed, (b, t, d, f), approximate in [("b2_t5_d6_f24", 21, (2, 5, 6, 24), "none"),
                                                  ("b3_t4_d7_f10", 22, (3, 4, 7, 10), "none"),
                                                  ("b1_t1_d5_f3", 23, (1, 1, 5, 3), "none"),
                                                  ("tanh_b2_t3_d8_f20", 24, (2, 3, 8, 20), "tanh")]:
        torch.manual_seed(seed)
        block = FeedForward(d, f, approximate).eval()
        x = torch.randn(b, t, d) * 2.0
        with torch.no_grad():
            hidden = block.linear_1(x)
            activated = block.gelu(hidden)
            projected = block.linear_2(activated)
            output = block(x)
        for key, value in block.state_dict().items():
            files.append(save(out.inputs, f"block_{case}_{key.replace('.', '_')}", value))
        files += [save(out.inputs, f"block_{case}_x", x), save(out.expected, f"block_{case}_hidden", hidden),
                  save(out.expected, f"block_{case}_activated", activated),
                  save(out.expected, f"block_{case}_projected", projected),
                  save(out.expected, f"block_{case}_output", output)]
        if case == "b3_t4_d7_f10":
            # Each row of the output (1,1,D), which forward gives for that token alone.
            for i in range(b):
                for j in range(t):
                    files.append(save(out.expected, f"block_{case}_output_b{i}_t{j}", output[i:i + 1, j:j + 1, :]))
    return files
