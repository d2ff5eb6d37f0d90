"""Class-index losses (cross_entropy_loss, nll_loss, nll_loss_nd, nll_loss2d): one value per sample. The input is
viewed as (N, C, spatial...); a block owns BR samples and walks the classes in BC chunks with an online
log-sum-exp (cross entropy; plain (N, C) logits come in as coalesced `ct.load` tiles, other layouts by
coordinates), or gathers x[n, target, s] directly (NLL). weight, ignore_index and label_smoothing follow PyTorch
(the mean divides by the summed weights of the non-ignored samples). Class-probability targets are unsupported."""

from __future__ import annotations

from .base import KernelSource, Unsupported, off_16_bytes, pow2_at_least
from .expr_math import fast_exp
from .indexing import MEMORY_TUNING, array_param, decode, prod
from .loss_output import per_row_module, reduced_module
from .loss_plan import I, CoordLoader, LossPlan, ValueSource, lit, num_arg


def ce_exp(x: str) -> str:
    """exp(x) in the class loop: ct.exp, or with MEMORY_TUNING["ce_exp_ftz"] ct.exp2 flushing denormal results."""
    return fast_exp(x, exp2=True) if MEMORY_TUNING["ce_exp_ftz"] else f"ct.exp({x})"


def flat_rows(xin, N: int, C: int, BR: int, BC: int) -> bool:
    """Whether the plain logits' class loop reads aligned tiles of the flat tensor (MEMORY_TUNING["ce_flat"]): one
    row per block, rows whose stride is not a multiple of 16 bytes (50257 classes: every tile load of the (N, C)
    view is 16 bits at a time in sm_90 SASS), flat indices within int32. (tileiras vectorizes the flat view only
    when its length is a multiple of 16 elements: otherwise the tiles come from that prefix and the last row's
    elements past it are gathered after the loop.)"""
    return (bool(MEMORY_TUNING["ce_flat"]) and xin.dtype in ("float32", "float16", "bfloat16") and BR == 1
            and off_16_bytes(xin.dtype, C) and N * C + 2 * BC < 2 ** 31)


def class_loss(plan: LossPlan) -> KernelSource:
    rec, a = plan.rec, plan.args
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
    ls = num_arg(a, "label_smoothing", 0.0) if op == "cross_entropy_loss" else 0.0
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
        loader = CoordLoader(plan, coords, xshape, tile, lines, wind)
        val = ValueSource(plan, {}, loader, lines, wind)
        return val(x_ref)

    wt = "1.0"
    if win is not None:
        lines.append(f"{ind}wt = ct.gather({array_param(win)}, tgt).astype(ct.float32)")
        wt = "wt"
    if fast:
        log2e = 1.4426950408889634
        lat = MEMORY_TUNING["ce_latency"]
        hint = f", latency={int(lat)}" if lat else ""
        ftz = ", flush_to_zero=True" if MEMORY_TUNING["ce_exp_ftz"] else ""
        load = (f"{li}xv = ct.load({array_param(xin)}, index=(pid, j), shape=(BR, BC), "
                f"padding_mode=ct.PaddingMode.NEG_INF{hint}).astype(ct.float32)")
        nchunks = -(-C // BC)
        tail_head: list[str] = []  # after the loop, the lines loading the elements past a flat prefix into xv
        if flat_rows(xin, N, C, BR, BC):
            # rows off 16-byte alignment: the row's span of aligned tiles of the flat logits, masked to the row
            # (the tiles at its ends are shared with the neighbouring rows, read again from L2)
            plan.views[xin.name] = f"{xin.name}.reshape(-1)"
            NT = -(-(N * C) // BC)
            nchunks = (C + 2 * BC - 2) // BC  # tiles a row can touch
            lines += [f"{ind}start = pid * {C}",
                      f"{ind}t0 = start // BC",
                      f"{ind}xt = ct.gather({array_param(xin)}, rr * {C} + tgt, padding_value=0).astype(ct.float32)"]
            tail = (N * C) % 16
            src = array_param(xin)
            if tail:  # the tiles from the prefix of a multiple of 16 elements (vectorized), the rest gathered
                P = N * C - tail
                src = f"p_{xin.name}"
                plan.extra_arrays.append((src, f"{array_param(xin)}[:{P}]"))
                tail_head = [f"{ind}if start + {C} > {P}:",  # (the last row)
                             f"{li}ff = {P} + ct.arange(BC, dtype=ct.int32)[None, :]",
                             f"{li}xv = ct.gather({array_param(xin)}, ff, mask=ff < {N * C}, "
                             "padding_value=-math.inf).astype(ct.float32)",
                             f"{li}xv = ct.where(ff - start >= 0, xv, -math.inf)"]
            load = "\n".join([
                f"{li}xv = ct.reshape(ct.load({src}, index=(ct.minimum(t0 + j, {NT - 1}),), "
                f"shape=(BC,), padding_mode=ct.PaddingMode.NEG_INF{hint}), (1, BC)).astype(ct.float32)",
                f"{li}ff = (t0 + j) * BC + ct.arange(BC, dtype=ct.int32)[None, :] - start",
                f"{li}xv = ct.where((ff >= 0) & (ff < {C}), xv, -math.inf)"])
        else:
            lines.append(f"{ind}xt = ct.gather({array_param(xin)}, (rr, tgt), padding_value=0).astype(ct.float32)")
        if MEMORY_TUNING["ce_lane_max"]:
            # per-lane running max (log2 units) and sum; the lowest finite float as the start keeps x - m finite
            # for -inf padding (e = 0) and a lane that never sees a finite logit adds nothing at the end
            init = [f"{ind}m = ct.full((BR, BC), {lit(-3.4028234663852886e38)}, dtype=ct.float32)",
                    f"{ind}l = ct.zeros((BR, BC), dtype=ct.float32)"]
            update = [f"{li}x2 = xv * {log2e!r}",
                      f"{li}e = ct.exp2(-ct.abs(x2 - m){ftz})",
                      f"{li}l = ct.where(x2 > m, l * e + 1.0, l + e)",
                      f"{li}m = ct.maximum(m, x2)"]
            final = [f"{ind}mr = ct.max(m, axis=1, keepdims=True)",
                     f"{ind}lse = (mr + ct.log2(ct.sum(l * ct.exp2(m - mr{ftz}), axis=1, keepdims=True))) * "
                     f"{1.0 / log2e!r}"]
        else:
            init = [f"{ind}m = ct.full((BR, 1), -math.inf, dtype=ct.float32)",
                    f"{ind}l = ct.zeros((BR, BC), dtype=ct.float32)"]
            # (mr: the new max, 0 while a row has seen only -inf: exp(-inf - -inf) would make its sum NaN)
            update = [f"{li}mn = ct.maximum(m, ct.max(xv, axis=1, keepdims=True))",
                      f"{li}mr = ct.where(mn == -math.inf, 0.0, mn)",
                      f"{li}l = l * ct.exp2((m - mr) * {log2e!r}{ftz}) + "
                      f"ct.exp2(xv * {log2e!r} - mr * {log2e!r}{ftz})",
                      f"{li}m = mn"]
            final = [f"{ind}lse = m + ct.log(ct.sum(l, axis=1, keepdims=True))"]
        lines += init + [f"{ind}for j in range({nchunks}):", load] + update
        lines += (tail_head + update if tail_head else []) + final
        lines.append(f"{ind}per = (lse - xt) * wt" if win is not None else f"{ind}per = lse - xt")
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
                  f"{li}mr = ct.where(mn == -math.inf, 0.0, mn)",
                  f"{li}l = l * {ce_exp('m - mr')} + ct.sum({ce_exp('xv - mr')}, axis=1, keepdims=True)",
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
            smooth = "(lse * sw - sx)" if win is not None else f"(lse * {lit(float(C))} - sx)"
            per = f"({per}) * {lit(1.0 - ls)} + {smooth} * {lit(ls / C)}"
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
        return per_row_module(plan, lines, out_shape, consts, G, f"{op} (reduction none): {BR} rows/block",
                              bound_outer=True)
    quantities = ["s0"]
    lines.append(f"{I}s0 = ct.reshape(ct.sum(per), (1,))")
    if plan.reduction == 1:
        lines.append(f"{I}s1 = ct.reshape(ct.sum(ct.where(ok, {wt}, 0.0)), (1,))")
        quantities.append("s1")
    return reduced_module(plan, lines, quantities, G, None, consts,
                          f"{op}: {BR} samples x {BC} classes per block, online log-sum-exp, two-stage mean")
