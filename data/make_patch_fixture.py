#!/usr/bin/python3
"""Activation patching and direct logit attribution in PyTorch: writes data/fixtures/patch/.

Loads the tiny random GPT-2 folder data/fixtures/gpt2/d21_lm (D 21, H 3, L 2, V 297; weights spread
so that attention is far from uniform) into the reference GPT2LMHeadModel (data/generator/gpt2.py),
runs a clean and a corrupt sequence of ids of the same length, and computes with
forward hooks what TransformerLens's patching functions compute:

  residual[l, p]  the logit difference logit(answer) - logit(wrong) at the last position of the
                  corrupt run with the clean run's residual stream entering block l put at position
                  p (get_act_patch_resid_pre);
  heads[l, h]     the same with head h of block l's output z_h (its slice of the heads' outputs
                  before c_proj) taken from the clean run at every position
                  (get_act_patch_attn_head_out_all_pos);
  dla             each part's direct share of the clean logit difference through ln_f with the
                  clean run's scale frozen (cache.apply_ln_to_stack): the embeddings, each head,
                  each MLP, and the biases (every c_proj's and ln_f's).

tests/core/interp_test.cpp holds core/interp.cpp to cases.json.

    /usr/bin/python3 data/make_patch_fixture.py
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

FOLDER = "gpt2/d21_lm"
CLEAN = [40, 71, 11, 203, 99, 40, 71, 150]
CORRUPT = [40, 71, 133, 203, 99, 40, 71, 150]  # position 2 differs


def load(folder):
    config = json.loads((folder / "config.json").read_text())
    reference = make_config(n_embd=config["n_embd"], n_head=config["n_head"], n_layer=config["n_layer"],
                            vocab_size=config["vocab_size"], n_positions=config["n_positions"],
                            n_inner=config["n_inner"], layer_norm_epsilon=config["layer_norm_epsilon"])
    model = GPT2LMHeadModel(reference).eval()
    state = {k: torch.from_numpy(np.array(v)) for k, v in
             _read_safetensors((folder / "model.safetensors").read_bytes()).items()}
    model.load_state_dict(state, strict=False)
    return model


def run(model, ids, resid=None, head=None):
    """The last position's logits; resid = (layer, position, values (D)); head = (layer, h, values (T,hs))."""
    blocks = model.transformer.h
    hooks = []
    if resid is not None:
        layer, position, values = resid

        def pre(module, args):
            x = args[0].clone()
            x[:, position] = values
            return (x,) + args[1:]
        hooks.append(blocks[layer].register_forward_pre_hook(pre))
    if head is not None:
        layer, h, values = head
        hs = values.shape[-1]

        def pre_proj(module, args):
            z = args[0].clone()
            z[:, :, h * hs:(h + 1) * hs] = values
            return (z,)
        hooks.append(blocks[layer].attn.c_proj.register_forward_pre_hook(pre_proj))
    with torch.no_grad():
        logits = model(ids)["logits"][0, -1]
    for hook in hooks:
        hook.remove()
    return logits


def cache(model, ids):
    """resid_pre of every block and ln_f's input, z of every block, each block's MLP output."""
    blocks = model.transformer.h
    resid, z, mlp = [], [], []
    hooks = [b.register_forward_pre_hook(lambda m, a: resid.append(a[0][0].clone())) for b in blocks]
    hooks += [b.attn.c_proj.register_forward_pre_hook(lambda m, a: z.append(a[0][0].clone())) for b in blocks]
    hooks += [b.mlp.register_forward_hook(lambda m, a, out: mlp.append(out[0].clone())) for b in blocks]
    hooks.append(model.transformer.ln_f.register_forward_pre_hook(lambda m, a: resid.append(a[0][0].clone())))
    with torch.no_grad():
        logits = model(ids)["logits"][0, -1]
    for hook in hooks:
        hook.remove()
    return resid, z, mlp, logits


def main():
    model = load(HERE / "fixtures" / FOLDER)
    clean, corrupt = torch.tensor([CLEAN]), torch.tensor([CORRUPT])
    assert clean.shape == corrupt.shape
    resid, z, mlp, clean_logits = cache(model, clean)
    corrupt_logits = run(model, corrupt)
    answer = int(clean_logits.argmax())
    wrong = int(corrupt_logits.argmax())
    if wrong == answer:
        wrong = int(clean_logits.topk(2).indices[1])

    def diff(logits):
        return float(logits[answer] - logits[wrong])

    layers, heads = len(model.transformer.h), model.transformer.h[0].attn.num_heads
    tokens, hs = clean.shape[1], model.transformer.h[0].attn.head_dim
    residual = [[diff(run(model, corrupt, resid=(l, p, resid[l][p]))) for p in range(tokens)] for l in range(layers)]
    head_rows = [[diff(run(model, corrupt, head=(l, h, z[l][:, h * hs:(h + 1) * hs]))) for h in range(heads)]
                 for l in range(layers)]

    # Direct logit attribution at the last position, ln_f's scale frozen.
    ln_f = model.transformer.ln_f
    x = resid[layers][-1]
    scale = 1.0 / torch.sqrt(x.var(unbiased=False) + ln_f.eps)
    u = model.lm_head.weight[answer] - model.lm_head.weight[wrong]

    def share(part):
        return float(((part - part.mean()) * scale * ln_f.weight) @ u)

    dla_heads = []
    biases = float(ln_f.bias @ u)
    mlps = []
    for l, block in enumerate(model.transformer.h):
        w = block.attn.c_proj.weight  # Conv1D: (in, out)
        dla_heads.append([share(z[l][-1, h * hs:(h + 1) * hs] @ w[h * hs:(h + 1) * hs]) for h in range(heads)])
        biases += share(block.attn.c_proj.bias)
        mlps.append(share(mlp[l][-1]))
    embeddings = share(resid[0][-1])
    total = embeddings + biases + sum(mlps) + sum(map(sum, dla_heads))

    out = HERE / "fixtures" / "patch"
    out.mkdir(parents=True, exist_ok=True)
    cases = {
        "source": "data/make_patch_fixture.py", "torch": torch.__version__, "folder": FOLDER,
        "clean_ids": clean[0].tolist(), "corrupt_ids": corrupt[0].tolist(),
        "answer": answer, "wrong": wrong,
        "clean_difference": diff(clean_logits), "corrupt_difference": diff(corrupt_logits),
        "residual": residual, "heads": head_rows,
        "dla": {"embeddings": embeddings, "heads": dla_heads, "mlps": mlps, "biases": biases, "total": total},
    }
    (out / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    print(f"wrote {out / 'cases.json'}: answer {answer}, wrong {wrong}, clean {diff(clean_logits):.4f}, "
          f"corrupt {diff(corrupt_logits):.4f}, DLA total {total:.4f}")


if __name__ == "__main__":
    main()
