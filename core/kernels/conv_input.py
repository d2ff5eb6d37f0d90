"""The convolution's operands as the kernel reads them: the zero-padded, phase-split input buffer with the copy
kernel that fills it (`PaddedInput`), and the weights rearranged once, with an eval batch norm folded in, by
`prepare_` (`PreparedWeights`). Both are mixins of conv_builder.ConvBuilder and read its plan (cv, q, box tiles,
mode)."""

from __future__ import annotations

from .base import Unsupported
from .conv_index import affine, digits
from .gemm_common import LOW_PRECISION, Signature, cdiv, fresh_name, pow2_clamp, prod, tup


class PaddedInput:
    """XP[ng, ci, phase*DQ + dq, hq, wq] = x[n, g*CIG + ci, dq*SD + rd - PD, ...] (0 outside), stored channels-last
    (NG, planes*DQ, HQ, WQ, CIGP) for the GEMM paths and channels-first (N*C, 1, planes*DQ, HQ, WQP) for depthwise;
    `self.buf` is always the channels-first shape, None when the input is read in place."""

    channels_last = True

    def buffer_plan(self) -> None:
        """Shape of the padded (phase-split) input buffer, or None when the input is read in place.

        GEMM modes use a channels-last buffer (NG, planes*DQ, HQ, WQ, CIGP): a tap's box of input positions then
        starts at an arbitrary offset in the outer (spatial) dims only, with the contiguous channel dim tiled by BK,
        which the compiler turns into TMA box loads (an unaligned offset on the contiguous dim, as a channels-first
        box needs, falls back to per-element loads). Only a pointwise conv (1x1, unit stride, no padding) reads its
        channels-first input in place, with tile-aligned loads. Depthwise keeps a channels-first buffer."""
        cv = self.cv
        align = 8 if cv.x.dtype in LOW_PRECISION else 4  # 16-byte rows
        self.cl = self.channels_last
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
        if cv.in_place and (not self.cl or cv.k == [1, 1, 1]) and not self.fold:
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
        # channels-first (depthwise): one channel per group
        self.buf = [cv.N * cv.C, 1, self.buf_planes * ext[0], ext[1], cdiv(ext[2], align) * align]

    def buf_alloc(self) -> list[int]:
        """The buffer's storage shape: (NG, planes*DQ, HQ, WQ, CIGP) channels-last, else as `self.buf`."""
        ng, c, planes, hq, wq = self.buf
        return [ng, planes, hq, wq, c] if self.cl else list(self.buf)

    def pad_kernel(self) -> str:
        """Copy kernel: XP[ng, ci, phase*DQ + dq, hq, wq] = x[n, g*CIG + ci, dq*SD + rd - PD, ...] (0 outside)."""
        cv = self.cv
        sd, sh, sw = self.buf_stride
        pd, ph, pw = self.buf_pad
        groups, cig = (cv.G, cv.Cig) if self.cl else (cv.C, 1)
        head = ["@ct.kernel",
                f"def {self.kid}_pad_kernel(X, XP, TC: ct.Constant[int], TH: ct.Constant[int], TW: ct.Constant[int]):",
                '    """Zero-padded, phase-split copy of the input (one pass; makes every tap a box load)."""',
                "    pid = ct.bid(0)"]
        tc, th, tw = self.pad_tiles()
        _, _, planes, hq, wq = self.buf
        if self.cl:
            digits("pid", [self.buf[0], planes, cdiv(hq, th), cdiv(wq, tw), cdiv(self.buf[1], tc)],
                   ["ng", "plane", "hb", "wb", "cb"], "    ", head)
        else:
            digits("pid", [self.buf[0], cdiv(cig, tc), planes, cdiv(hq, th), cdiv(wq, tw)],
                   ["ng", "cb", "plane", "hb", "wb"], "    ", head)
        dq = self.dq
        body = []
        B = body.append
        if self.buf_planes > 1:
            B(f"    phase = plane // {dq}")
            B(f"    dq = plane % {dq}")
            digits("phase", [sd, sh, sw], ["rd", "rh", "rw"], "    ", body)
        else:
            B("    dq = plane")
        r = {"d": "rd" if sd > 1 else 0, "h": "rh" if sh > 1 else 0, "w": "rw" if sw > 1 else 0}
        n = "ng" if groups == 1 else f"ng // {groups}"
        c0 = "" if groups == 1 else f"(ng % {groups}) * {cig} + "
        B(f"    n = {n}")
        masked = self.cl and groups > 1 and self.buf[1] > cig  # channels past the group's end stay zero
        f = self.fold
        w_base = '(wb * TW + ct.arange(TW, dtype=ct.int32))'
        mask = ""
        if f:  # buffer channel j*Cig + ci holds x[.., ci, .., w*SW + j*DW - PW] (conv_fold.py)
            B("    cf = ct.reshape(cb * TC + ct.arange(TC, dtype=ct.int32), (TC, 1, 1))")
            B(f"    c = {'' if groups == 1 else f'(ng % {groups}) * {f.cig} + '}cf % {f.cig}")
            mask = f", mask=cf < {cig}" if self.buf[1] > cig else ""
        elif masked:
            B("    ci = ct.reshape(cb * TC + ct.arange(TC, dtype=ct.int32), (TC, 1, 1))")
            B(f"    c = {c0}ci")
            mask = f", mask=ci < {cig}"
        else:
            B(f"    c = ct.reshape({c0}cb * TC + ct.arange(TC, dtype=ct.int32), (TC, 1, 1))")
        B(f"    d = {affine(affine('dq', sd, r['d']), 1, -pd)}")
        B(f"    h = ct.reshape({affine(affine('(hb * TH + ct.arange(TH, dtype=ct.int32))', sh, r['h']), 1, -ph)}, "
          "(1, TH, 1))")
        if f:
            B(f"    w = ct.reshape({affine(w_base, f.sw, -f.pw)}, (1, 1, TW)) + {affine(f'(cf // {f.cig})', f.dw)}")
        else:
            B(f"    w = ct.reshape({affine(affine(w_base, sw, r['w']), 1, -pw)}, (1, 1, TW))")
        B(f"    v = ct.gather(X, (n, c, d, h, w){mask})")
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

    def pad_launch_lines(self, x5: str, xp: str, dev: str) -> list[str]:
        """Host lines allocating the buffer `xp` and launching the copy kernel on the 5-D input view `x5`."""
        tc, th, tw = self.pad_tiles()
        _, cig, planes, hq, wq = self.buf
        grid = self.buf[0] * cdiv(cig, tc) * planes * cdiv(hq, th) * cdiv(wq, tw)
        x = self.sig.host[self.cv.x.graph_value]
        return [f"    {xp} = torch.empty({tup(self.buf_alloc())}, dtype={x}.dtype, device={dev})",
                f"    ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {self.kid}_pad_kernel, "
                f"({x5}, {xp}, {tc}, {th}, {tw}))"]


class PreparedWeights:
    """Launch/prepare signature and the weight rearrangement (`weight_lines`, per path); with a batch norm after
    the convolution, `prepare_` folds its scale into the weights and its shift into the bias."""

    bn_scale_shape: str  # the batch norm scale's view against the rearranged weight (set by the path)

    def weight_lines(self, w: str) -> list[str]:
        raise NotImplementedError

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

    def prepare_code(self, sig: Signature) -> list[str]:
        cv, bn, wn, bname = self.cv, self.bn, self.w_name, self.b_name
        names = {t.graph_value: t.name for t in self.spec.inputs}
        lines = [f"def prepare_{self.kid}({', '.join(sig.prepare_params())}):"]
        lines += self.weight_lines(cv.w.name)
        ret = [f"{wn}.contiguous()"]
        if bn is not None:
            sc = fresh_name("bn_scale", set(names.values()) | {wn, bname})
            lines.append(f"    {sc} = torch.rsqrt({names[bn.var]}.float() + {bn.eps!r})")
            if bn.weight is not None:
                lines.append(f"    {sc} = {sc} * {names[bn.weight]}.float()")
            lines.append(f"    {wn} = ({wn}.float() * {sc}.reshape{self.bn_scale_shape}).to({cv.w.name}.dtype)")
            base = f"{names[cv.bias]}.float()" if cv.bias is not None else f"torch.zeros_like({sc})"
            shift = f" + {names[bn.bias]}.float()" if bn.bias is not None else ""
            lines.append(f"    {bname} = ({base} - {names[bn.mean]}.float()) * {sc}{shift}")
            ret.append(f"{bname}.contiguous()")
        ret += sig.passthrough()
        lines.append(f"    return {tup(ret)}")
        return lines
