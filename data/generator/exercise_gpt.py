"""Lesson 15's exercise: GPT-2's causal self-attention on its c_attn layout, and one GPT2Block
(pre-LN, GELU's tanh form), as transformers computes them (data/generator/gpt2.py's GPT2Block).

Weights are saved one .npy per parameter, named <weights>.<state_dict key> (transformers' keys:
ln_1.weight, attn.c_attn.weight (D,3D), ...). Conv1D's weights are drawn at 1/sqrt(in) rather than
GPT-2's 0.02, and the LayerNorms' scales and shifts at random, so that the MLP's pre-activations
reach the range where GELU's tanh form and its erf form differ by more than the tolerance, and a
norm used in the other's place cannot pass. The masked scores are saved as nanoGPT writes them
(-inf above the diagonal); transformers puts float32's lowest there, and both give the same
weights.
"""
import math
from types import SimpleNamespace

import torch
from torch import nn

from generator.exercises import save
from generator.gpt2 import GPT2Block

LESSON = "gpt"


def config(d, h, f):
    return SimpleNamespace(n_embd=d, n_head=h, n_inner=f, n_positions=16, layer_norm_epsilon=1e-5,
                           activation_function="gelu_new", attn_pdrop=0.0, resid_pdrop=0.0)


def draw(block, generator):
    with torch.no_grad():
        for name, p in block.named_parameters():
            if name.startswith("ln_") and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=generator))
            elif name.startswith("ln_"):
                p.copy_(0.3 * torch.randn(p.shape, generator=generator))
            elif name.endswith("weight"):  # Conv1D (in, out)
                p.copy_(torch.randn(p.shape, generator=generator) / math.sqrt(p.shape[0]))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))


def attention_steps(attn, x):
    """Every step of GPT2Attention.forward on x (B,T,D), the causal mask as -inf."""
    b, t, d = x.shape
    h = attn.num_heads
    hs = d // h
    q, k, v = attn.c_attn(x).split(d, dim=2)  # (B,T,D) each
    split = lambda y: y.view(b, t, h, hs).permute(0, 2, 1, 3)  # (B,H,T,hs)
    q, k, v = split(q), split(k), split(v)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hs)  # (B,H,T,T)
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    scores = scores.masked_fill(~causal, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    context = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(b, t, d)  # (B,T,D)
    output = attn.c_proj(context)
    reference = attn(x)[0]
    assert torch.allclose(output, reference, atol=1e-6), (output - reference).abs().max()
    return dict(query=q, key=k, value=v, scores=scores, weights=weights, context=context,
                output=output)


def block_steps(block, x):
    ln_1 = block.ln_1(x)
    attention = block.attn(ln_1)[0]
    residual = x + attention
    ln_2 = block.ln_2(residual)
    hidden = block.mlp.c_fc(ln_2)
    gelu = block.mlp.act(hidden)
    mlp = block.mlp.c_proj(gelu)
    output = residual + mlp
    assert torch.equal(output, block(x)[0])
    # GELU's erf form must differ by more than the tests' tolerance (a planted bug must fail)
    exact = nn.functional.gelu(hidden)
    assert ((exact - gelu).abs() > 1e-5 + 1e-4 * gelu.abs()).sum() >= 3
    return dict(ln_1=ln_1, attention=attention, residual=residual, ln_2=ln_2, hidden=hidden,
                gelu=gelu, mlp=mlp, output=output)


def generate(out):
    files = []
    # One block per (D, H, F); each case x (B,T,D), and x with its last token changed.
    for weights, seed, (d, h, f), cases in [
            ("block_d8_h2_f16", 151, (8, 2, 16), [("b2_t5", (2, 5))]),
            ("block_d12_h3_f20", 152, (12, 3, 20), [("b1_t6", (1, 6))]),
            ("block_d6_h1_f10", 153, (6, 1, 10), [("b3_t1", (3, 1)), ("b2_t7", (2, 7))])]:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        block = GPT2Block(config(d, h, f)).eval()
        draw(block, gen)
        files += [save(out.inputs, f"{weights}.{key}", value) for key, value in block.state_dict().items()]
        for case, (b, t) in cases:
            x = torch.randn(b, t, d, generator=gen)
            prefix = f"{weights}_{case}"
            files.append(save(out.inputs, f"{prefix}_x", x))
            with torch.no_grad():
                attention = attention_steps(block.attn, x)
                steps = block_steps(block, x)
                files.append(save(out.expected, f"{prefix}_c_attn", block.attn.c_attn(x)))
            files += [save(out.expected, f"{prefix}_attention_{k}", v) for k, v in attention.items()]
            files += [save(out.expected, f"{prefix}_block_{k}", v) for k, v in steps.items()]
            if t > 1:
                later = x.clone()
                later[:, -1] = 3.0 * torch.randn(b, d, generator=gen)
                files.append(save(out.inputs, f"{prefix}_x_last_changed", later))
    return files
