"""MEMORY_TUNING["scan_split_width"] (4 by default since session 15): float cumsums along rows (one row per tile)
scanned in blocks of `width` elements, `levels` deep (scan.emit_split_cumsum), in each row form: one tile per
row, chunk loops with a carry, the segmented form, and the one-pass look-back (chunk totals from the split scan).
Compiled for sm_90 and matched to the reference in the emulator, aligned and ragged, with prologues and 16-bit
inputs."""

from __future__ import annotations

import pytest

from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_gemm import module_model, snippet_spec

CASES = {  # name: (forward, input, MEMORY_TUNING overrides, a phrase of the kernel's note)
    "one_tile": ("torch.cumsum(x, -1)", "torch.randn(3, 4096)", {}, "tile (1, 4096)"),
    "one_tile_ragged_exclusive": ("torch.cumsum(x, -1) - x", "torch.randn(5, 2000)", {}, "tile (1, 2048)"),
    "bf16_prologue": ("torch.cumsum(x * 0.5, -1)", "torch.randn(4, 4096).to(torch.bfloat16)", {}, "tile"),
    "chunk_loop_ragged": ("torch.cumsum(x, -1)", "torch.randn(3, 9000)",
                          {"scan_lookback_rows": False, "scan_min_blocks": 0}, "chunks with a carry"),
    "segmented": ("torch.cumsum(x, -1)", "torch.randn(2, 100000)", {"scan_lookback_rows": False},
                  "segments whose totals are scanned first"),
    "look_back": ("torch.cumsum(x, -1)", "torch.randn(2, 100000)", {}, "decoupled look-back"),
    "look_back_exclusive_fp16": ("torch.cumsum(x, -1) - x", "torch.randn(3, 30000).half()", {},
                                 "decoupled look-back"),
}


@pytest.mark.parametrize("levels", [2, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_split_row_scans(name, levels, monkeypatch):
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    from . import cutile_emulator

    forward, inputs, overrides, phrase = CASES[name]
    monkeypatch.setitem(MEMORY_TUNING, "scan_split_width", 4)
    monkeypatch.setitem(MEMORY_TUNING, "scan_split_levels", levels)
    monkeypatch.setattr(cutile_emulator, "DEFER_PREFIX_BLOCKS", 2)  # look-backs meet total-only words
    for key, value in overrides.items():
        monkeypatch.setitem(MEMORY_TUNING, key, value)
    spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "scan")
    source = compile_spec(spec, ("sm_90",))
    note = f"row tiles scanned in blocks of 4 ({levels} levels)"
    assert note in source.code and phrase in source.code, source.code
    assert "sm0 = ct.reshape(" in source.code and ("sm1 = " in source.code) == (levels == 3)
    result = check_emulated(spec, source)
    assert result.ok, result.message


def test_split_scan_only_for_single_row_float_tiles(monkeypatch):
    """Short rows stacked several per tile, scans over a middle dim and int64 cumsums (split: slower on the
    H200, 4096x4096 0.078 -> 0.095 ms) keep ct.cumsum; width 0 is off everywhere; 4 (the default) splits."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "scan_split_width", 4)
    for forward, inputs in (("torch.cumsum(x, -1)", "torch.randn(4096, 100)"),  # stacked short rows
                            ("torch.cumsum(x, 1)", "torch.randn(2, 4096, 64)"),  # a middle dim
                            ("torch.cumsum(x, -1)", "torch.randint(0, 9, (4, 4096))")):  # int64, exact
        spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "scan")
        assert "sm0 = " not in generate_kernel(spec).code, forward
    spec = snippet_spec(module_model("", "torch.cumsum(x, -1)", "x"), "[torch.randn(3, 4096)]", "scan")
    monkeypatch.setitem(MEMORY_TUNING, "scan_split_width", 0)
    assert "sm0 = " not in generate_kernel(spec).code
    monkeypatch.undo()
    assert MEMORY_TUNING["scan_split_width"] == 4 and "sm0 = " in generate_kernel(spec).code
