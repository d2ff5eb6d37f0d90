"""Scans whose lines each take one block walking chunks with a carry (rows too long for one tile, enough rows
for no segments) on the GPU: the carry is the chunk's last scanned position taken through a one-hot sum
(ScanGen.last_of; ct.extract there took ptxas past 150 s), checked against the float64 reference with fresh
random inputs and poisoned outputs."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

CASES = [  # name, forward, input
    ("cumsum_fp32", "torch.cumsum(x, -1)", "torch.randn(2048, 8192)"),
    ("cumsum_prologue_ragged", "torch.cumsum(x * 0.5, -1)", "torch.randn(1100, 10000)"),
    ("cumsum_bf16_ragged", "torch.cumsum(x, -1)", "torch.randn(1024, 9000).to(torch.bfloat16)"),
    ("logcumsumexp", "torch.logcumsumexp(x, -1)", "torch.randn(1024, 5000)"),
    ("cummax_indices", "torch.cummax(x, -1)", "torch.randn(1024, 6000)"),
    ("cumsum_int64", "torch.cumsum(x, -1)", "torch.randint(-100, 100, (1024, 5000))"),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name,forward,inputs", CASES, ids=[c[0] for c in CASES])
def test_chunked_carry_scans_on_gpu(name, forward, inputs, seed):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel

    from .helpers_gemm import module_model, snippet_spec

    spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "scan")
    source = generate_kernel(spec)
    assert "chunks with a carry" in source.notes[0], source.notes
    result = check_kernel(spec, source, seed=seed)
    assert result.ok, f"{name} seed {seed}: {result.message}"
