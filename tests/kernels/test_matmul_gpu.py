"""Matmul family on the GPU: each variant on three shapes (unaligned ones included, one large) in
float32/float16/bfloat16, against the float64 reference with poisoned outputs (checking.check_kernel).

`CHECK` is swapped for the CPU emulator by test_matmul_compile.py, which runs the smallest shape of every variant
through this file's own code so that the file is known to be right before it reaches a GPU.
"""

from __future__ import annotations

import pytest

from .helpers import case_ids, run_check
from .helpers_gemm import DT, DTYPES, module_model, snippet_spec, transposed_inputs

pytestmark = pytest.mark.gpu
CHECK = None


def _linear_gelu(shape, dt):
    b, s, k, n = shape
    return (module_model(f"self.fc = nn.Linear({k}, {n}){dt}", "F.gelu(self.fc(x))"),
            f"[torch.randn({b}, {s}, {k}){dt}]", None)


def _linear_bn_relu(shape, dt):
    m, k, n = shape
    return (module_model(f"self.fc = nn.Linear({k}, {n}){dt}; self.bn = nn.BatchNorm1d({n}){dt}",
                         "torch.relu(self.bn(self.fc(x)))"), f"[torch.randn({m}, {k}){dt}]", None)


def _linear_residual_scale(shape, dt):
    m, k, n = shape
    return (module_model(f"self.fc = nn.Linear({k}, {n}, bias=False){dt}", "(self.fc(x) + r) * 0.5", "x, r"),
            f"[torch.randn({m}, {k}){dt}, torch.randn({m}, {n}){dt}]", None)


def _matmul_2d(shape, dt):
    m, k, n = shape
    return (module_model("", "torch.matmul(a, b)", "a, b"), f"[torch.randn({m}, {k}){dt}, torch.randn({k}, {n}){dt}]",
            None)


def _bmm_colmajor_b(shape, dt):
    bt, m, k, n = shape
    return (module_model("", "torch.bmm(a, b) * 0.5", "a, b"),
            f"[torch.randn({bt}, {m}, {k}){dt}, torch.randn({bt}, {k}, {n}){dt}]", {"b"})


def _baddbmm(shape, dt):
    bt, m, k, n = shape
    return (module_model("", "torch.baddbmm(c, a, b, beta=0.5, alpha=2.0)", "c, a, b"),
            f"[torch.randn({bt}, 1, {n}){dt}, torch.randn({bt}, {m}, {k}){dt}, torch.randn({bt}, {k}, {n}){dt}]",
            None)


def _addmm_relu(shape, dt):
    m, k, n = shape
    return (module_model("", "torch.relu(torch.addmm(c, a, b, beta=0.7, alpha=1.5))", "c, a, b"),
            f"[torch.randn({n}){dt}, torch.randn({m}, {k}){dt}, torch.randn({k}, {n}){dt}]", None)


def _einsum_scores_masked(shape, dt):
    b, h, q, kk, d = shape
    return (module_model("", "torch.where(m > 0, torch.einsum('bhqd,bhkd->bhqk', a, c) * 0.125, -1e4)", "a, c, m"),
            f"[torch.randn({b}, {h}, {q}, {d}){dt}, torch.randn({b}, {h}, {kk}, {d}){dt}, "
            f"torch.randn(1, 1, {q}, {kk}){dt}]", None)


def _broadcast_matmul(shape, dt):
    b, m, k, n = shape
    return (module_model("", "torch.matmul(a, b)", "a, b"),
            f"[torch.randn(2, 1, {m}, {k}){dt}, torch.randn({b}, {k}, {n}){dt}]", None)


def _mv(shape, dt):
    m, k = shape
    return (module_model("", "torch.mv(a, v)", "a, v"), f"[torch.randn({m}, {k}){dt}, torch.randn({k}){dt}]", None)


def _outer(shape, dt):
    m, n = shape
    return (module_model("", "torch.outer(a, v) + 1.0", "a, v"), f"[torch.randn({m}){dt}, torch.randn({n}){dt}]",
            None)


# name → (builder(shape, dt) -> (model, inputs, column-major input names), shapes)
VARIANTS = {
    "linear_bias_gelu": (_linear_gelu, [(2, 17, 50, 70), (4, 128, 256, 512), (8, 128, 1024, 1024)]),
    "linear_bn_relu": (_linear_bn_relu, [(33, 50, 70), (256, 512, 384), (7, 3, 1)]),
    "linear_residual_scale": (_linear_residual_scale, [(33, 50, 70), (512, 1024, 768), (1, 9, 5)]),
    "matmul_2d": (_matmul_2d, [(33, 50, 70), (1024, 1024, 1024), (129, 1000, 65)]),
    "bmm_colmajor_b": (_bmm_colmajor_b, [(4, 33, 20, 17), (8, 256, 64, 256), (2, 100, 300, 129)]),
    "baddbmm": (_baddbmm, [(3, 25, 40, 19), (16, 128, 64, 128), (1, 1, 7, 3)]),
    "addmm_relu": (_addmm_relu, [(33, 50, 70), (512, 256, 1024), (5, 1, 9)]),
    "einsum_scores_masked": (_einsum_scores_masked, [(2, 3, 11, 13, 24), (4, 8, 128, 128, 64), (1, 2, 77, 100, 32)]),
    "broadcast_matmul": (_broadcast_matmul, [(3, 33, 50, 17), (4, 64, 128, 96), (1, 5, 7, 3)]),
    "mv": (_mv, [(33, 50), (1024, 4096), (7, 1)]),
    "outer": (_outer, [(33, 70), (1024, 2048), (1, 5)]),
}
CASES = [(name, shape, dtype) for name, (_, shapes) in VARIANTS.items() for shape in shapes for dtype in DTYPES]


def build(name, shape, dtype):
    """(spec, make_input) of one case."""
    builder, _ = VARIANTS[name]
    model, inputs, colmajor = builder(shape, DT[dtype])
    spec = snippet_spec(model, inputs, "matmul")
    return spec, (transposed_inputs(colmajor) if colmajor else None)


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=case_ids(CASES))
def test_matmul_kernel_matches_reference(name, shape, dtype):
    spec, make_input = build(name, shape, dtype)
    result = run_check(spec, make_input, CHECK)
    assert result.ok, result.message


# one-K-step GEMMs walking several N tiles per block (TILES["mm_one_step_n_tiles"], forced): shapes large enough
# that the grid keeps two blocks per SM, unaligned M, column-major B, a bias and a scaled sum
NLOOP = [("bmm_colmajor_b", (64, 1000, 128, 1024)), ("baddbmm", (32, 512, 64, 1024)),
         ("einsum_scores_masked", (8, 16, 256, 512, 64))]


@pytest.mark.parametrize("name,shape", NLOOP, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in NLOOP])
@pytest.mark.parametrize("tiles", [2, 4])
def test_one_step_gemm_walking_n_tiles(name, shape, tiles, monkeypatch):
    from tilestudio.core.kernels import gemm_common

    monkeypatch.setitem(gemm_common.TILES, "mm_one_step_n_tiles", tiles)
    spec, make_input = build(name, shape, "bfloat16")
    result = run_check(spec, make_input, CHECK)
    assert result.ok, result.message
