"""Lesson 03's exercise: torch.softmax over the last axis, and the causal mask."""
import torch

from generator.exercises import save

LESSON = "softmax"


def generate(out):
    files = []
    # (case, seed, shape, scale): odd, non-square sizes so that a softmax over the wrong axis or
    # a transposed result cannot pass; scale 300 overflows exp() unless the row max is subtracted.
    for case, seed, shape, scale in [("b2_t4_s6", 1, (2, 4, 6), 1.0), ("b3_t5_s7", 2, (3, 5, 7), 2.0),
                                     ("b1_t1_s1", 3, (1, 1, 1), 1.0), ("large_b2_t3_s5", 4, (2, 3, 5), 300.0),
                                     ("b1_t6_s3", 5, (1, 6, 3), 0.5)]:
        torch.manual_seed(seed)
        scores = torch.randn(*shape) * scale
        files += [save(out.inputs, f"{case}_scores", scores),
                  save(out.expected, f"{case}_softmax", torch.softmax(scores, dim=-1))]
    # A causal mask from torch.triu, and the masked softmax at T = 5 (B = 2); at T = 4 it is the
    # input of a mask that does not fit scores (2,4,6).
    for tokens in (1, 5):
        mask = torch.triu(torch.full((tokens, tokens), float("-inf")), diagonal=1)
        files.append(save(out.expected, f"causal_mask_t{tokens}", mask))
    files.append(save(out.inputs, "causal_mask_t4", torch.triu(torch.full((4, 4), float("-inf")), diagonal=1)))
    torch.manual_seed(6)
    scores = torch.randn(2, 5, 5)
    mask = torch.triu(torch.full((5, 5), float("-inf")), diagonal=1)
    files += [save(out.inputs, "causal_b2_t5_scores", scores),
              save(out.expected, "causal_b2_t5_softmax", torch.softmax(scores + mask, dim=-1))]
    # Some -inf scores (padding keys), not whole rows: PyTorch's output at (3,4,6).
    torch.manual_seed(7)
    scores = torch.randn(3, 4, 6)
    scores[0, :, 4:] = float("-inf")
    scores[2, 1, 0] = float("-inf")
    files += [save(out.inputs, "padded_b3_t4_s6_scores", scores),
              save(out.expected, "padded_b3_t4_s6_softmax", torch.softmax(scores, dim=-1))]
    # A row of scores (2,4,6) all -inf attends to nothing: zeros there (PyTorch gives NaN), the
    # softmax elsewhere.
    torch.manual_seed(1)
    scores = torch.randn(2, 4, 6)
    weights = torch.softmax(scores, dim=-1)
    weights[1, 2, :] = 0.0
    files.append(save(out.expected, "padded_row_b2_t4_s6_softmax", weights))
    return files
