"""Top-k family (topk, sort/argsort of short and long lines) on the GPU: each variant on three shapes (unaligned ones included) in float32/float16/bfloat16,
checked against the float64 reference with poisoned outputs (indices tie-aware: checking.topk_indices_agree)."""

from __future__ import annotations

import pytest

from .helpers import case_ids, run_check
from .helpers_indexed import DT, forward, gpu_cases, make_inputs, shape_str, snippet_spec

pytestmark = pytest.mark.gpu
CHECK = None  # checking.check_kernel; test_topk.py swaps in the CPU emulator to validate this file itself

# name → (forward expression of x, shapes of x)
VARIANTS = {
    "router_k2": ("torch.topk(x, 2, dim=-1)", [(3, 5), (64, 8), (4096, 64)]),
    "k8": ("torch.topk(x, 8)", [(5, 9), (37, 1000), (300, 8192)]),
    "smallest_dim0": ("torch.topk(x, 3, dim=0, largest=False)", [(7, 4), (100, 33, 5), (1000, 70)]),
    "middle_dim_k5": ("torch.topk(x, 5, dim=1)", [(2, 6, 3), (16, 129, 7), (64, 500, 3)]),
    "values_scaled": ("torch.topk(x, 5).values * 2", [(33, 50), (1, 77), (2048, 256)]),
    "indices_only": ("torch.topk(x, 3)[1]", [(6, 4), (129, 33), (1024, 2000)]),
    "k_all": ("torch.topk(x, 16)", [(3, 16), (513, 16), (2, 16)]),
    "sort_descending": ("torch.sort(x, dim=-1, descending=True)", [(3, 5), (1000, 100), (64, 128)]),
    "argsort_dim0": ("torch.argsort(x, dim=0)", [(7, 3), (50, 200), (128, 9)]),
    # beyond topk.MAX_K: whole lines sorted by a bitonic network (sort_bitonic.py)
    "sort_long": ("torch.sort(x, dim=-1)", [(3, 200), (256, 1000), (16, 4096)]),
    "argsort_long_descending_dim1": ("torch.argsort(x, dim=1, descending=True)", [(2, 129, 3), (64, 513),
                                                                                   (8, 2048)]),
    "topk_k256": ("torch.topk(x, 256)", [(5, 300), (128, 4096), (1, 257)]),
    # lines longer than one tile: chunks sorted, their runs ranked by binary search (sort_long.py): top-k sampling
    # over a vocabulary, top-p's sort of it, a long argsort down dim 0, a large k over long lines
    "topk_vocab_k50": ("torch.topk(x, 50)", [(3, 8193), (256, 32000), (4, 50257)]),
    "sort_vocab_descending": ("torch.sort(x, dim=-1, descending=True)", [(2, 4097), (64, 32000), (1, 100003)]),
    "argsort_long_dim0": ("torch.argsort(x, dim=0)", [(4500, 3), (20000, 7), (9000, 1)]),
    "topk_k300_smallest": ("torch.topk(x, 300, largest=False)", [(3, 4500), (128, 8192), (2, 65537)]),
}
CORE = {"router_k2", "k8", "smallest_dim0"}
CASES = gpu_cases({name: v[1] for name, v in VARIANTS.items()}, CORE)


def topk_spec(name: str, shape, dtype: str):
    expr = VARIANTS[name][0]
    return snippet_spec(forward(expr), f"[torch.randn({shape_str(shape)}){DT[dtype]}]", "topk")


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=case_ids(CASES))
def test_topk_kernel_matches_reference(name, shape, dtype):
    result = run_check(topk_spec(name, shape, dtype), make_inputs(), CHECK)
    assert result.ok, result.message


STRIDED = [("router_k2", (64, 8), "float32"), ("k8", (37, 1000), "bfloat16"), ("middle_dim_k5", (16, 129, 7),
                                                                                  "float16")]


@pytest.mark.parametrize("name,shape,dtype", STRIDED, ids=[s[0] for s in STRIDED])
def test_topk_kernel_strided_inputs(name, shape, dtype):
    """Inputs as non-contiguous views (dims stored in reverse order)."""
    result = run_check(topk_spec(name, shape, dtype), make_inputs(strided=True), CHECK)
    assert result.ok, result.message


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_topk_special_values_on_gpu(dtype):
    """NaN first (largest) / last (smallest), infinities as values, repeated values each selected once."""
    import torch

    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source

    from .test_topk import special_rows

    for largest in (True, False):
        spec = snippet_spec(forward(f"torch.topk(x, 6, largest={largest})"), f"[torch.randn(4, 9){DT[dtype]}]",
                            "topk")
        source = generate_kernel(spec)
        x = special_rows().to(getattr(torch, dtype))
        got_v, got_i = load_source(source)[source.launch_name](x.cuda())
        want_v, _ = torch.topk(x.double(), 6, largest=largest)
        torch.testing.assert_close(got_v.cpu().double(), want_v, rtol=0, atol=0, equal_nan=True)
        picked = x.double().gather(1, got_i.cpu())
        torch.testing.assert_close(picked, want_v, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("n", [8192, 4096, 128])
def test_sort_keeps_a_nan_in_the_last_column_on_gpu(n, dtype):
    """An ascending sort of full lines (no padding: chunk sorts and ranks at 8192, one bitonic tile at 4096, 128
    selection rounds at 128) with a NaN in the last column of one line and the first of another: PyTorch's
    values and indices, the NaN last."""
    import torch

    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source

    source = generate_kernel(snippet_spec(forward("torch.sort(x)"), f"[torch.randn(3, {n}){DT[dtype]}]", "topk"))
    x = torch.randn(3, n, device="cuda").to(getattr(torch, dtype))
    x[0, -1] = float("nan")
    x[1, 0] = float("nan")
    got_v, got_i = load_source(source)[source.launch_name](x)
    want_v, want_i = torch.sort(x, stable=True)
    torch.testing.assert_close(got_v, want_v, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(got_i, want_i)


@pytest.mark.parametrize("shape", VARIANTS["topk_k256"][1], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_topk_by_halving_rounds(shape, dtype, monkeypatch):
    """SORT_TUNING["topk_rounds_tile"] (the default; forced on here): top-256 by sorted groups and halving rounds."""
    from tilestudio.core.kernels import sort_bitonic

    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "topk_rounds_tile", True)
    result = run_check(topk_spec("topk_k256", shape, dtype), make_inputs(), CHECK)
    assert result.ok, result.message


NARROW = [(name, VARIANTS[name][1][1], dtype) for name in ("k8", "sort_long", "topk_k256", "topk_vocab_k50",
                                                          "sort_vocab_descending", "smallest_dim0")
          for dtype in ("bfloat16", "float16")]


@pytest.mark.parametrize("name,shape,dtype", NARROW, ids=case_ids(NARROW))
def test_narrow_keys_match_reference(name, shape, dtype, monkeypatch):
    """SORT_TUNING["keys32"] / ["keys32_select"] (on by default, forced on here): 16-bit floats in
    int32 keys."""
    from tilestudio.core.kernels import sort_bitonic

    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32", True)
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32_select", True)
    result = run_check(topk_spec(name, shape, dtype), make_inputs(), CHECK)
    assert result.ok, result.message
