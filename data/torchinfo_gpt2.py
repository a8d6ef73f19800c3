#!/usr/bin/python3
"""torchinfo's table of GPT2Model or GPT2LMHeadModel on input_ids (B,T), the module tree of
data/generator/gpt2.py (transformers' class and attribute names), to compare with
`attn summary --pretrained DIR` and core/gpt2_summary.cpp:

    PYTHONPATH=torchinfo /usr/bin/python3 data/torchinfo_gpt2.py --class GPT2LMHeadModel --depth 3 > torch.txt

It needs torchinfo, which is not a Debian package: put a checkout of its sources on PYTHONPATH (it
is pure Python and runs on Debian's torch 1.13). attn's tests never run it; their goldens are in
tests/golden/torchinfo/gpt2/. Sizes default to gpt2's (12 x 768, H 12, F 3072, V 50257, P 1024);
the weights are torch's initialisation (a table does not depend on them). The forward runs as
torchinfo calls it, with GPT2Config's use_cache true: the models' outputs end with
past_key_values, which torchinfo sizes by its first key (B,H,T,hs).
"""
import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generator.gpt2 import ARCHITECTURES, make_config  # noqa: E402


def main():
    from torchinfo import summary
    parser = argparse.ArgumentParser()
    parser.add_argument("--class", dest="architecture", choices=list(ARCHITECTURES), default="GPT2LMHeadModel")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=8)
    parser.add_argument("--n-embd", type=int, default=768)
    parser.add_argument("--n-head", type=int, default=12)
    parser.add_argument("--n-inner", type=int, default=None)
    parser.add_argument("--n-layer", type=int, default=12)
    parser.add_argument("--vocab-size", type=int, default=50257)
    parser.add_argument("--n-positions", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--col-names", default="output_size,num_params")
    args = parser.parse_args()
    torch.manual_seed(0)
    config = make_config(args.n_embd, args.n_head, args.n_layer, args.vocab_size, args.n_positions, args.n_inner)
    model = ARCHITECTURES[args.architecture](config).eval()
    ids = torch.zeros(args.batch, args.seq, dtype=torch.int64)
    print(summary(model, input_data=[ids], depth=args.depth, col_names=args.col_names.split(","), verbose=0))


if __name__ == "__main__":
    main()
