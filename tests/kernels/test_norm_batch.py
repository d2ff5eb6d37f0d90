"""Eval batch norm (CPU): channel rows whose length is not a power of two are cut into rows of its largest
power-of-two divisor (rowwise.TUNING["bn_split_rows"]); side inputs of the full shape or constant over the spatial
dims are re-viewed onto the split rows, anything else keeps the unsplit layout. Compiled for sm_90 and emulated."""

from __future__ import annotations

import pytest

from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_gemm import module_model
from .helpers_indexed import snippet_spec


# name -> (forward expression, args, input shape, dtype suffix, extra inputs, expected split or None)
CASES = {
    "residual_relu_split15": ("torch.relu(self.n(x) + r)", "x, r", (2, 6, 12, 20), "", ", torch.randn(2, 6, 12, 20)",
                              15),
    "channel_scale_split3_fp16": ("self.n(x) * s", "x, s", (2, 6, 8, 24), ".half()",
                                  ", torch.randn(6, 1, 1).half()", 3),
    "row_bias_no_split": ("self.n(x) + t", "x, t", (2, 6, 12, 20), "", ", torch.randn(1, 1, 12, 1)", None),
    "pow2_rows_no_split_bf16": ("self.n(x)", "x", (2, 5, 16, 32), ".to(torch.bfloat16)", "", None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_batch_norm_channel_rows_split(name, monkeypatch):
    from tilestudio.core.kernels.rowwise import TUNING

    monkeypatch.setitem(TUNING, "bn_split_rows", True)
    expr, args, shape, dt, extra, split = CASES[name]
    body = module_model(f"self.n = nn.BatchNorm2d({shape[1]}){dt}", expr, args)
    spec = snippet_spec(body, f"[torch.randn{shape}{dt}{extra}]", "norm")
    source = compile_spec(spec, ("sm_90",))
    kernel = source.code.split("def launch_")[0]
    if split:
        assert f"(rows // {split}) % {shape[1]}" in kernel
    else:
        assert f"rows % {shape[1]}" in kernel and "(rows // " not in kernel
    for seed in range(2):
        result = check_emulated(spec, source, seed=seed)
        assert result.ok, result.message
