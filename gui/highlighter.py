"""Syntax highlighting driven by pygments, one text block (line) at a time.

QSyntaxHighlighter re-highlights only the blocks that changed, so each line is lexed on its own. A pygments
RegexLexer keeps a state stack (`root`, inside a triple-quoted string, ...); we carry that stack from one block
to the next through the block state (an index into a table of the stacks seen so far), so a triple-quoted string
opened on one line is still a string on the following lines, and editing it re-highlights exactly the lines whose
state changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pygments.lexer import RegexLexer
from pygments.lexers import PythonLexer
from pygments.styles import get_style_by_name
from pygments.token import Error, Token, Whitespace, _TokenType
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument

ROOT_STACK: tuple[str, ...] = ("root",)


def lex_line(lexer: RegexLexer, text: str, stack: tuple[str, ...] = ROOT_STACK
             ) -> tuple[list[tuple[int, _TokenType, str]], tuple[str, ...]]:
    """Lex one line starting in `stack`; return its tokens and the stack at its end.

    The same loop as `RegexLexer.get_tokens_unprocessed`, which does not hand back the final stack.
    """
    tokens: list[tuple[int, _TokenType, str]] = []
    tokendefs = lexer._tokens
    statestack = list(stack)
    statetokens = tokendefs[statestack[-1]]
    pos = 0
    empty_steps = 0  # guards against a (buggy) lexer whose empty matches never advance
    while empty_steps < 100:
        for rexmatch, action, new_state in statetokens:
            m = rexmatch(text, pos)
            if not m:
                continue
            if action is not None:
                if type(action) is _TokenType:
                    tokens.append((pos, action, m.group()))
                else:
                    tokens.extend(action(lexer, m))
            empty_steps = empty_steps + 1 if m.end() == pos else 0
            pos = m.end()
            if new_state is not None:
                _transition(statestack, new_state)
                statetokens = tokendefs[statestack[-1]]
            break
        else:
            if pos >= len(text):
                break
            if text[pos] == "\n":
                statestack = ["root"]
                statetokens = tokendefs["root"]
                tokens.append((pos, Whitespace, "\n"))
            else:
                tokens.append((pos, Error, text[pos]))
            pos += 1
    return tokens, tuple(statestack)


def _transition(statestack: list[str], new_state) -> None:
    if isinstance(new_state, tuple):
        for state in new_state:
            if state == "#pop":
                if len(statestack) > 1:
                    statestack.pop()
            elif state == "#push":
                statestack.append(statestack[-1])
            else:
                statestack.append(state)
    elif isinstance(new_state, int):
        if abs(new_state) >= len(statestack):
            del statestack[1:]
        else:
            del statestack[new_state:]
    elif new_state == "#push":
        statestack.append(statestack[-1])


class TokenFormats:
    """QTextCharFormat per pygments token type, taken from a pygments style."""

    def __init__(self, style_name: str = "default"):
        self.style = get_style_by_name(style_name)
        self._cache: dict[_TokenType, QTextCharFormat] = {}

    def __getitem__(self, ttype: _TokenType) -> QTextCharFormat:
        fmt = self._cache.get(ttype)
        if fmt is None:
            fmt = self._cache[ttype] = self._make(ttype)
        return fmt

    def _make(self, ttype: _TokenType) -> QTextCharFormat:
        fmt = QTextCharFormat()
        while not self.style.styles_token(ttype) and ttype.parent is not None:
            ttype = ttype.parent
        spec = self.style.style_for_token(ttype)
        if spec["color"]:
            fmt.setForeground(QColor("#" + spec["color"]))
        if spec["bgcolor"] and ttype is not Error:
            fmt.setBackground(QColor("#" + spec["bgcolor"]))
        if spec["bold"]:
            fmt.setFontWeight(QFont.Weight.Bold)
        if spec["italic"]:
            fmt.setFontItalic(True)
        if spec["underline"]:
            fmt.setFontUnderline(True)
        return fmt

    def background(self) -> QColor | None:
        return QColor(self.style.background_color) if self.style.background_color else None


class _StateTable:
    """Maps hashable lexer states to the small non-negative ints a QTextBlock stores (-1 means 'not yet')."""

    def __init__(self):
        self._states: list[object] = []
        self._index: dict[object, int] = {}

    def id(self, state: object) -> int:
        found = self._index.get(state)
        if found is None:
            found = self._index[state] = len(self._states)
            self._states.append(state)
        return found

    def state(self, block_state: int, default: object) -> object:
        return self._states[block_state] if 0 <= block_state < len(self._states) else default


class PygmentsHighlighter(QSyntaxHighlighter):
    """Highlights Python (or any pygments RegexLexer language) and keeps multi-line state across blocks."""

    def __init__(self, document: QTextDocument, style_name: str = "default", lexer: RegexLexer | None = None):
        super().__init__(document)
        self.lexer = lexer or PythonLexer(stripnl=False, ensurenl=False)
        self.formats = TokenFormats(style_name)
        self._table = _StateTable()

    def set_style(self, style_name: str) -> None:
        self.formats = TokenFormats(style_name)
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt API)
        stack = self._table.state(self.previousBlockState(), ROOT_STACK)
        end = self.highlight_code(text, stack)  # type: ignore[arg-type]
        self.setCurrentBlockState(self._table.id(end))

    def highlight_code(self, text: str, stack: tuple[str, ...], offset: int = 0) -> tuple[str, ...]:
        """Colour `text` (starting at column `offset` of the block) lexed from `stack`; return the end stack."""
        tokens, end = lex_line(self.lexer, text + "\n", stack)
        for pos, ttype, value in _clip(tokens, len(text)):
            if ttype is not Token.Text and ttype is not Whitespace:
                self.setFormat(offset + pos, len(value), self.formats[ttype])
        return end


def _clip(tokens: list[tuple[int, _TokenType, str]], limit: int) -> Iterator[tuple[int, _TokenType, str]]:
    for pos, ttype, value in tokens:
        if pos >= limit:
            break
        yield pos, ttype, value[: limit - pos]


_SPEC_HEADER = re.compile(r"^(KERNEL SPEC|Description|Operations|Inputs|Outputs|Dependencies|Shared with|Notes"
                          r"|Total kernels|Parallel groups|Execution order|Original forward-pass ops"
                          r"|Covered by kernel specs|Glue \([^)]*\)|Gaps)(:)")
_CODE_START = re.compile(r"^(PyTorch Reference|End-to-end PyTorch reference):\s*$")
_CODE_END = re.compile(r"^(Notes:|## |---)")


class SpecHighlighter(PygmentsHighlighter):
    """The Analyzer's text format: section headers, `key:` labels, and the Python references inside it."""

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt API)
        in_code, stack = self._table.state(self.previousBlockState(), (False, ROOT_STACK))  # type: ignore[misc]
        if in_code and _CODE_END.match(text):
            in_code, stack = False, ROOT_STACK
        if in_code:
            stack = self.highlight_code(text, stack)
        else:
            self._highlight_prose(text)
            if _CODE_START.match(text):
                in_code, stack = True, ROOT_STACK
        self.setCurrentBlockState(self._table.id((in_code, stack)))

    def _highlight_prose(self, text: str) -> None:
        if text.startswith("## ") or text.startswith("---"):
            self.setFormat(0, len(text), self.formats[Token.Generic.Heading])
            return
        if text.startswith("KERNEL SPEC:"):
            self.setFormat(0, len(text), self.formats[Token.Generic.Heading])
            return
        m = _SPEC_HEADER.match(text) or _CODE_START.match(text)
        if m:
            self.setFormat(0, m.end(1) + 1, self.formats[Token.Keyword])
        if text.lstrip().startswith("- "):
            indent = len(text) - len(text.lstrip())
            self.setFormat(indent, 1, self.formats[Token.Operator])
