"""Where a loss's values go: per-element / per-row stores through the epilogue, the deterministic two-stage
reduction to a scalar (per-block float32 partials, one finishing block that adds them in a fixed order, divides for
the mean and applies the epilogue; a single kernel when one block covers everything), and the launch wrapper."""

from __future__ import annotations

from .base import KernelSource, Unsupported, pow2_at_least
from .indexing import (SideLoader, array_param, decode, elementwise, module, out_param, output_vars, prod,
                       scalar_param)
from .loss_plan import I, CoordLoader, LossPlan, lit


def finish_lines(plan: LossPlan, totals: list[str], count: float | None, lines: list[str], ind: str) -> None:
    """From (1,)-shaped float32 totals (loss sum[, weight sum]) to the stored scalar output(s) with epilogue."""
    spec, rec = plan.spec, plan.rec
    if plan.reduction == 1:
        denom = totals[1] if len(totals) > 1 else lit(float(count))
        lines.append(f"{ind}res = {totals[0]} / {denom}")
    else:
        lines.append(f"{ind}res = {totals[0]}")
    env = {rec.node: "res"}
    sides = SideLoader(spec, ["0"], [1], "(1,)", lines, ind)
    env = elementwise(plan.epilogue, env, sides, lines, ind)
    for o, var in output_vars(spec, env):
        if prod(o.shape) != 1:
            raise Unsupported(f"output {o.name} of shape {o.shape} from a reduced loss")
        lines.append(f"{ind}ct.store({out_param(o)}, index=(0,), "
                     f"tile=ct.broadcast_to({var}, (1,)).astype({out_param(o)}.dtype))")


def kernel_params(plan: LossPlan, extra: list[str]) -> str:
    return ", ".join(plan.array_args() + extra)


def launch_wrapper(plan: LossPlan, launches: list[tuple[str, int, list[str]]],
                   partials: tuple[int, int] | None) -> str:
    """launch_<id>: bind inputs (with their kernel views), allocate outputs and partials, launch in order."""
    spec = plan.spec
    w = [f"def launch_{spec.id}({', '.join(t.name for t in spec.inputs)}):"]
    device = None
    for t in spec.inputs:
        if t.role == "scalar":
            w.append(f"{I}{scalar_param(t)} = {t.name}")
            continue
        device = device or f"{t.name}.device"
        view = plan.views.get(t.name) or (f"{t.name}.reshape(1)" if not t.shape else t.name)
        w.append(f"{I}{array_param(t)} = {view}")
    for name, expr in plan.extra_arrays:
        w.append(f"{I}{name} = {expr}")
    for o in spec.outputs:
        w.append(f"{I}{o.name} = torch.empty({tuple(o.shape)!r}, dtype=torch.{o.dtype}, device={device})")
        w.append(f"{I}{out_param(o)} = {o.name}.reshape(-1)")
    if partials:
        w.append(f"{I}part = torch.empty({partials!r}, dtype=torch.float32, device={device})")
    for name, grid, args in launches:
        w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {name}, ({', '.join(args)}))")
    names = [o.name for o in spec.outputs]
    w.append(f"{I}return {', '.join(names)}")
    return "\n".join(w)


def reduced_kernels(plan: LossPlan, body_head: list[str], quantities: list[str], grid: int, count: float | None,
                    consts: list[tuple[str, int]]) -> tuple[list[str], list[tuple[str, int, list[str]]],
                                                           tuple[int, int] | None]:
    """Kernels (code), launches and partial-buffer shape for a loss reduced to a scalar. `body_head` are the lines
    of a kernel body that leave the block's float32 sums in the (1,)-shaped `quantities` variables."""
    spec, kid = plan.spec, plan.spec.id
    outs = [out_param(o) for o in spec.outputs]
    cparams = [f"{n}: ct.Constant[int]" for n, _ in consts]
    cargs = [str(v) for _, v in consts]
    nq = len(quantities)
    if grid == 1:
        lines = ["@ct.kernel", f"def {kid}_kernel({kernel_params(plan, outs + cparams)}):"] + body_head
        finish_lines(plan, quantities, count, lines, I)
        return ["\n".join(lines)], [(f"{kid}_kernel", 1, plan.array_args() + outs + cargs)], None
    part = ["@ct.kernel", f"def {kid}_partial({kernel_params(plan, ['part'] + cparams)}):"] + body_head
    for q, var in enumerate(quantities):
        part.append(f"{I}ct.store(part, index=({q}, pid), tile=ct.reshape({var}, (1, 1)))")
    BG = pow2_at_least(grid, 16, 1024)
    fin = ["@ct.kernel", f"def {kid}_finish({kernel_params(plan, ['part'] + outs)}):"]
    totals = []
    for q in range(nq):
        fin.append(f"{I}acc{q} = ct.zeros((1, {BG}), dtype=ct.float32)")
    fin.append(f"{I}for i in range({-(-grid // BG)}):")
    for q in range(nq):
        fin.append(f"{I}{I}acc{q} = acc{q} + ct.load(part, index=({q}, i), shape=(1, {BG}), "
                   f"padding_mode=ct.PaddingMode.ZERO)")
    for q in range(nq):
        fin.append(f"{I}tot{q} = ct.reshape(ct.sum(acc{q}), (1,))")
        totals.append(f"tot{q}")
    finish_lines(plan, totals, count, fin, I)
    launches = [(f"{kid}_partial", grid, plan.array_args() + ["part"] + cargs),
                (f"{kid}_finish", 1, plan.array_args() + ["part"] + outs)]
    return ["\n".join(part), "\n".join(fin)], launches, (nq, grid)


def store_rows(plan: LossPlan, env: dict[str, str], out_shape: list[int], coords: list[str], tile: str,
               flat_len: str, index: str, lines: list[str], ind: str) -> None:
    """Per-element / per-row outputs (reduction none): epilogue, then a store of each output's flat view."""
    spec = plan.spec
    if plan.epilogue:
        sides = CoordLoader(plan, coords, out_shape, tile, lines, ind)
        env = elementwise(plan.epilogue, env, sides, lines, ind)
    for o, var in output_vars(spec, env):
        if prod(o.shape) != prod(out_shape):
            raise Unsupported(f"output {o.name} of shape {o.shape} differs from the loss shape {out_shape}")
        lines.append(f"{ind}ct.store({out_param(o)}, index={index}, "
                     f"tile=ct.reshape(ct.broadcast_to({var}, {tile}), ({flat_len},)).astype({out_param(o)}.dtype))")


def kernel_head(plan: LossPlan, params: list[str], consts: list[tuple[str, int]]) -> list[str]:
    """Decorator and signature of the single `<id>_kernel`: inputs, `params`, then the integer constants."""
    return ["@ct.kernel", f"def {plan.spec.id}_kernel({kernel_params(plan, params)}, "
            f"{', '.join(f'{c}: ct.Constant[int]' for c, _ in consts)}):"]


def unreduced_module(plan: LossPlan, lines: list[str], consts: list[tuple[str, int]], grid: int,
                     note: str) -> KernelSource:
    """The source of a loss with per-element / per-row outputs: one kernel (`lines`, head included) on `grid`."""
    spec = plan.spec
    outs = [out_param(o) for o in spec.outputs]
    args = plan.array_args() + outs + [str(v) for _, v in consts]
    wrapper = launch_wrapper(plan, [(f"{spec.id}_kernel", grid, args)], None)
    return module(spec, ["\n".join(lines)], wrapper, [f"{spec.id}_kernel"], [note])


def per_row_module(plan: LossPlan, lines: list[str], out_shape: list[int], consts: list[tuple[str, int]], grid: int,
                   note: str, bound_outer: bool) -> KernelSource:
    """One kernel storing the per-row value `per` of the block's BR rows `rr` (epilogue applied) to every output."""
    head = kernel_head(plan, [out_param(o) for o in plan.spec.outputs], consts) + lines
    ocoords = decode("rr", out_shape, head, I, "oc", bound_outer=bound_outer) if out_shape else ["0"]
    store_rows(plan, {plan.rec.node: "per"}, out_shape or [1], ocoords, "(BR, 1)", "BR", "(pid,)", head, I)
    return unreduced_module(plan, head, consts, grid, note)


def reduced_module(plan: LossPlan, body_head: list[str], quantities: list[str], grid: int, count: float | None,
                   consts: list[tuple[str, int]], note: str) -> KernelSource:
    """The source of a loss reduced to a scalar (see `reduced_kernels`)."""
    kernels, launches, partials = reduced_kernels(plan, body_head, quantities, grid, count, consts)
    return module(plan.spec, kernels, launch_wrapper(plan, launches, partials), [n for n, _, _ in launches], [note])
