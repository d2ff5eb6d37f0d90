"""Pointwise losses (mse, l1, smooth_l1, huber, kl_div, hinge_embedding, binary_cross_entropy[_with_logits],
margin_ranking, soft_margin, poisson_nll): one loss value per element of the broadcast operand shape, in flat
BLOCK-element tiles. Operands with the full shape are read as coalesced tiles (`ct.load` on a 1-D view); broadcast
ones are gathered by coordinates. Reduction none stores each tile through the epilogue; mean / sum accumulate
the tiles of each block and finish in two stages (loss_output)."""

from __future__ import annotations

import math

from .base import KernelSource, Unsupported, pow2_at_least
from .indexing import array_param, broadcast_index, decode, out_param, prod, scalar_param, tup
from .loss_output import kernel_head, reduced_module, store_rows, unreduced_module
from .loss_plan import I, OPERANDS, LossPlan, ValueSource, broadcast_shapes, lit, num_arg


def pointwise_formula(plan: LossPlan, val, lines: list[str], ind: str) -> str:
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
            beta = num_arg(a, "beta", 1.0)
            if beta == 0.0:
                return ad
            return emit("le", f"ct.where({ad} < {lit(beta)}, {ad} * {ad} * {lit(0.5 / beta)}, "
                              f"{ad} - {lit(0.5 * beta)})")
        delta = num_arg(a, "delta", 1.0)
        return emit("le", f"ct.where({ad} < {lit(delta)}, {ad} * {ad} * 0.5, "
                          f"({ad} - {lit(0.5 * delta)}) * {lit(delta)})")
    if op == "kl_div":
        x, y = val(a["self"]), val(a["target"])
        if a.get("log_target"):
            return emit("le", f"ct.exp({y}) * ({y} - {x})")
        return emit("le", f"ct.where({y} == 0.0, 0.0, {y} * ct.log({y})) - {y} * {x}")
    if op == "hinge_embedding_loss":
        x, y = val(a["self"]), val(a["target"])
        margin = num_arg(a, "margin", 1.0)
        return emit("le", f"ct.where({y} != 1.0, ct.maximum({lit(margin)} - {x}, 0.0), 0.0) + "
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
        margin = num_arg(a, "margin", 0.0)
        return emit("le", f"ct.maximum(-{y} * ({x1} - {x2}) + {lit(margin)}, 0.0)")
    if op == "soft_margin_loss":
        x, y = val(a["self"]), val(a["target"])
        e = emit("en", f"ct.exp(-{x} * {y})")
        return emit("le", log1p(e, "sm"))
    if op == "poisson_nll_loss":
        x, y = val(a["input"]), val(a["target"])
        eps = num_arg(a, "eps", 1e-8)
        if a.get("log_input", True):
            le = emit("le", f"ct.exp({x}) - {y} * {x}")
        else:
            le = emit("le", f"{x} - {y} * ct.log({x} + {lit(eps)})")
        if a.get("full", False):
            st = f"{y} * ct.log({y}) - {y} + 0.5 * ct.log({y} * {lit(2 * math.pi)})"
            le = emit("lf", f"{le} + ct.where({y} > 1.0, {st}, 0.0)")
        return le
    raise Unsupported(f"{plan.rec.target}: no formula")


def pointwise_loss(plan: LossPlan) -> KernelSource:
    spec, rec, a = plan.spec, plan.rec, plan.args
    keys = [k for k in OPERANDS[rec.op] if plan.operand(k)]
    E = broadcast_shapes([plan.shape_of(a[k]) for k in keys])
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
            t = plan.input_of(value)
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
        val = ValueSource(plan, env, loader, lines, ind)
        loss = pointwise_formula(plan, val, lines, ind)
        return loss, env, coords

    if plan.reduction == 0:
        out_shape = list(rec.output)
        if out_shape != E:
            raise Unsupported(f"unreduced loss of shape {out_shape} over operands of shape {E}")
        consts = [("BLOCK", BLOCK)]
        lines = kernel_head(plan, [out_param(o) for o in spec.outputs], consts) + [f"{I}pid = ct.bid(0)"]
        loss, env, coords = body(lines, I, "pid")
        env = dict(env)
        env[rec.node] = loss
        if plan.epilogue and not coords:
            coords.extend(decode("flat", E, lines, I, "e", bound_outer=True) if E else ["0"])
        store_rows(plan, env, E or [1], coords or ["0"], "(BLOCK,)", "BLOCK", "(pid,)", lines, I)
        return unreduced_module(plan, lines, consts, NT, f"{rec.op} (reduction none): flat tiles of {BLOCK}")

    G = min(NT, 1024)
    TPB = -(-NT // G)
    G = -(-NT // TPB)
    head = [f"{I}pid = ct.bid(0)", f"{I}acc = ct.zeros((BLOCK,), dtype=ct.float32)",
            f"{I}for j in range(pid * {TPB}, ct.minimum(pid * {TPB} + {TPB}, {NT})):" if G > 1 else
            f"{I}for j in range({NT}):"]
    loss, _, _ = body(head, I + I, "j")
    head.append(f"{I}{I}acc = acc + ct.where(flat < {N}, {loss}, 0.0)")
    head.append(f"{I}s0 = ct.reshape(ct.sum(acc), (1,))")
    return reduced_module(plan, head, ["s0"], G, float(N), [("BLOCK", BLOCK)],
                          f"{rec.op}: {G} block(s) x {TPB} tile(s) of {BLOCK}, deterministic two-stage sum")
