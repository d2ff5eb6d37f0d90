"""Pool family (CPU; corpus specs: test_corpus_compile.py): one snippet per variant generates, trace and compile ahead of
time for sm_90 and sm_100; the snippets are also executed by the CPU emulator against their references."""

from __future__ import annotations

import pytest

from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_indexed import check_emulated_both_layouts, forward, make_inputs, snippet_spec

FAMILY = "pool"

# name → (forward body, inputs)
CASES = {
    "max2d_k3s2p1_fp16": (forward("F.max_pool2d(x, 3, 2, 1)"), "[torch.randn(2, 5, 17, 19).half()]"),
    "shifted_max2d_k3s2p1_even": (forward("F.max_pool2d(x, 3, 2, 1)"), "[torch.randn(2, 5, 18, 22).half()]"),
    "shifted_max2d_k3s2p1_multiblock": (forward("F.max_pool2d(x, 3, 2, 1)"), "[torch.randn(3, 2, 48, 136)]"),
    "shifted_max2d_k3s1p1_relu": (forward("F.relu(F.max_pool2d(x, 3, 1, 1))"), "[torch.randn(2, 3, 12, 70)]"),
    "shifted_max2d_k5s2p2_ceil_bf16": (forward("F.max_pool2d(x, 5, 2, 2, ceil_mode=True)"),
                                        "[torch.randn(2, 3, 20, 74).to(torch.bfloat16)]"),
    "shifted_avg2d_k3s2p1_exclude": (forward("F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)"),
                                     "[torch.randn(2, 3, 36, 80)]"),
    "shifted_avg2d_k3s2p1_include_ceil": (forward("F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)"),
                                          "[torch.randn(2, 3, 16, 20).half()]"),
    "shifted_max1d_k3s2": (forward("F.max_pool1d(x, 3, 2)"), "[torch.randn(3, 4, 140)]"),
    "shifted_max3d_k3s2p1": (forward("F.max_pool3d(x, 3, 2, 1)"), "[torch.randn(2, 3, 6, 8, 10)]"),
    "shifted_max2d_k3s4": (forward("F.max_pool2d(x, (3, 2), (4, 1), (1, 0))"), "[torch.randn(2, 3, 16, 40)]"),
    "max2d_ceil_dilation": (forward("F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True)"),
                            "[torch.randn(2, 3, 20, 23)]"),
    "max2d_indices": (forward("F.max_pool2d(x, 3, 2, 1, return_indices=True)"), "[torch.randn(2, 3, 11, 13)]"),
    "max1d_indices_ceil": (forward("F.max_pool1d(x, 4, 3, 1, ceil_mode=True, return_indices=True)"),
                           "[torch.randn(3, 4, 29).to(torch.bfloat16)]"),
    "max3d_indices": (forward("F.max_pool3d(x, 2, 2, return_indices=True)[1]"), "[torch.randn(2, 3, 5, 7, 9)]"),
    "max2d_unbatched": (forward("F.max_pool2d(x, 2)"), "[torch.randn(6, 15, 9)]"),
    "max2d_relu_scale_bias": (forward("F.relu(F.max_pool2d(x, 2)) * 0.5 + b", "x, b"),
                              "[torch.randn(2, 6, 14, 10), torch.randn(6, 1, 1)]"),
    "aligned_max2d_ceil_odd": (forward("F.max_pool2d(x, 2, ceil_mode=True)"), "[torch.randn(2, 3, 25, 23)]"),
    "aligned_avg2d_ceil_odd_fp16": (forward("F.avg_pool2d(x, 2, ceil_mode=True)"),
                                    "[torch.randn(2, 3, 25, 23).half()]"),
    "aligned_avg1d_k4": (forward("F.avg_pool1d(x, 4)"), "[torch.randn(3, 5, 70)]"),
    "aligned_max3d_gelu": (forward("F.gelu(F.max_pool3d(x, 2))"), "[torch.randn(2, 3, 6, 9, 10)]"),
    "aligned_max2d_large": (forward("F.max_pool2d(x, 2)"), "[torch.randn(2, 16, 64, 130).to(torch.bfloat16)]"),
    "aligned_avg2d_fp16_pairs": (forward("F.avg_pool2d(x, 2) * 2.0"), "[torch.randn(2, 5, 12, 70).half()]"),
    "aligned_max3d_bf16_pairs": (forward("F.relu(F.max_pool3d(x, 2))"),
                                 "[torch.randn(2, 3, 6, 8, 18).to(torch.bfloat16)]"),
    "avg2d_ceil_exclude_pad": (forward("F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)"),
                               "[torch.randn(2, 3, 16, 21)]"),
    "avg2d_ceil_include_pad": (forward("F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)"), "[torch.randn(2, 3, 16, 21)]"),
    "avg2d_divisor": (forward("F.avg_pool2d(x, (2, 3), (2, 1), divisor_override=5)"),
                      "[torch.randn(2, 3, 9, 10).half()]"),
    "avg1d": (forward("F.avg_pool1d(x, 5, 2, 2, count_include_pad=False)"), "[torch.randn(3, 7, 40)]"),
    "avg3d_bf16": (forward("F.avg_pool3d(x, 3, 2, 1)"), "[torch.randn(2, 3, 7, 8, 9).to(torch.bfloat16)]"),
    "avg2d_global_kernel": (forward("F.avg_pool2d(x, (7, 9))"), "[torch.randn(4, 10, 7, 9)]"),
    "adaptive_avg1d": (forward("F.adaptive_avg_pool1d(x, 6)"), "[torch.randn(2, 5, 23)]"),
    "adaptive_avg2d_global_fp16_relu": (forward("torch.relu(F.adaptive_avg_pool2d(x, 1))"),
                                        "[torch.randn(3, 40, 19, 23).half()]"),
    "adaptive_avg3d": (forward("F.adaptive_avg_pool3d(x, (3, 2, 4))"), "[torch.randn(2, 3, 7, 5, 9)]"),
    "adaptive_max1d_indices": (forward("F.adaptive_max_pool1d(x, 5, return_indices=True)"),
                               "[torch.randn(2, 3, 17)]"),
    "adaptive_max2d_global": (forward("F.adaptive_max_pool2d(x, 1)"), "[torch.randn(2, 70, 33, 35)]"),
    "adaptive_max3d": (forward("F.adaptive_max_pool3d(x, (2, 3, 3))"), "[torch.randn(2, 3, 5, 7, 8)]"),
}
BOTH_ARCHES = {"aligned_max2d_ceil_odd", "shifted_max2d_k3s2p1_even", "max2d_k3s2p1_fp16", "avg2d_ceil_exclude_pad",
               "adaptive_avg2d_global_fp16_relu"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pool_variant_compiles_and_emulates(name, monkeypatch):
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    if name.startswith("shifted_"):  # the shifted-load path is not the default: keep it covered
        monkeypatch.setitem(MEMORY_TUNING, "pool_overlap_mode", "shifted")
    body, inputs = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    source = compile_spec(spec, ("sm_90", "sm_100") if name in BOTH_ARCHES else ("sm_90",))
    result = check_emulated(spec, source, make_input=make_inputs())
    assert result.ok, result.message


def test_aligned_pooling_uses_tile_loads():
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(*CASES["aligned_max2d_large"], FAMILY)
    code = generate_kernel(spec).code
    assert "ct.load(" in code and "ct.gather(" not in code


def test_overlapping_pooling_uses_shifted_tile_loads(monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_overlap_mode", "shifted")
    monkeypatch.setitem(MEMORY_TUNING, "pool_pair_windows", False)
    spec = snippet_spec(*CASES["shifted_max2d_k3s2p1_multiblock"], FAMILY)
    code = generate_kernel(spec).code
    assert ".slice(" in code and code.count("ct.load(") == 4


def test_global_pooling_is_a_row_reduction():
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(*CASES["adaptive_avg2d_global_fp16_relu"], FAMILY)
    code = generate_kernel(spec).code
    assert "ct.load(" in code and "ct.gather(" not in code.split("def launch_")[0].split("ev_relu")[0]


@pytest.mark.parametrize("name", ["max2d_k3s2p1_fp16", "max2d_indices", "adaptive_avg3d"])
def test_pool_nd_gather_path(name, monkeypatch):
    """Inputs of >= 2^31 elements are gathered per dim (no flat int32 offsets): same results."""
    from tilestudio.core.kernels import pool

    monkeypatch.setattr(pool, "FLAT_LIMIT", 0)
    spec = snippet_spec(*CASES[name], FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert "base = rr" not in source.code
    result = check_emulated(spec, source, make_input=make_inputs())
    assert result.ok, result.message


@pytest.mark.parametrize("name", ["max2d_k3s2p1_fp16", "aligned_max2d_ceil_odd", "adaptive_avg2d_global_fp16_relu",
                                  "max2d_relu_scale_bias"])
def test_pool_strided_inputs(name):
    """Non-contiguous inputs (the launch wrapper reshapes them; side inputs are read through their strides)."""
    spec = snippet_spec(*CASES[name], FAMILY)
    result = check_emulated(spec, compile_spec(spec, ("sm_90",)), make_input=make_inputs(strided=True))
    assert result.ok, result.message


def test_aligned_pooling_pads_with_zeros_only_when_exact():
    """Exact aligned views pad with TMA's zero fill (every padded lane feeds an output that is never stored); a
    ceil_mode tail needs the reduction identity (-inf) for its clipped window."""
    from tilestudio.core.kernels import generate_kernel

    exact = generate_kernel(snippet_spec(*CASES["aligned_max2d_large"], FAMILY)).code
    ceil = generate_kernel(snippet_spec(*CASES["aligned_max2d_ceil_odd"], FAMILY)).code
    assert "PaddingMode.ZERO" in exact and "NEG_INF" not in exact
    assert "NEG_INF" in ceil


@pytest.mark.parametrize("mode", ["split", "reshape", "rows"])
@pytest.mark.parametrize("name", ["aligned_max2d_large", "aligned_avg1d_k4", "aligned_max3d_gelu",
                                  "max2d_relu_scale_bias", "max2d_unbatched", "aligned_avg2d_ceil_odd_fp16"])
def test_aligned_pool_layouts(name, mode, monkeypatch):
    """Both aligned layouts (MEMORY_TUNING["pool_aligned_mode"]) compile and match, floor-mode remainders and
    ceil-mode tails (which always reshape) included."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_aligned_mode", mode)
    monkeypatch.setitem(MEMORY_TUNING, "pool_aligned_pairs", False)
    spec = snippet_spec(*CASES[name], FAMILY)
    source = compile_spec(spec, ("sm_90",))
    kernel = source.code.split("def launch_")[0]
    # "rows" takes the reshape layout for a 1-d pool and when the first spatial dim has a floor remainder (15 rows
    # of 2-row windows cannot merge into the channel rows)
    rows_reshapes = name in ("aligned_avg1d_k4", "max2d_unbatched")
    assert ("ct.reshape(ct.load(" in kernel) == (mode == "reshape" or "ceil" in name or
                                                 (mode == "rows" and rows_reshapes))
    assert ("ct.reshape(t, " in kernel) == (mode == "rows" and not rows_reshapes and "ceil" not in name)
    result = check_emulated(spec, source, make_input=make_inputs())
    assert result.ok, result.message
    strided = check_emulated(spec, source, make_input=make_inputs(strided=True))
    assert strided.ok, strided.message


@pytest.mark.parametrize("cols,elems,tma", [(256, 2048, None), (1024, 8192, None), (128, 4096, None),
                                            (256, 8192, False)])
def test_global_pool_tile_table(cols, elems, tma, monkeypatch):
    """Tile sizes of the global pool, and its plain (non-TMA) loads (MEMORY_TUNING["pool_global_tma"] False)."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_global_cols", cols)
    monkeypatch.setitem(MEMORY_TUNING, "pool_global_elems", elems)
    monkeypatch.setitem(MEMORY_TUNING, "pool_global_tma", tma)
    for name in ("adaptive_avg2d_global_fp16_relu", "adaptive_max2d_global"):
        spec = snippet_spec(*CASES[name], FAMILY)
        source = compile_spec(spec, ("sm_90",))
        assert ("allow_tma=False" in source.code) == (tma is False)
        result = check_emulated(spec, source, make_input=make_inputs())
        assert result.ok, result.message


@pytest.mark.parametrize("name", ["aligned_max2d_large", "aligned_avg2d_fp16_pairs", "aligned_max3d_bf16_pairs"])
def test_aligned_pool_reads_16bit_pairs_as_int32(name, monkeypatch):
    """16-bit inputs whose innermost windows are exact pairs load int32 words and split them with bit operations:
    one load per outer window offset, no in-kernel reshape; contiguous and strided inputs match."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_aligned_pairs", True)
    monkeypatch.setitem(MEMORY_TUNING, "pool_quads", False)
    spec = snippet_spec(*CASES[name], FAMILY)
    source = compile_spec(spec, ("sm_90",))
    kernel = source.code.split("def launch_")[0]
    assert "ct.bitcast(" in kernel and "ct.reshape(t, " not in kernel
    assert kernel.count("ct.load(") == (4 if "3d" in name else 2)
    assert ".view(torch.int32)" in source.code
    check_emulated_both_layouts(spec, source)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_pair_pool_is_exact_and_propagates_nan(dtype, monkeypatch):
    """Max pooling of 16-bit pairs is bit-exact (no rounding anywhere) and a NaN in either half of a pair, or in
    either window row, reaches its output."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_aligned_pairs", True)
    monkeypatch.setitem(MEMORY_TUNING, "pool_quads", False)
    spec = snippet_spec(forward("F.max_pool2d(x, 2)"), f"[torch.randn(2, 3, 10, 36).to(torch.{dtype})]", FAMILY)
    source = generate_kernel(spec)
    assert "ct.bitcast(" in source.code
    x = torch.randn(2, 3, 10, 36, generator=torch.Generator().manual_seed(5)).to(getattr(torch, dtype)) * 100
    x[0, 0, 0, 0] = x[0, 1, 3, 5] = x[1, 2, 9, 35] = float("nan")
    x[1, 0, 4, 7] = float("-inf")
    x[1, 1, 2, 2:4] = -0.0
    with emulation():
        out = load_emulated(source)[source.launch_name](x)
    torch.testing.assert_close(out, F.max_pool2d(x, 2), rtol=0, atol=0, equal_nan=True)
    assert int(out.isnan().sum()) == 3


PAIR_WINDOW_CASES = {
    "pairs_k3s2p1_even_fp16": (forward("F.max_pool2d(x, 3, 2, 1)"), "[torch.randn(2, 5, 18, 22).half()]"),
    "pairs_k3s2p1_odd_rows_bf16": (forward("F.max_pool2d(x, 3, 2, 1)"),
                                   "[torch.randn(3, 4, 17, 40).to(torch.bfloat16)]"),
    "pairs_epilogue_bias_bf16": (forward("F.relu(F.max_pool2d(x, 3, 2, 1)) * 0.5 + b", "x, b"),
                                 "[torch.randn(2, 6, 14, 20).to(torch.bfloat16), "
                                 "torch.randn(6, 1, 1).to(torch.bfloat16)]"),
    "pairs_1d_fp16": (forward("F.max_pool1d(x, 3, 2, 1)"), "[torch.randn(3, 4, 140).half()]"),
    "pairs_rows_k5s3p2_bf16": (forward("F.max_pool2d(x, (5, 3), (3, 2), (2, 1))"),
                               "[torch.randn(2, 3, 19, 24).to(torch.bfloat16)]"),
    "pairs_wide_fp16": (forward("F.max_pool2d(x, 3, 2, 1)"), "[torch.randn(1, 2, 6, 1100).half()]"),
}


@pytest.mark.parametrize("flat", [False, True], ids=["tiles", "flat"])
@pytest.mark.parametrize("name", sorted(PAIR_WINDOW_CASES))
def test_max_pool_3_2_1_reads_16bit_pairs(name, flat, monkeypatch):
    """max_pool(3, 2, 1) over an even last dim of a 16-bit input: word loads at element offsets (the left
    neighbour through a shifted dense slice, or, with MEMORY_TUNING["pool_quads_flat"] / ["pool_pairs_flat"] (the
    defaults: quads where the width is a multiple of 4, pairs otherwise), gathered words of a flat output run);
    contiguous and strided inputs match."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_quads_flat", flat)
    monkeypatch.setitem(MEMORY_TUNING, "pool_pairs_flat", flat)
    spec = snippet_spec(*PAIR_WINDOW_CASES[name], FAMILY)
    source = compile_spec(spec, ("sm_90",))
    kernel = source.code.split("def launch_")[0]
    if flat and "flat run" in source.notes[0]:
        assert "ct.Slice(" not in kernel and "ct.gather(a_x, " in kernel
    else:
        assert "ct.load_advanced_indexing(" in kernel and "ct.gather(a_x" not in kernel
    assert ".view(torch.int32)" in source.code
    check_emulated_both_layouts(spec, source)


def test_pair_windows_need_two_output_columns(monkeypatch):
    """One output column would make the left pair's slice (the tile form) lie wholly outside the input (undefined
    behaviour in cuTile, though masked): such pools keep the gather path."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_pairs_flat", False)

    narrow = generate_kernel(snippet_spec(forward("F.max_pool2d(x, 3, 2, 1)"), "[torch.randn(1, 2, 5, 2).half()]",
                                          FAMILY)).code
    wide = generate_kernel(snippet_spec(forward("F.max_pool2d(x, 3, 2, 1)"), "[torch.randn(1, 2, 5, 4).half()]",
                                        FAMILY)).code
    assert "load_advanced_indexing" not in narrow and "load_advanced_indexing" in wide


FLAT_PAIRS = {  # MEMORY_TUNING["pool_pairs_flat"]: widths the quads do not take (not a multiple of 4), float32
    # name: (pool, its arguments, inputs)
    "fp16_width_22": ("max_pool2d", (3, 2, 1), "[torch.randn(2, 5, 18, 22).half()]"),
    "bf16_odd_rows": ("max_pool2d", (3, 2, 1), "[torch.randn(3, 4, 17, 42).to(torch.bfloat16)]"),
    "fp32": ("max_pool2d", (3, 2, 1), "[torch.randn(2, 3, 15, 22)]"),
    "fp32_rows_k5s3p2": ("max_pool2d", ((5, 3), (3, 2), (2, 1)), "[torch.randn(2, 3, 19, 24)]"),
    "fp16_1d": ("max_pool1d", (3, 2, 1), "[torch.randn(3, 4, 142).half()]"),
}


@pytest.mark.parametrize("name", sorted(FLAT_PAIRS))
def test_pair_windows_as_a_flat_output_run(name, monkeypatch):
    """max_pool(3, 2, 1) pair windows with the output as one flat run (blocks of 64 outputs straddling rows):
    compiled for sm_90 and emulated on contiguous and strided inputs, NaN and -inf bit-exact; a fused epilogue
    keeps the tile form."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_pairs_flat", True)
    monkeypatch.setitem(MEMORY_TUNING, "pool_pairs_flat_outputs", 64)
    fn, args, inputs = FLAT_PAIRS[name]
    expr = f"F.{fn}(x, {', '.join(map(str, args))})"
    spec = snippet_spec(forward(expr), inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert "flat run" in source.notes[0] and "ct.Slice(" not in source.code, source.notes
    check_emulated_both_layouts(spec, source)
    x = torch.randn(spec.inputs[0].shape, generator=torch.Generator().manual_seed(5)).to(
        getattr(torch, spec.inputs[0].dtype)) * 40
    flat = x.view(-1)
    flat[0] = flat[7] = flat[-1] = float("nan")
    x[..., 0] = float("-inf")
    with emulation():
        out = load_emulated(source)[source.launch_name](x)
    ref = getattr(F, fn)(x.float(), *args).to(x.dtype)
    torch.testing.assert_close(out, ref, rtol=0, atol=0, equal_nan=True)
    fused = snippet_spec(forward("torch.relu(" + expr + ")"), inputs, FAMILY)
    assert "flat run" not in generate_kernel(fused).notes[0]


@pytest.mark.parametrize("flat", [False, True], ids=["tiles", "flat"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_pair_window_pool_is_exact_at_the_borders(dtype, flat, monkeypatch):
    """Bit-exact against PyTorch with NaN and -inf at the padded borders (first/last rows and columns), where the
    clamped window rows and the masked left pair of column 0 matter; as word tiles or a flat run of output words
    (MEMORY_TUNING["pool_quads_flat"])."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_quads_flat", flat)
    spec = snippet_spec(forward("F.max_pool2d(x, 3, 2, 1)"), f"[torch.randn(2, 3, 11, 20).to(torch.{dtype})]",
                        FAMILY)
    source = generate_kernel(spec)
    assert ("flat run" in source.notes[0]) == flat, source.notes
    x = torch.randn(2, 3, 11, 20, generator=torch.Generator().manual_seed(7)).to(getattr(torch, dtype)) * 50
    x[0, 0, 0, 0] = x[0, 1, 10, 19] = x[1, 2, 5, 1] = float("nan")
    x[1, 0, :, 0] = float("-inf")
    x[1, 1] = -x[1, 1].abs() - 1  # all negative: zero padding would show up as a maximum of 0
    with emulation():
        out = load_emulated(source)[source.launch_name](x)
    torch.testing.assert_close(out, F.max_pool2d(x, 3, 2, 1), rtol=0, atol=0, equal_nan=True)
    assert int(out.isnan().sum()) >= 3


@pytest.mark.parametrize("name", ["aligned_max2d_fp32_pairs", "aligned_avg2d_fp32_pairs", "pairs_k3s2p1_fp32",
                                  "pairs_epilogue_fp32"])
def test_float32_pairs_as_int64(name, monkeypatch):
    """With MEMORY_TUNING["pool_pairs_fp32"] (the default) the pair views take float32 inputs as int64 words (aligned 2-wide
    windows and max_pool(3, 2, 1)); compiled and emulated, contiguous and strided, NaNs and -inf bit-exact."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_pairs_fp32", True)
    cases = {
        "aligned_max2d_fp32_pairs": (forward("F.max_pool2d(x, 2)"), "[torch.randn(2, 3, 14, 20)]", F.max_pool2d, 2),
        "aligned_avg2d_fp32_pairs": (forward("F.avg_pool2d(x, 2)"), "[torch.randn(2, 3, 14, 20)]", None, None),
        "pairs_k3s2p1_fp32": (forward("F.max_pool2d(x, 3, 2, 1)"), "[torch.randn(2, 3, 15, 22)]", F.max_pool2d,
                              (3, 2, 1)),
        "pairs_epilogue_fp32": (forward("torch.relu(F.max_pool2d(x, 3, 2, 1)) + b", "x, b"),
                                "[torch.randn(2, 4, 12, 16), torch.randn(4, 1, 1)]", None, None),
    }
    body, inputs, fn, args = cases[name]
    spec = snippet_spec(body, inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert ".view(torch.int64)" in source.code and "ct.bitcast(" in source.code
    check_emulated_both_layouts(spec, source)
    if fn is not None:
        x = torch.randn(spec.inputs[0].shape, generator=torch.Generator().manual_seed(3)) * 30
        x[0, 0, 0, 0] = x[1, 2, -1, -1] = float("nan")
        x[1, 1] = -x[1, 1].abs() - 1
        x[0, 2, :, 0] = float("-inf")
        with emulation():
            out = load_emulated(source)[source.launch_name](x)
        expected = fn(x, *args) if isinstance(args, tuple) else fn(x, args)
        torch.testing.assert_close(out, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", ["max2d_k2_aligned", "max2d_k3s2p1_even", "avg2d_k2_relu", "max1d_k3s2p1"])
def test_gpu_pair_cases_pass_on_the_emulator(name, monkeypatch):
    """The GPU file's new pair cases (16-bit on the default path, float32 with pool_pairs_fp32) on their smallest
    shape, checked by the CPU emulator: the test file itself is right before it meets a GPU."""
    import math

    from . import test_pool_gpu

    monkeypatch.setattr(test_pool_gpu, "CHECK", check_emulated)
    shape = min(test_pool_gpu.VARIANTS[name][1], key=math.prod)
    for dtype in ("float16", "bfloat16"):
        test_pool_gpu.test_pool_kernel_matches_reference(name, shape, dtype)
    test_pool_gpu.test_pool_float32_pair_views(name, shape, monkeypatch)


@pytest.mark.parametrize("quads", [True, False], ids=["quads", "pairs"])
@pytest.mark.parametrize("expr", ["F.max_pool2d(x, 2)", "F.max_pool2d(x, 3, 2, 1)"])
def test_pair_views_take_inputs_at_an_odd_offset(expr, quads, monkeypatch):
    """A contiguous input starting at an odd element (a flat buffer sliced by one) cannot be viewed as pair (quad)
    words in place: the wrapper copies it first instead of failing."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_quads", quads)
    spec = snippet_spec(forward(expr), "[torch.randn(2, 3, 12, 12).half()]", FAMILY)
    source = generate_kernel(spec)
    assert f"storage_offset() % {4 if quads else 2}" in source.code
    buf = torch.randn(1 + 2 * 3 * 12 * 12, generator=torch.Generator().manual_seed(2)).half()
    x = buf[1:].view(2, 3, 12, 12)
    assert x.is_contiguous() and x.storage_offset() == 1
    with emulation():
        out = load_emulated(source)[source.launch_name](x)
    expected = F.max_pool2d(x, 2) if expr.endswith("2)") else F.max_pool2d(x, 3, 2, 1)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


QUADS = {  # name: (forward, inputs, PyTorch function and args for the bit-exact check, or None)
    "max2d_bf16": ("F.max_pool2d(x, 2)", "[torch.randn(2, 3, 14, 20).to(torch.bfloat16)]", "max_pool2d", (2,)),
    "max2d_fp16_rows_partial": ("F.max_pool2d(x, 2)", "[torch.randn(3, 5, 6, 8).half()]", "max_pool2d", (2,)),
    "avg2d_fp16": ("F.avg_pool2d(x, 2)", "[torch.randn(2, 3, 10, 12).half()]", None, None),
    "max2d_4x2_bf16": ("F.max_pool2d(x, (4, 2))", "[torch.randn(2, 2, 8, 16).to(torch.bfloat16)]", "max_pool2d",
                       ((4, 2),)),
    "max1d_fp16_wide": ("F.max_pool1d(x, 2)", "[torch.randn(3, 4, 1032).half()]", "max_pool1d", (2,)),
    "windows_k3s2p1_fp16": ("F.max_pool2d(x, 3, 2, 1)", "[torch.randn(2, 3, 9, 16).half()]", "max_pool2d", (3, 2, 1)),
    "windows_k3s2p1_bf16_narrow": ("F.max_pool2d(x, 3, 2, 1)", "[torch.randn(2, 2, 6, 8).to(torch.bfloat16)]",
                                   "max_pool2d", (3, 2, 1)),
    "windows_1d_fp16_wide": ("F.max_pool1d(x, 3, 2, 1)", "[torch.randn(2, 3, 1032).half()]", "max_pool1d",
                             (3, 2, 1)),
}


@pytest.mark.parametrize("flat", [False, True], ids=["tiles", "flat"])
@pytest.mark.parametrize("name", sorted(QUADS))
def test_16bit_pools_as_64bit_words(name, flat, monkeypatch):
    """MEMORY_TUNING["pool_quads"]: 2-wide windows of 16-bit inputs through int64 words of four elements, two
    outputs packed per int32 word; compiled and emulated (contiguous, strided, an input at an offset that is not
    a whole word), NaNs from every position of a word and -inf bit-exact. `flat`: max_pool(3, 2, 1) with the
    output as one flat run of words (MEMORY_TUNING["pool_quads_flat"], blocks of 16 words straddling rows)."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_quads", True)
    monkeypatch.setitem(MEMORY_TUNING, "pool_quads_flat", flat)
    monkeypatch.setitem(MEMORY_TUNING, "pool_quads_flat_words", 16)
    expr, inputs, fn, args = QUADS[name]
    if flat and "windows" not in name:
        pytest.skip("flat output words are for 3/2/1 windows")
    spec = snippet_spec(forward(expr), inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert any("read as 64-bit words" in n for n in source.notes), source.notes
    assert flat == any("flat run" in n for n in source.notes), source.notes
    check_emulated_both_layouts(spec, source)
    if fn is None:
        return
    dtype = getattr(torch, spec.inputs[0].dtype)
    x = (torch.randn(spec.inputs[0].shape, generator=torch.Generator().manual_seed(3)) * 30).to(dtype)
    flat = x.view(-1)
    for i in range(4):  # a NaN at each position of a 64-bit word
        flat[8 * i + i] = float("nan")
    flat[-1] = float("nan")
    x[0, 1] = -x[0, 1].abs() - 1
    x[-1, -1, ..., 0] = float("-inf")
    shifted = torch.empty(x.numel() + 2, dtype=dtype)[2:].view(x.shape)  # starts 2 elements into its buffer
    shifted.copy_(x)
    with emulation():
        ns = load_emulated(source)
        expected = getattr(F, fn)(x.float(), *args).to(dtype)
        for inp in (x, shifted):
            out = ns[source.launch_name](inp)
            torch.testing.assert_close(out, expected, rtol=0, atol=0, equal_nan=True)
    assert int(expected.isnan().sum()) >= 3


def test_quads_leave_other_pools_alone(monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_quads", True)
    for expr, inputs in (("F.max_pool2d(x, 2)", "[torch.randn(2, 3, 14, 18).half()]"),  # width not 4k
                         ("F.max_pool2d(x, 2)", "[torch.randn(2, 3, 14, 20)]"),  # float32
                         ("torch.relu(F.max_pool2d(x, 2))", "[torch.randn(2, 3, 14, 20).half()]"),  # epilogue
                         ("F.max_pool2d(x, 3, 2, 1)", "[torch.randn(2, 3, 14, 18).half()]"),  # width not 4k
                         ("F.max_pool2d(x, 3, 1, 1)", "[torch.randn(2, 3, 14, 20).half()]"),  # stride 1
                         ("torch.relu(F.max_pool2d(x, 3, 2, 1))", "[torch.randn(2, 3, 14, 20).half()]")):
        notes = generate_kernel(snippet_spec(forward(expr), inputs, FAMILY)).notes
        assert not any("read as 64-bit words" in n for n in notes), expr
