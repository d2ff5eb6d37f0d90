"""expr.py: every elementwise op translates, compiles (AOT, sm_90) and computes the right values.

Values are checked on the CPU by running the emitted lines on the cuTile CPU emulator (cutile_emulator.py,
float32 arithmetic like the kernel), compared with the ATen op in float64. The compile tests put the
same lines into a real @ct.kernel and compile it ahead of time.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch

from tilestudio.core.kernels.base import Unsupported
from tilestudio.core.kernels.expr import (COL_INDEX, ROW_INDEX, broadcast_load_lines, emit_elementwise,
                                          float_literal)
from tilestudio.core.specs import OpRecord

from .cutile_emulator import emulation

X, Y, Z, M = ({"ref": "x"}, {"ref": "y"}, {"ref": "z"}, {"ref": "m"})
INF = {"float": "inf"}
NEG_INF = {"float": "-inf"}

# (case id, target, args, kwargs, output dtype, input domain for x/y/z: "any" | "pos" | "unit" | "ge1" | "small")
CASES = [
    ("relu", "aten.relu.default", [X], {}, "float32", "any"),
    ("relu_", "aten.relu_.default", [X], {}, "float32", "any"),
    ("relu6", "aten.relu6.default", [X], {}, "float32", "any"),
    ("leaky_relu", "aten.leaky_relu.default", [X], {}, "float32", "any"),
    ("leaky_relu_02", "aten.leaky_relu.default", [X, 0.2], {}, "float32", "any"),
    ("elu", "aten.elu.default", [X, 1.5, 1.2, 0.7], {}, "float32", "any"),
    ("selu", "aten.selu.default", [X], {}, "float32", "any"),
    ("celu", "aten.celu.default", [X, 0.5], {}, "float32", "any"),
    ("gelu", "aten.gelu.default", [X], {}, "float32", "wide"),
    ("gelu_tanh", "aten.gelu.default", [X], {"approximate": "tanh"}, "float32", "wide"),
    ("silu", "aten.silu.default", [X], {}, "float32", "wide"),
    ("mish", "aten.mish.default", [X], {}, "float32", "wide"),
    ("softplus", "aten.softplus.default", [X], {}, "float32", "wide"),
    ("softplus_beta", "aten.softplus.default", [X, 2.0, 5.0], {}, "float32", "wide"),
    ("hardtanh", "aten.hardtanh.default", [X], {}, "float32", "any"),
    ("hardtanh_06", "aten.hardtanh.default", [X, 0.0, 6.0], {}, "float32", "wide"),
    ("hardswish", "aten.hardswish.default", [X], {}, "float32", "wide"),
    ("hardsigmoid", "aten.hardsigmoid.default", [X], {}, "float32", "wide"),
    ("sigmoid", "aten.sigmoid.default", [X], {}, "float32", "wide"),
    ("tanh", "aten.tanh.default", [X], {}, "float32", "wide"),
    ("log_sigmoid", "aten.log_sigmoid.default", [X], {}, "float32", "wide"),
    ("softshrink", "aten.softshrink.default", [X, 0.3], {}, "float32", "any"),
    ("hardshrink", "aten.hardshrink.default", [X], {}, "float32", "any"),
    ("threshold", "aten.threshold.default", [X, 0.1, -2.0], {}, "float32", "any"),
    ("rrelu", "aten.rrelu.default", [X], {}, "float32", "any"),
    ("abs", "aten.abs.default", [X], {}, "float32", "any"),
    ("neg", "aten.neg.default", [X], {}, "float32", "any"),
    ("exp", "aten.exp.default", [X], {}, "float32", "any"),
    ("exp2", "aten.exp2.default", [X], {}, "float32", "any"),
    ("expm1", "aten.expm1.default", [X], {}, "float32", "any"),
    ("log", "aten.log.default", [X], {}, "float32", "pos"),
    ("log2", "aten.log2.default", [X], {}, "float32", "pos"),
    ("log10", "aten.log10.default", [X], {}, "float32", "pos"),
    ("log1p", "aten.log1p.default", [X], {}, "float32", "pos"),
    ("sqrt", "aten.sqrt.default", [X], {}, "float32", "pos"),
    ("rsqrt", "aten.rsqrt.default", [X], {}, "float32", "pos"),
    ("reciprocal", "aten.reciprocal.default", [X], {}, "float32", "pos"),
    ("sin", "aten.sin.default", [X], {}, "float32", "any"),
    ("cos", "aten.cos.default", [X], {}, "float32", "any"),
    ("tan", "aten.tan.default", [X], {}, "float32", "unit"),
    ("asin", "aten.asin.default", [X], {}, "float32", "unit"),
    ("acos", "aten.acos.default", [X], {}, "float32", "unit"),
    ("atan", "aten.atan.default", [X], {}, "float32", "any"),
    ("sinh", "aten.sinh.default", [X], {}, "float32", "any"),
    ("cosh", "aten.cosh.default", [X], {}, "float32", "any"),
    ("asinh", "aten.asinh.default", [X], {}, "float32", "wide"),
    ("acosh", "aten.acosh.default", [X], {}, "float32", "ge1"),
    ("atanh", "aten.atanh.default", [X], {}, "float32", "unit"),
    ("erf", "aten.erf.default", [X], {}, "float32", "wide"),
    ("erfc", "aten.erfc.default", [X], {}, "float32", "wide"),
    ("erfinv", "aten.erfinv.default", [X], {}, "float32", "open_unit"),
    ("sign", "aten.sign.default", [X], {}, "float32", "any"),
    ("sgn", "aten.sgn.default", [X], {}, "float32", "any"),
    ("floor", "aten.floor.default", [X], {}, "float32", "wide"),
    ("ceil", "aten.ceil.default", [X], {}, "float32", "wide"),
    ("round", "aten.round.default", [X], {}, "float32", "halves"),
    ("round_dec", "aten.round.decimals", [X], {"decimals": 1}, "float32", "wide"),
    ("trunc", "aten.trunc.default", [X], {}, "float32", "wide"),
    ("frac", "aten.frac.default", [X], {}, "float32", "wide"),
    ("square", "aten.square.default", [X], {}, "float32", "any"),
    ("positive", "aten.positive.default", [X], {}, "float32", "any"),
    ("logit", "aten.logit.default", [X, 0.01], {}, "float32", "prob"),
    ("signbit", "aten.signbit.default", [X], {}, "bool", "any"),
    ("isnan", "aten.isnan.default", [X], {}, "bool", "special"),
    ("isinf", "aten.isinf.default", [X], {}, "bool", "special"),
    ("isfinite", "aten.isfinite.default", [X], {}, "bool", "special"),
    ("nan_to_num", "aten.nan_to_num.default", [X], {}, "float32", "special"),
    ("nan_to_num_args", "aten.nan_to_num.default", [X, 1.0, 100.0, -100.0], {}, "float32", "special"),
    ("clamp", "aten.clamp.default", [X, -0.5, 0.5], {}, "float32", "any"),
    ("clamp_min_only", "aten.clamp.default", [X, 1.0], {}, "float32", "any"),
    ("clamp_max_only", "aten.clamp.default", [X, None, 3.0], {}, "float32", "any"),
    ("clamp_tensor", "aten.clamp.Tensor", [X, Y, Z], {}, "float32", "any"),
    ("clamp_min", "aten.clamp_min.default", [X, 0.2], {}, "float32", "any"),
    ("clamp_max", "aten.clamp_max.default", [X, 0.2], {}, "float32", "any"),
    ("to_f16", "aten._to_copy.default", [X], {"dtype": {"dtype": "float16"}}, "float16", "any"),
    ("to_int", "aten.to.dtype", [X, {"dtype": "int32"}], {}, "int32", "wide"),
    ("to_bool", "aten.to.dtype", [X, {"dtype": "bool"}], {}, "bool", "ints"),
    ("add", "aten.add.Tensor", [X, Y], {}, "float32", "any"),
    ("add_alpha", "aten.add.Tensor", [X, Y], {"alpha": 2.5}, "float32", "any"),
    ("add_scalar", "aten.add.Tensor", [X, 1.5], {}, "float32", "any"),
    ("sub", "aten.sub.Tensor", [X, Y], {"alpha": 0.5}, "float32", "any"),
    ("rsub", "aten.rsub.Scalar", [X, 1.0], {}, "float32", "any"),
    ("mul", "aten.mul.Tensor", [X, Y], {}, "float32", "any"),
    ("mul_scalar", "aten.mul.Tensor", [X, 0.2886751345948129], {}, "float32", "any"),
    ("div", "aten.div.Tensor", [X, Y], {}, "float32", "pos"),
    ("div_trunc", "aten.div.Tensor_mode", [X, Y], {"rounding_mode": "trunc"}, "float32", "wide_y_pos"),
    ("div_floor", "aten.div.Tensor_mode", [X, Y], {"rounding_mode": "floor"}, "float32", "wide_y_pos"),
    ("floor_divide", "aten.floor_divide.default", [X, Y], {}, "float32", "wide_y_pos"),
    ("remainder", "aten.remainder.Tensor", [X, Y], {}, "float32", "wide_y_pos"),
    ("fmod", "aten.fmod.Tensor", [X, Y], {}, "float32", "wide_y_pos"),
    ("pow_2", "aten.pow.Tensor_Scalar", [X, 2], {}, "float32", "any"),
    ("pow_3", "aten.pow.Tensor_Scalar", [X, 3], {}, "float32", "any"),
    ("pow_5", "aten.pow.Tensor_Scalar", [X, 5], {}, "float32", "any"),
    ("pow_m2", "aten.pow.Tensor_Scalar", [X, -2], {}, "float32", "pos"),
    ("pow_half", "aten.pow.Tensor_Scalar", [X, 0.5], {}, "float32", "pos"),
    ("pow_1_7", "aten.pow.Tensor_Scalar", [X, 1.7], {}, "float32", "pos"),
    ("pow_0", "aten.pow.Tensor_Scalar", [X, 0], {}, "float32", "any"),
    ("pow_scalar_base", "aten.pow.Scalar", [3.0, X], {}, "float32", "any"),
    ("pow_tensor", "aten.pow.Tensor_Tensor", [X, Y], {}, "float32", "pos"),
    ("maximum", "aten.maximum.default", [X, Y], {}, "float32", "any"),
    ("minimum", "aten.minimum.default", [X, Y], {}, "float32", "any"),
    ("fmax", "aten.fmax.default", [X, Y], {}, "float32", "any"),
    ("fmin", "aten.fmin.default", [X, Y], {}, "float32", "any"),
    ("atan2", "aten.atan2.default", [X, Y], {}, "float32", "any"),
    ("hypot", "aten.hypot.default", [X, Y], {}, "float32", "any"),
    ("copysign", "aten.copysign.Tensor", [X, Y], {}, "float32", "any"),
    ("xlogy", "aten.xlogy.Tensor", [X, Y], {}, "float32", "pos"),
    ("eq", "aten.eq.Tensor", [X, Y], {}, "bool", "ints"),
    ("eq_scalar", "aten.eq.Scalar", [X, 0], {}, "bool", "ints"),
    ("ne", "aten.ne.Tensor", [X, Y], {}, "bool", "ints"),
    ("lt", "aten.lt.Tensor", [X, Y], {}, "bool", "any"),
    ("le", "aten.le.Scalar", [X, 0.0], {}, "bool", "any"),
    ("gt", "aten.gt.Tensor", [X, Y], {}, "bool", "any"),
    ("ge", "aten.ge.Tensor", [X, Y], {}, "bool", "any"),
    ("logical_and", "aten.logical_and.default", [X, Y], {}, "bool", "ints"),
    ("logical_or", "aten.logical_or.default", [X, Y], {}, "bool", "ints"),
    ("logical_xor", "aten.logical_xor.default", [X, Y], {}, "bool", "ints"),
    ("logical_not", "aten.logical_not.default", [X], {}, "bool", "ints"),
    ("where", "aten.where.self", [M, X, Y], {}, "float32", "any"),
    ("where_scalar", "aten.where.ScalarOther", [M, X, 0.0], {}, "float32", "any"),
    ("masked_fill_ninf", "aten.masked_fill.Scalar", [X, M, NEG_INF], {}, "float32", "any"),
    ("masked_fill", "aten.masked_fill.Scalar", [X, M, -3.0], {}, "float32", "any"),
    ("addcmul", "aten.addcmul.default", [X, Y, Z], {"value": 0.5}, "float32", "any"),
    ("addcdiv", "aten.addcdiv.default", [X, Y, Z], {"value": 2.0}, "float32", "pos"),
    ("lerp", "aten.lerp.Scalar", [X, Y, 0.3], {}, "float32", "any"),
    ("lerp_tensor", "aten.lerp.Tensor", [X, Y, Z], {}, "float32", "any"),
    ("fill", "aten.fill.Scalar", [X, 2.5], {}, "float32", "any"),
    ("zero", "aten.zero.default", [X], {}, "float32", "any"),
    ("tril", "aten.tril.default", [X, 1], {}, "float32", "any"),
    ("triu", "aten.triu.default", [X], {}, "float32", "any"),
]
CASE_IDS = [c[0] for c in CASES]
SHAPE = (16, 32)  # the 2D test tile (tril/triu use its rows and columns)


def make_record(case) -> OpRecord:
    cid, target, args, kwargs, out_dtype, _ = case
    op = target.split(".")[1]
    inputs = [a["ref"] for a in args if isinstance(a, dict) and "ref" in a]
    return OpRecord(node=f"n_{cid}", op=op, target=target, category="elementwise_unary", inputs=inputs,
                    args=args, kwargs=kwargs, output_dtype=out_dtype, output=list(SHAPE))


def make_inputs(domain: str, seed: int = 0) -> dict[str, np.ndarray]:
    g = np.random.default_rng(seed)
    n = SHAPE

    def draw():
        if domain == "pos":
            return g.uniform(0.05, 4.0, n)
        if domain in ("unit", "prob"):
            return g.uniform(-0.95, 0.95, n) if domain == "unit" else g.uniform(0.0, 1.0, n)
        if domain == "open_unit":
            return np.concatenate([g.uniform(-0.999999, 0.999999, n[0] * n[1] // 2),
                                   g.uniform(-0.5, 0.5, n[0] * n[1] // 2)]).reshape(n)
        if domain == "ge1":
            return g.uniform(1.0, 10.0, n)
        if domain == "wide":
            return g.uniform(-12.0, 12.0, n)
        if domain == "halves":
            return np.round(g.uniform(-10, 10, n) * 2) / 2 + g.choice([0.0, 0.0, 0.3, -0.3], n)
        if domain == "ints":
            return g.integers(-2, 3, n).astype(np.float64)
        if domain == "special":
            v = g.normal(size=n)
            v.flat[::7] = np.inf
            v.flat[::11] = -np.inf
            v.flat[::13] = np.nan
            return v
        return g.normal(size=n) * 2.0

    vals = {"x": draw(), "y": draw(), "z": draw(), "m": g.random(n) > 0.5}
    if domain == "wide_y_pos":
        vals["x"] = g.uniform(-12.0, 12.0, n)
        vals["y"] = g.uniform(0.3, 3.0, n) * g.choice([-1.0, 1.0], n)
    for k in ("x", "y", "z"):
        vals[k] = vals[k].astype(np.float32)
    return vals


def _torch_reference(case, vals):
    _, target, args, kwargs, out_dtype, _ = case
    _, name, overload = target.split(".")
    fn = getattr(getattr(torch.ops.aten, name), overload)

    def dec(a):
        if isinstance(a, dict) and "ref" in a:
            v = vals[a["ref"]]
            if v.dtype == bool:
                return torch.from_numpy(v)
            # nan_to_num's defaults depend on the dtype: keep float32 there
            return torch.from_numpy(v if target.startswith("aten.nan_to_num") else v.astype(np.float64))
        if isinstance(a, dict) and "float" in a:
            return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[a["float"]]
        if isinstance(a, dict) and "dtype" in a:
            return getattr(torch, a["dtype"])
        return a

    out = fn(*[dec(a) for a in args], **{k: dec(v) for k, v in kwargs.items()})
    if isinstance(out, tuple):
        out = out[0]
    return out


def run_emulated(lines: list[str], result: str, vals: dict[str, np.ndarray]) -> np.ndarray:
    rows, cols = torch.meshgrid(torch.arange(SHAPE[0], dtype=torch.int32), torch.arange(SHAPE[1], dtype=torch.int32),
                                indexing="ij")
    tiles = {"tx": vals["x"], "ty": vals["y"], "tz": vals["z"], "tm": vals["m"].astype(np.float32)}
    with emulation() as ct:
        ns = {"ct": ct, "math": math, "t_row": rows, "t_col": cols}
        ns.update({k: torch.from_numpy(v) for k, v in tiles.items()})
        exec("\n".join(line.strip() for line in lines), ns)  # noqa: S102 - our own emitted test code
    out = ns[result]
    return out.numpy() if isinstance(out, torch.Tensor) else np.asarray(out)


def emit_case(case):
    rec = make_record(case)
    lines: list[str] = []
    env = {"x": "tx", ROW_INDEX: "t_row", COL_INDEX: "t_col"}

    def load_side(value):
        return {"y": "ty", "z": "tz", "m": "tm"}[value]

    env = emit_elementwise([rec], env, load_side, lines)
    return rec, lines, env[rec.node]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_values_match_torch(case):
    rec, lines, result = emit_case(case)
    vals = make_inputs(case[5])
    got = run_emulated(lines, result, vals)
    want = _torch_reference(case, vals)
    if rec.output_dtype == "bool":
        assert got.dtype == bool, f"{case[0]}: expected a bool tile"
        np.testing.assert_array_equal(got, want.numpy())
        return
    want = want.double().numpy()
    if rec.output_dtype in ("int32", "int64"):
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-5 if rec.output_dtype == "float32" else 1e-3,
                               atol=2e-5, equal_nan=True, err_msg="\n".join(lines))


KERNEL_TEMPLATE = '''
import math
import cuda.tile as ct


@ct.kernel
def probe_kernel(x, y, z, m, out, BR: ct.Constant[int], BC: ct.Constant[int]):
    pid = ct.bid(0)
    tx = ct.load(x, index=(pid, 0), shape=(BR, BC), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    t_row = ct.broadcast_to(ct.reshape(pid * BR + ct.arange(BR, dtype=ct.int32), (BR, 1)), (BR, BC))
    t_col = ct.broadcast_to(ct.reshape(ct.arange(BC, dtype=ct.int32), (1, BC)), (BR, BC))
{body}
    ct.store(out, index=(pid, 0), tile={result}.astype(out.dtype))
'''


def compile_source(source: str, out_dtype, extra_arrays=()):
    import cuda.tile as ct
    from cuda.tile.compilation import (ArrayConstraint, CallingConvention, ConstantConstraint, KernelSignature,
                                       export_kernel)

    from tilestudio.core.kernels.aot import load_source
    from tilestudio.core.kernels.base import KernelSource

    ns = load_source(KernelSource(spec_id="probe", family="test", code=source, launch_name="none"))
    kernel = ns["probe_kernel"]

    def arr(dt, nd=2):
        return ArrayConstraint(dt, nd, index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=(),
                               may_alias_internally=False)

    sig = [arr(ct.float16), arr(ct.float32, 1), arr(ct.bfloat16, 2), arr(ct.bool_, 2), arr(out_dtype)]
    sig += [ConstantConstraint(SHAPE[0]), ConstantConstraint(SHAPE[1])]
    buf = io.BytesIO()
    export_kernel(kernel, [KernelSignature(sig, calling_convention=CallingConvention.cutile_python_v2())],
                  buf, gpu_code="sm_90", output_format="cubin")
    return len(buf.getvalue())


CHUNK = 12  # ops per compiled probe kernel (one compile per chunk keeps the test fast)
CHUNKS = [CASES[i:i + CHUNK] for i in range(0, len(CASES), CHUNK)]


@pytest.mark.parametrize("chunk", CHUNKS, ids=[f"{c[0][0]}..{c[-1][0]}" for c in CHUNKS])
def test_compiles(chunk):
    """Each op's emitted lines inside a real kernel (side inputs through broadcast_load_lines) compile."""
    import cuda.tile as ct

    lines: list[str] = []
    env = {"x": "tx", ROW_INDEX: "t_row", COL_INDEX: "t_col"}
    out_shape, tile = list(SHAPE), [("pid", "BR"), ("0", "BC")]

    def load_side(value):
        # y is a row vector (broadcast over rows), z a full tile, m a bool mask loaded as float32
        if value == "y":
            return broadcast_load_lines("ty", "y", [SHAPE[1]], out_shape, tile, lines)
        return broadcast_load_lines(f"t{value}", value, list(SHAPE), out_shape, tile, lines)

    results = []
    for case in chunk:
        rec = make_record(case)
        env = emit_elementwise([rec], env, load_side, lines)
        results.append(f"{env[rec.node]}.astype(ct.float32)")
    lines.append("    acc = " + " + ".join(results))
    source = KERNEL_TEMPLATE.format(body="\n".join(lines), result="acc")
    assert compile_source(source, ct.float32) > 0, [c[0] for c in chunk]


def test_compiles_bool_and_low_precision_results():
    """Bool tiles and casts store into bool/float16/int32 outputs."""
    import cuda.tile as ct

    for case_id, out_dtype in (("gt", ct.bool_), ("to_f16", ct.float16), ("to_int", ct.int32)):
        rec = make_record(next(c for c in CASES if c[0] == case_id))
        lines: list[str] = []
        env = emit_elementwise([rec], {"x": "tx"}, lambda v: "tx", lines)
        source = KERNEL_TEMPLATE.format(body="\n".join(lines), result=env[rec.node])
        assert compile_source(source, out_dtype) > 0, case_id


def test_chain_and_expression_text():
    recs = [
        OpRecord(node="mul", op="mul", target="aten.mul.Tensor", category="elementwise_binary",
                 args=[{"ref": "acc"}, 2.0], output_dtype="float32"),
        OpRecord(node="add", op="add", target="aten.add.Tensor", category="elementwise_binary",
                 args=[{"ref": "mul"}, {"ref": "bias"}], output_dtype="float32"),
        OpRecord(node="relu", op="relu", target="aten.relu.default", category="elementwise_unary",
                 args=[{"ref": "add"}], output_dtype="float32"),
        OpRecord(node="gt", op="gt", target="aten.gt.Scalar", category="elementwise_binary",
                 args=[{"ref": "relu"}, 0.5], output_dtype="bool"),
        OpRecord(node="mf", op="masked_fill", target="aten.masked_fill.Scalar", category="elementwise_binary",
                 args=[{"ref": "relu"}, {"ref": "gt"}, {"float": "-inf"}], output_dtype="float32"),
    ]
    lines: list[str] = []
    loaded = []

    def load_side(v):
        loaded.append(v)
        lines.append(f"    side_{v} = LOAD({v})")
        return f"side_{v}"

    env = emit_elementwise(recs, {"acc": "acc"}, load_side, lines)
    assert loaded == ["bias"]
    assert lines == [
        "    ev_mul = acc * 2.0",
        "    side_bias = LOAD(bias)",
        "    ev_add = ev_mul + side_bias",
        "    ev_relu = ct.maximum(ev_add, 0.0)",
        "    eb_gt = ev_relu > 0.5",
        "    ev_mf = ct.where(eb_gt, -math.inf, ev_relu)",
    ]
    assert env["mf"] == "ev_mf" and env["gt"] == "eb_gt"


def test_float_literals():
    assert float_literal(2) == "2.0"
    assert float_literal(-0.25) == "(-0.25)"
    assert float_literal(math.inf) == "math.inf"
    assert float_literal(-math.inf) == "-math.inf"
    assert float_literal(math.nan) == "math.nan"


def test_unsupported_ops_raise():
    def rec(op, target, args, **kw):
        return OpRecord(node="n", op=op, target=target, category="elementwise_unary", args=args, **kw)

    with pytest.raises(Unsupported, match="aten.special_zeta"):
        emit_elementwise([rec("special_zeta", "aten.special_zeta.default", [X, Y])], {"x": "tx"}, lambda v: v, [])
    with pytest.raises(Unsupported, match="aten.tril"):
        emit_elementwise([rec("tril", "aten.tril.default", [X])], {"x": "tx"}, lambda v: v, [])
    with pytest.raises(Unsupported, match="rrelu"):
        emit_elementwise([rec("rrelu", "aten.rrelu.default", [X, 0.1, 0.3, True])], {"x": "tx"}, lambda v: v, [])
    with pytest.raises(Unsupported, match="prelu"):
        emit_elementwise([rec("prelu", "aten.prelu.default", [X, Y], output=[2, 3, 4, 5])], {"x": "tx"},
                         lambda v: "w", [], shapes={"y": [3]})


def test_broadcast_load_lines_text():
    lines: list[str] = []
    broadcast_load_lines("b", "bias", [64], [128, 64], [("pm", "BM"), ("pn", "BN")], lines)
    broadcast_load_lines("r", "rowscale", [128, 1], [128, 64], [("pm", "BM"), ("pn", "BN")], lines)
    broadcast_load_lines("c", "chan", [8, 1, 1], [2, 8, 5, 5], [("i", 1), ("j", 8), ("0", 8), ("0", 8)], lines)
    broadcast_load_lines("s", "scalar", [], [4, 4], [("i", 4), ("j", 4)], lines, dtype="ct.bool_")
    pad = "padding_mode=ct.PaddingMode.ZERO"
    assert lines == [
        f"    b = ct.broadcast_to(ct.reshape(ct.load(bias, index=(pn,), shape=(BN,), {pad}).astype(ct.float32), "
        "(1, BN)), (BM, BN))",
        f"    r = ct.broadcast_to(ct.load(rowscale, index=(pm, 0), shape=(BM, 1), {pad}).astype(ct.float32), "
        "(BM, BN))",
        f"    c = ct.broadcast_to(ct.reshape(ct.load(chan, index=(j, 0, 0), shape=(8, 1, 1), {pad})"
        ".astype(ct.float32), (1, 8, 1, 1)), (1, 8, 8, 8))",
        f"    s = ct.broadcast_to(ct.reshape(ct.load(scalar, index=(0,), shape=(1,), {pad}).astype(ct.bool_), "
        "(1, 1)), (4, 4))",
    ]
    with pytest.raises(Unsupported):
        broadcast_load_lines("x", "x", [3, 64], [128, 64], [("pm", "BM"), ("pn", "BN")], [])
