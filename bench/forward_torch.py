"""PyTorch eager on the forward passes `attn bench` times: one JSON document of medians in ms.

Models (torch.no_grad, eval mode, dropout off, BERT-base sizes D=768 H=12 F=3072, GELU erf):
  book-layer     the book's TransformerEncoderLayer (seed 000, data/generator), batch 1
  torch-layer    nn.TransformerEncoderLayer(norm_first=True, batch_first=True), batch 1: PyTorch's
                 own layer, which 1.13 runs on its fused inference path
  encoder        the book's TransformerEncoder from ids, 12 layers, at --batch
  torch-encoder  the same embeddings (word and position vectors, LayerNorm) and then
                 nn.TransformerEncoder of 12 such nn.TransformerEncoderLayer, at --batch
  bert           transformers' eager BertModel without its pooler (data/generator/bert.py), from
                 ids and token types (0 for the first half of each sequence, 1 for the second)
  torch-bert     BERT's embeddings (word + token type + position, LayerNorm at eps 1e-12) and
                 then nn.TransformerEncoder of 12 post-LN nn.TransformerEncoderLayer (eps 1e-12):
                 the same function on PyTorch's fused inference path

    /usr/bin/python3 bench/forward_torch.py --model book-layer --seq 128 --threads 1

Run it with Debian's interpreter (python3-torch 1.13), from anywhere; bench/compare.py runs it.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "data"))
from generator import bert  # noqa: E402
from generator.encoder import TransformerEncoder, TransformerEncoderLayer  # noqa: E402

BERT_BASE = dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072, num_hidden_layers=12,
                 vocab_size=30522, max_position_embeddings=512, hidden_dropout_prob=0.0)


def build(model, seq, batch):
    torch.manual_seed(0)
    if model == "book-layer":
        return TransformerEncoderLayer(BERT_BASE), torch.randn(1, seq, 768)
    if model == "torch-layer":
        layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        return layer, torch.randn(1, seq, 768)
    ids = torch.randint(0, BERT_BASE["vocab_size"], (batch, seq))
    if model == "torch-encoder":
        return TorchEncoder(), ids
    if model in ("bert", "torch-bert"):
        types = (torch.arange(seq) >= seq // 2).long().expand(batch, seq)  # a sentence pair
        module = TorchBert() if model == "torch-bert" else EagerBert()
        return module, (ids, types)
    return TransformerEncoder(BERT_BASE), ids


class TorchEncoder(nn.Module):
    """Embeddings as the book's encoder has them, then PyTorch's own 12-layer encoder."""

    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(BERT_BASE["vocab_size"], 768)
        self.positions = nn.Embedding(BERT_BASE["max_position_embeddings"], 768)
        self.norm = nn.LayerNorm(768, eps=1e-12)
        layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.layers = nn.TransformerEncoder(layer, BERT_BASE["num_hidden_layers"], enable_nested_tensor=False)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.layers(self.norm(self.words(ids) + self.positions(positions)))


def bert_config():
    return bert.make_config(768, 12, 3072, BERT_BASE["num_hidden_layers"], BERT_BASE["vocab_size"],
                            BERT_BASE["max_position_embeddings"])


class EagerBert(nn.Module):
    """BertModel as transformers runs it eagerly, its last hidden state (no pooler: attn's neither)."""

    def __init__(self):
        super().__init__()
        self.model = bert.BertModel(bert_config(), add_pooling_layer=False)

    def forward(self, inputs):
        ids, types = inputs
        return self.model(ids, token_type_ids=types)["last_hidden_state"]


class TorchBert(nn.Module):
    """BERT's embeddings, then PyTorch's own post-LN encoder (its fused path in eval mode)."""

    def __init__(self):
        super().__init__()
        c = bert_config()
        self.embeddings = bert.BertEmbeddings(c)
        layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=False, layer_norm_eps=c.layer_norm_eps)
        self.layers = nn.TransformerEncoder(layer, c.num_hidden_layers, enable_nested_tensor=False)

    def forward(self, inputs):
        ids, types = inputs
        return self.layers(self.embeddings(ids, types))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=["book-layer", "torch-layer", "encoder", "torch-encoder", "bert", "torch-bert"], default="book-layer")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    module, x = build(args.model, args.seq, args.batch)
    module.eval()
    for m in module.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    times = []
    with torch.no_grad():
        for i in range(args.warmup + args.repeat):
            start = time.perf_counter()
            module(x)
            if i >= args.warmup:
                times.append((time.perf_counter() - start) * 1000.0)
    print(json.dumps({"torch": torch.__version__, "model": args.model, "seq": args.seq, "batch": args.batch,
                      "threads": args.threads, "runs": args.repeat, "ms_median": statistics.median(times),
                      "ms_min": min(times), "ms_max": max(times),
                      "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")}, indent=2))


if __name__ == "__main__":
    main()
