#!/usr/bin/python3
"""torchinfo's table of BertModel, BertForMaskedLM or BertForPreTraining on input_ids (B,T), the
module tree of data/generator/bert.py (transformers' class and attribute names), to compare with
`attn summary --pretrained DIR` and core/bert_summary.cpp:

    PYTHONPATH=torchinfo /usr/bin/python3 data/torchinfo_bert.py --class BertModel --depth 3 > torch.txt

It needs torchinfo, which is not a Debian package: put a checkout of its sources on PYTHONPATH (it
is pure Python and runs on Debian's torch 1.13). attn's tests never run it; their goldens are in
tests/golden/torchinfo/bert/. Sizes default to bert-base-uncased's (12 x 768, F 3072, V 30522,
P 512); the weights are torch's initialisation (a table does not depend on them).
"""
import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generator.bert import ARCHITECTURES, make_config  # noqa: E402


def main():
    from torchinfo import summary
    parser = argparse.ArgumentParser()
    parser.add_argument("--class", dest="architecture", choices=list(ARCHITECTURES), default="BertModel")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=8)
    parser.add_argument("--hidden-size", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--intermediate-size", type=int, default=3072)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--vocab-size", type=int, default=30522)
    parser.add_argument("--positions", type=int, default=512)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--col-names", default="output_size,num_params")
    args = parser.parse_args()
    torch.manual_seed(0)
    config = make_config(args.hidden_size, args.heads, args.intermediate_size, args.layers, args.vocab_size,
                         args.positions)
    model = ARCHITECTURES[args.architecture](config).eval()
    ids = torch.zeros(args.batch, args.seq, dtype=torch.int64)
    print(summary(model, input_data=[ids], depth=args.depth, col_names=args.col_names.split(","), verbose=0))


if __name__ == "__main__":
    main()
