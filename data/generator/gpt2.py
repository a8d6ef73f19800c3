"""GPT-2 as Hugging Face transformers computes it, and Hugging Face GPT-2 folders for attn's tests.

The modules are written from transformers v4.31.0's eager code (src/transformers/models/gpt2/
modeling_gpt2.py, pytorch_utils.py's Conv1D, activations.py's NewGELUActivation; read, not
copied): the same class names, attribute names, registration order and forward order, so that
state_dict keys and torchinfo's rows are transformers' own. Only what inference on input_ids needs
is here: no cross-attention, no head mask, no token types, no upcast-and-reorder path. Dropout
modules are kept (identity in eval mode) because they are registered modules. The causal mask
`attn.bias` and `attn.masked_bias` are buffers v4.31 does not save (persistent=False); the hub's
gpt2 checkpoint, saved by older versions, carries them (the "hub" layout below).

write_folder() writes what save_pretrained(safe_serialization=True) leaves: config.json (the keys
GPT2Config.to_json_file(use_diff=True) writes, sorted), model.safetensors without the lm_head tied
to wte, or shards with model.safetensors.index.json, and GPT2Tokenizer's vocab.json, merges.txt,
tokenizer_config.json and special_tokens_map.json.

generate(out_dir) writes data/fixtures/gpt2/: folders in every layout at two small odd sizes with
a byte-level BPE vocabulary learnt here from a little text, shared inputs, the reference's outputs
and greedy generations from the cached loop.
"""
import json
import math
import pathlib
import re
import shutil
from collections import Counter
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from generator.bert import _DTYPE_NAMES, _rounded, ACT2FN, model_output, write_weights

TRANSFORMERS_VERSION = "4.31.0"


# --- The model (modeling_gpt2.py) ----------------------------------------------------------------

class Conv1D(nn.Module):  # pytorch_utils.py: a Linear whose weight is stored (in, out)
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        positions = config.n_positions
        self.register_buffer("bias", torch.tril(torch.ones((positions, positions), dtype=torch.bool)).view(
            1, 1, positions, positions), persistent=False)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)
        self.embed_dim = config.n_embd
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.layer_idx = layer_idx
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def _attn(self, query, key, value, attention_mask=None):  # (B,H,Tq,hs), (B,H,Tk,hs) x 2
        attn_weights = torch.matmul(query, key.transpose(-1, -2))  # (B,H,Tq,Tk)
        # scale_attn_weights: divided by a 0-d tensor of the weights' dtype, as transformers does
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length:key_length, :key_length]
        mask_value = torch.full([], torch.finfo(attn_weights.dtype).min, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = self.attn_dropout(attn_weights.type(value.dtype))
        return torch.matmul(attn_weights, value), attn_weights

    def _split_heads(self, tensor):  # (B,T,D) -> (B,H,T,hs)
        tensor = tensor.view(tensor.size()[:-1] + (self.num_heads, self.head_dim))
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):  # (B,H,T,hs) -> (B,T,D)
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.num_heads * self.head_dim,))

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False,
                output_attentions=False):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        present = (key, value) if use_cache else None
        attn_output, attn_weights = self._attn(query, key, value, attention_mask)
        attn_output = self.resid_dropout(self.c_proj(self._merge_heads(attn_output)))
        return (attn_output, present) + ((attn_weights,) if output_attentions else ())


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, intermediate_size)
        self.act = ACT2FN[config.activation_function]()
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class GPT2Block(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        inner_dim = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner_dim, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False,
                output_attentions=False):
        residual = hidden_states
        attn_outputs = self.attn(self.ln_1(hidden_states), layer_past, attention_mask, use_cache, output_attentions)
        hidden_states = attn_outputs[0] + residual
        residual = hidden_states
        hidden_states = residual + self.mlp(self.ln_2(hidden_states))
        outputs = attn_outputs[1:] if use_cache else attn_outputs[2:]
        return (hidden_states,) + outputs  # hidden_states, present, (attentions)


class GPT2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_dim = config.n_embd
        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.wpe = nn.Embedding(config.n_positions, self.embed_dim)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config, layer_idx=i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)

    def forward(self, input_ids, past_key_values=None, attention_mask=None, use_cache=None,
                output_attentions=False, output_hidden_states=False):
        use_cache = self.config.use_cache if use_cache is None else use_cache  # True in GPT2Config
        batch, tokens = input_ids.size()
        past_length = 0 if past_key_values is None else past_key_values[0][0].size(-2)
        if past_key_values is None:
            past_key_values = (None,) * len(self.h)
        position_ids = torch.arange(past_length, tokens + past_length, dtype=torch.long).unsqueeze(0)  # (1,T)
        if attention_mask is not None:
            # (B,1,1,Tk): 0 for a token, float32's lowest for padding, added to the scores
            attention_mask = attention_mask.view(batch, -1)[:, None, None, :].to(torch.float32)
            attention_mask = (1.0 - attention_mask) * torch.finfo(torch.float32).min
        hidden_states = self.drop(self.wte(input_ids) + self.wpe(position_ids))  # (B,T,D)
        presents = () if use_cache else None
        all_attentions = () if output_attentions else None
        all_hidden_states = () if output_hidden_states else None
        for block, layer_past in zip(self.h, past_key_values):
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
            outputs = block(hidden_states, layer_past, attention_mask, use_cache, output_attentions)
            hidden_states = outputs[0]
            if use_cache:
                presents += (outputs[1],)
            if output_attentions:
                all_attentions += (outputs[2 if use_cache else 1],)
        hidden_states = self.ln_f(hidden_states)
        if output_hidden_states:  # the last hidden state is after ln_f
            all_hidden_states += (hidden_states,)
        return model_output(last_hidden_state=hidden_states, past_key_values=presents, hidden_states=all_hidden_states,
                            attentions=all_attentions)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tie_weights

    def forward(self, input_ids, past_key_values=None, attention_mask=None, use_cache=None,
                output_attentions=False, output_hidden_states=False):
        outputs = self.transformer(input_ids, past_key_values, attention_mask, use_cache, output_attentions,
                                   output_hidden_states)
        logits = self.lm_head(outputs["last_hidden_state"])  # (B,T,V)
        return model_output(logits=logits, past_key_values=outputs.get("past_key_values"),
                            hidden_states=outputs.get("hidden_states"), attentions=outputs.get("attentions"))


ARCHITECTURES = {"GPT2Model": GPT2Model, "GPT2LMHeadModel": GPT2LMHeadModel}


def make_config(n_embd, n_head, n_layer, vocab_size, n_positions, n_inner=None, layer_norm_epsilon=1e-5,
                activation_function="gelu_new", bos_token_id=50256, eos_token_id=50256):
    """GPT2Config's fields (configuration_gpt2.py), defaults as GPT2Config() has them."""
    return SimpleNamespace(
        activation_function=activation_function, attn_pdrop=0.1, bos_token_id=bos_token_id, embd_pdrop=0.1,
        eos_token_id=eos_token_id, initializer_range=0.02, layer_norm_epsilon=layer_norm_epsilon, model_type="gpt2",
        n_embd=n_embd, n_head=n_head, n_inner=n_inner, n_layer=n_layer, n_positions=n_positions,
        reorder_and_upcast_attn=False, resid_pdrop=0.1, scale_attn_by_inverse_layer_idx=False,
        scale_attn_weights=True, summary_activation=None, summary_first_dropout=0.1, summary_proj_to_labels=True,
        summary_type="cls_index", summary_use_proj=True, use_cache=True, vocab_size=vocab_size)


def _config(model):
    return model.config if isinstance(model, GPT2Model) else model.transformer.config


def randomize(model, seed, scale=1.0, embedding_scale=1.0):
    """Seeded weights spread enough that attention is far from uniform (std `scale` / sqrt(fan-in)
    for Conv1D weights, whose fan-in is their first axis; `embedding_scale` for wte and wpe; small
    noise around 1 and 0 for LayerNorms). The tied lm_head is drawn once, as wte."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # named_parameters lists a shared parameter once
            noise = torch.randn(p.shape, generator=generator)
            if re.search(r"ln_(1|2|f)\.weight$", name):
                p.copy_(1.0 + 0.2 * noise)
            elif p.dim() == 1:
                p.copy_(0.2 * noise)
            elif re.search(r"(wte|wpe)\.weight$", name):
                p.copy_(embedding_scale * noise)
            else:
                p.copy_(scale * noise / math.sqrt(p.shape[0]))
    return model.eval()


def outputs(model, input_ids, attention_mask=None):
    """transformers' outputs with output_hidden_states and output_attentions, as numpy arrays."""
    with torch.no_grad():
        out = model(input_ids, attention_mask=attention_mask, output_attentions=True, output_hidden_states=True)
    arrays = {f"hidden_states.{l}": h.numpy() for l, h in enumerate(out["hidden_states"])}
    arrays.update({f"attentions.{l}": a.numpy() for l, a in enumerate(out["attentions"])})
    if "logits" in out:
        arrays["logits"] = out["logits"].numpy()
    return arrays


def greedy(model, input_ids, max_new_tokens):
    """A greedy generation loop with the key/value cache (past_key_values), as generate() with
    do_sample=False runs GPT2LMHeadModel: the prompt once, then one token a step. Returns the new
    ids (B,N), each step's log-probability of the chosen token (B,N) and the gap between the best
    and the second-best logit at each step (B,N)."""
    past, step_input, ids, log_probs, gaps = None, input_ids, [], [], []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            out = model(step_input, past_key_values=past, use_cache=True)
            past = out["past_key_values"]
            logits = out["logits"][:, -1, :]  # (B,V)
            chosen = torch.argmax(logits, dim=-1)  # (B,)
            log_probs.append(torch.log_softmax(logits, dim=-1).gather(1, chosen[:, None])[:, 0])
            top = torch.topk(logits, 2, dim=-1).values
            gaps.append(top[:, 0] - top[:, 1])
            ids.append(chosen)
            step_input = chosen[:, None]
    return torch.stack(ids, 1), torch.stack(log_probs, 1), torch.stack(gaps, 1)


# --- GPT-2's byte-level BPE (tokenization_gpt2.py) -----------------------------------------------

def bytes_to_unicode():
    """GPT-2's map from each byte to a printable character: the printable Latin-1 bytes map to
    themselves, the others to 256 upwards, in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


# GPT-2's pre-tokenising regex restricted to ASCII text, where \p{L} is [A-Za-z] and \p{N} [0-9].
_ASCII_PATTERN = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")
END_OF_TEXT = "<|endoftext|>"


def _words(text):
    assert text.isascii(), "the learner's pre-tokeniser is GPT-2's on ASCII text only"
    byte_encoder = bytes_to_unicode()
    return ["".join(byte_encoder[b] for b in piece.encode()) for piece in _ASCII_PATTERN.findall(text)]


def learn_bpe(text, merges):
    """`merges` merges learnt on `text` by counting adjacent symbol pairs within words, most frequent
    first (ties to the smaller pair). Returns (vocab: token -> id, merges: [(a, b)]): the 256 byte
    symbols in bytes_to_unicode's order, the merges' results, then <|endoftext|>, as GPT-2's files."""
    words = Counter(tuple(w) for w in _words(text))
    learnt = []
    for _ in range(merges):
        pairs = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        learnt.append(best)
        merged = Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    tokens = list(bytes_to_unicode().values()) + [a + b for a, b in learnt] + [END_OF_TEXT]
    return {token: i for i, token in enumerate(tokens)}, learnt


def encode(text, vocab, merges):
    """GPT2Tokenizer.bpe on each pre-token: merge the pair of lowest rank until none is left."""
    ranks = {pair: i for i, pair in enumerate(merges)}
    ids = []
    for word in _words(text):
        symbols = list(word)
        while len(symbols) > 1:
            pairs = [(ranks.get(p, math.inf), i) for i, p in enumerate(zip(symbols, symbols[1:]))]
            rank, i = min(pairs)
            if rank == math.inf:
                break
            first, second = symbols[i], symbols[i + 1]
            out, j = [], 0  # every occurrence of the pair, left to right
            while j < len(symbols):
                if j + 1 < len(symbols) and symbols[j] == first and symbols[j + 1] == second:
                    out.append(first + second)
                    j += 2
                else:
                    out.append(symbols[j])
                    j += 1
            symbols = out
        ids += [vocab[s] for s in symbols]
    return ids


# --- The folder (save_pretrained with safe_serialization) --------------------------------------

def saved_state(model, dtype=torch.float32, lm_head=False, prefix=True, buffers=False):
    """The state_dict a checkpoint holds, floats cast to `dtype`: save_pretrained's (the tied
    lm_head.weight dropped) unless `lm_head` (a torch.save of the whole state_dict keeps it);
    `prefix` False strips GPT2LMHeadModel's "transformer."; `buffers` adds h.N.attn.bias (F32 0/1,
    (1,1,P,P)) and h.N.attn.masked_bias, as the hub's gpt2 checkpoint carries them."""
    config = _config(model)
    state = {}
    for key, value in model.state_dict().items():
        if key == "lm_head.weight" and not lm_head:
            continue
        if not prefix and key.startswith("transformer."):
            key = key[len("transformer."):]
        state[key] = value.to(dtype)
    if buffers:
        head = "transformer." if prefix and not isinstance(model, GPT2Model) else ""
        positions = config.n_positions
        mask = torch.tril(torch.ones((positions, positions))).view(1, 1, positions, positions)
        for layer in range(config.n_layer):
            state[f"{head}h.{layer}.attn.bias"] = mask.clone()
            state[f"{head}h.{layer}.attn.masked_bias"] = torch.tensor(-1e4)
    return state


def config_json(config, architecture, dtype=torch.float32, hub=False):
    """save_pretrained's config.json; `hub`: the form of the hub's gpt2 folder (n_ctx, no n_inner,
    no torch_dtype or transformers_version, task_specific_params)."""
    fields = dict(vars(config), architectures=[architecture])
    if hub:
        for key in ("reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "scale_attn_weights", "use_cache"):
            fields.pop(key)
        if config.n_inner is None:
            fields.pop("n_inner")
        fields.update(n_ctx=config.n_positions,
                      task_specific_params={"text-generation": {"do_sample": True, "max_length": 50}})
    else:
        fields.update(torch_dtype=_DTYPE_NAMES[dtype], transformers_version=TRANSFORMERS_VERSION)
    return json.dumps(fields, indent=2, sort_keys=True) + "\n"


def tokenizer_files(vocab, merges, max_length):
    """GPT2Tokenizer.save_pretrained: vocab.json and merges.txt (save_vocabulary), the config and
    the special tokens map."""
    special = {"bos_token": END_OF_TEXT, "eos_token": END_OF_TEXT, "unk_token": END_OF_TEXT}
    tokenizer_config = dict(special, add_bos_token=False, add_prefix_space=False, clean_up_tokenization_spaces=True,
                            errors="replace", model_max_length=max_length, pad_token=None,
                            tokenizer_class="GPT2Tokenizer")
    return {"vocab.json": json.dumps(vocab, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
            "merges.txt": "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges),
            "tokenizer_config.json": json.dumps(tokenizer_config, indent=2, sort_keys=True) + "\n",
            "special_tokens_map.json": json.dumps(special, indent=2, sort_keys=True) + "\n"}


def write_folder(folder, model, vocab, merges, dtype=torch.float32, lm_head=False, prefix=True, buffers=False,
                 hub=False, shards=1):
    """A Hugging Face folder of `model` (GPT2Model or GPT2LMHeadModel); `hub`: the hub's gpt2 form
    (no prefix, the mask buffers, its config.json)."""
    folder = pathlib.Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    config = _config(model)
    (folder / "config.json").write_text(config_json(config, type(model).__name__, dtype, hub))
    write_weights(folder, saved_state(model, dtype, lm_head, prefix and not hub, buffers or hub), shards)
    for name, text in tokenizer_files(vocab, merges, config.n_positions).items():
        (folder / name).write_text(text, encoding="utf-8")


# --- The fixtures --------------------------------------------------------------------------------

# The text the fixtures' BPE learns its merges from (ASCII: see _words).
CORPUS = ("The cat sat on the mat. The dog sat on the log. A cat and a dog met at the mat; the cat ran, "
          "the dog ran after it. Then the cat sat on the dog's mat and the dog sat on the cat's log. "
          "They ran 10 times, then 20 times, and at the end they sat together in the sun.")
MERGES = 40

SENTENCE = "The cat sat on the mat."
SHORT = "A dog ran."


def inputs(vocab, merges):
    """name -> (text of each row, input_ids (B,T), attention_mask (B,T)): padding on the right with
    <|endoftext|>, the usual pad of GPT-2."""
    pad = vocab[END_OF_TEXT]
    cases = {}
    for name, texts in (("sentence", [SENTENCE]), ("padded", [SENTENCE + " The dog sat.", SHORT])):
        rows = [encode(text, vocab, merges) for text in texts]
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], dtype=torch.int64)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], dtype=torch.int64)
        cases[name] = (texts, ids, mask)
    return cases


# Sizes: D n_embd, H n_head, L n_layer, F n_inner (None: 4D), P n_positions, eps layer_norm_epsilon.
SIZES = {
    "d21": dict(n_embd=21, n_head=3, n_layer=2, n_inner=36, n_positions=32, layer_norm_epsilon=1e-5),
    "d12": dict(n_embd=12, n_head=4, n_layer=3, n_inner=None, n_positions=24, layer_norm_epsilon=1e-6),
}
# Seeds and table scales picked so that greedy generation changes token within the 6 steps and
# no step is a near tie (smallest gap between the two best logits in cases.json).
SEEDS = {"d21": 30, "d12": 31}
EMBEDDING_SCALES = {"d21": 0.5, "d12": 1.0}
NEW_TOKENS = 6

# folder -> (size, class, weights' dtype, layout options). The F32 folders of one size hold the
# same weights, so their outputs are one set: expected/<size>; F16 and BF16 round the weights, so
# theirs are expected/<size>_<dtype>. GPT2Model has no logits and is not generated from.
FOLDERS = {
    "d21_model": ("d21", "GPT2Model", torch.float32, {}),
    "d21_lm": ("d21", "GPT2LMHeadModel", torch.float32, {}),
    "d21_lm_head": ("d21", "GPT2LMHeadModel", torch.float32, {"lm_head": True}),
    "d21_sharded": ("d21", "GPT2LMHeadModel", torch.float32, {"shards": 2}),
    "d21_f16": ("d21", "GPT2LMHeadModel", torch.float16, {}),
    "d21_bf16": ("d21", "GPT2LMHeadModel", torch.bfloat16, {}),
    "d12_lm": ("d12", "GPT2LMHeadModel", torch.float32, {}),
    "d12_hub": ("d12", "GPT2LMHeadModel", torch.float32, {"hub": True}),  # n_inner null: not in config.json
}


def _model(architecture, reference):
    """`architecture` holding `reference`'s (a GPT2LMHeadModel's) weights."""
    model = ARCHITECTURES[architecture](reference.transformer.config).eval()
    source = reference.transformer if architecture == "GPT2Model" else reference
    model.load_state_dict(source.state_dict())
    return model


def _check_cache(model, ids, new_ids):
    """The cached loop's last logits equal a whole forward's on the prompt and the new tokens."""
    with torch.no_grad():
        whole = model(torch.cat([ids, new_ids[:, :-1]], 1))["logits"]  # (B,T+N-1,V)
    chosen = torch.argmax(whole[:, ids.shape[1] - 1:, :], -1)
    assert torch.equal(chosen, new_ids), "the cached loop and the whole forward choose differently"


def generate(out_dir: pathlib.Path) -> dict:
    torch.set_num_threads(1)
    root = out_dir / "gpt2"
    if root.exists():
        shutil.rmtree(root)
    vocab, merges = learn_bpe(CORPUS, MERGES)
    cases = inputs(vocab, merges)
    for name, (_, ids, mask) in cases.items():
        folder = root / "inputs" / name
        folder.mkdir(parents=True)
        np.save(folder / "input_ids.npy", ids.numpy())
        np.save(folder / "attention_mask.npy", mask.numpy())
    end = vocab[END_OF_TEXT]
    references = {}
    for size, sizes in SIZES.items():
        config = make_config(vocab_size=len(vocab), bos_token_id=end, eos_token_id=end, **sizes)
        references[size] = randomize(GPT2LMHeadModel(config), SEEDS[size], embedding_scale=EMBEDDING_SCALES[size])
    manifest = {"transformers": TRANSFORMERS_VERSION, "seeds": SEEDS, "embedding_scales": EMBEDDING_SCALES, "sizes": SIZES, "vocab_size": len(vocab),
                "merges": MERGES, "corpus": CORPUS,
                "inputs": {name: texts for name, (texts, _, _) in cases.items()},
                "generate": {"input": "sentence", "max_new_tokens": NEW_TOKENS}, "folders": {}, "expected": {}}
    for folder, (size, architecture, dtype, layout) in FOLDERS.items():
        model = _model(architecture, references[size])
        write_folder(root / folder, model, vocab, merges, dtype, **layout)
        expected = size if dtype == torch.float32 else f"{size}_{_DTYPE_NAMES[dtype]}"
        manifest["folders"][folder] = {"architecture": architecture, "dtype": _DTYPE_NAMES[dtype],
                                       "expected": expected, **layout}
        if expected in manifest["expected"]:
            continue
        # F32: the whole GPT2LMHeadModel; GPT2Model's outputs are a subset of it, which is checked.
        reference = references[size] if dtype == torch.float32 else _rounded(_model("GPT2LMHeadModel", references[size]),
                                                                             dtype)
        for name, (_, ids, mask) in cases.items():
            arrays = outputs(reference, ids, mask)
            bare = outputs(reference.transformer, ids, mask)
            assert all(np.array_equal(bare[k], arrays[k]) for k in bare), (folder, name)
            target = root / "expected" / expected / name
            target.mkdir(parents=True)
            for key, array in arrays.items():
                np.save(target / f"{key}.npy", array)
        ids = cases["sentence"][1]
        new_ids, log_probs, gaps = greedy(reference, ids, NEW_TOKENS)
        assert float(gaps.min()) > 1e-2, f"{expected}: a greedy step is a near tie ({float(gaps.min()):.2e})"
        _check_cache(reference, ids, new_ids)
        target = root / "expected" / expected / "generate"
        target.mkdir(parents=True)
        np.save(target / "generated_ids.npy", new_ids.numpy())
        np.save(target / "log_probs.npy", log_probs.numpy())
        manifest["expected"][expected] = {"arrays": sorted(p.stem for p in (root / "expected" / expected /
                                                                             "sentence").iterdir()),
                                          "generated_ids": new_ids.tolist(),
                                          "smallest_greedy_gap": round(float(gaps.min()), 4)}
    (root / "cases.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return {"dir": "gpt2", "folders": len(FOLDERS), "inputs": len(cases),
            "bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file())}
