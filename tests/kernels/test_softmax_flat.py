"""softmax / log_softmax of long rows off 16-byte alignment through aligned tiles of the flat tensor
(softmax_flat.py, rowwise.TUNING["softmax_flat"], CPU): compiled for sm_90 without more than 16 bytes of spill,
then run in the emulator with blocks as concurrent threads started in ticket order, so a block really waits for the later blocks of its two rows; inputs include a row of
-inf (_safe_softmax), strided views and a tensor whose last block is short."""

from __future__ import annotations

import pytest

from . import cutile_emulator as emu
from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_indexed import check_emulated_both_layouts, forward, snippet_spec


@pytest.fixture(autouse=True)
def _flat_on(monkeypatch):
    from tilestudio.core.kernels.rowwise import TUNING

    monkeypatch.setitem(TUNING, "softmax_flat", True)

CASES = {  # name: (expression, inputs, TUNING overrides, (tile, tiles per block, blocks, window))
    # GPT-2's vocabulary, 16 rows: 99 blocks of 2 x 4096 = 8192, a row touching 7 or 8 of them, the last block
    # with a slot past the tensor
    "softmax_50257_fp32": ("torch.softmax(x, -1)", "[torch.randn(16, 50257)]", {}, (4096, 2, 99, 16)),
    # blocks of 2 x 2048 over rows of 40001: a row touches 10 or 11 blocks; -inf padding and 128-bit loads
    "log_softmax_40001_bf16": ("torch.log_softmax(x, -1)", "[torch.randn(16, 40001).to(torch.bfloat16)]",
                               {"softmax_flat_tile": 2048, "softmax_flat_elems": 4096, "softmax_flat_tma": False},
                               (2048, 2, 157, 32)),
    # 2 bytes off, 3d, the last block's first tile partly past the tensor (zero-padded, masked), its second wholly
    "softmax_3d_33001_fp16": ("F.softmax(x, dim=-1)", "[torch.randn(2, 8, 33001).half()]", {},
                              (4096, 2, 65, 16)),
    # 9 x 50257 elements, not a multiple of 16: tiles from the prefix view, the last one gathered and scattered
    # (softmax_flat.Tail); 2 bytes off with -inf padding, 4 tiles of 2048 per block (the last tile in the last
    # block's first slot, the other three past the tensor)
    "softmax_tail_9x50257_fp32": ("torch.softmax(x, -1)", "[torch.randn(9, 50257)]", {}, (4096, 2, 56, 16)),
    "log_softmax_tail_7x40001_bf16": ("torch.log_softmax(x, -1)", "[torch.randn(7, 40001).to(torch.bfloat16)]",
                                      {"softmax_flat_tile": 2048, "softmax_flat_tma": False}, (2048, 4, 35, 16)),
}


def _spec(name):
    expr, inputs, *_ = CASES[name]
    return snippet_spec(forward(expr), inputs, "softmax")


@pytest.mark.parametrize("name", sorted(CASES))
def test_flat_softmax_compiles_and_matches_with_concurrent_blocks(name, monkeypatch):
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches

    from tilestudio.core.kernels.rowwise import TUNING

    *_, tuning, (tile, per_block, blocks, window) = CASES[name]
    for key, value in tuning.items():
        monkeypatch.setitem(TUNING, key, value)
    spec = _spec(name)
    source = compile_spec(spec, ("sm_90",))
    note = source.notes[0]
    assert (f"aligned tiles of {tile}, {per_block} per block ({blocks} blocks" in note
            and f"windows of {window} blocks" in note), note
    (record,) = trace_launches(source, spec)
    # (the default, 8192 per block at occupancy 4, fastest on the H200, keeps all but a value or two in R64)
    assert kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"] <= 16
    monkeypatch.setattr(emu, "CONCURRENT_BLOCKS", window + 1)
    check_emulated_both_layouts(spec, source)


def test_flat_only_where_it_applies(monkeypatch):
    """Aligned rows in even segments, rows that fit one tile, a fused prologue and an inner dim keep the other
    forms (a flat length that is not a multiple of 16 is flat too); aligned rows whose split is ragged go flat
    (softmax_flat_aligned); the knobs turn it off."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    def flat(expr, inputs):
        return "flat tensor" in generate_kernel(snippet_spec(forward(expr), inputs, "softmax")).notes[0]

    assert flat("torch.softmax(x, -1)", "[torch.randn(16, 50257)]")
    assert not flat("torch.softmax(x, -1)", "[torch.randn(16, 65536)]")  # 16-byte rows in 4 even segments: split
    assert flat("torch.softmax(x, -1)", "[torch.randn(16, 50256)]")  # ... in 4, 4, 4 and 1 chunks: flat
    assert flat("torch.softmax(x, -1)", "[torch.randn(8, 50257)]")  # 402056 elements: the last tile gathered
    assert flat("torch.softmax(x, -1)", "[torch.randn(16, 50260).half()]")  # 100520-byte rows: 8 off
    assert not flat("torch.softmax(x, -1)", "[torch.randn(16, 30001)]")  # one tile per row
    assert not flat("torch.softmax(x * 0.5, -1)", "[torch.randn(16, 50257)]")
    assert not flat("torch.softmax(x, 0)", "[torch.randn(50257, 16)]")
    monkeypatch.setitem(TUNING, "softmax_flat_aligned", False)
    assert not flat("torch.softmax(x, -1)", "[torch.randn(16, 50256)]")
    monkeypatch.setitem(TUNING, "softmax_flat", False)
    assert not flat("torch.softmax(x, -1)", "[torch.randn(16, 50257)]")


def test_flat_safe_softmax_rows_of_minus_inf():
    """A row of -inf straddling blocks gives zeros in _safe_softmax and NaN in softmax (as torch), its
    neighbours unaffected."""
    import torch

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel

    x = torch.randn(16, 40001)
    x[1] = -torch.inf
    for expr, fill in (("torch.ops.aten._safe_softmax(x, -1)", 0.0), ("torch.softmax(x, -1)", float("nan"))):
        spec = snippet_spec(forward(expr), "[torch.randn(16, 40001)]", "softmax")
        source = generate_kernel(spec)
        assert "flat tensor" in source.notes[0], source.notes
        with emulation():
            ns = load_emulated(source)
            old, emu.CONCURRENT_BLOCKS = emu.CONCURRENT_BLOCKS, 17  # (windows of 16 blocks)
            try:
                y = ns[source.launch_name](x.clone())
            finally:
                emu.CONCURRENT_BLOCKS = old
        want = torch.softmax(x.double(), -1)
        for r in (0, 2, 15):
            torch.testing.assert_close(y[r].double(), want[r], rtol=1e-5, atol=1e-7)
        if fill == 0.0:
            assert torch.equal(y[1], torch.zeros(40001)), y[1]
        else:
            assert torch.isnan(y[1]).all()


def test_fewer_block_slots_than_the_window_can_deadlock(monkeypatch):
    """Two block slots: blocks 0 and 1 wait for the blocks of rows 0 and 1 (up to block 12), which never start."""
    spec = _spec("softmax_50257_fp32")
    source = compile_spec(spec, ())
    monkeypatch.setattr(emu, "CONCURRENT_BLOCKS", 2)
    monkeypatch.setattr(emu, "DEADLOCK_S", 2.0)
    with pytest.raises(RuntimeError, match="deadlocked"):
        check_emulated(spec, source)
