"""The depthwise path (groups == C_in == C_out): a direct kernel, no tensor cores (memory-bound). A block owns BC
channels x a (BOH, BOW) box of output positions of one image and sums, per tap, the input box times one weight
column, in float32, from the channels-first zero-padded copy of the input (or the input itself when unpadded with
unit stride)."""

from __future__ import annotations

from .conv_builder import ConvBuilder
from .conv_index import box
from .gemm_common import ZERO, cdiv, pow2_clamp, tup


class DepthwiseBuilder(ConvBuilder):
    mode = "depthwise"
    channels_last = False
    channel_tile = "BC"
    channel_block = "cb"
    store_batch = "n"
    grouped = False  # one channel per group: channels are plain
    bn_scale_shape = "(-1, 1)"

    def choose_tiles(self, rows: int, cols: int) -> None:
        self.boh, self.bow = box(rows, cols, 256)
        self.bc = pow2_clamp(self.cv.C, 1, max(1, (2048 if self.low else 1024) // (self.boh * self.bow)))

    def weight_lines(self, w: str) -> list[str]:
        """Host lines rearranging the weight `w` into (C, taps) as `self.w_name`."""
        return [f"    {self.w_name} = {w}.reshape({self.cv.C}, {self.cv.taps})"]

    def batch_coords(self) -> None:
        self.body.append("    n = ct.bid(2)")

    def main_body(self) -> None:
        cv = self.cv
        B = self.body.append
        self.coords_lines()
        B(f"    xv = XP.tiled_view((1, BC, 1, BOH, BOW), padding_mode={ZERO}, traversal_steps=(1, BC, 1, 1, 1))")
        B("    acc = ct.zeros((BC, BOH, BOW), dtype=ct.float32)")
        B(f"    for tap in range({cv.taps}):")
        self.tap_lines("        ")
        self.forward_offsets("        ")
        B("        xt = ct.reshape(xv.load((n, cb, dplane, h0, w0)), (BC, BOH, BOW)).astype(ct.float32)")
        B(f"        wt = ct.load(WR, index=(cb, tap), shape=(BC, 1), padding_mode={ZERO}).astype(ct.float32)")
        B("        acc = acc + xt * ct.reshape(wt, (BC, 1, 1))")

    def tile_constants(self) -> tuple[list[str], list[int]]:
        return ["BC", "BOH", "BOW"], [self.bc, self.boh, self.bow]

    def kernel_doc(self) -> str:
        cv = self.cv
        return (f"depthwise conv{cv.nd}d, {cv.C} channels, kernel {cv.k[3 - cv.nd:]}, stride {cv.s[3 - cv.nd:]}: "
                "direct, float32 accumulation")

    def decorator(self) -> str:
        return "@ct.kernel"

    def input_view_lines(self, xp: str, x: str, x5: str) -> list[str]:
        cv = self.cv
        lines = [] if self.buf is not None else [f"    {xp} = {x5}"]
        return lines + [f"    {xp} = {xp}.reshape{tup([cv.N, cv.C] + (self.buf[2:] if self.buf else cv.insp))}"]

    def out_view(self) -> list[int]:
        return [self.cv.N, self.cv.C]

    def grid(self, sp_blocks: int) -> tuple[int, int, int]:
        return sp_blocks, cdiv(self.cv.C, self.bc), self.cv.N
