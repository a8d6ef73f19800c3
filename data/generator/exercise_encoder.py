"""Lesson 09's exercise: the book's Embeddings and TransformerEncoderLayer (pre-LN and post-LN).

Weights are saved one .npy per parameter, named <weights>.<state_dict key>, so the test can load
them into attn's structs by key. The LayerNorms get random scales and shifts (not PyTorch's 1
and 0) so that swapping layer_norm_1 and layer_norm_2 cannot pass.
"""
import torch
from torch import nn

from generator.encoder import Embeddings, TransformerEncoderLayer
from generator.exercises import save

LESSON = "encoder"

SHUFFLE = [3, 0, 6, 1, 5, 2, 4]  # the order of the tokens in the permutation test


def randomise_norms(model):
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.3)


def save_weights(out, name, model):
    return [save(out.inputs, f"{name}.{key}", value) for key, value in model.state_dict().items()]


def generate(out):
    files = []
    # Embeddings: V = 11, P = 9, D = 10; T = P uses every position, T = 1 only the first.
    torch.manual_seed(31)
    embeddings = Embeddings(dict(vocab_size=11, max_position_embeddings=9, hidden_size=10)).eval()
    randomise_norms(embeddings)
    files += save_weights(out, "embeddings_v11_p9_d10", embeddings)
    for case, (b, t) in [("b2_t5", (2, 5)), ("b1_t9", (1, 9)), ("b3_t1", (3, 1))]:
        ids = torch.randint(0, 11, (b, t))
        with torch.no_grad():
            token = embeddings.token_embeddings(ids)
            position = embeddings.position_embeddings(torch.arange(t).unsqueeze(0))
            output = embeddings(ids)
        files += [save(out.inputs, f"embeddings_{case}_ids", ids.float()),
                  save(out.expected, f"embeddings_{case}_token", token),
                  save(out.expected, f"embeddings_{case}_position", position),
                  save(out.expected, f"embeddings_{case}_sum", token + position),
                  save(out.expected, f"embeddings_{case}_output", output)]
    # One layer's weights per config; pre-LN and post-LN run the same weights on the same inputs.
    for weights, seed, (d, h, f), cases in [("layer_d12_h3_f48", 41, (12, 3, 48), [("b1_t5", (1, 5))]),
                                            ("layer_d10_h2_f24", 42, (10, 2, 24), [("b2_t7", (2, 7))]),
                                            ("layer_d6_h2_f8", 43, (6, 2, 8), [("b3_t1", (3, 1)), ("b1_t6", (1, 6))])]:
        torch.manual_seed(seed)
        config = dict(hidden_size=d, num_attention_heads=h, intermediate_size=f)
        pre = TransformerEncoderLayer(config, post_ln=False).eval()
        randomise_norms(pre)
        post = TransformerEncoderLayer(config, post_ln=True).eval()
        post.load_state_dict(pre.state_dict())
        files += save_weights(out, weights, pre)
        for case, (b, t) in cases:
            x = torch.randn(b, t, d)
            files.append(save(out.inputs, f"{weights}_{case}_x", x))
            with torch.no_grad():
                norm_1 = pre.layer_norm_1(x)
                attention = pre.attention(norm_1)
                residual_1 = x + attention
                norm_2 = pre.layer_norm_2(residual_1)
                feed_forward = pre.feed_forward(norm_2)
                steps = dict(norm_1=norm_1, attention=attention, residual_1=residual_1, norm_2=norm_2,
                             feed_forward=feed_forward, output=pre(x))
                files += [save(out.expected, f"{weights}_{case}_pre_{k}", v) for k, v in steps.items()]
                if case == "b2_t7":
                    # x's tokens in order 3 0 6 1 5 2 4 give the output's rows in that order.
                    files.append(save(out.expected, f"{weights}_{case}_pre_shuffled_output", steps["output"][:, SHUFFLE]))
                attention = post.attention(x)
                norm_1 = post.layer_norm_1(x + attention)
                feed_forward = post.feed_forward(norm_1)
                norm_2 = post.layer_norm_2(norm_1 + feed_forward)
                steps = dict(norm_1=norm_1, attention=attention, residual_1=norm_1, norm_2=norm_2,
                             feed_forward=feed_forward, output=post(x))
                files += [save(out.expected, f"{weights}_{case}_post_{k}", v) for k, v in steps.items()]
                if case == "b2_t7":
                    files.append(save(out.expected, f"{weights}_{case}_post_shuffled_output", steps["output"][:, SHUFFLE]))
    return files
