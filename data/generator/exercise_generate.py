"""Lesson 14's exercise: one sampling step in Hugging Face's order, and one step of attention with a
KV cache.

Sampling: the special tokens' logits set to -inf, then TemperatureLogitsWarper (logits / T),
TopKLogitsWarper (below the k-th largest -> -inf) and TopPLogitsWarper (softmax of what is left,
sorted ascending, drop the tokens whose cumulative probability is at most 1 - p, always keeping the
most likely), then softmax. transformers 4.x's code, written out here since Debian has no
transformers. The draw is by inverse CDF in token order: the first token with probability above 0
whose cumulative probability exceeds u. Each case's settings are an input (T, k, p, u).

KV cache: seed 001's MultiHeadAttention over a prefix under the causal mask; step t's output is row
t of that, its weights row t, and its cache the keys and values of rows 0..t.
"""
import torch

from generator.exercises import save
from generator.transformer import SEED_FILL, MultiHeadAttention

LESSON = "generate"


def filtered(logits, special, temperature, top_k, top_p):
    scores = logits.clone()
    scores[special] = float("-inf")
    scores = scores / temperature
    if top_k > 0:
        kth = torch.topk(scores, min(top_k, scores.numel()))[0][-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        margin = (cumulative - (1 - top_p)).abs().min()
        assert margin > 1e-3, f"a cumulative probability within {margin} of 1 - p: pick other logits"
        remove_sorted = cumulative <= (1 - top_p)
        remove_sorted[-1:] = False
        remove = remove_sorted.scatter(0, sorted_indices, remove_sorted)
        scores = scores.masked_fill(remove, float("-inf"))
    return scores.softmax(dim=-1)


def inverse_cdf(probabilities, u):
    cumulative = 0.0
    for i, p in enumerate(probabilities.double().tolist()):
        cumulative += p
        if p > 0 and u < cumulative:
            return i
    return int(torch.nonzero(probabilities).max())


def sampling_cases():
    """name, seed, V, logits scale, special ids, (T, k, p), the u of each draw."""
    return [("temperature", 91, 10, 2.0, [0, 1], (0.7, 0, 1.0), [0.37, 0.0, 0.999999]),
            ("top_k", 92, 10, 2.0, [0, 1], (1.3, 4, 1.0), [0.81, 0.2]),
            ("top_p", 93, 12, 1.5, [0, 1], (1.0, 0, 0.8), [0.55, 0.3]),
            ("special_most_likely", 94, 8, 1.0, [0, 1], (0.5, 0, 1.0), [0.99, 0.0]),
            ("all_of_them", 95, 33, 2.0, [0, 1, 2], (2.0, 10, 0.9), [0.123, 0.77]),
            ("cold", 96, 9, 1.0, [0], (0.05, 0, 0.95), [0.5])]


def generate(out):
    files = []
    for name, seed, v, scale, special, (temperature, top_k, top_p), draws in sampling_cases():
        draws = torch.tensor(draws, dtype=torch.float32)  # u as the test reads it
        torch.manual_seed(seed)
        logits = torch.randn(v) * scale
        if name == "special_most_likely":
            logits[1] = logits.max() + 2.0  # <s> would win every draw if it were not masked
        probabilities = filtered(logits, special, temperature, top_k, top_p)
        files += [save(out.inputs, f"sample_{name}_logits", logits),
                  save(out.inputs, f"sample_{name}_special", torch.tensor(special, dtype=torch.float32)),
                  save(out.inputs, f"sample_{name}_settings", torch.tensor([temperature, top_k, top_p])),
                  save(out.inputs, f"sample_{name}_draws", draws),
                  save(out.expected, f"sample_{name}_probabilities", probabilities),
                  save(out.expected, f"sample_{name}_tokens",
                       torch.tensor([inverse_cdf(probabilities, u) for u in draws.tolist()], dtype=torch.float32))]
    # The review's case (lesson 14, HF's order): top-2 renormalised gives 0.706 and 0.294, so p = 0.7
    # keeps only the first; thresholding before the renormalisation (0.6 < 0.7) would keep both.
    logits = torch.log(torch.tensor([0.01, 0.60, 0.25, 0.10, 0.04]))
    settings = (1.0, 2, 0.7)
    probabilities = filtered(logits, [0], *settings)
    files += [save(out.inputs, "sample_top_k_then_top_p_logits", logits),
              save(out.inputs, "sample_top_k_then_top_p_special", torch.tensor([0.0])),
              save(out.inputs, "sample_top_k_then_top_p_settings", torch.tensor(settings)),
              save(out.inputs, "sample_top_k_then_top_p_draws", torch.tensor([0.9])),
              save(out.expected, "sample_top_k_then_top_p_probabilities", probabilities),
              save(out.expected, "sample_top_k_then_top_p_tokens",
                   torch.tensor([inverse_cdf(probabilities, torch.tensor(0.9).item())], dtype=torch.float32))]
    # KV cache: one layer, a prefix x (B,T,D) under the causal mask.
    for weights, seed, (d, h), (b, t) in [("kv_d8_h2", 97, (8, 2), (1, 6)), ("kv_d6_h1", 98, (6, 1), (2, 3)),
                                          ("kv_d12_h3", 99, (12, 3), (2, 5))]:
        torch.manual_seed(seed)
        layer = MultiHeadAttention(d, h, 0.0, SEED_FILL).eval()
        files += [save(out.inputs, f"{weights}.{key}", value) for key, value in layer.state_dict().items()]
        x = torch.randn(b, t, d)
        prefix = f"{weights}_b{b}_t{t}"
        files.append(save(out.inputs, f"{prefix}_x", x))
        with torch.no_grad():
            output = layer(x, x, x, torch.tril(torch.ones(t, t))[None, None])
            keys, values, weights_all = layer.steps["keys"], layer.steps["values"], layer.attention_weights
        # the cache of the first t - 1 tokens, given as an input, for the one-step case
        files += [save(out.inputs, f"{prefix}_cached_keys", keys[:, :, :t - 1]),
                  save(out.inputs, f"{prefix}_cached_values", values[:, :, :t - 1])]
        for step in range(t):
            files += [save(out.expected, f"{prefix}_step{step}_output", output[:, step:step + 1]),
                      save(out.expected, f"{prefix}_step{step}_weights", weights_all[:, :, step:step + 1, :step + 1]),
                      save(out.expected, f"{prefix}_step{step}_keys", keys[:, :, :step + 1]),
                      save(out.expected, f"{prefix}_step{step}_values", values[:, :, :step + 1])]
    return files
