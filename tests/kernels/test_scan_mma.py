"""MEMORY_TUNING["scan_mma"] (on by default) / ["scan_mma_rows"] (off): a 16-bit cumsum over a middle dim scans each
(BR x BI) chunk as lower-triangular ones @ chunk on tensor cores; a one-tile float row as (BR/64, 64) blocks @
upper-triangular ones (float32 as tf32 hi + lo) plus block prefixes, chunked rows carrying each chunk's total.
Compiled for sm_90 and matched to the
reference in the emulator (whose tf32 rounds like the hardware's), aligned and ragged."""

from __future__ import annotations

import pytest

from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_gemm import module_model, snippet_spec

CASES = {  # name: (forward, input, MEMORY_TUNING overrides)
    "bf16_segmented": ("torch.cumsum(x, 1)", "torch.randn(2, 4096, 64).to(torch.bfloat16)", {}),
    "fp16_ragged": ("torch.cumsum(x, 1)", "torch.randn(3, 1000, 40).half()", {}),
    "bf16_one_pass_epilogue": ("torch.cumsum(x, 1) * 0.5", "torch.randn(2, 3000, 96).to(torch.bfloat16)",
                               {"scan_mma_col_min_blocks": 0}),
    "rows_fp32_tf32_pair": ("torch.cumsum(x, -1)", "torch.randn(3, 4096)", {"scan_mma_rows": True}),
    "rows_fp32_ragged_exclusive": ("torch.cumsum(x, -1) - x", "torch.randn(5, 2000)", {"scan_mma_rows": True}),
    "rows_bf16": ("torch.cumsum(x, -1)", "torch.randn(4, 4096).to(torch.bfloat16)", {"scan_mma_rows": True}),
    # chunks of 4096 with a carry that grows by each chunk's total; segmented (a totals kernel first), ragged
    "rows_fp32_chunked_segmented": ("torch.cumsum(x, -1)", "torch.randn(2, 100000)", {"scan_mma_rows": True}),
    "rows_fp16_chunked": ("torch.cumsum(x, -1)", "torch.randn(4, 8192).half()", {"scan_mma_rows": True}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_core_chunk_scan(name, monkeypatch):
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    forward, inputs, overrides = CASES[name]
    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback_rows", False)  # the chunk-loop / segmented row forms
    monkeypatch.setitem(MEMORY_TUNING, "scan_mma", "scan_mma_rows" not in overrides)
    for key, value in overrides.items():
        monkeypatch.setitem(MEMORY_TUNING, key, value)
    spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "scan")
    source = compile_spec(spec, ("sm_90",))
    assert "scanned on tensor cores" in source.notes[0] and "ct.mma(" in source.code, source.notes
    assert ("tf32 hi + lo" in source.notes[0]) == ("fp32" in name), source.notes
    result = check_emulated(spec, source)
    assert result.ok, result.message


def test_tensor_core_chunk_scan_only_where_exact(monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "scan_mma", True)
    monkeypatch.setitem(MEMORY_TUNING, "scan_mma_rows", True)
    for forward, inputs in (("torch.cumsum(x, 1)", "torch.randn(2, 4096, 64)"),  # float32 over a middle dim
                            ("torch.cumsum(x, -1)", "torch.randn(64, 512)")):  # short rows, stacked
        spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "scan")
        assert "tensor cores" not in generate_kernel(spec).notes[0], forward


PLAIN = {  # MEMORY_TUNING["scan_chunk_tma"] = False: chunked scans load their chunks without TMA
    "rows_segmented": ("torch.cumsum(x, -1)", "torch.randn(2, 100000)"),
    "middle_dim_tensor_cores": ("torch.cumsum(x, 1)", "torch.randn(2, 4096, 64).to(torch.bfloat16)"),
    "rows_logcumsumexp": ("torch.logcumsumexp(x, -1)", "torch.randn(3, 9000)"),
}


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_chunked_scans_with_plain_loads(name, monkeypatch):
    """Every chunk load of a chunked scan (totals kernel and scan kernel) takes allow_tma=False, compiles for
    sm_90 and matches the reference in the emulator; the default leaves the compiler's choice."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    forward, inputs = PLAIN[name]
    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback_rows", False)  # the segmented row form (look-back: its own)
    spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "scan")
    assert "allow_tma" not in generate_kernel(spec).code
    monkeypatch.setitem(MEMORY_TUNING, "scan_chunk_tma", False)
    source = compile_spec(spec, ("sm_90",))
    loads = [line for line in source.code.splitlines() if "ct.load(v_x" in line]
    assert loads and all("allow_tma=False" in line for line in loads), loads
    result = check_emulated(spec, source)
    assert result.ok, result.message


SEGMENTED = {  # rows cut into segments: a totals kernel, then the scan from the earlier segments' totals
    "rows": ("torch.cumsum(x, -1)", "torch.randn(2, 100000)"),
    "middle_dim_tensor_cores": ("torch.cumsum(x, 1)", "torch.randn(2, 4096, 64).to(torch.bfloat16)"),
    "rows_logcumsumexp": ("torch.logcumsumexp(x, -1)", "torch.randn(2, 70000)"),
}


@pytest.mark.parametrize("name", sorted(SEGMENTED))
def test_segmented_scans_with_occupancy_hints(name, monkeypatch):
    """MEMORY_TUNING["scan_totals_occupancy"] / ["scan_segment_occupancy"]: by default (4 / 3) the two passes of a
    segmented scan carry @ct.kernel(occupancy=...) hints and compile for sm_90 without a spill frame (the hints cap
    registers); None leaves the kernels without a hint; both match the reference in the emulator."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback_rows", False)  # float cumsum rows: one-pass look-back
    forward, inputs = SEGMENTED[name]
    spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "scan")
    source = generate_kernel(spec)
    assert "segments whose totals" in source.notes[0] + source.code
    assert "@ct.kernel(occupancy=4)\ndef scan_totals_kernel" in source.code.replace(spec.id, "scan"), source.code
    assert "@ct.kernel(occupancy=3)\ndef scan_kernel" in source.code.replace(spec.id, "scan"), source.code
    for record in trace_launches(source, spec):
        assert kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"] == 0, record.kernel_name
    monkeypatch.setitem(MEMORY_TUNING, "scan_totals_occupancy", None)
    monkeypatch.setitem(MEMORY_TUNING, "scan_segment_occupancy", None)
    plain = generate_kernel(spec)
    assert "occupancy" not in plain.code, plain.code
    assert check_emulated(spec, plain).ok
    result = check_emulated(spec, source)
    assert result.ok, result.message


SINGLE = {  # scans whose lines each take one block: (forward, input, MEMORY_TUNING overrides)
    "one_tile_rows": ("torch.cumsum(x, -1)", "torch.randn(6, 4096)", {}),
    "chunked_carry": ("torch.cumsum(x * 0.5, -1)", "torch.randn(3, 10000)", {"scan_min_blocks": 0}),
}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_block_scans_with_occupancy_hint(name, monkeypatch):
    """MEMORY_TUNING["scan_single_occupancy"] (4 by default): a scan whose lines each take one tile carries
    @ct.kernel(occupancy=...) and None gives no hint; a line's chunk loop with a carry takes no hint (it spills at
    4). Both compile for sm_90 (the one tile without a spill frame) and match the reference in the emulator. (The
    chunk loop's carry once took ptxas past 150 s: ScanGen.last_of.)"""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    forward, inputs, overrides = SINGLE[name]
    for key, value in overrides.items():
        monkeypatch.setitem(MEMORY_TUNING, key, value)
    spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "scan")
    source = generate_kernel(spec)
    assert "segments" not in source.notes[0], source.notes
    hinted = "@ct.kernel(occupancy=4)\ndef scan_kernel" in source.code.replace(spec.id, "scan")
    assert hinted == (name == "one_tile_rows"), source.code
    monkeypatch.setitem(MEMORY_TUNING, "scan_single_occupancy", None)
    assert "occupancy" not in generate_kernel(spec).code
    (record,) = trace_launches(source, spec)
    frame = kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"]
    assert frame == 0  # (the ragged chunk loop at R255 spilled 80 bytes with a plain ct.cumsum; split, none)
    result = check_emulated(spec, source)
    assert result.ok, result.message
