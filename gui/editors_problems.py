"""Problems found by the editing features (purity of the composed file, kernel compile checks).

They join the analysis problems in the Problems pane without knowing who else writes there: `ProblemsFeed` keeps
its own problems and re-adds them whenever the pane is refilled by someone else (a new analysis, a theme change).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QDockWidget

from tilestudio.core.purity import PurityDiagnostic

from .problems_pane import Problem, ProblemsPane

COMPOSED_FILE = "composed file"


@dataclass(frozen=True)
class KernelProblem(Problem):
    """A problem in a kernel's code (kernel set) or elsewhere in the composed file (kernel empty)."""

    kernel: str = ""
    origin: str = "purity"  # purity | compile
    rule: str = ""
    hint: str = ""
    composed_line: int | None = None  # where it is in the composed file


def purity_problem(d: PurityDiagnostic, kernel: str, editor_line: int | None) -> KernelProblem:
    where = f"[{kernel}] " if kernel else ""
    return KernelProblem(severity="error" if d.severity == "error" else "warning",
                         message=f"{where}{d.rule} {d.message}", file=kernel or COMPOSED_FILE,
                         line=editor_line if kernel else d.line, column=d.column, detail=d.hint or None,
                         kernel=kernel, origin="purity", rule=d.rule, hint=d.hint, composed_line=d.line)


class ProblemsFeed(QObject):
    """Puts this feature's problems into a ProblemsPane next to whatever else is there."""

    def __init__(self, pane: ProblemsPane, dock: QDockWidget | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.pane = pane
        self.dock = dock
        self._groups: dict[str, list[KernelProblem]] = {}
        self._writing = False
        self._reapply = QTimer(self, singleShot=True, interval=0)
        self._reapply.timeout.connect(self._ensure_present)
        pane.model().modelReset.connect(self._on_reset)

    def set_group(self, group: str, problems: list[KernelProblem]) -> None:
        if problems:
            self._groups[group] = list(problems)
        elif group in self._groups:
            del self._groups[group]
        else:
            return
        self._write()

    def clear(self) -> None:
        if self._groups:
            self._groups.clear()
            self._write()

    def problems(self) -> list[KernelProblem]:
        return [p for group in self._groups.values() for p in group]

    def _write(self) -> None:
        others = [p for p in self.pane.problems() if not isinstance(p, KernelProblem)]
        self._writing = True
        try:
            self.pane.set_problems(others + self.problems())
        finally:
            self._writing = False
        if self.dock is not None:
            n = len(self.pane.problems())
            self.dock.setWindowTitle(f"Problems ({n})" if n else "Problems")

    def _on_reset(self) -> None:
        if not self._writing:
            self._reapply.start()

    def _ensure_present(self) -> None:
        mine = self.problems()
        present = [p for p in self.pane.problems() if isinstance(p, KernelProblem)]
        if mine and present != mine:
            self._write()
