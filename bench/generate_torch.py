"""PyTorch eager generating with GPT-2 small, as `attn bench --model gpt2` times attn: one JSON
document of medians in ms.

transformers' eager GPT2LMHeadModel (data/generator/gpt2.py: Conv1D's addmm, the past_key_values
concatenated at each step) at random weights, torch.no_grad, eval mode: a prompt of --seq tokens at
once (the time to the first token), then --new-tokens tokens one at a time with the key/value
cache, greedy, --repeat runs after --warmup. Also the resident peak (ru_maxrss) and the weights'
bytes.

    /usr/bin/python3 bench/generate_torch.py --seq 8 --new-tokens 32 --threads 1

Run it with Debian's interpreter (python3-torch 1.13); bench/compare.py runs it.
"""
import argparse
import json
import pathlib
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "data"))
from generator.gpt2 import GPT2LMHeadModel, make_config, randomize  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seq", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = randomize(GPT2LMHeadModel(make_config(768, 12, 12, 50257, 1024)), 29)
    weights = sum(p.numel() for p in model.parameters()) * 4
    prompt = torch.randint(0, 50257, (1, args.seq), generator=torch.Generator().manual_seed(29))
    prefill_ms, token_ms = [], []
    with torch.no_grad():
        for run in range(args.warmup + args.repeat):
            start = time.perf_counter()
            out = model(prompt, use_cache=True)
            first = (time.perf_counter() - start) * 1000
            past, steps = out["past_key_values"], []
            for _ in range(args.new_tokens - 1):
                step_input = out["logits"][:, -1].argmax(-1)[:, None]
                start = time.perf_counter()
                out = model(step_input, past_key_values=past, use_cache=True)
                past = out["past_key_values"]
                steps.append((time.perf_counter() - start) * 1000)
            if run >= args.warmup:
                prefill_ms.append(first)
                token_ms.extend(steps)
    token = statistics.median(token_ms)
    print(json.dumps({"prefill_ms": statistics.median(prefill_ms), "token_ms": token,
                      "tokens_per_second": 1000 / token, "weights_bytes": weights,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "threads": args.threads}))


if __name__ == "__main__":
    main()
