"""Compile check of one (possibly hand-edited) kernel, without a GPU, in a child process.

The edited code is user code: it is executed only in the child (`python -m tilestudio.core.kernel_check
REQUEST.json`), which loads it into a copy of the generated `KernelSource`, runs the launch wrapper on meta tensors
(`trace_launches`) and compiles every launched kernel ahead of time (`compile_launch`) for the requested
architecture. The child prints one JSON line, a `KernelCheckResult`; the parent (the GUI's QProcess, or
`run_kernel_check` here) reads it. An error carries the line in the kernel's own code when it has one, so an
editor can underline it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

from pydantic import BaseModel, Field

from .kernels.base import KernelSource
from .specs import KernelSpec

RESULT_PREFIX = "@@kernel_check "


class LaunchCheck(BaseModel):
    kernel: str
    grid: list[int]
    args: list[str]
    cubin_bytes: int = 0
    compile_s: float = 0.0


class KernelCheckResult(BaseModel):
    kernel_id: str
    arch: str
    ok: bool
    stage: str = ""  # "load" | "trace" | "compile" | "" when ok
    message: str = ""  # one line
    line: int | None = None  # 1-based line in the kernel's code
    column: int | None = None
    detail: str = ""  # traceback, on request
    launches: list[LaunchCheck] = Field(default_factory=list)
    seconds: float = 0.0


class KernelCheckRequest(BaseModel):
    spec: KernelSpec
    source: KernelSource  # with the code to check
    arch: str = "sm_90"


def _location(exc: BaseException, filename: str) -> tuple[int | None, int | None]:
    """Where in the kernel's code `exc` happened: cuTile's own location, a SyntaxError's, or the deepest frame."""
    loc = getattr(exc, "loc", None)
    if loc is not None and getattr(loc, "filename", None) == filename and getattr(loc, "line", 0):
        return int(loc.line), int(loc.col) + 1
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return exc.lineno, exc.offset
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return line, None


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:400]


def check_kernel(request: KernelCheckRequest) -> KernelCheckResult:
    """Runs in the child: load → trace on meta tensors → AOT compile each launch. Never raises."""
    from .kernels.aot import compile_launch, load_source, trace_launches

    start = time.perf_counter()
    spec, source = request.spec, request.source
    filename = f"<kernel {source.spec_id}>"
    result = KernelCheckResult(kernel_id=spec.id, arch=request.arch, ok=False)
    stage = "load"
    try:
        load_source(source)  # separately, so a syntax or import-time error is reported as such
        stage = "trace"
        records = trace_launches(source, spec)
        if not records:
            raise RuntimeError(f"{source.launch_name} launched no kernel")
        stage = "compile"
        compiled: dict[tuple, LaunchCheck] = {}
        for rec in records:
            key = (rec.kernel_name, tuple(rec.arg_summary))
            if key not in compiled:
                size, seconds = compile_launch(rec, request.arch)
                compiled[key] = LaunchCheck(kernel=rec.kernel_name, grid=list(rec.grid), args=rec.arg_summary,
                                            cubin_bytes=size, compile_s=round(seconds, 3))
            result.launches.append(compiled[key])
        result.ok, stage = True, ""
    except BaseException as exc:  # noqa: BLE001 - a user's kernel may raise anything; report it
        result.line, result.column = _location(exc, filename)
        result.message = _one_line(exc)
        result.detail = traceback.format_exc()[-8000:]
    result.stage = stage
    result.seconds = round(time.perf_counter() - start, 3)
    return result


def child_command(request_path: str) -> list[str]:
    return [sys.executable, "-m", "tilestudio.core.kernel_check", request_path]


def write_request(request: KernelCheckRequest, folder: str | None = None) -> str:
    fd, path = tempfile.mkstemp(prefix="tilestudio-kcheck-", suffix=".json", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(request.model_dump_json())
    return path


def parse_output(stdout: str, kernel_id: str, arch: str, stderr: str = "", exit_code: int | None = 0
                 ) -> KernelCheckResult:
    """The child's result line, or a result that says why there is none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                return KernelCheckResult.model_validate_json(line[len(RESULT_PREFIX):])
            except ValueError:
                break
    tail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    message = f"the compile check stopped (exit code {exit_code})" + (f": {tail}" if tail else "")
    return KernelCheckResult(kernel_id=kernel_id, arch=arch, ok=False, stage="child", message=message[:400],
                             detail=stderr[-8000:])


def run_kernel_check(request: KernelCheckRequest, timeout_s: float = 300.0) -> KernelCheckResult:
    """The same check, blocking, from a script or test (the GUI drives the child through QProcess)."""
    path = write_request(request)
    try:
        proc = subprocess.run(child_command(path), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return KernelCheckResult(kernel_id=request.spec.id, arch=request.arch, ok=False, stage="child",
                                 message=f"the compile check took longer than {timeout_s:.0f} s")
    finally:
        os.unlink(path)
    return parse_output(proc.stdout, request.spec.id, request.arch, proc.stderr, proc.returncode)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tilestudio.core.kernel_check REQUEST.json", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        request = KernelCheckRequest.model_validate_json(f.read())
    result = check_kernel(request)
    sys.stdout.write(RESULT_PREFIX + json.dumps(result.model_dump(mode="json")) + "\n")
    sys.stdout.flush()
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
