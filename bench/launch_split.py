"""Per-launch device time of multi-kernel cases (GPU): which of a case's `ct.launch` calls the time goes to.

    python bench/launch_split.py --only "cumsum 64x1048576" [--reps 20] [--set KEY=VALUE]...

Each matching bench/kernels.py case is generated, loaded and checked as in kernels.py; then every `ct.launch` of
its wrapper gets a CUDA event pair of its own (fresh random inputs rotated between calls, warm-up, medians). The
table lists each launch's kernel, grid, median ms and share of the summed medians, beside the whole call's median
(kernels.py's figure) and a same-size copy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

import kernels as bk


def split_times(fn, arg_sets, reps: int, lead_ms: float = 0.0) -> tuple[list[tuple[str, tuple]], list[float],
                                                                          list[float]]:
    """(kernel name, grid), median device ms and median host us (the ct.launch call itself) of each ct.launch made
    by one call of fn. `lead_ms` > 0: a spin kernel of that length runs ahead of each call, so the events bracket
    device work only while the host enqueues (bench/forward_split.py)."""
    import cuda.tile as ct

    from tilestudio.core.gpu_timing import spin_cycles_per_ms

    real = ct.launch
    events: list[tuple[str, tuple, torch.cuda.Event, torch.cuda.Event, float]] = []

    def timed(stream, grid, kernel, args):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        t0 = time.perf_counter()
        real(stream, grid, kernel, args)
        host_us = (time.perf_counter() - t0) * 1e6
        e.record()
        name = getattr(getattr(kernel, "_pyfunc", kernel), "__name__", "kernel")
        events.append((name, tuple(grid), s, e, host_us))

    ct.launch = timed
    try:
        for i in range(3):
            fn(*arg_sets[i % len(arg_sets)])
        torch.cuda.synchronize()
        per: list[list[float]] = []
        host: list[list[float]] = []
        names: list[tuple[str, tuple]] = []
        for i in range(reps):
            events.clear()
            if lead_ms:
                torch.cuda._sleep(int(spin_cycles_per_ms() * lead_ms))
            fn(*arg_sets[i % len(arg_sets)])
            torch.cuda.synchronize()
            if not per:
                per, host = [[] for _ in events], [[] for _ in events]
                names = [(n, g) for n, g, *_ in events]
            for k, (_, _, s, e, h) in enumerate(events):
                per[k].append(s.elapsed_time(e))
                host[k].append(h)
    finally:
        ct.launch = real
    return names, [statistics.median(t) for t in per], [statistics.median(t) for t in host]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", required=True, help="substring of the kernels.py case label(s)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a generator knob for this run, as in sass_widths.py (e.g. a variant under Nsight Compute)")
    args = ap.parse_args()
    for item in args.set:
        bk.set_knob(*item.split("=", 1))
    if not torch.cuda.is_available():
        print("launch_split.py needs a CUDA GPU", file=sys.stderr)
        return 2
    from tilestudio.core.kernels.checking import launch_args, make_inputs

    cases = [c for c in bk.CASES if args.only in c[1]]
    if not cases:
        print(f"no kernels.py case matches {args.only!r}", file=sys.stderr)
        return 2
    rows = [["case", "launch", "kernel", "grid", "ms", "share"]]
    for case in cases:
        spec, src, ns, check = bk.prepare_case(case)
        if ns is None or not check.ok:
            rows.append([case[1], "", "skeleton" if ns is None else f"WRONG {check.message}", "", "", ""])
            continue
        sets = [launch_args(spec, ns, src.prepare_name, make_inputs(spec, "cuda", seed, bk._index_inputs(spec)))
                for seed in range(3)]
        fn = ns[src.launch_name]
        whole = bk.median_ms(fn, sets, reps=args.reps)
        names, ms, _ = split_times(fn, sets, args.reps)
        total = sum(ms) or 1.0
        for k, ((name, grid), t) in enumerate(zip(names, ms)):
            rows.append([case[1] if k == 0 else "", str(k), name, "x".join(map(str, grid)), f"{t:.3f}",
                         f"{t / total:.2f}"])
        rows.append(["", "all", "(one call, kernels.py timing)", "", f"{whole:.3f}", ""])
        rows.append(["", "copy", "(same bytes)", "", f"{bk.copy_ms(bk.moved_bytes(fn, sets[0])):.3f}", ""])
    print(f"# {torch.cuda.get_device_name()}")
    bk.print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
