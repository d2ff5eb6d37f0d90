"""Minimal text replacement and deferred highlighting (gui/editors_text.py)."""

import random

import pytest
from PySide6.QtGui import QTextDocument

from tilestudio.gui.code_editor import CodeEditor
from tilestudio.gui.editors_text import PENDING, DeferredHighlighter, apply_text_minimally

CASES = [("", "a"), ("a", ""), ("a\nb\nc", "a\nc"), ("a\nb", "a\nb\nc"), ("a\nb\n", "a\nb\nc\n"),
         ("x\ny\nz\n", "y\nz\n"), ("x\ny\nz", "x\ny"), ("same\n", "same\n\n"), ("1\n2\n3\n", "1\n2\n3"),
         ("a\na\na\n", "a\na\n"), ("\n\n", "\n"), ("q", "q\n")]


@pytest.mark.parametrize("old, new", CASES)
def test_minimal_replacement_gives_the_new_text(qtbot, old, new):
    doc = QTextDocument()
    doc.setPlainText(old)
    apply_text_minimally(doc, new)
    assert doc.toPlainText() == new


def test_minimal_replacement_on_random_line_edits(qtbot):
    rng = random.Random(7)
    words = ["import torch", "", "def f(x):", "    return x", "# c", "x = 1"]
    doc = QTextDocument()
    text = ""
    for _ in range(300):
        lines = text.split("\n") if text else []
        for _ in range(rng.randint(1, 3)):
            op = rng.choice(["ins", "del", "mod"])
            at = rng.randint(0, len(lines))
            if op == "ins":
                lines.insert(at, rng.choice(words))
            elif lines and at < len(lines):
                if op == "del":
                    del lines[at]
                else:
                    lines[at] = rng.choice(words)
        new = "\n".join(lines) + rng.choice(["", "\n"])
        apply_text_minimally(doc, new)
        assert doc.toPlainText() == new
        text = new


class CountingHighlighter(DeferredHighlighter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lexed = []

    def highlight_code(self, text, stack, offset=0):
        self.lexed.append(text)
        return super().highlight_code(text, stack, offset)


def test_only_the_changed_lines_are_relexed(qtbot):
    view = CodeEditor(read_only=True)  # a document with a layout: a bare QTextDocument reports no changes
    qtbot.addWidget(view)
    doc = view.document()
    lines = [f"x{i} = {i}" for i in range(400)]
    doc.setPlainText("\n".join(lines))
    highlighter = CountingHighlighter(doc, "one-dark")
    qtbot.waitUntil(lambda: len(highlighter.lexed) == 400)  # the initial (delayed) highlight
    lexed = highlighter.lexed
    lexed.clear()
    lines[200] = "x200 = 'changed'"
    assert apply_text_minimally(doc, "\n".join(lines)) == (201, 201)
    qtbot.wait(20)
    assert "x200 = 'changed'" in lexed and len(lexed) <= 3  # the edited line and its neighbours, not 400


def test_a_new_document_is_highlighted_a_chunk_at_a_time(qtbot):
    view = CodeEditor(read_only=True)
    qtbot.addWidget(view)
    doc = view.document()
    highlighter = DeferredHighlighter(doc, "one-dark", chunk_lines=50)
    highlighter.restart()
    doc.setPlainText('s = """\n' + "inside a string\n" * 180 + '"""\nx = 1\n')
    assert doc.findBlockByNumber(0).userState() == PENDING  # nothing lexed yet
    qtbot.waitUntil(lambda: highlighter.done, timeout=5000)
    states = {doc.findBlockByNumber(i).userState() for i in range(doc.blockCount())}
    assert PENDING not in states
    # the multi-line string state crossed the chunk boundaries: the line after it is back in the root state
    assert doc.findBlockByNumber(182).userState() == doc.findBlockByNumber(183).userState()
    assert doc.findBlockByNumber(100).userState() != doc.findBlockByNumber(183).userState()
