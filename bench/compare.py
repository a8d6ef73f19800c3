"""attn against PyTorch eager, in one run on one machine: prints the ratios (PyTorch's time / attn's).

For 1 and 2 threads, under the environment as it is and with OPENBLAS_CORETYPE unset (OpenBLAS's
own kernel choice, PyTorch's best case on a CPU OpenBLAS knows), and under --coretype KERNEL too
when given (a kernel to force for PyTorch's sake where OpenBLAS does not know the CPU):
  layer    `attn bench --seq T` against the book's layer and nn.TransformerEncoderLayer
           (bench/forward_torch.py), T = 128 and 512, batch 1; with attn's fraction of the
           fastest GEMM library's bound. --rounds rounds alternate the three programs; each
           column shows the median of its rounds
  encoder  `attn bench --model encoder` against the book's 12-layer encoder from ids, batch 1
           and 8, T = 128 and 512; with attn's peak memory over weights plus one layer's
           activations
  train    bench/compare_train.py (training steps of attn train's default and a BERT-base layer)

    /usr/bin/python3 bench/compare.py [--attn build/attn] [--coretype SkylakeX] [--quick]

A benchmark, not a test: it asserts nothing. Run it on an idle machine.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run_json(command, env):
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def environment(coretype, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attn", default=str(ROOT / "build" / "attn"))
    parser.add_argument("--coretype", help="also run with OPENBLAS_CORETYPE set to this kernel")
    parser.add_argument("--quick", action="store_true", help="fewer runs, and no batch 8 at T = 512")
    parser.add_argument("--only", choices=["layer", "encoder", "train"], help="one table only")
    parser.add_argument("--rounds", type=int, default=3,
                        help="layer table: rounds alternating attn and PyTorch; the median round is shown")
    args = parser.parse_args()
    machine = os.environ.get("OPENBLAS_CORETYPE")
    settings = [machine] + ([None] if machine else [])
    if args.coretype and args.coretype not in settings:
        settings.append(args.coretype)
    layer_runs, model_runs = ("5", "1") if args.quick else ("20", "3")
    if args.quick:
        args.rounds = 1
    torch_py = [sys.executable, str(ROOT / "bench" / "forward_torch.py")]
    probe = run_json([args.attn, "bench", "--seq", "8", "--repeat", "1", "--warmup", "0", "--format", "json"],
                     environment(machine, 1))
    print(f"CPU: {cpu_name()}; OPENBLAS_CORETYPE in the environment: {machine or 'unset'}")
    print(f"attn's large products: {probe['gemm']['large_products']} ({probe['gemm']['chosen_by']}); "
          f"OpenBLAS's own kernel here: {probe['gemm']['openblas_kernel']}")
    print("ratios are PyTorch's time / attn's: above 1, attn is faster\n")

    if args.only in (None, "layer"):
        print(f"{'OPENBLAS_CORETYPE':<18} {'thr':>3} {'T':>4}  {'attn ms':>9} {'of bound':>8}  "
              f"{'book ms':>9} {'ratio':>6}  {'nn.TEL ms':>9} {'ratio':>6}")
        for coretype in settings:
            for threads in (1, 2):
                env = environment(coretype, threads)
                for seq in (128, 512):
                    common = ["--seq", str(seq), "--threads", str(threads), "--repeat", layer_runs]
                    rounds = {"attn": [], "book": [], "tel": [], "fraction": []}
                    for _ in range(args.rounds):  # alternating, so that a slow patch hits all three
                        attn = run_json([args.attn, "bench", "--format", "json"] + common, env)
                        rounds["attn"].append(attn["ms_median"])
                        rounds["fraction"].append(attn["fraction_of_bound"])
                        rounds["book"].append(run_json(torch_py + ["--model", "book-layer"] + common, env)["ms_median"])
                        rounds["tel"].append(run_json(torch_py + ["--model", "torch-layer"] + common, env)["ms_median"])
                    a, book, tel, fraction = (statistics.median(rounds[k]) for k in ("attn", "book", "tel", "fraction"))
                    print(f"{coretype or 'unset':<18} {threads:>3} {seq:>4}  {a:>9.2f} {fraction:>8.3f}  "
                          f"{book:>9.2f} {book / a:>5.2f}x  {tel:>9.2f} {tel / a:>5.2f}x", flush=True)
        print()

    if args.only in (None, "encoder"):
        print(f"{'OPENBLAS_CORETYPE':<18} {'thr':>3} {'B':>2} {'T':>4}  {'attn ms':>9} {'GFLOP/s':>8} "
              f"{'of bound':>8} {'peak MiB':>8} {'mem ratio':>9}  {'torch ms':>9} {'ratio':>6}")
        cells = [(1, 128), (8, 128), (1, 512)] + ([] if args.quick else [(8, 512)])
        for coretype in settings:
            for threads in (1, 2):
                env = environment(coretype, threads)
                for batch, seq in cells:
                    common = ["--seq", str(seq), "--batch", str(batch), "--threads", str(threads),
                              "--repeat", model_runs, "--warmup", "1"]
                    attn = run_json([args.attn, "bench", "--model", "encoder", "--format", "json"] + common, env)
                    torch = run_json(torch_py + ["--model", "encoder"] + common, env)
                    a = attn["ms_median"]
                    peak = (attn["peak_rss_bytes"] - attn["baseline_rss_bytes"]) / 2**20
                    print(f"{coretype or 'unset':<18} {threads:>3} {batch:>2} {seq:>4}  {a:>9.1f} "
                          f"{attn['gflops']:>8.1f} {attn['fraction_of_bound']:>8.3f} {peak:>8.1f} "
                          f"{attn['memory_ratio']:>9.3f}  {torch['ms_median']:>9.1f} {torch['ms_median'] / a:>5.2f}x",
                          flush=True)
        print()

    if args.only in (None, "train"):
        for coretype in settings:
            env = environment(coretype, 1)
            command = [sys.executable, str(ROOT / "bench" / "compare_train.py"), "--attn", args.attn,
                       "--repeat", "5" if args.quick else "20"]
            print(subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout, flush=True)


if __name__ == "__main__":
    main()
