"""The program's entry point that also stands in for the Python interpreter inside a frozen (PyInstaller) bundle.

TileStudio runs its helpers as child processes started as `sys.executable -m MODULE ARGS...` (the analysis child,
the compose/purity helper, the compile check, the validation child). In a venv `sys.executable` is Python; in the
bundle it is this program, which Python's `-m` and `-c` never reach. So, when frozen, `-m MODULE ARGS...` runs the
module as `__main__` and `-c CODE ARGS...` runs the code, the way the interpreter would; anything else is the CLI.
"""

from __future__ import annotations

import runpy
import sys


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def run_as_interpreter(args: list[str]) -> int | None:
    """Run `-m MODULE ...` / `-c CODE ...` like Python does; None when `args` is not such a command line."""
    if len(args) < 2 or args[0] not in ("-m", "-c"):
        return None
    program = sys.argv[0] if sys.argv else ""
    try:
        if args[0] == "-m":
            sys.argv = [program, *args[2:]]  # runpy puts the module's path in sys.argv[0], as `python -m` does
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c", *args[2:]]
            exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})  # noqa: S102
    except SystemExit as stop:
        return exit_code(stop.code)
    return 0


def exit_code(code) -> int:
    """The process exit status for a SystemExit code, as the interpreter computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv: list[str] | None = None, *, as_interpreter: bool | None = None) -> int:
    """`tilestudio ARGS...`; with `as_interpreter` (default: when frozen) `-m`/`-c` run like Python's."""
    args = list(sys.argv[1:] if argv is None else argv)
    if as_interpreter if as_interpreter is not None else is_frozen():
        code = run_as_interpreter(args)
        if code is not None:
            return code
    from tilestudio.core.cli import main as cli_main

    return cli_main(args)
