"""Lesson 13's exercise: the target's mask (causal, and blind to padding) from the target's ids,
and one of seed 001's DecoderBlocks, pre-LN as the seed writes ResidualConnection, step by step.

Weights are saved one .npy per parameter, named <weights>.<state_dict key>. The norms' gamma and
beta are drawn (not 1 and 0), so that a norm used in another's place cannot pass.
"""
import torch

from generator.exercises import save
from generator.feed_forward import FeedForwardNeuralNetwork
from generator.transformer import SEED_FILL, DecoderBlock, MultiHeadAttention, randomise_norms

LESSON = "decoder"
PAD = 0


def target_keep(ids):
    """(B,T,T): the seed's (tgt != pad).unsqueeze(1) & tril(ones(T, T)), 1 where query i may look."""
    t = ids.shape[1]
    return ((ids != PAD)[:, None, :] & torch.tril(torch.ones(t, t, dtype=torch.bool))).float()


def generate(out):
    files = []
    torch.manual_seed(81)
    ids = torch.randint(1, 9, (2, 5))
    ids[1, 3:] = PAD
    files += [save(out.inputs, "mask_b2_t5_ids", ids.float()),
              save(out.expected, "mask_b2_t5_keep", target_keep(ids))]
    torch.manual_seed(82)
    one = torch.randint(1, 9, (1, 1))
    files += [save(out.inputs, "mask_b1_t1_ids", one.float()),
              save(out.expected, "mask_b1_t1_keep", target_keep(one))]
    # One block per (D, H, F); each case: x (B,T,D), memory (B,S,D), target and source lengths.
    for weights, seed, (d, h, f), cases in [
            ("block_d8_h2_f16", 83, (8, 2, 16), [("b2_t4_s6", (2, 4, 6), [4, 3], [6, 2])]),
            ("block_d12_h3_f24", 84, (12, 3, 24), [("b1_t5_s3", (1, 5, 3), [5], [3])]),
            ("block_d6_h1_f8", 85, (6, 1, 8), [("b3_t1_s1", (3, 1, 1), [1, 1, 1], [1, 1, 1]),
                                              ("b2_t6_s5", (2, 6, 5), [6, 2], [2, 5])])]:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        block = DecoderBlock(MultiHeadAttention(d, h, 0.0, SEED_FILL), MultiHeadAttention(d, h, 0.0, SEED_FILL),
                             FeedForwardNeuralNetwork(d, f, 0.0), 0.0, "pre")
        randomise_norms(block, gen)
        block.eval()
        files += [save(out.inputs, f"{weights}.{key}", value) for key, value in block.state_dict().items()]
        for case, (b, t, s), target_lengths, source_lengths in cases:
            x = torch.randn(b, t, d)
            memory = torch.randn(b, s, d)
            target = torch.randint(1, 9, (b, t))
            source = torch.zeros(b, s)
            for i, n in enumerate(target_lengths):
                target[i, n:] = PAD
            for i, n in enumerate(source_lengths):
                source[i, :n] = 1.0
            tgt = target_keep(target)
            prefix = f"{weights}_{case}"
            files += [save(out.inputs, f"{prefix}_x", x), save(out.inputs, f"{prefix}_memory", memory),
                      save(out.inputs, f"{prefix}_target_keep", tgt),
                      save(out.inputs, f"{prefix}_source_keep", source)]
            rc = block.residual_connection
            with torch.no_grad():
                norm_1 = rc[0].norm(x)
                self_attention = block.multi_head_attention(norm_1, norm_1, norm_1, tgt[:, None])
                residual_1 = x + self_attention
                norm_2 = rc[1].norm(residual_1)
                cross_attention = block.cross_attention(norm_2, memory, memory, source[:, None, None, :])
                residual_2 = residual_1 + cross_attention
                norm_3 = rc[2].norm(residual_2)
                feed_forward = block.feed_forward_neural_network(norm_3)
                output = block(x, memory, source[:, None, None, :], tgt[:, None])
                assert torch.equal(output, residual_2 + feed_forward)
                steps = dict(norm_1=norm_1, self_attention=self_attention, residual_1=residual_1, norm_2=norm_2,
                             cross_attention=cross_attention, residual_2=residual_2, norm_3=norm_3,
                             feed_forward=feed_forward, output=output)
                files += [save(out.expected, f"{prefix}_{k}", v) for k, v in steps.items()]
            if t > 1:
                # the last token's x replaced: no earlier row of the output may move
                later = x.clone()
                later[:, -1] = 3.0 * torch.randn(b, d)
                files.append(save(out.inputs, f"{prefix}_x_last_changed", later))
    return files
