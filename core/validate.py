"""Parent side of validation: run a composed file on the local GPU in a child process, stream typed events.

`Validation.run()` yields events (dicts, the JSON-lines the child writes, plus the parent's own: `start`,
`timeout`, `crash`, `garbage`, `cancelled`) and folds them into a `ValidationReport`. The parent always survives:
a hung child is killed with its whole process group at the deadline, a child killed by a signal is reported with
the signal's name, garbage on the event stream is reported and skipped. Without a GPU the report carries the
dry run instead. The GUI drives the same child through QProcess (Cancel kills it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Iterator

from pydantic import BaseModel, Field

from .composer import HEADER_RE, extract_original
from .errors import ErrorInfo, UserError


class KernelResult(BaseModel):
    id: str
    compile_s: float | None = None
    ok: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    message: str = ""
    time_ms: float | None = None  # wall clock of one launch_<id> call on an idle GPU (host enqueue included)
    device_ms: float | None = None  # its device work alone (gpu_timing.time_split)


class ValidationReport(BaseModel):
    status: str = "error"  # pass | fail | error | no_gpu | cancelled
    composed_file: str
    environment: dict[str, Any] = Field(default_factory=dict)
    kernels: list[KernelResult] = Field(default_factory=list)
    end_to_end: dict[str, Any] | None = None
    timings: dict[str, Any] = Field(default_factory=dict)
    errors: list[dict[str, Any]] = Field(default_factory=list)
    dry_run: dict[str, Any] | None = None
    wall_s: float = 0.0

    def kernel(self, kid: str) -> KernelResult:
        for k in self.kernels:
            if k.id == kid:
                return k
        self.kernels.append(KernelResult(id=kid))
        return self.kernels[-1]


def fold(report: ValidationReport, ev: dict[str, Any]) -> None:
    kind = ev.get("event")
    if kind == "environment":
        report.environment = {k: v for k, v in ev.items() if k != "event"}
    elif kind == "compile":
        report.kernel(ev["kernel"]).compile_s = ev.get("seconds")
    elif kind == "kernel_check":
        k = report.kernel(ev["kernel"])
        k.ok, k.max_abs_err, k.max_rel_err, k.message = ev["ok"], ev.get("max_abs_err"), ev.get("max_rel_err"), \
            ev.get("message", "")
    elif kind == "end_to_end":
        report.end_to_end = {k: v for k, v in ev.items() if k != "event"}
    elif kind == "timings":
        report.timings = {k: v for k, v in ev.items() if k != "event"}
        for kid, ms in (ev.get("per_kernel_ms") or {}).items():
            report.kernel(kid).time_ms = ms
        for kid, ms in (ev.get("per_kernel_device_ms") or {}).items():
            report.kernel(kid).device_ms = ms
    elif kind in ("error", "timeout", "crash", "garbage"):
        report.errors.append({k: v for k, v in ev.items()})
        if ev.get("kernel"):
            k = report.kernel(ev["kernel"])
            k.ok, k.message = False, ev.get("message", "")
        if ev.get("kind") == "no_gpu":
            report.status = "no_gpu"
    elif kind == "finished":
        report.status = "pass" if ev.get("passed") else "fail"
    elif kind == "cancelled":
        report.status = "cancelled"


def specs_for(composed_path: str, timeout_s: float = 120.0):
    """Re-analyse the original code embedded in the composed file (deterministic: same kernel ids)."""
    from .analyze import analyze_file

    with open(composed_path, encoding="utf-8") as f:
        text = f.read()
    original = extract_original(text)
    header = HEADER_RE.search(text)
    if original is None or header is None:
        raise UserError(ErrorInfo(kind="missing", file=composed_path,
                                  message="not a TileStudio composed file (original-code markers or header missing)",
                                  hint="compose it with `tilestudio compose MODEL.py -o OUT.py`"))
    with tempfile.TemporaryDirectory(prefix="tilestudio-spec-") as tmp:
        model = os.path.join(tmp, header["model"])
        with open(model, "w", encoding="utf-8") as f:
            f.write(original)
        return analyze_file(model, header["cls"] if header["cls"] != "Model" else None,
                            timeout_s=timeout_s).decomposition


class Validation:
    """One validation run. `run()` is a generator of events; `cancel()` (any thread) kills the child group."""

    def __init__(self, composed_path: str, *, timeout_s: float = 600.0, atol: float = 1e-2, rtol: float = 1e-2,
                 reps: int = 20, torch_compile: bool = True, python: str | None = None,
                 child_cmd: list[str] | None = None, specs_json: str | None = None):
        self.path = composed_path
        self.timeout_s, self.atol, self.rtol, self.reps = timeout_s, atol, rtol, reps
        self.torch_compile = torch_compile
        self.python = python or sys.executable
        self.child_cmd = child_cmd  # tests substitute a fake GPU child here
        self.specs_json = specs_json  # the decomposition, when the caller already has it (bench)
        self.report = ValidationReport(composed_file=composed_path)
        self._proc: subprocess.Popen | None = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()
        if self._proc is not None and self._proc.poll() is None:
            _kill_group(self._proc)

    def command(self, specs_path: str) -> list[str]:
        if self.child_cmd:
            return list(self.child_cmd)
        cmd = [self.python, "-m", "tilestudio.core.validate_child", os.path.abspath(self.path), "--specs",
               specs_path, "--atol", str(self.atol), "--rtol", str(self.rtol), "--reps", str(self.reps)]
        return cmd + ([] if self.torch_compile else ["--no-compile"])

    def run(self) -> Iterator[dict[str, Any]]:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="tilestudio-validate-") as tmp:
            specs_path = os.path.join(tmp, "specs.json")
            if not self.child_cmd:
                text = self.specs_json or specs_for(self.path).model_dump_json()
                with open(specs_path, "w", encoding="utf-8") as f:
                    f.write(text)
            yield from self._stream(self.command(specs_path))
        if self.report.status == "no_gpu":
            yield from self._dry_run()
        self.report.wall_s = time.perf_counter() - start

    def _emit(self, ev: dict[str, Any]) -> dict[str, Any]:
        fold(self.report, ev)
        return ev

    def _stream(self, cmd: list[str]) -> Iterator[dict[str, Any]]:
        yield self._emit({"event": "start", "command": cmd})
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._proc = proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        stderr_chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()), daemon=True)
        reader.start()
        deadline = time.monotonic() + self.timeout_s
        timer = threading.Timer(self.timeout_s, lambda: _kill_group(proc))
        timer.start()
        finished = False
        try:
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                try:
                    ev = json.loads(line)
                    if not isinstance(ev, dict) or "event" not in ev:
                        raise ValueError
                except ValueError:
                    yield self._emit({"event": "garbage", "kind": "garbage", "message": line[:200]})
                    continue
                finished |= ev["event"] == "finished"
                yield self._emit(ev)
            proc.wait()
        finally:
            timer.cancel()
        reader.join(timeout=5)
        stderr = b"".join(stderr_chunks).decode("utf-8", "replace")
        if self._cancelled.is_set():
            yield self._emit({"event": "cancelled", "message": "validation cancelled; the GPU child was killed"})
        elif time.monotonic() >= deadline and not finished:
            yield self._emit({"event": "timeout", "kind": "timeout",
                              "message": f"the GPU child did not finish within {self.timeout_s:g} s and was killed"})
            self.report.status = "error"
        elif proc.returncode < 0:
            name = signal.Signals(-proc.returncode).name
            tail = [l for l in stderr.strip().splitlines() if l.strip()][-1:] or [""]
            yield self._emit({"event": "crash", "kind": "crash", "signal": name,
                              "message": f"the GPU child was killed by {name}: {tail[0][:200]}"})
            self.report.status = "error"
        elif not finished and self.report.status not in ("no_gpu",):
            if not self.report.errors:
                tail = [l for l in stderr.strip().splitlines() if l.strip()][-1:] or [""]
                yield self._emit({"event": "crash", "kind": "crash", "message":
                                  f"the GPU child exited with status {proc.returncode}: {tail[0][:200]}"})
            self.report.status = "error"
        self.report.environment.setdefault("stderr_tail", stderr[-2000:])

    def _dry_run(self) -> Iterator[dict[str, Any]]:
        from .loader import run_child

        try:
            result = run_child("dryrun", self.path, timeout_s=self.timeout_s)
            self.report.dry_run = result.payload["report"]
        except UserError as err:
            self.report.dry_run = {"ok": False, "error": {"message": err.info.one_line(), "line": err.info.line}}
        yield {"event": "dry_run", **self.report.dry_run}


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
