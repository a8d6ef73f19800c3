"""attn against PyTorch eager on training steps, in one run on one machine: prints the ratios.

For 1 and 2 threads, under the environment as it is and with OPENBLAS_CORETYPE unset (OpenBLAS's
own kernel choice), it runs `attn bench --train --format json` and bench/train_torch.py on the same
models (attn train's default; a BERT-base-size layer, batch 1 of 128 tokens; a GPT at nanoGPT's CPU
configuration, 4 x 128, 12 windows of 64 characters), alternating the two, and prints steps per
second and attn's speed as a multiple of PyTorch's. For the GPT it also prints the bound attn
measured in the same run: the sum of its step's matrix products timed alone, which no step beats.

    /usr/bin/python3 bench/compare_train.py [--attn build/attn] [--repeat 20]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run(command, env):
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return {m["name"]: m for m in json.loads(out)["models"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attn", default=str(ROOT / "build" / "attn"))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    machine = os.environ.get("OPENBLAS_CORETYPE")
    settings = [("as set" if machine else "unset", machine)] + ([("unset", None)] if machine else [])
    print(f"CPU: {cpu_name()}; OPENBLAS_CORETYPE in the environment: {machine or 'unset'}")
    print(f"{'OPENBLAS_CORETYPE':<18} {'threads':>7}  {'model':<22} {'attn steps/s':>13} "
          f"{'torch steps/s':>14} {'attn / torch':>13}")
    for label, coretype in settings:
        for threads in (1, 2):
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
            env.pop("OPENBLAS_CORETYPE", None)
            if coretype:
                env["OPENBLAS_CORETYPE"] = coretype
            common = ["--repeat", str(args.repeat), "--warmup", str(args.warmup), "--threads", str(threads)]
            attn = run([args.attn, "bench", "--train", "--format", "json"] + common, env)
            torch = run([sys.executable, str(ROOT / "bench" / "train_torch.py")] + common, env)
            for name, a in attn.items():
                t = torch[name]
                shown = f"{label} ({coretype})" if coretype else label
                print(f"{shown:<18} {threads:>7}  {name:<22} {a['steps_per_second']:>13.1f} "
                      f"{t['steps_per_second']:>14.1f} {a['steps_per_second'] / t['steps_per_second']:>12.2f}x")
                if "gemm_bound_steps_per_second" in a:
                    bound = a["gemm_bound_steps_per_second"]
                    print(f"{'':<18} {'':>7}  {'(its products alone)':<22} {bound:>13.1f} {'':>14} "
                          f"{bound / t['steps_per_second']:>12.2f}x")


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
