"""Entry point of the bundled app (PyInstaller): `tilestudio [COMMAND] ...` as installed by pip.

Inside the bundle `sys.executable` is this program, not a Python interpreter, yet TileStudio runs user code and
GPU work in child processes started as `sys.executable -m tilestudio.core.child ...`. So `-m MODULE ARGS...` (and
`-c CODE ARGS...`) are understood here the way Python understands them (tilestudio/launcher.py), and the same
child processes work in the bundle and in a venv.
"""

from __future__ import annotations

import sys

from tilestudio.launcher import main as launcher_main


def main(argv: list[str] | None = None) -> int:
    # Always as the interpreter: this file is only the bundle's entry (and its tests run it unfrozen).
    return launcher_main(argv, as_interpreter=True)


if __name__ == "__main__":
    sys.exit(main())
