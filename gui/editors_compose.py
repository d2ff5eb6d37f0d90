"""The Qt-free half of the kernel workspace: generate kernel sources, compose the file and check its purity.

These run in a helper process, away from the GUI process: generating imports the kernel library and with it torch
(seconds of C-extension loading that hold the interpreter lock: on a worker thread it froze the window for most of
a second), and composing and the purity check are pure Python that would compete with the GUI thread for the lock
on every keystroke. A worker thread is only the fallback when the helper cannot run. So this module must not
import Qt: the helper process imports it to unpickle the work.
"""

from __future__ import annotations

import pickle
import sys
import time
import traceback
from dataclasses import dataclass, field

from tilestudio.core.composer import ComposedFile, compose_file
from tilestudio.core.kernels.base import KernelSource
from tilestudio.core.purity import PurityDiagnostic, check_text
from tilestudio.core.specs import Decomposition


def generate_sources(dec: Decomposition) -> dict[str, KernelSource]:
    """Every kernel's generated source; a generator that crashes yields a skeleton naming the crash."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.skeleton import skeleton_source

    sources = {}
    for k in dec.kernels:
        try:
            sources[k.id] = generate_kernel(k)
        except Exception as exc:  # noqa: BLE001 - a generator bug must not take the editors down
            sources[k.id] = skeleton_source(k, f"the {k.family} generator failed ({type(exc).__name__}: {exc})")
    return sources


def code_offsets(composed: ComposedFile, codes: dict[str, str]) -> dict[str, int]:
    """kernel id → offset such that `editor line = composed line - offset`, for lines of the kernel's code.

    The composer writes a section as a banner/provenance header followed by the code with its leading and trailing
    newlines stripped; the header length is the section length minus the code's, checked against the text.
    """
    lines = composed.text.split("\n")
    offsets = {}
    for kid, code in codes.items():
        span = composed.line_map.get(f"kernel:{kid}")
        if span is None:
            continue
        first, last = span
        body = code.strip("\n").split("\n")
        header = (last - first + 1) - len(body)
        section = lines[first - 1:last]
        if header < 0 or section[header:] != body:
            header = _header_by_scan(section)
        leading = len(code) - len(code.lstrip("\n"))
        offsets[kid] = first + header - leading - 1
    return offsets


def _header_by_scan(section: list[str]) -> int:
    """Fallback: the header is the run of comment lines the section starts with."""
    n = 0
    while n < len(section) and section[n].startswith("#"):
        n += 1
    return n


@dataclass
class ComposeResult:
    request: int
    text: str = ""
    composed: ComposedFile | None = None
    diagnostics: list[PurityDiagnostic] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)  # kernel id → composed line - editor line
    error: str = ""  # composing itself failed (a bug): the previous text stays
    seconds: float = 0.0

    def kernel_at(self, line: int) -> str | None:
        """The kernel whose section holds composed `line`."""
        if self.composed is None:
            return None
        for key, (first, last) in self.composed.line_map.items():
            if key.startswith("kernel:") and first <= line <= last:
                return key.split(":", 1)[1]
        return None

    def editor_line(self, kernel_id: str, composed_line: int) -> int | None:
        """The kernel editor's line for a composed line, or None when it is in the header or outside the code."""
        if self.composed is None or kernel_id not in self.offsets:
            return None
        first, last = self.composed.line_map[f"kernel:{kernel_id}"]
        line = composed_line - self.offsets[kernel_id]
        if not first <= composed_line <= last or line < 1:
            return None
        return line

    def composed_line(self, kernel_id: str, editor_line: int) -> int | None:
        if kernel_id not in self.offsets or self.composed is None:
            return None
        line = editor_line + self.offsets[kernel_id]
        first, last = self.composed.line_map[f"kernel:{kernel_id}"]
        return line if first <= line <= last else None

    def kernel_diagnostics(self, kernel_id: str) -> list[tuple[int, PurityDiagnostic]]:
        """(editor line, diagnostic) for the diagnostics inside the kernel's code."""
        out = []
        for d in self.diagnostics:
            if self.kernel_at(d.line) == kernel_id:
                line = self.editor_line(kernel_id, d.line)
                if line is not None:
                    out.append((line, d))
        return out


@dataclass
class GenerateResult:
    request: int
    sources: dict[str, KernelSource] = field(default_factory=dict)
    seconds: float = 0.0


def generate_result(request: int, dec: Decomposition) -> GenerateResult:
    start = time.perf_counter()
    sources = generate_sources(dec)
    return GenerateResult(request, sources, time.perf_counter() - start)


def warm_up() -> None:
    """Import the kernel library (and torch) before the first request needs it."""
    import tilestudio.core.kernels  # noqa: F401

    try:
        import torch  # noqa: F401 - some generators consult torch's operator schemas
    except ImportError:
        pass


def compose_and_check(request: int, dec: Decomposition, sources: dict[str, KernelSource],
                      original: str) -> ComposeResult:
    """Compose the file and check its purity; runs in the helper process (or a worker thread)."""
    start = time.perf_counter()
    try:
        composed = compose_file(dec, sources, original)
        diagnostics = check_text(composed.text, original)
        offsets = code_offsets(composed, {kid: src.code for kid, src in sources.items()})
    except Exception as exc:  # noqa: BLE001 - report and keep the previous composition
        return ComposeResult(request, error=f"composing failed: {type(exc).__name__}: {exc}\n"
                                            f"{traceback.format_exc(limit=4)}")
    return ComposeResult(request, composed.text, composed, diagnostics, offsets,
                         seconds=time.perf_counter() - start)


# ---- the helper process: `python -m tilestudio.gui.editors_compose` -----------------------------------------
# Requests and results are pickles framed by an 8-byte big-endian length, on stdin and stdout; the parent is this
# application itself, so the pickles come from a trusted source. Anything else printed goes to stderr.
# Requests: ("warm",) (no answer), ("generate", request, dec) → GenerateResult,
# ("compose", request, dec, sources, original) → ComposeResult.
FRAME_HEADER = 8


def write_frame(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(FRAME_HEADER, "big") + data)
    stream.flush()


def read_exactly(stream, n: int) -> bytes | None:
    chunks, missing = [], n
    while missing:
        chunk = stream.read(missing)
        if not chunk:
            return None
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def serve(stdin=None, stdout=None) -> int:
    """Answer compose requests until stdin closes."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the frames
    while True:
        header = read_exactly(stdin, FRAME_HEADER)
        if header is None:
            return 0
        payload = read_exactly(stdin, int.from_bytes(header, "big"))
        if payload is None:
            return 0
        kind, *args = pickle.loads(payload)
        if kind == "warm":
            warm_up()
        elif kind == "generate":
            write_frame(stdout, generate_result(*args))
        else:
            write_frame(stdout, compose_and_check(*args))


if __name__ == "__main__":
    # Serve from the module under its real name, so results pickle as tilestudio.gui.editors_compose.*, not __main__.*
    from tilestudio.gui import editors_compose

    raise SystemExit(editors_compose.serve())
