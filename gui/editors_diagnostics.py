"""Diagnostics in a code editor: wave underlines on the offending columns, a gutter marker, and a tooltip.

`Diagnostic` is the editor's view of a problem (a purity diagnostic, a compile error) at a 1-based line and column
range of *this* editor's text. `DiagnosticEditor` draws each set (a "source": purity, compile, ...) as
ExtraSelections in its own decoration layer, marks the line in the gutter in the severity's colour, and shows the
rule, message and hint when the mouse rests on the underline or the marker.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QColor, QHelpEvent, QPainter, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QTextEdit, QToolTip, QWidget

from .code_editor import CodeEditor

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Diagnostic:
    line: int  # 1-based, in the editor's text
    column: int  # 1-based; 0 or less: the whole line
    end_column: int  # exclusive, 1-based
    severity: str  # "error" | "warning" | "info"
    message: str
    rule: str = ""
    hint: str = ""
    source: str = "purity"  # which checker said it: purity, compile, ...

    def tooltip_html(self) -> str:
        head = f"<b>{html.escape(self.rule)}</b> " if self.rule else ""
        text = f"{head}{html.escape(self.message)}"
        if self.hint:
            text += f"<br><i>hint: {html.escape(self.hint)}</i>"
        return text


class DiagnosticEditor(CodeEditor):
    """A CodeEditor that shows diagnostics; other gutter marks (kernel colours) stay underneath."""

    def __init__(self, parent: QWidget | None = None, *, read_only: bool = False, line_numbers: bool = True,
                 inline_messages: bool = True):
        super().__init__(parent, read_only=read_only, line_numbers=line_numbers)
        self.inline_messages = inline_messages  # the message, dimmed, after the end of its line
        self._diagnostics: dict[str, list[Diagnostic]] = {}
        self._base_marks: dict[int, QColor] = {}
        self.error_colour = QColor("#e06c75")
        self.warning_colour = QColor("#e5c07b")
        self.setMouseTracking(True)
        self._gutter.setMouseTracking(True)
        self._gutter.installEventFilter(self)

    def set_severity_colours(self, error: QColor, warning: QColor) -> None:
        self.error_colour, self.warning_colour = QColor(error), QColor(warning)
        for source in list(self._diagnostics):
            self.set_diagnostics(source, self._diagnostics[source])

    # ---- content -------------------------------------------------------------------------------------------
    def set_base_marks(self, marks: dict[int, QColor]) -> None:
        """Gutter marks under the diagnostics' markers (e.g. which kernel a line belongs to)."""
        self._base_marks = dict(marks)
        self._refresh_marks()

    def set_diagnostics(self, source: str, diagnostics: list[Diagnostic]) -> None:
        """Replace the diagnostics of one source (purity, compile, ...)."""
        diagnostics = [d for d in diagnostics if 1 <= d.line <= self.blockCount()]
        if diagnostics:
            self._diagnostics[source] = diagnostics
        else:
            self._diagnostics.pop(source, None)
        selections = [self._selection(d) for d in diagnostics]
        selections += [self._line_tint(line, severity) for line, severity in
                       sorted({(d.line, d.severity) for d in diagnostics if d.severity == "error"})]
        self.set_layer_selections(f"diag:{source}", selections)
        self._refresh_marks()
        self.viewport().update()

    def set_layer_selections(self, layer: str, selections: list[QTextEdit.ExtraSelection]) -> None:
        """Arbitrary ExtraSelections (ranges, not only full lines) as one decoration layer; [] removes it."""
        if selections:
            self._layers[layer] = list(selections)
        else:
            self._layers.pop(layer, None)
        self._apply_layers()

    def diagnostics(self, source: str | None = None) -> list[Diagnostic]:
        if source is not None:
            return list(self._diagnostics.get(source, []))
        return [d for ds in self._diagnostics.values() for d in ds]

    def underlined_lines(self, source: str | None = None) -> list[int]:
        """Lines carrying a wave underline (for tests and the status line)."""
        layers = [f"diag:{source}"] if source else [k for k in self._layers if k.startswith("diag:")]
        lines = set()
        for name in layers:
            for sel in self._layers.get(name, []):
                if sel.format.underlineStyle() == QTextCharFormat.UnderlineStyle.WaveUnderline:
                    lines.add(sel.cursor.blockNumber() + 1)
        return sorted(lines)

    def diagnostic_marks(self) -> dict[int, QColor]:
        return {line: colour for line, colour in self._marks.items() if line in self._diag_lines()}

    def _diag_lines(self) -> set[int]:
        return {d.line for d in self.diagnostics()}

    def _colour(self, severity: str) -> QColor:
        return QColor(self.error_colour if severity == "error" else self.warning_colour)

    def _selection(self, d: Diagnostic) -> QTextEdit.ExtraSelection:
        block = self.document().findBlockByNumber(d.line - 1)
        text = block.text()
        start, end = d.column - 1, d.end_column - 1
        if d.column <= 0 or start >= len(text) or end <= start:
            # the whole line, without its indentation
            start = len(text) - len(text.lstrip())
            end = len(text)
        end = min(max(end, start + 1), max(len(text), start + 1))
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + min(start, len(text)))
        cursor.setPosition(block.position() + min(end, len(text)), QTextCursor.MoveMode.KeepAnchor)
        if not cursor.hasSelection():  # an empty line: underline nothing, the gutter marker still shows
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        sel = QTextEdit.ExtraSelection()
        sel.format.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
        sel.format.setUnderlineColor(self._colour(d.severity))
        sel.format.setToolTip(d.tooltip_html())
        sel.cursor = cursor
        return sel

    def _line_tint(self, line: int, severity: str) -> QTextEdit.ExtraSelection:
        colour = self._colour(severity)
        colour.setAlpha(28)
        sel = QTextEdit.ExtraSelection()
        sel.format.setBackground(colour)
        sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        sel.cursor = QTextCursor(self.document().findBlockByNumber(line - 1))
        return sel

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().paintEvent(event)
        if not self.inline_messages or not self._diagnostics:
            return
        worst: dict[int, Diagnostic] = {}
        for d in self.diagnostics():
            best = worst.get(d.line)
            if best is None or SEVERITY_ORDER.get(d.severity, 3) < SEVERITY_ORDER.get(best.severity, 3):
                worst[d.line] = d
        painter = QPainter(self.viewport())
        font = self.font()
        font.setItalic(True)
        painter.setFont(font)
        metrics = self.fontMetrics()
        offset = self.contentOffset()
        margin = self.document().documentMargin()
        bottom = self.viewport().rect().bottom()
        block = self.firstVisibleBlock()
        while block.isValid():
            geometry = self.blockBoundingGeometry(block).translated(offset)
            if geometry.top() > bottom:
                break
            d = worst.get(block.blockNumber() + 1)
            if d is not None and block.isVisible():
                text_width = metrics.horizontalAdvance(block.text().expandtabs(4) + "   ")
                x = offset.x() + margin + text_width
                colour = self._colour(d.severity)
                colour.setAlpha(200)
                painter.setPen(colour)
                text = f"■ {d.rule}: {d.message}" if d.rule else f"■ {d.message}"
                painter.drawText(int(x), int(geometry.top()), 4000, int(geometry.height()),
                                 int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), text)
            block = block.next()
        painter.end()

    def _refresh_marks(self) -> None:
        marks = dict(self._base_marks)
        worst: dict[int, Diagnostic] = {}
        for d in self.diagnostics():
            best = worst.get(d.line)
            if best is None or SEVERITY_ORDER.get(d.severity, 3) < SEVERITY_ORDER.get(best.severity, 3):
                worst[d.line] = d
        for line, d in worst.items():
            marks[line] = self._colour(d.severity)
        self._marks = marks
        self._gutter.update()

    def set_text(self, text: str) -> None:
        super().set_text(text)
        self._diagnostics.clear()
        self._base_marks.clear()

    # ---- tooltips ------------------------------------------------------------------------------------------
    def diagnostics_at(self, line: int, column: int | None = None) -> list[Diagnostic]:
        """Diagnostics on `line` (and covering `column`, 1-based, when given)."""
        found = []
        for d in self.diagnostics():
            if d.line != line:
                continue
            if column is None or d.column <= 0 or d.column <= column < max(d.end_column, d.column + 1):
                found.append(d)
        return found

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            pos = self.viewport().mapFromGlobal(event.globalPos())
            if self.viewport().rect().contains(pos):
                cursor = self.cursorForPosition(pos)
                found = self.diagnostics_at(cursor.blockNumber() + 1, cursor.positionInBlock() + 1)
                self._show_tooltip(event.globalPos(), found)
                return True
        return super().event(event)

    def eventFilter(self, watched, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self._gutter and event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            cursor = self.cursorForPosition(QPoint(0, event.pos().y()))
            self._show_tooltip(event.globalPos(), self.diagnostics_at(cursor.blockNumber() + 1))
            return True
        return super().eventFilter(watched, event)

    def _show_tooltip(self, where: QPoint, found: list[Diagnostic]) -> None:
        if found:
            QToolTip.showText(where, "<br><br>".join(d.tooltip_html() for d in found), self)
        else:
            QToolTip.hideText()

    def tooltip_for_line(self, line: int) -> str:
        """The tooltip text the marker of `line` shows (tests)."""
        return "<br><br>".join(d.tooltip_html() for d in self.diagnostics_at(line))

    def focus_first_diagnostic(self) -> bool:
        diags = sorted(self.diagnostics(), key=lambda d: (SEVERITY_ORDER.get(d.severity, 3), d.line))
        if not diags:
            return False
        self.go_to_line(diags[0].line)
        return True

