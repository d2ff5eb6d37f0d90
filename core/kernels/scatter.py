"""Scatter-style kernels: scatter (value / src), scatter_add, scatter_reduce (sum, prod, mean, amax, amin; with or
without self), index_add (alpha), index_copy, index_put (`x[i] = v`, `x[:, i] += v`); with fused
elementwise epilogues.

index_put with one integer index tensor (1-D, at any position of the index list, the other entries full slices)
is index_copy (accumulate=False) or index_add (accumulate=True) along that dim, its values broadcast to the
indexed shape and negative indices wrapped, as PyTorch's indexing does. A boolean mask's index_put is lowered to
an elementwise where before fusion (core/lowering.py).

Two forms, chosen by J, the number of update positions that can write one output element (the index's extent
along `dim`; index_add/index_copy: the index's length):

- **inverse** (J <= MEMORY_TUNING["scatter_inverse_max"], one launch, deterministic): the output is tiled as a
  gather kernel's (gather.tiled); each output element walks its J candidate positions in order, compares the
  index there with its own coordinate along `dim` and takes (scatter, index_copy: the last match, the order of
  PyTorch's CPU loop) or combines (sum/prod/amax/amin/mean, in float32, in index order) the source there. The
  epilogue is applied to the tile before its one store. A one-hot (`zeros.scatter_(1, t[:, None], 1.0)`) is J = 1.
- **atomic** (larger J, set and sum only): three launches. The output (sum: a float32 buffer) is initialised
  from self; a kernel over the update positions writes each update with `ct.atomic_add` / `ct.scatter` at its
  target coordinates (out-of-range lanes are dropped by the bounds check); the output kernel applies the epilogue
  and casts (skipped when there is neither). As with PyTorch's CUDA kernels, duplicate scatter targets keep an
  unspecified update and float sums are in atomic order, not bit-reproducible.

Index values are trusted to be in range, as PyTorch checks them (negative indices are wrapped for index_put only:
the other ops reject them).
"""

from __future__ import annotations

from dataclasses import dataclass
from ..specs import KernelSpec, OpRecord, TensorSpec
from .base import KernelSource, Unsupported, pow2_at_least
from .expr_args import bind_args, float_literal, scalar_value
from .indexing import (MEMORY_TUNING, alloc_outputs, array_param, decode, input_for, is_ref, module, prod,
                       ret_outputs, scalar_param, tup, wrapper_head)

I = "    "
OPS = ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_put")
_COMBINE = {"sum": "{a} + ct.where({h}, {v}, 0.0)", "mean": "{a} + ct.where({h}, {v}, 0.0)",
            "prod": "{a} * ct.where({h}, {v}, 1.0)", "amax": "ct.where({h}, ct.maximum({a}, {v}), {a})",
            "amin": "ct.where({h}, ct.minimum({a}, {v}), {a})", "set": "ct.where({h}, {v}, {a})"}
_EMPTY = {"sum": "0.0", "mean": "0.0", "prod": "1.0", "amax": "-math.inf", "amin": "math.inf"}


@dataclass
class Plan:
    """One scatter-style op: out = self with the updates at (position with `dim` replaced by index) combined by
    `reduce` ("set" for scatter/index_copy)."""

    op: str
    dim: int
    self_t: TensorSpec
    index: TensorSpec
    src: TensorSpec | None  # None: a scalar `value`
    value: str  # the scalar update (a literal or a scalar parameter) when src is None
    reduce: str  # set, sum, prod, mean, amax, amin
    include_self: bool
    alpha: str | None  # index_add's alpha (None: 1)
    out_shape: list[int]
    wrap: bool = False  # index_put: negative indices count from the end of `dim`

    @property
    def per_dim(self) -> bool:
        """index_add / index_copy / index_put: a 1-D index along `dim`, the source shaped like the output but for
        `dim` (index_put's values broadcast to that shape)."""
        return self.op in ("index_add", "index_copy", "index_put")

    @property
    def j(self) -> int:
        return prod(self.index.shape) if self.per_dim else self.index.shape[self.dim]

    @property
    def update_shape(self) -> list[int]:
        """The space of update positions: the index's shape (scatter*) or the source's (index_*: the output's with
        `dim` the index's length)."""
        if not self.per_dim:
            return list(self.index.shape)
        shape = list(self.out_shape)
        shape[self.dim] = prod(self.index.shape)
        return shape

    def src_coords(self, q: list[str]) -> list[str]:
        """Coordinates into the source for update coordinates `q` (broadcast dims of index_put's values read 0)."""
        assert self.src is not None
        off = len(q) - len(self.src.shape)
        return [("0" if n == 1 and self.update_shape[i + off] != 1 else q[i + off])
                for i, n in enumerate(self.src.shape)]


def plan(spec: KernelSpec, rec: OpRecord) -> Plan:
    a = bind_args(rec)
    if rec.op == "index_put":
        return _index_put_plan(spec, rec, a)
    self_t = input_for(spec, a.get("self"), rec.target)
    index = input_for(spec, a.get("index"), rec.target)
    rank = max(1, len(self_t.shape))
    dim = int(a.get("dim", 0))
    dim = dim + rank if dim < 0 else dim
    out_shape = list(rec.output) or [1]
    if not self_t.shape or len(out_shape) != len(self_t.shape):
        raise Unsupported(f"{rec.target} on a 0-d tensor")
    src_arg = a.get("source" if rec.op in ("index_add", "index_copy") else "src")
    src = input_for(spec, src_arg, rec.target) if is_ref(src_arg) else None
    value = "0.0"
    if src is None:
        v = a.get("value")
        if is_ref(v):
            value = scalar_param(input_for(spec, v, rec.target))
        else:
            value = float_literal(scalar_value(v)) if self_t.dtype.startswith(("float", "bfloat")) else str(int(v))
    reduce = {"scatter": "set", "index_copy": "set", "scatter_add": "sum", "index_add": "sum"}.get(rec.op)
    if a.get("reduce") is not None:
        r = str(a.get("reduce"))
        reduce = {"add": "sum", "multiply": "prod"}.get(r, r) if rec.op == "scatter" else r
    if reduce not in _COMBINE:
        raise Unsupported(f"{rec.target} with reduce={a.get('reduce')!r}")
    alpha = a.get("alpha")
    alpha = None if alpha in (None, 1) else float_literal(scalar_value(alpha))
    p = Plan(rec.op, dim, self_t, index, src, value, reduce, bool(a.get("include_self", True)), alpha, out_shape)
    if p.per_dim and (len(index.shape) != 1 or src is None or len(src.shape) != len(out_shape)):
        raise Unsupported(f"{rec.target}: expected a 1-D index and a source of the output's rank")
    if not p.per_dim and len(index.shape) != len(out_shape):
        raise Unsupported(f"{rec.target}: an index of rank {len(index.shape)} for a rank-{len(out_shape)} output")
    return p


def _index_put_plan(spec: KernelSpec, rec: OpRecord, a: dict) -> Plan:
    self_t = input_for(spec, a.get("self"), rec.target)
    out_shape = list(rec.output)
    idx = a.get("indices") or []
    given = [i for i, t in enumerate(idx) if t is not None]
    if not self_t.shape or len(given) != 1:
        raise Unsupported(f"{rec.target} with {len(given)} index tensors (one is generated)")
    d = given[0]
    index = input_for(spec, idx[d], rec.target)
    values = input_for(spec, a.get("values"), rec.target)
    accumulate = bool(a.get("accumulate", False))
    if values.dtype != self_t.dtype and (values.shape or not (_float(values) and _float(self_t))):
        raise Unsupported(f"{rec.target}: {values.dtype} values into a {self_t.dtype} tensor")
    if index.dtype == "bool":  # (lowering.py makes the mask forms it can express a where)
        raise Unsupported(f"{rec.target}: mask {index.shape} at dim {d} with values {values.shape} (the "
                          f"selection's size would depend on the mask)")
    if len(index.shape) != 1 or index.dtype not in ("int64", "int32"):
        raise Unsupported(f"{rec.target}: a {index.dtype} index of rank {len(index.shape)} (1-D integer indices "
                          f"are generated)")
    target = list(out_shape)
    target[d] = index.shape[0]
    if not _broadcasts(values.shape, target):
        raise Unsupported(f"{rec.target}: values {values.shape} do not broadcast to {target}")
    return Plan("index_put", d, self_t, index, values, "0.0", "sum" if accumulate else "set", True, None, out_shape,
                wrap=True)


def _broadcasts(shape: list[int], to: list[int]) -> bool:
    return len(shape) <= len(to) and all(n in (1, m) for n, m in zip(shape[::-1], to[::-1]))


def _float(t: TensorSpec) -> bool:
    return t.dtype.startswith(("float", "bfloat"))


def _update(p: Plan, q: list[str], dtype: str) -> str:
    """The (BR, BL) tile of updates at update coordinates `q`: the source there (or the scalar value), times alpha."""
    if p.src is not None:
        v = f"ct.gather({array_param(p.src)}, {tup(p.src_coords(q) or ['0'])}).astype({dtype})"
    else:
        v = f"ct.full((BR, BL), {p.value}, dtype={dtype})"
    if p.alpha is not None:
        v = f"({v} * {p.alpha})"
    return f"ct.broadcast_to({v}, (BR, BL))"


def inverse(c, p: Plan) -> str:
    """The inverse form's value at the tile's coordinates (c: gather._Ctx): self combined with the J candidate
    updates, walked in index order."""
    fl = _float(p.self_t)
    acc_t = "ct.float32" if fl else f"ct.{p.self_t.dtype}"
    tile = "(BR, BL)"
    own = c.tmp(f"ct.broadcast_to({c.gather(p.self_t, c.coords)}.astype({acc_t}), {tile})", "sv")
    start = own if (p.include_self or p.reduce == "set") else \
        c.tmp(f"ct.full({tile}, {_EMPTY[p.reduce]}, dtype={acc_t})", "sa")
    c.lines.append(f"{I}acc = {start}")
    counted = p.reduce == "mean" or not p.include_self
    if counted:
        c.lines.append(f"{I}hits = ct.zeros({tile}, dtype=ct.int32)")
    pos = c.coords[p.dim]
    c.lines.append(f"{I}for j in range({p.j}):")
    q = list(c.coords)
    q[p.dim] = "j"
    J = I + I
    if p.per_dim:
        c.lines.append(f"{J}iv = ct.gather({array_param(p.index)}, j).astype(ct.int32)")
        if p.wrap:
            c.lines.append(f"{J}iv = ct.where(iv < 0, iv + {p.out_shape[p.dim]}, iv)")
    else:  # positions past the index's extent on the other dims pad -1: they write nothing
        c.lines.append(f"{J}iv = ct.gather({array_param(p.index)}, {tup(q)}, padding_value=-1).astype(ct.int32)")
    c.lines.append(f"{J}hit = ct.broadcast_to(iv == {pos}, {tile})")
    c.lines.append(f"{J}upd = {_update(p, q, acc_t)}")
    c.lines.append(f"{J}acc = " + _COMBINE[p.reduce].format(a="acc", h="hit", v="upd"))
    if counted:
        c.lines.append(f"{J}hits = hits + ct.where(hit, 1, 0)")
    if p.reduce == "mean":
        n = "hits + 1" if p.include_self else "hits"
        c.lines.append(f"{I}acc = ct.where(hits > 0, acc / ct.maximum({n}, 1).astype({acc_t}), {own})")
    elif not p.include_self:
        c.lines.append(f"{I}acc = ct.where(hits > 0, acc, {own})")
    return "acc"


def generate(spec: KernelSpec, rec: OpRecord, epilogue: list[OpRecord]) -> KernelSource:
    from .gather import tiled

    p = plan(spec, rec)
    if prod(p.out_shape) == 0 or prod(p.update_shape) == 0:
        raise Unsupported(f"{rec.target}: empty tensors")
    if p.j <= int(MEMORY_TUNING["scatter_inverse_max"]):
        kernel, launch, note = tiled(spec, rec, epilogue, f"{spec.id}_kernel", lambda c: inverse(c, p))
        w: list[str] = []
        device = wrapper_head(spec, w)
        alloc_outputs(spec, device, w)
        w += [launch([]), ret_outputs(spec)]
        return module(spec, [kernel], "\n".join(w), [f"{spec.id}_kernel"],
                      [f"{rec.op}: inverse form, {note}; each element walks its {p.j} candidate updates in order"])
    return _atomic(spec, rec, epilogue, p)


def _atomic(spec: KernelSpec, rec: OpRecord, epilogue: list[OpRecord], p: Plan) -> KernelSource:
    from .gather import tiled

    if p.reduce not in ("set", "sum") or not p.include_self:
        raise Unsupported(f"{rec.target} (reduce={p.reduce}, include_self={p.include_self}) over {p.j} updates per "
                          f"element: the atomic form covers set and sum with self")
    kid = spec.id
    fl = _float(p.self_t)
    if p.reduce == "sum" and not fl:
        raise Unsupported(f"{rec.target}: an integer sum over {p.j} updates per element")
    buf_dtype = "float32" if p.reduce == "sum" else p.self_t.dtype
    direct = not epilogue and len(spec.outputs) == 1 and spec.outputs[0].dtype == buf_dtype
    buf = spec.outputs[0].name if direct else f"{kid}_buf"
    # 1. the buffer from self
    init, init_launch, note = tiled(spec, rec, [], f"{kid}_init_kernel",
                                    lambda c: f"{c.gather(p.self_t, c.coords)}.astype(ct.{buf_dtype})", store_to=buf)
    # 2. the updates
    upd = p.update_shape
    k = len(upd)
    UR, UL = prod(upd[:-1]), upd[-1]
    BL = pow2_at_least(UL, 1, 1024)
    BR = pow2_at_least(UR, 1, max(1, int(MEMORY_TUNING["gather_tile_elems"]) // BL))
    nlb = -(-UL // BL)
    params = [array_param(p.index)] + ([array_param(p.src)] if p.src is not None else []) + \
        ([p.value] if p.value.startswith("s_") else []) + ["BUF"]
    lines = ["@ct.kernel",
             f"def {kid}_scatter_kernel({', '.join(params)}, BR: ct.Constant[int], BL: ct.Constant[int]):",
             f"{I}bid = ct.bid(0)",
             f"{I}pid_r = bid // {nlb}",
             f"{I}pid_l = bid % {nlb}",
             f"{I}rr = (pid_r * BR + ct.arange(BR, dtype=ct.int32))[:, None]",
             f"{I}cc = (pid_l * BL + ct.arange(BL, dtype=ct.int32))[None, :]"]
    lead = decode("rr", upd[:-1], lines, I, "u", bound_outer=False) if k > 1 else []
    q = lead + ["cc"]
    if upd[-1] == 1:
        q[-1] = "0"
    ok = [f"({v} < {n})" for v, n in zip(q, upd) if v != "0"]
    lines.append(f"{I}inside = ct.broadcast_to({' & '.join(ok) if ok else 'True'}, (BR, BL))")
    iq = [q[p.dim]] if p.per_dim else q
    # lanes outside the update space target -1: the bounds check of the write drops them
    lines.append(f"{I}iv = ct.where(inside, ct.gather({array_param(p.index)}, {tup(iq)}, padding_value=-1)"
                 f".astype(ct.int32), -1)")
    if p.wrap:  # (lanes outside the update space stay -1 only if the wrap skips them)
        lines.append(f"{I}iv = ct.where(inside & (iv < 0), iv + {p.out_shape[p.dim]}, iv)")
    tgt = list(q)
    tgt[p.dim] = "iv"
    lines.append(f"{I}upd = {_update(p, q, f'ct.{buf_dtype}')}")
    tgt = [f"ct.broadcast_to({t}, (BR, BL))" if t != "0" else "0" for t in tgt]
    if p.reduce == "sum":
        # relaxed: nothing is ordered by these adds (the default acq_rel orders every one of them)
        lines.append(f"{I}ct.atomic_add(BUF, {tup(tgt)}, upd, memory_order=ct.MemoryOrder.RELAXED)")
    else:
        lines.append(f"{I}ct.scatter(BUF, {tup(tgt)}, upd)")
    scat = "\n".join(lines)
    ugrid = -(-UR // BR) * nlb
    args = params[:-1] + [buf]
    scat_launch = (f"{I}ct.launch(torch.cuda.current_stream(), ({ugrid}, 1, 1), {kid}_scatter_kernel, "
                   f"({', '.join(args + [str(BR), str(BL)])}))")
    w: list[str] = []
    device = wrapper_head(spec, w)
    alloc_outputs(spec, device, w)
    kernels, names = [init, scat], [f"{kid}_init_kernel", f"{kid}_scatter_kernel"]
    if not direct:
        w.append(f"{I}{buf} = torch.empty({tuple(p.out_shape)!r}, dtype=torch.{buf_dtype}, device={device})")
    w += [init_launch([]), scat_launch]
    if not direct:  # 3. epilogue and cast
        out, out_launch, _ = tiled(spec, rec, epilogue, f"{kid}_kernel",
                                   lambda c: f"ct.gather(BUF, {tup(c.coords)})", ("BUF",))
        kernels.append(out)
        names.append(f"{kid}_kernel")
        w.append(out_launch([buf]))
    w.append(ret_outputs(spec))
    return module(spec, kernels, "\n".join(w), names,
                  [f"{rec.op}: atomic form ({p.j} updates per element): init {note}; updates tiled {BR} x {BL} "
                   f"with {'ct.atomic_add' if p.reduce == 'sum' else 'ct.scatter'}"
                   + ("" if direct else "; epilogue kernel over the buffer")])

