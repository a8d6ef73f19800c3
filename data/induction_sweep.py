#!/usr/bin/env python3
"""A PyTorch sweep for lesson 18: which task and sizes make a 2-layer attention-only GPT grow
induction heads, and how fast. Not used by attn's build or tests; run with Debian's python3-torch:

  /usr/bin/python3 data/induction_sweep.py --task anyskip --T 48 --minp 6 --maxp 16 --lr 3e-3 --tie 1

The model is attn's --attention-only GPT-2 (pre-LN blocks without MLPs, learned positions, the LM
head tied with --tie 1). Tasks (V random tokens, BOS = V, T tokens read, a segment of m tokens,
m from --minp to --maxp, repeated once):
  helper    attn train --task induction's layout: 2(n - m) random tokens, the segment, its copy;
  anywhere  the segment at a random start, its copy right after, random tokens around them;
  skip      helper's layout, the random tokens before the segment follow "the token two back
            predicts the next" (a fixed permutation) with probability --p;
  anyskip   anywhere's layout with skip's rule outside the segment and its copy (--half 1: the
            rule only after the first V/2 tokens; --ident 1: the permutation is the identity;
            --decay N: the rule's probability falls linearly to --floor by step N).
--sin S initialises (--freeze 1: fixes) the positions to S times the sinusoidal table; --tie 1
ties the LM head to the token table, as attn's GPT does.
Every --every steps it prints the copy's loss (the predictions an induction head can make) and each
head's induction score (the weight on the key after the earlier copy, t - m + 1) and previous-token
score; at the end, each head's weight on the keys around the earlier copy and its zero-ablation.
"""
import torch, math, time, sys, argparse
p = argparse.ArgumentParser()
p.add_argument('--V', type=int, default=52); p.add_argument('--T', type=int, default=32)
p.add_argument('--minp', type=int, default=8); p.add_argument('--maxp', type=int, default=16)
p.add_argument('--D', type=int, default=64)
p.add_argument('--H', type=int, default=4); p.add_argument('--lr', type=float, default=1e-3)
p.add_argument('--B', type=int, default=32); p.add_argument('--steps', type=int, default=3000)
p.add_argument('--wd', type=float, default=0.1); p.add_argument('--seed', type=int, default=0)
p.add_argument('--task', default='helper'); p.add_argument('--every', type=int, default=250)
p.add_argument('--copyloss', type=int, default=0); p.add_argument('--p', type=float, default=0.5); p.add_argument('--sin', type=float, default=0); p.add_argument('--freeze', type=int, default=0); p.add_argument('--ident', type=int, default=0); p.add_argument('--tie', type=int, default=0); p.add_argument('--half', type=int, default=0); p.add_argument('--decay', type=int, default=0); p.add_argument('--floor', type=float, default=0)
a = p.parse_args()
PEFF = [a.p]
torch.manual_seed(a.seed); torch.set_num_threads(1)
V, D, H, T = a.V, a.D, a.H, a.T
def batch(B, gen):
    ids = torch.randint(0, V, (B, T + 1), generator=gen)
    ids[:, 0] = V
    m = torch.randint(a.minp, a.maxp + 1, (B,), generator=gen)
    if a.task == 'helper':   # noise 2(n-m) then segment and copy to the end
        s = (T - 2 * m) + 1
    elif a.task == 'anywhere':   # segment at a random start, copy right after, noise after
        room = T + 1 - 2 * m - 1
        s = 1 + (torch.rand(B, generator=gen) * (room + 1)).long()
    elif a.task == 'skip':   # helper's layout, noise follows "two back predicts next" half the time
        s = (T - 2 * m) + 1
        perm = torch.randperm(V, generator=torch.Generator().manual_seed(7))
        keep = torch.rand(B, T + 1, generator=gen) < PEFF[0]
        for t in range(3, T + 1):
            ids[:, t] = torch.where(keep[:, t] & (t < s), perm[ids[:, t - 2].clamp(max=V - 1)], ids[:, t])
    elif a.task == 'anyskip':
        room = T + 1 - 2 * m - 1
        s = 1 + (torch.rand(B, generator=gen) * (room + 1)).long()
    pos = torch.arange(T + 1).unsqueeze(0)
    if a.task == 'anyskip':
        perm = torch.arange(V) if a.ident else torch.randperm(V, generator=torch.Generator().manual_seed(7))
        keep = torch.rand(B, T + 1, generator=gen) < PEFF[0]
        m1 = m.unsqueeze(1); s1 = s.unsqueeze(1)
        inseg = (pos >= s1) & (pos < s1 + 2 * m1)
        for t in range(3, T + 1):
            c = keep[:, t] & ~inseg[:, t]
            if a.half: c = c & (ids[:, t - 2] < V // 2)
            ids[:, t] = torch.where(c, perm[ids[:, t - 2].clamp(max=V - 1)], ids[:, t])
            # the copy is filled after, from the segment
        incopy0 = (pos >= s1 + m1) & (pos < s1 + 2 * m1)
        src0 = (pos - m1).clamp(min=0)
        ids = torch.where(incopy0, ids.gather(1, src0), ids)
        # re-apply the rule after the copy, since it reads two back
        for t in range(3, T + 1):
            c = keep[:, t] & ~inseg[:, t] & (pos[:, t] >= s + 2 * m)
            if a.half: c = c & (ids[:, t - 2] < V // 2)
            ids[:, t] = torch.where(c, perm[ids[:, t - 2].clamp(max=V - 1)], ids[:, t])
    incopy = (pos >= (s + m).unsqueeze(1)) & (pos < (s + 2 * m).unsqueeze(1))
    src = (pos - m.unsqueeze(1)).clamp(min=0)
    for _ in range(1):
        ids = torch.where(incopy, ids.gather(1, src), ids)
    x, y = ids[:, :-1], ids[:, 1:]
    # query t predicts y[t]=ids[t+1]; predictable when t+1 in copy and t in copy (t >= s+m)
    q = torch.arange(T).unsqueeze(0)
    pred = (q >= (s + m).unsqueeze(1)) & (q + 1 < (s + 2 * m).unsqueeze(1))
    return x, y, m, pred
class Block(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.ln = torch.nn.LayerNorm(D); s.qkv = torch.nn.Linear(D, 3 * D); s.o = torch.nn.Linear(D, D)
    def forward(s, x):
        B_, T_, _ = x.shape; h = s.ln(x)
        q, k, v = s.qkv(h).split(D, -1)
        f = lambda z: z.view(B_, T_, H, D // H).transpose(1, 2)
        q, k, v = f(q), f(k), f(v)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D // H)
        att = att.masked_fill(torch.triu(torch.ones(T_, T_, dtype=torch.bool), 1), float('-inf')).softmax(-1)
        s.att = att
        return x + s.o((att @ v).transpose(1, 2).reshape(B_, T_, D))
class M(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.wte = torch.nn.Embedding(V + 1, D); s.wpe = torch.nn.Embedding(T, D)
        s.blocks = torch.nn.ModuleList([Block(), Block()]); s.lnf = torch.nn.LayerNorm(D); s.head = torch.nn.Linear(D, V + 1, bias=False)
        for p_ in s.parameters():
            if p_.dim() >= 2: torch.nn.init.normal_(p_, 0, 0.02)
        if a.tie: s.head.weight = s.wte.weight
    def forward(s, x):
        h = s.wte(x) + s.wpe(torch.arange(x.shape[1]))
        for b in s.blocks: h = b(h)
        return s.head(s.lnf(h))
m = M()
if a.sin:
    with torch.no_grad():
        pos = torch.arange(T).float().unsqueeze(1); i = torch.arange(0, D, 2).float()
        ang = pos / (10000 ** (i / D))
        pe = torch.zeros(T, D); pe[:, 0::2] = torch.sin(ang); pe[:, 1::2] = torch.cos(ang)
        m.wpe.weight.copy_(pe * a.sin)
    if a.freeze: m.wpe.weight.requires_grad_(False)
opt = torch.optim.AdamW([q for q in m.parameters() if q.requires_grad], lr=a.lr, betas=(0.9, 0.99), weight_decay=a.wd)
ex, ey, em, ep = batch(256, torch.Generator().manual_seed(999))
gen = torch.Generator().manual_seed(a.seed)
bi = torch.arange(256).view(-1, 1, 1); tq = torch.arange(T)
def evaluate():
    with torch.no_grad():
        lp = torch.log_softmax(m(ex), -1)
        nll = -lp.gather(-1, ey.unsqueeze(-1)).squeeze(-1)
        rl = nll[ep].mean().item()
        out = []
        for b in m.blocks:
            att = b.att  # B H T T
            tgt = (tq.unsqueeze(0) - em.unsqueeze(1) + 1).clamp(min=0)  # B T
            w = att.gather(3, tgt.view(256, 1, T, 1).expand(256, H, T, 1)).squeeze(-1)  # B H T
            ind = (w * ep.unsqueeze(1)).sum((0, 2)) / ep.sum()
            prv = torch.diagonal(att, -1, 2, 3).mean((0, 2))
            out.append((ind, prv))
        return rl, out
t0 = time.time()
for step in range(a.steps + 1):
    if step % a.every == 0:
        rl, sc = evaluate()
        s = ' | '.join('L%d ind %s prv %s' % (li, ' '.join('%.2f' % v for v in i_), ' '.join('%.2f' % v for v in p_)) for li, (i_, p_) in enumerate(sc))
        print('%5d %5.1fs copy %.3f  %s' % (step, time.time() - t0, rl, s), flush=True)
    if step == a.steps: break
    if a.decay: PEFF[0] = max(a.floor, a.p * max(0.0, 1 - step / a.decay))
    x, y, _, pr = batch(a.B, gen)
    l = torch.nn.functional.cross_entropy(m(x).reshape(-1, V + 1), y.reshape(-1), reduction='none')
    loss = l.mean()
    opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step()
torch.save(m.state_dict(), 'model_%s.pt' % a.task)
# diagnosis
with torch.no_grad():
    base = evaluate()[0]
    print('copy loss', base)
    for li, b in enumerate(m.blocks):
        att = b.att
        for h in range(H):
            row = []
            for off in ['bos', -1, 0, 1, 2, 'prev', 'self']:
                if off == 'bos': w = att[:, h, :, 0]
                elif off == 'prev': w = torch.diagonal(att[:, h], -1, 1, 2); 
                elif off == 'self': w = torch.diagonal(att[:, h], 0, 1, 2)
                else:
                    tgt = (tq.unsqueeze(0) - em.unsqueeze(1) + off).clamp(min=0)
                    w = att[:, h].gather(2, tgt.unsqueeze(-1)).squeeze(-1)
                if off == 'prev': w = torch.nn.functional.pad(w, (1, 0))
                row.append((w * ep).sum().item() / ep.sum().item())
            print('L%d.%d  bos %.2f  t-m-1 %.2f  t-m %.2f  t-m+1 %.2f  t-m+2 %.2f  prev %.2f  self %.2f' % ((li, h) + tuple(row)))
    for li, b in enumerate(m.blocks):
        for h in range(H):
            hd = D // H
            saved = b.o.weight[:, h*hd:(h+1)*hd].clone()
            b.o.weight[:, h*hd:(h+1)*hd] = 0
            print('ablate %d.%d copy loss %.3f' % (li, h, evaluate()[0]))
            b.o.weight[:, h*hd:(h+1)*hd] = saved
