"""Gather-family fast paths that move whole 32/64-bit words instead of single elements: zero padding
(MEMORY_TUNING["pad_words"]) and embedding lookups (MEMORY_TUNING["embedding_words"]).

**Padding.** Zero padding of the last one or two dims as shifted word copies. The generic gather path computes a
4-d source coordinate per output element and reads 2-byte elements one at a time. Here the output is viewed as
rows of 32-bit words ((lead x Hout) rows, Wout / 2 words for 16-bit dtypes, Wout for float32) and each block
writes a (BM, BJ) tile of words. Every output row is one input row (or a padding row, zeros) shifted right by the
left pad L: a dense slice of that input row at a word offset, read with `ct.load_advanced_indexing` (zero outside
the row, which is the padding). For 16-bit dtypes with an odd L each output word splices two input words: its low
half is the high half of input word j - q - 1 and its high half the low half of word j - q (L = 2q + 1), bit
operations on int32. Requirements (else the generic path): constant mode with value 0, non-negative pads on at
most the last two dims, no fused epilogue, float16/bfloat16 with even input and output widths or float32, and
every block's slice overlapping its input row (a slice wholly outside the row is undefined in cuTile).

With MEMORY_TUNING["pad_words_flat"] (the default; flat_generate) the output is instead one flat run of 32-bit
words: each block stores a dense slice of it (whole-tile vector stores, where rows of 57 words stored as tiles
take 4 bytes per store) and gathers each output word's input word(s) by index, zero outside the input row. Only
int32 word indices need fit; no slice constraint.

**Embedding.** The generic path reads each table row with `ct.load_advanced_indexing` element by element
(specialized sm_90 SASS of embedding 65536x1024 bf16: 32 LDG.E.U16 per thread). With the table and the output
viewed as int64 words (4 bf16 / 2 float32 per word; int32 words when the row is only 4-byte divisible) the same
row copies move 8 bytes per load. No fused epilogue (the words are not values).
"""

from __future__ import annotations

from ..specs import KernelSpec, OpRecord
from .base import KernelSource, pow2_at_least
from .expr import bind_args, scalar_value
from .indexing import (MEMORY_TUNING, alloc_outputs, decode, flat_run_coords, input_for, is_ref, module, prod,
                       ret_outputs, word_views)

I = "    "
_WORDS = {"float16": 2, "bfloat16": 2, "float32": 1}  # elements per 32-bit word


def _pads(rec: OpRecord) -> list[int] | None:
    a = bind_args(rec)
    if rec.op == "pad" and (a.get("mode") or "constant") != "constant":
        return None
    if rec.op not in ("pad", "constant_pad_nd"):
        return None
    value = a.get("value")
    if value is not None and float(scalar_value(value)) != 0.0:
        return None
    pads = a.get("pad", a.get("padding"))
    if not isinstance(pads, (list, tuple)) or not all(isinstance(p, int) for p in pads):
        return None
    return list(pads)


def plan(spec: KernelSpec) -> dict | None:
    """The word-copy layout of a pad spec, or None when the generic gather path must take it."""
    if not MEMORY_TUNING["pad_words"] or len(spec.ops) != 1 or len(spec.outputs) != 1:
        return None
    rec = spec.ops[0]
    pads = _pads(rec)
    tensors = [t for t in spec.inputs if t.role != "scalar"]
    if pads is None or len(tensors) != 1 or len(pads) not in (2, 4) or any(p < 0 for p in pads):
        return None
    x = tensors[0]
    per = _WORDS.get(x.dtype)
    if per is None or len(x.shape) < len(pads) // 2 or spec.outputs[0].dtype != x.dtype or prod(x.shape) == 0:
        return None
    W, (L, Rp) = x.shape[-1], pads[:2]
    H, T, B = (x.shape[-2], pads[2], pads[3]) if len(pads) == 4 else (1, 0, 0)
    Wo, Ho = W + L + Rp, H + T + B
    if W % per or Wo % per or W == 0:
        return None
    lead = prod(x.shape[:-2]) if len(pads) == 4 else prod(x.shape[:-1])
    ww, wo = W // per, Wo // per
    q, odd = divmod(L, per) if per == 2 else (L, 0)
    p = dict(x=x, per=per, W=W, H=H, T=T, L=L, ww=ww, wo=wo, Ho=Ho, lead=lead, q=q, odd=odd)
    if MEMORY_TUNING["pad_words_flat"] and lead * Ho * wo < 2**31 and lead * H * ww < 2**31:
        return dict(p, flat=True)  # int32 word indices (flat_generate)
    BJ = pow2_at_least(wo, 1, 256)
    # every slice [j0 - q - odd, + BJ) must overlap [0, ww): the first block's (q + odd < BJ) and the last one's
    if q + odd >= BJ or (-(-wo // BJ) - 1) * BJ - q >= ww:
        return None
    return dict(p, BJ=BJ, flat=False)


def generate(spec: KernelSpec, p: dict) -> KernelSource:
    if p["flat"]:
        return flat_generate(spec, p)
    kid, x, o = spec.id, p["x"], spec.outputs[0]
    BJ, wo, Ho, H, T, q = p["BJ"], p["wo"], p["Ho"], p["H"], p["T"], p["q"]
    M = p["lead"] * Ho
    BM = pow2_at_least(M, 1, max(1, int(MEMORY_TUNING["pad_words_tile"]) // BJ))
    nbj = -(-wo // BJ)
    lines = ["@ct.kernel", f"def {kid}_kernel(a_x, o_y, BM: ct.Constant[int], BJ: ct.Constant[int]):",
             f"{I}bid = ct.bid(0)"]
    lines += [f"{I}pid_m = bid // {nbj}", f"{I}pid_j = bid % {nbj}"] if nbj > 1 else \
             [f"{I}pid_m = bid", f"{I}pid_j = 0"]
    lines += [f"{I}m = pid_m * BM + ct.arange(BM, dtype=ct.int32)", f"{I}j0 = pid_j * BJ"]
    rows = Ho > 1  # 2-d padding (Ho >= H, and a top pad makes Ho > 1): output rows map to input rows or zeros
    if rows:
        lines += [f"{I}ri = m % {Ho} - {T}",
                  f"{I}r = (m // {Ho}) * {H} + ct.minimum(ct.maximum(ri, 0), {H - 1})",
                  f"{I}keep = ((ri >= 0) & (ri < {H}))[:, None]"]
    else:
        lines.append(f"{I}r = m")
    load = "ct.load_advanced_indexing(a_x, (r, ct.Slice(j0 - {s}, BJ)), padding_mode=ct.PaddingMode.ZERO)"
    if p["odd"]:
        lines += [f"{I}u = {load.format(s=q + 1)}", f"{I}v = {load.format(s=q)}",
                  f"{I}w = ((u >> 16) & 65535) | (v << 16)"]
    else:
        lines.append(f"{I}w = {load.format(s=q)}")
    if rows:
        lines.append(f"{I}w = ct.where(keep, w, 0)")
    lines.append(f"{I}ct.store(o_y, index=(pid_m, pid_j), tile=w)")

    w = [f"def launch_{kid}({', '.join(t.name for t in spec.inputs)}):"]
    alloc_outputs(spec, f"{x.name}.device", w)
    rows_in = p["lead"] * H
    xs = f"a_{x.name}"
    w.append(f"{I}{xs} = {x.name}.contiguous().view({rows_in}, {p['W']})")
    w += [f"{I}{xs} = {xs}{v}" for v in word_views(xs, p["per"], "torch.int32")]
    src, dst = xs, f"{o.name}.view({M}, {p['wo'] * p['per']}).view(torch.int32)"
    w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({-(-M // BM) * nbj}, 1, 1), {kid}_kernel, "
             f"({src}, {dst}, {BM}, {BJ}))")
    w.append(ret_outputs(spec))
    note = (f"{spec.ops[0].op}: rows of {wo} 32-bit words, tile {BM} x {BJ}; each output row a shifted dense slice "
            f"of one input row ({'two words spliced per output word' if p['odd'] else 'word-aligned shift'})")
    return module(spec, ["\n".join(lines)], "\n".join(w), [f"{kid}_kernel"], [note])


def flat_generate(spec: KernelSpec, p: dict) -> KernelSource:
    """MEMORY_TUNING["pad_words_flat"]: the output as one flat run of 32-bit words, each block storing a dense
    slice of it (whole-block vector stores, whatever the row width), each output word gathered from its input
    row: word j of output row m is input word j - q of input row r (odd L: spliced from words j - q - 1 and
    j - q), zero outside the input row or on a padding row."""
    kid, x, o = spec.id, p["x"], spec.outputs[0]
    wo, ww, Ho, H, T, q = p["wo"], p["ww"], p["Ho"], p["H"], p["T"], p["q"]
    total = p["lead"] * Ho * wo
    B = pow2_at_least(total, 1, int(MEMORY_TUNING["pad_flat_tile"]))
    lines = ["@ct.kernel", f"def {kid}_kernel(a_x, o_y, B: ct.Constant[int]):", *flat_run_coords("ct.bid(0)", wo, "j")]
    if Ho > 1:  # 2-d padding: output row m is input row r, or a padding row
        lines += [f"{I}ri = m % {Ho} - {T}", f"{I}ok = (ri >= 0) & (ri < {H})",
                  f"{I}s = ((m // {Ho}) * {H} + ri) * {ww} + j - {q}"]
        row_ok = "ok & "
    else:
        lines.append(f"{I}s = m * {ww} + j - {q}")
        row_ok = ""
    gather = "ct.gather(a_x, {i}, mask={row}(j >= {lo}) & (j < {hi}), padding_value=0)"
    if p["odd"]:  # low half from the high half of word j - q - 1, high half from the low half of word j - q
        lines += [f"{I}u = " + gather.format(i="s - 1", row=row_ok, lo=q + 1, hi=q + 1 + ww),
                  f"{I}v = " + gather.format(i="s", row=row_ok, lo=q, hi=q + ww),
                  f"{I}w = ((u >> 16) & 65535) | (v << 16)"]
    else:
        lines.append(f"{I}w = " + gather.format(i="s", row=row_ok, lo=q, hi=q + ww))
    lines.append(f"{I}ct.store(o_y, index=(ct.bid(0),), tile=w)")

    w = [f"def launch_{kid}({', '.join(t.name for t in spec.inputs)}):"]
    alloc_outputs(spec, f"{x.name}.device", w)
    xs = f"a_{x.name}"
    w.append(f"{I}{xs} = {x.name}.contiguous().view({p['lead'] * H * p['W']})")
    w += [f"{I}{xs} = {xs}{v}" for v in word_views(xs, p["per"], "torch.int32")]
    w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({-(-total // B)}, 1, 1), {kid}_kernel, "
             f"({xs}, {o.name}.view({total * p['per']}).view(torch.int32), {B}))")
    w.append(ret_outputs(spec))
    shift = "two words spliced per output word" if p["odd"] else "word-aligned shift"
    note = (f"{spec.ops[0].op}: the output as {total} 32-bit words, {B} per block stored densely; rows of {wo} "
            f"words, each word gathered from its input row ({shift})")
    return module(spec, ["\n".join(lines)], "\n".join(w), [f"{kid}_kernel"], [note])


def embedding_plan(spec: KernelSpec) -> dict | None:
    """The word layout of a plain embedding lookup, or None for the generic path."""
    if not MEMORY_TUNING["embedding_words"] or len(spec.ops) != 1 or len(spec.outputs) != 1:
        return None
    a = bind_args(spec.ops[0])
    if not (is_ref(a.get("weight")) and is_ref(a.get("indices"))):
        return None
    w, ids = (input_for(spec, a[k], spec.ops[0].target) for k in ("weight", "indices"))
    if len(w.shape) != 2 or w.dtype not in _WORDS or ids.dtype not in ("int64", "int32"):
        return None
    size = 4 if w.dtype == "float32" else 2
    D = w.shape[1]
    word = 8 if D * size % 8 == 0 else 4 if D * size % 4 == 0 else 0
    if not word or spec.outputs[0].dtype != w.dtype or prod(ids.shape) == 0 or w.shape[0] == 0:
        return None
    return dict(w=w, ids=ids, word=word, words=D * size // word, N=prod(ids.shape))


def generate_embedding(spec: KernelSpec, p: dict) -> KernelSource:
    kid, w, ids, o = spec.id, p["w"], p["ids"], spec.outputs[0]
    words, N, word = p["words"], p["N"], p["word"]
    BL = pow2_at_least(words, 1, 512)
    BR = pow2_at_least(N, 1, max(1, int(MEMORY_TUNING["gather_tile_elems"]) * 2 // word // BL))
    nlb = -(-words // BL)
    lines = ["@ct.kernel", f"def {kid}_kernel(a_w, a_ids, o_y, BR: ct.Constant[int], BL: ct.Constant[int]):",
             f"{I}bid = ct.bid(0)"]
    lines += [f"{I}pid_r = bid // {nlb}", f"{I}pid_l = bid % {nlb}"] if nlb > 1 else \
             [f"{I}pid_r = bid", f"{I}pid_l = 0"]
    lines.append(f"{I}rr = pid_r * BR + ct.arange(BR, dtype=ct.int32)")
    coords = decode("rr", list(ids.shape) or [1], lines, I, "t")
    lines.append(f"{I}tok = ct.gather(a_ids, ({', '.join(coords)},)).astype(ct.int32)")
    lines.append(f"{I}ct.store(o_y, index=(pid_r, pid_l), tile=ct.load_advanced_indexing(a_w, (tok, "
                 f"ct.Slice(pid_l * BL, BL)), padding_mode=ct.PaddingMode.ZERO))")
    dt = "torch.int64" if word == 8 else "torch.int32"
    wr = [f"def launch_{kid}({', '.join(t.name for t in spec.inputs)}):"]
    alloc_outputs(spec, f"{w.name}.device", wr)
    aw = f"a_{w.name}"
    wr.append(f"{I}{aw} = {w.name}.contiguous()")
    wr += [f"{I}{aw} = {aw}{v}" for v in word_views(aw, word // (4 if w.dtype == "float32" else 2), dt)]
    ids_arg = f"{ids.name}.reshape(1)" if not ids.shape else ids.name
    wr.append(f"{I}ct.launch(torch.cuda.current_stream(), ({-(-N // BR) * nlb}, 1, 1), {kid}_kernel, "
              f"({aw}, {ids_arg}, {o.name}.view({N}, {w.shape[1]}).view({dt}), {BR}, {BL}))")
    wr.append(ret_outputs(spec))
    note = (f"embedding: table rows copied as {8 * word}-bit words ({words} per row), tile {BR} x {BL} words, "
            "one token index per tile row")
    return module(spec, ["\n".join(lines)], "\n".join(wr), [f"{kid}_kernel"], [note])
