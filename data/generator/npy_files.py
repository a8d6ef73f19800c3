"""Fixtures for core/io/npy.cpp: .npy files written by numpy itself, and broken ones.

generate(out_dir) writes every file plus cases.json, which lists each file with what attn must
read from it (dtype, shape, values) or the text its error message must contain. Good files are
checked against numpy.load here; for bad ones cases.json records whether numpy itself loads them
("numpy_loads": attn is stricter about trailing bytes).
"""

import io
import json
import pathlib
import pickle
import struct
import zipfile

import numpy as np
from numpy.lib import format as npformat

MAGIC = b"\x93NUMPY"


def _formula(shape, dtype, scale=0.5, offset=-1.0):
    """arange * scale + offset: small binary fractions, exact in float32 and in JSON."""
    n = int(np.prod(shape, dtype=np.int64))
    return (np.arange(n, dtype=np.float64) * scale + offset).astype(dtype).reshape(shape)


def _save(array, version=None):
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, array, allow_pickle=False)
    else:
        npformat.write_array(buffer, array, version=version, allow_pickle=False)
    return buffer.getvalue()


def _wrap(header, data=b"", version=(1, 0), align=True):
    """A hand-made .npy: header text padded as numpy pads it (or not at all), then data."""
    length_format = "<H" if version == (1, 0) else "<I"
    encoded = header.encode("utf8" if version == (3, 0) else "latin1")
    preamble = len(MAGIC) + 2 + struct.calcsize(length_format)
    pad = (64 - (preamble + len(encoded) + 1) % 64) % 64 if align else 0
    encoded += b" " * pad + b"\n"
    return MAGIC + bytes(version) + struct.pack(length_format, len(encoded)) + encoded + data


def _header(descr, shape, fortran_order=False):
    return "{'descr': %r, 'fortran_order': %r, 'shape': %r, }" % (descr, fortran_order, shape)


def _npz_bytes():
    """np.savez output, rewritten with a fixed timestamp so the fixture is reproducible."""
    buffer = io.BytesIO()
    np.savez(buffer, x=_formula((2, 3), np.float32))
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            target.writestr(fixed, source.read(info.filename))
    return out.getvalue()


def _numpy_loads(data):
    try:
        np.load(io.BytesIO(data), allow_pickle=False)
        return True
    except Exception:  # noqa: BLE001 - any refusal counts
        return False


def _good_cases():
    """(file, array, bytes, canonical): canonical files are what serialize_npy must reproduce."""
    f32_2x3 = _formula((2, 3), np.float32)
    int64_values = np.array([-(2**62), -1, 0, 1, 2**53 + 1, 2**62], dtype=np.int64)
    cases = [
        ("float32_rank0.npy", _formula((), np.float32), None),
        ("float32_rank1.npy", _formula((5,), np.float32), None),
        ("float32_rank2.npy", f32_2x3, None),
        ("float32_rank3.npy", _formula((2, 3, 4), np.float32), None),
        ("float32_rank4.npy", _formula((2, 1, 3, 2), np.float32), None),
        ("float64_2x3.npy", _formula((2, 3), np.float64, 0.25, -2.0), None),
        ("int32_2x3.npy", _formula((2, 3), np.int32, 1.0, -3.0), None),
        ("int64_6.npy", int64_values, None),
        ("bool_2x3.npy", np.array([[True, False, False], [True, True, False]]), None),
        ("empty_float32_0.npy", np.zeros((0,), np.float32), None),
        ("empty_float32_2x0x3.npy", np.zeros((2, 0, 3), np.float32), None),
        ("empty_int64_0x2.npy", np.zeros((0, 2), np.int64), None),
    ]
    out = [(name, array, _save(array), True) for name, array, _ in cases]
    noncanonical = [
        ("bigendian_f4_2x3.npy", f32_2x3.astype(">f4")),
        ("bigendian_f8_3.npy", _formula((3,), ">f8", 0.125, 1.0)),
        ("bigendian_i4_4.npy", _formula((4,), ">i4", 1000.0, -2000.0)),
        ("bigendian_i8_6.npy", int64_values.astype(">i8")),
        ("fortran_f4_2x3.npy", np.asfortranarray(f32_2x3)),
        ("fortran_f4_2x3x4.npy", np.asfortranarray(_formula((2, 3, 4), np.float32))),
        ("fortran_i8_3x2.npy", np.asfortranarray(_formula((3, 2), np.int64, 7.0, -5.0))),
        ("fortran_bigendian_f8_2x2x3.npy",
         np.asfortranarray(_formula((2, 2, 3), np.float64, 0.5, 0.0)).astype(">f8", order="K")),
        ("fortran_empty_f4_3x0.npy", np.asfortranarray(np.zeros((3, 0), np.float32))),
    ]
    for name, array in noncanonical:
        data = _save(array)
        assert array.ndim < 2 or array.size == 0 or name.startswith("fortran") == (
            b"'fortran_order': True" in data), name
        out.append((name, array, data, False))
    out.append(("version2_f4_2x3.npy", f32_2x3, _save(f32_2x3, (2, 0)), False))
    out.append(("version3_i4_3.npy", _formula((3,), np.int32, 1.0, 4.0),
                _save(_formula((3,), np.int32, 1.0, 4.0), (3, 0)), False))
    # Headers numpy reads but does not write: double quotes, other key order, no trailing comma
    # or alignment; and Python 2's long suffix, which numpy strips from 1.0/2.0 headers.
    hand = np.array([7, -8, 9], dtype=np.int32)
    out.append(("handwritten_header.npy", hand,
                _wrap('{"shape": (3,), "fortran_order": False, "descr": "<i4"}', hand.tobytes(),
                      align=False), False))
    longs = _formula((2, 2), np.float64, 2.0, -1.0)
    out.append(("python2_long_shape.npy", longs,
                _wrap("{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 2L), }",
                      longs.tobytes()), False))
    return out


def _bad_cases():
    """(file, bytes, descr, shape, error_contains)."""
    good = _save(_formula((2, 3), np.float32))
    f32_data = _formula((2, 3), np.float32).tobytes()
    objects = io.BytesIO()
    np.save(objects, np.array([1, "a", None], dtype=object), allow_pickle=True)
    huge = _header("<f4", (2,)) + " " * 10100
    return [
        ("empty.npy", b"", None, None, "empty"),
        ("bad_magic.npy", b"hello, this is not numpy\n", None, None, "not a .npy file"),
        ("zip_npz.npy", _npz_bytes(), None, None, "zip archive"),
        ("pickle_pt.npy", pickle.dumps({"weight": [1.0, 2.0]}, protocol=2), None, None,
         "Python pickle"),
        ("version_4.npy", MAGIC + bytes((4, 0)) + good[8:], None, None,
         "unsupported .npy format version 4.0"),
        ("truncated_preamble.npy", good[:7], None, None, "truncated"),
        ("truncated_header.npy", good[:40], None, None, "truncated header"),
        ("truncated_data.npy", good[:-5], "<f4", [2, 3], "truncated data"),
        ("shape_larger_than_data.npy", _wrap(_header("<f4", (4, 3)), f32_data), "<f4", [4, 3],
         "needs 48 bytes"),
        ("trailing_bytes.npy", good + b"\0" * 8, "<f4", [2, 3], "trailing bytes"),
        ("header_too_big.npy", _wrap(huge, _formula((2,), np.float32).tobytes()), "<f4", [2],
         "more than the 10000 bytes"),
        ("header_not_dict.npy", _wrap("['descr', '<f4']", f32_data), None, None,
         "not a valid Python dict"),
        ("header_syntax_error.npy", _wrap("{'descr': '<f4', 'fortran_order' False}", f32_data),
         None, None, "not a valid Python dict"),
        ("missing_key.npy", _wrap("{'descr': '<f4', 'shape': (2, 3), }", f32_data), "<f4",
         [2, 3], "missing the key 'fortran_order'"),
        ("extra_key.npy",
         _wrap("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1, }", f32_data),
         "<f4", [2, 3], "unexpected key 'x'"),
        ("object_dtype.npy", objects.getvalue(), "|O", [3], "pickled Python objects are refused"),
        ("complex64.npy", _save(np.arange(3, dtype=np.complex64)), "<c8", [3], "complex dtype"),
        ("complex128.npy", _save(np.arange(3, dtype=np.complex128)), "<c16", [3],
         "complex dtype"),
        ("float16.npy", _save(np.arange(3, dtype=np.float16)), "<f2", [3],
         "unsupported dtype '<f2'"),
        ("uint8.npy", _save(np.arange(3, dtype=np.uint8)), "|u1", [3],
         "unsupported dtype '|u1'"),
        ("structured.npy", _save(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])), None, [2],
         "structured (record) dtype"),
        ("fortran_order_not_bool.npy",
         _wrap("{'descr': '<f4', 'fortran_order': 'no', 'shape': (2, 3), }", f32_data), "<f4",
         [2, 3], "not True or False"),
        ("shape_not_tuple.npy", _wrap(_header("<f4", [2, 3]), f32_data), "<f4", [2, 3],
         "not a tuple"),
        ("negative_shape.npy", _wrap(_header("<f4", (-1, 3)), f32_data), "<f4", [-1, 3],
         "negative size"),
        ("float_shape.npy", _wrap(_header("<f4", (2.0, 3)), f32_data), "<f4", [2.0, 3],
         "non-integer size"),
        ("overflow_shape.npy", _wrap(_header("<f4", (2**40, 2**40)), f32_data), "<f4",
         [2**40, 2**40], "overflows"),
        ("overflow_bytes.npy", _wrap(_header("<f8", (2**62,)), f32_data), "<f8", [2**62],
         "size in bytes does not fit"),
        ("overflow_extent.npy", _wrap(_header("<f4", (2**70,)), f32_data), "<f4", [2**70],
         "overflows"),
    ]


def _values(array):
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.kind == "b":
        return [int(v) for v in flat]
    if flat.dtype.kind in "iu":
        return [int(v) for v in flat]
    return [float(v) for v in flat]


def generate(out_dir: pathlib.Path) -> dict:
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob("*.npy"):
        stale.unlink()
    cases = []
    for name, array, data, canonical in _good_cases():
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
        assert loaded.dtype == array.dtype and loaded.shape == array.shape, name
        assert np.array_equal(loaded, array), name
        (out_dir / name).write_bytes(data)
        cases.append({
            "file": name,
            "valid": True,
            "dtype": np.dtype(array.dtype.newbyteorder("=")).name,
            "descr": npformat.dtype_to_descr(array.dtype),
            "shape": list(array.shape),
            "fortran_order": bool(array.flags.f_contiguous and not array.flags.c_contiguous),
            "canonical": canonical,
            "values": _values(array),
        })
    for name, data, descr, shape, error in _bad_cases():
        (out_dir / name).write_bytes(data)
        cases.append({
            "file": name,
            "valid": False,
            "dtype": descr,
            "shape": shape,
            "fortran_order": False,
            "error_contains": error,
            "numpy_loads": _numpy_loads(data),
        })
    (out_dir / "cases.json").write_text(json.dumps({"cases": cases}, indent=1) + "\n")
    good = sum(c["valid"] for c in cases)
    return {"dir": out_dir.name, "cases": "cases.json", "good": good, "bad": len(cases) - good}


if __name__ == "__main__":
    root = pathlib.Path(__file__).resolve().parents[2]
    print(json.dumps(generate(root / "data" / "fixtures" / "npy")))
