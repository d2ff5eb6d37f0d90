"""Emitting the body and launch wrapper of a row-wise kernel: loading the main and side inputs of a tile
(`TileCtx`: full-view loads, gathers of broadcast inputs), storing outputs, the launch wrapper, and
`SameShapeGen`, the common generator of kernels whose outputs have the main input's shape (softmax, norms,
scans)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..specs import KernelSpec, TensorSpec
from .base import TORCH_TO_CT, Unsupported, off_16_bytes
from .rowwise_code import Code, Kernel
from .rowwise_spec import Parts, as_float, emit_ops
from .rowwise_values import FLOAT_DTYPES, ct_dtype, prod

if TYPE_CHECKING:
    from .rowwise import Layout

@dataclass
class TileCtx:
    """Where the current tile sits: its shape, the coordinate variables and how to load full-shape tensors.

    groups: (int32 coordinate tile variable, main-input dims it enumerates, outermost first).
    target: the shape side inputs broadcast against; dim_map: main-input dim → target dim.
    full_view: (wrapper view function, tile index, padding) for tensors whose shape equals `target`.
    """

    kernel: Kernel
    shape: str  # tile shape literal
    rank: int
    groups: list[tuple[str, list[int]]]
    sizes: list[int]  # main-input sizes
    target: list[int]
    dim_map: dict[int, int]
    full_view: object  # callable(name) -> wrapper expr, or None
    full_index: str
    inputs: dict[str, TensorSpec]
    cache: dict[str, str] = field(default_factory=dict)
    # (spec input) -> (wrapper expression, shape) when side inputs must be re-viewed to match a virtual main
    # shape (group norm splits C into (G, C/G))
    side_view: object = None
    load_hint: str = ""  # ", latency=..." on full-view loads
    unchecked: bool = False  # full-view loads with check_bounds=False (every tile lies inside the view)

    def load(self, value: str, code: Code, dtype: str = "ct.float32") -> str:
        key = f"{value}:{dtype}"
        if key in self.cache:
            return self.cache[key]
        t = self.inputs.get(value)
        if t is None:
            raise Unsupported(f"value {value} is neither computed in the kernel nor a kernel input")
        var = f"ld_{t.name}" if dtype == "ct.float32" else f"ld_{t.name}_{dtype.split('.')[-1]}"
        if t.role == "scalar":
            if not isinstance(t.value, (int, float)) or isinstance(t.value, bool):
                raise Unsupported(f"scalar input {t.name}={t.value!r}")
            return self.kernel.scalar(f"s_{t.name}", t.name)
        if t.dtype not in TORCH_TO_CT:
            raise Unsupported(f"input {t.name} of dtype {t.dtype}")
        src, shape = (t.name, list(t.shape)) if self.side_view is None else self.side_view(t)
        if len(shape) > len(self.target) or any(
                s != 1 and s != g for s, g in zip(reversed(shape), reversed(self.target))):
            raise Unsupported(f"input {t.name}{shape} does not broadcast to {self.target}")
        if shape == list(self.target) and self.full_view is not None and prod(shape) > 1:
            name = self.kernel.tensor(f"v_{t.name}", f"v_{t.name}", f"v_{t.name} = {self.full_view(src)}")
            code(f"{var} = ct.load({name}, index={self.full_index}, shape={self.shape}, "
                 f"{'check_bounds=False' if self.unchecked else 'padding_mode=ct.PaddingMode.ZERO'}"
                 f"{self.load_hint}).astype({dtype})")
        elif prod(shape) == 1:
            name = self.kernel.tensor(f"a_{t.name}", f"{t.name}.reshape(1)")
            code(f"{var} = ct.broadcast_to(ct.reshape(ct.load({name}, index=(0,), shape=(1,)).astype({dtype}), "
                 f"({', '.join(['1'] * self.rank)})), {self.shape})")
        else:
            name = self.kernel.tensor(f"a_{t.name}", src)
            idx = self.gather_indices(shape)
            code(f"{var} = ct.broadcast_to(ct.gather({name}, ({', '.join(idx)},)).astype({dtype}), {self.shape})")
        self.cache[key] = var
        return var

    def gather_indices(self, shape: list[int]) -> list[str]:
        offset = len(self.target) - len(shape)
        idx = ["0"] * len(shape)
        for var, dims in self.groups:
            stride = 1
            for pos in range(len(dims) - 1, -1, -1):
                d = dims[pos]
                size = self.sizes[d]
                j = self.dim_map[d] - offset
                if j >= 0 and shape[j] != 1:
                    e = var if stride == 1 else f"({var} // {stride})"
                    if pos > 0:
                        e = f"({e} % {size})"
                    idx[j] = e
                stride *= size
        return idx


def input_ctx(kernel: Kernel, layout: Layout, parts: Parts) -> TileCtx:
    from .rowwise import TUNING

    rank = len(layout.shape)
    return TileCtx(kernel, layout.tile, 2 if layout.kind == "row" else 3, layout.input_groups(), layout.shape,
                   list(layout.shape), {d: d for d in range(rank)}, layout.view_expr, layout.tile_index("c"),
                   parts.inputs, load_hint=layout.load_hint,
                   unchecked=(TUNING["unchecked_exact"] or layout.unchecked) and layout.exact)


def out_dim_map(shape: list[int], reduced: list[int], keepdim: bool) -> dict[int, int]:
    out, k = {}, 0
    for d in range(len(shape)):
        if d in reduced and not keepdim:
            continue
        out[d] = k
        k += 1
    return out


def store_line(view: str, index: str, var: str, dtype: str, shape: str, hint: str = "") -> str:
    tile = f"ct.broadcast_to({var}, {shape})"
    if dtype == "bool" and not var.startswith("eb_"):  # float 0/1 results (all/any) → bool
        tile = f"({tile} != 0.0)"
    else:
        tile = f"{tile}.astype({ct_dtype(dtype)})"
    return f"ct.store({view}, index={index}, tile={tile}{hint})"


def alloc_line(name: str, t: TensorSpec, device_of: str) -> str:
    return f"{name} = torch.empty({tuple(t.shape)}, dtype=torch.{t.dtype}, device={device_of}.device)"


def main_tensor(parts: Parts) -> TensorSpec | None:
    return parts.inputs.get(parts.main)


def first_tensor(spec: KernelSpec) -> TensorSpec:
    for t in spec.inputs:
        if t.role != "scalar":
            return t
    raise Unsupported("a kernel without tensor inputs")


def check_float(t: TensorSpec, what: str) -> None:
    if t.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"{what} of dtype {t.dtype}")


def wrapper_source(spec: KernelSpec, body: list[str]) -> str:
    params = ", ".join(t.name for t in spec.inputs)
    return f"def launch_{spec.id}({params}):\n" + "\n".join("    " + line for line in body) + "\n"


class SameShapeGen:
    """Common parts of kernels whose outputs have the main input's shape (softmax, norms, scans): every spec
    output is stored from the input tile, in the layout's view."""

    def __init__(self, spec: KernelSpec, parts: Parts, layout: Layout, out_shape: list[int] | None = None,
                 side_view=None):
        self.spec, self.parts, self.L = spec, parts, layout
        self.kernel = Kernel(f"{spec.id}_kernel")
        self.wrapper: list[str] = []
        self.out_views: list[tuple[str, TensorSpec]] = []
        self.side_view = side_view
        out_shape = list(layout.shape) if out_shape is None else list(out_shape)
        for t in spec.outputs:
            if list(t.shape) != out_shape:
                raise Unsupported(f"output {t.name}{t.shape} differs from the input shape {out_shape}")
            self.wrapper.append(alloc_line(t.name, t, self.device))
            self.out_views.append((f"o_{t.name}", t))

    def rows_aligned(self) -> bool:
        """Every output's rows in the layout's (O, R) view are whole 16-byte units (a row layout of
        freshly allocated outputs): TMA can store their tiles."""
        return self.L.kind == "row" and all(not off_16_bytes(t.dtype, self.L.R) for _, t in self.out_views)

    def masked_tma_occupancy(self, key: str) -> int | None:
        """TUNING[key] (the occupancy at which stacked masked rows store through TMA) where rows_aligned(), else
        None (plain stores)."""
        from .rowwise import TUNING  # (rowwise imports this module)

        return TUNING[key] if self.rows_aligned() else None

    @property
    def device(self) -> str:
        return first_tensor(self.spec).name

    def tile_ctx(self, chunk: str, kernel: Kernel | None = None) -> TileCtx:
        """Emit chunk coordinates; the context that loads side inputs (and the main input) for that chunk."""
        kernel = kernel or self.kernel
        self.L.emit_chunk_coords(kernel.body, chunk)
        ctx = input_ctx(kernel, self.L, self.parts)
        ctx.full_index = self.L.tile_index(chunk)
        ctx.side_view = self.side_view
        return ctx

    def load_tile(self, chunk: str, kernel: Kernel | None = None) -> tuple[str, dict[str, str], TileCtx]:
        """Emit chunk coordinates and the (prologue-transformed) float32 input tile (into `kernel`, by default
        this generator's kernel)."""
        kernel = kernel or self.kernel
        k = kernel.body
        ctx = self.tile_ctx(chunk, kernel)
        if self.parts.prologue:
            env = emit_ops(self.parts.prologue, {}, lambda v: ctx.load(v, k), k)
            return as_float(env[self.parts.main], k), env, ctx
        t = ctx.load(self.parts.main, k)
        return t, {self.parts.main: t}, ctx

    def resident_ok(self) -> bool:
        """Whether a chunk's (prologue-transformed) input tile alone can stand for the chunk in a second pass: no
        prologue, or one whose values are neither stored nor read by the epilogue (then the epilogue's
        environment needs only the anchor's result)."""
        parts = self.parts
        if not parts.prologue:
            return True
        stored = {t.graph_value for _, t in self.out_views} & parts.prologue_values
        return not stored and not parts.epilogue

    def finish_chunk(self, env: dict[str, str], ctx: TileCtx, chunk: str, vals: list[str],
                     which: set[str] | None = None, kernel: Kernel | None = None) -> None:
        """The anchor's result tiles `vals` (its outputs in getitem order) through the epilogue, then stored."""
        kernel = kernel or self.kernel
        k = kernel.body
        env = dict(env)
        env[self.parts.anchor.node] = vals[0]
        for gv, idx in self.parts.getitems.items():
            if idx < len(vals):
                env[gv] = vals[idx]
        env = emit_ops(self.parts.epilogue, env, lambda v: ctx.load(v, k), k)
        self.store_outputs(env, chunk, which, kernel)

    def store_outputs(self, env: dict[str, str], chunk: str, which: set[str] | None = None,
                      kernel: Kernel | None = None) -> None:
        kernel = kernel or self.kernel
        k, L = kernel.body, self.L
        for name, t in self.out_views:
            if which is not None and t.graph_value not in which:
                continue
            if t.graph_value not in env:
                raise Unsupported(f"output {t.name} ({t.graph_value}) is not computed by the kernel")
            kernel.tensor(name, f"{t.name}.reshape{L.view_shape}")
            k(store_line(name, L.tile_index(chunk), env[t.graph_value], t.dtype, L.tile, L.store_hint))

    def finish(self, doc: str, grid: tuple[int, ...] | None = None, before: list | None = None,
               extra_lines: list[str] | None = None):
        """The KernelSource: kernels in `before` ((Kernel, grid, doc) launched first, e.g. a scan's segment
        totals) and then this kernel; `extra_lines` (workspace allocations) go before the views and launches."""
        from .base import KernelSource

        spec = self.spec
        before = before or []
        body = list(self.wrapper) + list(extra_lines or [])
        for kern in [b[0] for b in before] + [self.kernel]:
            body.extend(line for line in kern.prep if line not in body)
        body.extend(kern.launch(g) for kern, g, _ in before)
        body.append(self.kernel.launch(grid or self.L.grid()))
        outs = [t.name for t in spec.outputs]
        body.append(f"return {outs[0]}" if len(outs) == 1 else f"return ({', '.join(outs)},)")
        code = "\n\n".join([kern.source(d) for kern, _, d in before] + [self.kernel.source(doc),
                                                                         wrapper_source(spec, body)])
        return KernelSource(spec_id=spec.id, family=spec.family, code=code, launch_name=f"launch_{spec.id}",
                            kernel_names=[kern.name for kern, _, _ in before] + [self.kernel.name], notes=[doc])
