"""What every convolution path shares (`ConvBuilder`): the plan (pointwise flattening, output phases, box tiles and
the input buffer), the block coordinates, taps and box offsets in the kernel, and the assembly of the copy kernel,
the main kernel, `prepare_` and `launch_` into one source. The paths (conv_gemm.GemmBuilder,
conv_depthwise.DepthwiseBuilder) choose their tiles and write their main loop, weight layout and launch grid."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..specs import KernelSpec, OpRecord
from .base import KernelSource, Unsupported
from .conv_epilogue import Epilogue
from .conv_index import affine, digits
from .conv_input import PaddedInput, PreparedWeights
from .gemm_common import LOW_PRECISION, BatchNorm, cdiv, check_float, fresh_name, prod, tup, value_shapes

if TYPE_CHECKING:
    from .conv import Conv

MAX_GRID_YZ = 65535


class ConvBuilder(PaddedInput, PreparedWeights, Epilogue):
    mode = ""  # "gemm", "transposed" or "depthwise" (the note's first word)

    def __init__(self, spec: KernelSpec, anchor: OpRecord, cv: Conv, bn: BatchNorm | None, epilogue: list[OpRecord]):
        self.spec, self.anchor, self.cv, self.bn, self.epilogue = spec, anchor, cv, bn, epilogue
        self.inputs = {t.graph_value: t for t in spec.inputs}
        self.shapes = value_shapes(spec)
        self.sides: list[tuple[str, str]] = []  # (kernel param, host expr)
        self.side_vars: dict[str, str] = {}
        self.scalars: list[tuple[str, str]] = []
        self.kid = spec.id
        self.out_shape = list(anchor.output)
        self.src = cv  # the convolution as the user wrote it (self.cv may be an equivalent rewrite: conv_fold.py)
        self.fold = None
        self.worker_warps: int | None = None  # num_worker_warps of the kernel (set by choose_tiles)

    # ---- what each path provides ------------------------------------------------------------------------------
    def choose_tiles(self, rows: int, cols: int) -> None:
        """Set the box (boh, bow) and the channel tiles for `rows` x `cols` output positions per plane."""
        raise NotImplementedError

    def main_body(self) -> None:
        """Kernel lines up to the float32 accumulator `acc` of shape (channel tile, BOH, BOW)."""
        raise NotImplementedError

    def tile_constants(self) -> tuple[list[str], list[int]]:
        raise NotImplementedError

    def kernel_doc(self) -> str:
        raise NotImplementedError

    def decorator(self) -> str:
        raise NotImplementedError

    def input_view_lines(self, xp: str, x: str, x5: str) -> list[str]:
        """Host lines binding `xp` to the tensor the kernel reads (after the copy kernel, if any)."""
        raise NotImplementedError

    def out_view(self) -> list[int]:
        """Leading dims of the outputs' 5-D kernel view."""
        raise NotImplementedError

    def grid(self, sp_blocks: int) -> tuple[int, int, int]:
        raise NotImplementedError

    def batch_coords(self) -> None:
        """Kernel lines for the batch (and group, phase) coordinates from ct.bid(2)."""
        raise NotImplementedError

    @property
    def grouped(self) -> bool:
        """Blocks and side views are per group (channels split as (G, Cog))."""
        return self.cv.G > 1

    @property
    def scatter(self) -> bool:
        """A strided transposed conv stores its tile at strided output positions."""
        return self.cv.transposed and prod(self.cv.s) > 1

    # ---- plan ---------------------------------------------------------------------------------------------
    def plan(self) -> None:
        cv, spec = self.cv, self.spec
        for o in spec.outputs:
            if list(o.shape) != self.out_shape:
                raise Unsupported(f"output {o.name} has shape {o.shape}, the convolution's is {self.out_shape}")
        check_float(spec, [cv.x, cv.w], self.anchor.target)
        self.low = cv.x.dtype in LOW_PRECISION and cv.w.dtype in LOW_PRECISION
        self.mma_dtype = None if cv.x.dtype == cv.w.dtype else "ct.float32"
        self.f32 = not (cv.x.dtype == cv.w.dtype and self.low)  # the mma's operands are float32 (split TF32)
        self.flat = self._pointwise()
        if self.flat:  # a 1x1 conv reading in place: positions are one flat dim
            cv.insp = cv.outsp = [1, 1, prod(cv.outsp)]
        if cv.transposed:
            # output phases: positions q of phase r are o = q*s + r
            self.q = [cdiv(o, s) for o, s in zip(cv.outsp, cv.s)]
        else:
            self.q = list(cv.outsp)
        QD, QH, QW = self.q
        self.choose_tiles(QH, QW)
        self.tiles_h, self.tiles_w = cdiv(QH, self.boh), cdiv(QW, self.bow)
        self.buffer_plan()

    def _pointwise(self) -> bool:
        """A 1x1, unit-stride, unpadded conv whose side inputs broadcast over all positions or none."""
        cv = self.cv
        if self.fold or cv.transposed or not cv.in_place or cv.k != [1, 1, 1] or prod(cv.outsp) == cv.outsp[2]:
            return False
        rank = len(self.out_shape)
        for value in self.side_values():
            shape = self.shapes.get(value)
            if shape is None:
                continue
            sp = ([1] * (rank - len(shape)) + list(shape))[2:]
            if any(v != 1 for v in sp) and sp != self.out_shape[2:]:
                return False
        return True

    # ---- kernel lines shared by the paths ---------------------------------------------------------------------
    def coords_lines(self) -> None:
        """Block coordinates (od, ohb, owb, channel block, n, g[, phase]) from the grid."""
        B = self.body.append
        B("    pid = ct.bid(0)")
        digits("pid", [self.q[0], self.tiles_h, self.tiles_w], ["od", "ohb", "owb"], "    ", self.body)
        B(f"    {self.channel_block} = ct.bid(1)")
        self.batch_coords()

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
        for name, k, dil in (("d", "kd", dd), ("h", "kh", dh), ("w", "kw", dw)):
            off = f"{k} * {dil}" if dil != 1 else k
            B(f"{ind}off{name} = {off}")
        if self.buf is not None and self.buf_planes > 1:
            terms, scale = [], 1
            for name, st in (("w", sw), ("h", sh), ("d", sd)):
                if st > 1:
                    terms.append(affine(f"(off{name} % {st})", scale))
                scale *= st
            B(f"{ind}phase = {' + '.join(reversed(terms))}")
            B(f"{ind}dplane = {affine('phase', self.dq, affine('od', 1, 'offd' if sd == 1 else f'offd // {sd}'))}")
        else:
            B(f"{ind}dplane = od + offd")
        B(f"{ind}h0 = ohb * BOH + offh" + (f" // {sh}" if sh > 1 else ""))
        B(f"{ind}w0 = owb * BOW + offw" + (f" // {sw}" if sw > 1 else ""))

    def kernel_body(self) -> list[str]:
        self.body = []
        self.main_body()
        self.epilogue_lines()
        return self.body

    # ---- assembly -------------------------------------------------------------------------------------------
    def build(self) -> KernelSource:
        self.plan()
        self.sig = self.signature()
        cv, kid, spec = self.cv, self.kid, self.spec
        body = self.kernel_body()
        outs = [f"O{i}" for i in range(len(spec.outputs))]
        params = ["XP", "WR"] + outs + [p for p, _ in self.sides] + [p for p, _ in self.scalars]
        consts, tiles = self.tile_constants()
        sig_params = params + [f"{c}: ct.Constant[int]" for c in consts]
        kernels = []
        if self.buf is not None:
            kernels.append(self.pad_kernel())
        kernels.append("\n".join([self.decorator(), f"def {kid}_kernel({', '.join(sig_params)}):",
                                  f'    """{self.kernel_doc()}."""'] + body) + "\n")
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
        x5 = f"{x}.reshape{tup([cv.N, self.src.C] + self.src.insp)}" if cv.nd < 3 or self.flat else x
        if self.buf is not None:
            w.extend(self.pad_launch_lines(x5, xp, dev))
        w.extend(self.input_view_lines(xp, x, x5))
        out_args = [f"{o.name}.view{tup(self.out_view() + cv.outsp)}" for o in spec.outputs]
        side_args = []
        for i, (param, expr) in enumerate(self.sides):
            name = fresh_name(f"side{i}", taken)
            taken.add(name)
            W(f"    {name} = {expr}")
            side_args.append(name)
        scalar_args = [expr for _, expr in self.scalars]
        grid = self.grid(self.q[0] * self.tiles_h * self.tiles_w)
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
        notes = [note + (f"; {self.worker_warps} worker warps" if self.worker_warps else "")]
        if self.fold:
            notes.append(f"the {self.fold.kw} width taps folded into the input channels ({self.fold.kw} x "
                         f"{self.fold.cig} = {self.cv.Cig} per K step and (kd, kh) tap)")
        if self.bn is not None:
            notes.append("eval batch norm folded into the weight and bias in prepare_")
        return KernelSource(spec_id=spec.id, family=spec.family, code=code, launch_name=f"launch_{kid}",
                            kernel_names=names, prepare_name=f"prepare_{kid}" if self.sig.prepare else None,
                            notes=notes)
