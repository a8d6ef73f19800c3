#!/usr/bin/python3
"""The logit lens computed by PyTorch: writes data/fixtures/logit-lens/.

Loads the tiny random GPT-2 folder data/fixtures/gpt2/d21_lm into the PyTorch reference of
GPT2LMHeadModel (data/generator/gpt2.py) and runs it on the first TOKENS ids of
data/fixtures/gpt2/inputs/sentence with output_hidden_states. The lens of row l < L is
lm_head(ln_f(hidden_states[l])) (the embeddings, then each block's output); row L is the model's
own logits (transformers' hidden_states[L] is ln_f'd already). Writes lens_logits.npy (R,T,V),
log_normalizer.npy (R,T) = logsumexp over V, input_ids.npy (1,T) and command.json.
tests/core/logit_lens_test.cpp holds attn's lens to them.

    /usr/bin/python3 data/make_logit_lens_fixture.py
"""
import json
import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generator.gpt2 import GPT2LMHeadModel, make_config  # noqa: E402
from generator.weights_files import _read_safetensors  # noqa: E402

FOLDER = HERE / "fixtures" / "gpt2" / "d21_lm"
IDS = HERE / "fixtures" / "gpt2" / "inputs" / "sentence" / "input_ids.npy"
TOKENS = 4  # (R,T,V) float32 = 3 x 4 x 297 x 4 bytes: the fixture stays small


def main():
    torch.set_num_threads(1)
    config = json.loads((FOLDER / "config.json").read_text())
    reference = make_config(n_embd=config["n_embd"], n_head=config["n_head"], n_layer=config["n_layer"],
                            vocab_size=config["vocab_size"], n_positions=config["n_positions"],
                            n_inner=config.get("n_inner"), layer_norm_epsilon=config["layer_norm_epsilon"])
    model = GPT2LMHeadModel(reference).eval()
    state = {k: torch.from_numpy(np.array(v)) for k, v in
             _read_safetensors((FOLDER / "model.safetensors").read_bytes()).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing != ["lm_head.weight"] or unexpected:
        sys.exit(f"the folder does not fit GPT2LMHeadModel: missing {missing}, unexpected {unexpected}")
    ids = torch.from_numpy(np.load(IDS)[:, :TOKENS].astype(np.int64))
    with torch.no_grad():
        out = model(ids, output_hidden_states=True)
        hidden = out["hidden_states"]  # L + 1: the embeddings, each block's output, ln_f of the last
        layers = len(hidden) - 1
        rows = [model.lm_head(model.transformer.ln_f(hidden[l]))[0] for l in range(layers)]
        rows.append(out["logits"][0])
        lens = torch.stack(rows)  # (R,T,V)
        normalizer = torch.logsumexp(lens.double(), dim=-1).float()  # (R,T)
    target = HERE / "fixtures" / "logit-lens"
    target.mkdir(parents=True, exist_ok=True)
    np.save(target / "lens_logits.npy", lens.numpy().astype(np.float32))
    np.save(target / "log_normalizer.npy", normalizer.numpy())
    np.save(target / "input_ids.npy", ids.numpy())
    (target / "command.json").write_text(json.dumps({
        "command": "/usr/bin/python3 data/make_logit_lens_fixture.py", "folder": "data/fixtures/gpt2/d21_lm",
        "torch": torch.__version__, "tokens": TOKENS, "shape": list(lens.shape)}, indent=2) + "\n")
    print(f"wrote {target}: lens {tuple(lens.shape)}")


if __name__ == "__main__":
    main()
