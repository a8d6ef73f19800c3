"""How low the validation loss gets in a given time: `attn train --model gpt` with its defaults
against nanoGPT's model in PyTorch eager (bench/gpt_torch.py) at the same configuration, on the same
text, split and schedule, on this machine, one after the other. Prints each evaluation's time and
losses, then the lowest validation loss each reached within --attn-seconds (60) and
--torch-seconds (180), and when each first went below 2.2 nats per character.

attn's evaluations are read from its live lines on a terminal (a pseudo-terminal here), which give
the seconds since training began; PyTorch's are timed the same way (evaluations included).

    /usr/bin/python3 bench/compare_gpt_learning.py [--attn build/attn] [--threads 2]
"""
import argparse
import os
import pathlib
import pty
import re
import subprocess
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import gpt_torch  # noqa: E402

LINE = re.compile(r"step (\d+): train loss ([0-9.]+), val loss ([0-9.]+) \(([0-9.]+) s\)")


def run_attn(attn, threads, seconds):
    """attn train --model gpt on a pseudo-terminal, stopped after `seconds` of training."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    master, slave = pty.openpty()
    process = subprocess.Popen([attn, "train", "--model", "gpt", "--threads", str(threads)],
                               stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    evaluations, text = [], ""
    start = time.monotonic()
    while True:
        try:
            chunk = os.read(master, 4096).decode("utf-8", "replace")
        except OSError:
            break
        if not chunk:
            break
        text += chunk
        for m in LINE.finditer(text):
            e = (int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4)))
            if e not in evaluations:
                evaluations.append(e)
                print(f"  attn  step {e[0]:>5}  train {e[1]:.4f}  val {e[2]:.4f}  {e[3]:6.1f} s", flush=True)
        if evaluations and evaluations[-1][3] > seconds or time.monotonic() - start > seconds + 120:
            process.kill()
            break
    process.wait()
    return evaluations


def run_torch(threads, seconds, corpus, steps=2000, interval=100, batch=12, block=64, eval_batches=20):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    text = corpus.read_text(encoding="utf-8")
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text])
    n = len(ids)
    split = int(n * 0.9)
    model = gpt_torch.GPT(len(chars), block=block)
    opt = gpt_torch.optimizer(model)
    g = torch.Generator().manual_seed(1)
    fixed = {part: torch.randint(lo, hi - block, (eval_batches * batch,), generator=g)
             for part, (lo, hi) in {"train": (0, split), "val": (split, n)}.items()}

    def windows(starts):
        x = torch.stack([ids[s:s + block] for s in starts])
        y = torch.stack([ids[s + 1:s + block + 1] for s in starts])
        return x, y

    def evaluate():
        out = {}
        with torch.no_grad():
            for part, starts in fixed.items():
                losses = [model(*windows(starts[i:i + batch])).item() for i in range(0, len(starts), batch)]
                out[part] = sum(losses) / len(losses)
        return out

    evaluations = []
    start = time.monotonic()
    for step in range(steps + 1):
        if step % interval == 0 or step == steps:
            e = evaluate()
            t = time.monotonic() - start
            evaluations.append((step, e["train"], e["val"], t))
            print(f"  torch step {step:>5}  train {e['train']:.4f}  val {e['val']:.4f}  {t:6.1f} s", flush=True)
            if t > seconds:
                break
        if step == steps:
            break
        starts = torch.randint(0, split - block, (batch,))
        gpt_torch.train_step(model, opt, *windows(starts), gpt_torch.warmup_cosine(2e-3, steps, step + 1))
    return evaluations


def summary(name, evaluations, seconds):
    within = [e for e in evaluations if e[3] <= seconds]
    best = min(within, key=lambda e: e[2]) if within else None
    below = next((e for e in evaluations if e[2] < 2.2), None)
    print(f"{name}: lowest validation loss within {seconds:.0f} s: "
          + (f"{best[2]:.4f} (step {best[0]}, {best[3]:.1f} s)" if best else "none")
          + "; first below 2.2: " + (f"step {below[0]} at {below[3]:.1f} s" if below else "not reached"))
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attn", default=str(ROOT / "build" / "attn"))
    parser.add_argument("--threads", type=int, default=2, help="attn's threads")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="PyTorch's (on 2 cores its eager training is fastest on 1: bench/compare_train.py)")
    parser.add_argument("--attn-seconds", type=float, default=60.0)
    parser.add_argument("--torch-seconds", type=float, default=180.0)
    args = parser.parse_args()
    print(f"attn train --model gpt (defaults), {args.threads} threads, up to {args.attn_seconds:.0f} s:")
    a = run_attn(args.attn, args.threads, args.attn_seconds)
    print(f"PyTorch {torch.__version__} eager, nanoGPT's model, the same configuration, {args.torch_threads} "
          f"threads, up to {args.torch_seconds:.0f} s:")
    t = run_torch(args.torch_threads, args.torch_seconds, ROOT / "data" / "corpus" / "moby-dick.txt")
    best_a = summary("attn", a, args.attn_seconds)
    best_t = summary("PyTorch", t, args.torch_seconds)
    if best_a and best_t:
        print(f"attn in {args.attn_seconds:.0f} s {'<=' if best_a[2] <= best_t[2] else '>'} PyTorch in "
              f"{args.torch_seconds:.0f} s: {best_a[2]:.4f} vs {best_t[2]:.4f}")


if __name__ == "__main__":
    main()
