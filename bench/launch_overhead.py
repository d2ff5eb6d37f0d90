"""Host-side cost of launching generated kernels (GPU): per case, the median host time of one call of the
generated `launch_<id>` wrapper, of its bare `ct.launch` (arguments prepared once), and of PyTorch eager doing
the same work, with the GPU kept busy so no call waits on it; then a cProfile of 200 wrapper calls of the first
case (top entries by own time) to show where the time goes.

    python bench/launch_overhead.py [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import os
import pstats
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import CASES, _cycles_per_ms, _index_inputs, print_table, spec_for  # noqa: E402

DEFAULT = ["x+y bf16 64M", "gelu bf16 64M", "rms_norm 16384x4096 bf16", "argmax(-1) 8192x8192 bf16",
           "cumsum 64x1048576 fp32 (chunked carry)"]


def host_times(fn, reps=50) -> float:
    times = []
    for _ in range(reps):
        torch.cuda._sleep(int(_cycles_per_ms() * 2))
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench/launch_overhead.py needs a CUDA GPU", file=sys.stderr)
        return 2
    import cuda.tile as ct

    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import intercept_launches, load_source
    from tilestudio.core.kernels.checking import launch_args, make_inputs

    labels = [c[1] for c in CASES if args.only and args.only in c[1]] or DEFAULT
    rows = [["case", "wrapper us", "ct.launch us", "ct.launch, raw stream us", "ct.launch, fresh views us",
             "launches", "eager us"]]
    profiled = None
    for label in labels:
        case = next(c for c in CASES if c[1] == label)
        spec = spec_for(case[2], case[3])
        src = generate_kernel(spec)
        ns = load_source(src)
        call = launch_args(spec, ns, src.prepare_name, make_inputs(spec, "cuda", 0, _index_inputs(spec)))
        wrapper = ns[src.launch_name]
        wrapper(*call)
        torch.cuda.synchronize()
        records = []
        with intercept_launches(records):  # the wrapper's ct.launch calls with their prepared arguments
            wrapper(*call)
        bare = [(r.kernel, r.grid, r.args) for r in records]
        stream = torch.cuda.current_stream()  # both bare columns launch on it (current_stream is its own row)

        def launches():
            for kernel, grid, kargs in bare:
                ct.launch(stream, grid, kernel, kargs)

        raw = torch._C._cuda_getCurrentRawStream(torch.cuda.current_device())

        def launches_raw():
            """The bare launches given the current stream as its raw handle (an int) instead of a Stream."""
            for kernel, grid, kargs in bare:
                ct.launch(raw, grid, kernel, kargs)

        def launches_fresh():
            """The bare launches with every tensor argument replaced by a fresh view of it (new Python objects,
            as a wrapper's outputs and views are on every call)."""
            for kernel, grid, kargs in bare:
                ct.launch(stream, grid, kernel, tuple(a.view(a.shape) if isinstance(a, torch.Tensor) else a
                                                      for a in kargs))
        launches()
        launches_raw()
        torch.cuda.synchronize()
        ref_ns = {"torch": torch, "math": math}
        exec(spec.reference, ref_ns)  # noqa: S102 - the spec's own reference
        ref_in = make_inputs(spec, "cuda", 0, _index_inputs(spec))
        ref = ref_ns[spec.reference_name]
        ref(*ref_in)
        rows.append([label, f"{host_times(lambda: wrapper(*call)):.1f}", f"{host_times(launches):.1f}",
                     f"{host_times(launches_raw):.1f}", f"{host_times(launches_fresh):.1f}", str(len(bare)), f"{host_times(lambda: ref(*ref_in)):.1f}"])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
        if profiled is None:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(200):
                wrapper(*call)
            prof.disable()
            torch.cuda.synchronize()
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(14)
            profiled = f"cProfile, 200 calls of launch_ for {label}:\n" + buf.getvalue()
    x = torch.empty(1 << 20, device="cuda")
    parts = [["host step", "us"],
             ["torch.cuda.current_stream()", f"{host_times(torch.cuda.current_stream):.1f}"],
             ["torch._C._cuda_getCurrentRawStream(0)",
              f"{host_times(lambda: torch._C._cuda_getCurrentRawStream(0)):.1f}"],
             ["torch.empty(64M bf16)", f"{host_times(lambda: torch.empty(1 << 26, dtype=torch.bfloat16, device='cuda')):.1f}"],
             ["x.contiguous().view(-1)", f"{host_times(lambda: x.contiguous().view(-1)):.1f}"]]
    print(profiled)
    print_table(parts)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
