"""A find/replace bar under a code editor (Ctrl+F finds, Ctrl+H also replaces, Esc closes).

Searching is incremental: every keystroke in the field highlights all matches and moves to the next one from
where the cursor was when the search started. Replace and Replace All are single undo steps of the editor.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QKeySequence, QShortcut, QTextCursor, QTextDocument
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QTextEdit, QToolButton, QVBoxLayout, QWidget

from .editors_diagnostics import DiagnosticEditor

MAX_HIGHLIGHTS = 2000


class FindReplaceBar(QWidget):
    closed = Signal()

    def __init__(self, editor: DiagnosticEditor, parent: QWidget | None = None):
        super().__init__(parent)
        self.editor = editor
        self.find_field = QLineEdit(placeholderText="Find", clearButtonEnabled=True)
        self.replace_field = QLineEdit(placeholderText="Replace with")
        self.case_box = QCheckBox("Aa", toolTip="Match case")
        self.word_box = QCheckBox("Word", toolTip="Whole words only")
        self.count_label = QLabel()
        self.count_label.setMinimumWidth(70)
        self.prev_button = QToolButton(text="▲", toolTip="Previous match (Shift+Enter, Shift+F3)", autoRaise=True)
        self.next_button = QToolButton(text="▼", toolTip="Next match (Enter, F3)", autoRaise=True)
        self.replace_button = QToolButton(text="Replace", toolTip="Replace this match and find the next")
        self.replace_all_button = QToolButton(text="All", toolTip="Replace every match")
        self.close_button = QToolButton(text="✕", toolTip="Close (Esc)", autoRaise=True)
        find_row = QHBoxLayout()
        for w in (self.find_field, self.prev_button, self.next_button, self.case_box, self.word_box,
                  self.count_label, self.close_button):
            find_row.addWidget(w)
        find_row.setStretch(0, 1)
        self.replace_row = QWidget()
        replace_layout = QHBoxLayout(self.replace_row)
        replace_layout.setContentsMargins(0, 0, 0, 0)
        for w in (self.replace_field, self.replace_button, self.replace_all_button):
            replace_layout.addWidget(w)
        replace_layout.setStretch(0, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(4)
        layout.addLayout(find_row)
        layout.addWidget(self.replace_row)
        self.find_field.textChanged.connect(self._incremental)
        self.find_field.returnPressed.connect(self.find_next)
        self.replace_field.returnPressed.connect(self.replace_one)
        self.case_box.toggled.connect(lambda _on: self._incremental(self.find_field.text()))
        self.word_box.toggled.connect(lambda _on: self._incremental(self.find_field.text()))
        self.next_button.clicked.connect(self.find_next)
        self.prev_button.clicked.connect(self.find_previous)
        self.replace_button.clicked.connect(self.replace_one)
        self.replace_all_button.clicked.connect(self.replace_all)
        self.close_button.clicked.connect(self.close_bar)
        for keys, slot in ((QKeySequence(Qt.Key.Key_Escape), self.close_bar),
                           (QKeySequence("Shift+Return"), self.find_previous),
                           (QKeySequence.StandardKey.FindNext, self.find_next),
                           (QKeySequence.StandardKey.FindPrevious, self.find_previous)):
            QShortcut(keys, self, slot, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self._anchor = 0  # where an incremental search starts from
        self._highlight_timer = QTimer(self, singleShot=True, interval=60)
        self._highlight_timer.timeout.connect(self._highlight_all)
        self.hide()

    # ---- opening and closing -------------------------------------------------------------------------------
    def open_find(self, replace: bool = False) -> None:
        self.replace_row.setVisible(replace and not self.editor.isReadOnly())
        selected = self.editor.textCursor().selectedText()
        if selected and "\u2029" not in selected:
            self.find_field.blockSignals(True)
            self.find_field.setText(selected)
            self.find_field.blockSignals(False)
        self._anchor = self.editor.textCursor().selectionStart()
        self.show()
        self.find_field.setFocus()
        self.find_field.selectAll()
        self._highlight_all()

    def close_bar(self) -> None:
        self.hide()
        self._set_highlights([])
        self.editor.setFocus()
        self.closed.emit()

    # ---- searching -----------------------------------------------------------------------------------------
    def _flags(self, backward: bool = False) -> QTextDocument.FindFlag:
        flags = QTextDocument.FindFlag(0)
        if self.case_box.isChecked():
            flags |= QTextDocument.FindFlag.FindCaseSensitively
        if self.word_box.isChecked():
            flags |= QTextDocument.FindFlag.FindWholeWords
        if backward:
            flags |= QTextDocument.FindFlag.FindBackward
        return flags

    def _find(self, start: int, backward: bool = False) -> bool:
        needle = self.find_field.text()
        if not needle:
            return False
        doc = self.editor.document()
        found = doc.find(needle, start, self._flags(backward))
        if found.isNull():  # wrap around
            cursor = QTextCursor(doc)
            cursor.movePosition(QTextCursor.MoveOperation.End if backward else QTextCursor.MoveOperation.Start)
            found = doc.find(needle, cursor, self._flags(backward))
        if found.isNull():
            return False
        self.editor.setTextCursor(found)
        self.editor.centerCursor()
        return True

    def _incremental(self, _text: str) -> None:
        ok = self._find(self._anchor) if self.find_field.text() else False
        self._mark_field(ok or not self.find_field.text())
        self._highlight_timer.start()

    def find_next(self) -> bool:
        ok = self._find(self.editor.textCursor().selectionEnd())
        self._mark_field(ok or not self.find_field.text())
        return ok

    def find_previous(self) -> bool:
        ok = self._find(self.editor.textCursor().selectionStart(), backward=True)
        self._mark_field(ok or not self.find_field.text())
        return ok

    def _matches(self) -> bool:
        cursor = self.editor.textCursor()
        needle = self.find_field.text()
        if not cursor.hasSelection() or not needle:
            return False
        if self.case_box.isChecked():
            return cursor.selectedText() == needle
        return cursor.selectedText().lower() == needle.lower()

    def replace_one(self) -> None:
        if self.editor.isReadOnly():
            return
        if self._matches():
            self.editor.textCursor().insertText(self.replace_field.text())
        self.find_next()
        self._highlight_timer.start()

    def replace_all(self) -> int:
        needle = self.find_field.text()
        if not needle or self.editor.isReadOnly():
            return 0
        doc = self.editor.document()
        count = 0
        edit = QTextCursor(doc)
        edit.beginEditBlock()  # one undo step
        found = doc.find(needle, 0, self._flags())
        while not found.isNull():
            found.insertText(self.replace_field.text())
            count += 1
            found = doc.find(needle, found.position(), self._flags())
        edit.endEditBlock()
        self.count_label.setText(f"{count} replaced")
        self._highlight_timer.start()
        return count

    # ---- decoration ----------------------------------------------------------------------------------------
    def _mark_field(self, ok: bool) -> None:
        self.find_field.setStyleSheet("" if ok else "QLineEdit { background: rgba(224, 108, 117, 70); }")

    def _highlight_all(self) -> None:
        needle = self.find_field.text()
        cursors = []
        if needle and self.isVisible():
            doc = self.editor.document()
            found = doc.find(needle, 0, self._flags())
            while not found.isNull() and len(cursors) < MAX_HIGHLIGHTS:
                cursors.append(found)
                found = doc.find(needle, found.position(), self._flags())
        self._set_highlights(cursors)
        if needle:
            more = "+" if len(cursors) >= MAX_HIGHLIGHTS else ""
            self.count_label.setText(f"{len(cursors)}{more} match{'es' if len(cursors) != 1 else ''}")
        else:
            self.count_label.setText("")

    def _set_highlights(self, cursors: list[QTextCursor]) -> None:
        colour = QColor(self.palette().highlight().color())
        colour.setAlpha(70)
        selections = []
        for cursor in cursors:
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(colour)
            sel.cursor = cursor
            selections.append(sel)
        self.editor.set_layer_selections("find", selections)
