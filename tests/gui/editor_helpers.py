"""Helpers for the kernel editor, composed pane and project tests (a plain module with a unique name)."""

from __future__ import annotations

from PySide6.QtGui import QTextCursor

from gui_helpers import ANALYSIS_TIMEOUT_MS

PURITY_TIMEOUT_MS = 1000  # the brief: an underline within ~1 s of the edit


def wait_for_composition(qtbot, win, timeout=ANALYSIS_TIMEOUT_MS):
    """Wait until the kernels are generated and the composed file reflects the latest edits."""
    qtbot.waitUntil(lambda: win.workspace.ready and win.workspace.result is not None
                    and not win.workspace.composing, timeout=timeout)


def launch_body_line(code: str, kernel_id: str) -> int:
    """1-based line of the first statement of `launch_<id>` in `code`."""
    lines = code.split("\n")
    return next(i for i, line in enumerate(lines, 1) if line.startswith(f"def launch_{kernel_id}(")) + 1


def insert_line(editor, line: int, text: str) -> None:
    """Type `text` as a new line before `line` of a KernelEditor (one undo step, like a paste)."""
    block = editor.editor.document().findBlockByNumber(line - 1)
    cursor = QTextCursor(block)
    editor.editor.setTextCursor(cursor)
    editor.editor.insertPlainText(text + "\n")
