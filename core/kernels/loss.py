"""Loss kernels: pointwise losses, class-index losses (cross entropy, NLL) and row losses (cosine similarity,
pairwise distance, triplet margin, cosine embedding), with fused elementwise prologues and epilogues.

Three shapes of computation:
- pointwise (mse, l1, smooth_l1, huber, kl_div, hinge_embedding, binary_cross_entropy[_with_logits],
  margin_ranking, soft_margin, poisson_nll): one loss value per element of the broadcast operand shape. Operands
  with the full shape are read as flat coalesced tiles (`ct.load` on a 1-D view); broadcast ones are gathered by
  coordinates.
- class losses (cross_entropy_loss, nll_loss, nll_loss_nd, nll_loss2d): one value per sample; the input is viewed
  as (N, C, spatial...), a block owns BR samples and walks the classes in BC chunks with an online log-sum-exp
  (cross entropy; plain (N, C) logits come in as coalesced `ct.load` tiles, other layouts by coordinates), or
  gathers x[n, target, s] directly (NLL). weight, ignore_index and label_smoothing follow PyTorch (the mean divides
  by the summed weights of the non-ignored samples). Class-probability targets are unsupported.
- row losses: a block owns BR rows of the broadcast operands and walks the reduced dim in BD chunks,
  accumulating dot products / norms in float32.

Reductions (0 none, 1 mean, 2 sum) to a scalar are deterministic and two-stage: every block writes its float32
partial sums (loss, and the weight total for class losses) to a buffer; one finishing block adds them in a fixed
order, divides for the mean, applies the fused epilogue and stores. When one block covers everything, a single
kernel does both stages.
"""

from __future__ import annotations

import math

from ..specs import KernelSpec, OpRecord
from .base import KernelSource, Unsupported, pow2_at_least
from .expr import bind_args, float_literal, scalar_value
from .indexing import (MEMORY_TUNING, SideLoader, array_param, broadcast_index, decode, elementwise, guarded,
                       input_args, is_ref, module, out_param, output_vars, prod, scalar_param, split_anchor, tup)

I = "    "
POINTWISE = {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "hinge_embedding_loss",
             "binary_cross_entropy", "binary_cross_entropy_with_logits", "margin_ranking_loss", "soft_margin_loss",
             "poisson_nll_loss"}
CLASS = {"cross_entropy_loss", "nll_loss", "nll_loss_nd", "nll_loss2d"}
ROWS = {"cosine_similarity", "pairwise_distance", "triplet_margin_loss", "cosine_embedding_loss"}
# tensor operands of each loss, by schema name, in the order the formulas use them
_OPERANDS = {
    "mse_loss": ("self", "target"), "l1_loss": ("self", "target"), "smooth_l1_loss": ("self", "target"),
    "huber_loss": ("self", "target"), "kl_div": ("self", "target"), "hinge_embedding_loss": ("self", "target"),
    "binary_cross_entropy": ("self", "target", "weight"),
    "binary_cross_entropy_with_logits": ("self", "target", "weight", "pos_weight"),
    "margin_ranking_loss": ("input1", "input2", "target"), "soft_margin_loss": ("self", "target"),
    "poisson_nll_loss": ("input", "target"),
    "cosine_similarity": ("x1", "x2"), "pairwise_distance": ("x1", "x2"),
    "triplet_margin_loss": ("anchor", "positive", "negative"), "cosine_embedding_loss": ("input1", "input2"),
}


def _f(x: float) -> str:
    return float_literal(x)


def _num(a: dict, key: str, default: float) -> float:
    v = a.get(key)
    if v is None or not isinstance(v, (int, float, dict)):
        return default
    s = scalar_value(v)
    return default if s is None else float(s)


def _broadcast(shapes: list[list[int]]) -> list[int]:
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        s = [1] * (n - len(s)) + list(s)
        for i, v in enumerate(s):
            if v != 1:
                if out[i] not in (1, v):
                    raise Unsupported(f"loss operands {shapes} do not broadcast")
                out[i] = v
    return out


class _Plan:
    """What the wrapper and the kernels share: spec, operand shapes, views of the inputs, kernel code."""

    def __init__(self, spec: KernelSpec, prologue: list[OpRecord], rec: OpRecord, epilogue: list[OpRecord]):
        self.spec, self.prologue, self.rec, self.epilogue = spec, prologue, rec, epilogue
        self.args = bind_args(rec)
        self.inputs = {t.graph_value: t for t in spec.inputs}
        self.produced = {r.node: r for r in prologue}
        self.views: dict[str, str] = {}  # input name → wrapper expression of the array the kernels get
        red = self.args.get("reduction", 1)
        self.reduction = int(red) if isinstance(red, (int, float)) else 1
        if self.reduction not in (0, 1, 2):
            raise Unsupported(f"{rec.target}: reduction={red!r}")

    def shape_of(self, v) -> list[int]:
        if not is_ref(v):
            raise Unsupported(f"{self.rec.target}: expected a tensor operand, got {v!r}")
        ref = v["ref"]
        if ref in self.inputs:
            return list(self.inputs[ref].shape)
        if ref in self.produced:
            return list(self.produced[ref].output)
        raise Unsupported(f"{self.rec.target}: operand {ref} is not available in the kernel")

    def operand(self, key: str):
        v = self.args.get(key)
        return v if is_ref(v) else None


@guarded
def generate(spec: KernelSpec) -> KernelSource:
    prologue, rec, epilogue = split_anchor(spec, "loss")
    plan = _Plan(spec, prologue, rec, epilogue)
    if rec.op in POINTWISE:
        return _pointwise(plan)
    if rec.op in CLASS:
        return _class_loss(plan)
    if rec.op in ROWS:
        return _row_loss(plan)
    raise Unsupported(f"{rec.target}: no loss generator for this op")


# ---- shared pieces -----------------------------------------------------------------------------------------------
class _ValueSource:
    """Operand values for a tile: env (prologue results, already-loaded tiles) first, else a loader."""

    def __init__(self, plan: _Plan, env: dict[str, str], loader, lines: list[str], indent: str):
        self.plan, self.env, self.loader, self.lines, self.indent = plan, env, loader, lines, indent
        self.prologue_done = False

    def run_prologue(self):
        if not self.prologue_done:
            self.prologue_done = True
            elementwise(self.plan.prologue, self.env, self.loader, self.lines, self.indent)

    def __call__(self, v) -> str:
        if not is_ref(v):
            s = scalar_value(v)
            if s is None:
                raise Unsupported(f"{self.plan.rec.target}: missing operand")
            return _f(s)
        self.run_prologue()
        ref = v["ref"]
        if ref not in self.env:
            self.env[ref] = self.loader(ref)
        name = self.env[ref]
        return f"{name}.astype(ct.float32)" if name.startswith("eb_") else name


def _pointwise_formula(plan: _Plan, val, lines: list[str], ind: str) -> str:
    """Emit the per-element loss; returns its variable."""
    op, a = plan.rec.op, plan.args

    def emit(name, expr):
        lines.append(f"{ind}{name} = {expr}")
        return name

    def log1p(x, tag):
        u = emit(f"u_{tag}", f"1.0 + {x}")
        return f"ct.where({u} == 1.0, {x}, ct.log({u}) * ({x} / ({u} - 1.0)))"

    if op in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        x, y = val(a["self"]), val(a["target"])
        d = emit("dl", f"{x} - {y}")
        if op == "mse_loss":
            return emit("le", f"{d} * {d}")
        ad = emit("ad", f"ct.abs({d})")
        if op == "l1_loss":
            return ad
        if op == "smooth_l1_loss":
            beta = _num(a, "beta", 1.0)
            if beta == 0.0:
                return ad
            return emit("le", f"ct.where({ad} < {_f(beta)}, {ad} * {ad} * {_f(0.5 / beta)}, {ad} - {_f(0.5 * beta)})")
        delta = _num(a, "delta", 1.0)
        return emit("le", f"ct.where({ad} < {_f(delta)}, {ad} * {ad} * 0.5, ({ad} - {_f(0.5 * delta)}) * {_f(delta)})")
    if op == "kl_div":
        x, y = val(a["self"]), val(a["target"])
        if a.get("log_target"):
            return emit("le", f"ct.exp({y}) * ({y} - {x})")
        return emit("le", f"ct.where({y} == 0.0, 0.0, {y} * ct.log({y})) - {y} * {x}")
    if op == "hinge_embedding_loss":
        x, y = val(a["self"]), val(a["target"])
        margin = _num(a, "margin", 1.0)
        return emit("le", f"ct.where({y} != 1.0, ct.maximum({_f(margin)} - {x}, 0.0), 0.0) + "
                          f"ct.where({y} != -1.0, {x}, 0.0)")
    if op == "binary_cross_entropy":
        x, y = val(a["self"]), val(a["target"])
        le = emit("le", f"({y} - 1.0) * ct.maximum(ct.log(1.0 - {x}), -100.0) - {y} * ct.maximum(ct.log({x}), -100.0)")
        if plan.operand("weight"):
            le = emit("lw", f"{le} * {val(a['weight'])}")
        return le
    if op == "binary_cross_entropy_with_logits":
        x, y = val(a["self"]), val(a["target"])
        e = emit("en", f"ct.exp(-ct.abs({x}))")
        ls = emit("ls", f"ct.minimum({x}, 0.0) - ({log1p(e, 'ls')})")
        if plan.operand("pos_weight"):
            ls = emit("lsw", f"{ls} * (({val(a['pos_weight'])} - 1.0) * {y} + 1.0)")
        le = emit("le", f"(1.0 - {y}) * {x} - {ls}")
        if plan.operand("weight"):
            le = emit("lw", f"{le} * {val(a['weight'])}")
        return le
    if op == "margin_ranking_loss":
        x1, x2, y = val(a["input1"]), val(a["input2"]), val(a["target"])
        margin = _num(a, "margin", 0.0)
        return emit("le", f"ct.maximum(-{y} * ({x1} - {x2}) + {_f(margin)}, 0.0)")
    if op == "soft_margin_loss":
        x, y = val(a["self"]), val(a["target"])
        e = emit("en", f"ct.exp(-{x} * {y})")
        return emit("le", log1p(e, "sm"))
    if op == "poisson_nll_loss":
        x, y = val(a["input"]), val(a["target"])
        eps = _num(a, "eps", 1e-8)
        if a.get("log_input", True):
            le = emit("le", f"ct.exp({x}) - {y} * {x}")
        else:
            le = emit("le", f"{x} - {y} * ct.log({x} + {_f(eps)})")
        if a.get("full", False):
            st = f"{y} * ct.log({y}) - {y} + 0.5 * ct.log({y} * {_f(2 * math.pi)})"
            le = emit("lf", f"{le} + ct.where({y} > 1.0, {st}, 0.0)")
        return le
    raise Unsupported(f"{plan.rec.target}: no formula")


def _finish_lines(plan: _Plan, totals: list[str], count: float | None, lines: list[str], ind: str) -> None:
    """From (1,)-shaped float32 totals (loss sum[, weight sum]) to the stored scalar output(s) with epilogue."""
    spec, rec = plan.spec, plan.rec
    if plan.reduction == 1:
        denom = totals[1] if len(totals) > 1 else _f(float(count))
        lines.append(f"{ind}res = {totals[0]} / {denom}")
    else:
        lines.append(f"{ind}res = {totals[0]}")
    env = {rec.node: "res"}
    sides = SideLoader(spec, ["0"], [1], "(1,)", lines, ind)
    env = elementwise(plan.epilogue, env, sides, lines, ind)
    for o, var in output_vars(spec, env):
        if prod(o.shape) != 1:
            raise Unsupported(f"output {o.name} of shape {o.shape} from a reduced loss")
        lines.append(f"{ind}ct.store({out_param(o)}, index=(0,), "
                     f"tile=ct.broadcast_to({var}, (1,)).astype({out_param(o)}.dtype))")


def _kernel_params(plan: _Plan, extra: list[str]) -> str:
    return ", ".join(input_args(plan.spec) + extra)


def _wrapper(plan: _Plan, launches: list[tuple[str, int, list[str]]], partials: tuple[int, int] | None,
             out_views: dict[str, str]) -> str:
    """launch_<id>: bind inputs (with their kernel views), allocate outputs and partials, launch in order."""
    spec = plan.spec
    w = [f"def launch_{spec.id}({', '.join(t.name for t in spec.inputs)}):"]
    device = None
    for t in spec.inputs:
        if t.role == "scalar":
            w.append(f"{I}{scalar_param(t)} = {t.name}")
            continue
        device = device or f"{t.name}.device"
        view = plan.views.get(t.name) or (f"{t.name}.reshape(1)" if not t.shape else t.name)
        w.append(f"{I}{array_param(t)} = {view}")
    for o in spec.outputs:
        w.append(f"{I}{o.name} = torch.empty({tuple(o.shape)!r}, dtype=torch.{o.dtype}, device={device})")
        w.append(f"{I}{out_param(o)} = {out_views.get(o.name, o.name + '.reshape(-1)')}")
    if partials:
        w.append(f"{I}part = torch.empty({partials!r}, dtype=torch.float32, device={device})")
    for name, grid, args in launches:
        w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {name}, ({', '.join(args)}))")
    names = [o.name for o in spec.outputs]
    w.append(f"{I}return {', '.join(names)}")
    return "\n".join(w)


def _reduced_kernels(plan: _Plan, body_head: list[str], quantities: list[str], grid: int, count: float | None,
                     consts: list[tuple[str, int]]) -> tuple[list[str], list[tuple[str, int, list[str]]],
                                                            tuple[int, int] | None]:
    """Kernels (code), launches and partial-buffer shape for a loss reduced to a scalar. `body_head` are the lines
    of a kernel body that leave the block's float32 sums in the (1,)-shaped `quantities` variables."""
    spec, kid = plan.spec, plan.spec.id
    outs = [out_param(o) for o in spec.outputs]
    cparams = [f"{n}: ct.Constant[int]" for n, _ in consts]
    cargs = [str(v) for _, v in consts]
    nq = len(quantities)
    if grid == 1:
        lines = ["@ct.kernel", f"def {kid}_kernel({_kernel_params(plan, outs + cparams)}):"] + body_head
        _finish_lines(plan, quantities, count, lines, I)
        return ["\n".join(lines)], [(f"{kid}_kernel", 1, input_args(spec) + outs + cargs)], None
    part = ["@ct.kernel", f"def {kid}_partial({_kernel_params(plan, ['part'] + cparams)}):"] + body_head
    for q, var in enumerate(quantities):
        part.append(f"{I}ct.store(part, index=({q}, pid), tile=ct.reshape({var}, (1, 1)))")
    BG = pow2_at_least(grid, 16, 1024)
    fin = ["@ct.kernel", f"def {kid}_finish({_kernel_params(plan, ['part'] + outs)}):"]
    totals = []
    for q in range(nq):
        fin.append(f"{I}acc{q} = ct.zeros((1, {BG}), dtype=ct.float32)")
    fin.append(f"{I}for i in range({-(-grid // BG)}):")
    for q in range(nq):
        fin.append(f"{I}{I}acc{q} = acc{q} + ct.load(part, index=({q}, i), shape=(1, {BG}), "
                   f"padding_mode=ct.PaddingMode.ZERO)")
    for q in range(nq):
        fin.append(f"{I}tot{q} = ct.reshape(ct.sum(acc{q}), (1,))")
        totals.append(f"tot{q}")
    _finish_lines(plan, totals, count, fin, I)
    launches = [(f"{kid}_partial", grid, input_args(spec) + ["part"] + cargs),
                (f"{kid}_finish", 1, input_args(spec) + ["part"] + outs)]
    return ["\n".join(part), "\n".join(fin)], launches, (nq, grid)


def _store_rows(plan: _Plan, env: dict[str, str], out_shape: list[int], coords: list[str], tile: str,
                flat_len: str, index: str, lines: list[str], ind: str) -> None:
    """Per-element / per-row outputs (reduction none): epilogue, then a store of each output's flat view."""
    spec = plan.spec
    if plan.epilogue:
        sides = _CoordLoader(plan, coords, out_shape, tile, lines, ind)
        env = elementwise(plan.epilogue, env, sides, lines, ind)
    for o, var in output_vars(spec, env):
        if prod(o.shape) != prod(out_shape):
            raise Unsupported(f"output {o.name} of shape {o.shape} differs from the loss shape {out_shape}")
        lines.append(f"{ind}ct.store({out_param(o)}, index={index}, "
                     f"tile=ct.reshape(ct.broadcast_to({var}, {tile}), ({flat_len},)).astype({out_param(o)}.dtype))")


class _CoordLoader(SideLoader):
    """SideLoader that refuses inputs the wrapper passes in a reshaped view."""

    def __init__(self, plan: _Plan, coords, full_shape, tile, lines, ind):
        super().__init__(plan.spec, coords, full_shape, tile, lines, ind,
                         exclude=[t.graph_value for t in plan.spec.inputs if t.name in plan.views])


# ---- pointwise losses -------------------------------------------------------------------------------------------
def _pointwise(plan: _Plan) -> KernelSource:
    spec, rec, a = plan.spec, plan.rec, plan.args
    keys = [k for k in _OPERANDS[rec.op] if plan.operand(k)]
    E = _broadcast([plan.shape_of(a[k]) for k in keys])
    for r in plan.prologue:
        if list(r.output) != E and prod(r.output) != 1:
            raise Unsupported(f"prologue {r.op} of shape {r.output} inside a loss over {E}")
    N = prod(E)
    if N == 0:
        raise Unsupported("an empty loss")
    flat = {t.name for t in spec.inputs if t.role != "scalar" and list(t.shape) == E and len(E) > 0}
    for name in flat:
        plan.views[name] = f"{name}.reshape(-1)"
    BLOCK = pow2_at_least(N, 16, 2048)
    NT = -(-N // BLOCK)

    def body(lines: list[str], ind: str, tile_index: str) -> str:
        lines.append(f"{ind}flat = {tile_index} * BLOCK + ct.arange(BLOCK, dtype=ct.int32)")
        coords: list[str] = []

        def loader(value: str) -> str:
            t = plan.inputs.get(value)
            if t is None:
                raise Unsupported(f"operand {value} is not a kernel input")
            if t.role == "scalar":
                return scalar_param(t)
            var = f"ld_{t.name}"
            if t.name in flat:
                lines.append(f"{ind}{var} = ct.load({array_param(t)}, index=({tile_index},), shape=(BLOCK,), "
                             f"padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)")
            else:
                if not coords:
                    coords.extend(decode("flat", E, lines, ind, "e", bound_outer=True) if E else ["0"])
                idx = broadcast_index(t.shape, E or [1], coords, t.name)
                lines.append(f"{ind}{var} = ct.broadcast_to(ct.gather({array_param(t)}, {tup(idx)})"
                             f".astype(ct.float32), (BLOCK,))")
            return var

        env: dict[str, str] = {}
        val = _ValueSource(plan, env, loader, lines, ind)
        loss = _pointwise_formula(plan, val, lines, ind)
        return loss, env, coords

    if plan.reduction == 0:
        out_shape = list(rec.output)
        if out_shape != E:
            raise Unsupported(f"unreduced loss of shape {out_shape} over operands of shape {E}")
        lines = ["@ct.kernel",
                 f"def {spec.id}_kernel({_kernel_params(plan, [out_param(o) for o in spec.outputs])}, "
                 f"BLOCK: ct.Constant[int]):",
                 f"{I}pid = ct.bid(0)"]
        loss, env, coords = body(lines, I, "pid")
        env = dict(env)
        env[rec.node] = loss
        if plan.epilogue and not coords:
            coords.extend(decode("flat", E, lines, I, "e", bound_outer=True) if E else ["0"])
        _store_rows(plan, env, E or [1], coords or ["0"], "(BLOCK,)", "BLOCK", "(pid,)", lines, I)
        kernel = "\n".join(lines)
        outs = [out_param(o) for o in spec.outputs]
        wrapper = _wrapper(plan, [(f"{spec.id}_kernel", NT, input_args(spec) + outs + [str(BLOCK)])], None, {})
        return module(spec, [kernel], wrapper, [f"{spec.id}_kernel"],
                      [f"{rec.op} (reduction none): flat tiles of {BLOCK}"])

    G = min(NT, 1024)
    TPB = -(-NT // G)
    G = -(-NT // TPB)
    head = [f"{I}pid = ct.bid(0)", f"{I}acc = ct.zeros((BLOCK,), dtype=ct.float32)",
            f"{I}for j in range(pid * {TPB}, ct.minimum(pid * {TPB} + {TPB}, {NT})):" if G > 1 else
            f"{I}for j in range({NT}):"]
    loss, _, _ = body(head, I + I, "j")
    head.append(f"{I}{I}acc = acc + ct.where(flat < {N}, {loss}, 0.0)")
    head.append(f"{I}s0 = ct.reshape(ct.sum(acc), (1,))")
    kernels, launches, partials = _reduced_kernels(plan, head, ["s0"], G, float(N), [("BLOCK", BLOCK)])
    wrapper = _wrapper(plan, launches, partials, {})
    return module(spec, kernels, wrapper, [n for n, _, _ in launches],
                  [f"{rec.op}: {G} block(s) x {TPB} tile(s) of {BLOCK}, deterministic two-stage sum"])


# ---- class-index losses -----------------------------------------------------------------------------------------
def _class_loss(plan: _Plan) -> KernelSource:
    spec, rec, a = plan.spec, plan.rec, plan.args
    op = rec.op
    x_ref, t_ref = a.get("self"), a.get("target")
    xshape, tshape = plan.shape_of(x_ref), plan.shape_of(t_ref)
    tin = plan.inputs.get(t_ref["ref"])
    if tin is None or tin.dtype not in ("int64", "int32", "int16", "int8", "uint8"):
        raise Unsupported(f"{rec.target}: class-probability targets (only class indices are supported)")
    if len(xshape) == 1:
        N, C, dshape = 1, xshape[0], []
    else:
        N, C, dshape = xshape[0], xshape[1], xshape[2:]
    S = prod(dshape)
    R = N * S
    if prod(tshape) != R:
        raise Unsupported(f"{rec.target}: target shape {tshape} for input {xshape}")
    ig = a.get("ignore_index")
    ignore = int(ig) if isinstance(ig, (int, float)) else -100
    ls = _num(a, "label_smoothing", 0.0) if op == "cross_entropy_loss" else 0.0
    for r in plan.prologue:
        if list(r.output) != xshape:
            raise Unsupported(f"prologue {r.op} of shape {r.output} before {op}")
    plan.views[tin.name] = f"{tin.name}.reshape({R})"
    weight = plan.operand("weight")
    win = None
    if weight is not None:
        win = plan.inputs.get(weight["ref"])
        if win is None or win.shape != [C]:
            raise Unsupported(f"{rec.target}: class weight must be a ({C},) input")
    xin = plan.inputs.get(x_ref["ref"])
    # plain (N, C) logits of cross entropy without label smoothing: coalesced tile loads, a lane-wise sum of
    # exponentials (one row max per chunk, no per-chunk sum) and the target logit gathered once per row
    plain = op == "cross_entropy_loss" and len(xshape) == 2 and not plan.prologue and xin is not None
    fast = plain and not ls
    if fast:
        BC = pow2_at_least(C, 16, int(MEMORY_TUNING["ce_cols"]))
        BR = pow2_at_least(R, 1, max(1, int(MEMORY_TUNING["ce_tile_elems"]) // BC))
    else:
        BC = pow2_at_least(C, 16, 1024)
        BR = pow2_at_least(R, 1, min(256, max(1, 4096 // BC)) if op == "cross_entropy_loss" else 1024)
    G = -(-R // BR)
    ind, li = I, I + I
    lines = [f"{ind}pid = ct.bid(0)",
             f"{ind}rr = (pid * BR + ct.arange(BR, dtype=ct.int32))[:, None]",
             f"{ind}tgt = ct.gather({array_param(tin)}, rr).astype(ct.int32)"]
    # coordinates of the input's dims: (n, class, spatial...) with n, spatial from the sample index
    lead = [] if len(xshape) == 1 else (["rr"] if S == 1 else [f"(rr // {S})"])
    spatial = decode("rr", dshape, lines, ind, "sd", bound_outer=True) if dshape else []
    if dshape and S == 1:
        spatial = ["0"] * len(dshape)

    def values_at(cvar: str, tile: str, wind: str) -> str:
        """The loss input (prologue applied) at classes `cvar` of the block's samples, float32."""
        coords = lead + [cvar] + spatial
        loader = _CoordLoader(plan, coords, xshape, tile, lines, wind)
        val = _ValueSource(plan, {}, loader, lines, wind)
        return val(x_ref)

    wt = "1.0"
    if win is not None:
        lines.append(f"{ind}wt = ct.gather({array_param(win)}, tgt).astype(ct.float32)")
        wt = "wt"
    if fast:
        log2e = 1.4426950408889634
        lines += [f"{ind}xt = ct.gather({array_param(xin)}, (rr, tgt), padding_value=0).astype(ct.float32)",
                  f"{ind}m = ct.full((BR, 1), -math.inf, dtype=ct.float32)",
                  f"{ind}l = ct.zeros((BR, BC), dtype=ct.float32)",
                  f"{ind}for j in range({-(-C // BC)}):",
                  f"{li}xv = ct.load({array_param(xin)}, index=(pid, j), shape=(BR, BC), "
                  f"padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)",
                  f"{li}mn = ct.maximum(m, ct.max(xv, axis=1, keepdims=True))",
                  f"{li}l = l * ct.exp2((m - mn) * {log2e!r}) + ct.exp2(xv * {log2e!r} - mn * {log2e!r})",
                  f"{li}m = mn",
                  f"{ind}lse = m + ct.log(ct.sum(l, axis=1, keepdims=True))",
                  f"{ind}per = (lse - xt) * wt" if win is not None else f"{ind}per = lse - xt"]
    elif op == "cross_entropy_loss":
        lines += [f"{ind}m = ct.full((BR, 1), -math.inf, dtype=ct.float32)",
                  f"{ind}l = ct.zeros((BR, 1), dtype=ct.float32)",
                  f"{ind}xt = ct.zeros((BR, 1), dtype=ct.float32)"]
        if ls:
            lines.append(f"{ind}sx = ct.zeros((BR, 1), dtype=ct.float32)")
            if win is not None:
                lines.append(f"{ind}sw = ct.zeros((1, 1), dtype=ct.float32)")
        lines.append(f"{ind}for j in range({-(-C // BC)}):")
        lines.append(f"{li}cc = j * BC + ct.arange(BC, dtype=ct.int32)[None, :]")
        if plain:
            # plain (N, C) logits: coalesced tile loads, -inf past the last class / row
            lines.append(f"{li}xv = ct.load({array_param(xin)}, index=(pid, j), shape=(BR, BC), "
                         f"padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)")
        else:
            xv = values_at("cc", "(BR, BC)", li)
            lines.append(f"{li}xv = ct.where(cc < {C}, {xv}, -math.inf)")
        lines += [
                  f"{li}mn = ct.maximum(m, ct.max(xv, axis=1, keepdims=True))",
                  f"{li}l = l * ct.exp(m - mn) + ct.sum(ct.exp(xv - mn), axis=1, keepdims=True)",
                  f"{li}m = mn",
                  f"{li}xt = xt + ct.sum(ct.where(cc == tgt, xv, 0.0), axis=1, keepdims=True)"]
        if ls:
            if win is not None:
                lines += [f"{li}wc = ct.gather({array_param(win)}, cc).astype(ct.float32)",
                          f"{li}sx = sx + ct.sum(ct.where(cc < {C}, xv * wc, 0.0), axis=1, keepdims=True)",
                          f"{li}sw = sw + ct.sum(wc, axis=1, keepdims=True)"]
            else:
                lines.append(f"{li}sx = sx + ct.sum(ct.where(cc < {C}, xv, 0.0), axis=1, keepdims=True)")
        lines.append(f"{ind}lse = m + ct.log(l)")
        per = "(lse - xt) * wt" if win is not None else "lse - xt"
        if ls:
            smooth = "(lse * sw - sx)" if win is not None else f"(lse * {_f(float(C))} - sx)"
            per = f"({per}) * {_f(1.0 - ls)} + {smooth} * {_f(ls / C)}"
        lines.append(f"{ind}per = {per}")
    else:
        xt = values_at("tgt", "(BR, 1)", ind)
        lines.append(f"{ind}per = -{xt} * wt" if win is not None else f"{ind}per = -{xt}")
    lines.append(f"{ind}ok = (rr < {R}) & (tgt != {ignore})")
    lines.append(f"{ind}per = ct.where(ok, per, 0.0)")
    consts = [("BR", BR), ("BC", BC)] if op == "cross_entropy_loss" else [("BR", BR)]
    if plan.reduction == 0:
        out_shape = list(rec.output)
        if prod(out_shape) != R:
            raise Unsupported(f"unreduced {op} of shape {out_shape}")
        head = ["@ct.kernel", f"def {spec.id}_kernel({_kernel_params(plan, [out_param(o) for o in spec.outputs])}, "
                f"{', '.join(f'{c}: ct.Constant[int]' for c, _ in consts)}):"] + lines
        ocoords = decode("rr", out_shape, head, I, "oc", bound_outer=True) if out_shape else ["0"]
        _store_rows(plan, {rec.node: "per"}, out_shape or [1], ocoords, "(BR, 1)", "BR", "(pid,)", head, I)
        kernel = "\n".join(head)
        outs = [out_param(o) for o in spec.outputs]
        wrapper = _wrapper(plan, [(f"{spec.id}_kernel", G, input_args(spec) + outs + [str(v) for _, v in consts])],
                           None, {})
        return module(spec, [kernel], wrapper, [f"{spec.id}_kernel"], [f"{op} (reduction none): {BR} rows/block"])
    quantities = ["s0"]
    lines.append(f"{I}s0 = ct.reshape(ct.sum(per), (1,))")
    if plan.reduction == 1:
        lines.append(f"{I}s1 = ct.reshape(ct.sum(ct.where(ok, {wt}, 0.0)), (1,))")
        quantities.append("s1")
    kernels, launches, partials = _reduced_kernels(plan, lines, quantities, G, None, consts)
    wrapper = _wrapper(plan, launches, partials, {})
    return module(spec, kernels, wrapper, [n for n, _, _ in launches],
                  [f"{op}: {BR} samples x {BC} classes per block, online log-sum-exp, two-stage mean"])


# ---- row losses ---------------------------------------------------------------------------------------------------
def _row_loss(plan: _Plan) -> KernelSource:
    spec, rec, a = plan.spec, plan.rec, plan.args
    op = rec.op
    keys = [k for k in _OPERANDS[op] if plan.operand(k)]
    shapes = [plan.shape_of(a[k]) for k in keys]
    F = _broadcast(shapes)
    if not F:
        raise Unsupported(f"{op} of 0-d operands")
    if op == "cosine_similarity":
        dim = int(a.get("dim", 1))
        dim = dim + len(F) if dim < 0 else dim
    else:
        dim = len(F) - 1
    rows_shape = F[:dim] + F[dim + 1:]
    R, D = prod(rows_shape), F[dim]
    for r in plan.prologue:
        if list(r.output) not in (F, *shapes):
            raise Unsupported(f"prologue {r.op} of shape {r.output} before {op}")
    BD = pow2_at_least(D, 16, 512)
    BR = pow2_at_least(R, 1, max(1, 2048 // BD))
    G = -(-R // BR)
    ind, li = I, I + I
    lines = [f"{ind}pid = ct.bid(0)",
             f"{ind}rr = (pid * BR + ct.arange(BR, dtype=ct.int32))[:, None]"]
    rc = decode("rr", rows_shape, lines, ind, "r", bound_outer=True) if rows_shape else []
    coords_of = lambda dv: rc[:dim] + [dv] + rc[dim:]  # noqa: E731
    p = _num(a, "p", 2.0)
    eps = _num(a, "eps", 1e-6 if op != "cosine_similarity" else 1e-8)
    if op in ("cosine_similarity", "cosine_embedding_loss"):
        accs = {"s12": None, "s11": None, "s22": None}
    elif op == "pairwise_distance":
        accs = {"n12": None}
    else:
        accs = {"nap": None, "nan_": None}
        if a.get("swap"):
            accs["npn"] = None
    for name in accs:
        init = ("ct.full((BR, BD), -math.inf, dtype=ct.float32)" if p == math.inf
                else "ct.zeros((BR, BD), dtype=ct.float32)")
        lines.append(f"{ind}{name} = {init}")
    lines.append(f"{ind}for j in range({-(-D // BD)}):")
    lines.append(f"{li}dd = j * BD + ct.arange(BD, dtype=ct.int32)[None, :]")
    lines.append(f"{li}dok = (dd < {D}) & (rr < {R})")
    coords = coords_of("dd")

    def loader(value: str) -> str:
        t = plan.inputs.get(value)
        if t is None:
            raise Unsupported(f"operand {value} is not a kernel input")
        if t.role == "scalar":
            return scalar_param(t)
        idx = broadcast_index(t.shape, F, coords, t.name)
        var = f"ld_{t.name}"
        lines.append(f"{li}{var} = ct.broadcast_to(ct.gather({array_param(t)}, {tup(idx)}).astype(ct.float32), "
                     f"(BR, BD))")
        return var

    val = _ValueSource(plan, {}, loader, lines, li)
    ops = [val(a[k]) for k in keys]

    def pnorm_acc(acc: str, diff: str):
        dv = f"ct.where(dok, {diff} + {_f(eps)}, 0.0)"
        lines.append(f"{li}dv_{acc} = {dv}")
        d = f"dv_{acc}"
        if p == 2.0:
            lines.append(f"{li}{acc} = {acc} + {d} * {d}")
        elif p == 1.0:
            lines.append(f"{li}{acc} = {acc} + ct.abs({d})")
        elif p == math.inf:
            lines.append(f"{li}{acc} = ct.maximum({acc}, ct.where(dok, ct.abs({d}), -math.inf))")
        elif p == 0.0:
            lines.append(f"{li}{acc} = {acc} + ct.where({d} != 0.0, 1.0, 0.0)")
        elif p > 0:
            lines.append(f"{li}{acc} = {acc} + ct.where(dok, ct.pow(ct.abs({d}), {_f(p)}), 0.0)")
        else:
            raise Unsupported(f"{op}: p={p}")

    def pnorm_final(acc: str) -> str:
        if p == math.inf:
            return f"ct.max({acc}, axis=1, keepdims=True)"
        s = f"ct.sum({acc}, axis=1, keepdims=True)"
        if p == 2.0:
            return f"ct.sqrt({s})"
        if p in (1.0, 0.0):
            return s
        return f"ct.pow({s}, {_f(1.0 / p)})"

    if op in ("cosine_similarity", "cosine_embedding_loss"):
        x1, x2 = ops
        lines += [f"{li}u1 = ct.where(dok, {x1}, 0.0)", f"{li}u2 = ct.where(dok, {x2}, 0.0)",
                  f"{li}s12 = s12 + u1 * u2", f"{li}s11 = s11 + u1 * u1", f"{li}s22 = s22 + u2 * u2"]
        lines += [f"{ind}t12 = ct.sum(s12, axis=1, keepdims=True)",
                  f"{ind}t11 = ct.sum(s11, axis=1, keepdims=True)",
                  f"{ind}t22 = ct.sum(s22, axis=1, keepdims=True)"]
        if op == "cosine_similarity":
            lines.append(f"{ind}per = t12 / (ct.maximum(ct.sqrt(t11), {_f(eps)}) * "
                         f"ct.maximum(ct.sqrt(t22), {_f(eps)}))")
        else:
            y = plan.operand("target")
            if y is None:
                raise Unsupported("cosine_embedding_loss without a target tensor")
            yt = plan.inputs.get(y["ref"])
            if yt is None:
                raise Unsupported("cosine_embedding_loss target computed in the kernel")
            yidx = broadcast_index(yt.shape, rows_shape or [1], rc or ["0"], yt.name)
            margin = _num(a, "margin", 0.0)
            lines += [f"{ind}yv = ct.gather({array_param(yt)}, {tup(yidx)}).astype(ct.float32)",
                      f"{ind}cs = t12 / ct.sqrt((t11 + 1e-12) * (t22 + 1e-12))",
                      f"{ind}per = ct.where(yv == 1.0, 1.0 - cs, 0.0) + "
                      f"ct.where(yv == -1.0, ct.maximum(cs - {_f(margin)}, 0.0), 0.0)"]
    elif op == "pairwise_distance":
        x1, x2 = ops
        pnorm_acc("n12", f"{x1} - {x2}")
        lines.append(f"{ind}per = {pnorm_final('n12')}")
    else:
        an, po, ne = ops
        pnorm_acc("nap", f"{an} - {po}")
        pnorm_acc("nan_", f"{an} - {ne}")
        if a.get("swap"):
            pnorm_acc("npn", f"{po} - {ne}")
        lines.append(f"{ind}dpos = {pnorm_final('nap')}")
        lines.append(f"{ind}dneg = {pnorm_final('nan_')}")
        if a.get("swap"):
            lines.append(f"{ind}dneg = ct.minimum(dneg, {pnorm_final('npn')})")
        margin = _num(a, "margin", 1.0)
        lines.append(f"{ind}per = ct.maximum({_f(margin)} + dpos - dneg, 0.0)")
    per_row_output = op in ("cosine_similarity", "pairwise_distance") or plan.reduction == 0
    consts = [("BR", BR), ("BD", BD)]
    if per_row_output:
        out_shape = list(rec.output)
        if prod(out_shape) != R:
            raise Unsupported(f"{op}: output shape {out_shape} for {R} rows")
        head = ["@ct.kernel", f"def {spec.id}_kernel({_kernel_params(plan, [out_param(o) for o in spec.outputs])}, "
                f"BR: ct.Constant[int], BD: ct.Constant[int]):"] + lines
        ocoords = decode("rr", out_shape, head, I, "oc") if out_shape else ["0"]
        _store_rows(plan, {rec.node: "per"}, out_shape or [1], ocoords, "(BR, 1)", "BR", "(pid,)", head, I)
        kernel = "\n".join(head)
        outs = [out_param(o) for o in spec.outputs]
        wrapper = _wrapper(plan, [(f"{spec.id}_kernel", G, input_args(spec) + outs + [str(BR), str(BD)])], None, {})
        return module(spec, [kernel], wrapper, [f"{spec.id}_kernel"], [f"{op}: {BR} rows x {BD} per chunk"])
    lines.append(f"{I}s0 = ct.reshape(ct.sum(ct.where(rr < {R}, per, 0.0)), (1,))")
    kernels, launches, partials = _reduced_kernels(plan, lines, ["s0"], G, float(R), consts)
    wrapper = _wrapper(plan, launches, partials, {})
    return module(spec, kernels, wrapper, [n for n, _, _ in launches],
                  [f"{op}: {BR} rows x {BD} per chunk, two-stage {'mean' if plan.reduction == 1 else 'sum'}"])
