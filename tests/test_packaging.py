"""The app-bundle recipe (packaging/) without building it: the PyInstaller spec runs against stand-ins for
PyInstaller's classes and names files that exist, the .desktop entry is valid, the entry points import and run."""

import ast
import importlib.util
import configparser
import os
import pathlib
import shutil
import subprocess
import sys
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
SPEC = PACKAGING / "tilestudio.spec"
DESKTOP = PACKAGING / "tilestudio.desktop"
ENTRY = PACKAGING / "entry.py"
BUILD = PACKAGING / "build.sh"


class _Recorder:
    """Stands in for PyInstaller's Analysis/PYZ/EXE/COLLECT: keeps the arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        self.pure = self.scripts = self.binaries = self.datas = []


@pytest.fixture
def spec_run(tmp_path, monkeypatch):
    """Execute the spec the way PyInstaller does (SPECPATH and the build classes in its namespace)."""
    hooks = types.ModuleType("PyInstaller.utils.hooks")
    hooks.collect_submodules = lambda name: [f"{name}.core.cli", f"{name}.gui.main_window"]
    hooks.collect_all = lambda name: ([], [], [name])
    hooks.copy_metadata = lambda dist: [(f"/site-packages/{dist}.dist-info", f"{dist}.dist-info")]
    for name, module in {"PyInstaller": types.ModuleType("PyInstaller"),
                         "PyInstaller.utils": types.ModuleType("PyInstaller.utils"),
                         "PyInstaller.utils.hooks": hooks}.items():
        monkeypatch.setitem(sys.modules, name, module)
    stage = tmp_path / "stage"
    monkeypatch.setenv("TILESTUDIO_STAGE_DIR", str(stage))
    monkeypatch.setattr(sys, "path", list(sys.path))
    namespace = {"SPECPATH": str(PACKAGING), "__file__": str(SPEC)}
    for cls in ("Analysis", "PYZ", "EXE", "COLLECT"):
        namespace[cls] = type(cls, (_Recorder,), {})
    exec(compile(SPEC.read_text(), str(SPEC), "exec"), namespace)  # noqa: S102 - our own recipe
    return namespace, stage


def test_spec_parses_as_python():
    ast.parse(SPEC.read_text(), filename=str(SPEC))


def test_spec_references_existing_paths_and_stages_the_package(spec_run):
    ns, stage = spec_run
    analysis, exe, coll = ns["a"], ns["exe"], ns["coll"]
    scripts = analysis.args[0]
    assert [pathlib.Path(s) for s in scripts] == [ENTRY] and ENTRY.is_file()
    for source, dest in analysis.kwargs["datas"]:
        assert pathlib.Path(source).exists() or source.startswith("/site-packages/"), source
    for source, dest in analysis.kwargs["binaries"]:  # the tileiras toolchain, when installed
        assert pathlib.Path(source).is_file() and dest.startswith("nvidia/cu13/"), source
    assert (str(ROOT / "resources"), "tilestudio/resources") in analysis.kwargs["datas"]
    assert pathlib.Path(exe.kwargs["icon"]).is_file()
    assert exe.kwargs["name"] == "tilestudio" and coll.kwargs["name"] == "tilestudio"
    assert analysis.kwargs["pathex"] == [str(stage)]
    hidden = analysis.kwargs["hiddenimports"]
    for module in ("tilestudio.core.child", "tilestudio.core.validate_child", "tilestudio.gui.app"):
        assert module in hidden
    # the staged tree is the installed layout: tilestudio/, tilestudio/core/, tilestudio/core/kernels/, tilestudio/gui/
    for rel in ("tilestudio/__init__.py", "tilestudio/__main__.py", "tilestudio/core/cli.py",
                "tilestudio/core/kernels/__init__.py", "tilestudio/gui/main_window.py"):
        assert (stage / rel).is_file(), rel
    assert not list(stage.rglob("__pycache__"))
    # every hidden tilestudio module exists in the staged tree
    for module in hidden:
        if module.startswith("tilestudio."):
            path = stage / module.replace(".", "/")
            assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), module


def _desktop_entry() -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read_string(DESKTOP.read_text(encoding="utf-8"))
    assert parser.sections() == ["Desktop Entry"]
    return dict(parser["Desktop Entry"])


def test_desktop_entry_has_the_required_keys_and_a_known_icon():
    entry = _desktop_entry()
    for key in ("Type", "Name", "Exec", "Icon", "Categories", "Comment"):
        assert entry.get(key), key
    assert entry["Type"] == "Application" and entry["Terminal"] == "false"
    program, *codes = entry["Exec"].split()
    assert program == "tilestudio" and all(c in ("%f", "%F", "%u", "%U") for c in codes)
    assert entry["TryExec"] == program
    assert (ROOT / "resources" / "icons" / f"{entry['Icon']}.svg").is_file()
    for key in ("Categories", "MimeType", "Keywords"):
        assert entry[key].endswith(";"), key
    assert "Development" in entry["Categories"].split(";")
    assert entry.get("StartupWMClass") == "tilestudio"  # gui/app.py: setDesktopFileName("tilestudio")


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-validate not installed")
def test_desktop_entry_passes_desktop_file_validate():
    result = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout


def test_build_script_is_executable_bash():
    assert os.access(BUILD, os.X_OK)
    subprocess.run(["bash", "-n", str(BUILD)], check=True)
    text = BUILD.read_text()
    assert "packaging/tilestudio.spec" in text and "--help" in text


def test_entry_points_import():
    from tilestudio.core.cli import main

    assert callable(main)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'tilestudio = "tilestudio.core.cli:main"' in pyproject
    assert (ROOT / "app" / "__main__.py").is_file()


def _run_entry(*args):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, str(ENTRY), *args], capture_output=True, text=True, timeout=120, env=env)


def test_bundle_entry_runs_the_cli_and_dispatches_dash_m_like_python():
    result = _run_entry("--help")
    assert result.returncode == 0 and "usage: tilestudio" in result.stdout
    # child processes are started as `sys.executable -m MODULE ...`: the bundle's entry must understand that
    result = _run_entry("-m", "tilestudio", "analyze", "--help")
    assert result.returncode == 0 and "usage: tilestudio analyze" in result.stdout
    result = _run_entry("-m", "tilestudio", "analyze")  # argparse: a required argument is missing
    assert result.returncode == 2 and "required" in result.stderr


PROBE_MODULE = '''
import json, sys
with open(sys.argv[1], "w") as f:
    json.dump({"name": __name__, "argv": sys.argv}, f)
sys.exit(int(sys.argv[2]))
'''


@pytest.fixture
def frozen(monkeypatch, tmp_path):
    """This process as the bundle sees itself: sys.frozen set, sys.argv of the app binary, a module to run."""
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "argv", ["/opt/tilestudio/tilestudio"])
    (tmp_path / "ts_probe_child.py").write_text(PROBE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ts_probe_child", raising=False)
    return tmp_path


def test_frozen_entry_runs_dash_m_modules_like_python(frozen):
    import json

    from tilestudio.launcher import main

    out = frozen / "ran.json"
    assert main(["-m", "ts_probe_child", str(out), "3"]) == 3  # sys.exit(3) in the module → exit status 3
    ran = json.loads(out.read_text())
    assert ran["name"] == "__main__"
    assert ran["argv"] == [str(frozen / "ts_probe_child.py"), str(out), "3"]  # as `python -m` sets it
    out.unlink()
    assert main(["-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[0] + ' ' + __name__)", str(out)]) == 0
    assert out.read_text() == "-c __main__"
    # the bundle's entry script dispatches the same way
    spec = importlib.util.spec_from_file_location("ts_bundle_entry", ENTRY)
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)
    assert entry.main(["-m", "ts_probe_child", str(out), "0"]) == 0
    assert json.loads(out.read_text())["name"] == "__main__"


def test_unfrozen_entry_leaves_dash_m_to_the_cli(monkeypatch, tmp_path):
    from tilestudio.launcher import main

    monkeypatch.delattr(sys, "frozen", raising=False)
    (tmp_path / "ts_probe_child.py").write_text(PROBE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "ran.json"
    with pytest.raises(SystemExit):  # argparse: `-m` is no option of the CLI
        main(["-m", "ts_probe_child", str(out), "0"])
    assert not out.exists()


def test_every_child_process_module_is_bundled(spec_run):
    """Each `sys.executable -m MODULE` the app starts must be importable inside the bundle."""
    import re

    ns, _stage = spec_run
    hidden = set(ns["a"].kwargs["hiddenimports"])
    targets = set()
    for folder in ("core", "gui"):
        for path in (ROOT / folder).rglob("*.py"):
            targets |= set(re.findall(r'"-m",\s*"(tilestudio[\w.]*)"', path.read_text(encoding="utf-8")))
    assert {"tilestudio.core.child", "tilestudio.gui.editors_compose", "tilestudio.core.kernel_check"} <= targets
    assert targets - {"tilestudio"} <= hidden, targets - hidden
    assert "tilestudio.launcher" in hidden
