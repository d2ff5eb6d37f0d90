"""Scatter-style ops on the GPU (core/kernels/scatter.py): scatter (value / src), scatter_add, scatter_reduce,
index_add, index_copy, index_put (one integer index tensor), each on three shapes (unaligned ones included, the inverse and the atomic form both) in
float32/float16/bfloat16, checked against the float64 reference with poisoned outputs. Index tensors are drawn from
their valid range; where an op keeps one of several writes (scatter, index_copy) they are unique along the scatter
dim, since PyTorch leaves the winner of duplicate writes unspecified."""

from __future__ import annotations

import pytest
import torch

from .helpers import run_check
from .helpers_indexed import DT, forward, gpu_cases, make_inputs, shape_str, snippet_spec

pytestmark = pytest.mark.gpu
CHECK = None  # checking.check_kernel; swapped for the CPU emulator when validating this file without a GPU


def _x(shape, dt):
    return f"torch.randn({shape_str(shape)}){dt}"


def _along(shape, dt, dim):
    """self (N, C); index and src along `dim`: (N, k) for dim 1, (M, C) for dim 0."""
    (n, c), k = shape
    upd = (n, k) if dim == 1 else (k, c)
    size = (n, c)[dim]
    return f"{_x((n, c), dt)}, torch.randint(0, {size}, {upd}), {_x(upd, dt)}", {"i": (0, size)}


def _rows(shape, dt):
    return _along(shape, dt, 1)


def _cols(shape, dt):
    return _along(shape, dt, 0)


def _index(shape, dt):
    """self (N, C), a 1-D index of M rows, source (M, C)."""
    (n, c), m = shape
    return f"{_x((n, c), dt)}, torch.randint(0, {n}, ({m},)), {_x((m, c), dt)}", {"i": (0, n)}


def _cols_value(shape, dt):
    """self (N, C), index (M, C) along dim 0, a scalar value."""
    (n, c), m = shape
    return f"{_x((n, c), dt)}, torch.randint(0, {n}, ({m}, {c}))", {"i": (0, n)}


def _one_hot(shape, dt):
    n, c = shape
    return f"{_x((n, c), dt)}, torch.randint(0, {c}, ({n}, 1))", {"i": (0, c)}


def _index_wrapping(shape, dt):
    """_index with indices drawn from [-N, N): index_put counts negative ones from the end."""
    inputs, _ = _index(shape, dt)
    return inputs, {"i": (-shape[0][0], shape[0][0])}


def _cols_index(shape, dt):
    """self (N, C), a 1-D index of M columns, values (N, M)."""
    (n, c), m = shape
    return f"{_x((n, c), dt)}, torch.randint(0, {c}, ({m},)), {_x((n, m), dt)}", {"i": (0, c)}


SETITEM = "(lambda y: (y.__setitem__({key}, {val}), y)[1])(x.clone())"  # `y = x.clone(); y[key] = val` as one expression
# name → (forward expression, args, builder: (shape, dtype suffix) → (inputs, int ranges), shapes, unique dim)
VARIANTS = {
    "label_smoothing": ("torch.zeros_like(x).scatter_(1, i, 1.0) * 0.9 + 0.1 / x.shape[-1]", "x, i", _one_hot,
                        [(37, 100), (2048, 32000), (1, 1)], None),
    "scatter_src_rows": ("x.scatter(1, i, s)", "x, i, s", _rows, [((6, 11), 5), ((512, 1000), 333), ((1, 3), 2)],
                         1),
    "scatter_value_cols": ("x.scatter(0, i, -2.5)", "x, i", _cols_value, [((9, 13), 4), ((3000, 257), 2999),
                                                                          ((2, 1), 1)], 0),
    "scatter_add_cols": ("x.scatter_add(0, i, s)", "x, i, s", _cols, [((7, 5), 3), ((50, 64), 300),
                                                                     ((4096, 257), 8)], None),
    "scatter_add_rows_relu": ("torch.relu(x.scatter_add(1, i, s * 2))", "x, i, s", _rows,
                              [((6, 11), 9), ((256, 1000), 4000), ((1, 1), 1)], None),
    "index_add": ("x.index_add(0, i, s, alpha=0.5)", "x, i, s", _index,
                  [((9, 13), 4), ((10000, 128), 100000), ((1, 3), 17)], None),
    "index_add_silu": ("F.silu(x.index_add(0, i, s))", "x, i, s", _index, [((50, 64), 300), ((7, 3), 2),
                                                                          ((2048, 96), 2048)], None),
    "index_copy": ("x.index_copy(0, i, s)", "x, i, s", _index, [((9, 13), 4), ((5000, 130), 4999), ((1, 2), 1)],
                   0),
    "scatter_reduce_amax": ("x.scatter_reduce(1, i, s, 'amax', include_self=False)", "x, i, s", _rows,
                            [((6, 11), 9), ((300, 257), 16), ((1, 2), 3)], None),
    "scatter_reduce_mean": ("x.scatter_reduce(1, i, s, 'mean')", "x, i, s", _rows,
                            [((6, 11), 9), ((300, 257), 16), ((1, 2), 3)], None),
    "scatter_reduce_prod": ("x.scatter_reduce(0, i, s, 'prod', include_self=False)", "x, i, s", _cols,
                            [((7, 5), 3), ((64, 300), 12), ((1, 1), 2)], None),
    # index_put: y[i] = s (unique rows), y[i] += s with negative indices, y[:, i] = s
    "index_put_rows": ("x.index_put((i,), s)", "x, i, s", _index, [((9, 13), 4), ((5000, 130), 4999), ((1, 2), 1)],
                       0),
    "index_put_accumulate_wrapping": ("x.index_put((i,), s, accumulate=True) * 2", "x, i, s", _index_wrapping,
                                      [((9, 13), 4), ((10000, 128), 100000), ((3, 5), 40)], None),
    "index_put_cols": (SETITEM.format(key="(slice(None), i)", val="s"), "x, i, s", _cols_index,
                       [((13, 9), 4), ((130, 5000), 4999), ((2, 1), 1)], 1),
}
CORE = {"label_smoothing", "scatter_add_cols", "index_add"}
CASES = gpu_cases({name: v[3] for name, v in VARIANTS.items()}, CORE)
IDS = [f"{n}-{VARIANTS[n][3].index(s)}-{d}" for n, s, d in CASES]


def unique_index(dim: int, size: int):
    """Wrap a make_input so that the index input `i` holds distinct values along `dim` (drawn from [0, size))."""
    base = make_inputs()

    def make(t, gen):
        if t.name != "i":
            return base(t, gen)
        shape = list(t.shape)
        if len(shape) == 1:
            return torch.randperm(size, generator=gen)[:shape[0]]
        full = list(shape)
        full[dim] = size
        keys = torch.rand(full, generator=gen)
        return keys.argsort(dim=dim).narrow(dim, 0, shape[dim]).contiguous()
    return make


def make_for(name, shape, ranges, strided=False):
    uniq = VARIANTS[name][4]
    if uniq is None:
        return make_inputs(int_ranges=ranges, strided=strided)
    return unique_index(uniq, ranges["i"][1])


def case_spec(name, shape, dtype):
    expr, args, build, _, _ = VARIANTS[name]
    inputs, ranges = build(shape, DT.get(dtype, ""))
    return snippet_spec(forward(expr, args), f"[{inputs}]", "gather"), ranges


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=IDS)
def test_scatter_kernel_matches_reference(name, shape, dtype):
    spec, ranges = case_spec(name, shape, dtype)
    result = run_check(spec, make_for(name, shape, ranges), CHECK)
    assert result.ok, result.message


STRIDED = [("scatter_add_cols", ((50, 64), 300), "float32"), ("label_smoothing", (37, 100), "bfloat16"),
           ("scatter_reduce_mean", ((6, 11), 9), "float16")]


@pytest.mark.parametrize("name,shape,dtype", STRIDED, ids=[s[0] for s in STRIDED])
def test_scatter_kernel_strided_inputs(name, shape, dtype):
    """self, index and source as non-contiguous views (dims stored in reverse order)."""
    spec, ranges = case_spec(name, shape, dtype)
    result = run_check(spec, make_inputs(int_ranges=ranges, strided=True), CHECK)
    assert result.ok, result.message
