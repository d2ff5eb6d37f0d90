"""Matmul-family kernels: linear, matmul (every rank combination), mm, bmm, addmm, baddbmm, addbmm, einsum (forms
that are a batched GEMM), mv, addmv, dot, vdot, outer — with the fused elementwise epilogue and eval batch norm
folded into a linear's weights (R6).

Every anchor is parsed into one logical GEMM  out[batch..., m, n] = sum_k A[batch..., m, k] * B[batch..., k, n]:
A and B are host views of the inputs (permute/reshape only; transposed storage is read in place, see below),
each batch dim either matches the output's or is 1 (broadcast: the kernel reads batch index 0). When B has no
batch and nothing in the epilogue breaks the row structure, the batch dims fold into M (one big GEMM).

The kernel: one (BM, BN) output tile per block, blocks ordered in groups of GROUP_M tile rows so that blocks running
together share A and B tiles in L2, batch on the second grid dim. The K loop loads (BM, BK) and (BK, BN) tiles with
zero padding (ragged M, N, K need no special case) and accumulates on tensor cores with `ct.mma` into float32. An
operand stored transposed (a `.t()` weight, a `.transpose(-1, -2)` view from glue) is detected at launch from its
strides and loaded with a transposed `order`, without a copy. fp16/bf16 inputs run at full tensor-core rate; float32
inputs run on tensor cores too, in split TF32 (gemm_common.mma_lines: three TF32 mmas over each operand's hi/lo
parts, float32-level results; plain TF32's 10-bit mantissa would miss the checker's float32 tolerance for long K,
and a float32 `mma` is scalar FFMA on sm_90). The epilogue (alpha/beta, bias, folded batch norm, the fused
elementwise ops) runs on the float32 accumulator; each output is cast to its dtype on store. Tile sizes, GROUP_M and
the occupancy/CGA hints come from gemm_common.TILES (see choose_tiles).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

from ..specs import KernelSpec, OpRecord
from .base import NUM_SM as NUM_SMS, KernelSource, Unsupported
from .gemm_common import (LOW_PRECISION, SideOperands, TILES, ZERO, BatchNorm, Signature, bn_fold_lines, cdiv, check_float,
                          elementwise_ops, fresh_name, is_ref, kernel_decorator, load_side_lines, mma_lines,
                          parse_batch_norm, pow2_clamp, prod, side_view, tensor_input, tup, value_shapes)

ANCHORS = {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum", "mv", "addmv", "dot", "vdot",
           "outer", "ger"}
MAX_GRID_Y = 65535


# ---------------------------------------------------------------------------------------------------------------
# the logical GEMM


@dataclass
class Operand:
    """A GEMM operand as dims of one input: rows/cols form the matrix, batch[j] is the input dim matching output
    batch dim j (None where the input has none, i.e. broadcast)."""

    value: str  # graph value
    shape: list[int]
    batch: list[int | None]
    rows: list[int]
    cols: list[int]

    @property
    def R(self) -> int:
        return prod([self.shape[d] for d in self.rows])

    @property
    def C(self) -> int:
        return prod([self.shape[d] for d in self.cols])

    def batch_sizes(self) -> list[int]:
        return [1 if d is None else self.shape[d] for d in self.batch]

    def host(self, name: str, fold: bool) -> str:
        """Host expression of this operand's view: (batch..., R, C), or (R', C) with batch folded into rows."""
        present = [d for d in self.batch if d is not None]
        if fold:
            perm = present + self.rows + self.cols
            rows = prod([self.shape[d] for d in present]) * self.R
            view = [rows, self.C]
        else:
            perm = present + self.rows + self.cols
            view = self.batch_sizes() + [self.R, self.C]
        expr = name
        if perm != list(range(len(self.shape))):
            expr += f".permute{tup(perm)}"
        permuted = [self.shape[d] for d in perm]
        if permuted != view:
            expr += f".reshape{tup(view)}"
        return expr


@dataclass
class Gemm:
    out_shape: list[int]
    ob: list[int]  # output dims: batch, M, N groups
    om: list[int]
    on: list[int]
    a: Operand
    b: Operand
    alpha: float = 1.0
    beta: float = 1.0
    addend: str | None = None  # graph value added as beta * addend (bias / addmm input)
    reduce_batch: bool = False  # addbmm: sum over the operands' batch dim
    fold: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def M(self) -> int:
        return self.view_shape[-2]

    @property
    def N(self) -> int:
        return self.view_shape[-1]

    @property
    def K(self) -> int:
        return self.a.C

    @property
    def batch_shape(self) -> list[int]:
        return [] if self.fold else [self.out_shape[d] for d in self.ob]

    @property
    def view_shape(self) -> list[int]:
        if self.fold:
            return [prod([self.out_shape[d] for d in self.ob]) * prod([self.out_shape[d] for d in self.om]),
                    prod([self.out_shape[d] for d in self.on])]
        return self.batch_shape + [prod([self.out_shape[d] for d in self.om]),
                                   prod([self.out_shape[d] for d in self.on])]

    @property
    def perm(self) -> list[int]:
        return self.ob + self.om + self.on

    @property
    def groups(self) -> list[list[int]]:
        if self.fold:
            return [self.ob + self.om, self.on]
        return [[d] for d in self.ob] + [self.om, self.on]


def _vector(value: str, shape: list[int], as_rows: bool) -> Operand:
    return Operand(value, shape, [], [0] if as_rows else [], [] if as_rows else [0])


def _matmul_operands(av: str, a: list[int], bv: str, b: list[int], out: list[int]) -> Gemm:
    """torch.matmul semantics for every rank combination."""
    ra, rb, ro = len(a), len(b), len(out)
    if ra == 0 or rb == 0:
        raise Unsupported("matmul of a 0-d tensor")
    if ra == 1 and rb == 1:
        return Gemm(out, [], [], [], _vector(av, a, False), _vector(bv, b, True))
    if rb == 1:  # (..., M, K) @ (K,) -> (..., M)
        A = Operand(av, a, [], list(range(ra - 1)), [ra - 1])
        return Gemm(out, [], list(range(ro)), [], A, _vector(bv, b, True))
    if ra == 1:  # (K,) @ (..., K, N) -> (..., N)
        nb = rb - 2
        B = Operand(bv, b, list(range(nb)), [rb - 2], [rb - 1])
        A = Operand(av, a, [None] * nb, [], [0])
        return Gemm(out, list(range(nb)), [], [ro - 1], A, B)
    nb = ro - 2
    A = Operand(av, a, [None] * (nb - (ra - 2)) + list(range(ra - 2)), [ra - 2], [ra - 1])
    B = Operand(bv, b, [None] * (nb - (rb - 2)) + list(range(rb - 2)), [rb - 2], [rb - 1])
    return Gemm(out, list(range(nb)), [ro - 2], [ro - 1], A, B)


def _einsum(eq: str, av: str, a: list[int], bv: str, b: list[int], out: list[int]) -> Gemm:
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != 2:
        raise Unsupported(f"einsum {eq!r}: only two operands form a matmul")
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in used]

    def expand(term: str, rank: int, nell: int) -> str:
        if "..." not in term:
            return term
        k = rank - (len(term) - 3)
        return term.replace("...", "".join(spare[nell - k:nell]))

    nell = max(len(a) - (len(terms[0]) - 3) if "..." in terms[0] else 0,
               len(b) - (len(terms[1]) - 3) if "..." in terms[1] else 0)
    ta, tb = expand(terms[0], len(a), nell), expand(terms[1], len(b), nell)
    if rhs is None:
        counts = {c: (ta + tb).count(c) for c in ta + tb}
        rhs = "".join(sorted(c for c in counts if counts[c] == 1))
    else:
        rhs = rhs.replace("...", "".join(spare[:nell]))
    if len(ta) != len(a) or len(tb) != len(b) or len(rhs) != len(out):
        raise Unsupported(f"einsum {eq!r}: subscripts do not match the operand ranks")
    for t in (ta, tb, rhs):
        if len(set(t)) != len(t):
            raise Unsupported(f"einsum {eq!r}: a repeated subscript (diagonal/trace) is not a matmul")
    sa, sb, so = set(ta), set(tb), set(rhs)
    for c in sa | sb:
        if c not in so and not (c in sa and c in sb):
            raise Unsupported(f"einsum {eq!r}: subscript {c!r} is summed over one operand only")
    for c in so:
        if c not in sa and c not in sb:
            raise Unsupported(f"einsum {eq!r}: output subscript {c!r} is in no operand")
    batch = [c for c in rhs if c in sa and c in sb]
    ms = [c for c in rhs if c in sa and c not in sb]
    ns = [c for c in rhs if c in sb and c not in sa]
    ks = [c for c in ta if c in sb and c not in so]
    for c in batch:
        ea, eb, eo = a[ta.index(c)], b[tb.index(c)], out[rhs.index(c)]
        if ea not in (1, eo) or eb not in (1, eo):
            raise Unsupported(f"einsum {eq!r}: batch dim {c!r} sizes {ea}, {eb} -> {eo}")
    for c in ks:
        if a[ta.index(c)] != b[tb.index(c)]:
            raise Unsupported(f"einsum {eq!r}: contracted dim {c!r} broadcasts")
    A = Operand(av, a, [ta.index(c) for c in batch], [ta.index(c) for c in ms], [ta.index(c) for c in ks])
    B = Operand(bv, b, [tb.index(c) for c in batch], [tb.index(c) for c in ks], [tb.index(c) for c in ns])
    return Gemm(out, [rhs.index(c) for c in batch], [rhs.index(c) for c in ms], [rhs.index(c) for c in ns], A, B)


def parse_anchor(spec: KernelSpec, rec: OpRecord) -> Gemm:
    from .expr import bind_args

    op = rec.op.rstrip("_") if rec.op.endswith("_") and rec.op.rstrip("_") in ANCHORS else rec.op
    a = bind_args(rec)
    out = list(rec.output)
    what = rec.target

    def t(name):
        return tensor_input(spec, a.get(name), f"{what} argument {name}")

    def num(name, default):
        v = a.get(name, default)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        if v is None:
            return float(default)
        raise Unsupported(f"{what}: non-literal {name}={v!r}")

    if op == "linear":
        x, w = t("input"), t("weight")
        if len(w.shape) != 2:
            raise Unsupported(f"{what}: weight of rank {len(w.shape)}")
        rx = len(x.shape)
        A = Operand(x.graph_value, x.shape, [], list(range(rx - 1)), [rx - 1])
        B = Operand(w.graph_value, w.shape, [], [1], [0])
        g = Gemm(out, [], list(range(len(out) - 1)), [len(out) - 1], A, B)
        bias = a.get("bias")
        if bias is not None:
            g.addend = tensor_input(spec, bias, f"{what} bias").graph_value
        return g
    if op in ("matmul", "mm", "bmm", "dot", "vdot", "mv"):
        names = {"matmul": ("self", "other"), "mm": ("self", "mat2"), "bmm": ("self", "mat2"),
                 "dot": ("self", "tensor"), "vdot": ("self", "other"), "mv": ("self", "vec")}[op]
        x, y = t(names[0]), t(names[1])
        return _matmul_operands(x.graph_value, x.shape, y.graph_value, y.shape, out)
    if op in ("addmm", "baddbmm", "addbmm", "addmv"):
        names = {"addmm": ("mat1", "mat2"), "baddbmm": ("batch1", "batch2"), "addbmm": ("batch1", "batch2"),
                 "addmv": ("mat", "vec")}[op]
        x, y = t(names[0]), t(names[1])
        inp = t("self")
        if op == "addbmm":
            A = Operand(x.graph_value, x.shape, [0], [1], [2])
            B = Operand(y.graph_value, y.shape, [0], [1], [2])
            g = Gemm(out, [], [0], [1], A, B, reduce_batch=True)
        else:
            g = _matmul_operands(x.graph_value, x.shape, y.graph_value, y.shape, out)
        g.alpha, g.beta = num("alpha", 1.0), num("beta", 1.0)
        g.addend = inp.graph_value if g.beta != 0.0 else None
        return g
    if op in ("outer", "ger"):
        x, y = t("self"), t("vec2")
        return Gemm(out, [], [0], [1], Operand(x.graph_value, x.shape, [], [0], []),
                    Operand(y.graph_value, y.shape, [], [], [0]))
    if op == "einsum":
        eq, ops = a.get("equation"), a.get("tensors")
        if not isinstance(eq, str) or not isinstance(ops, list) or len(ops) != 2:
            raise Unsupported(f"{what}: only two-operand einsum forms a matmul")
        x, y = (tensor_input(spec, v, f"{what} operand") for v in ops)
        return _einsum(eq, x.graph_value, x.shape, y.graph_value, y.shape, out)
    raise Unsupported(f"{what}: not a matmul this generator knows")


# ---------------------------------------------------------------------------------------------------------------
# tiles


def choose_tiles(M: int, N: int, K: int, batch: int, low: bool) -> tuple[int, int, int]:
    """Deterministic tile rule, read from gemm_common.TILES: "mm_large" (128x256x64) for fp16/bf16 problems of at
    least "mm_large_min_elems" outputs and more than one K step, "mm_low" (128x128x64) for other fp16/bf16, "mm_f32"
    (128x64x32) for float32 operands (split TF32; 128x128x32 spills), shrunk to the problem
    (powers of two, >= 16); a K of at most "mm_one_step_k" (fp16/bf16) is covered by one K step; the larger of
    BM/BN is halved while the grid would leave most SMs idle."""
    if low and K > TILES["mm_one_step_k"] and M * N >= TILES["mm_large_min_elems"]:
        bm0, bn0, bk0 = TILES["mm_large"]
    else:
        bm0, bn0, bk0 = TILES["mm_low"] if low else TILES["mm_f32"]
    bm, bn = pow2_clamp(M, 16, bm0), pow2_clamp(N, 16, bn0)
    if low and K <= TILES["mm_one_step_k"]:
        bk = pow2_clamp(K, 16, TILES["mm_one_step_k"])
    else:
        bk = pow2_clamp(K, 16, bk0)
    while cdiv(M, bm) * cdiv(N, bn) * batch < NUM_SMS // 2 and max(bm, bn) > 64:
        if bm >= bn:
            bm //= 2
        else:
            bn //= 2
    return bm, bn, bk


def n_tiles_per_block(g: Gemm, bm: int, bn: int, bk: int, batch: int, low: bool) -> int:
    """N tiles each block walks (TILES["mm_one_step_n_tiles"], halved until it divides the N tiles and the grid
    keeps two blocks per SM): only for fp16/bf16 GEMMs of one K step, which are bound by writing their output."""
    nl = int(TILES["mm_one_step_n_tiles"] or 1)
    if not low or cdiv(g.K, bk) != 1 or g.reduce_batch:
        return 1
    tiles_n = cdiv(g.N, bn)
    blocks = cdiv(g.M, bm) * tiles_n * batch
    while nl > 1 and (tiles_n % nl or blocks // nl < 2 * NUM_SMS):
        nl //= 2
    return nl


def worker_warps_for(bm: int, bn: int, low: bool) -> int | None:
    """TILES["mm_worker_warps"] for fp16/bf16 tiles of at least "mm_worker_warps_min_elems" accumulator elements
    (the tiles that spill at the compiler's warp count); smaller tiles, e.g. the shrunk tiles of a mid-size
    problem, keep the compiler's choice."""
    warps = TILES["mm_worker_warps"]
    return int(warps) if warps and low and bm * bn >= TILES["mm_worker_warps_min_elems"] else None


def occupancy_for(K: int, bk: int, low: bool, worker_warps: int | None = None,
                  blocks: int | None = None) -> int | None:
    """The occupancy hint of the table: its worker-warps entry for a kernel on TILES["mm_worker_warps"], its
    one-K-step entry when the whole K fits one step (fp16/bf16), its one-wave entry for a fp16/bf16 K loop whose
    grid of `blocks` has at most one block per SM (nothing shares an SM, so the hint only caps registers)."""
    if worker_warps:
        return TILES["mm_occupancy_worker_warps"]
    if low and cdiv(K, bk) == 1:
        return TILES["mm_occupancy_one_step"]
    if low and blocks is not None and blocks <= NUM_SMS and TILES["mm_occupancy_one_wave"]:
        return TILES["mm_occupancy_one_wave"]
    return TILES["mm_occupancy"]


# ---------------------------------------------------------------------------------------------------------------
# code generation


def generate(spec: KernelSpec) -> KernelSource:
    idx = [i for i, r in enumerate(spec.ops) if r.category == "matmul"]
    if len(idx) != 1:
        raise Unsupported(f"expected one matmul op in the kernel, found {len(idx)}")
    anchor = spec.ops[idx[0]]
    rest = spec.ops[:idx[0]] + spec.ops[idx[0] + 1:]
    bn: BatchNorm | None = None
    if idx[0] + 1 < len(spec.ops) and spec.ops[idx[0] + 1].category == "normalization":
        bn = parse_batch_norm(spec.ops[idx[0] + 1], anchor.node)
        rest = [r for r in rest if r.node != bn.node]
        if anchor.op != "linear" or len(anchor.output) != 2:
            raise Unsupported(f"batch norm after {anchor.op} with output {anchor.output}: only a 2-D linear's "
                              "weights fold (the batch norm's channels must be the linear's outputs)")
    epilogue = elementwise_ops(rest, anchor.op)
    g = parse_anchor(spec, anchor)
    return _Builder(spec, anchor, g, bn, epilogue).build()


class _Builder(SideOperands):
    def __init__(self, spec: KernelSpec, anchor: OpRecord, g: Gemm, bn: BatchNorm | None, epilogue: list[OpRecord]):
        self.spec, self.anchor, self.g, self.bn, self.epilogue = spec, anchor, g, bn, epilogue
        self.inputs = {t.graph_value: t for t in spec.inputs}
        self.shapes = value_shapes(spec)
        self.sides: list[tuple[str, str, str, list[int]]] = []  # (kernel param, host expr, graph value, view)
        self.side_vars: dict[str, str] = {}
        self.scalars: list[tuple[str, str]] = []  # (kernel param, host expr)
        self.kid = spec.id

    # ---- checks and plan ----------------------------------------------------------------------------------
    def plan(self) -> None:
        g, spec = self.g, self.spec
        for o in spec.outputs:
            if list(o.shape) != g.out_shape:
                raise Unsupported(f"output {o.name} has shape {o.shape}, the matmul's is {g.out_shape}")
        ta, tb = self.inputs[g.a.value], self.inputs[g.b.value]
        check_float(spec, [ta, tb], self.anchor.target)
        self.mma_dtype = None if ta.dtype == tb.dtype else "ct.float32"
        self.low = ta.dtype in LOW_PRECISION and tb.dtype in LOW_PRECISION
        self.f32 = not (ta.dtype == tb.dtype and self.low)  # the mma's operands are float32 (split TF32)
        # fold the batch into M when B has no batch and every side input keeps the rows intact
        if g.ob and not g.reduce_batch and all(s == 1 for s in g.b.batch_sizes()) and \
                all(s != 1 or self.g.out_shape[d] == 1 for s, d in zip(g.a.batch_sizes(), g.ob)):
            g.fold = True
            for value in self._side_values():
                shape = self.shapes.get(value)
                if shape is None:
                    continue
                rank = len(g.out_shape)
                padded = [1] * (rank - len(shape)) + list(shape)
                rows = [padded[d] for d in g.ob + g.om]
                full = [g.out_shape[d] for d in g.ob + g.om]
                if not (all(r == 1 for r in rows) or rows == full):
                    g.fold = False
                    break
        self.batch = prod(g.batch_shape)
        if self.batch > MAX_GRID_Y:
            raise Unsupported(f"batch of {self.batch} matmuls exceeds the grid's second dimension")
        self.out_view = g.view_shape
        self._check_out_view()
        self.tile_m, self.tile_n, self.tile_k = choose_tiles(g.M, g.N, g.K, self.batch, self.low)
        self.n_loop = n_tiles_per_block(g, self.tile_m, self.tile_n, self.tile_k, self.batch, self.low)
        self.ind = "    "  # the epilogue's indent (one level deeper inside the loop over N tiles)

    def _side_values(self) -> list[str]:
        env = {self.anchor.node} | ({self.bn.node} if self.bn else set())
        values = []
        if self.g.addend:
            values.append(self.g.addend)
        for r in self.epilogue:
            env.add(r.node)
            for v in r.args + list(r.kwargs.values()):
                for ref in _refs(v):
                    if ref not in env and ref in self.inputs:
                        values.append(ref)
        return values

    def _check_out_view(self) -> None:
        import torch

        g = self.g
        meta = torch.empty(g.out_shape, device="meta")
        try:
            meta.permute(g.perm).view(self.out_view)
        except RuntimeError:
            raise Unsupported(f"output layout {g.out_shape} with dim order {g.perm} is not a view of the GEMM "
                              f"result") from None

    # ---- signature --------------------------------------------------------------------------------------
    def signature(self) -> Signature:
        sig = Signature(self.spec, prepare=self.bn is not None)
        if self.bn is not None:
            w = self.inputs[self.g.b.value]
            consumed = {self.g.b.value, self.bn.mean, self.bn.var, self.bn.weight, self.bn.bias, self.g.addend}
            for v in consumed:
                if v is not None and (v not in self.inputs or self.inputs[v].role not in ("parameter", "buffer")):
                    raise Unsupported("batch norm folding needs the linear's weight, bias and the batch norm "
                                      "statistics to be parameters/buffers")
            taken = {t.name for t in self.spec.inputs}
            fw, fb = fresh_name("folded_w", taken), fresh_name("folded_b", taken)
            sig.prepared = [fw, fb]
            sig.prepared += [t.name for t in self.spec.inputs if t.role in ("parameter", "buffer")
                             and t.graph_value not in consumed]
            sig.host[w.graph_value] = fw
            self.folded_bias = fb
        return sig

    # ---- kernel -----------------------------------------------------------------------------------------
    def _side(self, host: str, shape: list[int], key: str) -> str:
        g = self.g
        suffix, view = side_view(shape, g.out_shape, g.perm, g.groups, f"fused operand {key}")
        param = f"S{len(self.sides)}"
        self.sides.append((param, host + suffix, key, view))
        var = f"side{len(self.sides) - 1}"
        nb = len(view) - 2
        dims = [(f"z{j}", None) for j in range(nb)] + [("bm", "BM"), ("bn", "BN")]
        load_side_lines(var, param, view, dims, ["BM", "BN"], self.body, self.ind)
        self.side_vars[key] = var
        return var

    def kernel_body(self) -> list[str]:
        g = self.g
        self.body: list[str] = []
        L = self.body.append
        nb = len(g.batch_shape)
        O0 = "O0"
        L("    pid = ct.bid(0)")
        L(f"    M = {O0}.shape[{nb}]")
        L(f"    N = {O0}.shape[{nb + 1}]")
        ra = 1 if g.reduce_batch else nb  # index of A's row dim
        L(f"    K = A.shape[{ra}] if TRANS_A else A.shape[{ra + 1}]")
        L("    tiles_m = ct.cdiv(M, BM)")
        nl = self.n_loop
        L("    tiles_n = ct.cdiv(N, BN)" + (f" // {nl}" if nl > 1 else ""))
        L("    width = GROUP_M * tiles_n")
        L("    first_m = (pid // width) * GROUP_M")
        L("    rows = ct.minimum(tiles_m - first_m, GROUP_M)")
        L("    bm = first_m + (pid % width) % rows")
        L(f"    {'bq' if nl > 1 else 'bn'} = (pid % width) // rows")
        # batch coordinates (row-major over the output's batch dims)
        if nb:
            L("    rest = ct.bid(1)")
            for j in reversed(range(nb)):
                size = g.batch_shape[j]
                if j == 0:
                    L(f"    z{j} = rest")
                elif size == 1:
                    L(f"    z{j} = 0")
                else:
                    L(f"    z{j} = rest % {O0}.shape[{j}]")
                    L(f"    rest = rest // {O0}.shape[{j}]")
        za = [f"z{j}" if s != 1 else "0" for j, s in enumerate(g.a.batch_sizes())] if nb else []
        zb = [f"z{j}" if s != 1 else "0" for j, s in enumerate(g.b.batch_sizes())] if nb else []
        if g.reduce_batch:
            za, zb = ["bb"], ["bb"]
        # With TILES["mm_bias_in_acc"], a bias broadcast along M or N (linear's bias, a folded batch norm's) starts
        # the accumulator instead of being added after the K loop: the same sum, 8 KB less shared memory
        # (linear+gelu 8192^3 bf16: 116072 -> 107656 bytes), but measured slower on the H200 (see the table entry).
        cast = f".astype({self.mma_dtype})" if self.mma_dtype else ""
        if nl > 1:
            # one K step and nl N tiles per block: A's tile is loaded once, each N tile loads B's, multiplies and
            # runs the epilogue, so one tile's output store overlaps the next tile's loads within the block
            self._operand_load("    ", "a", "A", "TRANS_A", za, "bm", "0", "BM", "BK")
            L(f"    for jn in range({nl}):")
            L(f"        bn = bq * {nl} + jn")
            self.ind = "        "
        I = self.ind
        bias = self._bias_term() if g.alpha == 1.0 and TILES["mm_bias_in_acc"] else None
        L(f"{I}acc = {bias}" if bias else f"{I}acc = ct.zeros((BM, BN), dtype=ct.float32)")
        if nl > 1:
            self._operand_load(I, "b", "B", "TRANS_B", zb, "0", "bn", "BK", "BN")
            for line in mma_lines(I, "a", "b", "acc", cast, self.f32, "(BM, BN)"):
                L(line)
        else:
            ind = "    "
            if g.reduce_batch:
                L("    for bb in range(A.shape[0]):")
                ind = "        "
            L(f"{ind}for kt in range(ct.cdiv(K, BK)):")
            ind2 = ind + "    "
            self._operand_load(ind2, "a", "A", "TRANS_A", za, "bm", "kt", "BM", "BK")
            self._operand_load(ind2, "b", "B", "TRANS_B", zb, "kt", "bn", "BK", "BN")
            for line in mma_lines(ind2, "a", "b", "acc", cast, self.f32, "(BM, BN)"):
                L(line)
        # epilogue
        val = "acc"
        if g.alpha != 1.0:
            L(f"{I}acc = acc * {g.alpha!r}")
        if (g.addend is not None or self.bn is not None) and not bias:
            L(f"{I}acc = acc + {self._addend_term()}")
        env = {self.anchor.node: val}
        if self.bn is not None:
            env[self.bn.node] = val
        if any(r.op.rstrip("_") in ("tril", "triu") for r in self.epilogue):
            self._index_tiles(env)
        if self.epilogue:
            from .expr import emit_elementwise

            emit_elementwise(self.epilogue, env, self.load_side, self.body, I, shapes=self.shapes)
        for i, o in enumerate(self.spec.outputs):
            var = env.get(o.graph_value)
            if var is None:
                raise Unsupported(f"output {o.name} is not computed by this kernel")
            tile = f"{var}.astype(O{i}.dtype)"
            if nb:
                tile = f"ct.reshape({tile}, {tup(['1'] * nb + ['BM', 'BN'])})"
            index = tup([f"z{j}" for j in range(nb)] + ["bm", "bn"])
            tma = TILES["mm_store_tma"]
            hint = "" if tma is None else f", allow_tma={bool(tma)}"
            L(f"{I}ct.store(O{i}, index={index}, tile={tile}{hint})")
        return self.body

    def _addend_term(self) -> str:
        """beta * addend (or the folded batch norm's bias) as a (BM, BN) float32 tile; emits its loads."""
        g = self.g
        if self.bn is not None:
            side = self._side(self.folded_bias, [g.N], "__folded_bias__")
        else:
            side = self.load_side(g.addend)
        return side if g.beta == 1.0 else f"{side} * {g.beta!r}"

    def _bias_term(self) -> str | None:
        """_addend_term() when the addend is a vector broadcast along the rows or the columns, else None."""
        g = self.g
        if self.bn is not None:
            shape = [g.N]
        elif g.addend is not None and g.addend in self.inputs and self.inputs[g.addend].role != "scalar":
            shape = list(self.inputs[g.addend].shape)
        else:
            return None
        _, view = side_view(shape, g.out_shape, g.perm, g.groups, f"fused operand {g.addend}")
        if view[-2] != 1 and view[-1] != 1:
            return None  # a full matrix stays an add after the K loop
        return self._addend_term()

    def _operand_load(self, ind: str, var: str, arr: str, trans: str, z: list[str], i0: str, i1: str,
                      s0: str, s1: str) -> None:
        L = self.body.append
        r = len(z)
        index = tup(z + [i0, i1])
        shape = tup(["1"] * r + [s0, s1])
        order = tup(list(range(r)) + [r + 1, r])
        L(f"{ind}if {trans}:")
        L(f"{ind}    {var} = ct.load({arr}, index={index}, shape={shape}, order={order}, padding_mode={ZERO})")
        L(f"{ind}else:")
        L(f"{ind}    {var} = ct.load({arr}, index={index}, shape={shape}, padding_mode={ZERO})")
        if r:
            L(f"{ind}{var} = ct.reshape({var}, ({s0}, {s1}))")

    def _index_tiles(self, env: dict[str, str]) -> None:
        from .expr import COL_INDEX, ROW_INDEX

        g = self.g
        rank = len(g.out_shape)
        if rank < 2 or g.on != [rank - 1] or not (g.ob + g.om) or (g.ob + g.om)[-1] != rank - 2:
            return
        L = self.body.append
        rows = "(bm * BM + ct.arange(BM, dtype=ct.int32))"
        if g.fold or len(g.om) > 1:
            rows = f"({rows} % {g.out_shape[-2]})"
        I = self.ind
        L(f"{I}row_idx = ct.broadcast_to(ct.reshape({rows}, (BM, 1)), (BM, BN))")
        L(f"{I}col_idx = ct.broadcast_to(ct.reshape(bn * BN + ct.arange(BN, dtype=ct.int32), (1, BN)), (BM, BN))")
        env[ROW_INDEX], env[COL_INDEX] = "row_idx", "col_idx"

    # ---- assembly ---------------------------------------------------------------------------------------
    def build(self) -> KernelSource:
        self.plan()
        self.sig = self.signature()
        body = self.kernel_body()
        g, kid, spec = self.g, self.kid, self.spec
        tiles = cdiv(g.M, self.tile_m) * cdiv(g.N, self.tile_n) // self.n_loop
        large = (self.tile_m, self.tile_n, self.tile_k) == tuple(TILES["mm_large"])
        per_sm = TILES["mm_persistent"] or (TILES["mm_large_persistent"] if large else None)
        blocks = tiles
        if per_sm and self.batch == 1 and tiles > NUM_SMS * per_sm and self.n_loop == 1:
            # a grid of NUM_SMS * per_sm blocks walks the tiles: the body becomes the loop's
            assert body[0] == "    pid = ct.bid(0)"
            blocks = NUM_SMS * per_sm
            body = [f"    for pid in range(ct.bid(0), {tiles}, ct.num_blocks(0)):"] + ["    " + ln for ln in body[1:]]
        outs = [f"O{i}" for i in range(len(spec.outputs))]
        params = ["A", "B"] + outs + [p for p, *_ in self.sides] + [p for p, _ in self.scalars]
        consts = ["TRANS_A", "TRANS_B", "BM", "BN", "BK", "GROUP_M"]
        sig_params = params + [f"{c}: ct.Constant[{'bool' if c.startswith('TRANS') else 'int'}]" for c in consts]
        ww = worker_warps_for(self.tile_m, self.tile_n, self.low)
        occupancy = occupancy_for(g.K, self.tile_k, self.low, ww, blocks * max(1, self.batch))
        deco = kernel_decorator(occupancy, TILES["mm_num_ctas"], ww)
        head = [deco, f"def {kid}_kernel({', '.join(sig_params)}):",
                f'    """{self.anchor.op} as a {"batched " if g.batch_shape else ""}GEMM: ({g.M} x {g.K}) @ '
                f'({g.K} x {g.N}){f" x {prod(g.batch_shape)}" if g.batch_shape else ""}, fused epilogue."""']
        kernel = "\n".join(head + body) + "\n"

        w: list[str] = []
        W = w.append
        if self.sig.prepare:
            W(f"def prepare_{kid}({', '.join(self.sig.prepare_params())}):")
            names = {t.graph_value: t.name for t in spec.inputs}
            wt = self.inputs[g.b.value]
            bias = names[g.addend] if g.addend else None
            lines: list[str] = []
            fw, fb = self.sig.prepared[:2]
            bn_fold_lines(self.bn, names, wt.name, bias, 0, 2, lines, out_names=(fw, fb))
            w.extend(lines)
            W(f"    return {tup([f'{fw}.contiguous()', f'{fb}.contiguous()'] + self.sig.passthrough())}")
            W("")
            W("")
        W(f"def {kid}_operand(t):")
        W('    """(array, transposed): the matrix as stored, read with a transposed order when it is column-major."""')
        W("    if t.shape[-1] != 1 and t.stride(-1) == 1:")
        W("        return t, False")
        W("    if t.shape[-2] != 1 and t.stride(-2) == 1:")
        W("        return t.transpose(-1, -2), True")
        W("    return t.contiguous(), False")
        W("")
        W("")
        params = self.sig.launch_params()
        taken = set(params) | {o.name for o in spec.outputs}
        la, lta, lb, ltb = (fresh_name(n, taken) for n in ("a", "trans_a", "b", "trans_b"))
        taken |= {la, lta, lb, ltb}
        W(f"def launch_{kid}({', '.join(params)}):")
        dev = self.sig.device()
        for i, o in enumerate(spec.outputs):
            W(f"    {o.name} = torch.empty({tup(o.shape)}, dtype=torch.{o.dtype}, device={dev})")
        host = self.sig.host
        W(f"    {la}, {lta} = {kid}_operand({g.a.host(host[g.a.value], g.fold)})")
        W(f"    {lb}, {ltb} = {kid}_operand({g.b.host(host[g.b.value], g.fold)})")
        out_args = []
        for o in spec.outputs:
            expr = o.name
            if g.perm != list(range(len(g.out_shape))):
                expr += f".permute{tup(g.perm)}"
            if [g.out_shape[d] for d in g.perm] != self.out_view:
                expr += f".view{tup(self.out_view)}"
            out_args.append(expr)
        side_args = []
        for i, (param, expr, _, view) in enumerate(self.sides):
            name = fresh_name(f"side{i}", taken)
            taken.add(name)
            W(f"    {name} = {expr}")
            side_args.append(name)
        scalar_args = [expr for _, expr in self.scalars]
        grid = (blocks, max(1, self.batch), 1)
        args = [la, lb] + out_args + side_args + scalar_args + [lta, ltb, str(self.tile_m), str(self.tile_n),
                                                              str(self.tile_k), str(TILES["mm_group_m"])]
        W(f"    ct.launch(torch.cuda.current_stream(), {grid}, {kid}_kernel, {tup(args)})")
        W(f"    return {', '.join(o.name for o in spec.outputs)}")
        code = kernel + "\n\n" + "\n".join(w) + "\n"
        notes = [f"tiles BM={self.tile_m} BN={self.tile_n} BK={self.tile_k}, GROUP_M={TILES['mm_group_m']}"
                 + (f", occupancy {occupancy}" if occupancy else "")
                 + (f", {ww} worker warps" if ww else "")
                 + (", batch folded into M" if g.fold else "")
                 + (f", {self.n_loop} N tiles per block" if self.n_loop > 1 else "")
                 + (("; float32 operands in split TF32 (3 tensor-core mmas, float32-level results)"
                     if TILES["f32_split_tf32"] else "; float32 operands use a float32 mma (FFMA)")
                    if self.f32 else "")]
        if self.bn is not None:
            notes.append("eval batch norm folded into the weight and bias in prepare_")
        return KernelSource(spec_id=spec.id, family=spec.family, code=code, launch_name=f"launch_{kid}",
                            kernel_names=[f"{kid}_kernel"], prepare_name=f"prepare_{kid}" if self.sig.prepare
                            else None, notes=notes)


def _refs(v) -> list[str]:
    if is_ref(v):
        return [v["ref"]]
    if isinstance(v, (list, tuple)):
        return [r for x in v for r in _refs(x)]
    return []
