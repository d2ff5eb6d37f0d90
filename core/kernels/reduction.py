"""Reductions (sum, mean, prod, amax/amin, max/min with indices, argmax/argmin, logsumexp, vector norms,
var/std(+mean), all/any, count_nonzero, aminmax, nansum/nanmean) over any dims, with fused prologue/epilogue.

Each reduction is a small algebra of float32 *states* (see `Red`): `elem` turns a tile of inputs into per-lane
states, `combine` merges two states elementwise, `reduce` merges the lanes of a tile axis, `finalize` gives the
results. Cheap states (sum, max, argmax, ...) are accumulated lane-wise over the chunks of a row and reduced once
at the end; var/std and logsumexp reduce each chunk (two-pass within the chunk, stable) and merge row states with
Chan's / the log-sum-exp rule. When the grid would be smaller than the GPU (full reductions, few long rows) the
chunks are split over a second grid axis: stage one writes partial states to a float32 workspace, stage two
merges them in a fixed order (deterministic, no atomics), finalizes and runs the epilogue.
"""

from __future__ import annotations

import math

from ..specs import KernelSpec, TensorSpec
from .base import KernelSource, Unsupported
from .rowwise import (FLOAT_DTYPES, NUM_SM, TUNING, Code, Kernel, Parts, TileCtx, as_float, cdiv, choose_tiles,
                      decode,
                      emit_ops, flit, input_ctx, make_layout, norm_dims, out_dim_map, pow2_at_least, pow2_floor,
                      prod, split_spec, store_line, wrapper_source)
from .reduction_rows import broadcasts_back, generate_rows

BIG_INDEX = 2147483647


# ---- reduction algebras ---------------------------------------------------------------------------------------


class Red:
    lanewise = True  # accumulate per lane across chunks (cheap combine); else reduce each chunk first
    nout = 1

    def __init__(self, acc: str = "ct.float32"):
        self.acc = acc

    def states(self) -> list[tuple[str, str]]:  # (ct dtype, initial value literal)
        return [(self.acc, "0")]

    def elem(self, k: Code, t: str, cols: str, valid: str | None, shape: str) -> list[str]:
        return [masked(t, valid, "0")]

    def combine(self, k: Code, a: list[str], b: list[str]) -> list[str]:
        return [f"{a[0]} + {b[0]}"]

    def reduce(self, k: Code, s: list[str], axis: int, shape: str) -> list[str]:
        return [f"ct.sum({s[0]}, axis={axis}, keepdims=True)"]

    def chunk(self, k: Code, t: str, cols: str, valid: str | None, axis: int, shape: str, count: str) -> list[str]:
        return self.reduce(k, assign(k, "el", self.elem(k, t, cols, valid, shape)), axis, shape)

    def finalize(self, k: Code, s: list[str], count: int) -> list[str]:
        return [s[0]]


def shape_red(shape: str, axis: int) -> str:
    dims = [d.strip() for d in shape.strip("()").split(",") if d.strip()]
    dims[axis] = "1"
    return f"({', '.join(dims)})"


def masked(expr: str, valid: str | None, ident: str) -> str:
    return expr if valid is None else f"ct.where({valid}, {expr}, {ident})"


def assign(k: Code, base: str, exprs: list[str]) -> list[str]:
    names = []
    for e in exprs:
        name = k.fresh(base)
        k(f"{name} = {e}")
        names.append(name)
    return names


class Sum(Red):
    def __init__(self, acc="ct.float32", mean=False, nan=False):
        super().__init__(acc)
        self.mean, self.nan = mean, nan

    def states(self):
        zero = "0.0" if self.acc == "ct.float32" else "0"
        return [(self.acc, zero)] + ([(self.acc, zero)] if self.nan and self.mean else [])

    def elem(self, k, t, cols, valid, shape):
        if not self.nan:
            return [masked(t, valid, "0")]
        ok = f"({t} == {t})" if valid is None else f"({valid} & ({t} == {t}))"
        return [f"ct.where({ok}, {t}, 0.0)"] + ([f"ct.where({ok}, 1.0, 0.0)"] if self.mean else [])

    def combine(self, k, a, b):
        return [f"{x} + {y}" for x, y in zip(a, b)]

    def reduce(self, k, s, axis, shape):
        return [f"ct.sum({x}, axis={axis}, keepdims=True)" for x in s]

    def finalize(self, k, s, count):
        if self.mean and self.nan:
            return [f"{s[0]} / {s[1]}"]
        return [f"{s[0]} * {flit(1.0 / count) if count else 'math.nan'}"] if self.mean else [s[0]]


class Prod(Red):
    def states(self):
        return [(self.acc, "1.0" if self.acc == "ct.float32" else "1")]

    def elem(self, k, t, cols, valid, shape):
        return [masked(t, valid, "1")]

    def combine(self, k, a, b):
        return [f"{a[0]} * {b[0]}"]

    def reduce(self, k, s, axis, shape):
        return [f"ct.prod({s[0]}, axis={axis}, keepdims=True)"]


class Extreme(Red):
    """max (largest) or min; `fn` maps the input first (abs for inf-norms, != 0 for all/any)."""

    def __init__(self, largest: bool, fn: str = "{}", init: float | None = None):
        super().__init__()
        self.largest, self.fn = largest, fn
        self.init = init if init is not None else (-math.inf if largest else math.inf)

    def states(self):
        return [("ct.float32", flit(self.init))]

    def elem(self, k, t, cols, valid, shape):
        return [masked(self.fn.format(t), valid, flit(self.init))]

    def combine(self, k, a, b):
        return [f"ct.{'maximum' if self.largest else 'minimum'}({a[0]}, {b[0]})"]

    def reduce(self, k, s, axis, shape):
        return [f"ct.{'max' if self.largest else 'min'}({s[0]}, axis={axis}, keepdims=True)"]


class MinMax(Red):
    """aminmax: (min, max)."""

    nout = 2

    def states(self):
        return [("ct.float32", "math.inf"), ("ct.float32", "-math.inf")]

    def elem(self, k, t, cols, valid, shape):
        return [masked(t, valid, "math.inf"), masked(t, valid, "-math.inf")]

    def combine(self, k, a, b):
        return [f"ct.minimum({a[0]}, {b[0]})", f"ct.maximum({a[1]}, {b[1]})"]

    def reduce(self, k, s, axis, shape):
        return [f"ct.min({s[0]}, axis={axis}, keepdims=True)", f"ct.max({s[1]}, axis={axis}, keepdims=True)"]

    def finalize(self, k, s, count):
        return [s[0], s[1]]


class ArgExtreme(Red):
    """(value, first index of it): max.dim/min.dim and argmax/argmin. Ties keep the first index, like torch."""

    def __init__(self, largest: bool, values: bool):
        super().__init__()
        self.largest = largest
        self.nout = 2 if values else 1
        self.values = values

    def states(self):
        return [("ct.float32", "-math.inf" if self.largest else "math.inf"), ("ct.int32", "0")]

    def elem(self, k, t, cols, valid, shape):
        return [masked(t, valid, "-math.inf" if self.largest else "math.inf"), f"ct.broadcast_to({cols}, {shape})"]

    def combine(self, k, a, b):
        (better,) = assign(k, "better", [f"{b[0]} {'>' if self.largest else '<'} {a[0]}"])
        return [f"ct.where({better}, {b[0]}, {a[0]})", f"ct.where({better}, {b[1]}, {a[1]})"]

    def reduce(self, k, s, axis, shape):
        (best,) = assign(k, "best", [f"ct.{'max' if self.largest else 'min'}({s[0]}, axis={axis}, keepdims=True)"])
        return [best, f"ct.min(ct.where({s[0]} == {best}, {s[1]}, ct.full({shape}, {BIG_INDEX}, dtype=ct.int32)), "
                      f"axis={axis}, keepdims=True)"]

    def finalize(self, k, s, count):
        return [s[0], s[1]] if self.values else [s[1]]


class LogSumExp(Red):
    lanewise = False

    def states(self):
        return [("ct.float32", "-math.inf"), ("ct.float32", "0.0")]

    def chunk(self, k, t, cols, valid, axis, shape, count):
        tm = masked(t, valid, "-math.inf")
        (tt,) = assign(k, "lt", [tm])
        (m,) = assign(k, "lm", [f"ct.max({tt}, axis={axis}, keepdims=True)"])
        (ms,) = assign(k, "lms", [f"ct.where({m} == -math.inf, 0.0, {m})"])
        return [m, f"ct.sum(ct.exp({tt} - {ms}), axis={axis}, keepdims=True)"]

    def combine(self, k, a, b):
        (m,) = assign(k, "lm", [f"ct.maximum({a[0]}, {b[0]})"])
        (ms,) = assign(k, "lms", [f"ct.where({m} == -math.inf, 0.0, {m})"])
        return [m, f"{a[1]} * ct.exp({a[0]} - {ms}) + {b[1]} * ct.exp({b[0]} - {ms})"]

    def reduce(self, k, s, axis, shape):
        (m,) = assign(k, "lm", [f"ct.max({s[0]}, axis={axis}, keepdims=True)"])
        (ms,) = assign(k, "lms", [f"ct.where({m} == -math.inf, 0.0, {m})"])
        return [m, f"ct.sum({s[1]} * ct.exp({s[0]} - {ms}), axis={axis}, keepdims=True)"]

    def finalize(self, k, s, count):
        return [f"ct.where({s[0]} == -math.inf, 0.0, {s[0]}) + ct.log({s[1]})"]


class Moments(Red):
    """(count, mean, M2) with Chan's parallel merge: var/std(+mean) with a correction."""

    lanewise = False

    def __init__(self, correction: float, std: bool, with_mean: bool):
        super().__init__()
        self.correction, self.std, self.with_mean = correction, std, with_mean
        self.nout = 2 if with_mean else 1

    def states(self):
        return [("ct.float32", "0.0")] * 3

    def chunk(self, k, t, cols, valid, axis, shape, count):
        (tt,) = assign(k, "vt", [masked(t, valid, "0.0")])
        if valid is None:
            (n,) = assign(k, "vn", [f"ct.full({shape_red(shape, axis)}, {count}, dtype=ct.float32)"])
        else:
            (n,) = assign(k, "vn", [f"ct.sum(ct.where({valid}, 1.0, 0.0), axis={axis}, keepdims=True)"])
        (mean,) = assign(k, "vmean", [f"ct.sum({tt}, axis={axis}, keepdims=True) / {n}"])
        dev = f"{tt} - {mean}"
        return [n, mean, f"ct.sum({masked(f'({dev}) * ({dev})', valid, '0.0')}, axis={axis}, keepdims=True)"]

    def combine(self, k, a, b):
        n, d = assign(k, "vc", [f"{a[0]} + {b[0]}", f"{b[1]} - {a[1]}"])
        (ns,) = assign(k, "vc", [f"ct.maximum({n}, 1.0)"])
        return [n, f"{a[1]} + {d} * ({b[0]} / {ns})", f"{a[2]} + {b[2]} + {d} * {d} * ({a[0]} * {b[0]} / {ns})"]

    def reduce(self, k, s, axis, shape):
        n, tot = assign(k, "vr", [f"ct.sum({s[0]}, axis={axis}, keepdims=True)",
                                  f"ct.sum({s[0]} * {s[1]}, axis={axis}, keepdims=True)"])
        (mean,) = assign(k, "vr", [f"{tot} / ct.maximum({n}, 1.0)"])
        return [n, mean, f"ct.sum({s[2]}, axis={axis}, keepdims=True) + "
                         f"ct.sum({s[0]} * ({s[1]} - {mean}) * ({s[1]} - {mean}), axis={axis}, keepdims=True)"]

    def finalize(self, k, s, count):
        denom = count - self.correction
        var = f"{s[2]} / {flit(denom)}" if denom > 0 else f"{s[2]} / 0.0"
        out = [f"ct.sqrt({var})" if self.std else var]
        return out + ([s[1]] if self.with_mean else [])


class PowerSum(Sum):
    """sum(|x|^p)^(1/p) for finite p != 0; p = 2 and 1 without transcendental functions."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def elem(self, k, t, cols, valid, shape):
        p = self.p
        if p == 2:
            e = f"{t} * {t}"
        elif p == 1:
            e = f"ct.abs({t})"
        elif p == int(p) and 2 < p <= 4:
            e = " * ".join([f"ct.abs({t})"] * int(p))
        else:
            e = f"ct.exp({flit(p)} * ct.log(ct.abs({t})))"
        return [masked(e, valid, "0.0")]

    def finalize(self, k, s, count):
        p = self.p
        if p == 2:
            return [f"ct.sqrt({s[0]})"]
        if p == 1:
            return [s[0]]
        return [f"ct.exp(ct.log({s[0]}) * {flit(1.0 / p)})"]


class CountNonzero(Sum):
    def elem(self, k, t, cols, valid, shape):
        return [masked(f"ct.where({t} != 0.0, 1.0, 0.0)", valid, "0.0")]


# ---- parsing the ATen call ------------------------------------------------------------------------------------


def parse_reduction(op, rank: int, in_dtype: str):
    """(Red, reduced dims, keepdim) for one captured reduction call."""
    a = {k: decode(v) for k, v in op.attrs.items()}
    name, overload = op.op, op.target.rsplit(".", 1)[-1]
    keepdim = bool(a.get("keepdim", False))
    dims = a.get("dim")
    is_float = in_dtype in FLOAT_DTYPES
    is_int = not is_float

    def int_acc():
        if in_dtype == "bool" and name != "prod":
            return "ct.float32"  # counting: exact in float32 below 2**24 elements
        return "ct.int64" if is_int else "ct.float32"

    if name in ("sum", "nansum"):
        red = Sum(acc=int_acc(), nan=name == "nansum" and is_float)
    elif name in ("mean", "nanmean"):
        if is_int:
            raise Unsupported(f"{name} of {in_dtype}")
        red = Sum(mean=True, nan=name == "nanmean")
    elif name == "prod":
        red = Prod(acc=int_acc())
    elif name in ("amax", "amin"):
        red = Extreme(name == "amax")
    elif name in ("max", "min"):
        if overload == "dim":
            red = ArgExtreme(name == "max", values=True)
        elif overload == "default":
            red, dims = Extreme(name == "max"), None
        else:
            raise Unsupported(f"{op.target}")
    elif name in ("argmax", "argmin"):
        red = ArgExtreme(name == "argmax", values=False)
    elif name == "logsumexp":
        if is_int:
            raise Unsupported(f"logsumexp of {in_dtype}")
        red = LogSumExp()
    elif name in ("norm", "linalg_vector_norm", "frobenius_norm"):
        if is_int:
            raise Unsupported(f"{name} of {in_dtype}")
        p = 2.0 if name == "frobenius_norm" else a.get("ord", a.get("p", 2.0))
        p = 2.0 if p is None else float(p)
        if p == math.inf:
            red = Extreme(True, "ct.abs({})", init=0.0)
        elif p == -math.inf:
            red = Extreme(False, "ct.abs({})")
        elif p == 0:
            red = CountNonzero()
        else:
            red = PowerSum(p)
    elif name in ("var", "std", "var_mean", "std_mean"):
        if is_int:
            raise Unsupported(f"{name} of {in_dtype}")
        if overload == "correction" or "correction" in a:
            corr = a.get("correction")
            corr = 1.0 if corr is None else float(corr)
        else:
            corr = 1.0 if a.get("unbiased", True) else 0.0
        red = Moments(corr, std=name.startswith("std"), with_mean=name.endswith("_mean"))
    elif name in ("all", "any"):
        red = Extreme(name == "any", "ct.where({} != 0.0, 1.0, 0.0)", init=0.0 if name == "any" else 1.0)
    elif name == "count_nonzero":
        red = CountNonzero()
    elif name == "aminmax":
        red = MinMax()
    else:
        raise Unsupported(f"reduction {op.target}")
    if red.acc == "ct.float32" and in_dtype in ("int32", "int64"):
        if name not in ("all", "any", "count_nonzero"):
            raise Unsupported(f"{name} of {in_dtype} (float32 compute would round)")
    return red, norm_dims(dims, rank), keepdim


# ---- generation -----------------------------------------------------------------------------------------------


def value_shape(parts: Parts, value: str) -> tuple[list[int], str]:
    t = parts.inputs.get(value)
    if t is not None:
        return list(t.shape), t.dtype
    for op in parts.prologue:
        if op.node == value:
            return list(op.output), op.output_dtype
    raise Unsupported(f"cannot find the shape of {value}")


class OutputPlan:
    """Which spec outputs come from the reduced tile (anchor result / epilogue) and which from input tiles."""

    def __init__(self, parts: Parts, red: Red, out_shape: list[int]):
        self.reduced: list[tuple[TensorSpec, str]] = []  # (spec output, graph value)
        self.full: list[TensorSpec] = []
        pro = parts.prologue_values
        for t in parts.spec.outputs:
            gv = t.graph_value
            if gv in pro:
                self.full.append(t)
            else:
                if list(t.shape) != list(out_shape):
                    raise Unsupported(f"output {t.name}{t.shape} is neither the reduced shape {out_shape} "
                                      "nor the input shape")
                self.reduced.append((t, gv))


def generate(spec: KernelSpec) -> KernelSource:
    parts = split_spec(spec, {"reduction"})
    anchor = parts.anchor
    shape, in_dtype = value_shape(parts, parts.main)
    red, dims, keepdim = parse_reduction(anchor, len(shape), in_dtype)
    if in_dtype == "bool" and red.acc == "ct.float32" and isinstance(red, Sum) and prod(shape) >= 2 ** 24:
        red.acc = "ct.int64"  # counts beyond 2**24 are not exact in float32
    if red.acc != "ct.float32" and (parts.prologue or parts.epilogue):
        raise Unsupported(f"integer {anchor.op} with fused elementwise ops")
    out_shape = list(anchor.output)
    if broadcasts_back(parts, shape, out_shape):  # fusion rule R7: the statistic broadcast back over its rows
        return generate_rows(spec, parts, red, shape, dims)
    plan = OutputPlan(parts, red, out_shape)

    layout = make_layout(shape, dims)
    # the same bytes per tile for 2-byte inputs as for float32 (H200, mean(2,3) 128x512x28x28 fp16: 4096 elements
    # 0.077 ms, 8192 0.065, 16384 0.061; eager 0.053)
    wide = 2 if in_dtype in ("float16", "bfloat16") else 1
    choose_tiles(layout, TUNING["red_tile_elems"] * wide, max_br=4096)
    if layout.kind == "row" and layout.BO == 1 and layout.blocks() < NUM_SM and layout.R > 8192:
        layout.BR = max(1024, min(layout.BR, pow2_floor(layout.R // 64)))  # enough chunks to split
    split = 1
    if layout.blocks() < NUM_SM and layout.nch >= 4:
        split = min(pow2_floor(max(1, (2 * NUM_SM) // layout.blocks())), pow2_floor(layout.nch // 2), 256)
    if split <= 1:
        layout.persist()  # the kernel's occupancy option is set in _Gen.source
    else:
        layout.hints, layout.long_loops = True, True
    gen = _Gen(spec, parts, red, layout, dims, keepdim, out_shape, plan, in_dtype, max(split, 1))
    return gen.source()


class _Gen:
    def __init__(self, spec, parts, red, layout, dims, keepdim, out_shape, plan, in_dtype, split):
        self.spec, self.parts, self.red, self.L = spec, parts, red, layout
        self.dims, self.keepdim, self.out_shape, self.plan = dims, keepdim, out_shape, plan
        self.in_dtype = in_dtype
        self.split = split if split >= 2 else 1
        self.cps = cdiv(layout.nch, self.split)
        self.wrapper: list[str] = []
        self.permuted: set[str] = set()  # outputs written through a permuted buffer

    # -- helpers
    def env_for_results(self, res: list[str]) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.red.nout == 1:
            env[self.parts.anchor.node] = res[0]
        for gv, idx in self.parts.getitems.items():
            if idx < len(res):
                env[gv] = res[idx]
        epi = {op.node for op in self.parts.epilogue}
        for t, gv in self.plan.reduced:  # a tuple element the reference did not name: integer means indices
            if gv not in env and gv not in epi and len(res) == 2:
                env[gv] = res[1] if t.dtype in ("int64", "int32") else res[0]
        return env

    def full_out_views(self, kernel: Kernel) -> list[tuple[str, TensorSpec]]:
        views = []
        L = self.L
        for t in self.plan.full:
            name = f"o_{t.name}"
            if L.perm is not None:
                pshape = tuple(L.shape[d] for d in L.perm)
                self.wrapper.append(f"{t.name}_buf = torch.empty({pshape}, dtype=torch.{t.dtype}, "
                                    f"device={self.device}.device)")
                inv = [L.perm.index(d) for d in range(len(L.perm))]
                # the kernel writes the permuted buffer; consumers get the usual contiguous layout
                self.wrapper.append(f"{t.name} = {t.name}_buf.permute{tuple(inv)}")
                self.permuted.add(t.name)
                kernel.tensor(name, f"{t.name}_buf.reshape{L.view_shape}")
            else:
                self.wrapper.append(f"{t.name} = torch.empty({tuple(t.shape)}, dtype=torch.{t.dtype}, "
                                    f"device={self.device}.device)")
                kernel.tensor(name, f"{t.name}.reshape{L.view_shape}")
            views.append((name, t))
        return views

    @property
    def device(self) -> str:
        return next(t.name for t in self.spec.inputs if t.role != "scalar")

    # -- the input pass: load/prologue one chunk, store prologue outputs, fold into the states
    def load_chunk(self, kernel: Kernel, k: Code, chunk: str, full_views) -> tuple[str, str | None]:
        """The chunk's input tile (after the prologue, whose outputs are stored here) and its validity mask."""
        L = self.L
        L.emit_chunk_coords(k, chunk)
        ctx = input_ctx(kernel, L, self.parts)
        ctx.full_index = L.tile_index(chunk)
        if self.parts.prologue:
            env = emit_ops(self.parts.prologue, {}, lambda v: ctx.load(v, k), k)
            t = as_float(env[self.parts.main], k)
            for name, out in full_views:
                k(store_line(name, L.tile_index(chunk), env[out.graph_value], out.dtype, L.tile, L.store_hint))
        else:
            t = ctx.load(self.parts.main, k, self.red.acc)
        if not L.needs_mask():
            return t, None
        k(f"valid = cols < {L.R}")
        return t, "valid"

    def emit_input_pass(self, kernel: Kernel, full_views) -> list[str]:
        """Body of the main (or stage-one) kernel up to the per-row states; returns the state variables."""
        L, red, k = self.L, self.red, kernel.body
        L.emit_block_coords(k)
        states = [f"acc{i}" for i in range(len(red.states()))]
        if self.split == 1 and L.nch == 1:  # one chunk: reduce it directly
            t, valid = self.load_chunk(kernel, k, "0", full_views)
            for s, e in zip(states, red.chunk(k, t, "cols", valid, L.axis, L.tile, flit(float(L.R)))):
                k(f"{s} = {e}")
            return states
        shape = L.tile if red.lanewise else L.red_tile
        for s, (dt, init) in zip(states, red.states()):
            k(f"{s} = ct.full({shape}, {init}, dtype={dt})")
        if self.split > 1:
            k(f"split = ct.bid({1 if L.kind == 'row' else 2})")
            k(f"c_start = split * {self.cps}")
            k(f"c_stop = min(c_start + {self.cps}, {L.nch})")
            header = "for c in range(c_start, c_stop):"
        else:
            header = f"for c in range({L.nch}):"
        with k.block(header):
            t, valid = self.load_chunk(kernel, k, "c", full_views)
            if red.lanewise:  # per-lane states, reduced across lanes once after the loop
                new = red.combine(k, states, assign(k, "el", red.elem(k, t, "cols", valid, L.tile)))
            else:  # reduce the chunk, merge into the row states
                part = assign(k, "part", red.chunk(k, t, "cols", valid, L.axis, L.tile, flit(float(L.BR))))
                new = red.combine(k, states, part)
            for s, e in zip(states, assign(k, "nxt", new)):  # all new values first: they read the old states
                k(f"{s} = {e}")
        if red.lanewise:
            return assign(k, "rs", red.reduce(k, states, L.axis, L.tile))
        return states

    def emit_epilogue(self, kernel: Kernel, k: Code, res: list[str], ctx: TileCtx, view_of, index: str,
                      tile: str) -> None:
        env = self.env_for_results(res)
        env = emit_ops(self.parts.epilogue, env, lambda v: ctx.load(v, k), k)
        for t, gv in self.plan.reduced:
            if gv not in env:
                raise Unsupported(f"output {t.name} ({gv}) is not computed by the kernel")
            k(store_line(view_of(t), index, env[gv], t.dtype, tile))

    def out_ctx(self, kernel: Kernel, tile: str, rank: int, groups, full_view, index: str) -> TileCtx:
        return TileCtx(kernel, tile, rank, groups, self.L.shape, self.out_shape,
                       out_dim_map(self.L.shape, self.dims, self.keepdim), full_view, index, self.parts.inputs)

    def source(self) -> KernelSource:
        spec, L, red = self.spec, self.L, self.red
        kid = spec.id
        main = Kernel(f"{kid}_kernel")
        if L.persistent and L.occupancy > 1:
            main.options["occupancy"] = L.occupancy
        full_views = self.full_out_views(main)
        states = self.emit_input_pass(main, full_views)
        k = main.body
        reduced_outs = [t for t, _ in self.plan.reduced]
        for t in reduced_outs:
            self.wrapper.append(f"{t.name} = torch.empty({tuple(t.shape)}, dtype=torch.{t.dtype}, "
                                f"device={self.device}.device)")
        kernels = [main]
        doc = f"{', '.join(spec.operations)}: {red.__class__.__name__} over dims {self.dims} of {L.shape} " \
              f"as {L.kind} {L.view_shape}, tile {L.tile}" + \
              (f", persistent grid of {L.grid()[0]} blocks" if L.persistent else "")
        if self.split == 1:
            res = assign(k, "res", red.finalize(k, states, L.R))
            ctx = self.out_ctx(main, L.red_tile, 2 if L.kind == "row" else 3, L.output_groups(),
                               lambda n: f"{n}.contiguous().reshape{L.red_view_shape}", L.red_index())
            self.emit_epilogue(main, k, res, ctx,
                               lambda t: main.tensor(f"o_{t.name}", f"{t.name}.reshape{L.red_view_shape}"),
                               L.red_index(), L.red_tile)
            launches = [main.launch(L.grid())]
        else:
            S, Q = self.split, L.O * L.I
            ws_names = []
            for i, (dt, _) in enumerate(red.states()):
                ws = f"ws{i}"
                tdt = {"ct.float32": "float32", "ct.int32": "int32", "ct.int64": "int64"}[dt]
                self.wrapper.append(f"{ws} = torch.empty(({S}, {L.O}, {L.I}), dtype=torch.{tdt}, "
                                    f"device={self.device}.device)")
                ws_names.append((ws, dt))
                name = main.tensor(f"p_{ws}", ws)
                if L.kind == "row":
                    k(f"ct.store({name}, index=(split, pid, 0), tile=ct.reshape({states[i]}, (1, {L.BO}, 1)))")
                else:
                    k(f"ct.store({name}, index=(split, pid, pid_i), "
                      f"tile=ct.reshape({states[i]}, (1, {L.BO}, {L.BI})))")
            grid1 = L.grid() + (S,)
            fin = Kernel(f"{kid}_finish_kernel")
            kf = fin.body
            BQ = min(pow2_at_least(Q), max(1, 4096 // S))
            kf("pid = ct.bid(0)")
            kf(f"q = pid * {BQ} + ct.arange({BQ}, dtype=ct.int32)[None, :]")
            parts_st = []
            for i, (ws, dt) in enumerate(ws_names):
                name = fin.tensor(f"p_{ws}", f"{ws}.reshape({S}, {Q})")
                kf(f"st{i} = ct.load({name}, index=(0, pid), shape=({S}, {BQ}))")
                parts_st.append(f"st{i}")
            merged = assign(kf, "m", red.reduce(kf, parts_st, 0, f"({S}, {BQ})"))
            res = assign(kf, "res", red.finalize(kf, merged, L.R))
            ctx = self.out_ctx(fin, f"(1, {BQ})", 2, [("q", L.dims_o + L.dims_i)],
                               lambda n: f"{n}.contiguous().reshape(1, {Q})", "(0, pid)")
            self.emit_epilogue(fin, kf, res, ctx,
                               lambda t: fin.tensor(f"o_{t.name}", f"{t.name}.reshape(1, {Q})"),
                               "(0, pid)", f"(1, {BQ})")
            kernels.append(fin)
            launches = [main.launch(grid1), fin.launch((cdiv(Q, BQ),))]
            doc += f", split over {S} blocks per row then merged"
        body = list(self.wrapper)
        for kern in kernels:
            body.extend(kern.prep)
        body.extend(launches)
        outs = [f"{t.name}.contiguous()" if t.name in self.permuted else t.name for t in spec.outputs]
        body.append(f"return {outs[0]}" if len(outs) == 1 else f"return ({', '.join(outs)},)")
        # wrapper views/allocations must precede their use: allocations first, then views, then launches
        code = "\n\n".join([main.source(doc)] + [kern.source(f"{', '.join(spec.operations)}: merge the partial "
                                                                 "states of each output in a fixed order")
                                                     for kern in kernels[1:]] + [wrapper_source(spec, body)])
        notes = [doc]
        return KernelSource(spec_id=kid, family=spec.family, code=code, launch_name=f"launch_{kid}",
                            kernel_names=[kern.name for kern in kernels], notes=notes)
