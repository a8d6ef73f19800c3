"""Seed 001's encoder-decoder Transformer with its bugs fixed, and fixtures from it.

The classes keep the seed's names (so the state_dict keys are the seed's), with these fixes:
- MultiHeadAttention returns `attention_weights @ value` (the seed has `@ key`);
- Encoder and Decoder call `super().__init__()`, and Encoder.forward passes `src_mask` on;
- FeedForwardNeuralNetwork uses its dropout argument (the seed's `nn.Dropout()` is p = 0.5);
- the Transformer has one embedding and one positional encoding for the source and one for the
  target (the seed shares them, and names a `position_embedding` that does not exist);
- build_transformer finishes buildingTranformers, with new attention and feed-forward modules for
  every block.
A mask is 1 where a query may look and 0 where it may not; masked scores become `fill`: the seed's
-1e9 or PyTorch's -inf. ResidualConnection is pre-LN as the seed writes it, or post-LN (the paper).

Each case in data/fixtures/transformer/ is one .npz:
  param.<key>   the module's parameters as in state_dict() (absent when the weights come from the
                formula of attention.formula_state_dict, numbered over the parameters only)
  input.<name>  float inputs (x, memory) or int64 ids (source, target, labels)
  mask.<name>   the masks as the seed passes them: source (B,1,1,S), target (B,1,T,T), ...
  output        the forward's output; weights: the attention's weights (B,H,T,S) where kept
  grad_output   G fed to backward; grad.<name> and grad.<key> the .grad of inputs and parameters
                (grad_sample.<key>: every 97th element, for the seed-size cases)
  greedy        greedy decoding's tokens, where the case decodes
and cases.json gives each case's module, sizes, placement and fill.

    /usr/bin/python3 data/generate_fixtures.py
"""
import json
import math
import pathlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from generator.feed_forward import FeedForwardNeuralNetwork
from generator.layer_norm import LayerNormalization
from generator.positional_encoding import PositionalEncoding

SEED_FILL = -1e9
TORCH_FILL = float("-inf")
SAMPLE_EVERY = 97


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, h, dropout, fill=SEED_FILL):
        super().__init__()
        self.h = h
        assert d_model % h == 0, "d_model is not divisible by head"
        self.dropout = nn.Dropout(dropout)
        self.d_k = d_model // h
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)
        self.fill = fill

    def forward(self, q, k, v, mask):
        query = self.W_Q(q)
        key = self.W_K(k)
        value = self.W_V(v)
        query = query.view(query.shape[0], query.shape[1], self.h, self.d_k).transpose(1, 2)
        key = key.view(key.shape[0], key.shape[1], self.h, self.d_k).transpose(1, 2)
        value = value.view(value.shape[0], value.shape[1], self.h, self.d_k).transpose(1, 2)
        weights = query @ key.transpose(-2, -1)
        weights = weights / math.sqrt(self.d_k)
        if mask is not None:
            weights = weights.masked_fill(mask == 0, self.fill)
        self.steps = {"queries": query, "keys": key, "values": value, "scores": weights}
        weights = weights.softmax(dim=-1)
        self.attention_weights = weights
        output = self.dropout(weights) @ value
        output = output.transpose(1, 2).contiguous().view(output.shape[0], -1, self.d_k * self.h)
        return self.W_O(output)


class ResidualConnection(nn.Module):
    def __init__(self, dropout, placement="pre"):
        super().__init__()
        self.norm = LayerNormalization()
        self.dropout = nn.Dropout(dropout)
        self.placement = placement

    def forward(self, x, sublayer):
        if self.placement == "pre":
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderBlock(nn.Module):
    def __init__(self, multi_head_attention, feed_forward_neural_network, dropout, placement="pre"):
        super().__init__()
        self.multi_head_attention = multi_head_attention
        self.feed_forward_neural_network = feed_forward_neural_network
        self.residual_connection = nn.ModuleList([ResidualConnection(dropout, placement) for _ in range(2)])

    def forward(self, x, src_mask):
        x = self.residual_connection[0](x, lambda x: self.multi_head_attention(x, x, x, src_mask))
        return self.residual_connection[1](x, self.feed_forward_neural_network)


class Encoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers
        self.norm = LayerNormalization()

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class DecoderBlock(nn.Module):
    def __init__(self, multi_head_attention, cross_attention, feed_forward_neural_network, dropout, placement="pre"):
        super().__init__()
        self.multi_head_attention = multi_head_attention
        self.cross_attention = cross_attention
        self.feed_forward_neural_network = feed_forward_neural_network
        self.residual_connection = nn.ModuleList([ResidualConnection(dropout, placement) for _ in range(3)])

    def forward(self, x, encoder_output, src_mask, target_mask):
        x = self.residual_connection[0](x, lambda x: self.multi_head_attention(x, x, x, target_mask))
        x = self.residual_connection[1](x, lambda x: self.cross_attention(x, encoder_output, encoder_output, src_mask))
        return self.residual_connection[2](x, self.feed_forward_neural_network)


class Decoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers
        self.norm = LayerNormalization()

    def forward(self, x, encoder_output, src_mask, target_mask):
        for layer in self.layers:
            x = layer(x, encoder_output, src_mask, target_mask)
        return self.norm(x)


class LinearTransformation(nn.Module):
    def __init__(self, d_model, vocab_size):
        super().__init__()
        self.linear = nn.Linear(d_model, vocab_size)

    def forward(self, x):
        return torch.log_softmax(self.linear(x), dim=-1)


class InputEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, x):
        return self.embedding(x) * math.sqrt(self.d_model)


class Transformer(nn.Module):
    def __init__(self, encoder, decoder, projection, source_embedding, target_embedding,
                 source_positional_encoding, target_positional_encoding):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.projection = projection
        self.source_embedding = source_embedding
        self.target_embedding = target_embedding
        self.source_positional_encoding = source_positional_encoding
        self.target_positional_encoding = target_positional_encoding

    def encode(self, source, src_mask):
        return self.encoder(self.source_positional_encoding(self.source_embedding(source)), src_mask)

    def decode(self, encoder_output, src_mask, target, target_mask):
        x = self.target_positional_encoding(self.target_embedding(target))
        return self.decoder(x, encoder_output, src_mask, target_mask)

    def project(self, x):
        return self.projection(x)

    def forward(self, source, target, src_mask=None, target_mask=None):
        """The seed has none; torchinfo needs one: project(decode(encode(source), target))."""
        memory = self.encode(source, src_mask)
        return self.project(self.decode(memory, src_mask, target, target_mask))


def build_transformer(source_vocab_size, target_vocab_size, source_seq_length, target_seq_length, d_model=512,
                      dropout=0.1, dff=2048, h=8, N=6, placement="pre", fill=SEED_FILL):
    def attention():
        return MultiHeadAttention(d_model, h, dropout, fill)

    encoder = Encoder(nn.ModuleList([
        EncoderBlock(attention(), FeedForwardNeuralNetwork(d_model, dff, dropout), dropout, placement)
        for _ in range(N)]))
    decoder = Decoder(nn.ModuleList([
        DecoderBlock(attention(), attention(), FeedForwardNeuralNetwork(d_model, dff, dropout), dropout, placement)
        for _ in range(N)]))
    return Transformer(encoder, decoder, LinearTransformation(d_model, target_vocab_size),
                       InputEmbedding(source_vocab_size, d_model), InputEmbedding(target_vocab_size, d_model),
                       PositionalEncoding(d_model, source_seq_length, dropout),
                       PositionalEncoding(d_model, target_seq_length, dropout))


def source_mask(lengths, s):
    """(B,1,1,S): 1 on each source's real tokens, 0 on its padding."""
    mask = torch.zeros(len(lengths), 1, 1, s, dtype=torch.int64)
    for b, n in enumerate(lengths):
        mask[b, :, :, :n] = 1
    return mask


def target_mask(lengths, t):
    """(B,1,T,T): causal, and 0 on each target's padding keys."""
    mask = torch.tril(torch.ones(t, t, dtype=torch.int64)).repeat(len(lengths), 1, 1, 1)
    for b, n in enumerate(lengths):
        mask[b, :, :, n:] = 0
    return mask


def greedy_decode(model, source, src_mask, start, end, max_len):
    """Seed 001's model decoding one sequence greedily: the argmax of each step's log-probs."""
    memory = model.encode(source, src_mask)
    ys = torch.tensor([[start]], dtype=torch.int64)
    while ys.shape[1] < max_len:
        t = ys.shape[1]
        out = model.decode(memory, src_mask, ys, torch.tril(torch.ones(1, 1, t, t, dtype=torch.int64)))
        word = int(model.project(out[:, -1]).argmax(dim=-1))
        ys = torch.cat([ys, torch.tensor([[word]], dtype=torch.int64)], dim=1)
        if word == end:
            break
    return ys[0].numpy()


def formula_parameters(model):
    """attention.formula_state_dict over the parameters only (the pe buffers keep their table)."""
    with torch.no_grad():
        for j, (_, p) in enumerate(model.named_parameters()):
            i = np.arange(p.numel(), dtype=np.int64)
            v = 0.02 * (((i * 7919 + j * 104729) % 2001) / 1000.0 - 1.0)
            p.copy_(torch.from_numpy(v.astype(np.float32).reshape(tuple(p.shape))))


def randomise_norms(model, generator):
    """LayerNormalization starts at gamma 1, beta 0: draw them, so that their gradients matter."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.gamma"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=generator))
            elif name.endswith("norm.beta"):
                p.copy_(0.3 * torch.randn(p.shape, generator=generator))


def params(model, sampled):
    if sampled:
        return {}
    return {"param." + k: v.detach().numpy() for k, v in model.state_dict().items() if not k.endswith(".pe")}


def grads(model, sampled):
    out = {}
    for k, p in model.named_parameters():
        g = p.grad.detach().numpy()
        if sampled:
            out["grad_sample." + k] = g.reshape(-1)[::SAMPLE_EVERY].copy()
        else:
            out["grad." + k] = g
    return out


def attention_case(seed, b, t, s, d, h, fill, mask):
    torch.manual_seed(seed)
    model = MultiHeadAttention(d, h, 0.0, fill).eval()
    x = torch.randn(b, t, d, requires_grad=True)
    memory = torch.randn(b, s, d, requires_grad=True)
    y = model(x, memory, memory, mask)
    g = torch.randn_like(y)
    y.backward(g)
    arrays = {**params(model, False), "input.x": x.detach().numpy(), "input.memory": memory.detach().numpy(),
              "mask.source": mask.numpy(), "output": y.detach().numpy(),
              "weights": model.attention_weights.detach().numpy(), "grad_output": g.numpy(),
              **{"steps." + k: v.detach().numpy() for k, v in model.steps.items()},
              "grad.x": x.grad.numpy(), "grad.memory": memory.grad.numpy(), **grads(model, False)}
    return arrays, {"module": "cross-attention", "d_model": d, "heads": h}


def block_case(seed, kind, b, t, s, d, h, f, placement, fill, target_lengths, source_lengths, sampled=False):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)

    def attention():
        return MultiHeadAttention(d, h, 0.0, fill)

    if kind == "decoder-block":
        model = DecoderBlock(attention(), attention(), FeedForwardNeuralNetwork(d, f, 0.0), 0.0, placement)
    else:
        model = EncoderBlock(attention(), FeedForwardNeuralNetwork(d, f, 0.0), 0.0, placement)
    if sampled:
        formula_parameters(model)
    else:
        randomise_norms(model, gen)
    model.eval()
    x = torch.randn(b, t, d, requires_grad=True)
    src = source_mask(source_lengths, s)
    arrays = {"mask.source": src.numpy()}
    if kind == "decoder-block":
        memory = torch.randn(b, s, d, requires_grad=True)
        tgt = target_mask(target_lengths, t)
        y = model(x, memory, src, tgt)
        arrays.update({"input.memory": memory.detach().numpy(), "mask.target": tgt.numpy(),
                       "weights.self": model.multi_head_attention.attention_weights.detach().numpy(),
                       "weights.cross": model.cross_attention.attention_weights.detach().numpy()})
    else:
        y = model(x, src)
    g = torch.randn_like(y)
    y.backward(g)
    arrays.update({**params(model, sampled), "input.x": x.detach().numpy(), "output": y.detach().numpy(),
                   "grad_output": g.numpy(), "grad.x": x.grad.numpy(), **grads(model, sampled)})
    if kind == "decoder-block":
        arrays["grad.memory"] = memory.grad.numpy()
    meta = {"module": kind, "d_model": d, "heads": h, "d_ff": f, "placement": placement,
            "fill": "seed" if fill == SEED_FILL else "torch", "formula_weights": sampled}
    return arrays, meta


def transformer_case(seed, sizes, placement, fill, source, target, source_lengths, target_lengths, sampled=False,
                     with_grads=True):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = build_transformer(sizes["source_vocab"], sizes["target_vocab"], sizes["source_len"],
                              sizes["target_len"], d_model=sizes["d_model"], dropout=0.0, dff=sizes["d_ff"],
                              h=sizes["heads"], N=sizes["layers"], placement=placement, fill=fill)
    if sampled:
        formula_parameters(model)
    else:
        randomise_norms(model, gen)
    model.eval()
    src = torch.tensor(source, dtype=torch.int64)
    tgt = torch.tensor(target, dtype=torch.int64)
    smask = source_mask(source_lengths, src.shape[1])
    tmask = target_mask(target_lengths, tgt.shape[1])
    memory = model.encode(src, smask)
    logp = model.project(model.decode(memory, smask, tgt, tmask))
    labels = torch.roll(tgt, -1, dims=1)
    for b, n in enumerate(target_lengths):
        labels[b, n - 1:] = -100
    arrays = {**params(model, sampled), "input.source": src.numpy(), "input.target": tgt.numpy(),
              "input.labels": labels.numpy(), "mask.source": smask.numpy(), "mask.target": tmask.numpy(),
              "memory": memory.detach().numpy(), "output": logp.detach().numpy()}
    if with_grads:
        loss = F.nll_loss(logp.reshape(-1, logp.shape[-1]), labels.reshape(-1), ignore_index=-100)
        loss.backward()
        arrays.update({"loss": loss.detach().numpy(), **grads(model, sampled)})
    with torch.no_grad():
        arrays["greedy"] = greedy_decode(model, src[:1, :source_lengths[0]],
                                         source_mask(source_lengths[:1], source_lengths[0]), 1, 2,
                                         sizes["target_len"])
    meta = {"module": "transformer", **sizes, "placement": placement,
            "fill": "seed" if fill == SEED_FILL else "torch", "formula_weights": sampled,
            "start": 1, "end": 2}
    return arrays, meta


TINY = dict(source_vocab=11, target_vocab=13, source_len=9, target_len=8, d_model=12, heads=3, d_ff=20, layers=2)
BUILDING = dict(source_vocab=50, target_vocab=60, source_len=16, target_len=16, d_model=512, heads=8, d_ff=2048,
                layers=6)


def generate(out_dir: pathlib.Path) -> dict:
    folder = out_dir / "transformer"
    folder.mkdir(parents=True, exist_ok=True)
    cases = {
        "cross_attention_b2_t5_s7_d12_h3_seed": attention_case(1501, 2, 5, 7, 12, 3, SEED_FILL,
                                                               source_mask([7, 4], 7)),
        # A (T, S) mask broadcasts over batch and heads; -inf as PyTorch writes masks.
        "cross_attention_b2_t5_s7_d12_h3_torch": attention_case(
            1502, 2, 5, 7, 12, 3, TORCH_FILL, (torch.arange(7)[None, :] <= torch.arange(5)[:, None] + 2).long()),
        "decoder_block_pre_b2_t5_s7_d12_h3_f20": block_case(1503, "decoder-block", 2, 5, 7, 12, 3, 20, "pre",
                                                            SEED_FILL, [5, 3], [7, 4]),
        "decoder_block_post_b2_t5_s7_d12_h3_f20": block_case(1504, "decoder-block", 2, 5, 7, 12, 3, 20, "post",
                                                             TORCH_FILL, [5, 3], [7, 4]),
        "encoder_block_pre_b2_t7_d12_h3_f20": block_case(1505, "encoder-block", 2, 7, 7, 12, 3, 20, "pre",
                                                         SEED_FILL, None, [7, 4]),
        "decoder_block_seed_b2_t10_s10_d256_h8_f1024": block_case(1506, "decoder-block", 2, 10, 10, 256, 8, 1024,
                                                                  "pre", SEED_FILL, [10, 6], [10, 8], sampled=True),
        "transformer_pre_tiny": transformer_case(1507, TINY, "pre", SEED_FILL,
                                                 [[3, 4, 5, 6, 7, 8, 9], [5, 6, 7, 0, 0, 0, 0]],
                                                 [[1, 9, 8, 7, 6], [1, 7, 6, 5, 0]], [7, 3], [5, 4]),
        "transformer_post_tiny": transformer_case(1508, TINY, "post", TORCH_FILL,
                                                  [[3, 4, 5, 6, 7, 8, 9], [5, 6, 7, 0, 0, 0, 0]],
                                                  [[1, 9, 8, 7, 6], [1, 7, 6, 5, 0]], [7, 3], [5, 4]),
        "transformer_building_defaults": transformer_case(1509, BUILDING, "pre", SEED_FILL,
                                                          [[5, 17, 33, 2, 41, 8, 12, 49, 30]], [[1, 44, 3, 59, 20, 7, 11]],
                                                          [9], [7], sampled=True, with_grads=False),
    }
    meta = {}
    for name, (arrays, info) in cases.items():
        np.savez_compressed(folder / f"{name}.npz", **arrays)
        meta[name] = info
    (folder / "cases.json").write_text(json.dumps(meta, indent=2) + "\n")
    return {"transformer": len(cases)}


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(generate(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
