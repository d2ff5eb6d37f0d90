"""GUI test fixtures: an isolated main window (throw-away settings) that is closed and drained after each test."""

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from gui_helpers import ANALYSIS_TIMEOUT_MS  # noqa: E402


@pytest.fixture
def settings(tmp_path):
    from PySide6.QtCore import QSettings

    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings):
    from PySide6.QtWidgets import QApplication

    from tilestudio.gui.main_window import MainWindow

    win = MainWindow(settings)
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    yield win
    # Drain the worker threads before the window goes, so nothing outlives the test.
    assert win.session.wait(2 * ANALYSIS_TIMEOUT_MS)
    win.close()
    assert win.session.pool.activeThreadCount() == 0
    workspace = getattr(win, "workspace", None)  # kernel generation and composing workers
    assert workspace is None or (workspace.pool.activeThreadCount() == 0 and not workspace.helper_running)
    editors = getattr(win, "editors", None)  # compile-check child processes
    assert editors is None or not editors.compile_running()
    validation = getattr(win, "validation", None)  # the validation QProcess and its composing worker
    assert validation is None or (validation.process is None and validation.pool.activeThreadCount() == 0)
    graph = getattr(win, "graph_view", None)  # layouts of big graphs
    assert graph is None or graph.pool.activeThreadCount() == 0
    QApplication.processEvents()
    leaked = [w for w in QApplication.topLevelWidgets() if w.isVisible()]
    assert not leaked, f"windows left open: {leaked}"


_ANALYSES: dict = {}


@pytest.fixture
def cached_analysis(monkeypatch):
    """Analyse each model once per test run (the real child-process pipeline), then reuse the result.

    The worker thread, the queued signal and the stale-result guard still run; only the repeated child process
    (a few seconds of torch start-up each) is skipped. Tests about opening a file for real do not use this.
    """
    from tilestudio.core.analyze import file_sha256
    from tilestudio.gui import session as session_module

    real = session_module.analyze_file

    def analyze(path, model_name=None, **kwargs):
        key = (os.path.basename(path), file_sha256(path), model_name)
        if key not in _ANALYSES:
            _ANALYSES[key] = real(path, model_name, **kwargs)
        return _ANALYSES[key]

    monkeypatch.setattr(session_module, "analyze_file", analyze)
