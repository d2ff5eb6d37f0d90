"""Bad input to `tilestudio analyze`: one line `file[:line]: kind error: cause (hint: ...)` on stderr, exit 2.

Each case is a file in tests/bad_models/ run through the real CLI in a subprocess. Most of them start the child
process that imports torch (~3 s of CPU each), so the module starts every selected CLI call at once on first use
and each test waits for its own: the module takes about the total CPU time over the cores, not the sum of waits.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BAD = "tests/bad_models"


@dataclass(frozen=True)
class Run:
    """One CLI call: `tilestudio analyze PATH *ARGS`, with the path relative to the repository root."""

    path: str
    args: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "tilestudio", "analyze", self.path, *self.args]


@dataclass(frozen=True)
class Case:
    id: str
    run: Run
    line: int | None  # expected `path:LINE:`; None where no line makes sense
    kind: str  # the `KIND error:` word
    cause: tuple[str, ...]  # substrings of the message naming the cause
    hint: str | None = None  # substring of the `(hint: ...)` part
    slow_first: bool = field(default=False, compare=False)


def bad(name: str, *args: str) -> Run:
    return Run(f"{BAD}/{name}", tuple(args))


CASES = [
    # Static pre-checks in the parent (no child process).
    Case("syntax_error", bad("syntax_error.py"), 6, "syntax", ("expected ':'",), "fix the syntax"),
    Case("missing_get_inputs", bad("missing_get_inputs.py"), 11, "missing", ("get_inputs()",), "def get_inputs()"),
    Case("missing_model", bad("missing_model.py"), 1, "missing", ("class Model(nn.Module)",), "define class Model"),
    Case("empty", bad("empty.py"), 1, "missing", ("empty",), "class Model(nn.Module)"),
    Case("comments_only", bad("comments_only.py"), 1, "missing", ("no code",), "class Model(nn.Module)"),
    Case("not_python", bad("not_python.txt"), None, "io", ("not a Python file",), ".py"),
    Case("binary", bad("binary.py"), 2, "io", ("not UTF-8",), "UTF-8"),
    Case("directory", Run(BAD), None, "io", ("is a directory",), ".py model file"),
    Case("nonexistent", bad("no_such_model.py"), None, "io", ("no such file",), "check the path"),
    # User code run in the child process.
    Case("infinite_loop", bad("infinite_loop.py", "--timeout", "5"), 11, "timeout",
         ("did not finish within 5 s", "infinite loop"), "--timeout", slow_first=True),
    Case("missing_model_class", bad("missing_model_class.py"), 1, "missing", ("no nn.Module subclass",),
         "define class Model"),
    Case("init_raises", bad("init_raises.py"), 9, "exception",
         ("Model.__init__ raised", "ValueError: unsupported feature count")),
    Case("forward_raises", bad("forward_raises.py"), 12, "exception",
         ("forward() raised", "RuntimeError", "[4, 32] X [4, 16]")),
    Case("get_inputs_raises", bad("get_inputs_raises.py"), 12, "exception", ("get_inputs() raised", "KeyError")),
    Case("data_dependent_branch", bad("data_dependent_branch.py"), 12, "capture",
         ("data-dependent control flow",), "torch.where"),
    Case("data_dependent_shape", bad("data_dependent_shape.py"), 11, "capture",
         ("data-dependent output shape", "aten.index.Tensor"), "torch.where(mask, x, 0)"),
    Case("missing_import", bad("missing_import.py"), 3, "import", ("No module named 'einops'",),
         "install the package 'einops'"),
    Case("huge_numpy_array", bad("huge_allocation.py", "--memory-mb", "2048"), 6, "memory",
         ("out of memory", "MemoryError"), "memory cap is 2048 MB"),
    Case("huge_torch_tensor", bad("huge_tensor.py", "--memory-mb", "2048"), 5, "memory",
         ("out of memory", "can't allocate memory"), "memory cap is 2048 MB"),
    Case("several_modules", bad("several_modules.py"), None, "missing",
         ("several nn.Module classes (Decoder, Encoder)", "none is named Model"), "--model NAME"),
    Case("unknown_model_name", bad("several_modules.py", "--model", "Nope"), None, "missing",
         ("no nn.Module class named 'Nope'",), "Decoder, Encoder"),
    Case("killed_by_signal", bad("killed_by_signal.py"), None, "crash", ("killed by SIGKILL",), "out-of-memory"),
    Case("segfault", bad("segfault.py"), 13, "crash", ("killed by SIGSEGV", "Segmentation fault"), "native code"),
]

VERBOSE = bad("init_raises.py", "--verbose")
PICKED = bad("several_modules.py", "--model", "Encoder")


@pytest.fixture(scope="module")
def cli(request):
    """Start, all at once, the CLI calls of the selected tests of this module; `cli(run)` waits for one."""
    runs: list[Run] = []
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if getattr(item, "module", None) is request.module:
            for value in params.values():
                run = value.run if isinstance(value, Case) else value
                if isinstance(run, Run) and run not in runs:
                    runs.append(run)
    slow = {c.run for c in CASES if c.slow_first}
    runs.sort(key=lambda r: r not in slow)  # the timeout case waits longest: start it first
    env = dict(os.environ, OMP_NUM_THREADS="1")

    def call(run: Run) -> subprocess.CompletedProcess:
        return subprocess.run(run.argv(), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures: dict[Run, Future] = {run: pool.submit(call, run) for run in runs}
        yield lambda run: (futures.get(run) or pool.submit(call, run)).result()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gives_one_line_and_exit_2(cli, case: Case):
    proc = cli(case.run)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr  # one line, no traceback
    line = lines[0]
    where = f"{case.run.path}:{case.line}:" if case.line else f"{case.run.path}: "
    assert line.startswith(where), line
    assert f" {case.kind} error: " in line, line
    for cause in case.cause:
        assert cause in line, line
    if case.hint:
        assert "(hint: " in line and case.hint in line.split("(hint: ", 1)[1], line


@pytest.mark.parametrize("run", [VERBOSE], ids=["init_raises"])
def test_verbose_adds_the_traceback(cli, run: Run):
    proc = cli(run)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"{BAD}/init_raises.py:9: exception error: Model.__init__ raised"), lines[0]
    assert "Traceback (most recent call last):" in proc.stderr
    assert 'init_raises.py", line 9, in __init__' in proc.stderr
    assert "ValueError: unsupported feature count" in lines[1:]


@pytest.mark.parametrize("run", [PICKED], ids=["several_modules"])
def test_model_option_picks_a_class(cli, run: Run):
    proc = cli(run)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "KERNEL SPEC: fc_linear_relu" in proc.stdout
