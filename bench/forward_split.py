"""Where a composed file's end-to-end time goes (GPU): host enqueue vs device work, per launch.

    python bench/forward_split.py COMPOSED.py [--reps 20] [--no-compile] [--profile] [--graph]

For the cuTile forward (the composed file's ModelCuTile), PyTorch eager and torch.compile of the user's Model, on
the file's get_inputs() (three fresh random sets, rotated), medians after warm-up:
  - wall: CUDA events around one call on an idle GPU (validate's end-to-end method: host enqueue included),
  - device: the same events with the GPU kept busy by a spin kernel while the host enqueues (device work only),
  - host: perf_counter around the call while the GPU is kept busy (enqueue only, no waiting).
Wall near host means the forward is launch-bound. Then every ct.launch of the cuTile forward gets its own event
pair and host timer: the table lists each launch's kernel, device ms and host µs, and the glue between them (the
device time no launch accounts for). --profile adds a cProfile of 200 cuTile forwards (GPU kept busy: host
work only), top entries by own time; --graph times the cuTile forward captured as one CUDA graph and replayed
(inputs copied into the graph's static buffers first), beside torch.compile(mode="reduce-overhead").
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import os
import pstats
import sys

import torch

from tilestudio.core.gpu_timing import graphed, spin_cycles_per_ms, time_split

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_split import split_times  # noqa: E402


def load(path: str):
    spec = importlib.util.spec_from_file_location("composed_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def fresh_inputs(mod, sets: int) -> list[list]:
    out = []
    for i in range(sets):
        torch.manual_seed(1000 + i)
        out.append([t.cuda() if isinstance(t, torch.Tensor) else t for t in mod.get_inputs()])
    return out


def host_profile(fn, args, calls: int = 200, top: int = 25) -> str:
    lead = int(spin_cycles_per_ms() * 50)
    prof = cProfile.Profile()
    for _ in range(calls // 20):
        torch.cuda._sleep(lead)  # the GPU stays busy for 20 forwards: the profile sees host work only
        prof.enable()
        for _ in range(20):
            fn(*args)
        prof.disable()
        torch.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def rel_error(got, want) -> float:
    """Relative Frobenius error of a forward's output(s) (a tensor or a tuple of them, flattened together)."""
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    g = torch.cat([t.double().reshape(-1) for t in got])
    w = torch.cat([t.double().reshape(-1) for t in want])
    return float(torch.linalg.vector_norm(g - w) / torch.linalg.vector_norm(w).clamp_min(1e-30))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("composed")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--graph", action="store_true")
    a = p.parse_args()
    mod = load(a.composed)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).cuda().eval()
    ours = mod.ModelCuTile(model)
    arg_sets = fresh_inputs(mod, 3)
    with torch.no_grad():
        err = rel_error(ours(*arg_sets[0]), model(*arg_sets[0]))
        print(f"relative error of the cuTile forward vs eager: {err:.2e}")
        rows = [("cuTile", time_split(ours, arg_sets, a.reps)), ("eager", time_split(model, arg_sets, a.reps))]
        if not a.no_compile:
            compiled = torch.compile(model)
            rows.append(("torch.compile", time_split(compiled, arg_sets, a.reps)))
        if a.graph:
            replay = graphed(ours, arg_sets[0])
            gerr = rel_error(replay(*arg_sets[1]), model(*arg_sets[1]))
            print(f"relative error of the graphed cuTile forward (other inputs) vs eager: {gerr:.2e}")
            rows.append(("cuTile graph", time_split(replay, arg_sets, a.reps)))
            if not a.no_compile:
                ro = torch.compile(model, mode="reduce-overhead")
                rows.append(("compile r-o", time_split(ro, arg_sets, a.reps)))
        print(f"{'forward':<15}{'wall ms':>10}{'device ms':>11}{'host ms':>10}")
        for name, t in rows:
            print(f"{name:<15}{t['wall']:>10.3f}{t['device']:>11.3f}{t['host']:>10.3f}")
        names, device_ms, host_us = split_times(ours, arg_sets, a.reps, lead_ms=3.0)
        launches = [(name, ms, us) for (name, _), ms, us in zip(names, device_ms, host_us)]
        if a.profile:
            print(host_profile(ours, arg_sets[0]))
    total = rows[0][1]["device"]
    print(f"\n{'launch':<46}{'device ms':>10}{'host us':>9}")
    for name, ms, us in launches:
        print(f"{name:<46}{ms:>10.3f}{us:>9.1f}")
    kern = sum(ms for _, ms, _ in launches)
    print(f"{'sum of launches':<46}{kern:>10.3f}{sum(us for *_, us in launches):>9.1f}")
    print(f"{'glue and gaps (device total - launches)':<46}{total - kern:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
