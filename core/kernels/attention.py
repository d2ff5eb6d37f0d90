"""Attention kernels: scaled_dot_product_attention as a flash-attention style cuTile kernel.

One block computes a (BM, Ev) tile of the output for one (batch, head): it keeps the query tile in registers and
loops over key/value tiles of BN positions, computing S = Q K^T with `ct.mma` (float32 accumulation), applying the
scale, the masks and an online softmax in base 2 (running max m, running sum l, rescaled accumulator), then
accumulating P V with `ct.mma` (float32 inputs: both products in split TF32, gemm_common.score_lines / pv_lines).
Head dims are padded to powers of two (zero padding adds nothing to the dot products); key positions past the
sequence end are masked. Supported: any sequence lengths, head dim <= 256 (value head dim may differ), is_causal
(top-left aligned, as PyTorch: query i sees keys j <= i; key tiles past the diagonal are skipped), attn_mask bool
(True = attend) or float (added to the scores) broadcast over batch, heads, queries or keys, explicit scale,
grouped-query attention (enable_gqa), fused elementwise epilogues. Rows whose keys are all masked give 0 (PyTorch's
safe softmax). dropout_p > 0 is not supported (it is random).
"""

from __future__ import annotations

import math

from ..specs import KernelSpec
from .base import KernelSource, Unsupported, pow2_at_least
from .expr import bind_args, scalar_value
from .gemm_common import TILES, kernel_decorator, pv_lines, score_lines
from .indexing import (SideLoader, array_param, elementwise, guarded, input_args, input_for, is_ref, module,
                       out_param, output_vars, scalar_param, split_anchor)

I = "    "
LOG2E = 1.0 / math.log(2.0)


def _as4d(name: str, shape: list[int]) -> tuple[str, list[int]]:
    """A 4-D (B, H, L, E) view expression of a (*batch, L, E) tensor, with its shape."""
    r = len(shape)
    if r == 4:
        return name, list(shape)
    if r == 3:
        return f"{name}.unsqueeze(1)", [shape[0], 1, shape[1], shape[2]]
    if r == 2:
        return f"{name}.reshape(1, 1, {shape[0]}, {shape[1]})", [1, 1] + list(shape)
    if r > 4:
        lead = math.prod(shape[:-3])
        return f"{name}.reshape({lead}, {shape[-3]}, {shape[-2]}, {shape[-1]})", [lead] + list(shape[-3:])
    raise Unsupported(f"attention operand of rank {r}")


def head_transpose(ops: list) -> tuple[list, object | None]:
    """(ops, None), or (ops without it, the op) when the kernel ends in the transpose(1, 2) of its rank-4 result
    that fusion absorbs (fusion._absorb_head_transpose): the kernel then writes the (B, L, H, D) tensor."""
    if ops and ops[-1].op == "transpose" and len(ops[-1].output) == 4 and is_ref(ops[-1].args[0]):
        return ops[:-1], ops[-1]
    return ops, None


def output_views(spec: KernelSpec, env: dict[str, str], out_shape: list[int], head_t) -> list[tuple[object, str, str]]:
    """(output, its tile variable, the (B, H, L, E) view the kernel stores through) for each spec output: the
    output itself (_as4d), or for the head-transposed result its transpose(1, 2), a strided view of the
    (B, L, H, E) tensor it is allocated as."""
    if head_t is not None:
        src = head_t.args[0]["ref"]
        if src not in env:
            raise Unsupported(f"{head_t.target}: transposes {src}, not the attention result")
        env = {**env, head_t.node: env[src]}
    out = []
    for o, var in output_vars(spec, env):
        shape, view = out_shape, _as4d(o.name, out_shape)[0]
        if head_t is not None and (o.graph_value or o.name) == head_t.node:
            shape, view = [out_shape[0], out_shape[2], out_shape[1], out_shape[3]], f"{o.name}.transpose(1, 2)"
        if list(o.shape) != list(shape):
            raise Unsupported(f"output {o.name} {o.shape} differs from the attention output {shape}")
        out.append((o, var, view))
    return out


def tiling(L: int, S: int, DP: int, DVP: int, dtype: str, masked: bool = False) -> tuple[int, int, int | None, int]:
    """(BM queries, BN keys, worker warps or None, occupancy) of a flash-attention kernel from gemm_common.TILES, by
    padded head dim (float32: 64x64, 64x32 past 128), the tiles shrunk to L and S. fp16/bf16 sequences of at most
    "attn_short_keys" keys take "attn_short_d64" / "attn_short_d128": the long-sequence tiles leave a short
    sequence's blocks too few and too long-lived to hide their latency. Unmasked ones (no causal mask, no mask or
    side input in the scores) over more than "attn_long_keys" keys take "attn_d64_long" / "attn_d128_long"."""
    wide = max(DP, DVP)
    occupancy = TILES["attn_occupancy"]
    if dtype == "float32":
        bm, bn = (64, 64) if wide <= 128 else (64, 32)
    elif wide <= 128 and S <= TILES["attn_short_keys"]:
        bm, bn, occupancy = TILES["attn_short_d64" if wide <= 64 else "attn_short_d128"]
    elif wide <= 128 and S > TILES["attn_long_keys"] and not masked:
        bm, bn, occupancy = TILES["attn_d64_long" if wide <= 64 else "attn_d128_long"]
    elif wide <= 64:
        (bm, bn), occupancy = TILES["attn_d64"], TILES["attn_d64_occupancy"]
    elif wide <= 128:
        bm, bn = TILES["attn_d128"]
    else:
        bm, bn = TILES["attn_d256"]
    bm, bn = min(bm, pow2_at_least(L, 16)), min(bn, pow2_at_least(S, 16))
    warps = worker_warps(bm, bn, dtype)
    return bm, bn, warps, 1 if wide > 128 or warps else occupancy


def worker_warps(bm: int, bn: int, dtype: str) -> int | None:
    """TILES["attn_worker_warps"] for fp16/bf16 tiles of at least "attn_worker_warps_min_elems" scores (the tiles
    that spill at the compiler's warp count); others keep the compiler's."""
    warps = TILES["attn_worker_warps"]
    return int(warps) if warps and dtype != "float32" and bm * bn >= TILES["attn_worker_warps_min_elems"] else None


def launcher(spec: KernelSpec, views: dict[str, str], device: str, o4: dict[str, str], grid: tuple[int, int],
             consts: tuple[int, ...], unit_stride: tuple[str, ...] = ()) -> str:
    """launch_<id>: the inputs as their (B, H, L, E) views, the outputs allocated and viewed as `o4`, one launch of
    `grid` (query tiles, batch x heads) with the tile constants. An input named in `unit_stride` is copied to
    row-major when its view's last dim is strided by other than 1 and off 16 bytes: TMA takes a transposed tile
    only from 16-byte-aligned rows, and the compiler reads such a tile element by element instead (k^T stored
    row-major over 197 keys)."""
    kid = spec.id
    w = [f"def launch_{kid}({', '.join(t.name for t in spec.inputs)}):"]
    for t in spec.inputs:
        if t.role == "scalar":
            w.append(f"{I}{scalar_param(t)} = {t.name}")
        else:
            w.append(f"{I}{array_param(t)} = {views.get(t.name, t.name if t.shape else t.name + '.reshape(1)')}")
            if t.name in unit_stride:
                a = array_param(t)
                w += [f"{I}if {a}.stride(-1) != 1 and {a}.stride(-1) * {a}.element_size() % 16:",
                      f"{I}{I}{a} = {a}.contiguous()"]
    for o in spec.outputs:
        w.append(f"{I}{o.name} = torch.empty({tuple(o.shape)!r}, dtype=torch.{o.dtype}, device={device}.device)")
        w.append(f"{I}{out_param(o)} = {o4[o.name]}")
    args = input_args(spec) + [out_param(o) for o in spec.outputs] + [str(c) for c in consts]
    w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({grid[0]}, {grid[1]}, 1), {kid}_kernel, "
             f"({', '.join(args)}))")
    w.append(f"{I}return {', '.join(o.name for o in spec.outputs)}")
    return "\n".join(w)


@guarded
def generate(spec: KernelSpec) -> KernelSource:
    if not any(r.category == "attention" for r in spec.ops):  # attention by hand (fusion rule R8)
        from .attention_manual import generate_manual

        return generate_manual(spec)
    prologue, rec, epilogue = split_anchor(spec, "attention")
    epilogue, head_t = head_transpose(epilogue)
    if prologue:
        raise Unsupported("attention with a fused prologue")
    if rec.op != "scaled_dot_product_attention":
        raise Unsupported(f"{rec.target}: no attention generator for this op")
    a = bind_args(rec)
    dropout = scalar_value(a.get("dropout_p", 0.0)) or 0.0
    if dropout:
        raise Unsupported("scaled_dot_product_attention with dropout_p > 0 (random)")
    q, k, v = (input_for(spec, a.get(n), rec.target) for n in ("query", "key", "value"))
    mask_arg = a.get("attn_mask")
    mask = input_for(spec, mask_arg, rec.target) if isinstance(mask_arg, dict) else None
    causal = bool(a.get("is_causal", False))
    if mask is not None and causal:
        raise Unsupported("attn_mask together with is_causal")
    scale_arg = a.get("scale")
    gqa = bool(a.get("enable_gqa", False))
    if len(q.shape) < 2 or len(k.shape) != len(q.shape) or len(v.shape) != len(q.shape):
        raise Unsupported("query, key and value must have the same rank >= 2")
    L, E = q.shape[-2:]
    S, Ek = k.shape[-2:]
    Sv, Ev = v.shape[-2:]
    if Ek != E or Sv != S:
        raise Unsupported(f"key {k.shape} / value {v.shape} do not match query {q.shape}")
    if max(E, Ev) > 256:
        raise Unsupported(f"head dim {max(E, Ev)} > 256")
    if q.dtype != k.dtype or q.dtype != v.dtype or q.dtype not in ("float32", "float16", "bfloat16"):
        raise Unsupported(f"attention on {q.dtype}/{k.dtype}/{v.dtype}")
    qv, q4 = _as4d(q.name, q.shape)
    kv, k4 = _as4d(k.name, k.shape)
    vv, v4 = _as4d(v.name, v.shape)
    B, H = q4[0], q4[1]
    Hk = k4[1]
    if k4[0] != B or v4[:2] != k4[:2] or (Hk != H and not (gqa and Hk and H % Hk == 0)):
        raise Unsupported(f"batch/head dims of query {q.shape}, key {k.shape}, value {v.shape}")
    if len(q.shape) > 4 and (k.shape[:-3] != q.shape[:-3]):
        raise Unsupported("attention batch dims differ between query and key")
    group = H // Hk
    scale = float(scalar_value(scale_arg)) if scale_arg is not None else 1.0 / math.sqrt(E)
    out_shape = list(q.shape[:-1]) + [Ev]
    if list(rec.output) != out_shape:
        raise Unsupported(f"attention output {rec.output}, expected {out_shape}")
    DP, DVP = pow2_at_least(E, 16), pow2_at_least(Ev, 16)
    BM, BN, warps, occupancy = tiling(L, S, DP, DVP, q.dtype, masked=causal or mask is not None)
    nmb = -(-L // BM)
    views = {q.name: qv, k.name: kv, v.name: vv}
    mtile = None
    if mask is not None:
        mshape = list(mask.shape)
        if len(mshape) > len(q.shape):
            raise Unsupported(f"attn_mask {mshape} has more dims than the query")
        full = [1] * (len(q.shape) - len(mshape)) + mshape
        want = list(q.shape[:-2]) + [L, S]
        if any(m not in (1, w) for m, w in zip(full, want)):
            raise Unsupported(f"attn_mask {mshape} does not broadcast to {want}")
        if len(full) > 4 and any(m != 1 for m in full[:-3]) and full[:-3] != want[:-3]:
            raise Unsupported("attn_mask broadcast over flattened batch dims")
        if len(full) > 4:
            m4 = [math.prod(full[:-3])] + full[-3:]
        elif len(full) == 4:
            m4 = full
        elif len(full) == 3:
            m4 = [full[0], 1, full[1], full[2]]
        else:
            m4 = [1, 1] + full
        views[mask.name] = f"{mask.name}.reshape({', '.join(map(str, m4))})"
        mtile = m4
    mask_bool = mask is not None and mask.dtype == "bool"
    if mask is not None and not mask_bool and mask.dtype not in ("float32", "float16", "bfloat16"):
        raise Unsupported(f"attn_mask of dtype {mask.dtype}")

    kid = spec.id
    qa, ka, va = array_param(q), array_param(k), array_param(v)
    outs = [out_param(o) for o in spec.outputs]
    lines = [kernel_decorator(occupancy, worker_warps=warps),
             f"def {kid}_kernel({', '.join(input_args(spec) + outs)}, BM: ct.Constant[int], "
             f"BN: ct.Constant[int], DP: ct.Constant[int], DVP: ct.Constant[int]):",
             # causal: the longest query tiles (most key tiles) of each (batch, head) are dispatched first, so the
             # grid's tail is short work (longest-first), while one head's query tiles still run together (K/V in L2)
             f"{I}pid_m = {nmb - 1} - ct.bid(0)" if causal else f"{I}pid_m = ct.bid(0)",
             f"{I}bh = ct.bid(1)",
             f"{I}b = bh // {H}",
             f"{I}h = bh % {H}"]
    hk = "h" if group == 1 else f"(h // {group})"
    lines += [f"{I}q = ct.reshape(ct.load({qa}, index=(b, h, pid_m, 0), shape=(1, 1, BM, DP), "
              f"padding_mode=ct.PaddingMode.ZERO), (BM, DP))",
              f"{I}mm = (pid_m * BM + ct.arange(BM, dtype=ct.int32))[:, None]",
              f"{I}m_i = ct.full((BM, 1), -math.inf, dtype=ct.float32)",
              f"{I}l_i = ct.zeros((BM, 1), dtype=ct.float32)",
              f"{I}acc = ct.zeros((BM, DVP), dtype=ct.float32)"]
    tail = S % BN != 0
    if causal:
        lines.append(f"{I}n_kv = ct.cdiv(ct.minimum((pid_m + 1) * BM, {S}), BN)")
        lines.append(f"{I}mask_from = ct.minimum((pid_m * BM) // BN, {S // BN})")
        loop = "range(n_kv)"
    else:
        loop = f"range({-(-S // BN)})"
    # the scale (times log2 e) is applied after the row max, fused into the exponent's argument (one FMA per
    # score); with a float mask (added in scaled units) the scores are scaled first. Requires scale > 0.
    late_scale = not (mask is not None and not mask_bool) and scale > 0
    c = scale * LOG2E
    lines.append(f"{I}for j in {loop}:")
    li = I + I
    lines += [f"{li}kt = ct.reshape(ct.load({ka}, index=(b, {hk}, 0, j), shape=(1, 1, DP, BN), order=(0, 1, 3, 2), "
              f"padding_mode=ct.PaddingMode.ZERO, latency=2), (DP, BN))",
              ] + score_lines(li, q.dtype == "float32", "" if late_scale else f" * {scale * LOG2E!r}")
    if mask is not None:
        bi = "b" if mtile[0] > 1 else "0"
        hi = "h" if mtile[1] > 1 else "0"
        ti, tm = ("pid_m", "BM") if mtile[2] > 1 else ("0", "1")
        tj, tn = ("j", "BN") if mtile[3] > 1 else ("0", "1")
        ma = array_param(mask)
        lines.append(f"{li}mk = ct.reshape(ct.load({ma}, index=({bi}, {hi}, {ti}, {tj}), shape=(1, 1, {tm}, {tn}), "
                     f"padding_mode=ct.PaddingMode.ZERO), ({tm}, {tn}))")
        if mask_bool:
            lines.append(f"{li}s = ct.where(ct.broadcast_to(mk, (BM, BN)), s, -math.inf)")
        else:
            lines.append(f"{li}s = s + ct.broadcast_to(mk.astype(ct.float32), (BM, BN)) * {LOG2E!r}")
    if causal or tail:
        cond = "j >= mask_from" if causal else f"j >= {S // BN}"
        lines.append(f"{li}if {cond}:")
        lines.append(f"{li}{I}nn = j * BN + ct.arange(BN, dtype=ct.int32)[None, :]")
        keep = []
        if tail:
            keep.append(f"(nn < {S})")
        if causal:
            keep.append("(nn <= mm)")
        lines.append(f"{li}{I}s = ct.where({' & '.join(keep)}, s, -math.inf)")
    row_max = "ct.max(s, axis=1, keepdims=True)" + (f" * {c!r}" if late_scale else "")
    lines.append(f"{li}m_new = ct.maximum(m_i, {row_max})")
    m_use = "m_new"
    if mask is not None:  # a row can have every key masked so far: keep exp2 away from (-inf) - (-inf)
        lines.append(f"{li}m_use = ct.where(m_new == -math.inf, 0.0, m_new)")
        m_use = "m_use"
    arg = f"s * {c!r} - {m_use}" if late_scale else f"s - {m_use}"
    lines += [f"{li}p = ct.exp2({arg}, flush_to_zero=True)",
              f"{li}alpha = ct.exp2(m_i - {m_use}, flush_to_zero=True)",
              f"{li}l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)",
              f"{li}vt = ct.reshape(ct.load({va}, index=(b, {hk}, j, 0), shape=(1, 1, BN, DVP), "
              f"padding_mode=ct.PaddingMode.ZERO, latency=4), (BN, DVP))",
              ] + pv_lines(li, v.dtype == "float32") + [f"{li}m_i = m_new"]
    if mask is not None:
        lines.append(f"{I}res = ct.where(l_i == 0.0, 0.0, acc / ct.where(l_i == 0.0, 1.0, l_i))")
    else:
        lines.append(f"{I}res = ct.truediv(acc, l_i, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)")
    env = {rec.node: "res"}
    if epilogue:
        lines.append(f"{I}ee = ct.arange(DVP, dtype=ct.int32)[None, :]")
        r = len(out_shape)
        if r > 4:
            raise Unsupported("fused epilogue on attention with more than 4 dims")
        coords = {4: ["b", "h", "mm", "ee"], 3: ["b", "mm", "ee"], 2: ["mm", "ee"]}[r]
        reshaped = [t.graph_value for t in spec.inputs if views.get(t.name, t.name) != t.name]
        sides = SideLoader(spec, coords, out_shape, "(BM, DVP)", lines, I, exclude=reshaped)
        env = elementwise(epilogue, env, sides, lines, I)
    o4 = {}
    for o, var, ov in output_views(spec, env, out_shape, head_t):
        o4[o.name] = ov
        lines.append(f"{I}ct.store({out_param(o)}, index=(b, h, pid_m, 0), "
                     f"tile=ct.reshape(ct.broadcast_to({var}, (BM, DVP)), (1, 1, BM, DVP))"
                     f".astype({out_param(o)}.dtype))")
    kernel = "\n".join(lines)
    w = launcher(spec, views, q.name, o4, (nmb, B * H), (BM, BN, DP, DVP))
    return module(spec, [kernel], w, [f"{kid}_kernel"],
                  [f"flash attention: {BM} queries x {BN} keys per step, head dims padded to {DP}/{DVP}"
                   + (f", {warps} worker warps at occupancy 1" if warps else "")
                   + (", causal tile skipping" if causal else "")])
