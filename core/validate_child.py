"""GPU side of validation (child process): `python -m tilestudio.core.validate_child COMPOSED --specs S.json`.

Streams JSON-lines events on stdout (the composed file's own prints are redirected to stderr):
environment, compile (per kernel), kernel_check (per kernel), end_to_end, timings, finished — or error, with a
kind: no_gpu, import, compile, unsupported, launch, cuda_fault.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import shutil
import sys
import time
import traceback
from typing import Any

_events = None


def emit(event: str, **fields: Any) -> None:
    _events.write(json.dumps({"event": event, **fields}, default=str) + "\n")
    _events.flush()


def _environment() -> dict:
    import torch

    env = {"torch": torch.__version__, "cuda_available": torch.cuda.is_available(),
           "torch_cuda": torch.version.cuda, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    try:
        import cuda.tile as ct

        env["cuda_tile"] = ct.__version__
    except Exception as exc:  # noqa: BLE001
        env["cuda_tile"] = None
        env["cuda_tile_error"] = str(exc)
    home = os.environ.get("CUDA_HOME", "")
    env["tileiras"] = shutil.which("tileiras") or (os.path.join(home, "bin", "tileiras")
                                                   if home and os.path.exists(os.path.join(home, "bin", "tileiras"))
                                                   else None)
    if env["cuda_available"]:
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, compute_capability=f"sm_{props.major}{props.minor}",
                   memory_gb=round(props.total_memory / 2**30, 1))
        try:
            import subprocess

            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=10).stdout.strip() or None
        except Exception:  # noqa: BLE001
            env["driver"] = None
    return env


@contextlib.contextmanager
def float32_exact():
    """The reference in float32 proper: PyTorch runs float32 convolutions in TF32 by default
    (torch.backends.cudnn.allow_tf32), ~1e-3 relative, enough to flip an argmax the kernels get right. Timings
    keep PyTorch's defaults."""
    import torch

    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def _classify(exc: BaseException) -> str:
    text = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    if isinstance(exc, NotImplementedError):
        return "unsupported"
    if "cuda error" in text.lower() or "illegal" in text.lower() or "CUDA_ERROR" in text:
        return "cuda_fault"
    if "cuda.tile" in type(exc).__module__ or "Tile" in type(exc).__name__:
        return "compile"
    return "launch"


def _line_in(exc: BaseException, path: str) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if os.path.realpath(frame.f_code.co_filename) == os.path.realpath(path):
            line = lineno
    return line


@contextlib.contextmanager
def gpu_turn(exclusive: bool):
    """Coordinate with other validations sharing this GPU (`tilestudio bench --gpu-jobs N`).

    When TILESTUDIO_GPU_LOCK names a lock file, timed regions hold it exclusively and other GPU work (kernel checks,
    the end-to-end run) holds it shared, so no two validations' GPU work overlaps a timed region while their CPU
    work (imports, JIT and torch.compile compilation) still runs in parallel. Without the variable: no locking.
    """
    path = os.environ.get("TILESTUDIO_GPU_LOCK")
    try:
        import fcntl
    except ImportError:  # not POSIX: validations are never run concurrently there
        fcntl = None
    if not path or fcntl is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _outputs(result) -> list:
    """A forward's outputs as a list (a tuple or list result, or one tensor)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _time_split(fn, args_sets: list, reps: int, warmup: int) -> dict[str, float]:
    """gpu_timing.time_split (wall, device and host ms: medians over `reps` calls, input sets rotated), alone on
    the GPU."""
    from .gpu_timing import time_split

    with gpu_turn(exclusive=True):
        return time_split(fn, args_sets, reps, warmup)


def _time_forward(timings: dict, key: str, fn, args_sets: list, reps: int, warmup: int) -> None:
    """timings[key + "_ms"] (wall: what a caller waits for), key + "_device_ms" and key + "_host_ms"."""
    t = _time_split(fn, args_sets, reps, warmup)
    timings[f"{key}_ms"], timings[f"{key}_device_ms"], timings[f"{key}_host_ms"] = t["wall"], t["device"], t["host"]


def _time_graph(timings: dict, cutile, args_sets: list, reps: int, warmup: int) -> None:
    """The cuTile forward captured as one CUDA graph and replayed: "cutile_graph_ms" (wall) when the capture works
    and its replay on other inputs equals the plain forward's output, else "cutile_graph_error" saying why."""
    import torch

    from .gpu_timing import graphed

    try:
        with gpu_turn(exclusive=False):
            replay = graphed(cutile, args_sets[0])
            want = cutile(*args_sets[-1])
            got = replay(*args_sets[-1])
            torch.cuda.synchronize()
        if not all(torch.equal(a, b) for a, b in zip(_outputs(got), _outputs(want))):
            timings["cutile_graph_error"] = "the replayed graph's output differs from the plain forward's"
            return
        timings["cutile_graph_ms"] = _time_split(replay, args_sets, reps, warmup)["wall"]
    except Exception as exc:  # noqa: BLE001  (a forward that cannot be captured: said, not fatal)
        timings["cutile_graph_error"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"


def main(argv: list[str] | None = None) -> int:
    global _events
    parser = argparse.ArgumentParser()
    parser.add_argument("composed")
    parser.add_argument("--specs", required=True)
    parser.add_argument("--atol", type=float, default=1e-2)
    parser.add_argument("--rtol", type=float, default=1e-2)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--input-sets", type=int, default=3)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile timings")
    args = parser.parse_args(argv)
    _events = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the composed file's prints go to stderr, never into the event stream

    env = _environment()
    emit("environment", **env)
    if not env["cuda_available"]:
        emit("error", kind="no_gpu", message="no CUDA GPU: torch.cuda.is_available() is False "
             f"(torch {env['torch']}, CUDA build {env['torch_cuda']}, CUDA_VISIBLE_DEVICES="
             f"{env['cuda_visible_devices']})")
        return 3
    import torch

    from .kernels.checking import check_launch, launch_args, make_inputs
    from .specs import Decomposition

    with open(args.specs, encoding="utf-8") as f:
        dec = Decomposition.model_validate_json(f.read())
    try:
        spec = importlib.util.spec_from_file_location("tilestudio_validated", args.composed)
        module = importlib.util.module_from_spec(spec)
        sys.modules["tilestudio_validated"] = module
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001
        emit("error", kind="import", message=f"{type(exc).__name__}: {exc}", line=_line_in(exc, args.composed))
        return 2
    namespace = vars(module)
    kernel_ok: dict[str, bool] = {}
    kernel_args: dict[str, list] = {}
    for kid in dec.execution_order:
        k = dec.kernel(kid)
        launch, prepare = f"launch_{kid}", (f"prepare_{kid}" if f"prepare_{kid}" in namespace else None)
        try:
            inputs = make_inputs(k, "cuda", seed=1)
            call_args = launch_args(k, namespace, prepare, inputs)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            namespace[launch](*call_args)
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            namespace[launch](*call_args)
            torch.cuda.synchronize()
            second = time.perf_counter() - t0
            emit("compile", kernel=kid, seconds=max(first - second, 0.0))
            kernel_args[kid] = call_args
            with gpu_turn(exclusive=False):
                result = check_launch(k, namespace, launch, prepare, "cuda", seed=2)
            kernel_ok[kid] = result.ok
            emit("kernel_check", kernel=kid, ok=result.ok, max_abs_err=result.max_abs_err,
                 max_rel_err=result.max_rel_err, message=result.message)
        except BaseException as exc:  # noqa: BLE001
            kind = _classify(exc)
            kernel_ok[kid] = False
            emit("error", kind=kind, kernel=kid, message=f"{type(exc).__name__}: {str(exc).strip()[:500]}",
                 line=_line_in(exc, args.composed))
            if kind == "cuda_fault":
                return 2  # the CUDA context is gone; nothing after this would be meaningful
    entry = next(getattr(module, n) for n in sorted(namespace) if n.startswith("ModelCuTile")
                 and isinstance(getattr(module, n), type))
    model_cls = getattr(module, dec.model_class)
    torch.manual_seed(0)
    init = module.get_init_inputs() if hasattr(module, "get_init_inputs") else []
    model = model_cls(*init).cuda().eval()
    cutile = entry(model)

    def fresh_inputs(seed: int) -> list:
        torch.manual_seed(seed)
        return [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]

    e2e_ok = False
    try:
        with torch.no_grad(), gpu_turn(exclusive=False), float32_exact():
            inputs = fresh_inputs(0)
            expected = model(*inputs)
            actual = cutile(*inputs)
            torch.cuda.synchronize()
        exp, act = _outputs(expected), _outputs(actual)
        outputs = []
        e2e_ok = len(exp) == len(act)
        for i, (a, e) in enumerate(zip(act, exp)):
            if a.shape != e.shape or a.dtype != e.dtype:
                outputs.append({"index": i, "ok": False, "max_diff": math.inf,
                                "note": f"{a.dtype}{list(a.shape)} vs {e.dtype}{list(e.shape)}"})
                e2e_ok = False
                continue
            if e.is_floating_point():
                ok = bool(torch.allclose(a, e, atol=args.atol, rtol=args.rtol)) and not bool(
                    torch.isnan(a).any() & ~torch.isnan(e).any())
                diff = float((a.double() - e.double()).abs().max()) if e.numel() else 0.0
            else:
                ok = bool(torch.equal(a, e))
                diff = float((a.double() - e.double()).abs().max()) if e.numel() else 0.0
            outputs.append({"index": i, "ok": ok, "max_diff": diff, "shape": list(e.shape),
                            "dtype": str(e.dtype).removeprefix("torch.")})
            e2e_ok &= ok
        emit("end_to_end", ok=e2e_ok, max_diff=max((o["max_diff"] for o in outputs), default=0.0),
             outputs=outputs)
    except BaseException as exc:  # noqa: BLE001
        kind = _classify(exc)
        emit("error", kind=kind, message=f"{type(exc).__name__}: {str(exc).strip()[:500]}",
             line=_line_in(exc, args.composed))
        if kind == "cuda_fault":
            return 2
    timings: dict[str, Any] = {}
    try:
        sets = [fresh_inputs(100 + i) for i in range(args.input_sets)]
        with torch.no_grad():
            _time_forward(timings, "eager", model, sets, args.reps, args.warmup)
            _time_forward(timings, "cutile", cutile, sets, args.reps, args.warmup)
            if not args.no_compile:
                compiled = torch.compile(model)
                t0 = time.perf_counter()
                compiled(*sets[0])
                torch.cuda.synchronize()
                timings["torch_compile_s"] = time.perf_counter() - t0
                _time_forward(timings, "compile", compiled, sets, args.reps, args.warmup)
            per_kernel, per_kernel_device = {}, {}
            for kid, call_args in kernel_args.items():
                t = _time_split(namespace[f"launch_{kid}"], [call_args], args.reps, args.warmup)
                per_kernel[kid], per_kernel_device[kid] = t["wall"], t["device"]
            timings["per_kernel_ms"] = per_kernel
            timings["per_kernel_device_ms"] = per_kernel_device
            _time_graph(timings, cutile, sets, args.reps, args.warmup)
        timings["speedup_vs_eager"] = timings["eager_ms"] / timings["cutile_ms"]
        if "compile_ms" in timings:
            timings["speedup_vs_compile"] = timings["compile_ms"] / timings["cutile_ms"]
        emit("timings", **timings)
    except BaseException as exc:  # noqa: BLE001
        emit("error", kind=_classify(exc), message=f"timing failed: {type(exc).__name__}: {str(exc)[:300]}")
    passed = e2e_ok and all(kernel_ok.values())
    emit("finished", passed=passed)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
