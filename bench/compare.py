"""attn against PyTorch eager at its best, in one run on one machine: prints the ratios (PyTorch's time / attn's).

PyTorch's speed on Debian is its OpenBLAS kernel's, which OPENBLAS_CORETYPE sets and a CPU newer
than OpenBLAS's table gets wrong, so PyTorch runs under every OpenBLAS kernel this CPU can run
(its flags say which) and as two models; its best is the fastest of them all, cell by cell.
attn runs once per round, under the environment as it is.
  layer    `attn bench --seq T` against the book's layer and nn.TransformerEncoderLayer
           (bench/forward_torch.py), T = 128 and 512, batch 1, 1 and 2 threads; with attn's
           fraction of the fastest GEMM library's bound. --rounds rounds alternate the programs;
           each time is the median of its rounds
  encoder  `attn bench --model encoder` against the book's 12-layer encoder from ids and the
           same embeddings before nn.TransformerEncoder, batch 1 (and 8 without --quick), T = 128
           and 512; with attn's fraction of the bound and its peak memory over weights plus one
           layer's activations
  bert     `attn bench --model bert` against BERT-base from ids and token types (a sentence pair:
           0 for the first half, 1 for the second), post-LN at eps 1e-12, without the pooler:
           transformers' eager BertModel (data/generator/bert.py) and the same embeddings before
           post-LN nn.TransformerEncoder (PyTorch's fused path); the same cells as the encoder's
  gpt2     `attn bench --model gpt2` against transformers' eager GPT2LMHeadModel generating with
           past_key_values (bench/generate_torch.py): GPT-2 small at random weights, a prompt of 8
           tokens then 32 new ones, 1 and 2 threads; tokens per second, attn's fraction of the
           memory bandwidth's bound (measured in attn's run), the time to the first token, and
           attn's peak memory over weights plus cache
  train    bench/compare_train.py (training steps of attn train's default and a BERT-base layer)

    /usr/bin/python3 bench/compare.py [--attn build/attn] [--quick] [--only layer|encoder|bert|gpt2|train]

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


def cpu_info():
    name, flags = "unknown", set()
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            name = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
    return name, flags


# OpenBLAS 0.3.21's x86-64 kernels, oldest first, with the instructions each needs.
KERNELS = [
    ("Prescott", {"pni"}),  # SSE3, which /proc/cpuinfo calls pni
    ("Sandybridge", {"avx"}),
    ("Haswell", {"avx2", "fma"}),
    ("SkylakeX", {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}),
    ("Cooperlake", {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16"}),
    ("SapphireRapids", {"avx512f", "avx512bw", "avx512_bf16", "amx_tile", "amx_bf16"}),
]


def kernels_this_cpu_runs(attn, flags):
    """The kernels whose instructions the CPU has and that this OpenBLAS accepts by name."""
    out = []
    for name, needs in KERNELS:
        if not needs <= flags:
            continue
        probe = run_json([attn, "bench", "--seq", "8", "--repeat", "1", "--warmup", "0", "--format", "json"],
                         environment(name, 1))
        if probe["gemm"]["openblas_kernel"] == name:
            out.append(name)
    return out


def torch_best(torch_py, models, kernels, common, threads, rounds):
    """PyTorch's fastest median over the models and kernels: (ms, model, kernel), and every cell."""
    cells = {}
    for kernel in kernels:
        env = environment(kernel, threads)
        for model in models:
            times = [run_json(torch_py + ["--model", model] + common, env)["ms_median"] for _ in range(rounds)]
            cells[(model, kernel)] = statistics.median(times)
    (model, kernel), ms = min(cells.items(), key=lambda item: item[1])
    return ms, model, kernel, cells


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attn", default=str(ROOT / "build" / "attn"))
    parser.add_argument("--quick", action="store_true", help="fewer runs, and batch 1 only")
    parser.add_argument("--only", choices=["layer", "encoder", "bert", "gpt2", "train"], help="one table only")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds alternating attn and PyTorch; the median round is shown")
    args = parser.parse_args()
    machine = os.environ.get("OPENBLAS_CORETYPE")
    layer_runs, model_runs = ("5", "1") if args.quick else ("20", "3")
    if args.quick:
        args.rounds = 1
    torch_py = [sys.executable, str(ROOT / "bench" / "forward_torch.py")]
    name, flags = cpu_info()
    kernels = kernels_this_cpu_runs(args.attn, flags)
    print(f"CPU: {name}; OPENBLAS_CORETYPE in the environment: {machine or 'unset'}")
    print(f"PyTorch runs under each OpenBLAS kernel this CPU runs: {', '.join(kernels)}")
    print("ratios are PyTorch's best time / attn's: above 1, attn is faster\n")

    def attn_gemm(threads):
        probe = run_json([args.attn, "bench", "--seq", "8", "--repeat", "1", "--warmup", "0", "--threads",
                          str(threads), "--format", "json"], environment(machine, threads))
        g = probe["gemm"]
        return f"{g['large_products']} ({g['chosen_by']}; OpenBLAS's kernel {g['openblas_kernel']})"

    for threads in (1, 2):
        print(f"attn's large products at {threads} thread{'s' if threads > 1 else ''}: {attn_gemm(threads)}")
    print()

    def report(label, a, fraction, best, extra=""):
        ms, model, kernel, cells = best
        print(f"{label}  attn {a:9.2f} ms  {fraction:5.3f} of bound{extra}  PyTorch best {ms:9.2f} ms "
              f"({model}, {kernel})  ratio {ms / a:5.2f}x", flush=True)
        for (m, k), t in sorted(cells.items(), key=lambda item: item[1]):
            print(f"      {m:<14} {k:<15} {t:9.2f} ms  {t / a:5.2f}x")

    if args.only in (None, "layer"):
        print("One layer, BERT-base, pre-LN, batch 1")
        for threads in (1, 2):
            env = environment(machine, threads)
            for seq in (128, 512):
                common = ["--seq", str(seq), "--threads", str(threads), "--repeat", layer_runs]
                attn, fraction = [], []
                for _ in range(args.rounds):
                    run = run_json([args.attn, "bench", "--format", "json"] + common, env)
                    attn.append(run["ms_median"])
                    fraction.append(run["fraction_of_bound"])
                best = torch_best(torch_py, ["book-layer", "torch-layer"], kernels, common, threads, args.rounds)
                report(f"threads {threads} T {seq:>3}", statistics.median(attn), statistics.median(fraction), best)
        print()

    def whole_model(title, model, torch_models):
        print(title)
        cells = [(1, 128), (1, 512)] + ([] if args.quick else [(8, 128)])
        for threads in (1, 2):
            env = environment(machine, threads)
            for batch, seq in cells:
                common = ["--seq", str(seq), "--batch", str(batch), "--threads", str(threads),
                          "--repeat", model_runs, "--warmup", "1"]
                runs = [run_json([args.attn, "bench", "--model", model, "--format", "json"] + common, env)
                        for _ in range(args.rounds)]
                run = sorted(runs, key=lambda r: r["ms_median"])[len(runs) // 2]
                peak = (run["peak_rss_bytes"] - run["baseline_rss_bytes"]) / 2**20
                best = torch_best(torch_py, torch_models, kernels, common, threads, 1)
                report(f"threads {threads} B {batch} T {seq:>3}", run["ms_median"], run["fraction_of_bound"], best,
                       f"  peak {peak:6.1f} MiB ({run['memory_ratio']:.3f} of weights + activations)")
        print()

    if args.only in (None, "encoder"):
        whole_model("The encoder from ids, BERT-base, 12 layers, pre-LN", "encoder", ["encoder", "torch-encoder"])

    if args.only in (None, "bert"):
        whole_model("BERT-base from ids and token types, 12 layers, post-LN", "bert", ["bert", "torch-bert"])

    if args.only in (None, "gpt2"):
        print("GPT-2 small generating: 8 prompt tokens, then 32 one at a time with the cache")
        generate_py = [sys.executable, str(ROOT / "bench" / "generate_torch.py")]
        for threads in (1, 2):
            env = environment(machine, threads)
            common = ["--seq", "8", "--new-tokens", "32", "--threads", str(threads), "--repeat",
                      "1" if args.quick else "3", "--warmup", "1"]
            runs = [run_json([args.attn, "bench", "--model", "gpt2", "--format", "json"] + common, env)
                    for _ in range(args.rounds)]
            run = sorted(runs, key=lambda r: r["tokens_per_second"])[len(runs) // 2]
            cells = {}
            for kernel in kernels:
                torch_env = environment(kernel, threads)
                times = [run_json(generate_py + common, torch_env) for _ in range(args.rounds)]
                cells[kernel] = sorted(times, key=lambda r: r["tokens_per_second"])[len(times) // 2]
            # PyTorch as a user runs it: no thread variable set, so OpenBLAS may take every core
            # whatever torch.set_num_threads says.
            unpinned = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
            times = [run_json(generate_py + common, unpinned) for _ in range(args.rounds)]
            cells["unpinned env"] = sorted(times, key=lambda r: r["tokens_per_second"])[len(times) // 2]
            kernel, best = max(cells.items(), key=lambda item: item[1]["tokens_per_second"])
            peak = (run["peak_rss_bytes"] - run["baseline_rss_bytes"]) / 2**20
            print(f"threads {threads}  attn {run['tokens_per_second']:7.2f} tokens/s  "
                  f"{run['fraction_of_bound']:5.3f} of the bound ({run['bound_tokens_per_second']:.1f} tokens/s "
                  f"at {run['bandwidth_gb_per_s']:.1f} GB/s)  first token {run['prefill_ms']:.1f} ms  "
                  f"peak {peak:.0f} MiB ({run['memory_ratio']:.3f} of weights + cache)")
            print(f"           PyTorch best {best['tokens_per_second']:7.2f} tokens/s ({kernel}), first token "
                  f"{best['prefill_ms']:.1f} ms  ratio {run['tokens_per_second'] / best['tokens_per_second']:5.2f}x",
                  flush=True)
            for k, cell in sorted(cells.items(), key=lambda item: -item[1]["tokens_per_second"]):
                print(f"      {k:<15} {cell['tokens_per_second']:7.2f} tokens/s")
        print()

    if args.only in (None, "train"):
        command = [sys.executable, str(ROOT / "bench" / "compare_train.py"), "--attn", args.attn,
                   "--repeat", "5" if args.quick else "20"]
        print(subprocess.run(command, env=environment(machine, 1), check=True, capture_output=True,
                             text=True).stdout, flush=True)


if __name__ == "__main__":
    main()
