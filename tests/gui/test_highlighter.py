"""The pygments-driven highlighter: per-line lexing that keeps multi-line state."""

import pytest
from pygments.lexers import PythonLexer
from pygments.token import String
from PySide6.QtGui import QTextCursor, QTextDocument

from tilestudio.gui.code_editor import CodeEditor
from tilestudio.gui.highlighter import PygmentsHighlighter, SpecHighlighter, lex_line

CODE = 'x = 1\ns = """first line\nthe middle line\nlast line"""\ny = 2\n'


def _colour_at(doc: QTextDocument, line: int, column: int):
    block = doc.findBlockByNumber(line)
    for fr in block.layout().formats():
        if fr.start <= column < fr.start + fr.length:
            return fr.format.foreground().color().name()
    return None


def _string_colour(highlighter):
    return highlighter.formats[String.Double].foreground().color().name()


@pytest.mark.parametrize("style", ["default", "one-dark"])
def test_a_triple_quoted_string_is_a_string_on_its_middle_line(qapp, style):
    editor = CodeEditor(read_only=True)
    doc = editor.document()
    highlighter = PygmentsHighlighter(doc, style)
    editor.set_text(CODE)
    string = _string_colour(highlighter)
    middle = doc.findBlockByNumber(2)
    assert middle.text() == "the middle line"
    assert all(_colour_at(doc, 2, col) == string for col in range(len(middle.text())))
    assert _colour_at(doc, 3, 0) == string  # last line, before the closing quotes
    assert _colour_at(doc, 4, 0) != string  # `y` after the string is a name again


def test_editing_the_opening_quotes_rehighlights_the_following_lines(qapp):
    editor = CodeEditor()
    doc = editor.document()
    highlighter = PygmentsHighlighter(doc)
    editor.set_text(CODE)
    string = _string_colour(highlighter)
    assert _colour_at(doc, 2, 4) == string
    # turn the opening `"""` into `0 #`: the middle line is not a string any more
    block = doc.findBlockByNumber(1)
    cursor = QTextCursor(block)
    cursor.setPosition(block.position() + 4)
    cursor.setPosition(block.position() + 7, QTextCursor.MoveMode.KeepAnchor)
    cursor.insertText("0 #")
    assert _colour_at(doc, 2, 4) != string


def test_lex_line_matches_the_whole_file_lexer():
    lexer = PythonLexer()
    # (a docstring at the start of a statement is lexed as one multi-line token by the whole-file lexer, as
    # String.Doc; per line it is String.Double, so it is left out here)
    source = 'def f(a):\n    s = """doc\n    more"""\n    return f"{a!r} and {{x}}" + \'q\' + s  # c\n'
    whole = [(t, v) for _, t, v in lexer.get_tokens_unprocessed(source)]
    stack, lines = ("root",), []
    for line in source.splitlines(keepends=True):
        tokens, stack = lex_line(lexer, line, stack)
        lines += [(t, v) for _, t, v in tokens]
    assert lines == whole


def test_spec_highlighter_colours_the_reference_as_python(qapp):
    text = ("---\nKERNEL SPEC: k\nDescription: it's a kernel\n\nPyTorch Reference:\ndef reference_k(x):\n"
            '    """doc\n    string"""\n    return x\n\nNotes:\n- none\n---\n')
    doc = QTextDocument()
    highlighter = SpecHighlighter(doc)
    doc.setPlainText(text)
    highlighter.rehighlight()  # a bare document (no view) is highlighted on demand
    string = _string_colour(highlighter)
    assert _colour_at(doc, 7, 6) == string  # inside the multi-line docstring of the reference
    # the apostrophe in the prose does not open a string
    assert _colour_at(doc, 2, 20) != string
    assert _colour_at(doc, 11, 2) != string  # notes are prose again
