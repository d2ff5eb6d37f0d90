"""Elementwise family: every corpus spec and every variant snippet generates, traces and compiles (CPU, AOT)."""

from __future__ import annotations

import pytest

from corpus import corpus_files
from .cutile_emulator import check_emulated
from .helpers import compile_spec, decompose_source
from .helpers_indexed import make_inputs
from .helpers_elementwise import (ACTIVATIONS_A, ACTIVATIONS_B, BROADCAST_NCHW, CHAIN_1D, CLAMP_TENSOR, COMPARE,
                                  HALF_MODULE, INT_MASK, LEADING_BROADCAST, MASKED_FILL, MATH, OUTER, ROTARY,
                                  ROW_COL, SCALARS, SETITEM_MASK, TRIL, WHERE, elementwise_specs, multi_output_spec,
                                  scalar_input_spec)

ARCHES = ("sm_90", "sm_100")
MODELS = [p for p in corpus_files() if not p.name.startswith("big_")]


def assert_emulated(spec, source):
    result = check_emulated(spec, source)
    assert result.ok, f"{spec.id}: {result.message}"
    if any(name.endswith("_strided_kernel") for name in source.kernel_names):  # inputs as non-contiguous views
        result = check_emulated(spec, source, make_input=make_inputs(strided=True))
        assert result.ok, f"{spec.id} (strided inputs): {result.message}"


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_corpus_elementwise_specs_compile(path, analyses):
    _, decomposition = analyses(path)
    for spec in elementwise_specs(decomposition):
        source = compile_spec(spec, ARCHES)
        assert not source.skeleton
        assert_emulated(spec, source)


def _r(shape, dtype="float32"):
    return f"torch.randn{tuple(shape)!r}.to(torch.{dtype})"


SNIPPETS = {
    "activations_a": (ACTIVATIONS_A, f"[{_r((7, 33, 65))}]"),
    "activations_b": (ACTIVATIONS_B, f"[{_r((7, 33, 65))}]"),
    "math": (MATH, f"[{_r((5, 77))}]"),
    "nchw_channel_params": (BROADCAST_NCHW.format(c=6, dtype="float32"), f"[{_r((3, 6, 9, 11))}]"),
    "row_and_column_vectors": (ROW_COL, f"[{_r((4, 10, 96))}, {_r((96,))}, {_r((4, 10, 1))}]"),
    "outer_broadcast": (OUTER, f"[{_r((33, 1))}, {_r((1, 47))}]"),
    "scalars": (SCALARS, f"[{_r((9, 150))}]"),
    "masked_fill_ninf_broadcast_mask": (
        MASKED_FILL, f"[{_r((2, 3, 17, 17))}, torch.ones(17, 17, dtype=torch.bool).triu(1)[None, None]]"),
    "where": (WHERE, f"[{_r((7, 3, 64))}, {_r((7, 3, 64))}]"),
    "clamp_tensor_bounds": (CLAMP_TENSOR, f"[{_r((6, 40))}, {_r((40,))}, {_r((6, 1))}]"),
    "compare_bool_output": (COMPARE, f"[{_r((12, 13))}, {_r((12, 13))}]"),
    "int_ids_mask": (INT_MASK, f"[torch.randint(0, 5, (3, 21)), {_r((3, 21))}]"),
    "tril_triu": (TRIL, f"[{_r((3, 19, 23))}]"),
    # index_put with boolean masks (lowered to where): one kernel for the three writes
    "setitem_mask": (SETITEM_MASK, f"[{_r((3, 19, 23))}, torch.rand(19, 23) > 0.7, torch.rand(3) > 0.5]"),
    "setitem_mask_bf16": (SETITEM_MASK, f"[{_r((4, 8, 40), 'bfloat16')}, torch.rand(8, 40) > 0.7, "
                                        "torch.rand(4) > 0.5]"),
    "unaligned_1000003": (CHAIN_1D, f"[{_r((1000003,))}, {_r((1000003,))}]"),
    "fp16_inputs": (CHAIN_1D, f"[{_r((37, 129), 'float16')}, {_r((37, 129), 'float16')}]"),
    "bf16_inputs": (CHAIN_1D, f"[{_r((37, 129), 'bfloat16')}, {_r((37, 129), 'bfloat16')}]"),
    "fp16_broadcast": (ROW_COL, f"[{_r((4, 10, 96), 'float16')}, {_r((96,), 'float16')}, "
                                f"{_r((4, 10, 1), 'float16')}]"),
    "half_module": (HALF_MODULE.format(n=200, cast="half"), f"[{_r((3, 5, 200), 'float16')}]"),
    "bf16_module": (HALF_MODULE.format(n=200, cast="bfloat16"), f"[{_r((3, 5, 200), 'bfloat16')}]"),
    "large_4d_fp16": (BROADCAST_NCHW.format(c=64, dtype="float16"), f"[{_r((8, 64, 56, 56), 'float16')}]"),
    # broadcast over the leading dim only, its trailing part a whole number of blocks: whole-tile loads
    "leading_broadcast": (LEADING_BROADCAST, f"[{_r((4, 8, 64))}, {_r((1, 8, 64))}]"),
    # R9: rotate_half built from the x tile in registers (head dim 64), gathered (head dim 80: halves of 40), and
    # gathered from an x broadcast over the iteration space
    "rotary_shuffle": (ROTARY, f"[{_r((2, 4, 40, 64))}, {_r((1, 1, 40, 64))}, {_r((1, 1, 40, 64))}]"),
    "rotary_gather_fp16": (ROTARY, f"[{_r((2, 3, 17, 80), 'float16')}, {_r((1, 1, 17, 80), 'float16')}, "
                                   f"{_r((1, 1, 17, 80), 'float16')}]"),
    "rotary_broadcast_x_bf16": (ROTARY, f"[{_r((1, 1, 9, 32), 'bfloat16')}, {_r((2, 3, 9, 32), 'bfloat16')}, "
                                        f"{_r((2, 3, 9, 32), 'bfloat16')}]"),
}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippet_compiles_and_computes(name):
    """Compiles for both arches, and the generated code gives the reference's values on the CPU emulator."""
    body, inputs = SNIPPETS[name]
    decomposition = decompose_source(body, inputs)
    assert not decomposition.gaps, decomposition.gaps
    specs = elementwise_specs(decomposition)
    assert specs, f"{name}: no elementwise spec"
    for spec in specs:
        source = compile_spec(spec, ARCHES)
        assert not source.skeleton
        assert_emulated(spec, source)


@pytest.mark.parametrize("name,way", [("rotary_shuffle", "ct.extract("), ("rotary_gather_fp16", "rot_0_offs"),
                                      ("rotary_broadcast_x_bf16", "rot_0_offs")])
def test_rotate_half_is_read_rotated_in_one_kernel(name, way):
    """R9 makes x * cos + rotate_half(x) * sin one kernel that reads x rotated (its halves and their concatenation
    never pass through memory): a register shuffle where the halves are powers of two and x is read whole, a gather
    at rotated offsets elsewhere."""
    from tilestudio.core.kernels import generate_kernel

    body, inputs = SNIPPETS[name]
    decomposition = decompose_source(body, inputs)
    assert [k.fusion_rules for k in decomposition.kernels] == [["R1", "R3", "R9"]]
    assert way in generate_kernel(decomposition.kernels[0]).code


def test_leading_broadcast_operand_loads_whole_tiles():
    """(1, 8, 64) over (4, 8, 64): 512-element blocks, the operand one tile, read whole (not gathered)."""
    from tilestudio.core.kernels import generate_kernel

    spec = elementwise_specs(decompose_source(*SNIPPETS["leading_broadcast"]))[0]
    code = generate_kernel(spec).code
    assert "ct.load(in_p, index=(pid % 1,)" in code and "ct.gather" not in code


def test_multi_output_and_smaller_output():
    from tilestudio.core.kernels import generate_kernel

    spec = multi_output_spec()
    source = generate_kernel(spec)
    assert "ct.scatter(out_0" in source.code  # s has shape (m,): written once per column
    assert source.code.count("ct.store(") == 2
    compile_spec(spec, ARCHES)
    assert_emulated(spec, source)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_scalar_and_zero_dim_inputs(dtype):
    spec = scalar_input_spec(dtype=dtype)
    source = compile_spec(spec, ARCHES)
    assert "float(alpha)" in source.code
    assert_emulated(spec, source)


@pytest.mark.parametrize("last,small_numel", [(96, None), (7, 0), (7, None)])
def test_expanded_permuted_inputs_and_dtypes_trace(last, small_numel, monkeypatch):
    """Strided and expanded views: read in place by the strided kernel where the last dim is long enough (96) or
    the call is small (7 over 280 elements, MEMORY_TUNING["elementwise_strided_small_numel"]), the views passed as
    they are (rank-aligned); else (7 with that rule off) flattened by contiguous copies for the flat kernel.
    Contiguous inputs always take the flat kernel. Checked on meta tensors."""
    import torch

    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source, intercept_launches
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    if small_numel is not None:
        monkeypatch.setitem(MEMORY_TUNING, "elementwise_strided_small_numel", small_numel)
    spec = elementwise_specs(decompose_source(ROW_COL, f"[{_r((4, 10, last), 'bfloat16')}, "
                                                       f"{_r((last,), 'bfloat16')}, {_r((4, 10, 1), 'bfloat16')}]"))[0]
    source = generate_kernel(spec)
    ns = load_source(source)
    x = torch.empty(last, 10, 4, dtype=torch.bfloat16, device="meta").permute(2, 1, 0)
    row = torch.empty(1, dtype=torch.bfloat16, device="meta").expand(last)
    col = torch.empty(4, 10, 1, dtype=torch.bfloat16, device="meta")
    records = []
    with intercept_launches(records):
        out = ns[source.launch_name](x, row, col)
        ns[source.launch_name](x.contiguous(), row.contiguous(), col)
    assert out.shape == (4, 10, last) and out.dtype == torch.bfloat16
    strided, flat = records
    assert flat.kernel_name.endswith("_kernel") and not flat.kernel_name.endswith("_strided_kernel")
    flat_args = [a for a in flat.args if isinstance(a, torch.Tensor)]
    assert all(a.dim() == 1 and a.is_contiguous() for a in flat_args)
    args = [a for a in strided.args if isinstance(a, torch.Tensor)]
    if small_numel == 0:  # no strided kernel: copies, as contiguous inputs
        assert strided.kernel_name == flat.kernel_name and all(a.is_contiguous() for a in args)
        return
    assert strided.kernel_name.endswith("_strided_kernel") and strided.grid == (4,)  # (16, DP) tiles of 10 rows
    assert [tuple(a.shape) for a in args] == [(4, 10, last), (1, 1, last), (4, 10, 1), (4, 10, last)]
    assert args[0].stride() == x.stride() and args[1].stride()[-1] == 0  # read in place: no copy


@pytest.mark.parametrize("name", ["rotary", "row_col", "where"])
def test_strided_kernel_compiles_and_emulates(name):
    """The strided kernel of a rotary (R9: the halves swapped in registers), a broadcast and a where/bool chain,
    compiled for sm_90 from a trace with non-contiguous inputs and run on the emulator with such inputs."""
    body, inputs = {"rotary": (ROTARY, f"[{_r((2, 3, 8, 64), 'bfloat16')}, {_r((8, 64), 'bfloat16')}, "
                                        f"{_r((8, 64), 'bfloat16')}]"),
                    "row_col": (ROW_COL, f"[{_r((3, 5, 40))}, {_r((40,))}, {_r((3, 5, 1))}]"),
                    "where": (WHERE, f"[{_r((6, 33, 48), 'float16')}, {_r((6, 33, 48), 'float16')}]")}[name]
    for spec in elementwise_specs(decompose_source(body, inputs)):
        source = compile_spec(spec, ("sm_90",))
        assert f"{spec.id}_strided_kernel" in source.kernel_names, source.notes
        assert_emulated(spec, source)


def _strided_body(code: str, kid: str) -> str:
    return code.split(f"def {kid}_strided_kernel")[1].split("def launch_")[0]


@pytest.mark.parametrize("seq", [8, 100])
def test_strided_kernel_bounds_checks(seq, monkeypatch):
    """The strided kernel's blocks whose tile lies inside the iteration space load and store without bounds checks:
    all of them when the row blocks divide S (8 rows), all but the last row block of each head behind a branch
    (100 rows in two blocks of 64); both compile for sm_90 and compute the right values on the emulator."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "elementwise_strided_occupancy", 2)
    (spec,) = elementwise_specs(decompose_source(ROTARY, f"[{_r((2, 3, seq, 64), 'bfloat16')}, "
                                                         f"{_r((seq, 64), 'bfloat16')}, {_r((seq, 64), 'bfloat16')}]"))
    source = compile_spec(spec, ("sm_90",))
    body = _strided_body(source.code, spec.id)
    assert f"@ct.kernel(occupancy=2)\ndef {spec.id}_strided_kernel" in source.code
    if seq == 8:
        assert body.count("check_bounds=False") == 4 and "PaddingMode" not in body  # q, cos, sin, the output
    else:
        assert "if sb < 1:" in body and body.count("check_bounds=False") == 4 and body.count("PaddingMode.ZERO") == 3
    assert_emulated(spec, source)


def test_strided_kernel_keeps_bounds_checks_on_a_padded_last_dim(monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    (padded,) = elementwise_specs(decompose_source(ROW_COL, f"[{_r((3, 5, 40))}, {_r((40,))}, {_r((3, 5, 1))}]"))
    body = _strided_body(generate_kernel(padded).code, padded.id)
    assert "check_bounds=False" not in body and "PaddingMode.ZERO" in body
    monkeypatch.setitem(MEMORY_TUNING, "elementwise_strided_unchecked", False)
    (spec,) = elementwise_specs(decompose_source(ROTARY, f"[{_r((2, 3, 8, 64), 'bfloat16')}, "
                                                         f"{_r((8, 64), 'bfloat16')}, {_r((8, 64), 'bfloat16')}]"))
    assert "check_bounds=False" not in _strided_body(generate_kernel(spec).code, spec.id)


def test_block_sizes_and_collapse():
    from tilestudio.core.kernels.elementwise import Operand, block_size, collapse, index_expr

    assert block_size(3, 2) == 32
    assert block_size(300, 2) == 512  # the whole tensor in one block
    assert block_size(1000003, 3) == 1024
    assert block_size(3_000_000, 3) == 2048
    assert block_size(1 << 26, 3) == 4096
    assert block_size(1 << 26, 9) == 2048
    assert block_size(1 << 26, 2, itemsize=2) == 4096  # capped at elementwise_block_elems (H200: 4096 > 8192)
    assert block_size(1 << 26, 2, itemsize=8) == 4096
    shape = [8, 64, 56, 56]
    out = Operand(_spec_t("o", shape), shape)
    chan = Operand(_spec_t("c", [64, 1, 1]), shape)
    cshape = collapse(shape, [out, chan])
    assert cshape == [8, 64, 3136]
    assert chan.pattern == [False, True, False] and chan.kind() == "bcast" and out.kind() == "full"
    assert index_expr(chan.pattern, cshape) == "((offs // 3136) % 64)"
    row = Operand(_spec_t("r", [4, 1]), [4, 7])
    colv = Operand(_spec_t("c", [7]), [4, 7])
    cs = collapse([4, 7], [row, colv])
    assert index_expr(row.pattern, cs) == "(offs // 7)" and index_expr(colv.pattern, cs) == "(offs % 7)"


def _spec_t(name, shape):
    from tilestudio.core.specs import TensorSpec

    return TensorSpec(name=name, shape=shape, dtype="float32")


def test_non_elementwise_spec_is_unsupported():
    from tilestudio.core.kernels.base import Unsupported
    from tilestudio.core.kernels.elementwise import generate

    spec = multi_output_spec()
    spec.ops[0].category = "reduction"
    with pytest.raises(Unsupported):
        generate(spec)


@pytest.mark.parametrize("shape", [(1 << 16,), (16, 300, 301), (1000,)])
def test_unchecked_full_tile_loads(shape):
    """MEMORY_TUNING["elementwise_unchecked_full"] (on): full operands of a block whose tile lies inside the tensors
    load with check_bounds=False (the emulator raises if such a tile leaves its array): every block when the blocks
    tile the tensors exactly, else every block but the last, which keeps its bounds checks; one block: checked.
    All compile and compute the reference's values."""
    decomposition = decompose_source(ACTIVATIONS_A, f"[{_r(shape, 'bfloat16')}]")
    (spec,) = elementwise_specs(decomposition)
    source = compile_spec(spec, ("sm_90",))
    code = source.code.split("_strided_kernel(")[0]  # the flat kernel
    if shape == (1 << 16,):  # 128 blocks of 512
        assert "check_bounds=False" in code and "padding_mode=ct.PaddingMode.ZERO" not in code
    elif shape == (16, 300, 301):  # 1444800 elements, 706 blocks of 2048, the last partial
        assert "    if pid < 705:\n" in code and code.count("check_bounds=False") == 1
        assert code.count("padding_mode=ct.PaddingMode.ZERO") == 1
    else:  # one block
        assert "check_bounds=False" not in code
    assert_emulated(spec, source)


def test_checked_loads_when_switched_off(monkeypatch):
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "elementwise_unchecked_full", False)
    (spec,) = elementwise_specs(decompose_source(ACTIVATIONS_A, f"[{_r((1 << 16,), 'bfloat16')}]"))
    from tilestudio.core.kernels import generate_kernel

    code = generate_kernel(spec).code
    assert "check_bounds" not in code and "if pid" not in code


@pytest.mark.parametrize("expr", ["torch.logaddexp(x, y)", "torch.logaddexp2(x, y)", "torch.heaviside(x, y)"])
def test_logaddexp_and_heaviside_match_pytorch_on_special_values(expr):
    """logaddexp / logaddexp2 over every pair of {-inf, -30, -1, 0, 2.5, 40, inf, nan} (equal infinities, a gap
    whose exp underflows, NaN) and heaviside at 0, either sign and NaN: PyTorch's float32 values, NaN where it
    gives NaN."""
    import math

    import torch

    from .cutile_emulator import emulation, load_emulated

    vals = torch.tensor([-math.inf, -30.0, -1.0, 0.0, 2.5, 40.0, math.inf, math.nan])
    x, y = vals.repeat_interleave(8).view(8, 8), vals.repeat(8).view(8, 8)
    spec = elementwise_specs(decompose_source(f"class Model(nn.Module):\n    def forward(self, x, y):\n"
                                              f"        return {expr}\n", "[torch.randn(8, 8), torch.randn(8, 8)]"))[0]
    source = compile_spec(spec, ("sm_90",))
    with emulation():
        out = load_emulated(source)[source.launch_name](x, y)
    want = eval(expr)
    torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6, equal_nan=True)
