"""CUDA-event timings of a forward on the GPU, split into what a user waits for and where it goes.

  - wall: events around one call on an idle GPU, so the host's enqueue time (Python wrappers, launches, glue ops)
    counts as it does for a user calling the model once;
  - device: the same events with a spin kernel (torch.cuda._sleep) keeping the GPU busy while the host enqueues the
    start event, the call and the end event, so they bracket device work only;
  - host: perf_counter around the call in that busy case (enqueue only, never waiting on the GPU).

wall close to host (and above device) means the forward is launch-bound: faster kernels will not show, fewer or
cheaper launches (or one CUDA graph) will. `graphed` captures a forward as one CUDA graph for that comparison.
Imports torch lazily; runs only where CUDA is available (the validation child, bench scripts).
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

_CYCLES_PER_MS: list[float] = []


def spin_cycles_per_ms() -> float:
    """GPU clock cycles per millisecond of torch.cuda._sleep, measured once per process."""
    import torch

    if not _CYCLES_PER_MS:
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(2_000_000)
        end.record()
        end.synchronize()
        _CYCLES_PER_MS.append(2_000_000 / max(start.elapsed_time(end), 1e-3))
    return _CYCLES_PER_MS[0]


def time_split(fn: Callable, arg_sets: list, reps: int = 20, warmup: int = 3) -> dict[str, float]:
    """Medians over `reps` calls (input sets rotated, after `warmup` calls) of wall, device and host time, in ms.
    The spin before each busy call lasts the slowest host time seen so far, doubled, plus a millisecond."""
    import torch

    for i in range(warmup):
        fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.synchronize()
    wall, device, host = [], [], []
    for i in range(reps):
        args = arg_sets[i % len(arg_sets)]
        for busy in (False, True):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if busy:
                torch.cuda._sleep(int(spin_cycles_per_ms() * (1.0 + 2 * max(host, default=0.0))))
            start.record()
            t0 = time.perf_counter()
            fn(*args)
            t1 = time.perf_counter()
            end.record()
            end.synchronize()
            (device if busy else wall).append(start.elapsed_time(end))
            if busy:
                host.append((t1 - t0) * 1e3)
    return {"wall": statistics.median(wall), "device": statistics.median(device), "host": statistics.median(host)}


def graphed(fn: Callable, example: list) -> Callable:
    """fn captured as one CUDA graph over static copies of `example`'s tensors (after warm-up calls on a side
    stream, as torch.cuda.graph requires): a callable that copies its tensor arguments into those and replays,
    returning the graph's static outputs (overwritten by the next replay). Raises where fn cannot be captured."""
    import torch

    static = [t.clone() if isinstance(t, torch.Tensor) else t for t in example]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(*static)

    def replay(*args: Any):
        for s, a in zip(static, args):
            if isinstance(s, torch.Tensor):
                s.copy_(a)
        graph.replay()
        return out

    return replay
