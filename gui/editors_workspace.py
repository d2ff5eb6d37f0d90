"""The kernel workspace: generated kernel sources, the user's edits, and the composed file with its purity check.

It follows the ModelSession: opening a model starts (warms) a helper process, a finished analysis has it run the
kernel generators (the first call imports the kernel library and torch: seconds of C-extension loading that, on a
thread of this process, held the interpreter lock and froze the window), and every edit restarts a short
debounce, after which the helper composes the file and checks its purity (a few hundred ms of pure Python for a
large model: on a thread it would hold the interpreter lock against the GUI thread while the user types). Without
the helper process (it could not start, or died) the work falls back to a worker thread. Each result carries a request number and a result that is
no longer the latest is dropped, as in the session.

Edits are the user's work and outlive everything but an explicit reset or opening another model: a re-analysis
keeps them (a kernel the new analysis no longer has keeps its edit, reported as orphaned, and not composed).

Purity diagnostics point at lines of the composed file; those inside a kernel's section map back to that kernel's
editor through the section's line range and the length of its banner header, computed from the section text.
"""

from __future__ import annotations

import functools
import pickle
import sys

from PySide6.QtCore import QObject, QProcess, Qt, QThreadPool, QTimer, Signal

from tilestudio.core.kernels.base import KernelSource
from tilestudio.core.specs import Decomposition

from .editors_compose import (FRAME_HEADER, ComposeResult, GenerateResult, code_offsets, compose_and_check,
                              generate_sources)

COMPOSE_DEBOUNCE_MS = 200  # purity results land ≤ 300 ms after the last keystroke on a mid-size model

__all__ = ["ComposeResult", "KernelWorkspace", "code_offsets"]


class ComposeHelper(QObject):
    """The long-lived helper process that composes and checks (gui/editors_compose.py), driven by QProcess."""

    resultReady = Signal(object)  # ComposeResult or GenerateResult
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.process: QProcess | None = None
        self._buffer = b""

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.state() != QProcess.ProcessState.NotRunning

    def submit(self, args: tuple) -> bool:
        if not self.running and not self._start():
            return False
        data = pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)
        self.process.write(len(data).to_bytes(FRAME_HEADER, "big") + data)
        return True

    def warm(self) -> bool:
        """Start the process and have it import the kernel library now, while the analysis runs."""
        return self.submit(("warm",))

    def _start(self) -> bool:
        self.stop()
        process = QProcess(self)
        process.setProgram(sys.executable)
        process.setArguments(["-m", "tilestudio.gui.editors_compose"])
        process.setProcessChannelMode(QProcess.ProcessChannelMode.ForwardedErrorChannel)
        process.readyReadStandardOutput.connect(self._read)
        process.finished.connect(self._on_finished)
        self._buffer = b""
        process.start()
        if not process.waitForStarted(5000):
            process.deleteLater()
            return False
        self.process = process
        return True

    def _read(self) -> None:
        if self.process is None:
            return
        self._buffer += bytes(self.process.readAllStandardOutput())
        while len(self._buffer) >= FRAME_HEADER:
            size = int.from_bytes(self._buffer[:FRAME_HEADER], "big")
            if len(self._buffer) < FRAME_HEADER + size:
                break
            payload = self._buffer[FRAME_HEADER:FRAME_HEADER + size]
            self._buffer = self._buffer[FRAME_HEADER + size:]
            try:
                result = pickle.loads(payload)
            except Exception as exc:  # noqa: BLE001 - a garbled frame: give up on the helper
                self.stop()
                self.failed.emit(f"unreadable result from the compose helper: {exc!r}")
                return
            self.resultReady.emit(result)

    def _on_finished(self, exit_code: int, _status) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.deleteLater()
            self.failed.emit(f"the compose helper process exited (code {exit_code})")

    def stop(self, timeout_ms: int = 3000) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.finished.disconnect(self._on_finished)
        process.closeWriteChannel()  # the helper returns when its stdin closes
        if not process.waitForFinished(timeout_ms):
            process.kill()
            process.waitForFinished(1000)
        process.deleteLater()


# ---- the workspace -------------------------------------------------------------------------------------------
class KernelWorkspace(QObject):
    generationStarted = Signal()
    sourcesReady = Signal()  # `decomposition` and `generated` belong to the latest analysis
    kernelEdited = Signal(str)  # the edit of one kernel changed (typing, undo, reset)
    editsReplaced = Signal()  # every edit replaced at once (project opened, recovery restored)
    composeStarted = Signal()
    composeFinished = Signal(object)  # ComposeResult
    cleared = Signal()  # another model: no kernels, no edits
    sourcesLost = Signal()  # the analysis failed: no kernels for now, the edits (and their editors) stay

    _generated = Signal(int, object, object)  # request, Decomposition, sources
    _composed = Signal(object)  # ComposeResult

    def __init__(self, parent: QObject | None = None, *, debounce_ms: int = COMPOSE_DEBOUNCE_MS,
                 use_process: bool = True):
        super().__init__(parent)
        self.model_path: str | None = None
        self.original: str = ""
        self.decomposition: Decomposition | None = None
        self.generated: dict[str, KernelSource] = {}
        self.edits: dict[str, str] = {}
        self.result: ComposeResult | None = None
        self._generation = 0
        self._compose_request = 0
        self._compose_running = False
        self._compose_pending = False
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(2)
        self._closed = False  # after shutdown nothing starts again (late results are dropped)
        self._generating: tuple[int, Decomposition] | None = None  # the generation the helper is running
        self.generating = False  # kernels of the latest decomposition are being generated (helper or thread)
        self.helper_error = ""
        self._use_process = use_process
        self.helper = ComposeHelper(self)
        self.helper.resultReady.connect(self._on_helper_result)
        self.helper.failed.connect(self._on_helper_failed)
        self._generated.connect(self._on_generated, Qt.ConnectionType.QueuedConnection)
        self._composed.connect(self._on_composed, Qt.ConnectionType.QueuedConnection)
        self._debounce = QTimer(self, singleShot=True, interval=debounce_ms)
        self._debounce.timeout.connect(self._start_compose)

    # ---- model lifecycle -----------------------------------------------------------------------------------
    def set_model(self, path: str, original: str) -> None:
        """The session loaded `path`: a different model starts afresh; the same one (reload) keeps the edits."""
        self.original = original
        if path != self.model_path:
            self.model_path = path
            self.decomposition, self.generated, self.edits, self.result = None, {}, {}, None
            self._generation += 1
            self.generating = False
            self._compose_request += 1
            self.cleared.emit()
        if self._use_process and not self._closed and not self.helper.running:
            self.helper.warm()

    def set_decomposition(self, dec: Decomposition) -> None:
        if self._closed:
            return
        self._generation += 1
        self.generating = True
        self.generationStarted.emit()
        if self._use_process and self.helper.submit(("generate", self._generation, dec)):
            self._generating = (self._generation, dec)
            return
        self._use_process = False
        self._generate_in_thread(self._generation, dec)

    def _generate_in_thread(self, request: int, dec: Decomposition) -> None:
        self._generating = None
        self.pool.start(functools.partial(self._generate, request, dec))

    def _on_helper_result(self, result) -> None:
        if isinstance(result, GenerateResult):
            pending, self._generating = self._generating, None
            if pending is not None and pending[0] == result.request:
                self._on_generated(result.request, pending[1], result.sources)
        else:
            self._on_composed(result)

    def analysis_failed(self) -> None:
        self._generation += 1
        self._generating = None
        self.generating = False
        self._compose_request += 1
        self.decomposition, self.generated, self.result = None, {}, None
        self.sourcesLost.emit()

    def _generate(self, request: int, dec: Decomposition) -> None:
        sources = generate_sources(dec)
        try:
            self._generated.emit(request, dec, sources)
        except RuntimeError:
            pass  # the workspace went away with the window

    def _on_generated(self, request: int, dec: Decomposition, sources: dict[str, KernelSource]) -> None:
        if request != self._generation:
            return
        self.generating = False
        self.decomposition, self.generated = dec, sources
        for kid in [k for k, code in self.edits.items() if k in sources and sources[k].code == code]:
            del self.edits[kid]  # an "edit" equal to the generated code is none
        self.sourcesReady.emit()
        self.schedule_compose(immediately=True)

    @property
    def ready(self) -> bool:
        return self.decomposition is not None

    def kernel_ids(self) -> list[str]:
        return [k.id for k in self.decomposition.kernels] if self.decomposition else []

    # ---- edits ---------------------------------------------------------------------------------------------
    def code(self, kernel_id: str) -> str:
        if kernel_id in self.edits:
            return self.edits[kernel_id]
        src = self.generated.get(kernel_id)
        return src.code if src is not None else ""

    def generated_code(self, kernel_id: str) -> str | None:
        src = self.generated.get(kernel_id)
        return src.code if src is not None else None

    def is_edited(self, kernel_id: str) -> bool:
        return kernel_id in self.edits

    def orphaned_edits(self) -> list[str]:
        """Edited kernels the current analysis does not have (kept, not composed)."""
        if not self.ready:
            return []
        return sorted(k for k in self.edits if k not in self.generated)

    def set_code(self, kernel_id: str, code: str) -> None:
        generated = self.generated_code(kernel_id)
        before = self.edits.get(kernel_id)
        if generated is not None and code == generated:
            self.edits.pop(kernel_id, None)
        else:
            self.edits[kernel_id] = code
        if self.edits.get(kernel_id) != before:
            self.kernelEdited.emit(kernel_id)
            self.schedule_compose()

    def replace_edits(self, edits: dict[str, str]) -> None:
        self.edits = dict(edits)
        self.editsReplaced.emit()
        self.schedule_compose()

    def sources(self) -> dict[str, KernelSource]:
        """The sources to compose: generated, with the user's code where edited."""
        out = {}
        for kid, src in self.generated.items():
            out[kid] = src.model_copy(update={"code": self.edits[kid]}) if kid in self.edits else src
        return out

    def source_for(self, kernel_id: str) -> KernelSource | None:
        return self.sources().get(kernel_id)

    # ---- composing -----------------------------------------------------------------------------------------
    def schedule_compose(self, immediately: bool = False) -> None:
        if not self.ready:
            return
        if immediately:
            self._debounce.stop()
            self._start_compose()
        else:
            self._debounce.start()

    @property
    def composing(self) -> bool:
        return self._compose_running or self._compose_pending or self._debounce.isActive()

    def _start_compose(self) -> None:
        if not self.ready or self._closed:
            return
        if self._compose_running:
            self._compose_pending = True  # run once more with the newest text when this one is done
            return
        self._compose_request += 1
        self._compose_running = True
        self.composeStarted.emit()
        args = (self._compose_request, self.decomposition, self.sources(), self.original)
        if self._use_process and self.helper.submit(("compose", *args)):
            return
        self._use_process = False
        self.pool.start(functools.partial(self._compose_in_thread, *args))

    def _on_helper_failed(self, message: str) -> None:
        """The helper died or could not start: compose on a worker thread from now on."""
        self._use_process = False
        self.helper_error = message
        if self._generating is not None and not self._closed:
            self._generate_in_thread(*self._generating)
        if self._compose_running and not self._closed:
            self._compose_running = False
            self._compose_pending = False
            self._start_compose()

    def _compose_in_thread(self, request: int, dec: Decomposition, sources: dict[str, KernelSource],
                           original: str) -> None:
        result = compose_and_check(request, dec, sources, original)
        try:
            self._composed.emit(result)
        except RuntimeError:
            pass

    def _on_composed(self, result: ComposeResult) -> None:
        self._compose_running = False
        if self._closed:
            return
        if self._compose_pending:
            self._compose_pending = False
            self._start_compose()
            return
        if result.request != self._compose_request:
            return
        if result.composed is not None:
            self.result = result
        self.composeFinished.emit(result)

    def wait(self, timeout_ms: int = -1) -> bool:
        return self.pool.waitForDone(timeout_ms)

    @property
    def helper_running(self) -> bool:
        return self.helper.running

    def shutdown(self, timeout_ms: int = 10_000) -> None:
        self._closed = True
        self._debounce.stop()
        self._generation += 1
        self._compose_request += 1
        self.helper.stop()
        self.pool.waitForDone(timeout_ms)
