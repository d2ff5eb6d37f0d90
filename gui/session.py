"""The open model: its path, its source text and the latest analysis or error, analysed off the GUI thread.

`analyze_file` blocks while a child process captures the model, so it runs on a QThreadPool worker and reports back
through a queued signal. Every analysis gets a request number; a result that arrives after the user opened or
reloaded another file is dropped, so a slow analysis can never overwrite a newer one.
"""

from __future__ import annotations

import functools
import os
import time
import traceback

from PySide6.QtCore import QFileSystemWatcher, QObject, Qt, QThreadPool, QTimer, Signal

from tilestudio.core.analyze import Analysis, analyze_file
from tilestudio.core.errors import ErrorInfo, UserError
from tilestudio.core.loader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S


class ModelSession(QObject):
    """Panes observe these signals; they never call core themselves."""

    sourceLoaded = Signal(str, str)  # path, text
    analysisStarted = Signal(str)  # path
    analysisFinished = Signal(object)  # Analysis
    analysisFailed = Signal(object)  # ErrorInfo
    busyChanged = Signal(bool)

    _taskDone = Signal(int, object, object, float)  # request, Analysis | None, ErrorInfo | None, seconds

    def __init__(self, parent: QObject | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 memory_mb: int = DEFAULT_MEMORY_MB, watch_file: bool = True):
        super().__init__(parent)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.path: str | None = None
        self.model_name: str | None = None
        self.source: str = ""
        self.analysis: Analysis | None = None
        self.error: ErrorInfo | None = None
        self.seconds: float = 0.0
        self._request = 0
        self._running: set[int] = set()
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(2)
        self._taskDone.connect(self._on_task_done, Qt.ConnectionType.QueuedConnection)
        self._watcher = QFileSystemWatcher(self) if watch_file else None
        self._reload_timer = QTimer(self, singleShot=True, interval=400)
        self._reload_timer.timeout.connect(self._reload_after_change)
        if self._watcher is not None:
            self._watcher.fileChanged.connect(lambda _path: self._reload_timer.start())

    @property
    def busy(self) -> bool:
        return self._request in self._running

    def open(self, path: str, model_name: str | None = None) -> None:
        self.path = os.path.abspath(path)
        self.model_name = model_name
        self._watch(self.path)
        self.source = _read_text(self.path)
        self.sourceLoaded.emit(self.path, self.source)
        self._start()

    def reload(self) -> None:
        if self.path:
            self.open(self.path, self.model_name)

    def wait(self, timeout_ms: int = -1) -> bool:
        """Block until every started analysis has finished (tests, screenshots, shutdown)."""
        return self.pool.waitForDone(timeout_ms)

    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Drop pending results and give running workers a moment to finish."""
        self._request += 1
        self._reload_timer.stop()
        self.pool.waitForDone(timeout_ms)

    # ---- internals -----------------------------------------------------------------------------------------
    def _watch(self, path: str) -> None:
        if self._watcher is None:
            return
        old = self._watcher.files()
        if old:
            self._watcher.removePaths(old)
        if os.path.exists(path):
            self._watcher.addPath(path)

    def _reload_after_change(self) -> None:
        # Editors often save by replacing the file, which drops it from the watcher: watch it again.
        if self.path and os.path.exists(self.path):
            self.reload()

    def _start(self) -> None:
        self._request += 1
        request = self._request
        self._running.add(request)
        self.analysis, self.error = None, None
        self.analysisStarted.emit(self.path)
        self.busyChanged.emit(True)
        task = functools.partial(self._analyse, request, self.path, self.model_name, self.timeout_s,
                                 self.memory_mb)
        self.pool.start(task)

    def _analyse(self, request: int, path: str, model_name: str | None, timeout_s: float, memory_mb: int) -> None:
        """Runs on a worker thread: no widgets, no session state, only the signal."""
        start = time.perf_counter()
        analysis, error = None, None
        try:
            analysis = analyze_file(path, model_name, timeout_s=timeout_s, memory_mb=memory_mb)
        except UserError as err:
            error = err.info
        except Exception as exc:  # noqa: BLE001 - a bug in the analyzer must not take the app down
            error = ErrorInfo(kind="crash", message=f"the analyzer failed: {type(exc).__name__}: {exc}",
                              file=path, detail=traceback.format_exc())
        try:
            self._taskDone.emit(request, analysis, error, time.perf_counter() - start)
        except RuntimeError:
            pass  # the session was deleted while we worked (the window closed)

    def _on_task_done(self, request: int, analysis: Analysis | None, error: ErrorInfo | None,
                      seconds: float) -> None:
        self._running.discard(request)
        if request != self._request:
            return
        self.seconds = seconds
        self.analysis, self.error = analysis, error
        self.busyChanged.emit(False)
        if error is not None:
            self.analysisFailed.emit(error)
        else:
            self.analysisFinished.emit(analysis)


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            raw = f.read(4_000_000)
    except OSError:
        return ""
    return raw.decode("utf-8", errors="replace")
