"""PyTorch eager on the models `attn bench --train` times: training steps per second.

A step is what attn's Trainer does: zero the gradients, the forward pass of the book's
TransformerEncoder with a per-token nn.Linear head (data/generator's classes, dropout 0),
cross-entropy, backward, and torch.optim.AdamW's update. The batches are random tokens with the
reversed sequence as labels (the time does not depend on them). Prints one JSON document.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 bench/train_torch.py --threads 1

Run it with Debian's interpreter (python3-torch 1.13), from the repository root.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "data"))
from generator.encoder import TransformerEncoder  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gpt_torch  # noqa: E402


class TokenClassifier(nn.Module):  # attn's core/train/classifier.hpp: "encoder.*" and "head.*"
    def __init__(self, config, classes):
        super().__init__()
        self.encoder = TransformerEncoder(config)
        self.head = nn.Linear(config["hidden_size"], classes)

    def forward(self, ids):
        return self.head(self.encoder(ids))


def model_config(layers, d_model, heads, d_ff, vocab, tokens):
    return dict(hidden_size=d_model, num_attention_heads=heads, intermediate_size=d_ff,
                num_hidden_layers=layers, vocab_size=vocab, max_position_embeddings=tokens)


def time_steps(name, config, batch, tokens, warmup, repeat):
    torch.manual_seed(0)
    vocab = config["vocab_size"]
    model = TokenClassifier(config, vocab)
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    times = []
    for i in range(warmup + repeat):
        ids = torch.randint(0, vocab, (batch, tokens))
        labels = torch.flip(ids, dims=[1])
        start = time.perf_counter()
        optimizer.zero_grad()
        logits = model(ids)
        loss = F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1))
        loss.backward()
        optimizer.step()
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1000.0)
    ms = statistics.median(times)
    return {"name": name, "layers": config["num_hidden_layers"], "d_model": config["hidden_size"],
            "heads": config["num_attention_heads"], "d_ff": config["intermediate_size"], "batch": batch,
            "tokens": tokens, "vocab": vocab, "ms_median": ms, "ms_min": min(times), "ms_max": max(times),
            "steps_per_second": 1000.0 / ms}


def time_gpt_steps(name, warmup, repeat, vocab=80, batch=12, block=64):
    """nanoGPT's CPU configuration (4 layers, 4 heads, 128 wide, 12 windows of 64 tokens) on random
    tokens of the shipped corpus's 80 characters: a step as attn's GptTraining takes it (the batch,
    forward, cross-entropy, backward, clipping, AdamW)."""
    torch.manual_seed(0)
    model = gpt_torch.GPT(vocab, block=block)
    opt = gpt_torch.optimizer(model)
    times = []
    for i in range(warmup + repeat):
        ids = torch.randint(0, vocab, (batch, block + 1))
        start = time.perf_counter()
        gpt_torch.train_step(model, opt, ids[:, :-1], ids[:, 1:], 1e-3)
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1000.0)
    ms = statistics.median(times)
    return {"name": name, "layers": 4, "d_model": 128, "heads": 4, "d_ff": 512, "batch": batch, "tokens": block,
            "vocab": vocab, "ms_median": ms, "ms_min": min(times), "ms_max": max(times),
            "steps_per_second": 1000.0 / ms}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seq", type=int, default=128, help="the BERT-base layer's tokens")
    parser.add_argument("--batch", type=int, default=1, help="the BERT-base layer's batch")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    models = [
        time_steps("attn train's default", model_config(2, 32, 2, 64, 8, 8), 32, 8, args.warmup, args.repeat),
        time_steps("a BERT-base layer", model_config(1, 768, 12, 3072, 8, args.seq), args.batch, args.seq,
                   args.warmup, args.repeat),
        time_gpt_steps("nanoGPT's CPU GPT", args.warmup, args.repeat),
    ]
    print(json.dumps({"torch": torch.__version__, "threads": args.threads, "runs": args.repeat,
                      "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"), "models": models}, indent=2))


if __name__ == "__main__":
    main()
