"""Convolution kernels: conv1d/2d/3d and conv_transpose1d/2d/3d (also aten.convolution), any stride, padding
(including 'same'/'valid'), dilation, groups and output_padding, with the conv bias, an eval batch norm folded
into the weights at construction (R6) and the fused elementwise epilogue.

Every case runs in a 3-D frame (1-D/2-D convolutions get size-1 leading spatial dims) as an implicit GEMM on
tensor cores: a block owns BCO output channels x a (BOH, BOW) box of output positions of one image (and depth
plane) and accumulates  out[co, p] += W[co, (tap, ci)] @ X[(tap, ci), p]  in float32 with `ct.mma`, looping over
the kernel taps and BK-channel slices of the input. For a fixed tap the input positions a box of outputs reads
form a box too, so the X tile is one rectangular load at an arbitrary element offset (a tiled view with unit
traversal steps), never a gather and never an im2col buffer:

- layout: a small copy kernel first rearranges the input into a zero-padded, phase-split, channels-last buffer
  XP[n*G + g, phase, q, ci] = x[n, g*Cig + ci, q*stride + r - pad]  (phase = r per dim; channels padded to 16
  bytes), so that the positions read by one tap are a box whose offsets are in the outer (spatial) dims while the
  contiguous channel dim is tiled by BK: the compiler lowers that to TMA box loads (a channels-first box at an
  unaligned offset of the contiguous dim falls back to per-element loads, ~4x slower end to end). Only a pointwise
  conv (1x1, unit stride, no padding) reads its channels-first input in place, with tile-aligned loads.
- padding: the same buffer carries the zeros (so no masks in the hot loop).
- transposed convolution: outputs are split by phase o = q*stride + r; for phase r only the taps with
  (r + pad - k*dilation) divisible by the stride contribute, each reading the box starting at
  q + (r + pad - k*dilation)/stride of the (left-padded) input. The tile is stored with `ct.scatter` to the
  strided output positions (a plain store when the stride is 1).
- groups: weights are rearranged once (prepare_) to (G, Cog, taps, Cig); blocks of one group read that group's
  channels only (the buffer's channel dim is per group, so slices are zero-padded at the group's end).
- depthwise (groups == C_in == C_out): a direct kernel (no tensor cores; memory-bound), BC channels x a box of
  positions per block, one weight column per tap.

Tile sizes (output channels, output positions, input channels per K step) come from gemm_common.TILES.

Epilogue: conv bias (or the folded batch norm shift) and the fused elementwise ops on the float32 tile; side
inputs are passed as (N, [G,] C, D, H, W) views and loaded per tile (gathered at the output coordinates in the
strided transposed case). Outputs are stored in their own dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..specs import KernelSpec, OpRecord, TensorSpec
from .base import KernelSource, Unsupported
from .gemm_common import (LOW_PRECISION, TILES, ZERO, BatchNorm, Signature, cdiv, check_float, elementwise_ops,
                          fresh_name, is_ref, kernel_decorator, load_side_lines, parse_batch_norm, pow2_clamp, prod,
                          tensor_input, tup, value_shapes)

ANCHORS = {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution",
           "_convolution"}
NUM_SMS = 132
MAX_GRID_YZ = 65535


def _ints(v, nd: int, default: int | None, what: str) -> list[int]:
    if v is None:
        if default is None:
            raise Unsupported(f"{what}: missing")
        return [default] * nd
    if isinstance(v, bool):
        raise Unsupported(f"{what}: {v!r}")
    if isinstance(v, int):
        return [v] * nd
    if isinstance(v, (list, tuple)) and all(isinstance(i, int) for i in v):
        v = list(v)
        if len(v) == 1:
            return v * nd
        if len(v) == nd:
            return v
    raise Unsupported(f"{what}: {v!r}")


def _affine(x: str, mul: int = 1, add: int | str = 0) -> str:
    """`x * mul + add` without the no-op parts."""
    e = x if mul == 1 else f"{x} * {mul}"
    if isinstance(add, str):
        return f"{e} + {add}" if add not in ("0", "") else e
    return e if add == 0 else (f"{e} + {add}" if add > 0 else f"{e} - {-add}")


def _digits(value: str, sizes: list[int], names: list[str], ind: str, lines: list[str]) -> None:
    """names[i] = the i-th mixed-radix digit of `value` (row-major over `sizes`); 0 for size-1 digits."""
    for i, (name, size) in enumerate(zip(names, sizes)):
        inner = prod(sizes[i + 1:])
        if size == 1:
            lines.append(f"{ind}{name} = 0")
            continue
        e = value if inner == 1 else f"({value} // {inner})"
        if i > 0:
            e = f"{e} % {size}"
        lines.append(f"{ind}{name} = {e}")


def _box(rows: int, cols: int, target: int, prefer_size: bool = False) -> tuple[int, int]:
    """(BOH, BOW) box of output positions: at most `target` positions, BOW >= 8 (16-byte rows; 16 for 1-D).
    Among boxes within 10% of the least padding over the whole output, the largest, then the widest;
    `prefer_size` (GEMM tiles): the largest within 25%, then the least padding, then the widest."""
    cands = []
    bow = 8 if rows > 1 else 16
    while True:
        boh = pow2_clamp(rows, 1, max(1, target // bow))
        eff = rows * cols / (cdiv(rows, boh) * boh * cdiv(cols, bow) * bow)
        cands.append((eff, boh, bow))
        if bow >= target or bow >= cols:
            break
        bow *= 2
    best = max(c[0] for c in cands)
    if prefer_size:  # tensor-core tiles: the full-size box unless it wastes far more than the best fit
        _, boh, bow = max((c for c in cands if c[0] >= 0.75 * best), key=lambda c: (c[1] * c[2], c[0], c[2]))
        return boh, bow
    _, boh, bow = max((c for c in cands if c[0] >= 0.9 * best), key=lambda c: (c[1] * c[2], c[2]))
    return boh, bow


def _frame(v: list[int], fill: int) -> list[int]:
    """Pad a per-spatial-dim list to the 3-D frame (D, H, W)."""
    return [fill] * (3 - len(v)) + list(v)


@dataclass
class Conv:
    x: TensorSpec
    w: TensorSpec
    bias: str | None  # graph value
    nd: int
    transposed: bool
    N: int
    C: int
    Co: int
    G: int
    insp: list[int]  # 3-D frame
    outsp: list[int]
    k: list[int]
    s: list[int]
    p: list[int]  # left padding (conv) / padding (transposed)
    d: list[int]

    @property
    def Cig(self) -> int:
        return self.C // self.G

    @property
    def Cog(self) -> int:
        return self.Co // self.G

    @property
    def taps(self) -> int:
        return prod(self.k)

    @property
    def depthwise(self) -> bool:
        return not self.transposed and self.G > 1 and self.Cig == 1 and self.Cog == 1

    @property
    def in_place(self) -> bool:
        """A forward conv reading its input directly (no padding, unit stride)."""
        return not self.transposed and all(v == 0 for v in self.p) and all(v == 1 for v in self.s)


def parse_conv(spec: KernelSpec, rec: OpRecord) -> Conv:
    from .expr import bind_args

    a = bind_args(rec)
    op = rec.op
    what = rec.target
    x = tensor_input(spec, a.get("input"), f"{what} input")
    w = tensor_input(spec, a.get("weight"), f"{what} weight")
    bias = a.get("bias")
    bias = tensor_input(spec, bias, f"{what} bias").graph_value if bias is not None else None
    nd = len(w.shape) - 2
    if nd not in (1, 2, 3) or len(x.shape) != nd + 2:
        raise Unsupported(f"{what}: input of rank {len(x.shape)} (batched 1-D/2-D/3-D inputs only)")
    if op in ("convolution", "_convolution"):
        transposed = bool(a.get("transposed"))
    else:
        transposed = op.startswith("conv_transpose")
    groups = a.get("groups", 1)
    if not isinstance(groups, int) or groups < 1:
        raise Unsupported(f"{what}: groups={groups!r}")
    s = _ints(a.get("stride"), nd, 1, f"{what} stride")
    d = _ints(a.get("dilation"), nd, 1, f"{what} dilation")
    k = list(w.shape[2:])
    pad = a.get("padding")
    if isinstance(pad, str):
        if transposed:
            raise Unsupported(f"{what}: padding={pad!r}")
        if pad == "valid":
            p = [0] * nd
        elif pad == "same":
            p = [(di * (ki - 1)) // 2 for di, ki in zip(d, k)]
        else:
            raise Unsupported(f"{what}: padding={pad!r}")
    else:
        p = _ints(pad, nd, 0, f"{what} padding")
    if any(v < 1 for v in s + d) or any(v < 0 for v in p):
        raise Unsupported(f"{what}: stride/dilation must be positive and padding non-negative")
    N, C = x.shape[0], x.shape[1]
    out = list(rec.output)
    if transposed:
        if w.shape[0] != C:
            raise Unsupported(f"{what}: weight {w.shape} for {C} input channels")
        Co = w.shape[1] * groups
    else:
        if w.shape[1] * groups != C:
            raise Unsupported(f"{what}: weight {w.shape} with groups={groups} for {C} input channels")
        Co = w.shape[0]
    if C % groups or Co % groups:
        raise Unsupported(f"{what}: channels not divisible by groups={groups}")
    if len(out) != nd + 2 or out[0] != N or out[1] != Co:
        raise Unsupported(f"{what}: unexpected output shape {out}")
    return Conv(x, w, bias, nd, transposed, N, C, Co, groups, _frame(x.shape[2:], 1), _frame(out[2:], 1),
                _frame(k, 1), _frame(s, 1), _frame(p, 0), _frame(d, 1))


def generate(spec: KernelSpec) -> KernelSource:
    idx = [i for i, r in enumerate(spec.ops) if r.category == "convolution"]
    if len(idx) != 1:
        raise Unsupported(f"expected one convolution in the kernel, found {len(idx)}")
    anchor = spec.ops[idx[0]]
    if anchor.op not in ANCHORS:
        raise Unsupported(f"{anchor.target}: no convolution generator for this op")
    rest = spec.ops[:idx[0]] + spec.ops[idx[0] + 1:]
    bn = None
    if idx[0] + 1 < len(spec.ops) and spec.ops[idx[0] + 1].category == "normalization":
        bn = parse_batch_norm(spec.ops[idx[0] + 1], anchor.node)
        rest = [r for r in rest if r.node != bn.node]
    epilogue = elementwise_ops(rest, anchor.op)
    conv = parse_conv(spec, anchor)
    return _Builder(spec, anchor, conv, bn, epilogue).build()


class _Builder:
    def __init__(self, spec: KernelSpec, anchor: OpRecord, cv: Conv, bn: BatchNorm | None, epilogue: list[OpRecord]):
        self.spec, self.anchor, self.cv, self.bn, self.epilogue = spec, anchor, cv, bn, epilogue
        self.inputs = {t.graph_value: t for t in spec.inputs}
        self.shapes = value_shapes(spec)
        self.sides: list[tuple[str, str]] = []  # (kernel param, host expr)
        self.side_vars: dict[str, str] = {}
        self.scalars: list[tuple[str, str]] = []
        self.kid = spec.id
        self.out_shape = list(anchor.output)

    # ---- plan ---------------------------------------------------------------------------------------------
    def plan(self) -> None:
        cv, spec = self.cv, self.spec
        for o in spec.outputs:
            if list(o.shape) != self.out_shape:
                raise Unsupported(f"output {o.name} has shape {o.shape}, the convolution's is {self.out_shape}")
        check_float(spec, [cv.x, cv.w], self.anchor.target)
        self.low = cv.x.dtype in LOW_PRECISION and cv.w.dtype in LOW_PRECISION
        self.mma_dtype = None if cv.x.dtype == cv.w.dtype else "ct.float32"
        self.mode = "depthwise" if cv.depthwise else ("transposed" if cv.transposed else "gemm")
        self.flat = self._pointwise()
        if self.flat:  # a 1x1 conv reading in place: positions are one flat dim
            cv.insp = cv.outsp = [1, 1, prod(cv.outsp)]
        if cv.transposed:
            # output phases: positions q of phase r are o = q*s + r
            self.q = [cdiv(o, s) for o, s in zip(cv.outsp, cv.s)]
        else:
            self.q = list(cv.outsp)
        QD, QH, QW = self.q
        scale = 1 if self.low else 2  # float32: half-size tiles (full-precision mma)
        if self.mode == "depthwise":
            self.boh, self.bow = _box(QH, QW, 256)
            self.bc = pow2_clamp(cv.C, 1, max(1, (2048 if self.low else 1024) // (self.boh * self.bow)))
        else:
            self.boh, self.bow = _box(QH, QW, max(16, TILES["conv_positions"] // scale), prefer_size=True)
            self.bco = pow2_clamp(cv.Cog, 16, max(16, TILES["conv_bco"] // scale))
            self.bk = pow2_clamp(cv.Cig, 16, max(16, TILES["conv_bk"] // scale))
            while self._blocks() < NUM_SMS // 2 and self.bco > 32:
                self.bco //= 2
        self.tiles_h, self.tiles_w = cdiv(QH, self.boh), cdiv(QW, self.bow)
        self._buffer_plan()

    def _pointwise(self) -> bool:
        """A 1x1, unit-stride, unpadded conv whose side inputs broadcast over all positions or none."""
        cv = self.cv
        if cv.transposed or not cv.in_place or cv.k != [1, 1, 1] or prod(cv.outsp) == cv.outsp[2]:
            return False
        rank = len(self.out_shape)
        for value in self._side_values():
            shape = self.shapes.get(value)
            if shape is None:
                continue
            sp = ([1] * (rank - len(shape)) + list(shape))[2:]
            if any(v != 1 for v in sp) and sp != self.out_shape[2:]:
                return False
        return True

    def _side_values(self) -> list[str]:
        inside = {self.anchor.node} | ({self.bn.node} if self.bn else set())
        values = []
        for r in self.epilogue:
            inside.add(r.node)
            for v in r.args + list(r.kwargs.values()):
                for ref in _refs(v):
                    if ref not in inside and ref in self.inputs:
                        values.append(ref)
        return values

    def _blocks(self) -> int:
        cv = self.cv
        sp = self.q[0] * cdiv(self.q[1], self.boh) * cdiv(self.q[2], self.bow)
        phases = prod(cv.s) if cv.transposed else 1
        return sp * cdiv(cv.Cog, self.bco) * cv.N * cv.G * phases

    def _buffer_plan(self) -> None:
        """Shape of the padded (phase-split) input buffer, or None when the input is read in place.

        GEMM modes use a channels-last buffer (NG, planes*DQ, HQ, WQ, CIGP): a tap's box of input positions then
        starts at an arbitrary offset in the outer (spatial) dims only, with the contiguous channel dim tiled by BK,
        which the compiler turns into TMA box loads (an unaligned offset on the contiguous dim, as a channels-first
        box needs, falls back to per-element loads). Only a pointwise conv (1x1, unit stride, no padding) reads its
        channels-first input in place, with tile-aligned loads. Depthwise keeps a channels-first buffer."""
        cv = self.cv
        align = 8 if cv.x.dtype in LOW_PRECISION else 4  # 16-byte rows
        self.cl = self.mode != "depthwise"
        if cv.transposed:
            # left padding so that every tap's box starts inside; room for whole boxes on the right
            self.big = [s * cdiv((k - 1) * d + 1, s) for s, k, d in zip(cv.s, cv.k, cv.d)]
            self.lpad = [max(0, -((p - (k - 1) * d) // s)) for s, k, d, p in zip(cv.s, cv.k, cv.d, cv.p)]
            ioff_max = [(r_max + p + big) // s - big // s for r_max, p, big, s in
                        zip([s - 1 for s in cv.s], cv.p, self.big, cv.s)]
            tiles = [self.q[0], self.tiles_h * self.boh, self.tiles_w * self.bow]
            ext = [lp + max(i, t + m) for lp, i, t, m in zip(self.lpad, cv.insp, tiles, ioff_max)]
            self.buf_stride, self.buf_pad, self.buf_planes = [1, 1, 1], self.lpad, 1
            self.dq = ext[0]
            self.buf = [cv.N * cv.G, cdiv(cv.Cig, align) * align, ext[0], ext[1], ext[2]]
            return
        if cv.in_place and (self.mode == "depthwise" or cv.k == [1, 1, 1]):
            self.buf = None
            self.cl = False
            self.dq = cv.insp[0]
            return
        offmax = [((k - 1) * d) // s for k, d, s in zip(cv.k, cv.d, cv.s)]
        ext = [self.q[0] + offmax[0], self.tiles_h * self.boh + offmax[1], self.tiles_w * self.bow + offmax[2]]
        if self.cl:
            # H/W past the last input row/column read as zeros anyway (padding mode), so the buffer stops there,
            # keeping room for every box origin (a box wholly outside the array is undefined behaviour)
            for i, (tiles, box) in ((1, (self.tiles_h, self.boh)), (2, (self.tiles_w, self.bow))):
                data = cdiv(cv.insp[i] + cv.p[i], cv.s[i])
                ext[i] = min(ext[i], max(data, (tiles - 1) * box + offmax[i] + 1))
        self.buf_stride, self.buf_pad, self.buf_planes = list(cv.s), list(cv.p), prod(cv.s)
        self.dq = ext[0]
        if self.cl:
            self.buf = [cv.N * cv.G, cdiv(cv.Cig, align) * align, self.buf_planes * ext[0], ext[1], ext[2]]
            return
        cig = 1 if self.mode == "depthwise" else cv.Cig
        ng = cv.N * cv.C if self.mode == "depthwise" else cv.N * cv.G
        self.buf = [ng, cig, self.buf_planes * ext[0], ext[1], cdiv(ext[2], align) * align]

    def buf_alloc(self) -> list[int]:
        """The buffer's storage shape: (NG, planes*DQ, HQ, WQ, CIGP) channels-last, else as `self.buf`."""
        ng, c, planes, hq, wq = self.buf
        return [ng, planes, hq, wq, c] if self.cl else list(self.buf)

    # ---- signature and weights ----------------------------------------------------------------------------
    def signature(self) -> Signature:
        cv = self.cv
        prepare = cv.w.role in ("parameter", "buffer")
        consumed = {cv.w.graph_value}
        if self.bn is not None:
            consumed |= {self.bn.mean, self.bn.var, self.bn.weight, self.bn.bias, cv.bias}
            for v in consumed:
                if v is not None and (v not in self.inputs or self.inputs[v].role not in ("parameter", "buffer")):
                    raise Unsupported("batch norm folding needs the convolution's weight, bias and the batch norm "
                                      "statistics to be parameters/buffers")
        sig = Signature(self.spec, prepare=prepare)
        self.bias_name = None
        taken = {t.name for t in self.spec.inputs} | {o.name for o in self.spec.outputs}
        self.w_name = fresh_name("conv_w", taken)
        self.b_name = fresh_name("conv_b", taken | {self.w_name})
        if prepare:
            sig.prepared = [self.w_name]
            if self.bn is not None:
                sig.prepared.append(self.b_name)
                self.bias_name = self.b_name
            sig.prepared += [t.name for t in self.spec.inputs if t.role in ("parameter", "buffer")
                             and t.graph_value not in consumed]
            if self.bn is None and cv.bias is not None:
                self.bias_name = sig.host[cv.bias]
        elif cv.bias is not None:
            self.bias_name = sig.host[cv.bias]
        return sig

    def weight_lines(self, w: str) -> list[str]:
        """Host lines rearranging the weight `w` into the kernel layout (as `self.w_name`)."""
        cv, out = self.cv, self.w_name
        if self.mode == "depthwise":
            return [f"    {out} = {w}.reshape({cv.C}, {cv.taps})"]
        if cv.transposed:  # (G*Cig, Cog, taps) -> (G, Cog, taps, Cig)
            return [f"    {out} = {w}.reshape({cv.G}, {cv.Cig}, {cv.Cog}, {cv.taps}).permute(0, 2, 3, 1)"]
        return [f"    {out} = {w}.reshape({cv.G}, {cv.Cog}, {cv.Cig}, {cv.taps}).permute(0, 1, 3, 2)"]

    def prepare_code(self, sig: Signature) -> list[str]:
        cv, bn, wn, bname = self.cv, self.bn, self.w_name, self.b_name
        names = {t.graph_value: t.name for t in self.spec.inputs}
        lines = [f"def prepare_{self.kid}({', '.join(sig.prepare_params())}):"]
        lines += self.weight_lines(cv.w.name)
        ret = [f"{wn}.contiguous()"]
        if bn is not None:
            wshape = "(-1, 1)" if self.mode == "depthwise" else f"({cv.G}, {cv.Cog}, 1, 1)"
            sc = fresh_name("bn_scale", set(names.values()) | {wn, bname})
            lines.append(f"    {sc} = torch.rsqrt({names[bn.var]}.float() + {bn.eps!r})")
            if bn.weight is not None:
                lines.append(f"    {sc} = {sc} * {names[bn.weight]}.float()")
            lines.append(f"    {wn} = ({wn}.float() * {sc}.reshape{wshape}).to({cv.w.name}.dtype)")
            base = f"{names[cv.bias]}.float()" if cv.bias is not None else f"torch.zeros_like({sc})"
            shift = f" + {names[bn.bias]}.float()" if bn.bias is not None else ""
            lines.append(f"    {bname} = ({base} - {names[bn.mean]}.float()) * {sc}{shift}")
            ret.append(f"{bname}.contiguous()")
        ret += sig.passthrough()
        lines.append(f"    return {tup(ret)}")
        return lines

    # ---- side inputs --------------------------------------------------------------------------------------
    def side_view(self, shape: list[int], what: str) -> list[int]:
        cv = self.cv
        rank = len(self.out_shape)
        if len(shape) > rank:
            raise Unsupported(f"{what}: shape {shape} has more dims than the output {self.out_shape}")
        padded = [1] * (rank - len(shape)) + list(shape)
        for s_, o in zip(padded, self.out_shape):
            if s_ not in (1, o):
                raise Unsupported(f"{what}: shape {shape} does not broadcast to {self.out_shape}")
        n, c, sp = padded[0], padded[1], _frame(padded[2:], 1)
        if self.flat:
            sp = [1, 1, 1 if all(v == 1 for v in sp) else prod(sp)]
        if self.mode == "depthwise" or cv.G == 1:
            return [n, c] + sp
        return [n] + ([cv.G, cv.Cog] if c != 1 else [1, 1]) + sp

    def view_dims(self) -> list[tuple[str, object]]:
        """(index, tile) per side view dim for the tile-store paths."""
        cv = self.cv
        if self.mode == "depthwise":
            return [("n", None), ("cb", "BC"), ("od", None), ("ohb", "BOH"), ("owb", "BOW")]
        g = [("g", None)] if cv.G > 1 else []
        return [("n", None)] + g + [("cob", "BCO"), ("od", None), ("ohb", "BOH"), ("owb", "BOW")]

    def load_side(self, value: str) -> str:
        if value in self.side_vars:
            return self.side_vars[value]
        t = self.inputs.get(value)
        if t is None:
            raise Unsupported(f"fused operand {value} is neither a kernel input nor computed in the kernel")
        if t.role == "scalar":
            name = f"sc{len(self.scalars)}"
            self.scalars.append((name, f"float({self.sig.host[value]})"))
            self.side_vars[value] = name
            return name
        return self._side(self.sig.host[value], list(t.shape), value)

    def _side(self, host: str, shape: list[int], key: str) -> str:
        view = self.side_view(shape, f"fused operand {key}")
        param = f"S{len(self.sides)}"
        self.sides.append((param, f"{host}.reshape{tup(view)}"))
        var = f"side{len(self.sides) - 1}"
        ch = "BC" if self.mode == "depthwise" else "BCO"
        full = [ch, "BOH", "BOW"]
        if self.scatter:
            idx = self.coords
            index = ["0" if n == 1 else c for n, c in zip(view, idx)]
            expr = f"ct.gather({param}, {tup(index)}).astype(ct.float32)"
            self.body.append(f"    {var} = ct.broadcast_to({expr}, {tup(full)})")
        else:
            load_side_lines(var, param, view, self.view_dims(), full, self.body, "    ")
        self.side_vars[key] = var
        return var

    # ---- kernels ------------------------------------------------------------------------------------------
    def pad_kernel(self) -> str:
        """Copy kernel: XP[ng, ci, phase*DQ + dq, hq, wq] = x[n, g*CIG + ci, dq*SD + rd - PD, ...] (0 outside)."""
        cv = self.cv
        sd, sh, sw = self.buf_stride
        pd, ph, pw = self.buf_pad
        groups, cig = (cv.C, 1) if self.mode == "depthwise" else (cv.G, cv.Cig)
        head = ["@ct.kernel",
                f"def {self.kid}_pad_kernel(X, XP, TC: ct.Constant[int], TH: ct.Constant[int], TW: ct.Constant[int]):",
                '    """Zero-padded, phase-split copy of the input (one pass; makes every tap a box load)."""',
                "    pid = ct.bid(0)"]
        tc, th, tw = self.pad_tiles()
        _, _, planes, hq, wq = self.buf
        if self.cl:
            _digits("pid", [self.buf[0], planes, cdiv(hq, th), cdiv(wq, tw), cdiv(self.buf[1], tc)],
                    ["ng", "plane", "hb", "wb", "cb"], "    ", head)
        else:
            _digits("pid", [self.buf[0], cdiv(cig, tc), planes, cdiv(hq, th), cdiv(wq, tw)],
                    ["ng", "cb", "plane", "hb", "wb"], "    ", head)
        dq = self.dq
        body = []
        B = body.append
        if self.buf_planes > 1:
            B(f"    phase = plane // {dq}")
            B(f"    dq = plane % {dq}")
            _digits("phase", [sd, sh, sw], ["rd", "rh", "rw"], "    ", body)
        else:
            B("    dq = plane")
        r = {"d": "rd" if sd > 1 else 0, "h": "rh" if sh > 1 else 0, "w": "rw" if sw > 1 else 0}
        n = "ng" if groups == 1 else f"ng // {groups}"
        c0 = "" if groups == 1 else f"(ng % {groups}) * {cig} + "
        B(f"    n = {n}")
        if self.cl and groups > 1 and self.buf[1] > cig:  # channels past the group's end stay zero
            B("    ci = ct.reshape(cb * TC + ct.arange(TC, dtype=ct.int32), (TC, 1, 1))")
            B(f"    c = {c0}ci")
        else:
            B(f"    c = ct.reshape({c0}cb * TC + ct.arange(TC, dtype=ct.int32), (TC, 1, 1))")
        B(f"    d = {_affine(_affine('dq', sd, r['d']), 1, -pd)}")
        B(f"    h = ct.reshape({_affine(_affine('(hb * TH + ct.arange(TH, dtype=ct.int32))', sh, r['h']), 1, -ph)}, "
          "(1, TH, 1))")
        B(f"    w = ct.reshape({_affine(_affine('(wb * TW + ct.arange(TW, dtype=ct.int32))', sw, r['w']), 1, -pw)}, "
          "(1, 1, TW))")
        if self.cl and groups > 1 and self.buf[1] > cig:
            B(f"    v = ct.gather(X, (n, c, d, h, w), mask=ci < {cig})")
        else:
            B("    v = ct.gather(X, (n, c, d, h, w))")
        if self.cl:  # gathered channels-first (reads run along w), stored channels-last
            B("    ct.store(XP, index=(ng, plane, hb, wb, cb), tile=ct.reshape(ct.permute(v, (1, 2, 0)), "
              "(1, 1, TH, TW, TC)))")
        else:
            B("    ct.store(XP, index=(ng, cb, plane, hb, wb), tile=ct.reshape(v, (1, TC, 1, TH, TW)))")
        return "\n".join(head + body) + "\n"

    def pad_tiles(self) -> tuple[int, int, int]:
        _, cig, _, hq, wq = self.buf
        if self.cl:
            tc = pow2_clamp(cig, 8, 64)
            tw = pow2_clamp(wq, 8, max(8, 2048 // tc))
            th = pow2_clamp(hq, 1, max(1, 2048 // (tc * tw)))
            return tc, th, tw
        tw = pow2_clamp(wq, 8, 64)
        th = pow2_clamp(hq, 1, max(1, 512 // tw))
        tc = pow2_clamp(cig, 1, max(1, min(256, 4096 // (th * tw))))
        return tc, th, tw

    def coords_lines(self, ch: str) -> None:
        """Block coordinates (od, ohb, owb, channel block, n, g[, phase]) from the grid."""
        cv = self.cv
        B = self.body.append
        B("    pid = ct.bid(0)")
        _digits("pid", [self.q[0], self.tiles_h, self.tiles_w], ["od", "ohb", "owb"], "    ", self.body)
        B(f"    {ch} = ct.bid(1)")
        if self.mode == "depthwise":
            B("    n = ct.bid(2)")
            return
        if cv.transposed and prod(cv.s) > 1:
            S = prod(cv.s)
            B("    z = ct.bid(2)")
            B(f"    phase = z % {S}")
            B(f"    ng = z // {S}")
            _digits("phase", cv.s, ["rd", "rh", "rw"], "    ", self.body)
        else:
            B("    ng = ct.bid(2)")
        if cv.G > 1:
            B(f"    n = ng // {cv.G}")
            B(f"    g = ng % {cv.G}")
        else:
            B("    n = ng")
            B("    g = 0")

    def tap_lines(self, ind: str) -> None:
        """kd/kh/kw of `tap` (runtime loop over the taps)."""
        cv = self.cv
        KD, KH, KW = cv.k
        B = self.body.append
        B(f"{ind}kd = tap // {KH * KW}" if KD > 1 else f"{ind}kd = 0")
        B(f"{ind}kh = (tap // {KW}) % {KH}" if KH > 1 else f"{ind}kh = 0")
        B(f"{ind}kw = tap % {KW}" if KW > 1 else f"{ind}kw = 0")

    def forward_offsets(self, ind: str) -> None:
        """dplane, h0, w0: where the box read by tap (kd, kh, kw) starts in the (phase-split) input."""
        cv = self.cv
        B = self.body.append
        sd, sh, sw = (cv.s if self.buf is not None else [1, 1, 1])
        dd, dh, dw = cv.d
        parts = []
        for name, k, dil, s in (("d", "kd", dd, sd), ("h", "kh", dh, sh), ("w", "kw", dw, sw)):
            off = f"{k} * {dil}" if dil != 1 else k
            B(f"{ind}off{name} = {off}")
            parts.append((name, s))
        if self.buf is not None and self.buf_planes > 1:
            terms, scale = [], 1
            for name, st in (("w", sw), ("h", sh), ("d", sd)):
                if st > 1:
                    terms.append(_affine(f"(off{name} % {st})", scale))
                scale *= st
            B(f"{ind}phase = {' + '.join(reversed(terms))}")
            B(f"{ind}dplane = {_affine('phase', self.dq, _affine('od', 1, 'offd' if sd == 1 else f'offd // {sd}'))}")
        else:
            B(f"{ind}dplane = od + offd")
        B(f"{ind}h0 = ohb * BOH + offh" + (f" // {sh}" if sh > 1 else ""))
        B(f"{ind}w0 = owb * BOW + offw" + (f" // {sw}" if sw > 1 else ""))

    def mma_step(self, ind: str) -> None:
        """One K step: the (BK channels, box) input tile for `tap`/`cb` times the weight tile."""
        cast = f".astype({self.mma_dtype})" if self.mma_dtype else ""
        B = self.body.append
        if self.cl:  # (box, BK) rows of channels, used transposed (K-major operand)
            B(f"{ind}xt = ct.transpose(ct.reshape(xv.load((ng, dplane, h0, w0, cb)), (BOH * BOW, BK)))")
        else:  # pointwise in place: tile-aligned box
            B(f"{ind}xt = ct.reshape(ct.load(XP, index=(ng, cb, od, ohb, owb), shape=(1, BK, 1, BOH, BOW), "
              f"padding_mode={ZERO}), (BK, BOH * BOW))")
        B(f"{ind}wt = ct.reshape(ct.load(WR, index=(g, cob, tap, cb), shape=(1, BCO, 1, BK), "
          f"padding_mode={ZERO}), (BCO, BK))")
        B(f"{ind}acc = ct.mma(wt{cast}, xt{cast}, acc)")

    def split_cb(self, ind: str, kk: str) -> str:
        """cb = kk % CB; returns the tap-loop index expression left over."""
        cblocks = cdiv(self.cv.Cig, self.bk)
        B = self.body.append
        if cblocks == 1:
            B(f"{ind}cb = 0")
            return kk
        B(f"{ind}cb = {kk} % {cblocks}")
        B(f"{ind}t = {kk} // {cblocks}")
        return "t"

    def gemm_body(self) -> None:
        """One flat K loop over (tap, channel slice) so loads pipeline across taps."""
        cv = self.cv
        B = self.body.append
        self.coords_lines("cob")
        if self.cl:
            B(f"    xv = XP.tiled_view((1, 1, BOH, BOW, BK), padding_mode={ZERO}, traversal_steps=(1, 1, 1, 1, BK))")
        B("    acc = ct.zeros((BCO, BOH * BOW), dtype=ct.float32)")
        cblocks = cdiv(cv.Cig, self.bk)
        ind = "        "
        if not cv.transposed:
            B(f"    for kk in range({cv.taps * cblocks}):")
            tap = self.split_cb(ind, "kk")
            if tap != "tap":
                B(f"{ind}tap = {tap}")
            self.tap_lines(ind)
            self.forward_offsets(ind)
            self.mma_step(ind)
        else:
            self.transposed_loop()
        B("    acc = ct.reshape(acc, (BCO, BOH, BOW))")

    def transposed_loop(self) -> None:
        """Phase r of a transposed conv: per dim, only taps k with k*dil = r + pad (mod stride) contribute; they are
        k0, k0 + s', ... with s' = stride / gcd(dil, stride). The loop runs over exactly those taps."""
        import math

        cv = self.cv
        B = self.body.append
        counts = []
        for name, r, K, dil, s, p in zip("dhw", ("rd", "rh", "rw"), cv.k, cv.d, cv.s, cv.p):
            if s == 1:
                counts.append((name, "0", 1, K))
                continue
            g = math.gcd(dil, s)
            sp = s // g
            inv = pow((dil // g) % sp, -1, sp) if sp > 1 else 0
            rp = r if p == 0 else f"({r} + {p})"
            base = f"({rp} // {g})" if g > 1 else rp
            k0 = (f"{base} % {sp}" if inv == 1 else f"({base} * {inv}) % {sp}") if sp > 1 else "0"
            if g > 1:
                k0 += f" + (({rp} % {g} + {g - 1}) // {g}) * {K}"
            B(f"    k{name}0 = {k0}")
            B(f"    nv{name} = ({K} - k{name}0 + {sp - 1}) // {sp}")
            counts.append((name, f"k{name}0", sp, f"nv{name}"))
        cblocks = cdiv(cv.Cig, self.bk)
        total = " * ".join(str(c[3]) for c in counts if c[3] != 1) or "1"
        if cblocks > 1:
            total = f"{total} * {cblocks}" if total != "1" else str(cblocks)
        ind = "        "
        B(f"    for kk in range({total}):")
        rest = self.split_cb(ind, "kk")
        for i, (name, k0, sp, nv) in enumerate(reversed(counts)):
            last = i == len(counts) - 1
            j = rest if last else f"({rest} % {nv})" if nv != 1 else "0"
            if not last and nv != 1:
                B(f"{ind}j{name} = {rest} % {nv}")
                B(f"{ind}t = {rest} // {nv}")
                rest, j = "t", f"j{name}"
            elif last and nv == 1:
                j = "0"
            step = f"{j} * {sp}" if sp != 1 else j
            kexpr = step if k0 == "0" else f"{k0} + {step}"
            B(f"{ind}k{name} = {kexpr}" if kexpr != "0" else f"{ind}k{name} = 0")
        KD, KH, KW = cv.k
        B(f"{ind}tap = (kd * {KH} + kh) * {KW} + kw")
        offs = []
        for name, r, dil, s, p, big, lp in zip("dhw", ("rd", "rh", "rw"), cv.d, cv.s, cv.p, self.big, self.lpad):
            kd = f"k{name} * {dil}" if dil != 1 else f"k{name}"
            if s > 1:
                offs.append(_affine(f"({r} + {p + big} - {kd}) // {s}", 1, lp - big // s))
            else:
                offs.append(f"{p + lp} - {kd}" if p + lp else f"-{kd}")
        B(f"{ind}dplane = od + {offs[0]}")
        B(f"{ind}h0 = ohb * BOH + {offs[1]}")
        B(f"{ind}w0 = owb * BOW + {offs[2]}")
        self.mma_step(ind)

    def depthwise_body(self) -> None:
        cv = self.cv
        B = self.body.append
        self.coords_lines("cb")
        B(f"    xv = XP.tiled_view((1, BC, 1, BOH, BOW), padding_mode={ZERO}, traversal_steps=(1, BC, 1, 1, 1))")
        B("    acc = ct.zeros((BC, BOH, BOW), dtype=ct.float32)")
        B(f"    for tap in range({cv.taps}):")
        self.tap_lines("        ")
        self.forward_offsets("        ")
        B("        xt = ct.reshape(xv.load((n, cb, dplane, h0, w0)), (BC, BOH, BOW)).astype(ct.float32)")
        B(f"        wt = ct.load(WR, index=(cb, tap), shape=(BC, 1), padding_mode={ZERO}).astype(ct.float32)")
        B("        acc = acc + xt * ct.reshape(wt, (BC, 1, 1))")

    def store_lines(self, env: dict[str, str]) -> None:
        B = self.body.append
        for i, o in enumerate(self.spec.outputs):
            var = env.get(o.graph_value)
            if var is None:
                raise Unsupported(f"output {o.name} is not computed by this kernel")
            if self.scatter:
                B(f"    ct.scatter(O{i}, {tup(self.out_coords)}, {var}.astype(O{i}.dtype))")
            elif self.mode == "depthwise":
                B(f"    ct.store(O{i}, index=(n, cb, od, ohb, owb), "
                  f"tile=ct.reshape({var}.astype(O{i}.dtype), (1, BC, 1, BOH, BOW)))")
            else:
                B(f"    ct.store(O{i}, index=(ng, cob, od, ohb, owb), "
                  f"tile=ct.reshape({var}.astype(O{i}.dtype), (1, BCO, 1, BOH, BOW)))")

    def kernel_body(self) -> list[str]:
        cv = self.cv
        self.body = []
        B = self.body.append
        self.scatter = cv.transposed and prod(cv.s) > 1
        if self.mode == "depthwise":
            self.depthwise_body()
        else:
            self.gemm_body()
        if self.scatter:
            sd, sh, sw = cv.s
            B("    co = ct.reshape(cob * BCO + ct.arange(BCO, dtype=ct.int32), (BCO, 1, 1))")
            B(f"    o_d = od * {sd} + rd")
            B(f"    o_h = ct.reshape((ohb * BOH + ct.arange(BOH, dtype=ct.int32)) * {sh} + rh, (1, BOH, 1))")
            B(f"    o_w = ct.reshape((owb * BOW + ct.arange(BOW, dtype=ct.int32)) * {sw} + rw, (1, 1, BOW))")
            g = ["g"] if cv.G > 1 else []
            self.coords = ["n"] + g + ["co", "o_d", "o_h", "o_w"]
            self.out_coords = ["ng", "co", "o_d", "o_h", "o_w"]
        env = {self.anchor.node: "acc"}
        if self.bias_name is not None:
            side = self._side(self.bias_name, [cv.Co] + [1] * cv.nd, "__conv_bias__")
            B(f"    acc = acc + {side}")
        if self.bn is not None:
            env[self.bn.node] = "acc"
        if self.epilogue:
            from .expr import emit_elementwise

            emit_elementwise(self.epilogue, env, self.load_side, self.body, "    ", shapes=self.shapes)
        self.store_lines(env)
        return self.body

    # ---- assembly -------------------------------------------------------------------------------------------
    def build(self) -> KernelSource:
        self.plan()
        self.sig = self.signature()
        cv, kid, spec = self.cv, self.kid, self.spec
        body = self.kernel_body()
        outs = [f"O{i}" for i in range(len(spec.outputs))]
        params = ["XP", "WR"] + outs + [p for p, _ in self.sides] + [p for p, _ in self.scalars]
        if self.mode == "depthwise":
            consts = ["BC", "BOH", "BOW"]
            tiles = [self.bc, self.boh, self.bow]
            doc = (f"depthwise conv{cv.nd}d, {cv.C} channels, kernel {cv.k[3 - cv.nd:]}, stride {cv.s[3 - cv.nd:]}: "
                   "direct, float32 accumulation")
        else:
            consts = ["BCO", "BK", "BOH", "BOW"]
            tiles = [self.bco, self.bk, self.boh, self.bow]
            kind = "transposed conv" if cv.transposed else "conv"
            doc = (f"{kind}{cv.nd}d as an implicit GEMM: {cv.G} group(s) of {cv.Cog} x ({cv.taps} taps x {cv.Cig} "
                   "channels), float32 accumulation on tensor cores")
        sig_params = params + [f"{c}: ct.Constant[int]" for c in consts]
        kernels = []
        if self.buf is not None:
            kernels.append(self.pad_kernel())
        deco = "@ct.kernel" if self.mode == "depthwise" else kernel_decorator(TILES["conv_occupancy"])
        kernels.append("\n".join([deco, f"def {kid}_kernel({', '.join(sig_params)}):",
                                  f'    """{doc}."""'] + body) + "\n")
        w: list[str] = []
        W = w.append
        if self.sig.prepare:
            w.extend(self.prepare_code(self.sig))
            W("")
            W("")
        params = self.sig.launch_params()
        taken = set(params) | {o.name for o in spec.outputs} | {self.w_name}
        xp = fresh_name("xp", taken)
        taken.add(xp)
        W(f"def launch_{kid}({', '.join(params)}):")
        dev = self.sig.device()
        if not self.sig.prepare:
            w.extend(self.weight_lines(cv.w.name))
            W(f"    {self.w_name} = {self.w_name}.contiguous()")
        for o in spec.outputs:
            W(f"    {o.name} = torch.empty({tup(o.shape)}, dtype=torch.{o.dtype}, device={dev})")
        x = self.sig.host[cv.x.graph_value]
        x5 = f"{x}.reshape{tup([cv.N, cv.C] + cv.insp)}" if cv.nd < 3 or self.flat else x
        if self.buf is not None:
            W(f"    {xp} = torch.empty({tup(self.buf_alloc())}, dtype={x}.dtype, device={dev})")
            tc, th, tw = self.pad_tiles()
            _, cig, planes, hq, wq = self.buf
            grid = self.buf[0] * cdiv(cig, tc) * planes * cdiv(hq, th) * cdiv(wq, tw)
            W(f"    ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {kid}_pad_kernel, "
              f"({x5}, {xp}, {tc}, {th}, {tw}))")
        elif self.mode == "depthwise":
            W(f"    {xp} = {x5}")
        else:
            W(f"    {xp} = {x}.reshape{tup([cv.N * cv.G, cv.Cig] + cv.insp)}")
        if self.mode == "depthwise":
            W(f"    {xp} = {xp}.reshape{tup([cv.N, cv.C] + (self.buf[2:] if self.buf else cv.insp))}")
        out_view = ([cv.N, cv.C] if self.mode == "depthwise" else [cv.N * cv.G, cv.Cog]) + cv.outsp
        out_args = [f"{o.name}.view{tup(out_view)}" for o in spec.outputs]
        side_args = []
        for i, (param, expr) in enumerate(self.sides):
            name = fresh_name(f"side{i}", taken)
            taken.add(name)
            W(f"    {name} = {expr}")
            side_args.append(name)
        scalar_args = [expr for _, expr in self.scalars]
        sp_blocks = self.q[0] * self.tiles_h * self.tiles_w
        if self.mode == "depthwise":
            grid = (sp_blocks, cdiv(cv.C, self.bc), cv.N)
        else:
            z = cv.N * cv.G * (prod(cv.s) if self.scatter else 1)
            grid = (sp_blocks, cdiv(cv.Cog, self.bco), z)
        if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
            raise Unsupported(f"grid {grid} exceeds the second/third grid dimension limit")
        args = [xp, self.w_name] + out_args + side_args + scalar_args + [str(t) for t in tiles]
        W(f"    ct.launch(torch.cuda.current_stream(), {grid}, {kid}_kernel, {tup(args)})")
        W(f"    return {', '.join(o.name for o in spec.outputs)}")
        code = "\n\n".join(kernels) + "\n\n" + "\n".join(w) + "\n"
        names = [f"{kid}_pad_kernel"] if self.buf is not None else []
        names.append(f"{kid}_kernel")
        note = (f"{self.mode}: " + ", ".join(f"{c}={t}" for c, t in zip(consts, tiles))
                + ((f"; input copied to a zero-padded phase-split{' channels-last' if self.cl else ''} buffer first")
                   if self.buf is not None else
                   "; input read in place"))
        notes = [note]
        if self.bn is not None:
            notes.append("eval batch norm folded into the weight and bias in prepare_")
        return KernelSource(spec_id=spec.id, family=spec.family, code=code, launch_name=f"launch_{kid}",
                            kernel_names=names, prepare_name=f"prepare_{kid}" if self.sig.prepare else None,
                            notes=notes)


def _refs(v) -> list[str]:
    if is_ref(v):
        return [v["ref"]]
    if isinstance(v, (list, tuple)):
        return [r for x in v for r in _refs(x)]
    return []
