"""Gradient fixtures: torch autograd's answer to `y.backward(G)` for every layer attn differentiates.

Each case is one .npz in data/fixtures/gradients/ holding
  input.<name>     the float inputs (x, or query/key/value), and ids/labels as int64 when used
  mask             the 0/1 mask (1 where a query may look), when the case has one
  param.<key>      the module's state_dict, keyed exactly like model.state_dict()
  output           the forward's output (the loss, shape (), for cross-entropy)
  grad_output      G, the gradient fed to backward (absent for a loss)
  grad.<name>      each float input's .grad
  grad.<key>       each parameter's .grad
and cases.json names each case's module and sizes. The sizes are odd on purpose (B=2, T=5, D=12,
H=3, S=7), so that no axis can be confused with another.

The BERT-base layer case (D=768) takes its weights from attention.formula_state_dict, which the
tests compute too, and keeps its full input gradient but only every 97th element of each
parameter's gradient (`grad_sample.<key>`), to stay small.

Run from the repository root with Debian's interpreter (python3-torch, python3-numpy):

    /usr/bin/python3 data/generate_fixtures.py
"""
import json
import math
import pathlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from generator.attention import (AttentionHead, BookMultiHeadAttention, FusedMultiHeadAttention, SelfAttention,
                                 SplitMultiHeadAttention, causal_and_padding_mask, formula_state_dict,
                                 scaled_dot_product_attention)
from generator.encoder import Embeddings, TransformerEncoder, TransformerEncoderLayer
from generator.feed_forward import FeedForward, FeedForwardNeuralNetwork, SequentialFeedForward
from generator.layer_norm import LayerNormalization

B, T, D, H, S, F_ = 2, 5, 12, 3, 7, 20
TINY = dict(hidden_size=12, num_attention_heads=3, intermediate_size=20, num_hidden_layers=2, vocab_size=17,
            max_position_embeddings=9)
BERT_LAYER = dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072, num_hidden_layers=1,
                  vocab_size=30522, max_position_embeddings=512)
SAMPLE_EVERY = 97


class Softmax(nn.Module):  # softmax over the last axis of scores plus an additive mask
    def forward(self, x, mask=None):
        if mask is not None:
            x = x.masked_fill(mask == 0, float("-inf"))
        return F.softmax(x, dim=-1)


class Activation(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        if self.kind == "relu":
            return F.relu(x)
        return F.gelu(x, approximate="tanh" if self.kind == "gelu-tanh" else "none")


class ClassifierHead(nn.Module):
    """A Linear(D, C) on every token, then cross-entropy against one label per token (the mean)."""

    def __init__(self, d, classes):
        super().__init__()
        self.linear = nn.Linear(d, classes)

    def forward(self, x, labels):
        logits = self.linear(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class DepthStack(nn.Module):
    """Xiong et al.'s setting (lesson 10): encoder layers on hidden states, a final LayerNorm after a
    pre-LN stack, a Linear head on every token and the mean cross-entropy."""

    def __init__(self, c, post_ln, classes):
        super().__init__()
        self.layers = nn.ModuleList([TransformerEncoderLayer(c, post_ln) for _ in range(c["num_hidden_layers"])])
        self.final_norm = None if post_ln else nn.LayerNorm(c["hidden_size"])
        self.head = nn.Linear(c["hidden_size"], classes)

    def forward(self, x, labels):
        for layer in self.layers:
            x = layer(x)
        if self.final_norm is not None:
            x = self.final_norm(x)
        logits = self.head(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def randn(*shape, scale=1.0):
    return (torch.randn(*shape) * scale).requires_grad_(True)


def case_list():
    """(name, builder) pairs; a builder returns (module, inputs dict, extra dict, meta dict)."""

    def linear(bias):
        def build():
            m = nn.Linear(D, F_, bias=bias)
            return m, {"x": randn(B, T, D)}, {}, {"module": "linear", "in": D, "out": F_, "bias": bias}
        return build

    def layer_norm(variant):
        def build():
            if variant == "torch":
                m = nn.LayerNorm(D)
                randomise_norms(m)
            else:
                m = LayerNormalization()
                with torch.no_grad():
                    m.gamma.fill_(1.3)
                    m.beta.fill_(-0.2)
            return m, {"x": randn(B, T, D, scale=2.0)}, {}, {"module": "layer_norm", "variant": variant, "d": D}
        return build

    def softmax(causal, lengths):
        def build():
            mask = causal_and_padding_mask(B, T, causal, lengths)
            return Softmax(), {"x": randn(B, T, T, scale=2.0)}, {"mask": mask}, {
                "module": "softmax", "causal": causal, "lengths": lengths or []}
        return build

    def sdpa():
        mask = torch.ones(B, T, S)
        mask[0, :, 5:] = 0  # padding: the first sequence has 5 real keys
        inputs = {"query": randn(B, T, 4), "key": randn(B, S, 4), "value": randn(B, S, 6)}
        return None, inputs, {"mask": mask}, {"module": "scaled_dot_product_attention", "lengths": [5, S]}

    def attention(variant, causal):
        def build():
            if variant == "self-attention":
                m = SelfAttention(D)
            else:
                m = AttentionHead(D, 4)
            mask = causal_and_padding_mask(B, T, causal, [T, 3])
            return m, {"x": randn(B, T, D)}, {"mask": mask}, {
                "module": "attention", "variant": variant, "d": D, "head_size": 4 if variant == "head" else D,
                "causal": causal, "lengths": [T, 3]}
        return build

    def multi_head(variant):
        def build():
            if variant == "book":
                m = BookMultiHeadAttention(D, H)
            elif variant in ("wide", "narrow"):
                m = SplitMultiHeadAttention(D, H, wide=variant == "wide")
            else:
                m = FusedMultiHeadAttention(D, H)
            mask = causal_and_padding_mask(B, T, True, [T, 4])
            return m, {"x": randn(B, T, D)}, {"mask": mask}, {
                "module": "multi_head", "variant": variant, "d": D, "heads": H, "causal": True, "lengths": [T, 4]}
        return build

    def unmasked(variant):  # what `attn backward --model` runs: no mask
        def build():
            if variant == "self-attention":
                m = SelfAttention(D)
            elif variant == "head":
                m = AttentionHead(D, 4)
            elif variant == "book":
                m = BookMultiHeadAttention(D, H)
            elif variant in ("wide", "narrow"):
                m = SplitMultiHeadAttention(D, H, wide=variant == "wide")
            else:
                m = FusedMultiHeadAttention(D, H)
            module = "attention" if variant in ("self-attention", "head") else "multi_head"
            return m, {"x": randn(B, T, D)}, {}, {"module": module, "variant": variant, "d": D, "heads": H,
                                                   "head_size": 4 if variant == "head" else D, "causal": False,
                                                   "lengths": []}
        return build

    def activation(kind):
        def build():
            return Activation(kind), {"x": randn(B, T, F_, scale=2.0)}, {}, {"module": "activation", "kind": kind}
        return build

    def embedding(rows, positions):
        def build():
            m = nn.Embedding(rows, D)
            if positions:
                ids = torch.arange(T).unsqueeze(0)
            else:
                ids = torch.tensor([[3, 1, 3, 16, 0], [1, 1, 7, 2, 3]])  # repeats accumulate
            return m, {}, {"ids": ids}, {"module": "embedding", "rows": rows, "d": D, "positions": positions}
        return build

    def feed_forward(variant, gelu):
        def build():
            if variant == "book":
                m = FeedForward(D, F_, approximate=gelu, dropout=0.0)
            elif variant == "relu":
                m = FeedForwardNeuralNetwork(D, F_, dropout=0.0)
            else:
                m = SequentialFeedForward(D, F_, approximate=gelu, dropout=0.0)
            return m, {"x": randn(B, T, D)}, {}, {"module": "feed_forward", "variant": variant, "gelu": gelu,
                                                   "d": D, "d_ff": F_}
        return build

    def encoder_layer(norm):
        def build():
            m = TransformerEncoderLayer(TINY, post_ln=norm == "post")
            m.feed_forward.dropout.p = 0.0
            randomise_norms(m)
            return m, {"x": randn(B, T, D)}, {}, {"module": "encoder_layer", "norm": norm, "config": TINY}
        return build

    def embeddings():
        m = Embeddings(TINY)
        m.dropout.p = 0.0
        randomise_norms(m)
        ids = torch.tensor([[3, 1, 3, 16, 0], [1, 1, 7, 2, 3]])
        return m, {}, {"ids": ids}, {"module": "embeddings", "config": TINY}

    def encoder(norm):
        def build():
            m = TransformerEncoder(TINY, post_ln=norm == "post")
            for module in m.modules():
                if isinstance(module, nn.Dropout):
                    module.p = 0.0
            randomise_norms(m)
            ids = torch.tensor([[3, 1, 3, 16, 0], [1, 1, 7, 2, 3]])
            return m, {}, {"ids": ids}, {"module": "encoder", "norm": norm, "config": TINY}
        return build

    def head():
        m = ClassifierHead(D, 4)
        labels = torch.tensor([[0, 3, 1, 1, 2], [2, 2, 0, 3, 1]])
        return m, {"x": randn(B, T, D)}, {"labels": labels}, {"module": "cross_entropy_head", "d": D, "classes": 4}

    def head_ignored():  # a masked-token task's labels: -100 (ignore_index) where nothing is asked
        m = ClassifierHead(D, 4)
        labels = torch.tensor([[-100, 3, -100, -100, 2], [-100, -100, 0, -100, -100]])
        return m, {"x": randn(B, T, D)}, {"labels": labels}, {"module": "cross_entropy_head", "d": D, "classes": 4}

    def bert_layer():
        m = TransformerEncoderLayer(BERT_LAYER)
        m.feed_forward.dropout.p = 0.0
        m.load_state_dict(formula_state_dict(m))
        return m, {"x": randn(1, 8, 768)}, {}, {"module": "encoder_layer", "norm": "pre", "config": BERT_LAYER,
                                                "weights": "formula", "sample_every": SAMPLE_EVERY}

    def dropout():
        m = nn.Dropout(0.3)  # train mode: the kept elements are the output's nonzeros, scaled 1/0.7
        return m, {"x": randn(B, T, D)}, {}, {"module": "dropout", "p": 0.3}

    def feed_forward_dropout():  # train mode: the kept outputs are the nonzeros, scaled 1/0.7
        m = FeedForward(D, F_, approximate="none", dropout=0.3)
        return m, {"x": randn(B, T, D)}, {}, {"module": "feed_forward", "variant": "book", "gelu": "none",
                                               "d": D, "d_ff": F_, "dropout": 0.3}

    def embeddings_dropout():
        m = Embeddings(TINY)
        m.dropout.p = 0.3
        randomise_norms(m)
        ids = torch.tensor([[3, 1, 3, 16, 0], [1, 1, 7, 2, 3]])
        return m, {}, {"ids": ids}, {"module": "embeddings", "config": TINY, "dropout": 0.3}

    def depth(norm):  # lesson 10's placement stacks, Xavier-normal as there, at a small size
        def build():
            c = dict(TINY, num_hidden_layers=3)
            m = DepthStack(c, post_ln=norm == "post", classes=7)
            for module in m.modules():
                if isinstance(module, nn.Dropout):
                    module.p = 0.0
                if isinstance(module, nn.Linear):
                    nn.init.xavier_normal_(module.weight)
                    nn.init.zeros_(module.bias)
            randomise_norms(m)
            labels = torch.tensor([[0, 6, 1, 3, 2], [5, 2, 0, 4, 6]])
            return m, {"x": randn(B, T, D)}, {"labels": labels}, {"module": "depth", "norm": norm, "config": c,
                                                                   "classes": 7}
        return build

    return [
        ("linear_bias", linear(True)),
        ("linear_no_bias", linear(False)),
        ("layer_norm", layer_norm("torch")),
        ("layer_norm_seed001", layer_norm("seed001")),
        ("softmax_causal_lengths", softmax(True, [T, 3])),
        ("softmax_plain", softmax(False, None)),
        ("sdpa_t5_s7_padding", sdpa),
        ("self_attention_causal", attention("self-attention", True)),
        ("head_hs4_padding", attention("head", False)),
        ("multi_head_narrow", multi_head("narrow")),
        ("multi_head_wide", multi_head("wide")),
        ("multi_head_book", multi_head("book")),
        ("multi_head_fused", multi_head("fused")),
        ("gelu_erf", activation("gelu")),
        ("gelu_tanh", activation("gelu-tanh")),
        ("relu", activation("relu")),
        ("embedding_repeated_ids", embedding(17, False)),
        ("position_embedding", embedding(9, True)),
        ("feed_forward_book", feed_forward("book", "none")),
        ("feed_forward_book_tanh", feed_forward("book", "tanh")),
        ("feed_forward_relu", feed_forward("relu", "none")),
        ("feed_forward_gelu_last", feed_forward("gelu-last", "none")),
        ("encoder_layer_pre", encoder_layer("pre")),
        ("encoder_layer_post", encoder_layer("post")),
        ("embeddings", embeddings),
        ("encoder_pre", encoder("pre")),
        ("encoder_post", encoder("post")),
        ("cross_entropy_head", head),
        ("encoder_layer_bert_base", bert_layer),
        ("dropout_train", dropout),
        ("cross_entropy_ignored", head_ignored),
        ("feed_forward_book_dropout", feed_forward_dropout),
        ("embeddings_dropout", embeddings_dropout),
        ("unmasked_self_attention", unmasked("self-attention")),
        ("unmasked_head_hs4", unmasked("head")),
        ("unmasked_multi_head_narrow", unmasked("narrow")),
        ("unmasked_multi_head_wide", unmasked("wide")),
        ("unmasked_multi_head_book", unmasked("book")),
        ("unmasked_multi_head_fused", unmasked("fused")),
        ("depth_pre", depth("pre")),
        ("depth_post", depth("post")),
    ]


def randomise_norms(model):
    """LayerNorm weights away from 1 and biases away from 0, so that their gradients matter."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.copy_(1.0 + 0.3 * torch.randn_like(module.weight))
                module.bias.copy_(0.3 * torch.randn_like(module.bias))


def run(model, inputs, extra, meta):
    mask = extra.get("mask")
    module = meta["module"]
    if module == "scaled_dot_product_attention":
        return scaled_dot_product_attention(inputs["query"], inputs["key"], inputs["value"], mask)
    if module in ("softmax", "attention", "multi_head"):
        return model(inputs["x"], mask)
    if module in ("embedding", "embeddings", "encoder"):
        return model(extra["ids"])
    if module in ("cross_entropy_head", "depth"):
        return model(inputs["x"], extra["labels"])
    if module == "feed_forward":
        return model.steps(inputs["x"])["output"]
    return model(inputs["x"])


def generate(fixtures: pathlib.Path) -> dict:
    out_dir = fixtures / "gradients"
    out_dir.mkdir(parents=True, exist_ok=True)
    cases = {}
    for index, (name, build) in enumerate(case_list()):
        torch.manual_seed(1400 + index)
        model, inputs, extra, meta = build()
        output = run(model, inputs, extra, meta)
        arrays = {}
        if output.dim() == 0:  # a loss
            output.backward()
        else:
            grad_output = torch.randn_like(output)
            output.backward(grad_output)
            arrays["grad_output"] = grad_output.numpy()
        arrays["output"] = output.detach().numpy()
        for key, value in inputs.items():
            arrays[f"input.{key}"] = value.detach().numpy()
            arrays[f"grad.{key}"] = value.grad.numpy()
        if "mask" in extra:
            arrays["mask"] = extra["mask"].numpy().astype(np.float32)
        for key in ("ids", "labels"):
            if key in extra:
                arrays[key] = extra[key].numpy().astype(np.int64)
        sample = meta.get("sample_every")
        if model is not None:
            for key, p in model.named_parameters():
                if sample:
                    arrays[f"grad_sample.{key}"] = p.grad.reshape(-1)[::sample].numpy()
                else:
                    arrays[f"param.{key}"] = p.detach().numpy()
                    arrays[f"grad.{key}"] = p.grad.numpy()
        np.savez(out_dir / f"{name}.npz", **{k: np.ascontiguousarray(v) for k, v in arrays.items()})
        cases[name] = meta
    (out_dir / "cases.json").write_text(json.dumps(cases, indent=2) + "\n")
    return {"cases": len(cases), "folder": "gradients"}


if __name__ == "__main__":
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    torch.set_num_threads(1)
    print(generate(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
