"""Parent side of running user code: static pre-checks, then a child process with a timeout and a memory cap.

The child (child.py) writes one JSON result file. Whatever happens to it — an exception, an infinite loop, a
segfault, running out of memory — the parent returns a value or raises a `UserError` with one clear line.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from .errors import ErrorInfo, UserError
from .opgraph import OpGraph

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 8192
STARTUP_TIMEOUT_S = 120.0  # importing torch before user code runs: off the --timeout clock, but not unbounded


@dataclass
class ChildResult:
    payload: dict[str, Any]
    wall_s: float
    timings: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: float = 0.0


_MODEL_SHAPE = "a model file defines class Model(nn.Module), get_inputs() and get_init_inputs()"


def precheck_model_file(path: str) -> str:
    """Fail fast, without starting Python, on files that cannot be a model. Returns the source text."""
    if not os.path.exists(path):
        raise UserError(ErrorInfo(kind="io", message="no such file", file=path, hint="check the path"))
    if os.path.isdir(path):
        raise UserError(ErrorInfo(kind="io", message="is a directory, not a model file", file=path,
                                  hint="pass the .py model file itself"))
    if not path.endswith(".py"):
        raise UserError(ErrorInfo(kind="io", message="not a Python file (expected a .py model file)", file=path,
                                  hint="models are .py files with class Model(nn.Module) and get_inputs()"))
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise UserError(ErrorInfo(kind="io", message=f"cannot read the file: {exc.strerror}", file=path)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(ErrorInfo(kind="io", message=f"not UTF-8 text (byte {exc.start}): a binary file?", file=path,
                                  line=raw[:exc.start].count(b"\n") + 1, hint="save the model as UTF-8 Python source")
                        ) from None
    if not text.strip():
        raise UserError(ErrorInfo(kind="missing", message="the file is empty", file=path, line=1, hint=_MODEL_SHAPE))
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise UserError(ErrorInfo(kind="syntax", message=exc.msg, file=path, line=exc.lineno,
                                  column=exc.offset, hint="fix the syntax error and reload")) from None
    if not tree.body:
        raise UserError(ErrorInfo(kind="missing", message="the file has no code (only comments or blank lines)",
                                  file=path, line=1, hint=_MODEL_SHAPE))
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    imported = any(isinstance(n, (ast.Import, ast.ImportFrom)) and any(a.name == "*" for a in n.names)
                   for n in tree.body)
    if "get_inputs" not in defined | assigned and not imported:
        raise UserError(ErrorInfo(kind="missing", message="the file defines no `get_inputs()`", file=path,
                                  line=len(text.splitlines()),
                                  hint="add def get_inputs(): return [torch.randn(...)] with the forward inputs"))
    if not any(isinstance(n, ast.ClassDef) for n in tree.body) and not imported:
        raise UserError(ErrorInfo(kind="missing", message="no class defined (expected `class Model(nn.Module)`)",
                                  file=path, line=1, hint="define class Model(nn.Module) with a forward()"))
    return text


def run_child(task: str, model_file: str, *, extra: list[str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
              memory_mb: int = DEFAULT_MEMORY_MB, python: str | None = None) -> ChildResult:
    """Run `tilestudio.core.child TASK MODEL` and return its payload; raise UserError on any failure."""
    with tempfile.TemporaryDirectory(prefix="tilestudio-") as tmp:
        result_path = os.path.join(tmp, "result.json")
        cmd = [python or sys.executable, "-m", "tilestudio.core.child", task, os.path.abspath(model_file),
               "--result", result_path, "--memory-mb", str(memory_mb), *(extra or [])]
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        env.setdefault("OMP_NUM_THREADS", "1")
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        # The --timeout clock starts when the child marks the start of user code: importing torch (seconds on a
        # loaded machine) is not the model's time.
        deadline, user_start = start + max(timeout_s, STARTUP_TIMEOUT_S), None
        while True:
            try:
                out, err = proc.communicate(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                now = time.perf_counter()
                if user_start is None and os.path.exists(result_path + ".started"):
                    user_start = now
                    deadline = now + timeout_s
                if now > deadline:
                    raise UserError(_timeout_info(proc, model_file, timeout_s, user_start is not None)) from None
                if memory_mb > 0 and _rss_mb(proc.pid) > memory_mb:
                    _kill_group(proc)
                    raise UserError(ErrorInfo(
                        kind="memory", file=model_file,
                        message=f"the model's process grew past the {memory_mb} MB memory cap and was stopped",
                        hint="raise the cap with --memory-mb, or shrink get_inputs()")) from None
        wall = time.perf_counter() - start
        if not os.path.exists(result_path):
            raise UserError(_crash_info(proc.returncode, err.decode("utf-8", "replace"), model_file, memory_mb))
        with open(result_path, encoding="utf-8") as f:
            payload = json.load(f)
    if not payload.get("ok"):
        info = ErrorInfo.model_validate(payload["error"])
        if info.file and os.path.abspath(info.file) == os.path.abspath(model_file):
            info.file = model_file  # the child got an absolute path; name the file as the user did
        raise UserError(info)
    return ChildResult(payload=payload, wall_s=wall, timings=payload.get("timings", {}),
                       peak_rss_mb=payload.get("peak_rss_mb", 0.0))


def _rss_mb(pid: int) -> float:
    """Resident set size of a process in MB (0 when it is gone or /proc is unavailable)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _timeout_info(proc: subprocess.Popen, model_file: str, timeout_s: float, in_user_code: bool) -> ErrorInfo:
    stderr = b""
    if in_user_code:
        proc.send_signal(signal.SIGUSR1)  # the child's faulthandler prints where it is, and carries on
        for _ in range(20):  # up to 2 s, until the dump reaches the child's outermost frame
            try:
                stderr = proc.communicate(timeout=0.1)[1]
                break
            except subprocess.TimeoutExpired as exc:
                stderr = exc.stderr or b""
            if b"_run_module_as_main" in stderr:
                break
    _kill_group(proc)
    text = stderr.decode("utf-8", "replace")
    if not in_user_code:
        limit = max(timeout_s, STARTUP_TIMEOUT_S)
        return ErrorInfo(kind="timeout", file=model_file, detail=text or None,
                         message=f"the child process did not reach the model within {limit:g} s (importing torch)",
                         hint="the machine may be overloaded; try again")
    line = _stack_dump_line(text, model_file)
    where = ", still running this line" if line else ""
    return ErrorInfo(
        kind="timeout", file=model_file, line=line, detail=text or None,
        message=f"the model did not finish within {timeout_s:g} s{where} (infinite loop or very slow code?)",
        hint="check loops in __init__/forward/get_inputs, or raise the limit with --timeout")


def _stack_dump_line(text: str, model_file: str) -> int | None:
    """The innermost line of the model file in a faulthandler dump (frames are listed most recent first)."""
    real = os.path.realpath(model_file)
    for m in re.finditer(r'File "([^"]+)", line (\d+)', text):
        if os.path.realpath(m.group(1)) == real:
            return int(m.group(2))
    return None


def _crash_info(returncode: int, stderr: str, model_file: str, memory_mb: int) -> ErrorInfo:
    tail = [l for l in stderr.strip().splitlines() if l.strip()]
    fatal = [l.strip() for l in tail if l.startswith("Fatal Python error:")]
    last = fatal[0] if fatal else (tail[-1].strip() if tail else "")
    if returncode < 0:
        name = signal.Signals(-returncode).name
        message = f"the child process was killed by {name}"
    else:
        message = f"the child process exited with status {returncode} without a result"
    hint = None
    if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
        hint = f"the model may need more than the {memory_mb} MB memory cap (--memory-mb)"
    elif returncode == -signal.SIGKILL:
        hint = ("SIGKILL usually comes from the system's out-of-memory killer: allocate less, or set --memory-mb "
                "below the free RAM to get a clean memory error")
    elif returncode < 0:
        hint = "native code (torch, numpy or an extension) crashed; --verbose shows the child's output"
    if last:
        message += f": {last[:200]}"
    return ErrorInfo(kind="crash", message=message, file=model_file, line=_stack_dump_line(stderr, model_file),
                     hint=hint, detail=stderr or None)


def capture_graph(model_file: str, model_name: str | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                  memory_mb: int = DEFAULT_MEMORY_MB) -> tuple[OpGraph, ChildResult]:
    precheck_model_file(model_file)
    extra = ["--model", model_name] if model_name else []
    result = run_child("capture", model_file, extra=extra, timeout_s=timeout_s, memory_mb=memory_mb)
    graph = OpGraph.model_validate(result.payload["graph"])
    return graph, result
