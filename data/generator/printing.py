"""Fixtures for core/io/print.cpp: tensors and exactly what repr() prints for them in PyTorch 1.13.

Each case writes NN_name.npy (the tensor, C order) and NN_name.txt (repr(t), no trailing newline)
and is listed in cases.json with the print options it was printed under. The repr is taken of
torch.from_numpy(np.load(npy)), so the text describes exactly the bytes the C++ test loads.

Run from the repository root: /usr/bin/python3 data/generator/printing.py
"""

import json
import math
import pathlib

import numpy as np
import torch

DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def _f32(values):
    return torch.tensor(values, dtype=torch.float32)


def _f64(values):
    return torch.tensor(values, dtype=torch.float64)


def _negative_nan():
    # x86's 0/0 is a nan with its sign bit set; Python prints it as plain "nan"
    a = np.array([np.nan, 1.0, 2.5], dtype=np.float32)
    a[0] = -a[0]
    assert np.signbit(a[0])
    return torch.from_numpy(a)


def _cases():
    """(name, tensor, options) in fixture order; options override DEFAULTS."""
    torch.manual_seed(0)
    randn_3x4 = torch.randn(3, 4)  # the ecosystem.md golden values
    torch.manual_seed(1)
    randn_3x20x20 = torch.randn(3, 20, 20)
    torch.manual_seed(2)
    lesson_1x5x6 = torch.randn(1, 5, 6)
    lesson_2x5x12 = torch.randn(2, 5, 12)
    softmax_2x4x4 = torch.softmax(torch.randn(2, 4, 4), dim=-1)
    torch.manual_seed(3)
    randn_2x15 = torch.randn(2, 15)
    randn_3x20 = torch.randn(3, 20)
    randn_2x3 = torch.randn(2, 3)
    float64_4x5 = torch.randn(4, 5, dtype=torch.float64)
    float64_8 = torch.randn(8, dtype=torch.float64)
    randn_1200 = torch.randn(1200)
    rank4 = torch.randn(2, 2, 3, 4)
    rank4_summarised = torch.randn(8, 3, 5, 10)
    bool_1200 = torch.rand(1200) > 0.5
    randn_10 = torch.randn(10)

    return [
        # the golden cases of ecosystem.md 5.1
        ("golden_2x2", _f32([[0.1, 0.2], [0.3, 0.4]]), {}),
        ("int_valued_floats", _f32([1.0, 2.0, 3.0]), {}),
        ("mixed_widths", _f32([-1.5, 2.25, 100.0]), {}),
        ("sci_tiny", _f32([1e-5, 1.0]), {}),
        ("sci_int_ratio", _f32([1.0, 1e4]), {}),
        ("nan_inf_mix", _f32([math.nan, math.inf, -math.inf, 1.5]), {}),
        ("nan_with_ints", _f32([math.nan, 1.0, 2.0]), {}),
        ("scalar_pi", torch.tensor(math.pi), {}),
        ("empty_1d", torch.zeros(0), {}),
        ("empty_0x3", torch.zeros(0, 3), {}),
        ("int32_arange", torch.arange(6, dtype=torch.int32), {}),
        ("bool_1d", torch.tensor([True, False]), {}),
        ("float64_1d", _f64([0.1, 0.2]), {}),
        ("negative_zero", _f32([-0.0, 0.0, 1.25]), {}),
        ("sci_false_keeps_width", _f32([1e-5, 1.0]), {"sci_mode": False}),
        ("softmax_2x3", torch.softmax(_f32([[1, 2, 3], [1, 1, 1]]), dim=-1), {}),
        ("arange_2x3x4", torch.arange(24.0).reshape(2, 3, 4), {}),
        ("linspace_30", torch.linspace(0, 1, 30), {}),
        ("summarised_arange_2000", torch.arange(2000.0), {}),
        ("summarised_40x50", torch.arange(2000.0).reshape(40, 50) / 7, {}),
        ("randn_3x4_seed0", randn_3x4, {}),
        # ranks and summarisation
        ("summarised_3x20x20", randn_3x20x20, {}),
        ("rank4", rank4, {}),
        ("summarised_rank4", rank4_summarised, {}),
        ("exactly_1000", torch.arange(1000.0).reshape(10, 100), {}),
        ("summarised_1001", torch.arange(1001.0), {}),
        ("full_1200", randn_1200, {"threshold": None}),
        ("threshold_10_edgeitems_2", torch.arange(30).reshape(5, 6),
         {"threshold": 10, "edgeitems": 2}),
        ("edgeitems_0_vector", torch.arange(10.0), {"threshold": 5, "edgeitems": 0}),
        # lesson shapes
        ("lesson_1x5x6", lesson_1x5x6, {}),
        ("lesson_2x5x12", lesson_2x5x12, {}),
        ("softmax_2x4x4", softmax_2x4x4, {}),
        # notation
        ("sci_huge_ints", _f32([2.5e10, -3.75e9, 1.0e9]), {}),
        ("sci_fraction_ratio", _f32([0.5, 750.25]), {}),
        ("fixed_ratio_1000", _f32([1.0, 1000.0]), {}),
        ("sci_ratio_1001", _f32([1.0, 1001.0]), {}),
        ("float32_below_1e-4", _f32([0.0001, 0.05]), {}),
        ("float64_at_1e-4", _f64([0.0001, 0.05]), {}),
        ("sci_exponent_3_digits", _f64([1e-300, 1.0, 1e300]), {}),
        ("float32_max", _f32([3.4028235e38, -1.0]), {}),
        ("large_negative_sci", _f32([-1234567.5, -2.25, 3.0]), {}),
        ("large_negative_fixed", _f32([-99999.5, -500.25, -120.0]), {}),
        ("round_up_float32", _f32([0.99996, 9.99996, 0.5]), {}),
        ("round_0_99995", _f32([0.99995, 0.5]), {}),
        ("round_0_99995_float64", _f64([0.99995, 0.5]), {}),
        ("ties_fixed", _f32([0.03125, 0.09375, 0.15625, 0.21875]), {}),
        ("ties_sci", _f32([100005.0, 100015.0, 3.0]), {}),
        ("sci_mode_true", randn_2x3, {"sci_mode": True}),
        ("sci_mode_true_ints", _f32([1.0, 2.0, 3.0]), {"sci_mode": True}),
        ("sci_mode_false_huge", _f32([1.5e9, 2.0]), {"sci_mode": False}),
        ("sci_mode_true_all_zero", torch.zeros(3), {"sci_mode": True}),
        ("precision_2", randn_3x4, {"precision": 2}),
        ("precision_8", randn_2x3, {"precision": 8}),
        ("precision_8_sci", _f32([1e-5, 1.0, 3.0]), {"precision": 8}),
        ("linewidth_120", randn_3x20, {"linewidth": 120}),
        ("linewidth_20", randn_10, {"linewidth": 20}),
        ("wrap_2x15", randn_2x15, {}),
        # nan, inf, zero
        ("all_nan", _f32([math.nan, math.nan]), {}),
        ("inf_only", _f32([math.inf, -math.inf, 0.0]), {}),
        ("all_zero_2x2", torch.zeros(2, 2), {}),
        ("negative_nan", _negative_nan(), {}),
        ("nan_in_sci", _f32([math.nan, 1e-6, -math.inf, 2.0]), {}),
        # integer and bool dtypes
        ("int64_negative", torch.tensor([-5, 0, 12345, -987654321]), {}),
        ("int64_arange", torch.arange(10), {}),
        ("int32_negative_2x3", torch.tensor([[-1, 20, -300], [4, -5, 6]], dtype=torch.int32), {}),
        ("int64_summarised_40x50", torch.arange(2000).reshape(40, 50) - 1000, {}),
        ("bool_2x3", torch.tensor([[True, False, True], [False, False, True]]), {}),
        ("bool_summarised", bool_1200, {}),
        ("float64_4x5", float64_4x5, {}),
        # 0-d
        ("scalar_int64", torch.tensor(42), {}),
        ("scalar_float64", torch.tensor(2.5, dtype=torch.float64), {}),
        ("scalar_negative_zero", torch.tensor(-0.0), {}),
        ("scalar_nan", torch.tensor(math.nan), {}),
        ("scalar_bool", torch.tensor(True), {}),
        ("scalar_int32", torch.tensor(-7, dtype=torch.int32), {}),
        # empty
        ("empty_2x0x4", torch.zeros(2, 0, 4), {}),
        ("empty_int64", torch.zeros(0, dtype=torch.int64), {}),
        ("empty_bool_0x3", torch.zeros(0, 3, dtype=torch.bool), {}),
        ("empty_float64_0x3_narrow", torch.zeros(0, 3, dtype=torch.float64), {"linewidth": 30}),
        # dtype suffix placement
        ("dtype_suffix_wraps", float64_8, {}),
        # "tensor([100, ..., 109]" is 57 characters; torch counts it as 59, so ", dtype=torch.int32"
        # stays on the line at linewidth 78 (59 + 17 + 2 = 78) and wraps at 77
        ("suffix_boundary_fits", torch.arange(100, 110, dtype=torch.int32), {"linewidth": 78}),
        ("suffix_boundary_wraps", torch.arange(100, 110, dtype=torch.int32), {"linewidth": 77}),
        ("int32_suffix_wraps", torch.arange(100, 124, dtype=torch.int32), {}),
    ]


def _options(overrides):
    options = dict(DEFAULTS)
    options.update(overrides)
    return options


def _set_printoptions(options):
    threshold = math.inf if options["threshold"] is None else options["threshold"]
    torch.set_printoptions(
        precision=options["precision"],
        threshold=threshold,
        edgeitems=options["edgeitems"],
        linewidth=options["linewidth"],
        sci_mode=options["sci_mode"],
    )


def generate(out_dir: pathlib.Path) -> dict:
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in list(out_dir.glob("[0-9][0-9]_*.npy")) + list(out_dir.glob("[0-9][0-9]_*.txt")):
        stale.unlink()

    listing = []
    for number, (name, tensor, overrides) in enumerate(_cases(), start=1):
        stem = f"{number:02d}_{name}"
        options = _options(overrides)
        np.save(out_dir / f"{stem}.npy", np.array(tensor.numpy(), order="C"))  # keeps 0-d 0-d
        loaded = torch.from_numpy(np.load(out_dir / f"{stem}.npy"))
        try:
            _set_printoptions(options)
            text = repr(loaded)
        finally:
            torch.set_printoptions(profile="default")  # also resets sci_mode to None
        (out_dir / f"{stem}.txt").write_text(text)
        listing.append({"name": name, "npy": f"{stem}.npy", "repr": f"{stem}.txt",
                        "options": options})

    (out_dir / "cases.json").write_text(json.dumps(listing, indent=1) + "\n")
    return {"cases": len(listing), "torch": torch.__version__, "numpy": np.__version__}


if __name__ == "__main__":
    repo = pathlib.Path(__file__).resolve().parents[2]
    print(generate(repo / "data" / "fixtures" / "print"))
