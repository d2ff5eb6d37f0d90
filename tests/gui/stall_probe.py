"""Measure how long the GUI thread's event loop goes without turning (a plain module for the GUI tests).

A QTimer ticks every `interval_ms`; the gap between two ticks is how long the event loop could not run a timer:
the GUI thread was busy, blocked on a lock (the interpreter lock held by a worker thread), blocked in a system call,
or runnable but not given a CPU by the OS. Only the last is not the app's doing: on a loaded 2-core CI machine the
scheduler alone can hold a runnable thread back for tens of milliseconds. Linux counts that time per thread (the
run-queue wait in /proc/self/task/TID/schedstat), so each gap is also reported without it: the stall the app
caused. Where the counter is missing, the stall is the whole gap.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from PySide6.QtCore import QTimer


def _runqueue_wait_s(tid: int) -> float | None:
    try:
        with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Gap:
    at_s: float  # since start
    wall_ms: float  # between two ticks
    waiting_for_cpu_ms: float  # of which the thread was runnable but not running (the OS's doing)

    @property
    def stall_ms(self) -> float:
        return self.wall_ms - self.waiting_for_cpu_ms


@dataclass
class StallProbe:
    interval_ms: int = 10
    gaps: list[Gap] = field(default_factory=list)

    def start(self) -> None:
        self._tid = threading.get_native_id()  # call from the GUI thread
        self._timer = QTimer(interval=self.interval_ms)
        self._timer.setTimerType(self._timer.timerType().PreciseTimer)
        self._timer.timeout.connect(self._tick)
        self._t0 = self._last = time.perf_counter()
        self._last_wait = _runqueue_wait_s(self._tid)
        self._timer.start()

    def _tick(self) -> None:
        now, wait = time.perf_counter(), _runqueue_wait_s(self._tid)
        waited = (wait - self._last_wait) if wait is not None and self._last_wait is not None else 0.0
        self.gaps.append(Gap(self._last - self._t0, 1000 * (now - self._last), 1000 * waited))
        self._last, self._last_wait = now, wait

    def stop(self) -> None:
        self._tick()  # the time since the last tick counts too
        self._timer.stop()

    def worst(self, n: int = 5, key=lambda g: g.stall_ms) -> list[Gap]:
        return sorted(self.gaps, key=key, reverse=True)[:n]

    def max_stall_ms(self) -> float:
        return max((g.stall_ms for g in self.gaps), default=0.0)

    def max_gap_ms(self) -> float:
        return max((g.wall_ms for g in self.gaps), default=0.0)

    def report(self) -> str:
        rows = ", ".join(f"{g.wall_ms:.0f} ms at {g.at_s:.2f} s ({g.waiting_for_cpu_ms:.0f} waiting for a CPU)"
                         for g in self.worst())
        return f"{len(self.gaps)} ticks; worst gaps: {rows}"


def measure_load(model: str, timeout_s: float = 120.0) -> dict:
    """Open `model` in a fresh main window of this process and probe the event loop until every pane is filled."""
    import json  # noqa: F401
    import sys
    import tempfile

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from tilestudio.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory(prefix="tilestudio-stall-") as tmp:
        win = MainWindow(QSettings(f"{tmp}/settings.ini", QSettings.Format.IniFormat), restore_state=False)
        win.resize(1280, 800)
        win.show()
        for _ in range(20):  # the first layout and paint of the empty window
            app.processEvents()
            time.sleep(0.005)
        probe = StallProbe()
        probe.start()
        win.open_model(model)
        deadline = time.perf_counter() + timeout_s
        while not loaded(win) and time.perf_counter() < deadline:
            app.processEvents()
            time.sleep(0.001)
        probe.stop()
        result = {"loaded": loaded(win), "kernels": win.kernels.count(), "helper_error": win.workspace.helper_error,
                  "torch_in_gui_process": "torch" in sys.modules, "max_gap_ms": probe.max_gap_ms(),
                  "max_stall_ms": probe.max_stall_ms(), "report": probe.report()}
        win.close()
        win.session.wait(30_000)
    return result


def loaded(win) -> bool:
    """Analysis, graph, model and validation panes, highlighting, and the first composition with its purity check."""
    ws = win.workspace
    return (win.session.analysis is not None and bool(win.graph_view.nodes) and win.model_pane.topLevelItemCount() > 0
            and win.validation.decomposition is not None and ws.result is not None and not ws.composing
            and win.source_highlighter.done and win.decomposition_highlighter.done)


if __name__ == "__main__":  # python stall_probe.py MODEL: one measurement in a process like the app's, as JSON
    import json
    import os
    import sys

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    print(json.dumps(measure_load(sys.argv[1])))
