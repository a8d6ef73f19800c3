"""Fixtures for core/io/weights.cpp: state dicts as .safetensors and .npz, and broken files.

generate(out_dir) writes every file plus cases.json. "models" holds each state dict (dtype, shape
and flat values per key); each good case names its model and says whether attn's writer must
reproduce the file byte for byte ("canonical"); each bad case gives the text attn's error must
contain. Debian has no python3-safetensors, so _safetensors_bytes follows the Rust writer
(huggingface/safetensors, safetensors/src/tensor.rs `prepare`): __metadata__ first, tensors by
descending dtype then by name, compact JSON padded with spaces to a multiple of 8.
"""

import io
import json
import math
import pathlib
import re
import struct
import zipfile
import zlib

import numpy as np
import torch
from torch import nn

# The Rust Dtype enum in declaration order: the writer sorts by descending position.
_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32",
          "F32", "F64", "I64", "U64"]
_CODES = {"bool": "BOOL", "uint8": "U8", "float16": "F16", "int32": "I32", "float32": "F32",
          "float64": "F64", "int64": "I64"}
PICKLE_ERROR = "PyTorch pickles can run code and are not read"


# --- State dicts -------------------------------------------------------------------------------

class SelfAttention(nn.Module):
    """Seed 004's module: three bias-free k x k projections."""

    def __init__(self, k):
        super().__init__()
        self.tokeys = nn.Linear(k, k, bias=False)
        self.toqueries = nn.Linear(k, k, bias=False)
        self.tovalues = nn.Linear(k, k, bias=False)


def _numpy_state(module):
    return {k: v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}


def _models():
    torch.manual_seed(4)
    selfattention = _numpy_state(SelfAttention(6))
    torch.manual_seed(0)
    encoder = _numpy_state(nn.TransformerEncoderLayer(
        d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True))
    mixed = {
        "f32": (np.arange(6, dtype=np.float32) * 0.5 - 1.0).reshape(2, 3),
        "f64": np.array([0.1, -2.5, 1e300], dtype=np.float64),
        "i32": np.array([[-(2**31), -1], [0, 2**31 - 1]], dtype=np.int32),
        "i64": np.array([-(2**62), -1, 0, 2**53 + 1, 2**62], dtype=np.int64),
        "mask": np.array([[True, False, True], [False, False, True]]),
        "scalar_f32": np.array(1.5, dtype=np.float32),
        "scalar_i64": np.array(7, dtype=np.int64),
        "empty_f32": np.zeros((0,), dtype=np.float32),
        "empty_i32_2x0x3": np.zeros((2, 0, 3), dtype=np.int32),
        "special": np.array([np.nan, np.inf, -np.inf, -0.0], dtype=np.float32),
        "layers.0.attn.bias": np.array([0.25, -0.75, 3.0], dtype=np.float32),
        "\u00fcn\u00efcode.weight": np.array([1.0, 2.0], dtype=np.float32),
    }
    example = {"b": np.array([0.5, -1.0], dtype=np.float32),
               "w": np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)}
    return {"selfattention": selfattention, "encoder_layer": encoder, "mixed": mixed,
            "example": example, "empty": {}}


def _values(array):
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.kind in "biu":
        return [int(v) for v in flat]
    return [float(v) if math.isfinite(v) else str(float(v)) for v in flat]  # "nan", "inf", "-inf"


def _describe(state):
    return {k: {"dtype": v.dtype.name, "shape": list(v.shape), "values": _values(v)}
            for k, v in sorted(state.items())}


# --- safetensors ---------------------------------------------------------------------------------

def _safetensors_bytes(tensors, metadata=None):
    """What safetensors.torch.save_file writes (the metadata attn writes is {"format": "pt"})."""
    items = sorted(tensors.items(), key=lambda kv: (-_ORDER.index(_CODES[kv[1].dtype.name]), kv[0]))
    header = {} if metadata is None else {"__metadata__": metadata}
    chunks, offset = [], 0
    for name, array in items:
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": _CODES[array.dtype.name], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def _raw_safetensors(header, data=b"", size=None):
    """A hand-made file: `header` (str or bytes) as is, an optional wrong size field, then data."""
    text = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(text) if size is None else size) + text + data


def _read_safetensors(data):
    """Decodes a file this module wrote (no validation: attn's reader is the one under test)."""
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    types = {v: k for k, v in _CODES.items()}
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        if info["dtype"] in ("F16", "BF16"):  # as attn reads them: torch's .float()
            half = torch.float16 if info["dtype"] == "F16" else torch.bfloat16
            array = torch.frombuffer(raw, dtype=torch.int16).view(half).float().numpy()
        else:
            array = np.frombuffer(bytes(raw), dtype=np.dtype(types[info["dtype"]]))
        out[name] = array.reshape(info["shape"])
    return out


def _entry(dtype, shape, offsets):
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


def _header(entries):
    return json.dumps(entries, separators=(",", ":"))


def _good_safetensors(models):
    """(file, model, bytes, canonical)."""
    pt = {"format": "pt"}
    out = [(f"{name}.safetensors", name, _safetensors_bytes(models[name], pt), True)
           for name in ("selfattention", "encoder_layer", "mixed", "example", "empty")]
    # No metadata, entries in name order rather than by dtype, odd padding: any order is valid.
    a = np.array([1, 2, 3], dtype=np.int64)
    z = np.array([True, False])
    text = _header({"a": _entry("I64", [3], [2, 26]), "z": _entry("BOOL", [2], [0, 2])}) + " " * 11
    out.append(("name_order_no_metadata.safetensors", "name_order",
                _raw_safetensors(text, z.tobytes() + a.tobytes()), False))
    models["name_order"] = {"a": a, "z": z}
    # Two empty tensors at the same offset as the next one, and more metadata.
    w = np.array([1.0, -1.0], dtype=np.float32)
    text = _header({"__metadata__": {"format": "pt", "note": "\u00fcn\u00efcode", "empty": ""},
                    "w": _entry("F32", [2], [0, 8]), "e1": _entry("F32", [0], [0, 0]),
                    "e2": _entry("I64", [0, 3], [0, 0])})
    out.append(("empties_share_offset.safetensors", "empties",
                _raw_safetensors(text, w.tobytes()), False))
    models["empties"] = {"w": w, "e1": np.zeros((0,), np.float32), "e2": np.zeros((0, 3), np.int64)}
    # F16 and BF16 are read as float32, as torch's .float() converts them: subnormals, infinities
    # and NaN included.
    half = np.array([1.0, -2.5, 65504.0, 2.0**-24, -0.0, np.inf, -np.inf, np.nan, 1 / 3], np.float16)
    out.append(("f16.safetensors", "f16_as_float32", _safetensors_bytes({"w": half}), False))
    models["f16_as_float32"] = {"w": half.astype(np.float32)}
    brain = np.array([0x3F80, 0xC0A0, 0x0001, 0x7F80, 0xFF80, 0x7FC0, 0x8000, 0x4049], np.uint16)
    text = _header({"w": _entry("BF16", [2, 4], [0, 16])})
    out.append(("bf16.safetensors", "bf16_as_float32",
                _raw_safetensors(text + " " * (-len(text) % 8), brain.astype("<u2").tobytes()), False))
    models["bf16_as_float32"] = {"w": (brain.astype(np.uint32) << 16).view(np.float32).reshape(2, 4)}
    return out


def _bad_safetensors(models):
    """(file, bytes, error_contains)."""
    good = _safetensors_bytes(models["example"], {"format": "pt"})
    f32x2 = np.array([1.0, 2.0], dtype=np.float32).tobytes()
    two = _entry("F32", [2], [0, 8])
    second = lambda offsets: _header({"a": two, "b": _entry("F32", [2], offsets)})  # noqa: E731
    return [
        ("too_short.safetensors", b"\x08\x00\x00", "fewer than the 8-byte header size"),
        ("header_too_large.safetensors", _raw_safetensors("{}", size=100_000_001),
         "larger than the limit of 100000000 bytes"),
        ("header_size_max.safetensors", _raw_safetensors("{}", size=2**64 - 1),
         "larger than the limit of 100000000 bytes"),
        ("header_past_eof.safetensors", _raw_safetensors('{"w":1}', size=1000),
         "runs past the end of the file"),
        ("not_utf8.safetensors", _raw_safetensors(b'{"w\xff":' + _header(two).encode() + b"}",
                                                  f32x2), "not valid UTF-8"),
        ("not_json.safetensors", _raw_safetensors('{"w":{"dtype":"F32",', f32x2),
         "not valid JSON"),
        ("not_object.safetensors", _raw_safetensors("[1, 2]  "), "does not start with '{'"),
        ("entry_not_object.safetensors", _raw_safetensors('{"w":[1,2]}'), "is not an object"),
        ("duplicate_keys.safetensors",
         _raw_safetensors('{"w":%s,"w":%s}' % (_header(two), _header(two)), f32x2),
         "the key 'w' twice"),
        ("duplicate_entry_keys.safetensors",
         _raw_safetensors('{"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}',
                          f32x2), "the key 'dtype' twice"),
        ("extra_entry_key.safetensors",
         _raw_safetensors(_header({"w": dict(two, extra=1)}), f32x2), "unexpected key 'extra'"),
        ("missing_entry_key.safetensors",
         _raw_safetensors(_header({"w": {"dtype": "F32", "shape": [2]}}), f32x2),
         "has no 'data_offsets'"),
        ("bad_dtype.safetensors", _raw_safetensors(_header({"w": _entry("F99", [2], [0, 8])}),
                                                   f32x2), "unknown dtype 'F99'"),
        ("dtype_not_string.safetensors", _raw_safetensors(_header({"w": _entry(32, [2], [0, 8])}),
                                                          f32x2), "dtype must be a string"),
        ("u8.safetensors", _safetensors_bytes({"w": np.array([1, 2], np.uint8)}),
         "attn reads F32, F64, I32, I64 and BOOL"),
        ("overlapping_offsets.safetensors", _raw_safetensors(second([4, 12]), f32x2 * 2 + b"\0" * 4),
         "overlapping"),
        ("hole.safetensors", _raw_safetensors(second([12, 20]), f32x2 * 2 + b"\0" * 4), "hole"),
        ("offsets_past_end.safetensors", _raw_safetensors(second([8, 16]), f32x2 + b"\0" * 4),
         "past the end"),
        ("end_before_begin.safetensors",
         _raw_safetensors(_header({"w": _entry("F32", [0], [8, 0])}), f32x2), "ends before"),
        ("trailing_bytes.safetensors", good + b"\0" * 8, "8 trailing bytes"),
        ("size_mismatch.safetensors",
         _raw_safetensors(_header({"w": _entry("F32", [2, 3], [0, 20])}), b"\0" * 20),
         "which takes 24 bytes"),
        ("shape_overflow.safetensors",
         _raw_safetensors(_header({"w": _entry("F32", [2**32, 2**32, 2], [0, 8])}), f32x2),
         "overflows"),
        ("bytes_overflow.safetensors",
         _raw_safetensors(_header({"w": _entry("F64", [2**62], [0, 8])}), f32x2), "overflows"),
        ("negative_shape.safetensors",
         _raw_safetensors(_header({"w": _entry("F32", [-1, 2], [0, 8])}), f32x2), "negative"),
        ("float_shape.safetensors",
         _raw_safetensors(_header({"w": _entry("F32", [2.0], [0, 8])}), f32x2),
         "not a whole number"),
        ("offsets_not_pair.safetensors",
         _raw_safetensors(_header({"w": _entry("F32", [2], [0])}), f32x2), "two numbers"),
        ("metadata_not_strings.safetensors",
         _raw_safetensors(_header({"__metadata__": {"format": 1}, "w": two}), f32x2),
         "__metadata__ must map strings to strings"),
        ("truncated.safetensors", good[:-4], "truncated"),
    ]


# --- npz -----------------------------------------------------------------------------------------

def _savez(arrays, compressed=False):
    """numpy.savez(_compressed) of the arrays in name order (attn's order)."""
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **dict(sorted(arrays.items())))
    return buffer.getvalue()


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


class _Unseekable:
    """A write-only stream: zipfile then writes data descriptors after each member (flag 8)."""

    def __init__(self):
        self.buffer = io.BytesIO()

    def write(self, data):
        return self.buffer.write(data)

    def flush(self):
        pass


def _zipfile(members, compression, comment=b"", stream=None):
    """Python's zipfile with fixed timestamps: members are (name, bytes)."""
    target = stream or io.BytesIO()
    with zipfile.ZipFile(target, "w", compression) as archive:
        archive.comment = comment
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = compression
            archive.writestr(info, data)
    return (stream.buffer if stream else target).getvalue()


def _deflate(raw):
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(raw) + compressor.flush()


def _member(name, raw, method=0, **fields):
    data = _deflate(raw) if method == 8 else raw
    member = {"name": name.encode(), "data": data, "method": method, "crc": zlib.crc32(raw),
              "size": len(raw), "csize": len(data), "flags": 0 if name.isascii() else 0x800}
    member.update(fields)
    return member


def _zip(members, zip64=False, disk=0, cd_offset_delta=0, locator_offset=None):
    """A zip built field by field, for what zipfile will not write. Members come from _member;
    "local_name" overrides the local header's name. zip64=True moves the sizes and offsets into
    zip64 extra fields and adds the zip64 end record and locator."""
    out, central = bytearray(), bytearray()
    for m in members:
        offset = len(out)
        version = 45 if zip64 else 20
        if zip64:
            local_extra = struct.pack("<HHQQ", 1, 16, m["size"], m["csize"])
            central_extra = struct.pack("<HHQQQ", 1, 24, m["size"], m["csize"], offset)
            sizes, central_offset = (0xFFFFFFFF, 0xFFFFFFFF), 0xFFFFFFFF
        else:
            local_extra = central_extra = b""
            sizes, central_offset = (m["csize"], m["size"]), offset
        local_name = m.get("local_name", m["name"])
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, version, m["flags"], m["method"], 0, 0x21,
                           m["crc"], *sizes, len(local_name), len(local_extra))
        out += local_name + local_extra + m["data"]
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x0300 | version, version,
                               m["flags"], m["method"], 0, 0x21, m["crc"], *sizes, len(m["name"]),
                               len(central_extra), 0, 0, 0, 0o600 << 16, central_offset)
        central += m["name"] + central_extra
    count, cd_offset = len(members), len(out)
    out += central
    if zip64:
        record = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count,
                           len(central), cd_offset)
        out += struct.pack("<IIQI", 0x07064B50, 0,
                           record if locator_offset is None else locator_offset, 1)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFFFFFF,
                           0xFFFFFFFF, 0)
    else:
        out += struct.pack("<IHHHHIIH", 0x06054B50, disk, disk, count, count, len(central),
                           cd_offset + cd_offset_delta, 0)
    return bytes(out)


def _torch_save(state, zip_format=True):
    buffer = io.BytesIO()
    tensors = {k: torch.from_numpy(v) for k, v in state.items()}
    torch.save(tensors, buffer, _use_new_zipfile_serialization=zip_format)
    if zip_format:
        return buffer.getvalue()
    # The legacy format keys storages by memory address (pickle BINUNICODE strings: "X", a
    # 4-byte length, digits): number them instead to make the file reproducible.
    keys = {}

    def renumber(match):
        key = keys.setdefault(match.group(1), str(len(keys)).encode())
        return b"X" + struct.pack("<I", len(key)) + key

    return re.sub(rb"X(?:.{4})(\d{6,})", renumber, buffer.getvalue(), flags=re.DOTALL)


def _good_npz(models):
    """(file, model, bytes, canonical): canonical files are what serialize_npz must reproduce."""
    sa, mixed = models["selfattention"], models["mixed"]
    npys = [(k + ".npy", _npy(v)) for k, v in sorted(sa.items())]
    zip64 = _zip([_member(name, data, method) for (name, data), method in zip(npys, (0, 8, 0))],
                 zip64=True)
    return [
        ("selfattention_savez.npz", "selfattention", _savez(sa), True),
        ("selfattention_compressed.npz", "selfattention", _savez(sa, True), False),
        ("encoder_layer_compressed.npz", "encoder_layer", _savez(models["encoder_layer"], True),
         False),
        ("mixed_savez.npz", "mixed", _savez(mixed), True),
        ("mixed_compressed.npz", "mixed", _savez(mixed, True), False),
        ("empty_savez.npz", "empty", _savez({}), True),
        ("streamed_deflate.npz", "selfattention",
         _zipfile(npys, zipfile.ZIP_DEFLATED, stream=_Unseekable()), False),
        ("comment_deflate.npz", "selfattention",
         _zipfile(npys, zipfile.ZIP_DEFLATED, comment=b"an archive comment"), False),
        ("zip64_records.npz", "selfattention", zip64, False),
        ("safetensors_named.npz", "example", _safetensors_bytes(models["example"],
                                                                {"format": "pt"}), False),
    ]


def _bad_npz(models):
    """(file, bytes, error_contains)."""
    sa = models["selfattention"]
    good = _savez(sa)
    npy = _npy(sa["tokeys.weight"])
    first_data = good.index(b"\x93NUMPY")
    bad_crc = bytearray(good)
    bad_crc[first_data + len(npy) - 1] ^= 0x01  # the last data byte of the first member
    encrypted = _member("w.npy", npy, flags=0x1)
    overlap_a = _member("a.npy", npy, size=len(npy) + 30, csize=len(npy) + 30)
    return [
        ("not_a_zip.npz", b"hello, this is not a zip archive\n", "not a zip archive"),
        ("truncated.npz", good[:len(good) // 2], "truncated"),
        ("trailing_garbage.npz", good + b"junk", "4 unexpected bytes after the zip's end record"),
        ("bad_crc.npz", bytes(bad_crc), "CRC-32"),
        ("bzip2.npz", _zipfile([("w.npy", npy)], zipfile.ZIP_BZIP2),
         "compression method 12 (bzip2)"),
        ("lzma.npz", _zipfile([("w.npy", npy)], zipfile.ZIP_LZMA), "compression method 14 (LZMA)"),
        ("encrypted.npz", _zip([encrypted]), "is encrypted"),
        ("not_npy_member.npz", _zipfile([("w.npy", npy), ("notes.txt", b"hi\n")],
                                        zipfile.ZIP_STORED), "'notes.txt' is not a .npy file"),
        ("duplicate_member.npz", _zip([_member("w.npy", npy), _member("w.npy", npy)]),
         "'w.npy' appears twice"),
        ("huge_declared_size.npz", _zip([_member("w.npy", npy, 8, size=2**40)], zip64=True),
         "more than deflate can produce"),
        ("declared_too_small.npz", _zip([_member("w.npy", npy, 8, size=len(npy) - 10)]),
         f"more bytes than the {len(npy) - 10} declared"),
        ("declared_too_large.npz", _zip([_member("w.npy", npy, 8, size=len(npy) + 10)]),
         f"inflates to {len(npy)} bytes, not the {len(npy) + 10} declared"),
        ("corrupt_deflate.npz", _zip([_member("w.npy", npy, 8, data=b"\xff" * 16, csize=16)]),
         "corrupt deflate data"),
        ("stored_size_mismatch.npz", _zip([_member("w.npy", npy, size=len(npy) + 1)]),
         "is stored but its sizes differ"),
        ("multi_disk.npz", _zip([_member("w.npy", npy)], disk=1), "spans several disks"),
        ("cd_offset_past_end.npz", _zip([_member("w.npy", npy)], cd_offset_delta=1000),
         "central directory"),
        ("zip64_bad_locator.npz", _zip([_member("w.npy", npy)], zip64=True, locator_offset=2**40),
         "zip64 end record"),
        ("local_name_mismatch.npz", _zip([_member("w.npy", npy, local_name=b"v.npy")]),
         "names 'v.npy' instead"),
        ("overlapping_members.npz", _zip([overlap_a, _member("b.npy", npy)]), "overlap"),
        ("bad_member_npy.npz", _zipfile([("w.npy", b"not numpy")], zipfile.ZIP_STORED),
         "not a .npy file"),
        ("torch_save.npz", _torch_save(sa), PICKLE_ERROR),
    ]


def _bad_other(models):
    """read_weights' own refusals: pickles by extension or content, unknown formats."""
    sa = models["selfattention"]
    # One tensor: the legacy format writes storages in the order of their memory addresses.
    legacy = _torch_save({"w": sa["tokeys.weight"]}, zip_format=False)
    assert legacy[0] == 0x80 and legacy[8] != ord("{")
    return [
        ("model.pt", _torch_save(sa), PICKLE_ERROR),
        ("torch_zip.weights", _torch_save(sa), PICKLE_ERROR),
        ("legacy_pickle.weights", legacy, PICKLE_ERROR),
        ("legacy_pickle.safetensors", legacy, PICKLE_ERROR),
        ("unknown.weights", b"hello, these are not weights\n", "attn reads .safetensors and .npz"),
    ]


def _numpy_loads(data):
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            for key in archive.files:
                archive[key]  # noqa: B018 - reading checks the CRC
        return True
    except Exception:  # noqa: BLE001 - any refusal counts
        return False


def _same(a, b):
    return set(a) == set(b) and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and
        np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a)


def generate(out_dir: pathlib.Path) -> dict:
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.iterdir():
        stale.unlink()
    models = _models()
    cases = []
    for name, model, data, canonical in _good_safetensors(models) + _good_npz(models):
        if data[:2] == b"PK":
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                loaded = {k: archive[k] for k in archive.files}
        else:
            loaded = _read_safetensors(data)
        assert _same(loaded, models[model]), name
        (out_dir / name).write_bytes(data)
        cases.append({"file": name, "valid": True, "model": model, "canonical": canonical})
    for name, data, error in _bad_safetensors(models) + _bad_npz(models) + _bad_other(models):
        (out_dir / name).write_bytes(data)
        case = {"file": name, "valid": False, "error_contains": error}
        if name.endswith(".npz"):
            case["numpy_loads"] = _numpy_loads(data)
        cases.append(case)
    document = {"models": {k: _describe(v) for k, v in models.items()}, "cases": cases}
    (out_dir / "cases.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    good = sum(c["valid"] for c in cases)
    return {"dir": out_dir.name, "cases": "cases.json", "good": good, "bad": len(cases) - good}


if __name__ == "__main__":
    root = pathlib.Path(__file__).resolve().parents[2]
    print(json.dumps(generate(root / "data" / "fixtures" / "weights")))
