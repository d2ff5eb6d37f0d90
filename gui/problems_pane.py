"""The Problems pane: errors and warnings with a location; activating one with a line jumps the Source pane there."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHeaderView, QStyle, QTreeWidgetItem, QWidget

from tilestudio.core.errors import ErrorInfo
from tilestudio.core.specs import Decomposition

from .widgets import PlaceholderTree

_AT_LINE = re.compile(r"\bat line (\d+)")


@dataclass(frozen=True)
class Problem:
    severity: str  # "error" | "warning"
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    detail: str | None = None

    @classmethod
    def from_error(cls, info: ErrorInfo) -> "Problem":
        return cls("error", info.one_line(), info.file, info.line, info.column, info.detail)

    def location(self) -> str:
        if not self.file:
            return ""
        where = os.path.basename(self.file)
        if self.line:
            where += f":{self.line}"
        return where


def problems_from_decomposition(dec: Decomposition, path: str) -> list[Problem]:
    """Warnings worth a look in a successful analysis: ops that have no kernel generator yet."""
    problems = []
    for gap in dec.gaps:
        m = _AT_LINE.search(gap)
        problems.append(Problem("warning", gap, path, int(m.group(1)) if m else None))
    return problems


class ProblemsPane(PlaceholderTree):
    problemActivated = Signal(object)  # Problem

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setColumnCount(2)
        self.setHeaderLabels(["Problem", "Line"])
        self.setRootIsDecorated(False)
        self.enable_word_wrap()
        self.setAllColumnsShowFocus(True)
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self._problems: list[Problem] = []
        self.placeholder = "No model open."
        self.itemClicked.connect(self._activate)
        self.itemActivated.connect(self._activate)

    def set_problems(self, problems: list[Problem]) -> None:
        self.clear()
        self._problems = list(problems)
        style = self.style()
        icons = {"error": style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxCritical),
                 "warning": style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)}
        for index, problem in enumerate(self._problems):
            item = QTreeWidgetItem([problem.message, str(problem.line or "")])
            item.setIcon(0, icons.get(problem.severity, icons["warning"]))
            item.setData(0, Qt.ItemDataRole.UserRole, index)
            tip = problem.message + (f"\n\n{problem.detail.strip()}" if problem.detail else "")
            item.setToolTip(0, tip[-4000:])
            item.setToolTip(1, problem.location())
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
            self.addTopLevelItem(item)

    def problems(self) -> list[Problem]:
        return list(self._problems)

    def _activate(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        self.problemActivated.emit(self._problems[item.data(0, Qt.ItemDataRole.UserRole)])
