"""Pool family on the GPU: each variant on three shapes (unaligned ones included) in float32/float16/bfloat16,
checked against the float64 reference with poisoned outputs."""

from __future__ import annotations

import pytest

from .helpers import case_ids, run_check
from .helpers_indexed import DT, forward, gpu_cases, make_inputs, shape_str, snippet_spec

pytestmark = pytest.mark.gpu
CHECK = None  # checking.check_kernel; tests of this file swap in the CPU emulator to validate the file itself

# name → (forward expression of x (and b), shapes of x, extra input (template with {C} and {dt}) or None)
VARIANTS = {
    "max2d_k3s2p1": ("F.max_pool2d(x, 3, 2, 1)", [(2, 5, 17, 19), (4, 32, 56, 57), (1, 3, 7, 300)], None),
    "max2d_k3s2p1_even": ("F.max_pool2d(x, 3, 2, 1)", [(2, 5, 18, 22), (8, 64, 112, 112), (1, 3, 7, 600)], None),
    "max1d_k3s2p1": ("F.max_pool1d(x, 3, 2, 1)", [(3, 4, 140), (16, 64, 1000), (1, 1, 6)], None),
    "max2d_k2_aligned": ("F.max_pool2d(x, 2)", [(2, 3, 25, 23), (8, 64, 112, 112), (3, 5, 9, 1001)], None),
    "max2d_ceil_dilation": ("F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True)",
                            [(2, 3, 20, 23), (4, 16, 64, 65), (1, 2, 9, 9)], None),
    "max2d_indices": ("F.max_pool2d(x, 3, 2, 1, return_indices=True)",
                      [(2, 3, 11, 13), (4, 8, 33, 35), (2, 16, 64, 64)], None),
    "max1d_ceil_indices": ("F.max_pool1d(x, 4, 3, 1, ceil_mode=True, return_indices=True)",
                           [(3, 4, 29), (8, 64, 1000), (1, 1, 5)], None),
    "max3d_k2_aligned": ("F.max_pool3d(x, 2)", [(2, 5, 7, 11, 13), (2, 16, 16, 32, 33), (1, 3, 4, 4, 5)], None),
    "max3d_k2_even": ("F.max_pool3d(x, 2)", [(2, 5, 6, 10, 14), (2, 16, 16, 32, 64), (1, 3, 4, 4, 2)], None),
    "avg2d_k2_relu": ("F.relu(F.avg_pool2d(x, 2))", [(2, 3, 24, 22), (8, 64, 112, 112), (1, 2, 2, 1000)], None),
    "max3d_k3s2p1": ("F.max_pool3d(x, 3, 2, 1)", [(2, 3, 7, 8, 9), (2, 8, 16, 17, 18), (1, 2, 3, 3, 3)], None),
    "avg2d_exclude_pad_ceil": ("F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)",
                               [(2, 3, 16, 21), (4, 32, 56, 57), (1, 1, 5, 300)], None),
    "avg2d_include_pad": ("F.avg_pool2d(x, 3, 2, 1)", [(2, 8, 25, 31), (8, 16, 64, 64), (1, 3, 3, 4)], None),
    "avg2d_k2_aligned_ceil": ("F.avg_pool2d(x, 2, ceil_mode=True)", [(2, 3, 25, 23), (8, 64, 112, 112),
                                                                      (1, 2, 3, 1001)], None),
    "avg2d_divisor": ("F.avg_pool2d(x, (2, 3), (2, 1), divisor_override=5)",
                      [(2, 3, 9, 10), (4, 16, 40, 41), (1, 1, 2, 3)], None),
    "avg1d": ("F.avg_pool1d(x, 4, 3, 1)", [(3, 9, 100), (16, 64, 999), (1, 1, 4)], None),
    "avg3d": ("F.avg_pool3d(x, 3, 2, 1)", [(2, 4, 9, 10, 7), (2, 8, 16, 17, 18), (1, 1, 3, 3, 3)], None),
    "adaptive_avg2d": ("F.adaptive_avg_pool2d(x, (5, 7))", [(2, 10, 23, 30), (8, 64, 56, 56), (1, 3, 5, 7)],
                       None),
    "adaptive_avg2d_global": ("F.adaptive_avg_pool2d(x, 1)", [(2, 32, 13, 17), (32, 256, 56, 56), (3, 5, 1, 1)],
                              None),
    "adaptive_avg1d": ("F.adaptive_avg_pool1d(x, 6)", [(2, 5, 23), (8, 64, 1000), (1, 1, 6)], None),
    "adaptive_avg3d": ("F.adaptive_avg_pool3d(x, (2, 3, 3))", [(2, 5, 7, 10, 11), (2, 16, 16, 20, 21),
                                                                (1, 1, 2, 3, 3)], None),
    "adaptive_max2d_indices": ("F.adaptive_max_pool2d(x, (3, 4), return_indices=True)",
                               [(2, 6, 17, 21), (4, 32, 64, 65), (1, 1, 3, 4)], None),
    "adaptive_max2d_global": ("F.adaptive_max_pool2d(x, 1)", [(2, 70, 33, 35), (16, 512, 28, 28), (1, 3, 1, 2)],
                              None),
    "adaptive_max3d": ("F.adaptive_max_pool3d(x, (2, 3, 3))", [(2, 3, 5, 7, 8), (2, 8, 16, 17, 18),
                                                                (1, 1, 2, 3, 3)], None),
    "max2d_relu_scale_bias": ("F.relu(F.max_pool2d(x, 2)) * 0.5 + b", [(2, 6, 14, 10), (8, 64, 56, 57),
                                                                       (1, 3, 3, 3)],
                              "torch.randn({C}, 1, 1){dt}"),
    "avg2d_gelu": ("F.gelu(F.avg_pool2d(x, 3, 2, 1))", [(2, 6, 14, 10), (8, 64, 56, 57), (1, 3, 3, 3)], None),
}
CORE = {"max2d_k3s2p1", "max2d_k2_aligned", "max2d_indices", "avg2d_exclude_pad_ceil", "adaptive_avg2d",
        "adaptive_avg2d_global", "max2d_relu_scale_bias", "max3d_k2_even", "avg2d_k2_relu",
        "max2d_k3s2p1_even"}
CASES = gpu_cases({name: v[1] for name, v in VARIANTS.items()}, CORE)


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=case_ids(CASES))
def test_pool_kernel_matches_reference(name, shape, dtype):
    expr, _, extra = VARIANTS[name]
    dt = DT[dtype]
    inputs = f"torch.randn({shape_str(shape)}){dt}"
    args = "x"
    if extra:
        inputs += ", " + extra.format(C=shape[1], dt=dt)
        args = "x, b"
    spec = snippet_spec(forward(expr, args), f"[{inputs}]", "pool")
    result = run_check(spec, make_inputs(), CHECK)
    assert result.ok, result.message


STRIDED = [("max2d_k3s2p1", (4, 32, 56, 57), "float16"), ("max2d_relu_scale_bias", (8, 64, 56, 57), "float32"),
           ("adaptive_avg2d_global", (32, 256, 56, 56), "bfloat16")]


@pytest.mark.parametrize("name,shape,dtype", STRIDED, ids=[s[0] for s in STRIDED])
def test_pool_kernel_strided_inputs(name, shape, dtype):
    """Inputs as non-contiguous views (dims stored in reverse order)."""
    expr, _, extra = VARIANTS[name]
    dt = DT[dtype]
    inputs = f"torch.randn({shape_str(shape)}){dt}" + (", " + extra.format(C=shape[1], dt=dt) if extra else "")
    spec = snippet_spec(forward(expr, "x, b" if extra else "x"), f"[{inputs}]", "pool")
    result = run_check(spec, make_inputs(strided=True), CHECK)
    assert result.ok, result.message


FP32_PAIRS = [(name, shape) for name in ("max2d_k2_aligned", "max2d_k3s2p1_even", "avg2d_k2_relu", "max1d_k3s2p1")
              for shape in VARIANTS[name][1]]


@pytest.mark.parametrize("name,shape", FP32_PAIRS, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in FP32_PAIRS])
def test_pool_float32_pair_views(name, shape, monkeypatch):
    """The float32 pair views (int64 words; MEMORY_TUNING["pool_pairs_fp32"], the default) on the
    same shapes as the 16-bit cases."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_pairs_fp32", True)
    spec = snippet_spec(forward(VARIANTS[name][0]), f"[torch.randn({shape_str(shape)})]", "pool")
    result = run_check(spec, make_inputs(), CHECK)
    assert result.ok, result.message


FLAT_PAIRS = [("F.max_pool2d(x, 3, 2, 1)", (32, 128, 112, 112), "float32"),
              ("F.max_pool2d(x, 3, 2, 1)", (3, 5, 17, 22), "float32"),
              ("F.max_pool2d(x, 3, 2, 1)", (8, 64, 55, 114), "float16"),
              ("F.max_pool2d(x, (5, 3), (3, 2), (2, 1))", (4, 7, 31, 42), "bfloat16"),
              ("F.max_pool1d(x, 3, 2, 1)", (16, 33, 1030), "float32")]


@pytest.mark.parametrize("expr,shape,dtype", FLAT_PAIRS,
                         ids=[f"{e[2:e.index('(')]}-{'x'.join(map(str, s))}-{d}" for e, s, d in FLAT_PAIRS])
def test_pool_pair_windows_flat(expr, shape, dtype, monkeypatch):
    """max_pool(3, 2, 1) pair windows with the output as one flat run (MEMORY_TUNING["pool_pairs_flat"]; widths
    the 16-bit quads do not take, float32)."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pool_pairs_flat", True)
    spec = snippet_spec(forward(expr), f"[torch.randn({shape_str(shape)}){DT.get(dtype, '')}]", "pool")
    result = run_check(spec, make_inputs(strided=True), CHECK)
    assert result.ok, result.message


QUADS = [("F.max_pool2d(x, 2)", (64, 128, 112, 112)), ("F.max_pool2d(x, 2)", (3, 5, 6, 8)),
         ("F.avg_pool2d(x, 2)", (8, 64, 56, 56)), ("F.max_pool1d(x, 2)", (16, 33, 1032)),
         ("F.max_pool2d(x, 3, 2, 1)", (64, 128, 112, 112)), ("F.max_pool2d(x, 3, 2, 1)", (2, 3, 9, 8)),
         ("F.max_pool1d(x, 3, 2, 1)", (4, 5, 1032))]


@pytest.mark.parametrize("expr,shape", QUADS, ids=[f"{e[2:-1]}-{'x'.join(map(str, s))}" for e, s in QUADS])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("flat", [False, True], ids=["tiles", "flat"])
def test_pool_16bit_quads(expr, shape, dtype, flat, monkeypatch):
    """16-bit pools through 64-bit words, 2-wide aligned and 3/2/1 windows (MEMORY_TUNING["pool_quads"], the
    default, forced on so the test keeps this path); 3/2/1 windows also with the output as a flat run of words
    (MEMORY_TUNING["pool_quads_flat"])."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    if flat and "3, 2, 1" not in expr:
        pytest.skip("flat output words are for 3/2/1 windows")
    monkeypatch.setitem(MEMORY_TUNING, "pool_quads", True)
    monkeypatch.setitem(MEMORY_TUNING, "pool_quads_flat", flat)
    spec = snippet_spec(forward(expr), f"[torch.randn({shape_str(shape)}){DT[dtype]}]", "pool")
    result = run_check(spec, make_inputs(), CHECK)
    assert result.ok, result.message
