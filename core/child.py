"""Entry point of the child process that runs user code: `python -m tilestudio.core.child TASK ...`.

The parent (loader.py) starts it with a timeout and a memory cap and reads one JSON result file; user code may
print anything to stdout/stderr without disturbing the protocol.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import resource
import signal
import sys
import time
import traceback

from .errors import ErrorInfo, UserError


def _apply_memory_cap(cap_mb: int) -> None:
    """Cap the address space at what is mapped now plus `cap_mb`, so user code gets a clean MemoryError.

    Relative, not absolute: a CUDA build of torch reserves tens of GB of virtual address space at import, which an
    absolute cap would refuse (seen on the H200 image). The parent also watches the resident size as a backstop.
    """
    if cap_mb > 0:
        limit = _vm_size_bytes() + cap_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _vm_size_bytes() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _warm_up() -> None:
    """Import torch and export a one-op module: start-up cost a long-lived worker pays once, kept off the clock."""
    import warnings

    import torch
    import torch.export

    warnings.filterwarnings("ignore", category=UserWarning)

    class _One(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x + 1)

    with torch.device("meta"):
        torch.export.export(_One(), (torch.randn(2),), strict=False)


def _peak_rss_mb() -> float:
    """This process's peak resident set in MiB: VmHWM of its own address space on Linux. ru_maxrss is not reset by
    execve and so starts at the spawning parent's resident set (a 1 GB test runner or GUI made a 330 MB analysis
    child report 1035 MB); it remains the fallback where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _memory_hint(cap_mb: int) -> str:
    return f"the memory cap is {cap_mb} MB: raise it with --memory-mb, or allocate less"


def _write_marker(path: str) -> None:
    with open(path, "w", encoding="utf-8"):
        pass


def _write(path: str, payload: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(payload, f)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tilestudio-child")
    parser.add_argument("task", choices=["capture", "verify", "dryrun"])
    parser.add_argument("model_file")
    parser.add_argument("--result", required=True)
    parser.add_argument("--model", default=None)
    parser.add_argument("--decomposition", default=None)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args(argv)

    # A crash in native code prints the Python stack, and SIGUSR1 (sent by the parent on a timeout) prints it
    # without stopping: the parent finds the user's file:line in it.
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1)
    start = time.perf_counter()
    try:
        _warm_up()
        _apply_memory_cap(args.memory_mb)
        _write_marker(args.result + ".started")  # the parent's --timeout clock for user code starts now
        work_start = time.perf_counter()
        if args.task == "capture":
            from .capture_model import capture_file

            graph = capture_file(args.model_file, args.model)
            payload = {"ok": True, "graph": graph.model_dump(mode="json")}
        elif args.task == "dryrun":
            from .dryrun import dry_run

            payload = {"ok": True, "report": dry_run(args.model_file, args.arch)}
        else:
            from .verify_run import verify_file

            payload = {"ok": True, "report": verify_file(args.model_file, args.model, args.decomposition)}
        payload["timings"] = {"import_s": work_start - start, "work_s": time.perf_counter() - work_start}
    except UserError as err:
        if err.info.kind == "memory":
            err.info.hint = _memory_hint(args.memory_mb)
        payload = {"ok": False, "error": err.info.model_dump(mode="json")}
    except MemoryError:
        payload = {"ok": False, "error": ErrorInfo(
            kind="memory", message=f"the model needed more than the {args.memory_mb} MB memory cap",
            file=args.model_file, hint=_memory_hint(args.memory_mb)).model_dump()}
    except BaseException as exc:  # noqa: BLE001 - the parent must always get an answer
        payload = {"ok": False, "error": ErrorInfo(
            kind="internal", message=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
            file=args.model_file, detail=traceback.format_exc()).model_dump()}
    payload["peak_rss_mb"] = _peak_rss_mb()
    _write(args.result, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
