"""softmax / log_softmax rows through int64 words (rowwise.TUNING["softmax_words"], CPU): 16-bit rows as words of
four elements and float32 rows as pairs, ragged rows (the words past the row's end masked), stacked short rows,
_safe_softmax on rows of -inf, inputs at an offset that is not a whole word; compiled for sm_90 and checked in the
emulator against the float64 reference (and bit-exact against the element path where the arithmetic is the
same)."""

from __future__ import annotations

import pytest

from .helpers import compile_spec
from .helpers_indexed import check_emulated_both_layouts, forward, snippet_spec

CASES = {  # name: (expression, inputs)
    "softmax_1000_bf16": ("torch.softmax(x, -1)", "[torch.randn(37, 1000).to(torch.bfloat16)]"),
    "log_softmax_36_fp16": ("torch.log_softmax(x, dim=2)", "[torch.randn(5, 7, 36).half()]"),
    "softmax_3d_fp16": ("F.softmax(x, dim=-1)", "[torch.randn(3, 9, 100).half()]"),
    "softmax_1000_fp32": ("torch.softmax(x, -1)", "[torch.randn(21, 1000)]"),
    "log_softmax_6_fp32": ("F.log_softmax(x, -1)", "[torch.randn(50, 6)]"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_softmax_rows_as_words(name, monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    expr, inputs = CASES[name]
    spec = snippet_spec(forward(expr), inputs, "softmax")
    monkeypatch.setitem(TUNING, "softmax_words", True)
    source = compile_spec(spec, ("sm_90",))
    assert "view(torch.int64)" in source.code and "int64 words" in source.notes[0], source.notes
    check_emulated_both_layouts(spec, source)
    monkeypatch.setitem(TUNING, "softmax_words", False)
    assert "view(torch.int64)" not in generate_kernel(spec).code


def test_words_only_for_ragged_single_tile_rows(monkeypatch):
    """Power-of-two rows, rows of an odd length and rows with a fused prologue keep the element path."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    monkeypatch.setitem(TUNING, "softmax_words", True)
    for expr, inputs in [("torch.softmax(x, -1)", "[torch.randn(8, 1024).half()]"),
                         ("torch.softmax(x, -1)", "[torch.randn(8, 999).half()]"),
                         ("torch.softmax(x * 0.5, -1)", "[torch.randn(8, 1000).half()]"),
                         ("torch.softmax(x, 0)", "[torch.randn(1000, 8).half()]")]:
        code = generate_kernel(snippet_spec(forward(expr), inputs, "softmax")).code
        assert "torch.int64" not in code, (expr, inputs)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_words_match_the_element_path_and_handle_edges(dtype, monkeypatch):
    """Same values as the element path (16-bit: bit-exact after rounding; float32: the row sum adds the word
    positions' partial sums in another order, so within an ulp or two), rows of -inf give
    zeros in _safe_softmax, and an input starting half a word into its buffer is copied first."""
    import torch

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    dt = getattr(torch, dtype)
    buf = torch.randn(1 + 12 * 100, generator=torch.Generator().manual_seed(3)).to(dt) * 8
    x = buf[1:].view(12, 100)
    assert x.storage_offset() == 1
    spec = snippet_spec(forward("torch.softmax(x, -1)"), f"[torch.randn(12, 100).to(torch.{dtype})]", "softmax")
    outs = {}
    for words in (True, False):
        monkeypatch.setitem(TUNING, "softmax_words", words)
        source = generate_kernel(spec)
        with emulation():
            outs[words] = load_emulated(source)[source.launch_name](x)
    tol = 1e-6 if dtype == "float32" else 0
    torch.testing.assert_close(outs[True], outs[False], rtol=tol, atol=tol)
    torch.testing.assert_close(outs[True].double(), torch.softmax(x.double(), -1).to(dt).double(),
                               rtol=2e-2, atol=1e-3)

    monkeypatch.setitem(TUNING, "softmax_words", True)
    spec = snippet_spec(forward("torch.ops.aten._safe_softmax(x, -1)"), f"[torch.randn(4, 100).to(torch.{dtype})]",
                        "softmax")
    source = generate_kernel(spec)
    assert "int64 words" in source.notes[0], source.notes
    y = torch.randn(4, 100).to(dt)
    y[1] = float("-inf")
    with emulation():
        out = load_emulated(source)[source.launch_name](y)
    assert torch.equal(out[1], torch.zeros(100, dtype=dt))
    torch.testing.assert_close(out[0].double(), torch.softmax(y[0].double(), -1).to(dt).double(), rtol=2e-2,
                               atol=1e-3)


GPU_CASES = [("torch.softmax(x, -1)", "[torch.randn(16384, 1000).to(torch.bfloat16)]"),
             ("torch.log_softmax(x, -1)", "[torch.randn(3000, 36).half()]"),
             ("torch.softmax(x, -1)", "[torch.randn(4096, 1000)]"),
             ("torch.softmax(x, -1)", "[torch.randn(2, 77, 1004).half()]")]


@pytest.mark.gpu
@pytest.mark.parametrize("expr,inputs", GPU_CASES, ids=[f"{e.split('(')[0]}-{i[13:34]}" for e, i in GPU_CASES])
def test_softmax_words_on_gpu(expr, inputs, monkeypatch):
    """The word path forced on, fresh random inputs, poisoned outputs, float64 reference."""
    from tilestudio.core.kernels.rowwise import TUNING

    from .helpers import run_check

    monkeypatch.setitem(TUNING, "softmax_words", True)
    spec = snippet_spec(forward(expr), inputs, "softmax")
    result = run_check(spec)
    assert result.ok, result.message
