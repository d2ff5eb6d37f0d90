"""Keeping a large, often-regenerated text view cheap on the GUI thread.

Highlighting Python with pygments costs about half a millisecond a line, so replacing a 700-line composed file on
every keystroke, or highlighting it in one go when it first appears, would stall the window for a noticeable
fraction of a second. Instead:

- `apply_text_minimally` replaces only the lines between the common prefix and suffix of the old and new text, so
  the highlighter re-lexes just those (and the decorations' cursors follow the unchanged lines);
- `DeferredHighlighter` highlights a freshly loaded document a chunk of lines per event-loop turn: lines beyond its
  frontier are left plain and marked pending, which also stops QSyntaxHighlighter's cascade at the frontier.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QWidget

from .highlighter import PygmentsHighlighter, SpecHighlighter, TokenFormats

PENDING = -2  # block state of a line beyond the frontier (QTextBlock's "never highlighted" is -1)
CHUNK_LINES = 12  # ~10 ms of lexing per event-loop turn


def _line_starts(lines: list[str]) -> list[int]:
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    return starts


def apply_text_minimally(doc: QTextDocument, new: str) -> tuple[int, int] | None:
    """Make `doc`'s text equal `new` by replacing the changed middle lines; returns the changed (first, last)
    line range in the new text, 1-based (last < first for a pure deletion), or None when nothing changed."""
    old = doc.toPlainText()
    if old == new:
        return None
    old_lines, new_lines = old.split("\n"), new.split("\n")
    limit = min(len(old_lines), len(new_lines))
    prefix = 0
    while prefix < limit and old_lines[prefix] == new_lines[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old_lines[-1 - suffix] == new_lines[-1 - suffix]:
        suffix += 1
    old_starts, new_starts = _line_starts(old_lines), _line_starts(new_lines)
    old_from = old_starts[prefix] if prefix < len(old_lines) else len(old) + 1
    new_from = new_starts[prefix] if prefix < len(new_lines) else len(new) + 1
    old_to = old_starts[len(old_lines) - suffix] if suffix else len(old) + 1
    new_to = new_starts[len(new_lines) - suffix] if suffix else len(new) + 1
    # Ranges are of whole lines with their newline; at the end of the text there is no newline to take.
    replacement = new[new_from:new_to]
    if old_to > len(old) and new_to > len(new):
        old_to, replacement = len(old), new[new_from:len(new)]
        if old_from > len(old):  # appending lines after the last one
            old_from, replacement = len(old), "\n" + new[new_from:len(new)]
        elif new_from > len(new):  # deleting the last lines: take the newline before them
            old_from, replacement = max(0, old_from - 1), ""
    cursor = QTextCursor(doc)
    cursor.setPosition(min(old_from, len(old)))
    cursor.setPosition(min(old_to, len(old)), QTextCursor.MoveMode.KeepAnchor)
    cursor.insertText(replacement)
    return prefix + 1, len(new_lines) - suffix


class DeferredHighlighter(PygmentsHighlighter):
    """A PygmentsHighlighter that highlights a newly loaded text progressively (see the module docstring)."""

    def __init__(self, document: QTextDocument, style_name: str = "default", lexer=None, *,
                 chunk_lines: int = CHUNK_LINES, view: QWidget | None = None):
        super().__init__(document, style_name, lexer)
        self.chunk_lines = chunk_lines
        self.view = view  # while it is hidden, highlighting waits (call `resume()` when it shows)
        self.frontier = 1 << 30  # everything is highlighted at once until `restart()`
        self._last_lexed = 0
        self._timer = QTimer(self, singleShot=False, interval=1)
        self._timer.timeout.connect(self._advance)

    def restart(self) -> None:
        """The document was just replaced: highlight it from the top, a chunk per event-loop turn."""
        self.frontier = 0
        self.resume()

    def resume(self) -> None:
        if self.frontier < (1 << 30):
            self._timer.start()

    @property
    def done(self) -> bool:
        return not self._timer.isActive()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt API)
        if self.currentBlock().blockNumber() >= self.frontier:
            self.setCurrentBlockState(PENDING)
            return
        self._last_lexed = self.currentBlock().blockNumber()
        super().highlightBlock(text)

    def _advance(self) -> None:
        doc = self.document()
        if doc is None or (self.view is not None and not self.view.isVisible()):
            self._timer.stop()  # resumed by the view's showEvent
            return
        number = self.frontier
        self.frontier = number + self.chunk_lines
        while number < min(self.frontier, doc.blockCount()):
            self._last_lexed = number
            self.rehighlightBlock(doc.findBlockByNumber(number))  # may cascade over the next lines: skip them
            number = max(number, self._last_lexed) + 1
        if self.frontier >= doc.blockCount():
            self.frontier = 1 << 30
            self._timer.stop()

    def finish(self) -> None:
        """Highlight the rest now (tests, screenshots)."""
        view, self.view = self.view, None
        while not self.done:
            self._advance()
        self.view = view

    def set_style(self, style_name: str) -> None:
        self.formats = TokenFormats(style_name)
        self.restart()


class DeferredSpecHighlighter(DeferredHighlighter, SpecHighlighter):
    """The Analyzer's text format (SpecHighlighter), highlighted progressively like DeferredHighlighter."""
