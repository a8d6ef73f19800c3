#!/usr/bin/python3
"""torchinfo's tables of seed 001's DecoderBlock, Decoder and Transformer (bugs fixed), at the sizes
`attn summary decoder-block|decoder|transformer` uses by default, to compare with attn's:

    PYTHONPATH=torchinfo /usr/bin/python3 data/torchinfo_seed001.py decoder-block --depth 4 > torch.txt
    build/attn summary decoder-block --depth 4 > attn.txt && diff torch.txt attn.txt

The options (--batch --seq --norm --depth --verbose --col-names) are attn summary's.

It needs torchinfo, which is not a Debian package: put a checkout of its sources on PYTHONPATH
(it is pure Python and runs on Debian's torch 1.13). attn's tests never run it. Sizes: B 1 and
T = S 5 unless given, D 6, H 2, F 16, 2 layers, vocabularies of 10. The masks are passed as a decoder is
trained with them, int64: the source padding mask (B,1,1,S) and the causal target mask (B,1,T,T).
(torchinfo cannot size a None in input_data, so the masks are tensors here.)
"""
import argparse
import pathlib
import sys

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generator.feed_forward import FeedForwardNeuralNetwork  # noqa: E402
from generator.transformer import (Decoder, DecoderBlock, MultiHeadAttention,  # noqa: E402
                                   build_transformer, source_mask, target_mask)

D, H, F, L, V = 6, 2, 16, 2, 10


def block(placement):
    return DecoderBlock(MultiHeadAttention(D, H, 0.1), MultiHeadAttention(D, H, 0.1),
                        FeedForwardNeuralNetwork(D, F, 0.1), 0.1, placement)


def main():
    from torchinfo import summary
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["decoder-block", "decoder", "transformer"])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=5)
    parser.add_argument("--norm", choices=["pre", "post"], default="pre")
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--col-names", default="output_size,num_params")
    args = parser.parse_args()
    b, t = args.batch, args.seq
    x = torch.randn(b, t, D)
    masks = [source_mask([t] * b, t), target_mask([t] * b, t)]
    if args.model == "decoder-block":
        model, inputs = block(args.norm), [x, x, *masks]
    elif args.model == "decoder":
        model, inputs = Decoder(nn.ModuleList([block(args.norm) for _ in range(L)])), [x, x, *masks]
    else:
        model = build_transformer(V, V, t, t, d_model=D, dff=F, h=H, N=L, placement=args.norm)
        ids = torch.ones(b, t, dtype=torch.int64)
        inputs = [ids, ids, *masks]
    # verbose 1 and 2 print the table; 0 only returns it (the table of verbose 1).
    table = summary(model, input_data=inputs, depth=args.depth, col_names=args.col_names.split(","),
                    verbose=0 if args.verbose == 1 else args.verbose)
    if args.verbose < 2:
        print(table)


if __name__ == "__main__":
    main()
