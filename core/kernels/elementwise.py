"""The "elementwise" family: a chain of elementwise ops over any number of inputs and outputs in one pass.

Layout. The kernel walks the iteration space (the broadcast of every input, output and op shape) as a flat 1D
range, one power-of-two tile of BLOCK elements per block. Before that, dims are collapsed: output dims of size 1
are dropped and neighbouring dims merge when every operand agrees on them (both broadcast or both full), so
(N, C, H, W) + (C, 1, 1) becomes (N, C, H*W) with the side input's pattern (bcast, full, bcast). Then each
operand is one of
  - full:   same elements as the iteration space → a contiguous `ct.load` of the tile (vectorised, TMA-able);
  - single: one element (a 0-d tensor, (1, 1, 1) ...) → loaded once and broadcast;
  - bcast:  anything else → `ct.gather` at indices computed from the flat offsets (an integer div/mod by
            compile-time constants per collapsed dim; these inputs are small or re-read from L2), except an
            operand broadcast over leading dims only whose trailing part is a whole number of blocks (rotary
            cos/sin over batch and heads): block b loads its tile b mod that number whole, like a full operand.
rotate_half(x) (fusion rule R9) is a rotated read of x, built in registers or gathered (elementwise_rotate.py).
Outputs are usually full (`ct.store`); an output smaller than the iteration space (a fused intermediate with
fewer dims) is written with `ct.scatter` from the lanes whose broadcast coordinates are all zero.

When every tensor input is contiguous the wrapper launches this flat kernel; when some input is a strided or
expanded view it launches the strided kernel (elementwise_strided.py), which reads the views in place, or, where
that kernel does not apply, copies them with `.contiguous()` for the flat one. fp16/bf16/int/bool inputs are
read in their own dtype and computed in float32 (bool masks stay bool), and results are cast to each output's
dtype at the store.

Block size: the smallest power of two covering tiny tensors, otherwise 512-2048 elements growing with the size
(enough blocks to fill the GPU at medium sizes), and at large sizes a fixed number of bytes of the widest operand
per block (4096 fp32 / 8192 fp16 elements: fewer, fatter blocks; see indexing.MEMORY_TUNING).
"""

from __future__ import annotations

import math
import re

from ..specs import KernelSpec, OpRecord, TensorSpec
from . import elementwise_rotate, elementwise_strided
from .base import ITEMSIZE, KernelSource, Unsupported, pow2_at_least
from .expr import COL_INDEX, ROW_INDEX, emit_elementwise
from .gemm_common import kernel_decorator
from .indexing import MEMORY_TUNING

INDEX_LIMIT = 2**31 - 1  # flat offsets are int32
_COMPUTE_DTYPES = {"float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"}


def block_size(numel: int, operands: int, itemsize: int = 4) -> int:
    """Elements per block: whole tensor when tiny, then 512.. as the tensor grows. At large sizes a block moves
    MEMORY_TUNING["elementwise_block_bytes"] of its widest operand, at most "elementwise_block_elems" elements
    (4096 for fp32 and the 2-byte dtypes alike)."""
    if numel <= 512:
        return pow2_at_least(numel, 32)
    if numel <= 1 << 16:
        block = 512
    elif numel <= 1 << 20:
        block = 1024
    elif numel <= 1 << 23:
        block = 2048
    else:
        target = int(MEMORY_TUNING["elementwise_block_bytes"]) // max(1, min(itemsize, 4))
        block = max(256, min(int(MEMORY_TUNING["elementwise_block_elems"]), _pow2_floor(target)))
    if operands > 6:  # many live tiles per block: keep register pressure in check
        block = min(block, 2048)
    return block


def _pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def _ident(text: str) -> str:
    return re.sub(r"\W", "_", text)


class Operand:
    """One tensor (input or output) of the kernel, described against the collapsed iteration space."""

    def __init__(self, t: TensorSpec, iter_shape: list[int]):
        self.spec = t
        shape = list(t.shape)
        if len(shape) > len(iter_shape):
            raise Unsupported(f"{t.name}: shape {shape} has more dims than the iteration space {iter_shape}")
        aligned = [1] * (len(iter_shape) - len(shape)) + shape
        for have, want in zip(aligned, iter_shape):
            if have not in (1, want):
                raise Unsupported(f"{t.name}: shape {shape} does not broadcast to {iter_shape}")
        # per iteration dim: True when this operand varies along it
        self.full_dims = [have == want and want != 1 for have, want in zip(aligned, iter_shape)]
        self.pattern: list[bool] = []  # per collapsed dim
        self.numel = math.prod(shape)

    def kind(self) -> str:
        if all(self.pattern):
            return "full"
        if not any(self.pattern):
            return "single"
        return "bcast"

    def lead_tiles(self, cshape: list[int], block: int) -> int | None:
        """For an operand broadcast over leading collapsed dims only, whose trailing (full) part holds a whole
        number of blocks: that number (block b of the iteration space reads the operand's tile b mod it)."""
        if self.kind() != "bcast" or not MEMORY_TUNING["elementwise_lead_broadcast_load"]:
            return None
        first = self.pattern.index(True)
        if not all(self.pattern[first:]):
            return None
        trailing = math.prod(cshape[first:])
        return trailing // block if trailing % block == 0 else None


def collapse(iter_shape: list[int], operands: list[Operand]) -> list[int]:
    """Drop size-1 dims and merge neighbours on which all operands agree; sets each operand's pattern."""
    dims = [i for i, d in enumerate(iter_shape) if d != 1]
    groups: list[list[int]] = []
    for d in dims:
        if groups and all(op.full_dims[groups[-1][-1]] == op.full_dims[d] for op in operands):
            groups[-1].append(d)
        else:
            groups.append([d])
    for op in operands:
        op.pattern = [op.full_dims[g[0]] for g in groups]
    return [math.prod(iter_shape[d] for d in g) for g in groups]


def index_expr(pattern: list[bool], shape: list[int], offs: str = "offs") -> str:
    """The flat index into a contiguous operand (with this broadcast pattern) of the element at `offs`."""
    terms = []
    stride = 1
    inner = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    for i in reversed(range(len(shape))):
        if not pattern[i]:
            continue
        coord = offs if inner[i] == 1 else f"({offs} // {inner[i]})"
        if i > 0:  # the outermost coordinate needs no wrap-around (offsets past the end are masked anyway)
            coord = f"({coord} % {shape[i]})"
        terms.append(coord if stride == 1 else f"{coord} * {stride}")
        stride *= shape[i]
    return " + ".join(reversed(terms)) if terms else "0"


def zero_coords_mask(pattern: list[bool], shape: list[int], offs: str = "offs") -> str:
    """A bool tile: the lanes whose coordinates along the operand's broadcast dims are all zero."""
    conds = []
    inner = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    for i, full in enumerate(pattern):
        if full:
            continue
        coord = offs if inner[i] == 1 else f"({offs} // {inner[i]})"
        if i > 0:
            coord = f"({coord} % {shape[i]})"
        conds.append(f"({coord} == 0)")
    return " & ".join(conds) if conds else "True"


def _check_ops(ops: list[OpRecord]) -> None:
    for rec in ops:
        if not rec.category.startswith("elementwise"):
            raise Unsupported(f"{rec.target}: not an elementwise op (the elementwise family only fuses "
                              f"elementwise ops)")


def _iteration_shape(spec: KernelSpec, ops: list[OpRecord], tensors: list[TensorSpec]) -> list[int]:
    import torch

    shapes = [t.shape for t in tensors] + [t.shape for t in spec.outputs] + [r.output for r in ops if r.output]
    try:
        return [int(d) for d in torch.broadcast_shapes(*[torch.Size(s) for s in shapes])]
    except RuntimeError as exc:
        raise Unsupported(f"shapes do not broadcast: {shapes}") from exc


def _input_tile(value: str, by_value: dict) -> tuple[Operand, str, str]:
    """(operand, its tile variable, the cast to float32) of an input value: `eb_` tiles for bool inputs (kept
    bool), `ld_` tiles otherwise."""
    op = by_value.get(value)
    if op is None:
        raise Unsupported(f"operand {value} is neither a spec input nor computed by an earlier op")
    is_bool = op.spec.dtype == "bool"
    cast = "" if op.spec.dtype == "float32" or is_bool else ".astype(ct.float32)"
    return op, f"{'eb' if is_bool else 'ld'}_{_ident(op.spec.name)}", cast


def _strided_kernel(sp, kid, kparams, rotations, ops, by_value, params, scalar_by_value, scalar_params, outputs,
                    out_params, shapes, load_hint, store_hint) -> list[str]:
    """{kid}_strided_kernel: the same fused ops over (BS, DP) tiles read through each operand's strides."""
    lines = elementwise_strided.coordinates(sp, "    ")

    def section(ind: str, unchecked: bool) -> None:
        def load_side(value: str) -> str:
            if value in scalar_by_value:
                return scalar_params[value]
            op, var, cast = _input_tile(value, by_value)
            tile = elementwise_strided.load(sp, params[op.spec.name], op.spec.shape, cast, load_hint, unchecked)
            lines.append(f"{ind}{var} = {tile}")
            return var

        env: dict[str, str] = {}
        for i, rot in enumerate(rotations):
            env[rot.m.x] = x_var = env.get(rot.m.x) or load_side(rot.m.x)
            env[rot.m.cat] = elementwise_strided.rotate(sp, i, x_var, rot.m.half, lines, ind)
        out_env = emit_elementwise(ops, env, load_side, lines, ind, shapes=shapes)
        for t, param in zip(outputs, out_params):
            value = t.graph_value or t.name
            if value not in out_env:
                raise Unsupported(f"output {t.name} ({value}) is not computed by the kernel's ops")
            lines.append(ind + elementwise_strided.store(sp, param, f"{out_env[value]}.astype({param}.dtype)",
                                                         store_hint, unchecked))

    blocks = sp.unchecked_blocks()
    if blocks == "inner":  # each lead index's last row block is partial: it keeps the bounds checks
        lines.append(f"    if sb < {sp.row_blocks - 1}:")
        section("        ", True)
        lines.append("    else:")
        section("        ", False)
    else:
        section("    ", blocks == "all")
    return [kernel_decorator(MEMORY_TUNING["elementwise_strided_occupancy"]),
            f"def {kid}_strided_kernel({', '.join(kparams)}):"] + lines


def generate(spec: KernelSpec) -> KernelSource:
    rotate_halves, ops = elementwise_rotate.split(spec)
    _check_ops(ops)
    kid = spec.id
    tensors = [t for t in spec.inputs if t.role != "scalar"]
    scalars = [t for t in spec.inputs if t.role == "scalar"]
    for t in tensors + spec.outputs:
        if t.dtype not in _COMPUTE_DTYPES:
            raise Unsupported(f"{t.name}: dtype {t.dtype} (elementwise kernels compute in float32)")
    if not tensors:
        raise Unsupported("an elementwise kernel without tensor inputs")
    for t in scalars:
        if not isinstance(t.value, (int, float, bool)):
            raise Unsupported(f"scalar input {t.name}={t.value!r} is not a number")
    iter_shape = _iteration_shape(spec, ops, tensors)
    numel = math.prod(iter_shape)
    if numel > INDEX_LIMIT:
        raise Unsupported(f"{numel} elements: more than int32 flat offsets address")
    if numel == 0:
        raise Unsupported("an empty iteration space")

    ins = [Operand(t, iter_shape) for t in tensors]
    outs = [Operand(t, iter_shape) for t in spec.outputs]
    cshape = collapse(iter_shape, ins + outs)
    itemsize = max(ITEMSIZE.get(t.dtype, 4) for t in tensors + spec.outputs)
    block = block_size(numel, len(ins) + len(outs), itemsize)
    grid = -(-numel // block)

    # ---- kernel body ----
    by_value = {t.graph_value or t.name: op for t, op in zip(tensors, ins)}
    rotations = elementwise_rotate.plan(rotate_halves, lambda v: by_value[v].kind() == "full", block)
    scalar_by_value = {t.graph_value or t.name: t for t in scalars}
    params = {op.spec.name: f"in_{_ident(op.spec.name)}" for op in ins}
    out_prefix = "out"
    while any(t.name.startswith(out_prefix) for t in spec.inputs):  # wrapper locals must not shadow arguments
        out_prefix += "_"
    out_params = [f"{out_prefix}_{i}" for i in range(len(outs))]
    scalar_params = {t.graph_value or t.name: f"s_{_ident(t.name)}" for t in scalars}
    load_hint = str(MEMORY_TUNING["elementwise_load_hint"])
    store_hint = str(MEMORY_TUNING["elementwise_store_hint"])
    body: list[str] = ["    pid = ct.bid(0)"]
    need_offs = (any(op.kind() == "bcast" and not op.lead_tiles(cshape, block) for op in ins)
                 or any(op.kind() != "full" for op in outs) or not all(r.shuffle for r in rotations))
    needs_index = any(r.op.rstrip("_") in ("tril", "triu") for r in ops)
    if need_offs or needs_index:
        body.append("    offs = pid * BLOCK + ct.arange(BLOCK, dtype=ct.int32)")
    env: dict[str, str] = {}
    if needs_index:
        if len(iter_shape) < 2:
            raise Unsupported("tril/triu on fewer than 2 dims")
        w, h = iter_shape[-1], iter_shape[-2]
        for r in ops:
            if r.op.rstrip("_") in ("tril", "triu") and list(r.output) != iter_shape:
                raise Unsupported(f"{r.target}: output {r.output} differs from the iteration space {iter_shape}")
        body.append(f"    col_idx = offs % {w}")
        body.append(f"    row_idx = (offs // {w}) % {h}")
        env[ROW_INDEX], env[COL_INDEX] = "row_idx", "col_idx"
    shapes = {(t.graph_value or t.name): t.shape for t in tensors}

    def section(lines: list[str], ind: str, unchecked: bool) -> None:
        """Loads, the fused ops and the stores of one block, at indentation `ind`; `unchecked`: the block's tile
        lies inside every flat tensor, so full operands load with check_bounds=False."""
        index_vars: dict[str, str] = {}

        def index_var(pattern: list[bool]) -> str:
            """A variable holding the gather/scatter index for this broadcast pattern (computed once)."""
            expr = index_expr(pattern, cshape)
            if expr not in index_vars:
                index_vars[expr] = f"idx_{len(index_vars)}"
                lines.append(f"{ind}{index_vars[expr]} = {expr}")
            return index_vars[expr]

        def load_side(value: str) -> str:
            if value in scalar_by_value:
                return scalar_params[value]
            op, var, cast = _input_tile(value, by_value)
            arr = params[op.spec.name]
            kind = op.kind()
            if kind == "full" and unchecked:
                lines.append(f"{ind}{var} = ct.load({arr}, index=(pid,), shape=(BLOCK,), check_bounds=False"
                             f"{load_hint}){cast}")
            elif kind == "full":
                lines.append(f"{ind}{var} = ct.load({arr}, index=(pid,), shape=(BLOCK,), "
                             f"padding_mode=ct.PaddingMode.ZERO){cast}")
            elif kind == "single":
                lines.append(f"{ind}{var} = ct.broadcast_to(ct.load({arr}, index=(0,), shape=(1,)){cast}, (BLOCK,))")
            elif tiles := op.lead_tiles(cshape, block):
                lines.append(f"{ind}{var} = ct.load({arr}, index=(pid % {tiles},), shape=(BLOCK,), "
                             f"check_bounds=False{load_hint}){cast}")
            else:
                lines.append(f"{ind}{var} = ct.gather({arr}, {index_var(op.pattern)}){cast}")
            return var

        local_env = dict(env)
        for i, rot in enumerate(rotations):
            x = by_value[rot.m.x]
            local_env[rot.m.x] = x_var = local_env.get(rot.m.x) or load_side(rot.m.x)
            cast = "" if x.spec.dtype == "float32" else ".astype(ct.float32)"
            local_env[rot.m.cat] = elementwise_rotate.emit(
                rot, i, x_var, params[x.spec.name], cast, block,
                lambda offs, x=x: offs if x.kind() == "full" else index_expr(x.pattern, cshape, offs), lines, ind)
        out_env = emit_elementwise(ops, local_env, load_side, lines, ind, shapes=shapes)
        for i, (t, op) in enumerate(zip(spec.outputs, outs)):
            value = t.graph_value or t.name
            if value not in out_env:
                raise Unsupported(f"output {t.name} ({value}) is not computed by the kernel's ops")
            tile = f"{out_env[value]}.astype({out_params[i]}.dtype)"
            kind = op.kind()
            if kind == "full":
                lines.append(f"{ind}ct.store({out_params[i]}, index=(pid,), tile={tile}{store_hint})")
            elif kind == "single":
                lines.append(f"{ind}ct.scatter({out_params[i]}, offs * 0, {tile}, mask=offs == 0)")
            else:
                mask = zero_coords_mask(op.pattern, cshape)
                lines.append(f"{ind}ct.scatter({out_params[i]}, {index_var(op.pattern)}, {tile}, "
                             f"mask={mask} & (offs < {numel}))")

    # Full operands of a block whose tile lies inside the tensors load without bounds checks (see MEMORY_TUNING):
    # every block when the blocks tile the tensors exactly, else, for tensors large enough to be bandwidth-bound
    # (>= 1M elements), all but the last block (a second copy of the body behind one branch per block).
    unchecked = MEMORY_TUNING["elementwise_unchecked_full"] and any(op.kind() == "full" for op in ins)
    if unchecked and numel % block == 0:
        section(body, "    ", True)
    elif unchecked and numel >= 1 << 20:
        body.append(f"    if pid < {grid - 1}:")
        section(body, "        ", True)
        body.append("    else:")
        section(body, "        ", False)
    else:
        section(body, "    ", False)

    # ---- module ----
    kparams = [params[op.spec.name] for op in ins] + out_params + [scalar_params[t.graph_value or t.name]
                                                                  for t in scalars]
    kernel = [kernel_decorator(MEMORY_TUNING["elementwise_occupancy"]), f"def {kid}_kernel({', '.join(kparams)}, BLOCK: ct.Constant[int]):"] + body
    shuffled = all(by_value[r.m.x].kind() == "full" for r in rotations)  # (a broadcast x is gathered)
    sp = elementwise_strided.plan(iter_shape, all(math.prod(t.shape) == numel for t in spec.outputs), needs_index,
                                  [r.m.half for r in rotations] if shuffled else None)
    if sp is not None:
        kernel += ["", ""] + _strided_kernel(sp, kid, kparams, rotations, ops, by_value, params, scalar_by_value,
                                             scalar_params, spec.outputs, out_params, shapes, load_hint, store_hint)

    args = [t.name for t in spec.inputs]
    wrapper = [f"def launch_{kid}({', '.join(args)}):"]
    first = tensors[0].name
    for i, t in enumerate(spec.outputs):
        wrapper.append(f"    {out_params[i]} = torch.empty({tuple(t.shape)!r}, dtype=torch.{t.dtype}, "
                       f"device={first}.device)")
    call_args = [f"{t.name}.contiguous().view(-1)" for t in tensors]
    call_args += [f"{p}.view(-1)" for p in out_params]
    call_args += [f"float({t.name})" for t in scalars]
    call_args.append(f"{kid}_BLOCK")
    flat_launch = (f"ct.launch(torch.cuda.current_stream(), ({kid}_GRID,), {kid}_kernel, "
                   f"({', '.join(call_args)},))")
    if sp is None:
        wrapper.append(f"    {flat_launch}")
    else:  # strided views are read in place by the strided kernel (elementwise_strided.py)
        strided_args = [elementwise_strided.view(sp, t.name, t.shape) for t in tensors]
        strided_args += [f"{p}.view{sp.shape!r}" for p in out_params]
        strided_args += [f"float({t.name})" for t in scalars]
        wrapper += [f"    if {' and '.join(f'{t.name}.is_contiguous()' for t in tensors)}:",
                    f"        {flat_launch}",
                    "    else:",
                    f"        ct.launch(torch.cuda.current_stream(), ({sp.grid},), {kid}_strided_kernel, "
                    f"({', '.join(strided_args)},))"]
    ret = ", ".join(out_params)
    wrapper.append(f"    return {ret}")

    ops_text = ", ".join(r.op for r in spec.ops)
    header = [
        f"# elementwise: {ops_text}",
        f"# iteration space {iter_shape} ({numel} elements) as collapsed {cshape}; "
        f"inputs: {', '.join(f'{op.spec.name}={op.kind()}' for op in ins)}",
        f"{kid}_BLOCK = {block}",
        f"{kid}_GRID = {grid}",
    ]
    code = "\n".join(header) + "\n\n\n" + "\n".join(kernel) + "\n\n\n" + "\n".join(wrapper) + "\n"
    notes = [f"flat 1D tiles of {block} elements, grid {grid}; collapsed shape {cshape}"]
    if sp is not None:
        notes.append(f"inputs that are strided views at run time: {kid}_strided_kernel reads them in place in "
                     f"({sp.bs}, {sp.dp}) tiles, grid {sp.grid}")
    bcast = [op.spec.name for op in ins if op.kind() == "bcast"]
    if bcast:
        notes.append(f"broadcast inputs gathered by computed index: {', '.join(bcast)}")
    return KernelSource(spec_id=kid, family="elementwise", code=code, launch_name=f"launch_{kid}",
                        kernel_names=[f"{kid}_kernel"] + ([f"{kid}_strided_kernel"] if sp is not None else []),
                        notes=notes)
