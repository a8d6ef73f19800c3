"""Sampling's filters in Hugging Face's order, and fixtures from them.

transformers' generate() warps the next-token scores with TemperatureLogitsWarper, then
TopKLogitsWarper, then TopPLogitsWarper (generation/logits_process.py), and samples from the
softmax of what is left. The three classes are written out below as transformers writes them:
- temperature divides the scores;
- top-k sets to -inf every score below the k-th largest (ties with the k-th are all kept);
- top-p takes the softmax of the scores left (so it sees top-k's renormalised probabilities),
  sorts it ascending and removes the tokens whose cumulative probability is <= 1 - p, never the
  most likely one: what stays is the smallest set whose probability is at least p.
A score of -inf (a masked special token) gets probability 0 and is never kept.

data/fixtures/sampling/hugging_face_order.npz holds, for each case i:
  scores.<i>         the scores (V) fed in, float32, -inf where a token is masked
  probabilities.<i>  softmax of the warped scores: what a token is drawn from (V)
and cases.json gives each case's temperature, top_k (0: off) and top_p.

    /usr/bin/python3 data/generate_fixtures.py
"""
import json
import pathlib

import numpy as np
import torch

INF = float("inf")


class TemperatureLogitsWarper:
    def __init__(self, temperature):
        self.temperature = temperature

    def __call__(self, scores):
        return scores / self.temperature


class TopKLogitsWarper:
    def __init__(self, top_k, filter_value=-INF, min_tokens_to_keep=1):
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, scores):
        top_k = min(self.top_k, scores.size(-1))
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        return scores.masked_fill(indices_to_remove, self.filter_value)


class TopPLogitsWarper:
    def __init__(self, top_p, filter_value=-INF, min_tokens_to_keep=1):
        self.top_p = top_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        sorted_indices_to_remove[..., -self.min_tokens_to_keep:] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


def warp(scores, temperature, top_k, top_p):
    """What generate(do_sample=True) samples from: its warpers in its order, then softmax."""
    x = torch.tensor(scores, dtype=torch.float32)[None, :]
    x = TemperatureLogitsWarper(temperature)(x)
    if top_k > 0:
        x = TopKLogitsWarper(top_k)(x)
    if top_p < 1.0:
        x = TopPLogitsWarper(top_p)(x)
    return x.softmax(dim=-1)[0]


def cases():
    g = torch.Generator().manual_seed(2601)
    random = torch.randn(11, generator=g).mul(2.0).tolist()
    # The review's case (lesson 14, step 0 at temperature 5): h far ahead of g, the rest far
    # behind. After top-k 2 and renormalising, h has 0.857 >= 0.7, so top-p keeps h alone; a
    # threshold taken before renormalising would keep g too.
    review = [-INF, -INF, -12.0, -15.0, -14.0, -13.5, -11.0, -12.5, -13.0, -8.96, 0.0]
    # Ties at top-k's boundary: every token tied with the k-th is kept.
    ties = [-INF, -INF, 1.0, 2.0, 2.0, 2.0, 0.5, 0.5, -1.0, 0.0, 3.0]
    # The spread distribution of a model that is not yet certain, special tokens masked.
    spread = [-INF, -INF] + torch.randn(9, generator=g).tolist()
    return [
        ({"temperature": 1.0, "top_k": 0, "top_p": 1.0}, random),
        ({"temperature": 1.0, "top_k": 0, "top_p": 0.9}, random),
        ({"temperature": 0.7, "top_k": 4, "top_p": 0.8}, random),
        ({"temperature": 2.0, "top_k": 20, "top_p": 0.5}, random),
        ({"temperature": 5.0, "top_k": 2, "top_p": 0.7}, review),
        ({"temperature": 5.0, "top_k": 2, "top_p": 1.0}, review),
        ({"temperature": 1.0, "top_k": 2, "top_p": 1.0}, ties),
        ({"temperature": 1.0, "top_k": 3, "top_p": 0.4}, ties),
        ({"temperature": 1.0, "top_k": 0, "top_p": 0.95}, spread),
        ({"temperature": 0.5, "top_k": 5, "top_p": 0.9}, spread),
        ({"temperature": 3.0, "top_k": 0, "top_p": 0.3}, spread),
    ]


def generate(out_dir: pathlib.Path) -> dict:
    folder = out_dir / "sampling"
    folder.mkdir(parents=True, exist_ok=True)
    arrays, meta = {}, []
    for i, (options, scores) in enumerate(cases()):
        arrays[f"scores.{i}"] = np.array(scores, dtype=np.float32)
        arrays[f"probabilities.{i}"] = warp(scores, **options).numpy()
        meta.append(options)
    np.savez_compressed(folder / "hugging_face_order.npz", **arrays)
    (folder / "cases.json").write_text(json.dumps({"hugging_face_order": {"cases": meta}}, indent=2) + "\n")
    return {"sampling": len(meta)}


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(generate(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
