"""The Composed pane: the single file the export writes, read-only, recomposed as kernels are edited.

Each kernel's section is tinted in the kernel's colour (the composer's line map), purity diagnostics are underlined
where they are, and "Diff vs last export" shows a unified diff against the text last exported. Clicking a line
of a kernel section selects that kernel; double-clicking opens its editor at the matching line.
"""

from __future__ import annotations

import difflib

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QKeySequence, QMouseEvent, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QStackedWidget, QToolButton, QVBoxLayout, QWidget
from pygments.lexers import DiffLexer

from .code_editor import CodeEditor
from .editors_diagnostics import Diagnostic, DiagnosticEditor
from .editors_find import FindReplaceBar
from .editors_text import DeferredHighlighter, apply_text_minimally
from .editors_workspace import ComposeResult
from .highlighter import PygmentsHighlighter
from .theme import Theme

SECTION_ALPHA = 26  # a kernel section's tint: enough to see the boundaries, faint enough to read the code


def unified_diff(old: str, new: str, old_name: str = "last export", new_name: str = "composed now") -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=old_name, tofile=new_name, n=3))


class ComposedView(DiagnosticEditor):
    """The composed file: section tints are drawn for the visible lines only (a long file has thousands)."""

    lineDoubleClicked = Signal(int)
    shown = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, read_only=True)
        self.document().setUndoRedoEnabled(False)
        self._tints: dict[int, QColor] = {}
        self._tint_timer = QTimer(self, singleShot=True, interval=0)
        self._tint_timer.timeout.connect(self._refresh_tints)
        self.verticalScrollBar().valueChanged.connect(lambda _value: self._tint_timer.start())

    def set_tints(self, tints: dict[int, QColor]) -> None:
        self._tints = dict(tints)
        self._refresh_tints()

    def tinted_lines(self) -> list[int]:
        return sorted(self._tints)

    def _refresh_tints(self) -> None:
        first = self.firstVisibleBlock().blockNumber() + 1
        rows = self.viewport().height() // max(1, self.fontMetrics().height()) + 2
        self.set_line_layer("sections", {line: self._tints[line] for line in range(first, first + rows)
                                         if line in self._tints})

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._tint_timer.start()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        self._tint_timer.start()
        self.shown.emit()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt API)
        super().mouseDoubleClickEvent(event)
        self.lineDoubleClicked.emit(self.cursorForPosition(event.position().toPoint()).blockNumber() + 1)


class ComposedPane(QWidget):
    kernelClicked = Signal(str)  # a line of a kernel's section was clicked
    kernelActivated = Signal(str, int)  # double-click: kernel id, line in its editor

    def __init__(self, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.theme = theme
        self.result: ComposeResult | None = None
        self.exported_text: str | None = None
        self.exported_path: str = ""
        self.kernel_colours: dict[str, int] = {}
        self.view = ComposedView()
        self.view.setObjectName("composedView")
        self.view.setPlaceholderText("The composed cuTile file appears here once a model is analysed.")
        self.highlighter = DeferredHighlighter(self.view.document(), theme.pygments_style, view=self.view)
        self.view.shown.connect(self.highlighter.resume)
        self.diff_view = CodeEditor(read_only=True)
        self.diff_view.setObjectName("composedDiff")
        self.diff_highlighter = PygmentsHighlighter(self.diff_view.document(), theme.pygments_style,
                                                    lexer=DiffLexer(stripnl=False, ensurenl=False))
        self.find_bar = FindReplaceBar(self.view)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.view)
        self.stack.addWidget(self.diff_view)

        self.diff_action = QAction("Diff vs last export", self)
        self.diff_action.setCheckable(True)
        self.diff_action.setToolTip("Show what changed since the file was last exported (unified diff)")
        self.diff_action.toggled.connect(self.show_diff)
        self.diff_button = QToolButton(defaultAction=self.diff_action, autoRaise=True)
        self.export_button = QToolButton(autoRaise=True)
        self.export_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.status = QLabel()
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        bar = QHBoxLayout()
        bar.setContentsMargins(8, 3, 6, 3)
        bar.addWidget(self.status, 1)
        bar.addWidget(self.diff_button)
        bar.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.find_bar)
        QShortcut(QKeySequence.StandardKey.Find, self, lambda: self.open_find(False),
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.view.lineClicked.connect(self._on_line_clicked)
        self.view.lineDoubleClicked.connect(self._on_line_double_clicked)
        self._show_status()

    def set_export_action(self, action: QAction) -> None:
        self.export_button.setDefaultAction(action)

    def open_find(self, replace: bool = False) -> None:
        self.find_bar.open_find(False)

    # ---- content -------------------------------------------------------------------------------------------
    def text(self) -> str:
        return self.result.text if self.result is not None else ""

    def set_result(self, result: ComposeResult, kernel_colours: dict[str, int]) -> None:
        self.result = result
        self.kernel_colours = dict(kernel_colours)
        if result.composed is None:
            self._show_status()
            return
        if self.view.document().isEmpty():
            self.highlighter.restart()  # first, so that setting the text leaves every line for the timer
            self.view.set_text(result.text)
        else:
            apply_text_minimally(self.view.document(), result.text)  # only the edited lines are re-lexed
        self._colour_sections()
        self.view.set_diagnostics("purity", [
            Diagnostic(line=d.line, column=d.column, end_column=d.end_column, severity=d.severity,
                       message=d.message, rule=d.rule, hint=d.hint) for d in result.diagnostics])
        if self.diff_action.isChecked():
            self._fill_diff()
        self._show_status()

    def clear(self) -> None:
        self.result = None
        self.view.set_text("")
        self.view.set_tints({})
        self.diff_view.set_text("")
        self._show_status()

    def _colour_sections(self) -> None:
        result = self.result
        if result is None or result.composed is None:
            return
        background, marks = {}, {}
        for key, (first, last) in result.composed.line_map.items():
            if not key.startswith("kernel:"):
                continue
            index = self.kernel_colours.get(key.split(":", 1)[1], 0)
            tint = self.theme.kernel_colour(index)
            tint.setAlpha(SECTION_ALPHA)
            solid = self.theme.kernel_colour(index)
            for line in range(first, last + 1):
                background[line] = tint
                marks[line] = solid
        self.view.set_tints(background)
        self.view.set_base_marks(marks)

    def set_exported(self, text: str | None, path: str = "") -> None:
        self.exported_text, self.exported_path = text, path
        if self.diff_action.isChecked():
            self._fill_diff()
        self._show_status()

    # ---- diff ----------------------------------------------------------------------------------------------
    def show_diff(self, on: bool) -> None:
        if self.diff_action.isChecked() != on:
            self.diff_action.setChecked(on)
            return
        if on:
            self._fill_diff()
            self.stack.setCurrentWidget(self.diff_view)
        else:
            self.stack.setCurrentWidget(self.view)
        self._show_status()

    def diff_text(self) -> str:
        if self.exported_text is None:
            return ""
        return unified_diff(self.exported_text, self.text())

    def _fill_diff(self) -> None:
        if self.exported_text is None:
            self.diff_view.set_text("")
            self.diff_view.setPlaceholderText("Nothing exported yet. Export (Ctrl+E) writes the composed file; "
                                              "later edits are then shown here as a diff against it.")
            return
        diff = self.diff_text()
        self.diff_view.setPlaceholderText("No changes since the last export.")
        self.diff_view.set_text(diff)
        added, removed = QColor("#3fb950"), QColor("#f85149")
        added.setAlpha(40)
        removed.setAlpha(40)
        lines = {}
        for number, line in enumerate(diff.split("\n"), 1):
            if line.startswith("+") and not line.startswith("+++"):
                lines[number] = added
            elif line.startswith("-") and not line.startswith("---"):
                lines[number] = removed
        self.diff_view.set_line_layer("diff", lines)

    # ---- status and navigation -----------------------------------------------------------------------------
    def _show_status(self) -> None:
        dim = self.theme.dim_text
        result = self.result
        if result is None or result.composed is None:
            text = f"<span style='color:{dim}'>no composition yet</span>"
            if result is not None and result.error:
                text = f"<span style='color:{self.theme.error}'>{result.error.splitlines()[0]}</span>"
            self.status.setText(text)
            return
        errors = sum(d.severity == "error" for d in result.diagnostics)
        warnings = len(result.diagnostics) - errors
        n_lines = result.text.count("\n")
        if errors:
            verdict = f"<span style='color:{self.theme.error}'>✗ {errors} purity error{'s' if errors != 1 else ''}"
            verdict += f", {warnings} warning{'s' if warnings != 1 else ''}</span>" if warnings else "</span>"
        elif warnings:
            verdict = f"<span style='color:{self.theme.warning}'>{warnings} warning{'s' if warnings != 1 else ''}"
            verdict += "</span>"
        else:
            verdict = f"<span style='color:{_ok_colour(self.theme)}'>✓ pure cuTile forward</span>"
        parts = [verdict, f"<span style='color:{dim}'>· {n_lines} lines · checked in "
                          f"{result.seconds * 1000:.0f} ms</span>"]
        if self.stack.currentWidget() is self.diff_view:
            if self.exported_text is None:
                parts.append(f"<span style='color:{dim}'>· not exported yet</span>")
            else:
                changed = sum(1 for line in self.diff_text().split("\n")
                              if line[:1] in "+-" and line[:3] not in ("+++", "---"))
                parts.append(f"<span style='color:{dim}'>· {changed} changed line{'s' if changed != 1 else ''} "
                             f"vs last export</span>")
        self.status.setText(" ".join(parts))

    def _on_line_clicked(self, line: int) -> None:
        if self.result is not None:
            kid = self.result.kernel_at(line)
            if kid:
                self.kernelClicked.emit(kid)

    def _on_line_double_clicked(self, line: int) -> None:
        if self.result is None:
            return
        kid = self.result.kernel_at(line)
        if kid:
            self.kernelActivated.emit(kid, self.result.editor_line(kid, line) or 1)

    def go_to_line(self, line: int) -> None:
        self.show_diff(False)
        self.view.go_to_line(line)

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.highlighter.set_style(theme.pygments_style)
        self.diff_highlighter.set_style(theme.pygments_style)
        self.view.set_severity_colours(QColor(theme.error), QColor(theme.warning))
        self._colour_sections()
        self._show_status()


def _ok_colour(theme: Theme) -> str:
    return "#1a7f37" if theme.name == "light" else "#5cc98a"
