"""Normalizations: layer_norm (any normalized_shape, weight/bias optional), rms_norm, group_norm, instance_norm
(statistics of the input) and eval-mode batch_norm / instance_norm with running statistics, with a fused
elementwise prologue (a residual add, also written out when the sum is used again) and epilogue (activation).

Statistic norms view the input as rows of the normalized elements: layer/rms norm (M, prod(normalized_shape)),
group norm (N*G, C/G*HW) (side inputs are re-viewed with C split into (G, C/G)), instance norm (N*C, HW). A row
that fits a tile (up to 8192 elements) is normalized from registers with the two-pass mean/variance; longer
rows take a statistics pass (per-chunk mean and M2 merged with Chan's formula) and a normalizing pass.
Running-statistics norms are per-channel affine maps: a 2D grid of (rows, column chunks) tiles over (N*C, HW),
or over (N, C*HW) when the spatial size is small, with the channel's scale/shift gathered per row or column.
"""

from __future__ import annotations

from ..specs import KernelSpec, TensorSpec
from .base import KernelSource, Unsupported
from .rowwise import (FLOAT_DTYPES, Layout, Parts, SameShapeGen, cdiv, choose_tiles, choose_tiles_full_row,
                      decode, emit_ops, flit, make_layout, prod, ref_of, split_spec)

_FINFO_EPS = {"float32": 1.1920928955078125e-07, "float16": 0.0009765625, "bfloat16": 0.0078125}


def _arg(op, index: int, name: str, default=None):
    """An argument by schema position or name (args hold tensors as refs; attrs hold literals)."""
    if name in op.kwargs:
        return op.kwargs[name]
    if index < len(op.args):
        return op.args[index]
    return op.attrs.get(name, default)


def _tensor(parts: Parts, op, index: int, name: str) -> TensorSpec | None:
    ref = ref_of(_arg(op, index, name))
    if ref is None:
        return None
    t = parts.inputs.get(ref)
    if t is None:
        raise Unsupported(f"{op.op} {name} computed inside the kernel")
    if t.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"{op.op} {name} of dtype {t.dtype}")
    return t


def generate(spec: KernelSpec) -> KernelSource:
    parts = split_spec(spec, {"normalization"})
    op = parts.anchor
    shape = list(op.output)
    name = op.op
    if parts.getitems and any(idx != 0 for gv, idx in parts.getitems.items()
                              if gv in {t.graph_value for t in spec.outputs}):
        raise Unsupported(f"{name}'s saved statistics as outputs")
    if name in ("layer_norm", "native_layer_norm", "rms_norm"):
        normalized = [int(d) for d in decode(_arg(op, 1, "normalized_shape"))]
        k = len(normalized)
        if shape[len(shape) - k:] != normalized:
            raise Unsupported(f"{name} normalized_shape {normalized} vs input {shape}")
        w = _tensor(parts, op, 2, "weight")
        b = _tensor(parts, op, 3, "bias") if name != "rms_norm" else None
        eps = decode(_arg(op, 4 if name == "layer_norm" or name == "native_layer_norm" else 3, "eps"))
        if name == "rms_norm" and eps is None:
            eps = _FINFO_EPS.get(_main_dtype(parts), _FINFO_EPS["float32"])
        layout = choose_tiles_full_row(make_layout(shape, list(range(len(shape) - k, len(shape)))))
        return _RowNorm(spec, parts, layout, shape, "rms" if name == "rms_norm" else "layer", float(eps),
                        w, b).build()
    if name in ("group_norm", "native_group_norm"):
        if name == "group_norm":
            groups, w, b, eps = int(decode(_arg(op, 1, "num_groups"))), _tensor(parts, op, 2, "weight"), \
                _tensor(parts, op, 3, "bias"), float(decode(_arg(op, 4, "eps", 1e-5)))
        else:
            w, b = _tensor(parts, op, 1, "weight"), _tensor(parts, op, 2, "bias")
            groups, eps = int(decode(_arg(op, 6, "group"))), float(decode(_arg(op, 7, "eps")))
        if len(shape) < 2 or shape[1] % groups:
            raise Unsupported(f"group_norm with {groups} groups on {shape}")
        virtual = [shape[0], groups, shape[1] // groups] + shape[2:]
        layout = choose_tiles_full_row(make_layout(virtual, list(range(2, len(virtual)))))
        return _RowNorm(spec, parts, layout, shape, "group", eps, w, b, groups=groups).build()
    if name == "instance_norm":
        w, b = _tensor(parts, op, 1, "weight"), _tensor(parts, op, 2, "bias")
        use_input_stats = bool(decode(_arg(op, 5, "use_input_stats", True)))
        eps = float(decode(_arg(op, 7, "eps", 1e-5)))
        if use_input_stats:
            if len(shape) < 3:
                raise Unsupported(f"instance_norm on {shape}")
            layout = choose_tiles_full_row(make_layout(shape, list(range(2, len(shape)))))
            return _RowNorm(spec, parts, layout, shape, "instance", eps, w, b).build()
        mean, var = _tensor(parts, op, 3, "running_mean"), _tensor(parts, op, 4, "running_var")
        return _ChannelAffine(spec, parts, shape, w, b, mean, var, eps).build()
    if name in ("batch_norm", "native_batch_norm", "_native_batch_norm_legit_no_training"):
        w, b = _tensor(parts, op, 1, "weight"), _tensor(parts, op, 2, "bias")
        mean, var = _tensor(parts, op, 3, "running_mean"), _tensor(parts, op, 4, "running_var")
        if name == "_native_batch_norm_legit_no_training":
            training, eps = False, float(decode(_arg(op, 6, "eps", 1e-5)))
        else:
            training = bool(decode(_arg(op, 5, "training", False)))
            eps = float(decode(_arg(op, 7, "eps", 1e-5)))
        if training or mean is None or var is None:
            raise Unsupported(f"{name} with batch statistics (training mode)")
        return _ChannelAffine(spec, parts, shape, w, b, mean, var, eps).build()
    raise Unsupported(f"normalization {op.target}")


def _main_dtype(parts: Parts) -> str:
    t = parts.inputs.get(parts.main)
    if t is not None:
        return t.dtype
    for op in parts.prologue:
        if op.node == parts.main:
            return op.output_dtype
    return "float32"


def _group_side_view(shape: list[int], groups: int):
    """Side inputs broadcast against (N, C, *S) re-viewed against (N, G, C/G, *S)."""
    rank = len(shape)

    def view(t: TensorSpec):
        s = [1] * (rank - len(t.shape)) + list(t.shape)
        c = s[1]
        new = [s[0], groups, shape[1] // groups] + s[2:] if c != 1 else [s[0], 1, 1] + s[2:]
        return f"{t.name}.reshape{tuple(new)}", new

    return view


class _RowNorm:
    def __init__(self, spec, parts, layout: Layout, shape, kind: str, eps: float, w, b, groups: int = 1):
        self.spec, self.parts, self.L, self.shape = spec, parts, layout, shape
        self.kind, self.eps, self.w, self.b, self.groups = kind, eps, w, b, groups
        side_view = _group_side_view(shape, groups) if kind == "group" else None
        self.gen = SameShapeGen(spec, parts, layout, out_shape=shape, side_view=side_view)
        self.k = self.gen.kernel.body

    # per-element affine parameters for the current chunk (None when absent)
    def param_tile(self, t: TensorSpec | None, chunk: str) -> str | None:
        if t is None:
            return None
        kern, k, L = self.gen.kernel, self.k, self.L
        var = f"p_{t.name}"
        if self.kind in ("layer", "rms"):
            name = kern.tensor(f"a_{t.name}", f"{t.name}.reshape(1, {L.R})")
            k(f"{var} = ct.load({name}, index=(0, {chunk}), shape=(1, {L.BR}), "
              f"padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)")
        elif self.kind == "group":
            name = kern.tensor(f"a_{t.name}", t.name)
            cpg = self.shape[1] // self.groups
            hw = prod(self.shape[2:])
            col_c = "cols" if hw == 1 else f"(cols // {hw})"
            k(f"{var} = ct.gather({name}, (rows % {self.groups}) * {cpg} + {col_c}).astype(ct.float32)")
        else:  # instance: one channel per row
            name = kern.tensor(f"a_{t.name}", t.name)
            k(f"{var} = ct.gather({name}, rows % {self.shape[1]}).astype(ct.float32)")
        return var

    def normalized(self, xs: str, chunk: str) -> str:
        k = self.k
        if self.kind == "rms":
            k(f"y = {xs} * rstd")
        else:
            k(f"y = ({xs} - mean) * rstd")
        w = self.param_tile(self.w, chunk)
        b = self.param_tile(self.b, chunk)
        if w:
            k(f"y = y * {w}")
        if b:
            k(f"y = y + {b}")
        return "y"

    def epilogue_and_store(self, env, ctx, chunk: str, y: str, skip=frozenset()) -> None:
        k = self.k
        env = dict(env)
        env[self.parts.anchor.node] = y
        for gv, idx in self.parts.getitems.items():
            if idx == 0:
                env[gv] = y
        env = emit_ops(self.parts.epilogue, env, lambda v: ctx.load(v, k), k)
        outs = {t.graph_value for _, t in self.gen.out_views} - set(skip)
        self.gen.store_outputs(env, chunk, outs)

    def masked(self, t: str) -> str:
        if self.L.needs_mask():
            self.k(f"xs = ct.where(cols < {self.L.R}, {t}, 0.0)")
            return "xs"
        return t

    def build(self) -> KernelSource:
        k, L = self.k, self.L
        L.emit_block_coords(k)
        ax, inv_r = L.axis, flit(1.0 / L.R)
        rms = self.kind == "rms"
        if L.nch == 1:
            t, env, ctx = self.gen.load_tile("0")
            xs = self.masked(t)
            if rms:
                k(f"ms = ct.sum({xs} * {xs}, axis={ax}, keepdims=True) * {inv_r}")
                k(f"rstd = ct.rsqrt(ms + {flit(self.eps)})")
            else:
                k(f"mean = ct.sum({xs}, axis={ax}, keepdims=True) * {inv_r}")
                dev = f"{xs} - mean"
                if L.needs_mask():
                    k(f"dev = ct.where(cols < {L.R}, {dev}, 0.0)")
                else:
                    k(f"dev = {dev}")
                k(f"var = ct.sum(dev * dev, axis={ax}, keepdims=True) * {inv_r}")
                k(f"rstd = ct.rsqrt(var + {flit(self.eps)})")
            self.epilogue_and_store(env, ctx, "0", self.normalized(xs, "0"))
        else:
            pro_outs = {t.graph_value for _, t in self.gen.out_views} & self.parts.prologue_values
            if rms:
                k(f"ss = ct.full({L.red_tile}, 0.0, dtype=ct.float32)")
            else:
                for v in ("n", "mean", "m2"):
                    k(f"{v} = ct.full({L.red_tile}, 0.0, dtype=ct.float32)")
            with k.block(f"for c in range({L.nch}):"):
                t, env, ctx = self.gen.load_tile("c")
                if pro_outs:
                    self.gen.store_outputs(env, "c", pro_outs)
                xs = self.masked(t)
                if rms:
                    k(f"ss = ss + ct.sum({xs} * {xs}, axis={ax}, keepdims=True)")
                else:
                    # this chunk's count, mean and M2, merged into the row's running ones (Chan et al.)
                    if L.needs_mask():
                        k(f"cn = ct.sum(ct.where(cols < {L.R}, 1.0, 0.0), axis={ax}, keepdims=True)")
                    else:
                        k(f"cn = ct.full({L.red_tile}, {flit(L.BR)}, dtype=ct.float32)")
                    k(f"cmean = ct.sum({xs}, axis={ax}, keepdims=True) / cn")
                    cdev = f"{xs} - cmean"
                    if L.needs_mask():
                        k(f"cdev = ct.where(cols < {L.R}, {cdev}, 0.0)")
                    else:
                        k(f"cdev = {cdev}")
                    k(f"cm2 = ct.sum(cdev * cdev, axis={ax}, keepdims=True)")
                    k("tot = n + cn")
                    k("delta = cmean - mean")
                    k("mean = mean + delta * (cn / tot)")
                    k("m2 = m2 + cm2 + delta * delta * (n * cn / tot)")
                    k("n = tot")
            if rms:
                k(f"rstd = ct.rsqrt(ss * {inv_r} + {flit(self.eps)})")
            else:
                k(f"rstd = ct.rsqrt(m2 * {inv_r} + {flit(self.eps)})")
            with k.block(f"for c in range({L.nch}):"):
                t, env, ctx = self.gen.load_tile("c")
                self.epilogue_and_store(env, ctx, "c", self.normalized(t, "c"), skip=pro_outs)
        what = {"layer": "layer_norm", "rms": "rms_norm", "group": f"group_norm ({self.groups} groups)",
                "instance": "instance_norm"}[self.kind]
        doc = (f"{', '.join(self.spec.operations)}: {what} of {self.shape} as rows {L.view_shape}, tile {L.tile}"
               + (", one pass" if L.nch == 1 else f", statistics then normalize over {L.nch} chunks"))
        return self.gen.finish(doc)


def _column_block(n: int, lo: int = 64, hi: int = 1024) -> int:
    """The largest power-of-two column block in [lo, hi] that wastes at most 1/16 of its lanes on the ragged last
    block of each row (else the least wasteful one): rows of 3136 take 256-wide blocks, not 1024."""
    best, best_waste = lo, 1.0
    b = hi
    while b >= lo:
        padded = -(-n // b) * b
        waste = (padded - n) / padded
        if waste <= 1 / 16 or b >= n:
            return b if b < n else max(lo, min(hi, _pow2(n)))
        if waste < best_waste:
            best, best_waste = b, waste
        b //= 2
    return best


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


class _ChannelAffine:
    """y = (x - running_mean[c]) * rsqrt(running_var[c] + eps) * weight[c] + bias[c] over (N, C, *S)."""

    def __init__(self, spec, parts, shape, w, b, mean, var, eps):
        self.spec, self.parts, self.shape = spec, parts, shape
        self.w, self.b, self.mean, self.var, self.eps = w, b, mean, var, eps
        if len(shape) < 2:
            raise Unsupported(f"batch_norm on {shape}")
        self.C, self.HW = shape[1], prod(shape[2:])
        # one channel per row when rows are long enough, else channels along the columns
        self.per_row = self.HW >= 32
        reduced = list(range(2, len(shape))) if self.per_row else list(range(1, len(shape)))
        L = make_layout(shape, reduced)  # trailing dims: always the row layout
        choose_tiles(L, 4096, max_br=_column_block(L.R), min_tile=256)
        self.L = L
        self.gen = SameShapeGen(spec, parts, L)
        self.k = self.gen.kernel.body

    def channel_param(self, t: TensorSpec | None, default: str) -> str:
        if t is None:
            return default
        kern, k = self.gen.kernel, self.k
        name = kern.tensor(f"a_{t.name}", t.name)
        if self.per_row:
            idx = f"rows % {self.C}"
        else:
            idx = "cols" if self.HW == 1 else f"(cols // {self.HW})"
        var = f"p_{t.name}"
        k(f"{var} = ct.gather({name}, {idx}).astype(ct.float32)")
        return var

    def build(self) -> KernelSource:
        k, L = self.k, self.L
        k("pid = ct.bid(0)")
        k("pid_c = ct.bid(1)")
        k(f"rows = pid * {L.BO} + ct.arange({L.BO}, dtype=ct.int32)[:, None]")
        t, env, ctx = self.gen.load_tile("pid_c")
        mean = self.channel_param(self.mean, "0.0")
        var = self.channel_param(self.var, "1.0")
        w = self.channel_param(self.w, "1.0")
        b = self.channel_param(self.b, "0.0")
        k(f"scale = ct.rsqrt({var} + {flit(self.eps)}) * {w}")
        k(f"y = ({t} - {mean}) * scale + {b}")
        env = dict(env)
        env[self.parts.anchor.node] = "y"
        for gv, idx in self.parts.getitems.items():
            if idx == 0:
                env[gv] = "y"
        env = emit_ops(self.parts.epilogue, env, lambda v: ctx.load(v, k), k)
        self.gen.store_outputs(env, "pid_c")
        grid = (cdiv(L.O, L.BO), cdiv(L.R, L.BR))
        doc = (f"{', '.join(self.spec.operations)}: per-channel affine with running statistics over {self.shape} "
               f"as {L.view_shape} ({'channel per row' if self.per_row else 'channels along columns'}), "
               f"tile {L.tile}")
        return self.gen.finish(doc, grid=grid)
