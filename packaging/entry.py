"""Entry point of the bundled app (PyInstaller): `tilestudio [COMMAND] ...` as installed by pip.

Inside the bundle `sys.executable` is this program, not a Python interpreter, yet TileStudio runs user code and
GPU work in child processes started as `sys.executable -m tilestudio.core.child ...`. So `-m MODULE ARGS...` is
understood here the way Python understands it, and the same child processes work in the bundle and in a venv.
"""

from __future__ import annotations

import runpy
import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 2 and args[0] == "-m":
        module = args[1]
        sys.argv = [sys.argv[0], *args[2:]]
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            return _exit_code(stop.code)
        return 0
    from tilestudio.core.cli import main as cli_main

    return cli_main(args)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
