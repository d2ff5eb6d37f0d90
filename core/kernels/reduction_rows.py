"""Row statistics broadcast back over their rows (fusion rule R7): a reduction over trailing dims with keepdim
whose result, after its scalar epilogue, is combined elementwise with the full rows it reduced. A hand-written RMS
norm, x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w, is the model case.

Each tile holds whole rows (at most fusion.ROW_STAT_MAX elements, stacked as the norms stack them): the prologue
runs on the tile, the reduction algebra of reduction.py (`Red.chunk` / `finalize`) gives the (rows, 1) statistic,
and the epilogue evaluates on the full tile with the statistic broadcast along the row, so x is read once and the
result written once (the unfused pair reads x twice)."""

from __future__ import annotations

from ..fusion import ROW_STAT_MAX
from ..specs import KernelSpec
from .base import KernelSource, Unsupported
from .rowwise import SameShapeGen, choose_tiles_full_row, flit, make_layout
from .rowwise_spec import Parts


def broadcasts_back(parts: Parts, shape: list[int], out_shape: list[int]) -> bool:
    """Whether the spec writes an epilogue value of the reduced input's shape (not just prologue values)."""
    pro = parts.prologue_values
    return list(out_shape) != list(shape) and any(
        list(t.shape) == list(shape) and t.graph_value not in pro for t in parts.spec.outputs)


def generate_rows(spec: KernelSpec, parts: Parts, red, shape: list[int], dims: list[int]) -> KernelSource:
    from .reduction import assign

    if red.nout != 1 or red.acc != "ct.float32":
        raise Unsupported(f"{parts.anchor.op} broadcast back over its rows")
    layout = choose_tiles_full_row(make_layout(shape, dims), max_single=ROW_STAT_MAX)
    if layout.kind != "row" or layout.nch != 1:
        raise Unsupported(f"{parts.anchor.op} over rows longer than {ROW_STAT_MAX} broadcast back over them")
    gen = SameShapeGen(spec, parts, layout)
    tma_occ = gen.masked_tma_occupancy("norm_masked_tma_occupancy")
    layout.persist(gen.kernel, tma_occupancy=tma_occ)
    k = gen.kernel.body
    layout.emit_block_coords(k)
    t, env, ctx = gen.load_tile("0")
    valid = None
    if layout.needs_mask():
        k(f"valid = cols < {layout.R}")
        valid = "valid"
    states = assign(k, "acc", red.chunk(k, t, "cols", valid, layout.axis, layout.tile, flit(float(layout.R))))
    res = assign(k, "res", red.finalize(k, states, layout.R))
    gen.finish_chunk(env, ctx, "0", res)
    doc = (f"{', '.join(spec.operations)}: {red.__class__.__name__} over dims {dims} of {shape} as rows "
           f"{layout.view_shape}, tile {layout.tile}, broadcast back over each row in registers"
           + (f", persistent grid of {layout.grid()[0]} blocks" if layout.persistent else ""))
    return gen.finish(doc)
