"""Application entry points: the interactive app and the headless screenshot."""

from __future__ import annotations

import os
import sys
import tempfile

from PySide6.QtCore import QCoreApplication, QEventLoop, QSettings, QtMsgType, QTimer, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from tilestudio import __version__

from .main_window import MainWindow
from .resources import app_icon


def create_application(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), named so that QSettings has a home."""
    app = QApplication.instance()
    if app is None:
        QCoreApplication.setOrganizationName("TileStudio")
        QCoreApplication.setOrganizationDomain("tilestudio.dev")
        QCoreApplication.setApplicationName("TileStudio")
        QCoreApplication.setApplicationVersion(__version__)
        app = QApplication(argv if argv is not None else sys.argv[:1])
        app.setDesktopFileName("tilestudio")
    app.setWindowIcon(app_icon())
    return app  # type: ignore[return-value]


def run_app(model_file: str | None) -> int:
    app = create_application()
    window = MainWindow()
    window.show()
    if model_file and model_file.endswith(".tstudio"):
        window.project.open_project(model_file)
    elif model_file:
        window.open_model(model_file)
    return app.exec()


def save_screenshot(model_file: str, output: str, *, kernel: str | None = None, width: int = 1600,
                    height: int = 1000, theme: str | None = None, model_name: str | None = None,
                    timeout_s: float | None = None, memory_mb: int | None = None) -> tuple[bool, str]:
    """Open `model_file` in a fresh main window, wait for the analysis, select a kernel, save a PNG.

    Returns (analysis succeeded, message). The picture is saved either way: a failed analysis shows the problem.
    The window uses throw-away settings, so neither the user's layout nor their recent files are involved.
    """
    app = create_application()
    previous = qInstallMessageHandler(_quiet_offscreen_messages)
    try:
        return _save_screenshot(app, model_file, output, kernel=kernel, width=width, height=height, theme=theme,
                                model_name=model_name, timeout_s=timeout_s, memory_mb=memory_mb)
    finally:
        qInstallMessageHandler(previous)


def _quiet_offscreen_messages(kind: QtMsgType, _context, message: str) -> None:
    # The offscreen platform warns about window features it does not have; that is expected here.
    if "propagateSizeHints" in message:
        return
    print(message, file=sys.stderr)


def _save_screenshot(app: QApplication, model_file: str, output: str, *, kernel: str | None, width: int,
                     height: int, theme: str | None, model_name: str | None, timeout_s: float | None,
                     memory_mb: int | None) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="tilestudio-shot-") as tmp:
        settings = QSettings(os.path.join(tmp, "settings.ini"), QSettings.Format.IniFormat)
        if theme:
            settings.setValue("view/theme", theme)
        window = MainWindow(settings, restore_state=False)
        if timeout_s is not None:
            window.session.timeout_s = timeout_s
        if memory_mb is not None:
            window.session.memory_mb = memory_mb
        window.resize(width, height)
        window.show()
        _process_events(app)
        window.apply_default_sizes()

        loop = QEventLoop()
        window.session.busyChanged.connect(lambda busy: None if busy else loop.quit())
        guard = QTimer(singleShot=True, interval=int(1000 * (window.session.timeout_s + 60)))
        guard.timeout.connect(loop.quit)
        guard.start()
        window.session.open(model_file, model_name)
        if window.session.busy:
            loop.exec()
        guard.stop()

        analysis, error = window.session.analysis, window.session.error
        if analysis is not None and kernel:
            if not window.kernels.select(kernel):
                ids = ", ".join(window.kernels.kernel_ids())
                message = f"no kernel {kernel!r} in {model_file} (kernels: {ids})"
                window.close()
                return False, message
        _process_events(app)
        window.finish_highlighting()
        pixmap = window.grab()
        saved = pixmap.save(output, "PNG")
        window.close()
        _process_events(app)
    if not saved:
        return False, f"could not write {output}"
    if error is not None:
        return False, error.one_line()
    if analysis is None:
        return False, f"{model_file}: the analysis did not finish"
    return True, f"wrote {output} ({pixmap.width()}×{pixmap.height()})"


def _process_events(app: QApplication, rounds: int = 5) -> None:
    for _ in range(rounds):
        app.processEvents()
