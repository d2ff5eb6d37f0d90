"""Side-input loads for fused expressions: one side input's values for the current output tile, broadcast.

`broadcast_load_lines` is the helper an anchor generator's `load_side` callback (see expr.emit_elementwise) uses
for bias, residual, mask and per-row/per-channel scale inputs: a `ct.load` of the matching tile of the input
(size-1 dims at index 0), cast, reshaped to the output rank and broadcast to the output tile shape.
"""

from __future__ import annotations

from typing import Sequence

from .base import Unsupported
from .indexing import tup


def broadcast_load_lines(var: str, array: str, array_shape: Sequence[int], out_shape: Sequence[int],
                         out_tile: Sequence[tuple[str, int]], lines: list[str], indent: str = "    ",
                         padding: str = "ct.PaddingMode.ZERO", dtype: str = "ct.float32") -> str:
    """Emit `var = <array's values for the current output tile>`, broadcast to the tile shape; returns `var`.

    Args:
      var: name of the tile variable to define.
      array: the kernel parameter holding the side input (an ND cuTile array; 0-d tensors must be passed
        reshaped to (1,) by the launch wrapper: cuTile has no 0-d array loads).
      array_shape: the side input's shape as the kernel sees it (rank <= len(out_shape)).
      out_shape: the output's shape in the view the kernel tiles (same rank as `out_tile`).
      out_tile: per output dim, (block-index expression, tile size): the current tile covers elements
        [idx * size, (idx + 1) * size) of that dim, exactly as `ct.load(out, index=(idx, ...), shape=(size, ...))`.
      lines / indent: where the code goes.
      padding: padding mode for out-of-bounds tile elements (zero by default; they are never stored anyway).
      dtype: the tile dtype after the load (float32 by default; pass "ct.bool_" to keep a mask as bool, and
        then give `var` the prefix "eb_" so emit_elementwise knows it holds a bool tile).

    Broadcasting is right-aligned as in PyTorch: input dim i maps to output dim i + (out_rank - in_rank). Where
    the input has size 1 (or no dim at all) the load uses tile size 1 at index 0; elsewhere it uses the output
    tile's index and size. The loaded tile (input rank) is then reshaped to the output rank and broadcast to the
    output tile shape, so `var` can be combined directly with the output tile. Example (matmul epilogue, output
    tile (BM, BN) at (pid_m, pid_n), bias of shape (N,)):

        broadcast_load_lines("bias_t", "bias", [N], [M, N], [("pid_m", "BM"), ("pid_n", "BN")], lines)
        # bias_t = ct.broadcast_to(ct.reshape(ct.load(bias, index=(pid_n,), shape=(BN,), ...)
        #          .astype(ct.float32), (1, BN)), (BM, BN))

    Tile sizes may be ints or names of ct.Constant parameters (strings). The input and output must describe
    the same view: if the kernel tiles a reshaped output (e.g. (B*T, N) for a (B, T, N) result), pass the side
    input reshaped consistently (a (B, T, N) residual as (B*T, N); a (N,) bias stays (N,)); broadcasts that the
    view cannot express (a (T, N) input against a (B*T, N) tile) need a gather instead.
    """
    out_rank, in_rank = len(out_shape), len(array_shape)
    if in_rank > out_rank:
        raise Unsupported(f"side input {array}: shape {list(array_shape)} has more dims than the output "
                          f"{list(out_shape)}")
    if len(out_tile) != out_rank:
        raise ValueError("out_tile needs one (index, size) pair per output dim")
    shape = list(array_shape) or [1]
    in_rank = len(shape)
    offset = out_rank - in_rank
    index, tile = [], []
    for i, size in enumerate(shape):
        od = i + offset
        if size == 1:
            index.append("0")
            tile.append("1")
        elif size != out_shape[od]:
            raise Unsupported(f"side input {array}: shape {list(array_shape)} does not broadcast to "
                              f"{list(out_shape)}")
        else:
            index.append(str(out_tile[od][0]))
            tile.append(str(out_tile[od][1]))
    full_tile = [str(t) for _, t in out_tile]

    expr = f"ct.load({array}, index={tup(index)}, shape={tup(tile)}, padding_mode={padding})"
    if dtype:
        expr += f".astype({dtype})"
    rank_tile = ["1"] * (out_rank - in_rank) + tile if out_rank >= in_rank else tile
    if rank_tile != tile:
        expr = f"ct.reshape({expr}, {tup(rank_tile)})"
    if rank_tile != full_tile:
        expr = f"ct.broadcast_to({expr}, {tup(full_tile)})"
    lines.append(f"{indent}{var} = {expr}")
    return var
