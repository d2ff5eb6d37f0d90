"""Index arithmetic shared by the convolution kernels (conv_builder.py, conv_input.py, conv_gemm.py): cuTile
expression text for affine maps and mixed-radix digits of a block id, the choice of the (BOH, BOW) box of
output positions a block owns, and the 3-D frame every convolution runs in."""

from __future__ import annotations

from .gemm_common import cdiv, pow2_clamp, prod


def affine(x: str, mul: int = 1, add: int | str = 0) -> str:
    """`x * mul + add` without the no-op parts."""
    e = x if mul == 1 else f"{x} * {mul}"
    if isinstance(add, str):
        return f"{e} + {add}" if add not in ("0", "") else e
    return e if add == 0 else (f"{e} + {add}" if add > 0 else f"{e} - {-add}")


def digits(value: str, sizes: list[int], names: list[str], ind: str, lines: list[str]) -> None:
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


def box(rows: int, cols: int, target: int, prefer_size: bool = False) -> tuple[int, int]:
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


def frame(v: list[int], fill: int) -> list[int]:
    """Pad a per-spatial-dim list to the 3-D frame (D, H, W)."""
    return [fill] * (3 - len(v)) + list(v)
