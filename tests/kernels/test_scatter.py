"""Scatter-style ops on the CPU: the analyzer gives scatter/scatter_add/scatter_reduce/index_add/index_copy real
kernels (no skeleton), every GPU case compiles for sm_90 and sm_100 and matches its float64 reference on the
emulator (smallest shape per variant, and the atomic form forced on the inverse form's shapes), with the form
chosen by the number of updates per element."""

from __future__ import annotations

import math

import pytest

from . import test_scatter_gpu as G
from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_indexed import forward, snippet_spec


def _smallest(name):
    return min(G.VARIANTS[name][3], key=lambda s: math.prod(s[0]) if isinstance(s[0], tuple) else math.prod(s))


@pytest.mark.parametrize("name", sorted(G.VARIANTS))
def test_gpu_scatter_cases_pass_on_the_emulator(name, monkeypatch):
    monkeypatch.setattr(G, "CHECK", check_emulated)
    for dtype in ("float32", "float16", "bfloat16"):
        G.test_scatter_kernel_matches_reference(name, _smallest(name), dtype)


@pytest.mark.parametrize("name", ["label_smoothing", "scatter_add_cols", "index_add_silu", "index_copy",
                                  "scatter_value_cols", "scatter_reduce_mean", "index_put_rows",
                                  "index_put_accumulate_wrapping", "index_put_cols"])
def test_both_forms_on_the_emulator(name, monkeypatch):
    """Each case through the inverse form (J <= scatter_inverse_max) and the atomic form (forced: max 0), except
    the reductions the atomic form does not take, which must become explicit skeletons naming the op."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setattr(G, "CHECK", check_emulated)
    shape = _smallest(name)
    for limit, form in ((64, "inverse form"), (0, "atomic form")):
        monkeypatch.setitem(MEMORY_TUNING, "scatter_inverse_max", limit)
        spec, ranges = G.case_spec(name, shape, "float32")
        source = generate_kernel(spec)
        if name == "scatter_reduce_mean" and limit == 0:
            assert source.skeleton and "mean" in source.notes[0]
            continue
        assert not source.skeleton and form in source.notes[0], source.notes
        result = check_emulated(spec, source, make_input=G.make_for(name, shape, ranges))
        assert result.ok, f"{form}: {result.message}"


@pytest.mark.parametrize("name,shape", [("label_smoothing", (37, 100)), ("scatter_add_cols", ((50, 64), 300)),
                                        ("index_add_silu", ((50, 64), 300)), ("scatter_reduce_amax", ((6, 11), 9)),
                                        ("index_copy", ((9, 13), 4)), ("index_put_accumulate_wrapping", ((9, 13), 4))])
def test_scatter_compiles_for_sm90_and_sm100(name, shape):
    for dtype in ("float32", "bfloat16"):
        compile_spec(G.case_spec(name, shape, dtype)[0])


def test_strided_scatter_inputs_on_the_emulator(monkeypatch):
    monkeypatch.setattr(G, "CHECK", check_emulated)
    for name, shape, dtype in G.STRIDED:
        G.test_scatter_kernel_strided_inputs(name, shape, dtype)


def test_inverse_form_is_one_deterministic_launch_and_atomic_form_three():
    from tilestudio.core.kernels import generate_kernel

    one_hot = snippet_spec(forward("torch.zeros_like(x).scatter_(1, i, 1.0) * 0.9", "x, i"),
                           "[torch.randn(8, 10), torch.randint(0, 10, (8, 1))]", "gather")
    src = generate_kernel(one_hot)
    assert src.kernel_names == [f"{one_hot.id}_kernel"] and "for j in range(1):" in src.code
    agg = snippet_spec(forward("torch.relu(x.index_add(0, i, s))", "x, i, s"),
                       "[torch.randn(50, 64), torch.randint(0, 50, (300,)), torch.randn(300, 64)]", "gather")
    src = generate_kernel(agg)
    assert src.kernel_names == [f"{agg.id}_init_kernel", f"{agg.id}_scatter_kernel", f"{agg.id}_kernel"]
    assert "ct.atomic_add(BUF" in src.code and src.code.count("ct.launch(") == 3
    plain = snippet_spec(forward("x.index_add(0, i, s)", "x, i, s"),
                         "[torch.randn(50, 64), torch.randint(0, 50, (300,)), torch.randn(300, 64)]", "gather")
    src = generate_kernel(plain)  # float32 with no epilogue: the output is the buffer
    assert src.code.count("ct.launch(") == 2 and "_buf" not in src.code


def test_integer_sums_and_atomic_reductions_are_explicit_skeletons(monkeypatch):
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(forward("x.scatter_add(0, i, s)", "x, i, s"),
                        "[torch.zeros(5, 4, dtype=torch.int64), torch.randint(0, 5, (40, 4)), "
                        "torch.ones(40, 4, dtype=torch.int64)]", "gather")
    source = generate_kernel(spec)
    assert source.skeleton and "integer sum" in source.notes[0]
    spec = snippet_spec(forward("x.scatter_reduce(0, i, s, 'amax')", "x, i, s"),
                        "[torch.randn(5, 4), torch.randint(0, 5, (40, 4)), torch.randn(40, 4)]", "gather")
    source = generate_kernel(spec)
    assert source.skeleton and "amax" in source.notes[0]
