"""Lesson 05's exercise: splitting and merging heads, and multi-head attention's forward in the
notebooks' four variants, every step checked against the notebooks' classes (bugs fixed) and the
fused one against torch.nn.MultiheadAttention."""
import math

import torch
from torch import nn

from generator.attention import BookMultiHeadAttention, FusedMultiHeadAttention, SplitMultiHeadAttention
from generator.exercise_attention import additive_mask
from generator.exercises import save

LESSON = "multi-head"


def split(y, heads):
    """(B, T, H*hs) -> (B, H, T, hs)"""
    b, t, _ = y.shape
    return y.view(b, t, heads, -1).transpose(1, 2)


def merge(y):
    """(B, H, T, hs) -> (B, T, H*hs)"""
    b, h, t, hs = y.shape
    return y.transpose(1, 2).reshape(b, t, h * hs)


def attend(queries, keys, values, output_linear, mask):
    """Every step of multi-head attention from the (B, H, T, hs) queries, keys and values."""
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])  # hs, not D
    if mask is not None:
        scores = scores + mask[:, None]
    weights = torch.softmax(scores, dim=-1)
    concatenated = merge(weights @ values)
    return {"queries": queries, "keys": keys, "values": values, "scores": scores, "weights": weights,
            "concatenated": concatenated, "output": output_linear(concatenated)}


def save_linear(out, files, case, name, layer):
    files.append(save(out.inputs, f"{case}_{name}_weight", layer.weight))
    if layer.bias is not None:
        files.append(save(out.inputs, f"{case}_{name}_bias", layer.bias))


def save_case(out, files, case, x, mask, steps, model, ones_mask):
    """Saves x and the mask (inputs) and the steps (expected), after checking the output against the
    notebook class."""
    with torch.no_grad():
        torch.testing.assert_close(steps["output"], model(x, ones_mask))
    files.append(save(out.inputs, f"{case}_x", x))
    if mask is not None:
        files.append(save(out.inputs, f"{case}_mask", mask))
    files += [save(out.expected, f"{case}_{name}", tensor) for name, tensor in steps.items()]


@torch.no_grad()
def generate(out):
    files = []
    # split_heads and merge_heads: torch's view + transpose, and back.
    for case, seed, shape, heads in [("split_b2_t5_d12_h3", 1, (2, 5, 12), 3), ("split_b1_t1_d6_h2", 2, (1, 1, 6), 2)]:
        torch.manual_seed(seed)
        x = torch.randn(*shape)
        files += [save(out.inputs, f"{case}_x", x), save(out.expected, f"{case}_heads", split(x, heads))]
    torch.manual_seed(3)
    y = torch.randn(2, 3, 4, 5)
    files += [save(out.inputs, "merge_b2_h3_t4_hs5_y", y), save(out.expected, "merge_b2_h3_t4_hs5_merged", merge(y))]

    # (case, seed, variant, (B, T, D), H, causal, lengths): hs = D / H != D except for wide.
    cases = [("fused_b2_t5_d12_h3", 4, "fused", (2, 5, 12), 3, False, None),
             ("narrow_b1_t4_d6_h2", 5, "narrow", (1, 4, 6), 2, False, None),
             ("wide_b2_t3_d5_h3", 6, "wide", (2, 3, 5), 3, False, None),
             ("book_b2_t4_d10_h2", 7, "book", (2, 4, 10), 2, False, None),
             ("fused_masked_b2_t5_d8_h2", 8, "fused", (2, 5, 8), 2, True, [5, 3]),
             ("fused_b3_t1_d8_h4", 9, "fused", (3, 1, 8), 4, False, None),
             ("fused_b1_t7_d8_h4", 10, "fused", (1, 7, 8), 4, False, None),
             ("book_padded_b2_t5_d6_h3", 11, "book", (2, 5, 6), 3, False, [2, 5])]
    for case, seed, variant, (b, t, d), heads, causal, lengths in cases:
        torch.manual_seed(seed)
        x = torch.randn(b, t, d)
        mask = additive_mask(b, t, causal, lengths) if causal or lengths else None
        ones_mask = None if mask is None else (mask == 0).float()  # the notebooks' 1 = look, 0 = hide
        if variant == "fused":
            # PyTorch's own layer: in_proj_weight stacks W_Q, W_K, W_V; out_proj is W_O.
            torch_layer = nn.MultiheadAttention(d, heads, bias=False, batch_first=True).eval()
            model = FusedMultiHeadAttention(d, heads).eval()
            w_q, w_k, w_v = torch_layer.in_proj_weight.chunk(3)
            model.load_state_dict({"W_Q.weight": w_q, "W_K.weight": w_k, "W_V.weight": w_v,
                                   "W_O.weight": torch_layer.out_proj.weight})
            steps = attend(split(model.W_Q(x), heads), split(model.W_K(x), heads), split(model.W_V(x), heads),
                           model.W_O, mask)
            with torch.enable_grad():  # the native fast path wants in_proj biases
                output, weights = torch_layer(x, x, x, need_weights=True, average_attn_weights=False,
                                              attn_mask=None if mask is None else mask.repeat_interleave(heads, 0))
            output, weights = output.detach(), weights.detach()
            torch.testing.assert_close(steps["weights"], weights)
            steps["output"] = output
            for name in ("W_Q", "W_K", "W_V", "W_O"):
                save_linear(out, files, case, name, getattr(model, name))
        elif variant in ("narrow", "wide"):
            model = SplitMultiHeadAttention(d, heads, wide=variant == "wide").eval()
            steps = attend(split(model.toqueries(x), heads), split(model.tokeys(x), heads),
                           split(model.tovalues(x), heads), model.unifyheads, mask)
            for name in ("toqueries", "tokeys", "tovalues", "unifyheads"):
                save_linear(out, files, case, name, getattr(model, name))
        else:
            model = BookMultiHeadAttention(d, heads).eval()
            per_head = [torch.stack([head.q(x), head.k(x), head.v(x)]) for head in model.heads]  # (3,B,T,hs) each
            queries, keys, values = torch.stack(per_head, dim=2)  # (B,H,T,hs) each
            steps = attend(queries, keys, values, model.output_linear, mask)
            for h, head in enumerate(model.heads):
                for name in ("q", "k", "v"):
                    save_linear(out, files, case, f"head{h}_{name}", getattr(head, name))
            save_linear(out, files, case, "output_linear", model.output_linear)
        save_case(out, files, case, x, mask, steps, model, ones_mask)
        if case == "fused_b2_t5_d12_h3":
            # x's tokens in order 4 2 0 3 1 give the output's rows, and the weights' rows and
            # columns, in that order.
            order = [4, 2, 0, 3, 1]
            files += [save(out.expected, f"{case}_shuffled_output", steps["output"][:, order, :]),
                      save(out.expected, f"{case}_shuffled_weights", steps["weights"][:, :, order][:, :, :, order])]

    # A finite float mask (a bias per query and key), added after the scaling, against
    # nn.MultiheadAttention's float attn_mask: the notebook classes take 0/1 masks only.
    case, (b, t, d), heads = "fused_float_mask_b2_t4_d6_h2", (2, 4, 6), 2
    torch.manual_seed(12)
    x, mask = torch.randn(b, t, d), 2 * torch.randn(b, t, t)
    torch_layer = nn.MultiheadAttention(d, heads, bias=False, batch_first=True).eval()
    model = FusedMultiHeadAttention(d, heads).eval()
    w_q, w_k, w_v = torch_layer.in_proj_weight.chunk(3)
    model.load_state_dict({"W_Q.weight": w_q, "W_K.weight": w_k, "W_V.weight": w_v,
                           "W_O.weight": torch_layer.out_proj.weight})
    steps = attend(split(model.W_Q(x), heads), split(model.W_K(x), heads), split(model.W_V(x), heads), model.W_O,
                   mask)
    with torch.enable_grad():
        output, weights = torch_layer(x, x, x, need_weights=True, average_attn_weights=False,
                                      attn_mask=mask.repeat_interleave(heads, 0))
    torch.testing.assert_close(steps["weights"], weights.detach())
    torch.testing.assert_close(steps["output"], output.detach())
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        save_linear(out, files, case, name, getattr(model, name))
    files += [save(out.inputs, f"{case}_x", x), save(out.inputs, f"{case}_mask", mask)]
    files += [save(out.expected, f"{case}_{name}", tensor) for name, tensor in steps.items()]
    return files
