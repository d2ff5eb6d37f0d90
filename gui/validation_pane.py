"""The Validation pane: run the composed file on the local GPU, live.

Run writes the current composed text to a temporary file (composing it on a worker thread when no composed text is
at hand) and starts `python -m tilestudio validate COMPOSED --json` as a QProcess. Its JSON-lines events fill a log
and a results table as they arrive (per kernel: compile time, check, max abs/rel error, time; end to end: PASS/FAIL
and max diff; eager / torch.compile / cuTile timings and speedups) and turn graph nodes PASS/FAIL. Without a GPU the
run ends with the no-GPU message and the dry run's result. Cancel kills the whole process tree, the GPU child that
`validate` starts in its own session included. The command is replaceable (`command_factory`) so tests drive the
pane with a fake runner.
"""

from __future__ import annotations

import functools
import html
import json
import os
import shutil
import tempfile
import traceback
from typing import Callable

from PySide6.QtCore import (QElapsedTimer, QEvent, QObject, QProcess, QProcessEnvironment, QSize, Qt, QThreadPool,
                            QTimer, Signal)
from PySide6.QtGui import QColor, QFont, QTextCursor
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QPlainTextEdit, QSizePolicy, QSplitter, QStyle,
                               QToolButton, QTreeWidgetItem, QVBoxLayout, QWidget)

from tilestudio.core.cli import format_event, timing_details
from tilestudio.core.specs import Decomposition
from tilestudio.core.validate import ValidationReport, fold

from .code_editor import monospace_font
from .kernels_pane import swatch
from .settings_dialog import AppSettings
from .theme import DARK, Theme
from .validation_support import (dry_run_text, kill_tree, log_kind_for, num, quote, signal_name, timings_text,
                                 validate_command)
from .widgets import PlaceholderTree, follow_palette_theme

COLUMNS = ["Kernel", "Compile (s)", "Check", "Max abs err", "Max rel err", "GPU (ms)", "Message"]
ID_ROLE = Qt.ItemDataRole.UserRole
WATCHDOG_MARGIN_S = 180  # on top of the validation timeout: re-analysis of the specs and the dry run come first

# run state → (pill text, colour on dark, colour on light)
PILLS = {
    "idle": ("NOT RUN", "#8b949e", "#6e7781"), "composing": ("COMPOSING", "#58a6ff", "#0969da"),
    "running": ("RUNNING", "#58a6ff", "#0969da"), "pass": ("PASS", "#3fb950", "#1a7f37"),
    "fail": ("FAIL", "#f85149", "#cf222e"), "error": ("ERROR", "#f85149", "#cf222e"),
    "no_gpu": ("NO GPU", "#d29922", "#9a6700"), "cancelled": ("CANCELLED", "#8b949e", "#6e7781"),
}


class _ComposeDone(QObject):
    done = Signal(int, object, object)  # request, text | None, error message | None


class ValidationPane(QWidget):
    kernelStatus = Signal(str, str)  # kernel id, graph status ("compiled", "pass", "fail")
    kernelSelected = Signal(str)  # a row was clicked
    runFinished = Signal(object)  # ValidationReport
    runningChanged = Signal(bool)

    def __init__(self, theme: Theme = DARK, parent: QWidget | None = None, *,
                 settings_provider: Callable[[], AppSettings] | None = None):
        super().__init__(parent)
        self.theme = theme
        self.settings_provider = settings_provider or AppSettings
        # composed path → argv; None runs `python -m tilestudio validate` with the interpreter from the settings
        self.command_factory: Callable[[str], list[str]] | None = None
        # returns the current composed text, or None to compose the model's generated kernels here
        self.composed_provider: Callable[[], str | None] | None = None
        # True while the window's helper process is still generating the kernels: the run then waits for
        # composed_ready() instead of generating them on a thread of this (GUI) process
        self.compose_waiter: Callable[[], bool] | None = None
        self._waiting_for_sources = False
        self.model_path: str | None = None
        self.decomposition: Decomposition | None = None
        self.report: ValidationReport | None = None
        self.state = "idle"
        self.process: QProcess | None = None
        self.killed_pids: list[int] = []
        self._cancelled = False
        self._stdout = b""
        self._stderr_tail = ""
        self._tmpdir: str | None = None
        self._request = 0
        self._message = ""
        self._clock = QElapsedTimer()
        self._tick = QTimer(self, interval=500)
        self._tick.timeout.connect(self._update_elapsed)
        self._watchdog = QTimer(self, singleShot=True)
        self._watchdog.timeout.connect(self._on_watchdog)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._compose_signal = _ComposeDone(self)
        self._compose_signal.done.connect(self._on_composed, Qt.ConnectionType.QueuedConnection)
        self._rows: dict[str, QTreeWidgetItem] = {}
        self._build()
        self._set_state("idle")

    # ---- widgets -------------------------------------------------------------------------------------------
    def _build(self) -> None:
        style = self.style()
        self.run_button = QToolButton(text="Run", toolTip="Validate the composed file on this machine's GPU")
        self.run_button.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_MediaPlay))
        self.run_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QToolButton(text="Cancel", toolTip="Kill the validation run")
        self.cancel_button.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_MediaStop))
        self.cancel_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.cancel_button.clicked.connect(self.cancel)
        self.pill = QLabel()
        self.pill.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.pill.setMinimumWidth(86)
        pill_font = QFont(self.font())
        pill_font.setBold(True)
        self.pill.setFont(pill_font)
        self.summary = QLabel()
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setWordWrap(True)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.summary.setContentsMargins(8, 0, 8, 4)
        self.environment = QLabel()
        self.environment.setTextFormat(Qt.TextFormat.RichText)
        self.environment.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.elapsed = QLabel()
        self.elapsed.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        top = QHBoxLayout()
        top.setContentsMargins(6, 6, 8, 4)
        top.setSpacing(6)
        top.addWidget(self.run_button)
        top.addWidget(self.cancel_button)
        top.addSpacing(6)
        top.addWidget(self.pill)
        top.addWidget(self.environment, 1)
        top.addWidget(self.elapsed)

        self.table = PlaceholderTree()
        self.table.setColumnCount(len(COLUMNS))
        self.table.setHeaderLabels(COLUMNS)
        self.table.setRootIsDecorated(False)
        self.table.setUniformRowHeights(True)
        self.table.setAlternatingRowColors(True)
        self.table.setAllColumnsShowFocus(True)
        header = self.table.header()
        header.setStretchLastSection(True)
        for col in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        for col in range(1, len(COLUMNS) - 1):
            self.table.headerItem().setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.table.itemClicked.connect(lambda item, _col: self.kernelSelected.emit(item.data(0, ID_ROLE) or ""))

        self.log = QPlainTextEdit(readOnly=True)
        self.log.setFont(monospace_font(9))
        self.log.setMaximumBlockCount(5000)
        self.log.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.log.setPlaceholderText("The validation log appears here.")
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.log)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.splitter, 1)

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._set_state(self.state)
        self._refresh_table()
        self._refresh_summary()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        follow_palette_theme(self, event)
        super().changeEvent(event)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(900, 300)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        # Results beside the log when there is room, above it in a narrow dock.
        wide = event.size().width() >= 1000
        orientation = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self.splitter.orientation() != orientation:
            self.splitter.setOrientation(orientation)
            total = event.size().width() if wide else max(1, self.splitter.height())
            self.splitter.setSizes([int(total * 0.62), total - int(total * 0.62)])

    def _colour(self, state: str) -> str:
        _, dark, light = PILLS[state]
        return dark if self.theme.name == "dark" else light

    # ---- model ---------------------------------------------------------------------------------------------
    def set_model(self, path: str | None, dec: Decomposition | None) -> None:
        """The analysed model the next run validates (None: nothing to run)."""
        self.model_path, self.decomposition = path, dec
        if not self.running:  # a finished run's results belong to the model they came from
            self.report = None
            self._clock.invalidate()
            self._prefill_rows()
            self._set_state("idle")

    def _prefill_rows(self) -> None:
        self.table.clear()
        self._rows = {}
        if self.decomposition is None:
            self.table.set_placeholder("Open a model, then Run to validate its composed file on the GPU.")
            return
        self.table.set_placeholder("")
        for index, k in enumerate(self.decomposition.kernels):
            item = QTreeWidgetItem([k.id] + [""] * (len(COLUMNS) - 1))
            item.setData(0, ID_ROLE, k.id)
            item.setIcon(0, swatch(self.theme.kernel_colour(index)))
            for col in range(1, len(COLUMNS) - 1):
                item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.addTopLevelItem(item)
            self._rows[k.id] = item

    # ---- running -------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.state in ("composing", "running")

    def can_run(self) -> bool:
        return not self.running and self.model_path is not None and self.decomposition is not None

    def run(self) -> bool:
        if not self.can_run():
            return False
        self._request += 1
        self._cancelled = False
        self.killed_pids = []
        self.report = ValidationReport(composed_file="")
        self._prefill_rows()
        self.log.clear()
        self._clock.start()
        self._tick.start()
        text = self.composed_provider() if self.composed_provider is not None else None
        if text:
            self._set_state("composing")
            self._start_process(text)
        elif self.compose_waiter is not None and self.compose_waiter():
            self._set_state("composing")
            self._waiting_for_sources = True
            self._log("waiting for the kernels the helper process is generating…", "dim")
        else:
            self._set_state("composing")
            self._log("composing the model's generated kernels…", "dim")
            self.pool.start(functools.partial(self._compose_in_worker, self._request, self.model_path,
                                              self.decomposition))
        return True

    def _compose_in_worker(self, request: int, path: str, dec: Decomposition) -> None:
        """Worker thread: generate every kernel and compose (seconds for a big model)."""
        text, error = None, None
        try:
            from tilestudio.core.composer import compose_model

            text = compose_model(path, dec).text
        except Exception as exc:  # noqa: BLE001 - a composer bug is shown, not raised
            error = f"composing failed: {type(exc).__name__}: {exc}"
            traceback.print_exc()
        try:
            self._compose_signal.done.emit(request, text, error)
        except RuntimeError:
            pass

    @property
    def waiting_for_sources(self) -> bool:
        """A run is waiting for the window's kernels (composed_ready goes on with it)."""
        return self._waiting_for_sources

    def composed_ready(self, text: str | None, error: str | None = None) -> None:
        """The window's kernels are generated (text: the composed file) or could not be (error): a run waiting
        for them goes on."""
        if not self._waiting_for_sources:
            return
        self._waiting_for_sources = False
        self._on_composed(self._request, text or None, None if text else (error or "no composed file"))

    def _on_composed(self, request: int, text: str | None, error: str | None) -> None:
        if request != self._request or self.state != "composing":
            return
        if error or not text:
            self._log(error or "composing produced no text", "error")
            self._finish("error", error or "composing failed")
            return
        self._start_process(text)

    def _start_process(self, text: str) -> None:
        self._cleanup_tmp()
        self._tmpdir = tempfile.mkdtemp(prefix="tilestudio-validate-")
        stem = os.path.splitext(os.path.basename(self.model_path or "model.py"))[0]
        composed = os.path.join(self._tmpdir, f"{stem}_cutile.py")
        with open(composed, "w", encoding="utf-8") as f:
            f.write(text)
        self.report = ValidationReport(composed_file=composed)
        settings = self.settings_provider()
        argv = (self.command_factory(composed) if self.command_factory is not None
                else validate_command(settings.interpreter(), composed, settings))
        self._stdout, self._stderr_tail = b"", ""
        proc = QProcess(self)
        proc.setProgram(argv[0])
        proc.setArguments(argv[1:])
        proc.setWorkingDirectory(self._tmpdir)
        env = QProcessEnvironment.systemEnvironment()
        env.insert("PYTHONUNBUFFERED", "1")
        proc.setProcessEnvironment(env)
        if hasattr(proc, "setUnixProcessParameters"):
            # Own session: a Ctrl+C in the terminal that started the app does not reach the GPU job.
            proc.setUnixProcessParameters(QProcess.UnixProcessFlag.CreateNewSession)
        proc.readyReadStandardOutput.connect(self._on_stdout)
        proc.readyReadStandardError.connect(self._on_stderr)
        proc.finished.connect(self._on_process_finished)
        proc.errorOccurred.connect(self._on_process_error)
        self.process = proc
        self._set_state("running")
        self._log("$ " + " ".join(quote(a) for a in argv), "dim")
        self._watchdog.start(int(1000 * (settings.validation_timeout_s + WATCHDOG_MARGIN_S)))
        proc.start()

    def cancel(self) -> None:
        if self.state == "composing" and self.process is None:
            self._request += 1  # the composed text, when it comes, is dropped
            self._waiting_for_sources = False
            self._cancelled = True
            self._finish("cancelled", "validation cancelled")
            return
        if self.process is not None and self.process.state() != QProcess.ProcessState.NotRunning:
            self._cancelled = True
            self._log("cancelling: killing the validation process and its children…", "dim")
            self._kill()

    def _kill(self) -> None:
        proc = self.process
        if proc is None:
            return
        pid = proc.processId()
        if pid > 0:
            self.killed_pids = kill_tree(pid)
        proc.kill()

    def _on_watchdog(self) -> None:
        if self.process is not None and self.process.state() != QProcess.ProcessState.NotRunning:
            self._log("the validation process did not finish in time and was killed", "error")
            self._kill()

    def wait(self, timeout_ms: int = 30_000) -> bool:
        """Block until the composing worker and the process are done (tests, shutdown)."""
        ok = self.pool.waitForDone(timeout_ms)
        if self.process is not None and self.process.state() != QProcess.ProcessState.NotRunning:
            ok = self.process.waitForFinished(timeout_ms) and ok
        return ok

    def shutdown(self) -> None:
        """Kill a running validation and remove the temporary files (the window is closing)."""
        self._request += 1
        if self.process is not None and self.process.state() != QProcess.ProcessState.NotRunning:
            self._cancelled = True
            self._kill()
            self.process.waitForFinished(3000)
        self.pool.waitForDone(10_000)
        self._tick.stop()
        self._watchdog.stop()
        self._cleanup_tmp()

    def _cleanup_tmp(self) -> None:
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    # ---- process output ------------------------------------------------------------------------------------
    def _on_stdout(self) -> None:
        if self.process is None:
            return
        self._stdout += bytes(self.process.readAllStandardOutput())
        *lines, self._stdout = self._stdout.split(b"\n")
        for raw in lines:
            self._handle_line(raw.decode("utf-8", "replace").strip())

    def _on_stderr(self) -> None:
        if self.process is None:
            return
        text = bytes(self.process.readAllStandardError()).decode("utf-8", "replace")
        self._stderr_tail = (self._stderr_tail + text)[-4000:]
        for line in text.splitlines():
            if line.strip():
                self._log(line, "stderr")

    def _handle_line(self, line: str) -> None:
        if not line:
            return
        try:
            ev = json.loads(line)
        except ValueError:
            ev = None
        if not isinstance(ev, dict) or "event" not in ev:
            self._log(line, "stdout")
            return
        self.handle_event(ev)

    def handle_event(self, ev: dict) -> None:
        """Fold one event into the report, the log, the table and the graph statuses."""
        kind = ev.get("event")
        if self.report is None:
            self.report = ValidationReport(composed_file="")
        if kind == "report":
            data = {k: v for k, v in ev.items() if k != "event"}
            try:
                self.report = ValidationReport.model_validate(data)
            except ValueError:
                pass
            self._log(f"report: {str(data.get('status', '?')).upper()} ({data.get('wall_s', 0):.1f} s)",
                      log_kind_for(data.get("status")))
        else:
            fold(self.report, ev)
            self._log_event(ev)
        kid = ev.get("kernel")
        if kind == "compile" and kid:
            self.kernelStatus.emit(kid, "compiled")
        elif kind == "kernel_check" and kid:
            self.kernelStatus.emit(kid, "pass" if ev.get("ok") else "fail")
        elif kind in ("error", "crash", "timeout") and kid:
            self.kernelStatus.emit(kid, "fail")
        elif kind == "dry_run":
            for kid, ok in self._dry_run_kernels(ev).items():
                self.kernelStatus.emit(kid, "compiled" if ok else "fail")
        self._refresh_table()
        self._refresh_summary()

    def _log_event(self, ev: dict) -> None:
        kind = ev.get("event")
        if kind == "start":
            return  # the command line was logged when the process started
        if kind == "environment" and not ev.get("cuda_available"):
            self._log(f"environment: torch {ev.get('torch')}, cuda.tile {ev.get('cuda_tile')}, no CUDA GPU", "dim")
            return
        if kind == "timings":
            self._log(timings_text(ev), "info")
            return
        if kind == "finished":
            self._log("finished: " + ("PASS" if ev.get("passed") else "FAIL"), "pass" if ev.get("passed") else "fail")
            return
        if kind == "dry_run":
            self._log(dry_run_text(ev), "pass" if ev.get("ok") else "fail")
            for row in ev.get("launches", []):
                if not row.get("ok"):
                    self._log(f"  compile error in {row.get('kernel')}: {row.get('message', '')}", "error")
            return
        try:
            text = format_event(ev)
        except (KeyError, TypeError, ValueError):
            text = None
        if text is None:
            text = json.dumps(ev, default=str)[:400]
        style = "info"
        if kind in ("error", "crash", "timeout", "garbage", "cancelled"):
            style = "warning" if ev.get("kind") == "no_gpu" else "error"
        elif kind == "kernel_check":
            style = "info" if ev.get("ok") else "fail"
        elif kind == "end_to_end":
            style = "pass" if ev.get("ok") else "fail"
        self._log(text.strip(), style)

    def _on_process_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            program = self.process.program() if self.process is not None else "?"
            message = f"could not start {program}: {self.process.errorString() if self.process else ''}"
            self._log(message, "error")
            self._finish("error", message)

    def _on_process_finished(self, exit_code: int, exit_status: QProcess.ExitStatus) -> None:
        if self.state != "running":
            return
        self._on_stdout()
        if self._stdout.strip():
            self._handle_line(self._stdout.decode("utf-8", "replace").strip())
            self._stdout = b""
        report = self.report
        if self._cancelled:
            state, message = "cancelled", "validation cancelled: the process and its children were killed"
        elif exit_status == QProcess.ExitStatus.CrashExit:
            state = "error"
            message = f"the validation process was killed by {signal_name(exit_code)}"
            tail = [line for line in self._stderr_tail.splitlines() if line.strip()][-1:]
            if tail:
                message += f": {tail[0][:200]}"
        elif report is not None and report.status in ("pass", "fail", "no_gpu", "cancelled"):
            state, message = report.status, ""
        elif report is not None and report.errors:
            state, message = "error", str(report.errors[-1].get("message", ""))
        else:
            tail = [line for line in self._stderr_tail.splitlines() if line.strip()][-1:]
            state = "error"
            message = f"the validation process exited with status {exit_code}" + (f": {tail[0][:200]}" if tail
                                                                                   else "")
        if state in ("error", "cancelled") and message:
            self._log(message, "error" if state == "error" else "dim")
        self._finish(state, message)

    def _finish(self, state: str, message: str) -> None:
        self._tick.stop()
        self._watchdog.stop()
        if self.report is None:
            self.report = ValidationReport(composed_file="")
        if state in ("error", "cancelled"):
            self.report.status = state
        if not self.report.wall_s and self._clock.isValid():
            self.report.wall_s = self._clock.elapsed() / 1000
        self._message = message
        if self.process is not None:
            self.process.deleteLater()
            self.process = None
        self._set_state(state)
        self._refresh_table()
        self._refresh_summary()
        self._update_elapsed()
        self.runFinished.emit(self.report)

    # ---- presentation --------------------------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        was_running = self.running
        self.state = state
        text = PILLS[state][0]
        colour = QColor(self._colour(state))
        fill = QColor(colour)
        fill.setAlpha(50)
        self.pill.setText(text)
        self.pill.setStyleSheet(f"QLabel {{ color: {colour.name()}; background: rgba({fill.red()}, {fill.green()}, "
                                f"{fill.blue()}, {fill.alpha()}); border: 1px solid {colour.name()}; "
                                "border-radius: 9px; padding: 2px 10px; }")
        self.run_button.setEnabled(self.can_run())
        self.cancel_button.setEnabled(self.running)
        if state in ("idle", "composing"):
            self.environment.setText("")
        if state == "idle":
            self.summary.setText(self._dim("Validate the composed file on this machine's GPU: per-kernel checks, "
                                           "end-to-end check, timings vs eager and torch.compile."
                                           if self.decomposition is not None else "Open a model to validate it."))
            self.elapsed.setText("")
        if was_running != self.running:
            self.runningChanged.emit(self.running)

    def _update_elapsed(self) -> None:
        if not self.running and self.report is not None and self.report.wall_s:
            self.elapsed.setText(self._dim(f"{self.report.wall_s:.1f} s"))
        elif self._clock.isValid():
            self.elapsed.setText(self._dim(f"{self._clock.elapsed() / 1000:.1f} s"))

    def _dim(self, text: str) -> str:
        return f"<span style='color:{self.theme.dim_text}'>{html.escape(text)}</span>"

    def _refresh_summary(self) -> None:
        r = self.report
        if r is None or self.state == "idle":
            return
        parts: list[str] = []
        env = r.environment
        if env.get("gpu"):
            details = [f"{env['gpu']} ({env.get('compute_capability', '?')})"]
            details += [f"{name} {env[key]}" for key, name in (("driver", "driver"), ("torch", "torch"),
                                                               ("cuda_tile", "cuda.tile")) if env.get(key)]
            self.environment.setText(self._dim(" · ".join(details)))
        elif env:
            self.environment.setText(self._dim(f"torch {env.get('torch', '?')} · no CUDA GPU"))
        if r.end_to_end is not None:
            ok = r.end_to_end.get("ok")
            colour = self._colour("pass" if ok else "fail")
            parts.append(f"<b style='color:{colour}'>end-to-end {'PASS' if ok else 'FAIL'}</b> "
                         f"max diff {num(r.end_to_end.get('max_diff'), '.3g')}")
        t = r.timings
        if t.get("cutile_ms") is not None:
            parts.append(self._timings_html(t))
        if r.status == "no_gpu" or self.state == "no_gpu":
            message = next((e.get("message", "") for e in r.errors if e.get("kind") == "no_gpu"), "no CUDA GPU")
            parts.append(f"<span style='color:{self._colour('no_gpu')}'>{html.escape(message.split(':')[0])}</span>")
            if r.dry_run is not None:
                colour = self._colour("pass" if r.dry_run.get("ok") else "fail")
                parts.append(f"<span style='color:{colour}'>{html.escape(dry_run_text(r.dry_run))}</span>")
        if self.state in ("error", "cancelled") and getattr(self, "_message", ""):
            parts.append(html.escape(self._message))
        elif self.state == "error" and r.errors:
            parts.append(html.escape(str(r.errors[-1].get("message", ""))[:200]))
        if self.state in ("composing", "running") and not parts:
            parts.append(self._dim("composing…" if self.state == "composing" else "starting…"))
        sep = f" <span style='color:{self.theme.dim_text}'>·</span> "
        self.summary.setText(sep.join(parts))
        self.summary.setToolTip("\n".join([str(e.get("message", "")) for e in r.errors] + timing_details(t)))

    def _timings_html(self, t: dict) -> str:
        """eager / torch.compile / cuTile times, the speedups green when cuTile is faster, amber when slower."""
        times = [f"eager {num(t.get('eager_ms'), '.3f')} ms"]
        if t.get("compile_ms") is not None:
            times.append(f"torch.compile {num(t.get('compile_ms'), '.3f')} ms")
        times.append(f"<b>cuTile {num(t.get('cutile_ms'), '.3f')} ms</b>")
        speed = []
        for key, label in (("speedup_vs_eager", "vs eager"), ("speedup_vs_compile", "vs torch.compile")):
            value = t.get(key)
            if value is not None:
                colour = self._colour("pass" if value >= 1.0 else "no_gpu")
                speed.append(f"<span style='color:{colour}'>{value:.2f}×</span> {label}")
        text = " | ".join(times) + (f" ({', '.join(speed)})" if speed else "")
        device, host = t.get("cutile_device_ms"), t.get("cutile_host_ms")
        if device is not None and host is not None and host > device:
            text += (f" · <span style='color:{self._colour('no_gpu')}'>launch-bound: the host takes {host:.3f} ms "
                     f"to enqueue {device:.3f} ms of GPU work</span>")
        if t.get("cutile_graph_ms") is not None:
            text += f" · as one CUDA graph {t['cutile_graph_ms']:.3f} ms"
        return text

    def _refresh_table(self) -> None:
        r = self.report
        if r is None:
            return
        dry = self._dry_run_kernels_detail(r.dry_run) if r.dry_run else {}
        for k in r.kernels:
            item = self._rows.get(k.id)
            if item is None:  # a kernel the decomposition did not list (a fake runner, or a stale model)
                item = QTreeWidgetItem([k.id] + [""] * (len(COLUMNS) - 1))
                item.setData(0, ID_ROLE, k.id)
                self.table.addTopLevelItem(item)
                self._rows[k.id] = item
            item.setText(1, num(k.compile_s, ".2f"))
            check, colour = "", None
            if k.ok is True:
                check, colour = "ok", self._colour("pass")
            elif k.ok is False:
                check, colour = "FAIL", self._colour("fail")
            item.setText(2, check)
            item.setForeground(2, QColor(colour) if colour else self.palette().text())
            item.setText(3, num(k.max_abs_err, ".3g"))
            item.setText(4, num(k.max_rel_err, ".3g"))
            item.setText(5, num(k.device_ms if k.device_ms is not None else k.time_ms, ".3f"))
            item.setToolTip(5, f"device work {num(k.device_ms, '.3f')} ms; one launch_{k.id} call on an idle GPU "
                               f"{num(k.time_ms, '.3f')} ms (host enqueue included)")
            item.setText(6, k.message)
            item.setToolTip(6, k.message)
        for kid, (ok, seconds, message) in dry.items():
            item = self._rows.get(kid)
            if item is None or any(k.id == kid for k in r.kernels):
                continue
            item.setText(1, num(seconds, ".2f"))
            item.setText(2, "compiles" if ok else "compile error")
            item.setForeground(2, QColor(self._colour("no_gpu" if ok else "fail")))
            item.setText(6, message or "dry run only (no GPU)")
            item.setToolTip(6, message)
        checked = {k.id for k in r.kernels if k.ok is not None} | set(dry)
        for kid, item in self._rows.items():
            if kid not in checked and item.text(2) in ("", "…", "—"):
                # pending while the run goes on; not reached once it is over
                item.setText(2, "…" if self.running else ("—" if self.state != "idle" else ""))
                item.setForeground(2, QColor(self.theme.dim_text))

    def _dry_run_kernels(self, ev: dict) -> dict[str, bool]:
        return {kid: ok for kid, (ok, _s, _m) in self._dry_run_kernels_detail(ev).items()}

    def _dry_run_kernels_detail(self, ev: dict) -> dict[str, tuple[bool, float, str]]:
        """Dry-run launches name kernel functions (`<id>_kernel`, ...): map them back to kernel ids."""
        ids = sorted(self._rows, key=len, reverse=True)
        out: dict[str, tuple[bool, float, str]] = {}
        for row in ev.get("launches", []) or []:
            name = str(row.get("kernel", ""))
            kid = next((i for i in ids if name == i or name.startswith(i + "_")), None)
            if kid is None:
                continue
            ok, seconds, message = out.get(kid, (True, 0.0, ""))
            out[kid] = (ok and bool(row.get("ok")), seconds + float(row.get("compile_s") or 0.0),
                        message or str(row.get("message") or ""))
        return out

    def _log(self, text: str, style: str = "info") -> None:
        colours = {"error": self.theme.error, "fail": self._colour("fail"), "pass": self._colour("pass"),
                   "warning": self._colour("no_gpu"), "dim": self.theme.dim_text, "stderr": self.theme.dim_text,
                   "stdout": self.theme.text, "info": self.theme.text}
        colour = colours.get(style, self.theme.text)
        self.log.appendHtml(f"<span style='color:{colour}; white-space:pre-wrap'>{html.escape(text)}</span>")
        self.log.moveCursor(QTextCursor.MoveOperation.End)

    # ---- for tests -----------------------------------------------------------------------------------------
    def log_text(self) -> str:
        return self.log.toPlainText()

    def row(self, kernel_id: str) -> list[str]:
        item = self._rows.get(kernel_id)
        return [item.text(c) for c in range(len(COLUMNS))] if item is not None else []
