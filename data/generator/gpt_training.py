"""Fixtures for core/fast/gpt_train.cpp: one training step of a tiny GPT2LMHeadModel (the
reference of data/generator/gpt2.py) as nanoGPT takes it.

gpt-training/step.npz holds the weights under GPT2LMHeadModel's keys (Conv1D weights (in, out), no
lm_head: tied), `input_ids` and `targets` (B,T), the mean cross-entropy `loss`, every parameter's
gradient as `grad.<key>` (wte's includes the tied head's), and after one AdamW step `after.<key>`:
nanoGPT's optimiser (weight decay 0.1 on tensors of 2 or more dimensions only, betas (0.9, 0.99),
eps 1e-8) at lr 0.01, after torch.nn.utils.clip_grad_norm_(1.0); `grad_norm` is the norm before
clipping.
"""
import pathlib

import numpy as np
import torch
import torch.nn.functional as F

from generator.gpt2 import GPT2LMHeadModel, make_config, randomize

B, T, V = 2, 5, 11


def generate(fixtures: pathlib.Path) -> dict:
    out = fixtures / "gpt-training"
    out.mkdir(parents=True, exist_ok=True)
    config = make_config(n_embd=8, n_head=2, n_layer=2, vocab_size=V, n_positions=7)
    model = randomize(GPT2LMHeadModel(config), seed=31, scale=1.0, embedding_scale=1.0)
    generator = torch.Generator().manual_seed(31)
    ids = torch.randint(0, V, (B, T), generator=generator)
    targets = torch.randint(0, V, (B, T), generator=generator)
    logits = model(ids)["logits"]
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    loss.backward()
    arrays = {"input_ids": ids.numpy().astype(np.int32), "targets": targets.numpy().astype(np.int32),
              "loss": np.array(loss.item(), dtype=np.float32)}
    params = {k: p for k, p in model.named_parameters()}  # the tied lm_head listed once, as wte
    for key, p in params.items():
        arrays[key] = p.detach().numpy().copy()
        arrays[f"grad.{key}"] = p.grad.numpy().copy()
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=0.01, betas=(0.9, 0.99))
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    arrays["grad_norm"] = np.array(norm.item(), dtype=np.float32)
    for key, p in params.items():
        arrays[f"after.{key}"] = p.detach().numpy().copy()
    np.savez(out / "step.npz", **arrays)
    return {"files": ["gpt-training/step.npz"], "loss": loss.item(), "grad_norm": norm.item()}
