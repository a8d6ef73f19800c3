"""Lesson 11's exercise: cross-entropy's backward and torch.optim.AdamW's step, from torch."""
import torch
import torch.nn.functional as F

from generator.exercises import save

LESSON = "train"


def generate(out):
    files = []
    # F.cross_entropy(logits.reshape(-1, C), labels.reshape(-1)), the mean over the labels that are
    # not -100 (ignore_index); autograd's dL/dlogits. Labels are saved as float (whole numbers).
    cases = [("b2_t3_c5", 1, (2, 3, 5), [[0, 4, 2], [1, 1, 3]]),
             ("b1_t4_c3_ignored", 2, (1, 4, 3), [[-100, 2, -100, 0]]),
             ("b3_t2_c7", 3, (3, 2, 7), [[6, 0], [3, 3], [5, 1]])]
    for case, seed, shape, labels in cases:
        torch.manual_seed(seed)
        logits = (torch.randn(*shape) * 2.0).requires_grad_(True)
        target = torch.tensor(labels)
        loss = F.cross_entropy(logits.reshape(-1, shape[-1]), target.reshape(-1))
        loss.backward()
        files += [save(out.inputs, f"cross_entropy_{case}_logits", logits),
                  save(out.inputs, f"cross_entropy_{case}_labels", target.float()),
                  save(out.expected, f"cross_entropy_{case}_loss", loss.reshape(1)),
                  save(out.expected, f"cross_entropy_{case}_d_logits", logits.grad)]
    # torch.optim.AdamW on one parameter of 11 numbers, three steps with given gradients; the state
    # after each: the parameter, exp_avg and exp_avg_sq.
    for case, seed, settings in [("default", 4, dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)),
                                 ("strong", 5, dict(lr=5e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.3))]:
        torch.manual_seed(seed)
        p = torch.nn.Parameter(torch.randn(11))
        files.append(save(out.inputs, f"adamw_{case}_value", p))
        optimizer = torch.optim.AdamW([p], foreach=False, **settings)
        for step in (1, 2, 3):
            grad = torch.randn(11) * (10.0 if step == 2 else 1.0)
            files.append(save(out.inputs, f"adamw_{case}_grad{step}", grad))
            p.grad = grad.clone()
            optimizer.step()
            state = optimizer.state[p]
            files += [save(out.expected, f"adamw_{case}_value{step}", p),
                      save(out.expected, f"adamw_{case}_first{step}", state["exp_avg"]),
                      save(out.expected, f"adamw_{case}_second{step}", state["exp_avg_sq"])]
    return files
