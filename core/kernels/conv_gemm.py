"""The implicit-GEMM path of the convolutions (forward and transposed, any groups): a block owns BCO output
channels x a (BOH, BOW) box of output positions of one image, group (and output phase) and accumulates
out[co, p] += W[co, (tap, ci)] @ X[(tap, ci), p] with `ct.mma` in one flat loop over (tap, BK-channel slice); each
X tile is one box load from the padded channels-last buffer (or, pointwise, a tile-aligned load in place). A
transposed conv loops only over the taps that reach its output phase and scatters the tile to the strided
outputs."""

from __future__ import annotations

import math

from .base import NUM_SM as NUM_SMS
from .conv_builder import ConvBuilder
from .conv_fold import fold_plan, folded_weight_lines
from .conv_index import affine, box, digits
from .gemm_common import TILES, ZERO, cdiv, kernel_decorator, mma_lines, pow2_clamp, prod, tup


class GemmBuilder(ConvBuilder):
    def __init__(self, *args):
        super().__init__(*args)
        folded = fold_plan(self.cv)
        if folded:
            self.cv, self.fold = folded

    @property
    def mode(self) -> str:
        return "transposed" if self.cv.transposed else "gemm"

    @property
    def bn_scale_shape(self) -> str:
        return f"({self.cv.G}, {self.cv.Cog}, 1, 1)"

    # ---- plan ---------------------------------------------------------------------------------------------
    def choose_tiles(self, rows: int, cols: int) -> None:
        cv = self.cv
        scale = 1 if self.low else 2  # float32: half-size tiles (full-precision mma)
        positions = TILES["conv_fold_positions" if self.fold else "conv_positions"]
        self.boh, self.bow = box(rows, cols, max(16, positions // scale), prefer_size=True)
        # fp16/bf16 convs not folded: TILES["conv_worker_warps"] on tiles of at least conv_worker_warps_min_elems
        # (positions x output channels), with conv_bco_worker_warps output channels per block
        warps = TILES["conv_worker_warps"] if self.low and not self.fold else None
        bco = TILES["conv_bco_worker_warps"] if warps else TILES["conv_bco"]
        self.bco = pow2_clamp(cv.Cog, 16, max(16, bco // scale))
        self.bk = pow2_clamp(cv.Cig, 16, max(16, TILES["conv_bk"] // scale))
        while self._blocks() < NUM_SMS // 2 and self.bco > 32:
            self.bco //= 2
        big = self.boh * self.bow * self.bco >= TILES["conv_worker_warps_min_elems"]
        self.worker_warps = int(warps) if warps and big else None

    def _blocks(self) -> int:
        cv = self.cv
        sp = self.q[0] * cdiv(self.q[1], self.boh) * cdiv(self.q[2], self.bow)
        phases = prod(cv.s) if cv.transposed else 1
        return sp * cdiv(cv.Cog, self.bco) * cv.N * cv.G * phases

    def weight_lines(self, w: str) -> list[str]:
        """Host lines rearranging the weight `w` into the kernel layout (G, Cog, taps, Cig) as `self.w_name`."""
        cv, out = self.cv, self.w_name
        if self.fold:
            # zero-padded rows only where the weights are prepared once (a weight passed at run time is
            # rearranged in launch_, where a pad would be PyTorch compute on the forward path)
            align = (8 if self.low else 4) if self.sig.prepare else 1
            return folded_weight_lines(self.src, self.fold, w, out, align)
        if cv.transposed:  # (G*Cig, Cog, taps) -> (G, Cog, taps, Cig)
            return [f"    {out} = {w}.reshape({cv.G}, {cv.Cig}, {cv.Cog}, {cv.taps}).permute(0, 2, 3, 1)"]
        return [f"    {out} = {w}.reshape({cv.G}, {cv.Cog}, {cv.Cig}, {cv.taps}).permute(0, 1, 3, 2)"]

    # ---- kernel -------------------------------------------------------------------------------------------
    def batch_coords(self) -> None:
        cv = self.cv
        B = self.body.append
        if self.scatter:
            S = prod(cv.s)
            B("    z = ct.bid(2)")
            B(f"    phase = z % {S}")
            B(f"    ng = z // {S}")
            digits("phase", cv.s, ["rd", "rh", "rw"], "    ", self.body)
        else:
            B("    ng = ct.bid(2)")
        if cv.G > 1:
            B(f"    n = ng // {cv.G}")
            B(f"    g = ng % {cv.G}")
        else:
            B("    n = ng")
            B("    g = 0")

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
        for line in mma_lines(ind, "wt", "xt", "acc", cast, self.f32, "(BCO, BOH * BOW)"):
            B(line)

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

    def main_body(self) -> None:
        """One flat K loop over (tap, channel slice) so loads pipeline across taps."""
        cv = self.cv
        B = self.body.append
        self.coords_lines()
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
        if self.scatter:
            self.scatter_coords()

    def scatter_coords(self) -> None:
        """Output coordinates of the tile's elements (channel, strided positions) for the scattered store."""
        cv = self.cv
        B = self.body.append
        sd, sh, sw = cv.s
        B("    co = ct.reshape(cob * BCO + ct.arange(BCO, dtype=ct.int32), (BCO, 1, 1))")
        B(f"    o_d = od * {sd} + rd")
        B(f"    o_h = ct.reshape((ohb * BOH + ct.arange(BOH, dtype=ct.int32)) * {sh} + rh, (1, BOH, 1))")
        B(f"    o_w = ct.reshape((owb * BOW + ct.arange(BOW, dtype=ct.int32)) * {sw} + rw, (1, 1, BOW))")
        g = ["g"] if cv.G > 1 else []
        self.coords = ["n"] + g + ["co", "o_d", "o_h", "o_w"]
        self.out_coords = ["ng", "co", "o_d", "o_h", "o_w"]

    def transposed_loop(self) -> None:
        """Phase r of a transposed conv: per dim, only taps k with k*dil = r + pad (mod stride) contribute; they are
        k0, k0 + s', ... with s' = stride / gcd(dil, stride). The loop runs over exactly those taps."""
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
                offs.append(affine(f"({r} + {p + big} - {kd}) // {s}", 1, lp - big // s))
            else:
                offs.append(f"{p + lp} - {kd}" if p + lp else f"-{kd}")
        B(f"{ind}dplane = od + {offs[0]}")
        B(f"{ind}h0 = ohb * BOH + {offs[1]}")
        B(f"{ind}w0 = owb * BOW + {offs[2]}")
        self.mma_step(ind)

    # ---- assembly -----------------------------------------------------------------------------------------
    def tile_constants(self) -> tuple[list[str], list[int]]:
        return ["BCO", "BK", "BOH", "BOW"], [self.bco, self.bk, self.boh, self.bow]

    def kernel_doc(self) -> str:
        cv = self.cv
        kind = "transposed conv" if cv.transposed else "conv"
        return (f"{kind}{cv.nd}d as an implicit GEMM: {cv.G} group(s) of {cv.Cog} x ({cv.taps} taps x {cv.Cig} "
                "channels), float32 accumulation on tensor cores")

    def decorator(self) -> str:
        return kernel_decorator(TILES["conv_occupancy"], worker_warps=self.worker_warps)

    def input_view_lines(self, xp: str, x: str, x5: str) -> list[str]:
        if self.buf is not None:
            return []
        cv = self.cv
        return [f"    {xp} = {x}.reshape{tup([cv.N * cv.G, cv.Cig] + cv.insp)}"]

    def out_view(self) -> list[int]:
        return [self.cv.N * self.cv.G, self.cv.Cog]

    def grid(self, sp_blocks: int) -> tuple[int, int, int]:
        cv = self.cv
        return sp_blocks, cdiv(cv.Cog, self.bco), cv.N * cv.G * (prod(cv.s) if self.scatter else 1)
