"""Shared machinery of the row-wise families (reduction, softmax, norm, scan).

Every kernel of these families reduces or scans one group of dimensions of its main input. The wrapper views the
input (a free view; a permute + contiguous only when the reduced dimensions are not adjacent) as

- ``row`` layout ``(M, R)``: the reduced dimensions are innermost; a block owns ``BM`` rows and walks the row in
  ``BR``-wide chunks (one chunk when the row fits the tile);
- ``col`` layout ``(O, R, I)``: dimensions after the reduced ones stay innermost so loads stay coalesced; a block
  owns a ``(BO, ., BI)`` window and walks ``R`` in ``BR`` chunks; the reduction runs along tile axis 1.

Fused elementwise ops are emitted by ``expr.emit_elementwise``. Their side inputs are loaded for the current tile
either with ``ct.load`` on the same view as the main tensor (same full shape) or with ``ct.gather`` on the
tensor itself, indexing each of its dimensions by a digit of the tile's row/column coordinates (broadcast
dimensions get index 0), so any broadcastable side input works without host-side copies.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field

from ..specs import KernelSpec, OpRecord, TensorSpec
from .base import TORCH_TO_CT, Unsupported, pow2_at_least

NUM_SM = 132  # H200; only used to pick how many blocks a grid should have at least

# Every performance choice of the row-wise generators (softmax, norm, reduction) lives in this one table, so a
# benchmark (bench/variants_rowwise.py) can switch defaults with `tuned(...)` and compare. Tile sizes follow from
# it deterministically per shape (see choose_tiles / choose_tiles_full_row).
TUNING = {
    # row-layout kernels with more row tiles than NUM_SM * occupancy launch that many blocks, each looping over
    # row tiles with a stride of the grid size: no tail of tiny blocks, and the compiler can prefetch the next
    # tile's load while the current one is reduced
    "persistent": True,
    "occupancy": 2,  # @ct.kernel(occupancy=...) of persistent kernels; their grid is NUM_SM * occupancy
    "load_latency": 10,  # latency hint (1..10, None: none) on loads of the main input: deeper prefetch
    "store_tma": False,  # allow_tma on stores of row tiles (None: compiler default); plain stores were faster
    "row_tile_elems": 8192,  # full-row kernels (softmax, norms): short rows are stacked up to this many elements
    "red_tile_elems": 4096,  # reductions: elements per tile (lane-wise accumulators double the register need)
    "max_single": 8192,  # longest row a full-row kernel keeps in registers; longer rows take two passes
    "chunk": 4096,  # chunk width of the two-pass path
    "col_min_bi": 64,  # inner-dim (col layout) kernels: window at least this many contiguous elements
    "col_max_single": 16384,  # col layout: reduced extent x window kept whole up to this many elements
    # kernels whose tile loop runs more chunk iterations per row tile than this (two-pass softmax/norms over
    # long rows) stay non-persistent and without the load latency hint: a persistent loop around such chunk
    # loops took tileiras 10 minutes and a 16 MB cubin (softmax 4096x32768, 2 passes x 8 chunks)
    "persist_max_chunks": 2,
    # group norm over (N, C, *S): view as (N*G, C/G, HW) so each channel row gets its weight/bias as one value
    # (a (C/G, 1) gather, not a per-element gather with a division by HW); a whole group up to this many
    # (padded) elements stays in one tile and is normalised from registers, else chunks of HW are walked twice
    "group_channel_rows": True,
    "group_max_single": 32768,
    "group_chunk": 4096,  # elements (C/G padded x HW chunk) per chunk of the two-pass group path
    "group_min_hw": 32,  # shorter channel rows (and HW == 1) keep the flat (N*G, C/G*HW) rows
    # long rows (chunked statistics / online softmax): accumulate per lane across chunks and reduce once after
    # the loop instead of two or three tile reductions per chunk. Softmax (one row-max reduction per chunk, the
    # sum of exp lane-wise): 4096x32768 fp32 compiles in 1.6 s to a 181 KB cubin (per-chunk sums: 2.7 s,
    # 430 KB). Layer/rms norm (lane-wise Welford / sum of squares): 2048x65536 took tileiras 181 s and 2.2 MB
    # (per-chunk Chan merge: 4.5 s, 339 KB), so norms keep the per-chunk merge
    "lane_softmax": True,
    "lane_norm": False,
    # latency hint on main-input loads of kernels with long chunk loops (None: none; the hint on persistent
    # multi-chunk kernels made tileiras take 10 minutes, so it is off by default)
    "long_latency": None,
}


@contextlib.contextmanager
def tuned(**overrides):
    """Generate with some TUNING entries changed (benchmarks of alternatives)."""
    unknown = set(overrides) - set(TUNING)
    if unknown:
        raise KeyError(f"unknown tuning keys {sorted(unknown)}")
    saved = dict(TUNING)
    TUNING.update(overrides)
    try:
        yield TUNING
    finally:
        TUNING.clear()
        TUNING.update(saved)


def load_hint() -> str:
    lat = TUNING["load_latency"]
    return f", latency={int(lat)}" if lat else ""


def store_hint() -> str:
    tma = TUNING["store_tma"]
    return "" if tma is None else f", allow_tma={bool(tma)}"
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def prod(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def decode(value):
    """An attrs/args literal as a Python value ({'float': 'inf'} → math.inf)."""
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    if isinstance(value, dict) and "dtype" in value:
        return value["dtype"]
    return value


def flit(value: float) -> str:
    """A float literal for generated code."""
    value = float(value)
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    return repr(value)


def norm_dims(dims, rank: int) -> list[int]:
    """Reduction dims as sorted non-negative ints; None or [] means every dim."""
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    dims = [int(d) for d in dims]
    if not dims:
        return list(range(rank))
    out = sorted({d % rank if rank else 0 for d in dims})
    return out if rank else []


def ct_dtype(dtype: str) -> str:
    if dtype not in TORCH_TO_CT:
        raise Unsupported(f"dtype {dtype}")
    return TORCH_TO_CT[dtype]


# ---- the spec: anchor, prologue, epilogue ---------------------------------------------------------------------

ELEMENTWISE = ("elementwise_unary", "elementwise_binary", "elementwise_ternary")


@dataclass
class Parts:
    spec: KernelSpec
    anchor: OpRecord
    prologue: list[OpRecord]  # elementwise ops the anchor's input depends on (evaluated on input tiles)
    epilogue: list[OpRecord]  # the other elementwise ops (evaluated on output tiles)
    main: str  # graph value of the anchor's main input
    inputs: dict[str, TensorSpec]  # graph value → spec input
    getitems: dict[str, int]  # graph value of a getitem of the anchor's tuple result → its index

    @property
    def prologue_values(self) -> set[str]:
        return {op.node for op in self.prologue}

    def input_spec(self, value: str) -> TensorSpec | None:
        return self.inputs.get(value)


def ref_of(arg) -> str | None:
    return arg["ref"] if isinstance(arg, dict) and "ref" in arg else None


def split_spec(spec: KernelSpec, categories: set[str]) -> Parts:
    anchors = [op for op in spec.ops if op.category in categories]
    if len(anchors) != 1:
        raise Unsupported(f"{len(anchors)} {'/'.join(sorted(categories))} ops in one kernel")
    anchor = anchors[0]
    for op in spec.ops:
        if op is not anchor and op.category not in ELEMENTWISE:
            raise Unsupported(f"{op.op} ({op.category}) fused with {anchor.op}")
    main = ref_of(anchor.args[0]) if anchor.args else None
    if main is None:
        raise Unsupported(f"{anchor.op} without a tensor input")
    by_node = {op.node: op for op in spec.ops}
    needed: set[str] = set()
    stack = [main] + [v for v in anchor.inputs if v != main and v in by_node]
    while stack:
        value = stack.pop()
        if value in by_node and value not in needed:
            needed.add(value)
            stack.extend(by_node[value].inputs)
    prologue = [op for op in spec.ops if op.node in needed]
    epilogue = [op for op in spec.ops if op is not anchor and op.node not in needed]
    return Parts(spec, anchor, prologue, epilogue, main, {t.graph_value: t for t in spec.inputs if t.graph_value},
                 _getitem_indices(spec, anchor))


_GETITEM = re.compile(r"^\s*(\w+) = (\w+)\[(\d+)\]\s*$", re.M)


def _getitem_indices(spec: KernelSpec, anchor: OpRecord) -> dict[str, int]:
    """getitem values of the anchor's tuple result (their records are not in spec.ops; the reference has them)."""
    out: dict[str, int] = {}
    for name, src, idx in _GETITEM.findall(spec.reference):
        if src == anchor.node:
            out[name] = int(idx)
    for t in spec.outputs:  # reference names are python names; outputs map them to graph values
        if t.name in out and t.graph_value:
            out[t.graph_value] = out[t.name]
    return out


def emit_ops(ops: list[OpRecord], env: dict[str, str], load_side, code: "Code") -> dict[str, str]:
    if not ops:
        return env
    from .expr import emit_elementwise

    return emit_elementwise(ops, env, load_side, code.lines, code.indent)


def as_float(var: str, code: "Code") -> str:
    """A float32 view of a prologue result: comparisons give bool tiles (expr names them eb_*)."""
    if var.startswith("eb_"):
        code(f"{var}_f = {var}.astype(ct.float32)")
        return f"{var}_f"
    return var


# ---- code writing ---------------------------------------------------------------------------------------------


class Code:
    def __init__(self, indent: int = 1):
        self.lines: list[str] = []
        self.level = indent
        self.counter = 0

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.level + line)

    @property
    def indent(self) -> str:
        return "    " * self.level

    @contextlib.contextmanager
    def block(self, header: str):
        self(header)
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1

    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Param:
    name: str  # kernel parameter
    wrapper: str  # wrapper expression passed for it
    annotation: str = ""  # e.g. "ct.Constant[int]"


class Kernel:
    """One @ct.kernel being assembled: its parameters (tensors first, then constants) and body."""

    def __init__(self, name: str):
        self.name = name
        self.tensors: list[Param] = []
        self.scalars: list[Param] = []
        self.consts: list[Param] = []
        self.body = Code()
        self.prep: list[str] = []  # wrapper lines preparing views for this kernel's tensor params
        self.options: dict[str, int] = {}  # @ct.kernel(...) hints, e.g. occupancy

    def tensor(self, name: str, wrapper: str, prep: str | None = None) -> str:
        if not any(p.name == name for p in self.tensors):
            self.tensors.append(Param(name, wrapper))
            if prep:
                self.prep.append(prep)
        return name

    def scalar(self, name: str, wrapper: str) -> str:
        if not any(p.name == name for p in self.scalars):
            self.scalars.append(Param(name, wrapper))
        return name

    def const(self, name: str, value: int) -> str:
        if not any(p.name == name for p in self.consts):
            self.consts.append(Param(name, repr(int(value)), "ct.Constant[int]"))
        return name

    def source(self, doc: str) -> str:
        params = [p.name for p in self.tensors + self.scalars] + [f"{p.name}: {p.annotation}" for p in self.consts]
        opts = ", ".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        deco = f"@ct.kernel({opts})" if opts else "@ct.kernel"
        head = f"{deco}\ndef {self.name}({', '.join(params)}):\n    \"\"\"{doc}\"\"\"\n"
        return head + self.body.text() + "\n"

    def launch(self, grid: tuple[int, ...]) -> str:
        args = [p.wrapper for p in self.tensors + self.scalars + self.consts]
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        return f"ct.launch(torch.cuda.current_stream(), {grid}, {self.name}, ({', '.join(args)},))"


# ---- layouts --------------------------------------------------------------------------------------------------


@dataclass
class Layout:
    """How the main input of shape `shape` is tiled; `dims_*` are its dims (size > 1) in canonical order."""

    kind: str  # "row" | "col"
    shape: list[int]
    perm: list[int] | None  # permutation applied before the view (non-adjacent reduced dims)
    O: int
    R: int
    I: int
    dims_o: list[int]
    dims_r: list[int]
    dims_i: list[int]
    BO: int = 1
    BR: int = 1
    BI: int = 1
    persistent: bool = False  # row layout: a grid of `cap` blocks loops over the row tiles
    cap: int = 0
    hints: bool = False  # emit the TUNING load/store hints on main-input loads and row-tile stores
    long_loops: bool = False  # many chunk iterations per tile: no load latency hint (compile time)

    def persist(self, kernel: "Kernel | None" = None, passes: int = 1) -> "Layout":
        """Make a row-layout kernel persistent (per TUNING) when it has more row tiles than one full grid; turn
        on load/store hints. Call after the tile sizes are final and before the body is emitted; `passes`: how
        many times the kernel walks the chunks of a row."""
        self.hints = True
        if self.nch * passes > TUNING["persist_max_chunks"]:
            self.long_loops = True
            return self
        occ = int(TUNING["occupancy"])
        cap = NUM_SM * max(1, occ)
        if TUNING["persistent"] and self.kind in ("row", "group") and self.blocks() > cap:
            self.persistent, self.cap = True, cap
            if kernel is not None and occ > 1:
                kernel.options["occupancy"] = occ
        return self

    @property
    def load_hint(self) -> str:
        if self.hints and self.long_loops:
            lat = TUNING["long_latency"]
            return f", latency={int(lat)}" if lat else ""
        return load_hint() if self.hints else ""

    @property
    def store_hint(self) -> str:
        return store_hint() if self.hints else ""

    @property
    def nch(self) -> int:
        return cdiv(self.R, self.BR)

    @property
    def view_shape(self) -> tuple[int, ...]:
        return (self.O, self.R) if self.kind == "row" else (self.O, self.R, self.I)

    @property
    def tile(self) -> str:
        return f"({self.BO}, {self.BR})" if self.kind == "row" else f"({self.BO}, {self.BR}, {self.BI})"

    @property
    def axis(self) -> int:
        return 1

    @property
    def red_tile(self) -> str:
        return f"({self.BO}, 1)" if self.kind == "row" else f"({self.BO}, 1, {self.BI})"

    @property
    def red_view_shape(self) -> tuple[int, ...]:
        return (self.O, 1) if self.kind == "row" else (self.O, 1, self.I)

    def tiles_grid(self) -> tuple[int, ...]:
        if self.kind == "row":
            return (cdiv(self.O, self.BO),)
        return (cdiv(self.O, self.BO), cdiv(self.I, self.BI))

    def grid(self) -> tuple[int, ...]:
        if self.persistent:
            return (min(self.cap, cdiv(self.O, self.BO)),)
        return self.tiles_grid()

    def blocks(self) -> int:
        """Number of tiles (= blocks of a non-persistent grid)."""
        return prod(self.tiles_grid())

    def tile_index(self, chunk: str) -> str:
        return f"(pid, {chunk})" if self.kind == "row" else f"(pid, {chunk}, pid_i)"

    def red_index(self) -> str:
        return "(pid, 0)" if self.kind == "row" else "(pid, 0, pid_i)"

    def view_expr(self, tensor: str) -> str:
        """Wrapper expression viewing a tensor of the main input's full shape in this layout."""
        t = tensor
        if self.perm is not None:
            t = f"{t}.permute{tuple(self.perm)}"
        return f"{t}.contiguous().reshape{self.view_shape}"

    def emit_block_coords(self, code: Code) -> None:
        """Coordinates of the block's tile; a persistent kernel opens its loop over row tiles here (the rest of
        the body goes inside it)."""
        if self.persistent:
            code(f"for pid in range(ct.bid(0), {cdiv(self.O, self.BO)}, ct.num_blocks(0)):")
            code.level += 1
        else:
            code("pid = ct.bid(0)")
        if self.kind == "row":
            scaled = f"pid * {self.BO}" if self.BO > 1 else "pid"
            code(f"rows = {scaled} + ct.arange({self.BO}, dtype=ct.int32)[:, None]")
        else:
            code("pid_i = ct.bid(1)")
            code(f"rows = pid * {self.BO} + ct.arange({self.BO}, dtype=ct.int32)[:, None, None]")
            code(f"inner = pid_i * {self.BI} + ct.arange({self.BI}, dtype=ct.int32)[None, None, :]")

    def emit_chunk_coords(self, code: Code, chunk: str) -> None:
        start = "" if chunk == "0" else f"{chunk} * {self.BR} + "
        index = "[None, :]" if self.kind == "row" else "[None, :, None]"
        code(f"cols = {start}ct.arange({self.BR}, dtype=ct.int32){index}")

    def input_groups(self) -> list[tuple[str, list[int]]]:
        groups = [("rows", self.dims_o), ("cols", self.dims_r)]
        if self.kind == "col":
            groups.append(("inner", self.dims_i))
        return groups

    def output_groups(self) -> list[tuple[str, list[int]]]:
        groups = [("rows", self.dims_o)]
        if self.kind == "col":
            groups.append(("inner", self.dims_i))
        return groups

    def needs_mask(self) -> bool:
        return self.R % self.BR != 0

    def valid(self) -> str | None:
        """Boolean expression of the tile lanes inside the reduced extent (None: every lane is)."""
        return f"(cols < {self.R})" if self.needs_mask() else None

    @property
    def count(self) -> int:
        """Elements reduced per row."""
        return self.R

    @property
    def chunk_elems(self) -> int:
        """Reduced elements per row in one chunk tile."""
        return self.BR


def make_layout(shape: list[int], reduced: list[int]) -> Layout:
    """Canonical (M, R) or (O, R, I) view of `shape` reducing/scanning `reduced` (sorted dims)."""
    rank = len(shape)
    red = set(reduced)
    eff = [d for d in range(rank) if shape[d] > 1]
    eff_red = [d for d in eff if d in red]
    eff_keep = [d for d in eff if d not in red]
    if eff_red:
        first, last = eff.index(eff_red[0]), eff.index(eff_red[-1])
        adjacent = eff[first:last + 1] == eff_red
    else:
        adjacent, first, last = True, len(eff), len(eff) - 1
    if adjacent:
        dims_o, dims_r, dims_i = eff[:first], eff_red, eff[last + 1:]
        perm = None
    else:
        dims_o, dims_r, dims_i = eff_keep, eff_red, []
        perm = [d for d in range(rank) if d not in red] + [d for d in range(rank) if d in red]
    O, R, I = (prod(shape[d] for d in g) for g in (dims_o, dims_r, dims_i))
    kind = "row" if I == 1 else "col"
    if kind == "row":
        dims_o = dims_o + dims_i  # empty
    return Layout(kind, list(shape), perm, O, R, I, dims_o, dims_r, dims_i if kind == "col" else [])


def choose_tiles(layout: Layout, tile_elems: int, max_br: int, min_tile: int = 512) -> Layout:
    """Power-of-two tile sizes: whole rows up to `max_br`, else `max_br` chunks; fill the tile with rows, then
    shrink the row block while the grid is smaller than the GPU (keeping at least `min_tile` elements)."""
    L = layout
    if L.kind == "row":
        L.BR = min(pow2_at_least(L.R), max_br)
        L.BO = min(pow2_at_least(L.O), max(1, tile_elems // L.BR))
        while L.BO > 1 and L.blocks() < NUM_SM and L.BO * L.BR > min_tile:
            L.BO //= 2
    else:
        L.BI = min(pow2_at_least(L.I), 128)
        L.BR = min(pow2_at_least(L.R), max(1, tile_elems // L.BI), max_br)
        L.BO = min(pow2_at_least(L.O), max(1, tile_elems // (L.BR * L.BI)))
        while L.BO > 1 and L.blocks() < NUM_SM and L.BO * L.BR * L.BI > min_tile:
            L.BO //= 2
        while L.BI > 32 and L.I >= L.BI and L.blocks() < NUM_SM:
            L.BI //= 2  # narrower column windows for more blocks; the rows per chunk grow to keep the tile size
            L.BR = min(pow2_at_least(L.R), max(1, tile_elems // L.BI), max_br)
    return L


# ---- loading tensors for a tile -------------------------------------------------------------------------------


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
                 f"padding_mode=ct.PaddingMode.ZERO{self.load_hint}).astype({dtype})")
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
    rank = len(layout.shape)
    return TileCtx(kernel, layout.tile, 2 if layout.kind == "row" else 3, layout.input_groups(), layout.shape,
                   list(layout.shape), {d: d for d in range(rank)}, layout.view_expr, layout.tile_index("c"),
                   parts.inputs, load_hint=layout.load_hint)


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


def choose_tiles_full_row(layout: Layout, max_single: int | None = None, chunk: int | None = None,
                          tile_elems: int | None = None) -> Layout:
    """Tiles for kernels that keep a whole row in registers when they can (softmax, norms, scans): the full
    reduced extent in one tile up to `max_single` elements, else `chunk`-element chunks; short rows are stacked
    `BO` per tile up to `tile_elems` elements. (Tiles above 8192 elements compile several times slower and to
    much larger cubins, so rows longer than that take two passes.) Defaults come from TUNING; the col layout
    (reduced dims in the middle) keeps windows of at least `col_min_bi` contiguous inner elements so each row
    segment of a load is a full 128-byte line, and keeps (reduced extent x window) whole up to `col_max_single`."""
    L = layout
    explicit = max_single is not None
    max_single = TUNING["max_single"] if max_single is None else max_single
    chunk = TUNING["chunk"] if chunk is None else chunk
    tile_elems = TUNING["row_tile_elems"] if tile_elems is None else tile_elems
    full = pow2_at_least(L.R)
    if L.kind == "row":
        return choose_tiles(L, max(tile_elems, min(full, max_single)), max_br=full if full <= max_single else chunk)
    col_single = max_single if explicit else max(max_single, TUNING["col_max_single"])
    bi_min = min(pow2_at_least(L.I), 32 if explicit else max(32, TUNING["col_min_bi"]))
    if full * bi_min <= col_single:
        L.BR = full
        L.BI = min(pow2_at_least(L.I), 256, max(bi_min, max(tile_elems, full * bi_min) // full))
    else:
        L.BI = bi_min
        L.BR = max(1, chunk // L.BI)
    L.BO = min(pow2_at_least(L.O), max(1, tile_elems // (L.BR * L.BI)))
    while L.BO > 1 and L.blocks() < NUM_SM and L.BO * L.BR * L.BI > 512:
        L.BO //= 2
    while L.BI > 32 and L.I >= L.BI and L.blocks() < NUM_SM and L.BO * L.BR * L.BI > 512:
        L.BI //= 2
    return L


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

    @property
    def device(self) -> str:
        return first_tensor(self.spec).name

    def load_tile(self, chunk: str, kernel: Kernel | None = None) -> tuple[str, dict[str, str], TileCtx]:
        """Emit chunk coordinates and the (prologue-transformed) float32 input tile (into `kernel`, by default
        this generator's kernel)."""
        kernel = kernel or self.kernel
        k, L = kernel.body, self.L
        L.emit_chunk_coords(k, chunk)
        ctx = input_ctx(kernel, L, self.parts)
        ctx.full_index = L.tile_index(chunk)
        ctx.side_view = self.side_view
        if self.parts.prologue:
            env = emit_ops(self.parts.prologue, {}, lambda v: ctx.load(v, k), k)
            return as_float(env[self.parts.main], k), env, ctx
        t = ctx.load(self.parts.main, k)
        return t, {self.parts.main: t}, ctx

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
