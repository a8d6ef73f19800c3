"""Training parity: 20 AdamW steps of a 2-layer encoder with a per-token classification head.

One .npz in data/fixtures/training/ holds the initial weights (`init.<key>`), the batches
(`ids` and `labels`, (steps, B, T) int64: four batches cycled; the task is to output the
sequence reversed), the loss
torch computed at every step (`losses`, before that step's update) and the weights after the last
step (`final.<key>`). attn starts from the same weights, takes the same steps with its own
backward and AdamW, and must stay within 1e-4 of both.
"""
import json
import pathlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from generator.encoder import TransformerEncoder

CONFIG = dict(hidden_size=12, num_attention_heads=3, intermediate_size=20, num_hidden_layers=2, vocab_size=11,
              max_position_embeddings=8)
STEPS, BATCH, TOKENS = 20, 4, 6
OPTIMIZER = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


class TokenClassifier(nn.Module):
    def __init__(self, config, classes):
        super().__init__()
        self.encoder = TransformerEncoder(config)
        self.head = nn.Linear(config["hidden_size"], classes)

    def forward(self, ids):
        return self.head(self.encoder(ids))


def generate(fixtures: pathlib.Path) -> dict:
    out_dir = fixtures / "training"
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(1500)
    model = TokenClassifier(CONFIG, CONFIG["vocab_size"])
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    arrays = {f"init.{k}": v.detach().numpy().copy() for k, v in model.state_dict().items()}
    # Four batches, cycled: the loss falls as the model learns them.
    ids = torch.randint(0, CONFIG["vocab_size"], (4, BATCH, TOKENS)).repeat(STEPS // 4, 1, 1)
    labels = torch.flip(ids, dims=[2])
    optimizer = torch.optim.AdamW(model.parameters(), foreach=False, **OPTIMIZER)
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad()
        logits = model(ids[step])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[step].reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    arrays.update({f"final.{k}": v.detach().numpy().copy() for k, v in model.state_dict().items()})
    arrays["ids"] = ids.numpy().astype(np.int64)
    arrays["labels"] = labels.numpy().astype(np.int64)
    arrays["losses"] = np.array(losses, dtype=np.float64)
    np.savez(out_dir / "adamw_20_steps.npz", **arrays)
    meta = {"config": CONFIG, "steps": STEPS, "batch": BATCH, "tokens": TOKENS, "norm": "pre",
            "optimizer": {"lr": OPTIMIZER["lr"], "beta1": 0.9, "beta2": 0.999, "eps": OPTIMIZER["eps"],
                          "weight_decay": OPTIMIZER["weight_decay"]},
            "first_loss": losses[0], "last_loss": losses[-1]}
    (out_dir / "cases.json").write_text(json.dumps({"adamw_20_steps": meta}, indent=2) + "\n")
    return {"cases": 1, "folder": "training"}
