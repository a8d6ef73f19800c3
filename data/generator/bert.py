"""BERT as Hugging Face transformers computes it, and Hugging Face model folders for attn's tests.

The modules are written from transformers v4.31.0's eager code (src/transformers/models/bert/
modeling_bert.py, read, not copied): the same class names, attribute names, registration order
and forward order, so that state_dict keys and torchinfo's rows are transformers' own. Only what
inference on input_ids needs is here: no cross-attention, no past key values, no head mask,
no relative positions. Dropout modules are kept (identity in eval mode) because they are
registered modules. v4.31 made embeddings.position_ids non-persistent; older checkpoints carry it
as an int64 (1, P) tensor (the "old" layout below).

write_folder() writes what save_pretrained(safe_serialization=True) leaves: config.json (the keys
BertConfig.to_json_file(use_diff=True) writes, sorted), model.safetensors with __metadata__
{"format": "pt"} and without the tensors tied to others (cls.predictions.decoder.weight is the
word table, cls.predictions.decoder.bias is cls.predictions.bias), or shards with
model.safetensors.index.json, and BertTokenizer's vocab.txt, tokenizer_config.json and
special_tokens_map.json. Debian has no python3-safetensors: the file is written by hand as the
Rust writer lays it out (weights_files._ORDER).

generate(out_dir) writes data/fixtures/bert/: folders in every layout at two small odd sizes,
shared inputs, and the reference's outputs.
"""
import json
import math
import pathlib
import shutil
import struct
from collections import OrderedDict
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from generator.weights_files import _ORDER

TRANSFORMERS_VERSION = "4.31.0"


# --- The model (modeling_bert.py) ----------------------------------------------------------------

class GELUActivation(nn.Module):  # activations.py: ACT2FN["gelu"], the exact erf form
    def forward(self, input):
        return nn.functional.gelu(input)


class NewGELUActivation(nn.Module):  # activations.py: ACT2FN["gelu_new"], the tanh approximation
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


ACT2FN = {"gelu": GELUActivation, "gelu_new": NewGELUActivation}


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                             persistent=False)

    def forward(self, input_ids, token_type_ids=None):
        batch, seq_length = input_ids.size()
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = self.token_type_ids[:, :seq_length].expand(batch, seq_length)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        embeddings += self.position_embeddings(position_ids)
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):  # (B,T,D) -> (B,H,T,hs)
        x = x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))  # (B,H,T,T)
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))  # (B,T,D)
        return (context_layer, attention_probs) if output_attentions else (context_layer,)


class _DenseDropoutNorm(nn.Module):  # BertSelfOutput and BertOutput differ only in dense's input
    def __init__(self, config, in_features):
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class BertSelfOutput(_DenseDropoutNorm):
    def __init__(self, config):
        super().__init__(config, config.hidden_size)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        self_outputs = self.self(hidden_states, attention_mask, output_attentions)
        return (self.output(self_outputs[0], hidden_states),) + self_outputs[1:]


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(_DenseDropoutNorm):
    def __init__(self, config):
        super().__init__(config, config.intermediate_size)


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.chunk_size_feed_forward = 0
        self.seq_len_dim = 1
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        self_attention_outputs = self.attention(hidden_states, attention_mask, output_attentions)
        attention_output = self_attention_outputs[0]
        # apply_chunking_to_forward with chunk size 0 calls feed_forward_chunk once
        layer_output = self.output(self.intermediate(attention_output), attention_output)
        return (layer_output,) + self_attention_outputs[1:]


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None, output_attentions=False, output_hidden_states=False):
        all_hidden_states = (hidden_states,) if output_hidden_states else None
        all_attentions = () if output_attentions else None
        for layer_module in self.layer:
            layer_outputs = layer_module(hidden_states, attention_mask, output_attentions)
            hidden_states = layer_outputs[0]
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
            if output_attentions:
                all_attentions += (layer_outputs[1],)
        return model_output(last_hidden_state=hidden_states, hidden_states=all_hidden_states,
                            attentions=all_attentions)


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))  # the first token: [CLS]


def model_output(**fields):
    """transformers' ModelOutput: an OrderedDict of the fields that are not None, in order (torchinfo
    sizes a dict output by its last value)."""
    return OrderedDict((key, value) for key, value in fields.items() if value is not None)


def extended_attention_mask(attention_mask):
    """ModuleUtilsMixin.get_extended_attention_mask for an encoder: (B,T) -> (B,1,1,T)."""
    extended = attention_mask[:, None, None, :].to(torch.float32)
    return (1.0 - extended) * torch.finfo(torch.float32).min


class BertModel(nn.Module):
    def __init__(self, config, add_pooling_layer=True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=False,
                output_hidden_states=False):
        if attention_mask is None:
            attention_mask = torch.ones(input_ids.shape, dtype=torch.long)
        mask = extended_attention_mask(attention_mask)
        embedding_output = self.embeddings(input_ids, token_type_ids)
        encoder_outputs = self.encoder(embedding_output, mask, output_attentions, output_hidden_states)
        sequence_output = encoder_outputs["last_hidden_state"]
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
        return model_output(last_hidden_state=sequence_output, pooler_output=pooled_output,
                            hidden_states=encoder_outputs.get("hidden_states"),
                            attentions=encoder_outputs.get("attentions"))


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = ACT2FN[config.hidden_act]()
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        return self.LayerNorm(self.transform_act_fn(self.dense(hidden_states)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder.bias = self.bias  # one parameter, two names

    def forward(self, hidden_states):
        return self.decoder(self.transform(hidden_states))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)

    def forward(self, sequence_output):
        return self.predictions(sequence_output)


class BertPreTrainingHeads(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)

    def forward(self, sequence_output, pooled_output):
        return self.predictions(sequence_output), self.seq_relationship(pooled_output)


class BertForMaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tie_weights

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=False,
                output_hidden_states=False):
        outputs = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return model_output(logits=self.cls(outputs["last_hidden_state"]), hidden_states=outputs.get("hidden_states"),
                            attentions=outputs.get("attentions"))


class BertForPreTraining(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.bert = BertModel(config)
        self.cls = BertPreTrainingHeads(config)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tie_weights

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=False,
                output_hidden_states=False):
        outputs = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        prediction_scores, seq_relationship_score = self.cls(outputs["last_hidden_state"], outputs["pooler_output"])
        return model_output(prediction_logits=prediction_scores, seq_relationship_logits=seq_relationship_score,
                            hidden_states=outputs.get("hidden_states"), attentions=outputs.get("attentions"))


ARCHITECTURES = {"BertModel": BertModel, "BertForMaskedLM": BertForMaskedLM, "BertForPreTraining": BertForPreTraining}


def make_config(hidden_size, num_attention_heads, intermediate_size, num_hidden_layers, vocab_size,
                max_position_embeddings, type_vocab_size=2, hidden_act="gelu"):
    """BertConfig's fields (configuration_bert.py), defaults as BertConfig() has them."""
    return SimpleNamespace(
        attention_probs_dropout_prob=0.1, classifier_dropout=None, hidden_act=hidden_act, hidden_dropout_prob=0.1,
        hidden_size=hidden_size, initializer_range=0.02, intermediate_size=intermediate_size, layer_norm_eps=1e-12,
        max_position_embeddings=max_position_embeddings, model_type="bert", num_attention_heads=num_attention_heads,
        num_hidden_layers=num_hidden_layers, pad_token_id=0, position_embedding_type="absolute",
        type_vocab_size=type_vocab_size, use_cache=True, vocab_size=vocab_size)


def randomize(model, seed, scale=1.0, embedding_scale=1.0):
    """Seeded weights spread enough that attention is far from uniform (std `scale` / sqrt(fan-in)
    for Linears, `embedding_scale` for the embedding tables, small noise around 1 and 0 for
    LayerNorms). Tied parameters are drawn once."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # named_parameters lists a shared parameter once
            noise = torch.randn(p.shape, generator=generator)
            if name.endswith("LayerNorm.weight"):
                p.copy_(1.0 + 0.2 * noise)
            elif p.dim() == 1:
                p.copy_(0.2 * noise)
            elif "embeddings" in name:
                p.copy_(embedding_scale * noise)
            else:
                p.copy_(scale * noise / math.sqrt(p.shape[1]))
    return model.eval()


# --- The folder (save_pretrained with safe_serialization) --------------------------------------

SPECIAL_TOKENS = {"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]", "sep_token": "[SEP]",
                  "unk_token": "[UNK]"}
_CODES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}
_DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


def safetensors_bytes(tensors):
    """safetensors.torch.save_file(tensors, metadata={"format": "pt"}): __metadata__ first, tensors
    by descending dtype then name, compact JSON padded with spaces to a multiple of 8."""
    items = sorted(tensors.items(), key=lambda kv: (-_ORDER.index(_CODES[kv[1].dtype]), kv[0]))
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, tensor in items:
        tensor = tensor.detach().contiguous()
        raw = (tensor.view(torch.int16) if tensor.dtype == torch.bfloat16 else tensor).numpy().tobytes()
        header[name] = {"dtype": _CODES[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def saved_state(model, dtype=torch.float32, legacy=False, position_ids=False):
    """The state_dict save_pretrained writes: tied tensors dropped, floats cast to `dtype`;
    `legacy`: LayerNorm.gamma / .beta as TensorFlow-era checkpoints name them; `position_ids`:
    the int64 buffer checkpoints before v4.31 carried."""
    state = {}
    for key, value in model.state_dict().items():
        if key.startswith("cls.predictions.decoder."):
            continue
        if legacy and ".LayerNorm." in key:
            key = key.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        state[key] = value.to(dtype)
    if position_ids:
        prefix = "" if isinstance(model, BertModel) else "bert."
        positions = _config(model).max_position_embeddings
        state[prefix + "embeddings.position_ids"] = torch.arange(positions).expand((1, -1)).contiguous()
    return state


def _config(model):
    return model.config if isinstance(model, BertModel) else model.bert.config


def config_json(config, architecture, dtype=torch.float32):
    fields = dict(vars(config), architectures=[architecture], torch_dtype=_DTYPE_NAMES[dtype],
                  transformers_version=TRANSFORMERS_VERSION)
    return json.dumps(fields, indent=2, sort_keys=True) + "\n"


def tokenizer_files(vocab, max_length, do_lower_case=True):
    tokenizer_config = dict(SPECIAL_TOKENS, clean_up_tokenization_spaces=True, do_basic_tokenize=True,
                            do_lower_case=do_lower_case, model_max_length=max_length, never_split=None,
                            strip_accents=None, tokenize_chinese_chars=True, tokenizer_class="BertTokenizer")
    return {"vocab.txt": "".join(token + "\n" for token in vocab),
            "tokenizer_config.json": json.dumps(tokenizer_config, indent=2, sort_keys=True) + "\n",
            "special_tokens_map.json": json.dumps(SPECIAL_TOKENS, indent=2, sort_keys=True) + "\n"}


def _shards(state, max_shard_bytes):
    """modeling_utils.shard_checkpoint: a new shard when the next tensor would pass the limit."""
    blocks, size = [{}], 0
    for key, tensor in state.items():
        nbytes = tensor.numel() * tensor.element_size()
        if size + nbytes > max_shard_bytes and blocks[-1]:
            blocks.append({})
            size = 0
        blocks[-1][key] = tensor
        size += nbytes
    return blocks


def write_weights(folder, state, shards=1):
    """model.safetensors, or `shards` files and model.safetensors.index.json as save_pretrained
    writes them past max_shard_size."""
    if shards == 1:
        (folder / "model.safetensors").write_bytes(safetensors_bytes(state))
        return
    total = sum(t.numel() * t.element_size() for t in state.values())
    blocks = _shards(state, total * 3 // (2 * shards))  # past an even split: `shards` files
    weight_map = {}
    for i, block in enumerate(blocks):
        name = f"model-{i + 1:05d}-of-{len(blocks):05d}.safetensors"
        (folder / name).write_bytes(safetensors_bytes(block))
        weight_map.update({key: name for key in block})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")


def write_folder(folder, model, vocab, dtype=torch.float32, legacy=False, position_ids=False, shards=1):
    """A Hugging Face folder of `model` (BertModel, BertForMaskedLM or BertForPreTraining)."""
    folder = pathlib.Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    config = _config(model)
    (folder / "config.json").write_text(config_json(config, type(model).__name__, dtype))
    write_weights(folder, saved_state(model, dtype, legacy, position_ids), shards)
    for name, text in tokenizer_files(vocab, config.max_position_embeddings).items():
        (folder / name).write_text(text)


def outputs(model, input_ids, token_type_ids=None, attention_mask=None):
    """transformers' outputs with output_hidden_states and output_attentions, as numpy arrays."""
    with torch.no_grad():
        out = model(input_ids, attention_mask, token_type_ids, output_attentions=True, output_hidden_states=True)
        if not isinstance(model, BertModel):  # the heads' outputs have no pooler_output
            out.update(model.bert(input_ids, attention_mask, token_type_ids))
    arrays = {f"hidden_states.{l}": h.numpy() for l, h in enumerate(out["hidden_states"])}
    arrays.update({f"attentions.{l}": a.numpy() for l, a in enumerate(out["attentions"])})
    if "pooler_output" in out:
        arrays["pooler_output"] = out["pooler_output"].numpy()
    logits = out.get("logits", out.get("prediction_logits"))
    if logits is not None:
        arrays["logits"] = logits.numpy()
    return arrays


# --- The fixtures --------------------------------------------------------------------------------

# Real bert-base-uncased tokens (lower case), in an order of our own.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "?", "'", "-", "the", "of", "and", "in",
         "to", "a", "is", "was", "for", "on", "as", "with", "by", "he", "it", "at", "from", "an", "are", "this",
         "that", "time", "flies", "fly", "like", "arrow", "fruit", "banana", "capital", "france", "paris",
         "city", "cat", "sat", "mat", "dog", "bank", "river", "money", "##s", "##ing", "##ed", "##ly", "un",
         "##able", "run", "play", "good"]

SENTENCE_A = ["[CLS]", "time", "flies", "like", "an", "arrow", "[SEP]"]
SENTENCE_B = ["fruit", "flies", "like", "a", "banana", "[SEP]"]
MASKED = ["[CLS]", "the", "capital", "of", "france", "is", "[MASK]", ".", "[SEP]"]
SHORT = ["[CLS]", "paris", "is", "a", "city", "[SEP]"]


def _ids(tokens, length=None):
    ids = [VOCAB.index(t) for t in tokens]
    return ids + [VOCAB.index("[PAD]")] * ((length or len(ids)) - len(ids))


def inputs():
    """name -> (input_ids, token_type_ids, attention_mask), each (B,T) int64."""
    def tensors(rows, types, masks):
        return tuple(torch.tensor(x, dtype=torch.int64) for x in (rows, types, masks))
    t = len(MASKED)
    return {
        "sentence": tensors([_ids(SENTENCE_A)], [[0] * len(SENTENCE_A)], [[1] * len(SENTENCE_A)]),
        "pair": tensors([_ids(SENTENCE_A + SENTENCE_B)], [[0] * len(SENTENCE_A) + [1] * len(SENTENCE_B)],
                        [[1] * (len(SENTENCE_A) + len(SENTENCE_B))]),
        "padded": tensors([_ids(MASKED), _ids(SHORT, t)], [[0] * t, [0] * t],
                          [[1] * t, [1] * len(SHORT) + [0] * (t - len(SHORT))]),
    }


# Sizes: D hidden_size, H heads, F intermediate_size, L layers, P positions, Y token types.
SIZES = {
    "d12": dict(hidden_size=12, num_attention_heads=3, intermediate_size=20, num_hidden_layers=2,
                max_position_embeddings=24, type_vocab_size=2, hidden_act="gelu"),
    "d10": dict(hidden_size=10, num_attention_heads=2, intermediate_size=14, num_hidden_layers=3,
                max_position_embeddings=16, type_vocab_size=3, hidden_act="gelu_new"),
}

# folder -> (size, class, weights' dtype, layout options). The F32 folders of one size hold the
# same weights (subsets of one BertForPreTraining), so their outputs are one set: expected/<size>;
# F16 and BF16 round the weights, so theirs are expected/<size>_<dtype>.
FOLDERS = {
    "d12_model": ("d12", "BertModel", torch.float32, {}),
    "d12_masked_lm": ("d12", "BertForMaskedLM", torch.float32, {}),
    "d12_pretraining": ("d12", "BertForPreTraining", torch.float32, {}),
    "d12_legacy": ("d12", "BertForPreTraining", torch.float32, {"legacy": True}),
    "d12_sharded": ("d12", "BertForPreTraining", torch.float32, {"shards": 2}),
    "d12_old": ("d12", "BertModel", torch.float32, {"position_ids": True}),
    "d12_f16": ("d12", "BertForMaskedLM", torch.float16, {}),
    "d12_bf16": ("d12", "BertForMaskedLM", torch.bfloat16, {}),
    "d10_pretraining": ("d10", "BertForPreTraining", torch.float32, {}),
}
SEEDS = {"d12": 28, "d10": 29}


def _model(architecture, reference):
    """`architecture` holding `reference`'s (a BertForPreTraining's) weights."""
    config = reference.bert.config
    model = ARCHITECTURES[architecture](config).eval()
    state = reference.state_dict()
    if architecture == "BertModel":
        state = {k[len("bert."):]: v for k, v in state.items() if k.startswith("bert.")}
    elif architecture == "BertForMaskedLM":
        state = {k: v for k, v in state.items() if not k.startswith(("bert.pooler.", "cls.seq_relationship."))}
    model.load_state_dict(state)
    return model


def _rounded(model, dtype):
    """The model as attn runs a `dtype` file: weights rounded to `dtype`, computed in float32."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(dtype).to(torch.float32))
    return model


def generate(out_dir: pathlib.Path) -> dict:
    torch.set_num_threads(1)
    root = out_dir / "bert"
    if root.exists():
        shutil.rmtree(root)
    (root / "inputs").mkdir(parents=True)
    cases = inputs()
    for name, (ids, types, mask) in cases.items():
        folder = root / "inputs" / name
        folder.mkdir()
        for key, value in (("input_ids", ids), ("token_type_ids", types), ("attention_mask", mask)):
            np.save(folder / f"{key}.npy", value.numpy())
    references = {}
    for size, sizes in SIZES.items():
        config = make_config(vocab_size=len(VOCAB), **sizes)
        references[size] = randomize(BertForPreTraining(config), SEEDS[size])
    manifest = {"transformers": TRANSFORMERS_VERSION, "seeds": SEEDS, "sizes": SIZES, "inputs": list(cases),
                "folders": {}, "expected": {}}
    for folder, (size, architecture, dtype, layout) in FOLDERS.items():
        model = _model(architecture, references[size])
        write_folder(root / folder, model, VOCAB, dtype, **layout)
        expected = size if dtype == torch.float32 else f"{size}_{_DTYPE_NAMES[dtype]}"
        manifest["folders"][folder] = {"architecture": architecture, "dtype": _DTYPE_NAMES[dtype],
                                       "expected": expected, **layout}
        if expected in manifest["expected"]:
            continue
        # F32: the whole BertForPreTraining (hidden states, attentions, pooler, logits); each
        # class's outputs are a subset of it, which is checked here.
        reference = references[size] if dtype == torch.float32 else _rounded(model, dtype)
        for name, (ids, types, mask) in cases.items():
            arrays = outputs(reference, ids, types, mask)
            mine = outputs(model, ids, types, mask)
            assert all(np.array_equal(mine[k], arrays[k]) for k in mine), (folder, name)
            target = root / "expected" / expected / name
            target.mkdir(parents=True)
            for key, array in arrays.items():
                np.save(target / f"{key}.npy", array)
        manifest["expected"][expected] = sorted(p.stem for p in (root / "expected" / expected / "sentence").iterdir())
    (root / "cases.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return {"dir": "bert", "folders": len(FOLDERS), "inputs": len(cases),
            "bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file())}
