"""Fixtures for head ablation: multi-head attention with chosen heads' outputs zeroed, their slices
of the concatenation, before the output projection (Michel et al. 2019's head mask). Torch zeroes
them in a forward pre-hook on the output projection, so the layers are generator.attention's."""
import json
import pathlib

import numpy as np
import torch

from generator.attention import build, causal_and_padding_mask

# name, seed, (B, T, D), H, variant, causal, the heads zeroed
CASES = [
    ("book_b2_t5_d12_h3_ablate_1", 301, (2, 5, 12), 3, "book", False, [1]),
    ("book_b1_t7_d8_h2_causal_ablate_0", 302, (1, 7, 8), 2, "book", True, [0]),
    ("fused_b2_t5_d12_h3_ablate_0_2", 303, (2, 5, 12), 3, "fused", False, [0, 2]),
    ("narrow_b2_t5_k12_h3_causal_ablate_2", 304, (2, 5, 12), 3, "narrow", True, [2]),
    ("wide_b1_t5_k6_h2_ablate_1", 305, (1, 5, 6), 2, "wide", False, [1]),
]


def output_projection(model, variant):
    return {"book": lambda: model.output_linear, "fused": lambda: model.W_O}.get(
        variant, lambda: model.unifyheads)()


def generate(out_dir: pathlib.Path) -> dict:
    folder = out_dir / "multi-head" / "ablation"
    folder.mkdir(parents=True, exist_ok=True)
    cases = []
    for name, seed, shape, heads, variant, causal, ablated in CASES:
        torch.manual_seed(seed)
        b, t, d = shape
        model = build(variant, d, heads).eval()
        x = torch.randn(b, t, d)
        mask = causal_and_padding_mask(b, t, causal, None) if causal else None

        def zero_heads(_module, inputs):
            (concatenated,) = inputs  # (B,T,H*hs)
            hs = concatenated.shape[-1] // heads
            concatenated = concatenated.clone()
            for h in ablated:
                concatenated[..., h * hs:(h + 1) * hs] = 0
            return (concatenated,)

        with torch.no_grad():
            full = model(x, mask)
            hook = output_projection(model, variant).register_forward_pre_hook(zero_heads)
            y = model(x, mask)
            hook.remove()
        np.savez(folder / f"{name}_weights.npz", **{k: v.numpy() for k, v in model.state_dict().items()})
        np.save(folder / f"{name}_input.npy", x.numpy())
        np.save(folder / f"{name}_output.npy", y.numpy())
        cases.append({"name": name, "seed": seed, "shape": list(shape), "variant": variant, "heads": heads,
                      "causal": causal, "ablated": ablated, "weights": f"{name}_weights.npz",
                      "input": f"{name}_input.npy", "output": f"{name}_output.npy",
                      "max_change": float((y - full).abs().max())})
    (folder / "cases.json").write_text(json.dumps(cases, indent=2) + "\n")
    return {"multi-head/ablation": len(cases)}


if __name__ == "__main__":
    print(generate(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
