#!/usr/bin/python3
"""torchinfo's tables of seed 001's DecoderBlock, Decoder and Transformer (bugs fixed), at the sizes
`attn summary decoder-block|decoder|transformer` uses by default, to compare with attn's:

    /usr/bin/python3 data/torchinfo_seed001.py decoder-block > torch.txt
    build/attn summary decoder-block > attn.txt && diff torch.txt attn.txt

It needs torchinfo (not a Debian package: `pip install torchinfo` in a virtual environment that
sees Debian's torch). attn's tests never run it. Sizes: B 1, T = S 5, D 6, H 2, F 16, 2 layers,
vocabularies of 10; masks None.
"""
import pathlib
import sys

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generator.feed_forward import FeedForwardNeuralNetwork  # noqa: E402
from generator.transformer import (Decoder, DecoderBlock, MultiHeadAttention,  # noqa: E402
                                   build_transformer)

B, T, D, H, F, L, V = 1, 5, 6, 2, 16, 2, 10


def block():
    return DecoderBlock(MultiHeadAttention(D, H, 0.1), MultiHeadAttention(D, H, 0.1),
                        FeedForwardNeuralNetwork(D, F, 0.1), 0.1)


def main():
    from torchinfo import summary
    which = sys.argv[1] if len(sys.argv) > 1 else "decoder-block"
    x = torch.randn(B, T, D)
    if which == "decoder-block":
        print(summary(block(), input_data=[x, x, None, None], verbose=0))
    elif which == "decoder":
        print(summary(Decoder(nn.ModuleList([block() for _ in range(L)])), input_data=[x, x, None, None],
                      verbose=0))
    else:
        model = build_transformer(V, V, T, T, d_model=D, dff=F, h=H, N=L)
        ids = torch.ones(B, T, dtype=torch.int64)
        print(summary(model, input_data=[ids, ids], verbose=0))


if __name__ == "__main__":
    main()
