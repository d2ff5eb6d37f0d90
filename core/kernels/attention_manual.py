"""Attention written by hand (fusion rule R8): scores = q @ k^T, an elementwise score epilogue (scale, masked_fill
with a mask buffer, an additive mask), softmax over the keys, probabilities @ v, and an elementwise epilogue; one
flash-attention kernel that never writes the scores.

One block computes a (BM, Ev) output tile for one (batch, head), looping over key tiles of BN positions: S = Q K^T
on tensor cores (float32 accumulation), the score epilogue on the (BM, BN) tile with its side inputs gathered at
the tile's (batch, head, query, key) coordinates, keys past the sequence masked, then the online softmax in base 2
(running max and sum in the scores' own units, so a fill of finfo.min stays finite) and P V on tensor cores. A row
whose scores are all -inf comes out NaN, as PyTorch's softmax gives. k^T arrives as the matmul's operand (the
transpose of k is glue); the wrapper transposes the view back, so the kernel reads k row-major as for
scaled_dot_product_attention. A k^T that is itself stored row-major (a contiguous (.., E, S) tensor rather than a view
of k) with rows off 16 bytes is copied to rows of k first: its tile loads would otherwise go element by element (sm_90,
ViT 197 keys: 128 16-bit loads per thread and a spill; H200 0.324 -> 0.091 ms with the copy, 0.065 for a view)."""

from __future__ import annotations

from .. import repeat_kv
from ..einsum_forms import A_B, A_BT, attention_matmul_form
from ..fusion import SOFTMAX_CASTS
from ..op_values import spec_lookup
from ..opgraph import refs_in
from ..repeat_kv import RepeatKV
from ..specs import KernelSpec
from .attention import LOG2E, _as4d, head_transpose, launcher, output_views, tiling
from .base import ITEMSIZE, KernelSource, Unsupported, pow2_at_least
from .expr import bind_args
from .gemm_common import TILES, kernel_decorator, pv_lines, score_lines
from .indexing import SideLoader, array_param, elementwise, input_args, input_for, is_ref, module, out_param, tup

I = "    "


def _repeats(spec: KernelSpec) -> tuple[dict[str, RepeatKV], list]:
    """The repeat_kv chains (grouped-query heads, core/repeat_kv.py) ending at a matmul operand, by operand value,
    and the spec's ops without them."""
    lookup = spec_lookup(spec)
    inputs = {t.graph_value for t in spec.inputs if t.role != "scalar"}
    found = {}
    for r in spec.ops:
        if r.category == "matmul":
            for ref in r.inputs:
                m = repeat_kv.match(ref, lookup)
                if m is not None and m.x in inputs:
                    found[ref] = m
    chained = {n for m in found.values() for n in m.nodes}
    return found, [r for r in spec.ops if r.node not in chained]


def _operand(spec: KernelSpec, arg, what: str, repeats: dict[str, RepeatKV]):
    """(tensor input, its repeat_kv chain or None) of a matmul operand."""
    m = repeats.get(arg["ref"]) if is_ref(arg) else None
    return (input_for(spec, {"ref": m.x}, what), m) if m else (input_for(spec, arg, what), None)


def _parts(ops: list):
    """(scores matmul, score epilogue ops, softmax, output matmul, output epilogue ops) of an R8 spec's ops."""
    mms = [i for i, r in enumerate(ops) if r.category == "matmul"]
    sms = [i for i, r in enumerate(ops) if r.category == "softmax"]
    if len(mms) != 2 or len(sms) != 1 or not mms[0] < sms[0] < mms[1]:
        raise Unsupported("attention by hand: expected matmul, elementwise ops, softmax, matmul")
    i, s, j = mms[0], sms[0], mms[1]
    for r in ops[:i] + ops[i + 1:s] + ops[s + 1:j] + ops[j + 1:]:
        if not r.category.startswith("elementwise"):
            raise Unsupported(f"attention by hand: {r.target} between its matmuls")
    if any(r.op not in SOFTMAX_CASTS for r in ops[s + 1:j]) or len(ops[s + 1:j]) > 1:
        raise Unsupported("attention by hand: ops between the softmax and the second matmul")
    # Elementwise ops before the scores' matmul compute score side inputs (a mask built in the forward): they
    # join the score epilogue, evaluated per tile. One that makes a matmul operand would be a prologue.
    made = {r.node for r in ops[:i]}
    for mm in (ops[i], ops[j]):
        if made & set(refs_in(mm.args) + refs_in(list(mm.kwargs.values()))):
            raise Unsupported("attention with a fused prologue")
    return ops[i], ops[:i] + ops[i + 1:s], ops[s], ops[j], ops[j + 1:], ops[s + 1:j]


def _matmul_args(rec) -> tuple[object, object, str | None, float]:
    """(a, b, A_B / A_BT, alpha) of one of attention's matmuls (einsum_forms.attention_matmul_form)."""
    a = bind_args(rec)
    form = attention_matmul_form(rec.op, rec.attrs)
    if rec.op in ("matmul", "bmm"):
        return a.get("self", a.get("input")), a.get("other", a.get("mat2")), form, 1.0
    if form and rec.op == "baddbmm" and isinstance(a.get("alpha", 1), (int, float)):
        return a.get("batch1"), a.get("batch2"), form, float(a.get("alpha", 1))
    if form and rec.op == "einsum" and len(a.get("tensors") or []) == 2:
        return a["tensors"][0], a["tensors"][1], form, 1.0
    raise Unsupported(f"attention by hand: {rec.target} is not a matmul of two operands")


class TileSides(SideLoader):
    """SideLoader for the score epilogue: a side input whose last dim is the keys (16-byte rows) and whose other
    dims are each broadcast or full loads as one (1 | BM, BN) tile at (query tile, key step) per step, broadcast to
    (BM, BN); any other shape is gathered lane by lane as SideLoader does. The wrapper makes such inputs contiguous
    (a sliced mask buffer is copied once per call), so their rows are the 16-byte-aligned S elements."""

    def __init__(self, spec: KernelSpec, coords: list[str], tile_coords: list[str], scores: list[int],
                 lines: list[str], indent: str, exclude: list[str]):
        super().__init__(spec, coords, scores, "(BM, BN)", lines, indent, exclude=exclude)
        self.tile_coords = tile_coords  # per score dim: the tile index (b, h, pid_m, j)
        self.tiled: list[str] = []  # names of the inputs loaded as tiles

    def tileable(self, t) -> bool:
        shape, full = list(t.shape), self.full_shape
        off = len(full) - len(shape)
        return (bool(TILES["attn_side_tile_loads"]) and t.role != "scalar" and 0 < len(shape) and off >= 0
                and shape[-1] == full[-1] and all(n in (1, full[i + off]) for i, n in enumerate(shape))
                and full[-1] * ITEMSIZE.get(t.dtype, 4) % 16 == 0)

    def __call__(self, value: str) -> str:
        t = self.inputs.get(value)
        if t is None or value in self.exclude or not self.tileable(t):
            return super().__call__(value)
        off = len(self.full_shape) - len(t.shape)
        rank = len(self.full_shape)
        index, shape = [], []
        for i, n in enumerate(t.shape):
            d = i + off
            index.append("0" if n == 1 else self.tile_coords[d])
            shape.append("1" if n == 1 or d < rank - 2 else ("BM" if d == rank - 2 else "BN"))
        rows = shape[-2] if len(shape) > 1 else "1"
        self.count += 1
        var = f"sd_{t.name}_{self.count}"
        self.lines.append(f"{self.indent}{var} = ct.broadcast_to(ct.reshape(ct.load({array_param(t)}, index={tup(index)}, "
                          f"shape={tup(shape)}, padding_mode=ct.PaddingMode.ZERO), ({rows}, BN)).astype(ct.float32), "
                          "(BM, BN))")
        if t.name not in self.tiled:
            self.tiled.append(t.name)
        return var


def _score_index_tiles(score_ops: list, L: int, S: int, lines: list[str], indent: str) -> dict[str, str]:
    """Row/column index tiles for a tril/triu in the score epilogue (a causal mask built in the forward, e.g.
    `torch.full((T, T), -inf).triu(1)`): its element (i, j) lies at query i, key j of the score tile when its last
    two dims are (queries, keys), so the tiles are the query and key positions `mm` / `nn`."""
    from .expr import COL_INDEX, ROW_INDEX

    masks = [r for r in score_ops if r.op.rstrip("_") in ("tril", "triu")]
    if not masks:
        return {}
    for r in masks:
        if len(r.output) < 2 or list(r.output[-2:]) != [L, S]:
            raise Unsupported(f"attention by hand: {r.op} over {list(r.output)}, not (.., queries, keys) = "
                              f"(.., {L}, {S})")
    lines.append(f"{indent}row_idx = ct.broadcast_to(mm, (BM, BN))")
    lines.append(f"{indent}col_idx = ct.broadcast_to(nn, (BM, BN))")
    return {ROW_INDEX: "row_idx", COL_INDEX: "col_idx"}


def _head(n_rep: int) -> str:
    """The key/value head index of query head h (grouped-query heads: h // n_rep)."""
    return "h" if n_rep == 1 else f"h // {n_rep}"


def generate_manual(spec: KernelSpec) -> KernelSource:
    repeats, ops = _repeats(spec)
    ops, head_t = head_transpose(ops)
    mm1, score_ops, sm, mm2, epilogue, cast = _parts(ops)
    if sm.op not in ("softmax", "_softmax"):
        raise Unsupported(f"attention by hand with {sm.op}")
    asm = bind_args(sm)
    if asm.get("dtype") not in (None, {"dtype": "float32"}):
        raise Unsupported(f"attention by hand: softmax to {asm['dtype']}")
    q_arg, k_arg, form, alpha = _matmul_args(mm1)
    probs, v_arg, form2, alpha2 = _matmul_args(mm2)
    if form2 != A_B or alpha2 != 1.0:
        raise Unsupported(f"attention by hand: {mm2.target} is not probabilities @ v")
    q = input_for(spec, q_arg, mm1.target)
    (kt, rep_k), (v, rep_v) = _operand(spec, k_arg, mm1.target, repeats), _operand(spec, v_arg, mm2.target, repeats)
    k_stored = form == A_BT  # einsum "b i d, b j d -> b i j": k as stored, not k^T
    if rep_k is not None:  # the kernel reads the unrepeated k, as stored: the chain's transpose made k^T
        if rep_k.transposed != (form == A_B):
            raise Unsupported("attention by hand: repeated keys not as k or k^T")
        k_stored = True
    if rep_v is not None and rep_v.transposed:
        raise Unsupported("attention by hand: repeated values transposed")
    n_k, n_v = (rep.n_rep if rep else 1 for rep in (rep_k, rep_v))
    if not (isinstance(probs, dict) and probs.get("ref") == (cast[0] if cast else sm).node):
        raise Unsupported("attention by hand: the second matmul does not read the softmax")
    rank = len(q.shape)
    if rank not in (3, 4) or len(kt.shape) != rank or len(v.shape) != rank:
        raise Unsupported("attention by hand: query, key and value of rank 3 or 4")
    L, E = q.shape[-2:]
    S, Ek = kt.shape[-2:] if k_stored else kt.shape[-2:][::-1]
    Sv, Ev = v.shape[-2:]
    heads = (lambda t, n: list(t.shape[:-3]) + [t.shape[-3] * n] if n > 1 else list(t.shape[:-2]))
    if Ek != E or Sv != S or heads(kt, n_k) != list(q.shape[:-2]) or heads(v, n_v) != list(q.shape[:-2]):
        raise Unsupported(f"attention by hand: query {q.shape}, key{'' if k_stored else '^T'} {kt.shape}, "
                          f"value {v.shape}")
    if max(E, Ev) > 256:
        raise Unsupported(f"head dim {max(E, Ev)} > 256")
    if q.dtype != kt.dtype or q.dtype != v.dtype or q.dtype not in ("float32", "float16", "bfloat16"):
        raise Unsupported(f"attention on {q.dtype}/{kt.dtype}/{v.dtype}")
    scores = list(mm1.output)
    dim = asm.get("dim", -1)
    if scores != list(q.shape[:-1]) + [S] or not isinstance(dim, int) or dim % rank != rank - 1:
        raise Unsupported("attention by hand: softmax over other than the keys")
    out_shape = list(q.shape[:-1]) + [Ev]
    if list(mm2.output) != out_shape:
        raise Unsupported(f"attention output {mm2.output}, expected {out_shape}")
    unread = {q.graph_value, kt.graph_value, v.graph_value}  # the operands, and baddbmm's ignored input
    ignored = bind_args(mm1).get("self") if mm1.op == "baddbmm" else None
    if is_ref(ignored):
        unread.add(ignored["ref"])
    side_inputs = [t for t in spec.inputs if t.role != "scalar" and t.graph_value not in unread]

    qv, q4 = _as4d(q.name, q.shape)
    kv, _ = _as4d(kt.name if k_stored else f"{kt.name}.transpose(-2, -1)", list(kt.shape[:-2]) + [S, E])
    vv, _ = _as4d(v.name, v.shape)
    B, H = q4[0], q4[1]
    DP, DVP = pow2_at_least(E, 16), pow2_at_least(Ev, 16)
    BM, BN, warps, occupancy = tiling(L, S, DP, DVP, q.dtype, masked=bool(side_inputs))
    nmb = -(-L // BM)
    views = {q.name: qv, kt.name: kv, v.name: vv}
    kid = spec.id
    qa, ka, va = array_param(q), array_param(kt), array_param(v)
    outs = [out_param(o) for o in spec.outputs]
    li = I + I
    lines = [kernel_decorator(occupancy, worker_warps=warps),
             f"def {kid}_kernel({', '.join(input_args(spec) + outs)}, BM: ct.Constant[int], "
             f"BN: ct.Constant[int], DP: ct.Constant[int], DVP: ct.Constant[int]):",
             f"{I}pid_m = ct.bid(0)", f"{I}bh = ct.bid(1)", f"{I}b = bh // {H}", f"{I}h = bh % {H}",
             f"{I}q = ct.reshape(ct.load({qa}, index=(b, h, pid_m, 0), shape=(1, 1, BM, DP), "
             f"padding_mode=ct.PaddingMode.ZERO), (BM, DP))",
             f"{I}mm = (pid_m * BM + ct.arange(BM, dtype=ct.int32))[:, None]",
             f"{I}m_i = ct.full((BM, 1), -math.inf, dtype=ct.float32)",
             f"{I}l_i = ct.zeros((BM, 1), dtype=ct.float32)",
             f"{I}acc = ct.zeros((BM, DVP), dtype=ct.float32)",
             f"{I}for j in range({-(-S // BN)}):",
             f"{li}kt = ct.reshape(ct.load({ka}, index=(b, {_head(n_k)}, 0, j), shape=(1, 1, DP, BN), "
             "order=(0, 1, 3, 2), "
             f"padding_mode=ct.PaddingMode.ZERO, latency=2), (DP, BN))",
             ] + score_lines(li, q.dtype == "float32")
    if alpha != 1.0:  # baddbmm's
        lines.append(f"{li}s = s * {alpha!r}")
    lines.append(f"{li}nn = j * BN + ct.arange(BN, dtype=ct.int32)[None, :]")
    coords = ["b", "h", "mm", "nn"] if rank == 4 else ["b", "mm", "nn"]
    tile_coords = ["b", "h", "pid_m", "j"] if rank == 4 else ["b", "pid_m", "j"]
    sides = TileSides(spec, coords, tile_coords, scores, lines, li, exclude=[q.graph_value, kt.graph_value])
    env = elementwise(score_ops, {mm1.node: "s", **_score_index_tiles(score_ops, L, S, lines, li)}, sides, lines,
                      li)
    st = env[sm.inputs[0]] if sm.inputs else None
    if st is None:
        raise Unsupported("attention by hand: the softmax input is not computed in the kernel")
    lines += [f"{li}s = ct.where(nn < {S}, {st}, -math.inf)" if S % BN else f"{li}s = {st}",
              f"{li}m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))",
              # a row can have every key so far at -inf: keep exp2 away from (-inf) - (-inf)
              f"{li}m_use = ct.where(m_new == -math.inf, 0.0, m_new)",
              f"{li}p = ct.exp2((s - m_use) * {LOG2E!r}, flush_to_zero=True)",
              f"{li}alpha = ct.exp2((m_i - m_use) * {LOG2E!r}, flush_to_zero=True)",
              f"{li}l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)",
              f"{li}vt = ct.reshape(ct.load({va}, index=(b, {_head(n_v)}, j, 0), shape=(1, 1, BN, DVP), "
              f"padding_mode=ct.PaddingMode.ZERO, latency=4), (BN, DVP))",
              ] + pv_lines(li, v.dtype == "float32") + [
              f"{li}m_i = m_new",
              # a row of -inf scores: 0 / 0 = NaN, as PyTorch's softmax gives
              f"{I}res = acc / l_i"]
    env = {mm2.node: "res"}
    if epilogue:
        lines.append(f"{I}ee = ct.arange(DVP, dtype=ct.int32)[None, :]")
        ocoords = ["b", "h", "mm", "ee"] if rank == 4 else ["b", "mm", "ee"]
        reshaped = [t.graph_value for t in (q, kt, v) if views[t.name] != t.name]
        env = elementwise(epilogue, env, SideLoader(spec, ocoords, out_shape, "(BM, DVP)", lines, I,
                                                    exclude=reshaped), lines, I)
    o4 = {}
    for o, var, ov in output_views(spec, env, out_shape, head_t):
        o4[o.name] = ov
        lines.append(f"{I}ct.store({out_param(o)}, index=(b, h, pid_m, 0), "
                     f"tile=ct.reshape(ct.broadcast_to({var}, (BM, DVP)), (1, 1, BM, DVP))"
                     f".astype({out_param(o)}.dtype))")
    for name in sides.tiled:
        views[name] = f"{views.get(name, name)}.contiguous()"
    w = launcher(spec, views, q.name, o4, (nmb, B * H), (BM, BN, DP, DVP), unit_stride=(kt.name,))
    return module(spec, ["\n".join(lines)], w, [f"{kid}_kernel"],
                  [f"attention by hand as flash attention: {BM} queries x {BN} keys per step, head dims padded to "
                   f"{DP}/{DVP}, score epilogue {', '.join(r.op for r in score_ops) or 'none'} on each tile"
                   + (f", {warps} worker warps at occupancy 1" if warps else "")])
