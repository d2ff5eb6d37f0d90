"""A plain-text code view/editor with a line-number gutter, line decorations and gutter marks.

Decorations come in named layers (the selected kernel's lines, the problem lines, ...) so independent features can
colour lines without knowing about each other; they are drawn as full-width ExtraSelections. Gutter marks are thin
coloured bars next to the line numbers (which kernel covers a line, where an error is).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import (QColor, QFont, QFontDatabase, QMouseEvent, QPainter, QPaintEvent, QResizeEvent,
                           QTextCursor, QTextFormat)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

GUTTER_MARK_WIDTH = 4


def monospace_font(point_size: int = 10) -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setPointSize(max(point_size, font.pointSize() if font.pointSize() > 0 else point_size))
    return font


class LineNumberArea(QWidget):
    def __init__(self, editor: "CodeEditor"):
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        self.editor.paint_gutter(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt API)
        cursor = self.editor.cursorForPosition(event.position().toPoint())
        self.editor.lineClicked.emit(cursor.blockNumber() + 1)


class CodeEditor(QPlainTextEdit):
    """QPlainTextEdit plus line numbers, decoration layers and gutter marks. Lines are 1-based everywhere."""

    lineClicked = Signal(int)  # the user clicked a line (text or gutter); programmatic moves do not emit

    def __init__(self, parent: QWidget | None = None, *, read_only: bool = False, line_numbers: bool = True):
        super().__init__(parent)
        self._line_numbers = line_numbers
        self._gutter = LineNumberArea(self)
        self._gutter.setVisible(line_numbers)
        self._layers: dict[str, list[QTextEdit.ExtraSelection]] = {}
        self._marks: dict[int, QColor] = {}
        self.setFont(monospace_font())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setReadOnly(read_only)
        if read_only:
            # Read-only views must not swallow file drops meant for the main window.
            self.setAcceptDrops(False)
            self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                         | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.blockCountChanged.connect(self._update_gutter_width)
        self.updateRequest.connect(self._update_gutter)
        self._update_gutter_width()

    # ---- gutter -------------------------------------------------------------------------------------------
    def gutter_width(self) -> int:
        if not self._line_numbers:
            return 6
        digits = max(3, len(str(max(1, self.blockCount()))))
        return 10 + self.fontMetrics().horizontalAdvance("9") * digits + GUTTER_MARK_WIDTH + 6

    def _update_gutter_width(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _update_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())
        if rect.contains(self.viewport().rect()):
            self._update_gutter_width()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        cr = self.contentsRect()
        self._gutter.setGeometry(QRect(cr.left(), cr.top(), self.gutter_width(), cr.height()))

    def paint_gutter(self, event: QPaintEvent) -> None:
        painter = QPainter(self._gutter)
        palette = self.palette()
        base = palette.base().color()
        painter.fillRect(event.rect(), base.darker(106) if base.lightness() > 128 else base.lighter(115))
        text_colour = palette.placeholderText().color()
        current = self.textCursor().blockNumber()
        width = self._gutter.width()
        height = self.fontMetrics().height()
        block = self.firstVisibleBlock()
        number = block.blockNumber()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        bottom = top + round(self.blockBoundingRect(block).height())
        while block.isValid() and top <= event.rect().bottom():
            if block.isVisible() and bottom >= event.rect().top():
                mark = self._marks.get(number + 1)
                if mark is not None:
                    painter.fillRect(width - GUTTER_MARK_WIDTH - 2, top, GUTTER_MARK_WIDTH, bottom - top, mark)
                painter.setPen(palette.text().color() if number == current and self.hasFocus() else text_colour)
                painter.drawText(0, top, width - GUTTER_MARK_WIDTH - 8, height,
                                 Qt.AlignmentFlag.AlignRight, str(number + 1))
            block = block.next()
            top = bottom
            bottom = top + round(self.blockBoundingRect(block).height())
            number += 1
        painter.end()

    def set_gutter_marks(self, marks: dict[int, QColor]) -> None:
        """Colour bars next to line numbers: {line: colour}. Replaces the previous marks."""
        self._marks = dict(marks)
        self._gutter.update()

    # ---- decorations ---------------------------------------------------------------------------------------
    def set_line_layer(self, layer: str, lines: dict[int, QColor], *, underline: QColor | None = None,
                       tooltip: str = "") -> None:
        """Give `lines` ({line: background}) a full-width background in `layer`, replacing that layer."""
        selections = []
        doc = self.document()
        for line, colour in sorted(lines.items()):
            block = doc.findBlockByNumber(line - 1)
            if not block.isValid():
                continue
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(colour)
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            if underline is not None:
                sel.format.setUnderlineStyle(sel.format.UnderlineStyle.WaveUnderline)
                sel.format.setUnderlineColor(underline)
            if tooltip:
                sel.format.setToolTip(tooltip)
            sel.cursor = QTextCursor(block)
            selections.append(sel)
        self._layers[layer] = selections
        self._apply_layers()

    def clear_layer(self, layer: str) -> None:
        if self._layers.pop(layer, None) is not None:
            self._apply_layers()

    def layer_lines(self, layer: str) -> list[int]:
        return [sel.cursor.blockNumber() + 1 for sel in self._layers.get(layer, [])]

    def _apply_layers(self) -> None:
        self.setExtraSelections([sel for layer in self._layers.values() for sel in layer])

    # ---- navigation ----------------------------------------------------------------------------------------
    def go_to_line(self, line: int, *, center: bool = True) -> None:
        block = self.document().findBlockByNumber(max(0, line - 1))
        if not block.isValid():
            return
        self.setTextCursor(QTextCursor(block))
        if center:
            self.centerCursor()
        else:
            self.ensureCursorVisible()

    def scroll_to_line_top(self, line: int) -> None:
        """Scroll so that `line` is the first visible line (used to show a section from its heading)."""
        block = self.document().findBlockByNumber(max(0, line - 1))
        if not block.isValid():
            return
        self.setTextCursor(QTextCursor(block))
        self.verticalScrollBar().setValue(block.firstLineNumber())

    def find_line(self, text: str) -> int | None:
        """1-based number of the first line equal to `text`, or None."""
        block = self.document().firstBlock()
        while block.isValid():
            if block.text() == text:
                return block.blockNumber() + 1
            block = block.next()
        return None

    def current_line(self) -> int:
        return self.textCursor().blockNumber() + 1

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt API)
        super().mouseReleaseEvent(event)
        if event.button() == Qt.MouseButton.LeftButton and not self.textCursor().hasSelection():
            self.lineClicked.emit(self.current_line())

    def set_text(self, text: str) -> None:
        """Replace the whole text, keeping the view at the top and dropping stale decorations."""
        self._layers.clear()
        self._marks.clear()
        self.setPlainText(text)
        self.setExtraSelections([])
