"""Top-k family on the CPU: the analyzer gives topk its own kernel (no skeleton), every variant of the GPU file
compiles for sm_90 and sm_100 and matches its float64 reference on the emulator (smallest shape, three dtypes),
and NaN/infinity/duplicate rows give PyTorch's values, each position selected once, by selection and by the
bitonic sort alike, and by chunk sorts with ranked runs over long lines."""

from __future__ import annotations

import math

import pytest
import torch

from . import test_topk_gpu
from .cutile_emulator import check_emulated, emulation, load_emulated
from .helpers import compile_spec
from .helpers_indexed import forward, snippet_spec


def special_rows() -> torch.Tensor:
    nan, inf = math.nan, math.inf
    return torch.tensor([[1.0, nan, 3.0, 3.0, -inf, 2.0, nan, 0.5, 3.0],
                         [-inf, -inf, -inf, -inf, -inf, -inf, -inf, 1.0, -inf],
                         [inf, 2.0, inf, -1.0, 0.0, -0.0, 7.0, nan, -2.0],
                         [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0]])


@pytest.mark.parametrize("name", sorted(test_topk_gpu.VARIANTS))
def test_gpu_topk_cases_pass_on_the_emulator(name, monkeypatch):
    monkeypatch.setattr(test_topk_gpu, "CHECK", check_emulated)
    shape = min(test_topk_gpu.VARIANTS[name][1], key=math.prod)
    for dtype in ("float32", "float16", "bfloat16"):
        test_topk_gpu.test_topk_kernel_matches_reference(name, shape, dtype)


def test_gpu_topk_strided_cases_pass_on_the_emulator(monkeypatch):
    monkeypatch.setattr(test_topk_gpu, "CHECK", check_emulated)
    for name, shape, dtype in test_topk_gpu.STRIDED[:2]:
        test_topk_gpu.test_topk_kernel_strided_inputs(name, shape, dtype)


@pytest.mark.parametrize("name", ["router_k2", "smallest_dim0", "values_scaled", "indices_only", "sort_long",
                                  "topk_k256", "topk_vocab_k50", "sort_vocab_descending"])
def test_topk_compiles_for_sm90_and_sm100(name):
    shape = test_topk_gpu.VARIANTS[name][1][1]
    compile_spec(test_topk_gpu.topk_spec(name, shape, "bfloat16"))


def test_topk_by_halving_rounds_is_the_default_and_compiles_for_sm90_and_sm100(monkeypatch):
    """SORT_TUNING["topk_rounds_tile"] (on since session 30's H100 timings): a large top-k of whole lines by sorted
    groups of k and halving rounds; turned off, the whole line is sorted."""
    from tilestudio.core.kernels import generate_kernel, sort_bitonic

    spec = test_topk_gpu.topk_spec("topk_k256", (128, 4096), "bfloat16")
    assert "each pair's top 256" in compile_spec(spec).code
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "topk_rounds_tile", False)
    assert "each pair's top" not in generate_kernel(spec).code


@pytest.mark.parametrize("name", ["sort_long", "topk_vocab_k50"])
def test_sort_occupancy_hint_compiles_and_shrinks_shared_memory(name, monkeypatch):
    """SORT_TUNING["sort_occupancy"] (4 by default since session 30's H100 timings): the hint reaches the sort
    kernels' decorators, and on sm_90 the sort's static shared memory fits four blocks per SM (without it the
    compiler takes ~200 KB per block); None drops the hint."""
    from tilestudio.core.kernels import aot, generate_kernel, sort_bitonic

    spec = test_topk_gpu.topk_spec(name, test_topk_gpu.VARIANTS[name][1][1], "float32")
    source = compile_spec(spec)
    assert "@ct.kernel(occupancy=4)" in source.code
    first_launch = aot.trace_launches(source, spec)[0]
    shared = aot.shared_memory_bytes(aot.compile_cubin(first_launch, "sm_90", specialize=True))
    assert shared <= 228 * 1024 // 4, shared
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "sort_occupancy", None)
    assert "occupancy=" not in generate_kernel(spec).code


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("packed", [True, False, "bitonic", "partner", "rounds"],
                         ids=["packed_keys", "four_reductions", "bitonic", "bitonic_partner_form", "bitonic_rounds"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_special_values_on_the_emulator(largest, packed, dtype, monkeypatch):
    """NaN, infinities, signed zeros and repeats; 16-bit floats by their own 16 bits in int32 keys (sort_keys.py's
    narrow keys) wherever the values are packed."""
    from tilestudio.core.kernels import generate_kernel, sort_bitonic, topk

    if packed in ("bitonic", "partner", "rounds"):  # the whole-line sort that k above MAX_K takes
        monkeypatch.setattr(topk, "MAX_K", 2)
        monkeypatch.setitem(sort_bitonic.SORT_TUNING, "sort_form", "partner" if packed == "partner" else "halves")
        monkeypatch.setitem(sort_bitonic.SORT_TUNING, "topk_rounds_tile", packed == "rounds")
    monkeypatch.setitem(topk.TUNING, "packed_keys", bool(packed))
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32", True)
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32_select", True)
    spec = snippet_spec(forward(f"torch.topk(x, 6, largest={largest})"), f"[torch.randn(4, 9).to(torch.{dtype})]",
                        "topk")
    source = generate_kernel(spec)
    assert not source.skeleton and (packed not in ("bitonic", "partner", "rounds")) == ("ct.cat(" not in source.code)
    assert (packed == "rounds") == ("each pair's top" in source.code)  # the halving rounds
    assert ("ct.bitcast(t, ct.int16)" in source.code) == (dtype != "float32" and packed is not False)
    x = special_rows().to(getattr(torch, dtype))
    with emulation():
        got_v, got_i = load_emulated(source)[source.launch_name](x)
    want_v, _ = torch.topk(x.double(), 6, largest=largest)
    torch.testing.assert_close(got_v.double(), want_v, rtol=0, atol=0, equal_nan=True)
    assert all(len(set(row.tolist())) == 6 for row in got_i)  # each position once, duplicates of a value too
    torch.testing.assert_close(x.double().gather(1, got_i), want_v, rtol=0, atol=0, equal_nan=True)


def test_topk_indices_check_is_tie_aware_and_catches_wrong_picks():
    from tilestudio.core.kernels.checking import topk_indices_agree

    spec = snippet_spec(forward("torch.topk(x, 2)"), "[torch.randn(2, 4)]", "topk")
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 1.0, 0.0, 5.0]])
    want = torch.tensor([[1, 2], [3, 0]])
    assert topk_indices_agree(spec, [x], torch.tensor([[2, 1], [3, 0]]), want)  # the tie in either order
    assert not topk_indices_agree(spec, [x], torch.tensor([[1, 1], [3, 0]]), want)  # an index twice
    assert not topk_indices_agree(spec, [x], torch.tensor([[1, 2], [0, 3]]), want)  # the right set, wrong order
    assert not topk_indices_agree(spec, [x], torch.tensor([[1, 2], [3, 1]]), want)  # a smaller value


@pytest.mark.parametrize("expr,n", [("torch.topk(x, 4)", 20000), ("torch.sort(x)", 5000),
                                    ("torch.argsort(x, descending=True)", 4097), ("torch.topk(x, 200)", 8000)])
def test_topk_and_sort_beyond_one_tile_sort_chunks_and_rank_runs(expr, n):
    """Lines beyond the selection kernel's and the bitonic tile's limits: chunk sorts, then ranks (sort_long.py)."""
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(forward(expr), f"[torch.randn(2, {n})]", "topk")
    source = generate_kernel(spec)
    assert not source.skeleton and source.kernel_names == [f"{spec.id}_chunks_kernel", f"{spec.id}_rank_kernel"]
    assert f"lines of {n} as {-(-n // 4096)} chunks of 4096" in source.notes[0], source.notes


LONG = [("torch.topk(x, 5)", (3, 100), lambda x: torch.sort(x, descending=True, stable=True), 5),
        ("torch.topk(x, 20, largest=False)", (3, 70), lambda x: torch.sort(x, stable=True), 20),
        ("torch.topk(x, 16)", (2, 64), lambda x: torch.sort(x, descending=True, stable=True), 16),  # k = a chunk
        ("torch.topk(x, 3, dim=0)", (50, 2), lambda x: torch.sort(x, dim=0, descending=True, stable=True), 3),
        ("torch.topk(x, 1, largest=False)", (2, 90), lambda x: torch.sort(x, stable=True), 1),
        ("torch.sort(x, descending=True)", (2, 53), lambda x: torch.sort(x, descending=True, stable=True), 53),
        ("torch.sort(x, dim=0)", (40, 3), lambda x: torch.sort(x, dim=0, stable=True), 40),
        ("torch.argsort(x, dim=1)", (2, 37, 3), lambda x: (None, torch.argsort(x, dim=1, stable=True)), 37)]


@pytest.mark.parametrize("form", ["halves", "partner", "whole_sorts", "halves_bf16"])
@pytest.mark.parametrize("case", range(len(LONG)), ids=[f"{c[0]}-{c[1]}" for c in LONG])
def test_long_lines_give_pytorchs_order_on_the_emulator(case, form, monkeypatch):
    """Chunk sort + ranks with chunks of 16 (so a few dozen elements make several runs): values and indices
    exactly PyTorch's stable order, NaN first for the largest and last for the smallest, infinities as values,
    ties (many repeats of one value, across chunks) at the lower index first. A chunk's top k by halving rounds
    (the default) and, `whole_sorts`, by sorting the whole chunk; `halves_bf16`: bfloat16 values in int32 keys."""
    from tilestudio.core.kernels import generate_kernel, sort_bitonic, topk

    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "long_chunk", 16)
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32", True)  # 16-bit floats in int32 keys
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32_select", True)
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "sort_form", "partner" if form == "partner" else "halves")
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "topk_rounds", form != "whole_sorts")
    monkeypatch.setattr(topk, "MAX_LINE", 32)
    monkeypatch.setattr(topk, "MAX_SORT_LINE", 16)
    expr, shape, ref, k = LONG[case]
    dtype = torch.bfloat16 if form == "halves_bf16" else torch.float32
    spec = snippet_spec(forward(expr), f"[torch.randn{shape}.to({dtype})]", "topk")
    source = generate_kernel(spec)
    assert "chunks of 16" in source.notes[0], source.notes
    assert ("dtype=torch.int32, device" in source.code) == (dtype == torch.bfloat16)  # the runs' key width
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(case)).to(dtype)
    flat = x.view(-1)
    flat[::5] = flat[1]  # repeats of one value in every chunk
    flat[3], flat[11], flat[12], flat[30] = math.nan, math.inf, -math.inf, math.nan
    flat[7], flat[8], flat[19], flat[22] = 0.0, -0.0, -0.0, 0.0  # signed zeros tie, across chunks too
    with emulation():
        got = load_emulated(source)[source.launch_name](x)
    want_v, want_i = ref(x)
    dim = 0 if "dim=0" in expr else (1 if "dim=1" in expr else -1)
    if want_v is None:  # argsort
        assert torch.equal(got, want_i)
        return
    got_v, got_i = got
    torch.testing.assert_close(got_v, want_v.narrow(dim, 0, k), rtol=0, atol=0, equal_nan=True)
    assert torch.equal(got_i, want_i.narrow(dim, 0, k))


@pytest.mark.parametrize("expr", ["torch.sort(x, stable=True)", "torch.sort(x, descending=True)",
                                  "torch.topk(x, 7)", "torch.topk(x, 7, largest=False)", "torch.argsort(x)"])
def test_signed_zeros_tie_in_index_order_on_the_emulator(expr):
    """-0.0 and +0.0 are equal to PyTorch: a stable sort and a top-k keep them in index order (the packed keys map
    both to one rank), whether the line is sorted whole or selected key by key."""
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(forward(expr), "[torch.randn(3, 12)]", "topk")
    source = generate_kernel(spec)
    assert not source.skeleton
    x = torch.tensor([[0.0, -0.0, 1.0, -0.0, 0.0, -1.0, -0.0, 2.0, 0.0, -0.0, -2.0, 0.0],
                      [-0.0] * 6 + [0.0] * 6,
                      [3.0, -0.0, -5e-45, 0.0, 5e-45, -0.0, 0.0, -3.0, -0.0, 0.0, 1e-38, -1e-38]])
    with emulation():
        got = load_emulated(source)[source.launch_name](x)
    descending = "descending=True" in expr or ("topk" in expr and "largest=False" not in expr)
    want_v, want_i = torch.sort(x, descending=descending, stable=True)
    if "argsort" in expr:
        assert torch.equal(got, want_i)
        return
    k = 7 if "topk" in expr else 12
    got_v, got_i = got
    assert torch.equal(got_i, want_i[:, :k])
    assert torch.equal(got_v, want_v[:, :k])  # values equal (a -0.0 may come back as +0.0)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("path", ["selection", "bitonic", "long"])
def test_a_nan_in_the_last_column_of_a_full_line_sorts_last(path, dtype, monkeypatch):
    """largest=False ranks NaN below every number, yet above the padding key: a NaN whose column makes the low
    part 0 (the last column of a line with no padding) is kept, not taken for padding (the rank kernel of long
    lines dropped it when NaN's rank was the padding's)."""
    from tilestudio.core.kernels import generate_kernel, sort_bitonic, topk

    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "long_chunk", 16)
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32", True)  # 16-bit floats in int32 keys
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32_select", True)
    monkeypatch.setattr(topk, "MAX_LINE", 32)
    monkeypatch.setattr(topk, "MAX_SORT_LINE", 16)
    n, expr = {"selection": (16, "torch.sort(x)"), "bitonic": (16, "torch.topk(x, 16, largest=False)"),
               "long": (64, "torch.sort(x)")}[path]
    if path == "bitonic":
        monkeypatch.setattr(topk, "MAX_K", 2)
    spec = snippet_spec(forward(expr), f"[torch.randn(2, {n}).to(torch.{dtype})]", "topk")
    source = generate_kernel(spec)
    assert ("chunks of 16" in source.notes[0]) == (path == "long")
    assert ("ct.cat(" in source.code) == (path != "selection")
    x = torch.randn(2, n, generator=torch.Generator().manual_seed(7)).to(getattr(torch, dtype))
    x[0, -1] = math.nan
    x[1, 0] = math.nan
    with emulation():
        got_v, got_i = load_emulated(source)[source.launch_name](x)
    want_v, want_i = torch.sort(x, stable=True)
    torch.testing.assert_close(got_v, want_v, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(got_i, want_i)


def test_narrow_keys_only_for_16_bit_floats_whose_span_fits_16_bits(monkeypatch):
    """SORT_TUNING["keys32"] / ["keys32_select"] on: bfloat16 / float16 lines pack into int32 keys; float32 values,
    and long lines whose span (whole chunks) passes 65536 columns, keep int64 keys; each knob off, the sorts / the
    selection rounds keep int64 keys."""
    from tilestudio.core.kernels import generate_kernel, sort_bitonic

    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32", True)
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32_select", True)

    def narrow(expr, shape, dtype):
        code = generate_kernel(snippet_spec(forward(expr), f"[torch.randn{shape}.to(torch.{dtype})]", "topk")).code
        assert ("(rank << 16)" in code) != ("<< 32" in code)
        return "(rank << 16)" in code

    assert narrow("torch.topk(x, 50)", (4, 32000), "bfloat16") and narrow("torch.sort(x)", (4, 4096), "float16")
    assert narrow("torch.topk(x, 8)", (4, 1024), "bfloat16") and narrow("torch.sort(x)", (2, 65536), "bfloat16")
    assert not narrow("torch.topk(x, 50)", (4, 32000), "float32")
    assert not narrow("torch.topk(x, 50)", (2, 65537), "bfloat16")  # 17 chunks of 4096: a span of 69632
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32", False)
    assert not narrow("torch.topk(x, 50)", (4, 32000), "bfloat16") and narrow("torch.topk(x, 8)", (4, 1024), "bfloat16")
    monkeypatch.setitem(sort_bitonic.SORT_TUNING, "keys32_select", False)
    assert not narrow("torch.topk(x, 8)", (4, 1024), "bfloat16")


def test_gpu_narrow_key_cases_pass_on_the_emulator(monkeypatch):
    """The GPU file's narrow-key cases (int32 keys forced on), their smallest shapes, on the emulator."""
    monkeypatch.setattr(test_topk_gpu, "CHECK", check_emulated)
    for name in ("k8", "sort_long", "topk_k256", "smallest_dim0"):
        shape = min(test_topk_gpu.VARIANTS[name][1], key=math.prod)
        test_topk_gpu.test_narrow_keys_match_reference(name, shape, "bfloat16", monkeypatch)
