"""nanoGPT's model in PyTorch eager (Karpathy's nanoGPT model.py, the version for torch < 2.0: the
causal mask as a buffer, GELU's tanh form, biases, the LM head tied to wte), at the sizes
`attn train --model gpt` takes, for bench/train_torch.py and bench/compare_gpt_learning.py.
Run with Debian's interpreter (python3-torch 1.13)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d, heads, d_ff, block):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, d_ff)
        self.mlp_proj = nn.Linear(d_ff, d)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, layers=4, heads=4, d=128, d_ff=512, block=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.h = nn.ModuleList([Block(d, heads, d_ff, block) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        for name, p in self.named_parameters():  # nanoGPT's _init_weights and c_proj scaling
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("c_proj.weight", "mlp_proj.weight")) else 0.02
                torch.nn.init.normal_(p, mean=0.0, std=std)
            elif name.endswith("bias"):
                torch.nn.init.zeros_(p)

    def forward(self, ids, targets):
        x = self.wte(ids) + self.wpe(torch.arange(ids.size(1)))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def optimizer(model, lr=1e-3):
    """nanoGPT's configure_optimizers: weight decay 0.1 on tensors of 2+ dimensions, betas (0.9, 0.99)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.99))


def warmup_cosine(peak, steps, step):
    """attn's schedule (core/train/trainer.cpp): 5% linear warm-up, then a cosine to a tenth."""
    warm = max(1.0, 0.05 * steps)
    if step <= warm:
        return peak * step / warm
    progress = (step - warm) / max(1.0, steps - warm)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def train_step(model, opt, ids, targets, lr):
    for group in opt.param_groups:
        group["lr"] = lr
    opt.zero_grad(set_to_none=True)
    loss = model(ids, targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()
