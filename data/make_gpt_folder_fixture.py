#!/usr/bin/python3
"""A GPT folder attn wrote, read by PyTorch: writes data/fixtures/gpt-folder/.

Runs `attn train --model gpt` (COMMAND below) to write a Hugging Face GPT-2 folder, then loads it
into the PyTorch reference of GPT2LMHeadModel (data/generator/gpt2.py) from its config.json and
model.safetensors alone (the only key the file lacks is the lm_head tied to wte), encodes TEXT
with the reference's BPE (data/generator/gpt2.py's encode) from the folder's vocab.json and
merges.txt, and writes the folder's Hugging Face files with the reference's input_ids.npy and
logits.npy. tests/cli/gpt_train_cli_test.cpp holds attn's reading of the folder to those logits,
and a folder attn writes today to the same files, keys and shapes.

    /usr/bin/python3 data/make_gpt_folder_fixture.py [--attn build/attn]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generator.gpt2 import GPT2LMHeadModel, encode, make_config  # noqa: E402
from generator.weights_files import _read_safetensors  # noqa: E402

COMMAND = ["train", "--model", "gpt", "--layers", "2", "--d-model", "16", "--heads", "2", "--block", "16",
           "--steps", "40", "--eval-interval", "20", "--seed", "3", "--threads", "1"]
TEXT = "Call me Ishmael."  # 16 characters: the block
FILES = ["config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer_config.json"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attn", default=str(HERE.parent / "build" / "attn"))
    args = parser.parse_args()
    out = HERE / "fixtures" / "gpt-folder"
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(scratch) / "gpt"
        subprocess.run([args.attn] + COMMAND + ["--save-checkpoint", str(folder)], check=True,
                       stdout=subprocess.DEVNULL)
        config = json.loads((folder / "config.json").read_text())
        reference = make_config(n_embd=config["n_embd"], n_head=config["n_head"], n_layer=config["n_layer"],
                                vocab_size=config["vocab_size"], n_positions=config["n_positions"],
                                n_inner=config["n_inner"], layer_norm_epsilon=config["layer_norm_epsilon"])
        model = GPT2LMHeadModel(reference).eval()
        state = {k: torch.from_numpy(np.array(v)) for k, v in
                 _read_safetensors((folder / "model.safetensors").read_bytes()).items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing != ["lm_head.weight"] or unexpected:
            sys.exit(f"the folder does not fit GPT2LMHeadModel: missing {missing}, unexpected {unexpected}")
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        merges = [tuple(line.split(" ")) for line in (folder / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]
                  if line]
        ids = torch.tensor([encode(TEXT, vocab, merges)])
        with torch.no_grad():
            logits = model(ids)["logits"].numpy()
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for name in FILES:
            shutil.copy(folder / name, out / name)
    np.save(out / "input_ids.npy", ids.numpy())
    np.save(out / "logits.npy", logits)
    (out / "command.json").write_text(json.dumps({"command": ["attn"] + COMMAND, "text": TEXT}, indent=2) + "\n")
    print(f"wrote {out}: {ids.shape[1]} tokens, logits {logits.shape}")


if __name__ == "__main__":
    main()
