#!/usr/bin/python3
"""Checks the shipped checkpoints (data/checkpoints/) against PyTorch.

Each checkpoint attn train wrote must load into the book's PyTorch classes, a TransformerEncoder as
`encoder` plus an nn.Linear as `head`, with load_state_dict(strict=True); PyTorch must then get its
task right on random sequences, and give the same outputs as `attn encoder --checkpoint`.

    /usr/bin/python3 data/check_checkpoints.py [build/attn]

Needs Debian's python3-torch and python3-numpy, and a built attn. Prints one line per checkpoint and
exits 1 if any check fails.
"""
import json
import pathlib
import random
import struct
import subprocess
import sys

import numpy as np
import torch
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from generator.encoder import TransformerEncoder  # noqa: E402


def read_safetensors(path):
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for key, entry in header.items():
        begin, end = entry["data_offsets"]
        assert entry["dtype"] == "F32", (key, entry["dtype"])
        array = np.frombuffer(data[8 + size + begin:8 + size + end], dtype="<f4").reshape(entry["shape"])
        tensors[key] = torch.from_numpy(array.copy())
    return tensors, metadata


class TokenClassifier(nn.Module):
    def __init__(self, config, classes, post_ln):
        super().__init__()
        self.encoder = TransformerEncoder(config, post_ln=post_ln)
        self.head = nn.Linear(config["hidden_size"], classes)

    def forward(self, ids):
        return self.head(self.encoder(ids))


def labels(task, vocab, ids):
    t = len(ids)
    if task == "reverse":
        return ids[::-1]
    if task == "sort":
        return sorted(ids)
    if task == "histogram":
        return [ids.count(i) for i in ids]
    return [vocab] + ids[:-1]  # previous-token: class V is "-"


def label_text(task, vocab, label):
    if task == "histogram":
        return str(label)
    if task == "previous-token" and label == vocab:
        return "-"
    return chr(ord("a") + label)


def main():
    attn = sys.argv[1] if len(sys.argv) > 1 else "build/attn"
    torch.set_num_threads(1)
    failed = False
    for path in sorted((ROOT / "checkpoints").glob("*.safetensors")):
        tensors, metadata = read_safetensors(path)
        m = json.loads(metadata["attn_model"])
        config = dict(hidden_size=m["d_model"], num_attention_heads=m["heads"], intermediate_size=m["d_ff"],
                      num_hidden_layers=m["layers"], vocab_size=m["vocab"], max_position_embeddings=m["tokens"])
        model = TokenClassifier(config, m["classes"], m["norm"] == "post").eval()
        model.load_state_dict(tensors, strict=True)
        rng = random.Random(0)
        sequences = [[rng.randrange(m["vocab"]) for _ in range(m["tokens"])] for _ in range(512)]
        with torch.no_grad():
            predicted = model(torch.tensor(sequences)).argmax(-1).tolist()
        right = sum(p == l for seq, pred in zip(sequences, predicted)
                    for p, l in zip(pred, labels(m["task"], m["vocab"], seq)))
        accuracy = right / (512 * m["tokens"])
        same = 0
        for seq, pred in zip(sequences[:10], predicted[:10]):
            text = "".join(chr(ord("a") + i) for i in seq)
            out = subprocess.run([attn, "encoder", "--checkpoint", str(path), "--text", text, "--format", "json"],
                                 capture_output=True, text=True, check=True)
            table = next(t for t in json.loads(out.stdout)["tables"] if t["title"].startswith("What the trained"))
            same += [row[2] for row in table["rows"]] == [label_text(m["task"], m["vocab"], p) for p in pred]
        ok = accuracy >= 0.99 and same == 10
        failed = failed or not ok
        print(f"{path.name}: strict load ok, torch {accuracy:.4f} of held-out tokens right, "
              f"attn's outputs equal torch's on {same} of 10 sequences{'' if ok else '  FAILED'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
