"""Errors as values: a location, a one-line message and a hint.

Every failure a user can cause (a broken model file, an op we cannot capture, a timeout) is reported as a
`UserError` carrying where it happened; the CLI prints `file:line: message (hint)` and exits 2, the GUI shows the
same line in its Problems pane. Tracebacks are kept in `detail` and shown only on request.
"""

from __future__ import annotations

from pydantic import BaseModel


class ErrorInfo(BaseModel):
    """A user-facing error, serialisable across the child-process boundary."""

    kind: str  # syntax, import, missing, exception, timeout, memory, capture, unsupported, io, crash
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    op: str | None = None
    hint: str | None = None
    detail: str | None = None  # traceback or child stderr, for --verbose

    def one_line(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line:
                where += f":{self.line}"
                if self.column:
                    where += f":{self.column}"
            where += ": "
        text = f"{where}{self.kind} error: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class UserError(Exception):
    """Raised with an `ErrorInfo`; caught at the CLI/GUI boundary and shown as one line."""

    def __init__(self, info: ErrorInfo):
        super().__init__(info.one_line())
        self.info = info
