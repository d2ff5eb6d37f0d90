"""Row losses (cosine_similarity, pairwise_distance, triplet_margin_loss, cosine_embedding_loss): a block owns BR
rows of the broadcast operands and walks the reduced dim in BD chunks, accumulating dot products / p-norms in
float32; per-row results are stored (similarities, distances, reduction none) or summed in two stages."""

from __future__ import annotations

import math

from .base import KernelSource, Unsupported, pow2_at_least
from .indexing import array_param, broadcast_index, decode, prod, scalar_param, tup
from .loss_output import per_row_module, reduced_module
from .loss_plan import I, OPERANDS, LossPlan, ValueSource, broadcast_shapes, lit, num_arg


def row_loss(plan: LossPlan) -> KernelSource:
    rec, a = plan.rec, plan.args
    op = rec.op
    keys = [k for k in OPERANDS[op] if plan.operand(k)]
    shapes = [plan.shape_of(a[k]) for k in keys]
    F = broadcast_shapes(shapes)
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
    p = num_arg(a, "p", 2.0)
    eps = num_arg(a, "eps", 1e-6 if op != "cosine_similarity" else 1e-8)
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
        t = plan.input_of(value)
        if t.role == "scalar":
            return scalar_param(t)
        idx = broadcast_index(t.shape, F, coords, t.name)
        var = f"ld_{t.name}"
        lines.append(f"{li}{var} = ct.broadcast_to(ct.gather({array_param(t)}, {tup(idx)}).astype(ct.float32), "
                     f"(BR, BD))")
        return var

    val = ValueSource(plan, {}, loader, lines, li)
    ops = [val(a[k]) for k in keys]

    def pnorm_acc(acc: str, diff: str):
        dv = f"ct.where(dok, {diff} + {lit(eps)}, 0.0)"
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
            lines.append(f"{li}{acc} = {acc} + ct.where(dok, ct.pow(ct.abs({d}), {lit(p)}), 0.0)")
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
        return f"ct.pow({s}, {lit(1.0 / p)})"

    if op in ("cosine_similarity", "cosine_embedding_loss"):
        x1, x2 = ops
        lines += [f"{li}u1 = ct.where(dok, {x1}, 0.0)", f"{li}u2 = ct.where(dok, {x2}, 0.0)",
                  f"{li}s12 = s12 + u1 * u2", f"{li}s11 = s11 + u1 * u1", f"{li}s22 = s22 + u2 * u2"]
        lines += [f"{ind}t12 = ct.sum(s12, axis=1, keepdims=True)",
                  f"{ind}t11 = ct.sum(s11, axis=1, keepdims=True)",
                  f"{ind}t22 = ct.sum(s22, axis=1, keepdims=True)"]
        if op == "cosine_similarity":
            lines.append(f"{ind}per = t12 / (ct.maximum(ct.sqrt(t11), {lit(eps)}) * "
                         f"ct.maximum(ct.sqrt(t22), {lit(eps)}))")
        else:
            y = plan.operand("target")
            if y is None:
                raise Unsupported("cosine_embedding_loss without a target tensor")
            yt = plan.inputs.get(y["ref"])
            if yt is None:
                raise Unsupported("cosine_embedding_loss target computed in the kernel")
            yidx = broadcast_index(yt.shape, rows_shape or [1], rc or ["0"], yt.name)
            margin = num_arg(a, "margin", 0.0)
            lines += [f"{ind}yv = ct.gather({array_param(yt)}, {tup(yidx)}).astype(ct.float32)",
                      f"{ind}cs = t12 / ct.sqrt((t11 + 1e-12) * (t22 + 1e-12))",
                      f"{ind}per = ct.where(yv == 1.0, 1.0 - cs, 0.0) + "
                      f"ct.where(yv == -1.0, ct.maximum(cs - {lit(margin)}, 0.0), 0.0)"]
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
        margin = num_arg(a, "margin", 1.0)
        lines.append(f"{ind}per = ct.maximum({lit(margin)} + dpos - dneg, 0.0)")
    per_row_output = op in ("cosine_similarity", "pairwise_distance") or plan.reduction == 0
    consts = [("BR", BR), ("BD", BD)]
    if per_row_output:
        out_shape = list(rec.output)
        if prod(out_shape) != R:
            raise Unsupported(f"{op}: output shape {out_shape} for {R} rows")
        return per_row_module(plan, lines, out_shape, consts, G, f"{op}: {BR} rows x {BD} per chunk",
                              bound_outer=False)
    lines.append(f"{I}s0 = ct.reshape(ct.sum(ct.where(rr < {R}, per, 0.0)), (1,))")
    return reduced_module(plan, lines, ["s0"], G, float(R), consts,
                          f"{op}: {BR} rows x {BD} per chunk, two-stage {'mean' if plan.reduction == 1 else 'sum'}")
