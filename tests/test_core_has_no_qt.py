"""core/ is Qt-free: it runs headless (CLI, CI, child processes) and the GUI only observes it."""

import ast
import pathlib
import subprocess
import sys

CORE = pathlib.Path(__file__).resolve().parent.parent / "core"
QT_MODULES = ("PySide6", "PySide2", "PyQt5", "PyQt6", "shiboken6", "shiboken2", "qtpy", "superqt", "pytestqt",
              "tilestudio.gui")


def _is_qt(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in QT_MODULES)


def _module_level_imports(tree: ast.Module):
    """Imports that run when the module is imported (not those inside functions, which run lazily)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            yield node, [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            yield node, [node.module or ""]
        todo.extend(ast.iter_child_nodes(node))


def test_no_core_module_imports_qt_at_module_level():
    files = sorted(CORE.rglob("*.py"))
    assert files
    offenders = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, names in _module_level_imports(tree):
            offenders += [f"{path.relative_to(CORE.parent)}:{node.lineno}: {n}" for n in names if _is_qt(n)]
    assert not offenders, "core/ must not import Qt:\n" + "\n".join(offenders)


def test_only_the_cli_mentions_the_gui_and_only_lazily():
    """The CLI's `open` and `screenshot` import tilestudio.gui inside functions; no other core module does."""
    for path in sorted(CORE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(_is_qt(n) for n in names):
                assert path.name == "cli.py", f"{path}: imports {names}"


def test_importing_every_core_module_loads_no_qt():
    modules = sorted(f"tilestudio.core.{p.stem}" for p in CORE.glob("*.py") if p.stem not in ("__init__", "child"))
    code = ("import importlib, sys\n"
            f"for m in {modules!r}:\n    importlib.import_module(m)\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {list(QT_MODULES)!r} "
            "or m.startswith('tilestudio.gui'))\n"
            "print(','.join(bad))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"core imported Qt: {result.stdout}"
