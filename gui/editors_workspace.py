"""The kernel workspace: generated kernel sources, the user's edits, and the composed file with its purity check.

It follows the ModelSession: a finished analysis starts the kernel generators on a worker thread (the first call
imports the kernel library, seconds); every edit restarts a short debounce, after which composing the file and
checking its purity run on a worker (a few hundred ms for a large model), so typing never waits for either. Each
result carries a request number and a result that is no longer the latest is dropped, as in the session.

Edits are the user's work and outlive everything but an explicit reset or opening another model: a re-analysis
keeps them (a kernel the new analysis no longer has keeps its edit, reported as orphaned, and not composed).

Purity diagnostics point at lines of the composed file; those inside a kernel's section map back to that kernel's
editor through the section's line range and the length of its banner header, computed from the section text.
"""

from __future__ import annotations

import functools
import time
import traceback
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, QThreadPool, QTimer, Signal

from tilestudio.core.composer import ComposedFile, compose_file
from tilestudio.core.kernels.base import KernelSource
from tilestudio.core.purity import PurityDiagnostic, check_text
from tilestudio.core.specs import Decomposition

COMPOSE_DEBOUNCE_MS = 200  # purity results land ≤ 300 ms after the last keystroke on a mid-size model


# ---- pure helpers (no Qt): run on worker threads -------------------------------------------------------------
def generate_sources(dec: Decomposition) -> dict[str, KernelSource]:
    """Every kernel's generated source; a generator that crashes yields a skeleton naming the crash."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.skeleton import skeleton_source

    sources = {}
    for k in dec.kernels:
        try:
            sources[k.id] = generate_kernel(k)
        except Exception as exc:  # noqa: BLE001 - a generator bug must not take the editors down
            sources[k.id] = skeleton_source(k, f"the {k.family} generator failed ({type(exc).__name__}: {exc})")
    return sources


def code_offsets(composed: ComposedFile, codes: dict[str, str]) -> dict[str, int]:
    """kernel id → offset such that `editor line = composed line - offset`, for lines of the kernel's code.

    The composer writes a section as a banner/provenance header followed by the code with its leading and trailing
    newlines stripped; the header length is the section length minus the code's, checked against the text.
    """
    lines = composed.text.split("\n")
    offsets = {}
    for kid, code in codes.items():
        span = composed.line_map.get(f"kernel:{kid}")
        if span is None:
            continue
        first, last = span
        body = code.strip("\n").split("\n")
        header = (last - first + 1) - len(body)
        section = lines[first - 1:last]
        if header < 0 or section[header:] != body:
            header = _header_by_scan(section)
        leading = len(code) - len(code.lstrip("\n"))
        offsets[kid] = first + header - leading - 1
    return offsets


def _header_by_scan(section: list[str]) -> int:
    """Fallback: the header is the run of comment lines the section starts with."""
    n = 0
    while n < len(section) and section[n].startswith("#"):
        n += 1
    return n


@dataclass
class ComposeResult:
    request: int
    text: str = ""
    composed: ComposedFile | None = None
    diagnostics: list[PurityDiagnostic] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)  # kernel id → composed line - editor line
    error: str = ""  # composing itself failed (a bug): the previous text stays
    seconds: float = 0.0

    def kernel_at(self, line: int) -> str | None:
        """The kernel whose section holds composed `line`."""
        if self.composed is None:
            return None
        for key, (first, last) in self.composed.line_map.items():
            if key.startswith("kernel:") and first <= line <= last:
                return key.split(":", 1)[1]
        return None

    def editor_line(self, kernel_id: str, composed_line: int) -> int | None:
        """The kernel editor's line for a composed line, or None when it is in the header or outside the code."""
        if self.composed is None or kernel_id not in self.offsets:
            return None
        first, last = self.composed.line_map[f"kernel:{kernel_id}"]
        line = composed_line - self.offsets[kernel_id]
        if not first <= composed_line <= last or line < 1:
            return None
        return line

    def composed_line(self, kernel_id: str, editor_line: int) -> int | None:
        if kernel_id not in self.offsets or self.composed is None:
            return None
        line = editor_line + self.offsets[kernel_id]
        first, last = self.composed.line_map[f"kernel:{kernel_id}"]
        return line if first <= line <= last else None

    def kernel_diagnostics(self, kernel_id: str) -> list[tuple[int, PurityDiagnostic]]:
        """(editor line, diagnostic) for the diagnostics inside the kernel's code."""
        out = []
        for d in self.diagnostics:
            if self.kernel_at(d.line) == kernel_id:
                line = self.editor_line(kernel_id, d.line)
                if line is not None:
                    out.append((line, d))
        return out


def compose_and_check(request: int, dec: Decomposition, sources: dict[str, KernelSource],
                      original: str) -> ComposeResult:
    """Compose the file and check its purity; runs on a worker thread."""
    start = time.perf_counter()
    try:
        composed = compose_file(dec, sources, original)
        diagnostics = check_text(composed.text, original)
        offsets = code_offsets(composed, {kid: src.code for kid, src in sources.items()})
    except Exception as exc:  # noqa: BLE001 - report and keep the previous composition
        return ComposeResult(request, error=f"composing failed: {type(exc).__name__}: {exc}\n"
                                            f"{traceback.format_exc(limit=4)}")
    return ComposeResult(request, composed.text, composed, diagnostics, offsets,
                         seconds=time.perf_counter() - start)


# ---- the workspace -------------------------------------------------------------------------------------------
class KernelWorkspace(QObject):
    generationStarted = Signal()
    sourcesReady = Signal()  # `decomposition` and `generated` belong to the latest analysis
    kernelEdited = Signal(str)  # the edit of one kernel changed (typing, undo, reset)
    editsReplaced = Signal()  # every edit replaced at once (project opened, recovery restored)
    composeStarted = Signal()
    composeFinished = Signal(object)  # ComposeResult
    cleared = Signal()  # another model, or the analysis failed: no kernels

    _generated = Signal(int, object, object)  # request, Decomposition, sources
    _composed = Signal(object)  # ComposeResult

    def __init__(self, parent: QObject | None = None, *, debounce_ms: int = COMPOSE_DEBOUNCE_MS):
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
            self._compose_request += 1
            self.cleared.emit()

    def set_decomposition(self, dec: Decomposition) -> None:
        self._generation += 1
        self.generationStarted.emit()
        self.pool.start(functools.partial(self._generate, self._generation, dec))

    def analysis_failed(self) -> None:
        self._generation += 1
        self._compose_request += 1
        self.decomposition, self.generated, self.result = None, {}, None
        self.cleared.emit()

    def _generate(self, request: int, dec: Decomposition) -> None:
        sources = generate_sources(dec)
        try:
            self._generated.emit(request, dec, sources)
        except RuntimeError:
            pass  # the workspace went away with the window

    def _on_generated(self, request: int, dec: Decomposition, sources: dict[str, KernelSource]) -> None:
        if request != self._generation:
            return
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
        if not self.ready:
            return
        if self._compose_running:
            self._compose_pending = True  # run once more with the newest text when this one is done
            return
        self._compose_request += 1
        self._compose_running = True
        self.composeStarted.emit()
        task = functools.partial(self._compose, self._compose_request, self.decomposition, self.sources(),
                                 self.original)
        self.pool.start(task)

    def _compose(self, request: int, dec: Decomposition, sources: dict[str, KernelSource], original: str) -> None:
        result = compose_and_check(request, dec, sources, original)
        try:
            self._composed.emit(result)
        except RuntimeError:
            pass

    def _on_composed(self, result: ComposeResult) -> None:
        self._compose_running = False
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

    def shutdown(self, timeout_ms: int = 10_000) -> None:
        self._debounce.stop()
        self._generation += 1
        self._compose_request += 1
        self.pool.waitForDone(timeout_ms)
