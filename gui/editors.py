"""Kernel editors: one tab per kernel with its cuTile source, beside the spec and the PyTorch reference.

The code comes from the KernelWorkspace (generated, or the user's edit) and every keystroke goes back to it; the
workspace recomposes the file and checks its purity, and the diagnostics that fall inside a kernel come back here
as wave underlines. "Compile check" runs the kernel's ahead-of-time compile for the configured architecture in a
child process (the edited code is user code), and shows the verdict in the tab's status line, as an underline on
the failing line and in the Problems pane. "Reset to generated" is one undoable edit, so it never loses work.
"""

from __future__ import annotations

import os
from typing import Callable

from PySide6.QtCore import QProcess, QProcessEnvironment, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QSizePolicy, QSplitter, QStackedWidget, QStyle, QTabWidget,
                               QToolButton, QVBoxLayout, QWidget)

from tilestudio.core.kernel_check import (KernelCheckRequest, KernelCheckResult, child_command, parse_output,
                                          write_request)
from tilestudio.core.purity import PurityDiagnostic
from tilestudio.core.render_text import render_kernel
from tilestudio.core.specs import KernelSpec

from .code_editor import CodeEditor
from .editors_diagnostics import Diagnostic, DiagnosticEditor
from .editors_find import FindReplaceBar
from .editors_problems import KernelProblem, purity_problem
from .editors_workspace import ComposeResult, KernelWorkspace
from .highlighter import PygmentsHighlighter, SpecHighlighter
from .kernels_pane import swatch
from .theme import Theme

COMPILE_TIMEOUT_MS = 300_000
EDITED_MARK = " ●"


def spec_summary(k: KernelSpec) -> str:
    """The spec in the Analyzer's text format without its reference (shown in its own view)."""
    lines = render_kernel(k).split("\n")
    try:
        start = lines.index("PyTorch Reference:")
        end = lines.index("Notes:", start)
    except ValueError:
        return "\n".join(lines)
    return "\n".join(lines[:start] + lines[end:])


def _caption(text: str) -> QLabel:
    label = QLabel(text)
    label.setContentsMargins(8, 4, 8, 2)
    font = label.font()
    font.setBold(True)
    font.setPointSizeF(font.pointSizeF() * 0.9)
    label.setFont(font)
    return label


class CompileCheck(QProcess):
    """One compile check of one kernel, in a child process; `done` delivers the KernelCheckResult."""

    done = Signal(object)

    def __init__(self, request: KernelCheckRequest, parent: QWidget | None = None):
        super().__init__(parent)
        self.kernel_id = request.spec.id
        self.arch = request.arch
        self._request_path = write_request(request)
        self._cancelled = False
        self._timer = QTimer(self, singleShot=True, interval=COMPILE_TIMEOUT_MS)
        self._timer.timeout.connect(self._timed_out)
        self._timed_out_flag = False
        env = QProcessEnvironment.systemEnvironment()
        env.insert("PYTHONUNBUFFERED", "1")
        self.setProcessEnvironment(env)
        self.finished.connect(self._on_finished)
        self.errorOccurred.connect(self._on_error)
        command = child_command(self._request_path)
        self.setProgram(command[0])
        self.setArguments(command[1:])

    def begin(self) -> None:
        self._timer.start()
        self.start()

    def cancel(self) -> None:
        if self.state() != QProcess.ProcessState.NotRunning:
            self._cancelled = True
            self.kill()
            self.waitForFinished(3000)

    def _timed_out(self) -> None:
        self._timed_out_flag = True
        self.kill()

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self._finish(KernelCheckResult(kernel_id=self.kernel_id, arch=self.arch, ok=False, stage="child",
                                           message=f"could not start the compile check: {self.errorString()}"))

    def _on_finished(self, exit_code: int, _status: QProcess.ExitStatus) -> None:
        stdout = bytes(self.readAllStandardOutput()).decode("utf-8", "replace")
        stderr = bytes(self.readAllStandardError()).decode("utf-8", "replace")
        if self._cancelled:
            result = KernelCheckResult(kernel_id=self.kernel_id, arch=self.arch, ok=False, stage="cancelled",
                                       message="cancelled")
        elif self._timed_out_flag:
            result = KernelCheckResult(kernel_id=self.kernel_id, arch=self.arch, ok=False, stage="child",
                                       message=f"the compile check took longer than {COMPILE_TIMEOUT_MS // 1000} s")
        else:
            result = parse_output(stdout, self.kernel_id, self.arch, stderr, exit_code)
        self._finish(result)

    def _finish(self, result: KernelCheckResult) -> None:
        self._timer.stop()
        try:
            os.unlink(self._request_path)
        except OSError:
            pass
        self.done.emit(result)


class KernelEditor(QWidget):
    """The editor of one kernel: code (left), spec and reference (right), find bar, status and actions."""

    codeEdited = Signal(str, str)  # kernel id, text
    compileRequested = Signal(str)
    resetRequested = Signal(str)

    def __init__(self, spec: KernelSpec, code: str, theme: Theme, colour: QColor, parent: QWidget | None = None):
        super().__init__(parent)
        self.kernel_id = spec.id
        self.spec = spec
        self.theme = theme
        self.colour = colour
        self.in_model = True
        self._not_in_model = ""
        self.editor = DiagnosticEditor()
        self.editor.setObjectName("kernelCode")
        self.editor.setTabStopDistance(self.editor.fontMetrics().horizontalAdvance(" ") * 4)
        self.highlighter = PygmentsHighlighter(self.editor.document(), theme.pygments_style)
        self.find_bar = FindReplaceBar(self.editor)
        self.spec_view = CodeEditor(read_only=True, line_numbers=False)
        self.spec_view.setLineWrapMode(CodeEditor.LineWrapMode.WidgetWidth)
        # Wrapped text whose height is near the view's can make the scroll bar appear and disappear forever
        # (each toggle re-wraps the text); a scroll bar that is always there cannot.
        self.spec_view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.spec_highlighter = SpecHighlighter(self.spec_view.document(), theme.pygments_style)
        self.reference_view = CodeEditor(read_only=True)
        self.reference_highlighter = PygmentsHighlighter(self.reference_view.document(), theme.pygments_style)

        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.purity_label = QLabel()
        self.compile_label = QLabel()
        self.compile_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.compile_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        style = self.style()
        self.compile_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_MediaPlay), "Compile check", self)
        self.compile_action.setToolTip("Trace the launch wrapper on fake tensors and compile every kernel it "
                                       "launches ahead of time (no GPU needed)")
        self.compile_action.triggered.connect(lambda: self.compileRequested.emit(self.kernel_id))
        self.reset_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_BrowserReload),
                                    "Reset to generated", self)
        self.reset_action.setToolTip("Replace the code with the generated kernel (undo brings your edit back)")
        self.reset_action.triggered.connect(lambda: self.resetRequested.emit(self.kernel_id))
        self.compile_button = QToolButton(defaultAction=self.compile_action, autoRaise=True)
        self.compile_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.reset_button = QToolButton(defaultAction=self.reset_action, autoRaise=True)
        self.reset_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)

        header = QHBoxLayout()
        header.setContentsMargins(8, 4, 6, 4)
        header.setSpacing(10)
        header.addWidget(self.title)
        header.addWidget(self.purity_label)
        header.addWidget(self.compile_label, 1)
        header.addWidget(self.compile_button)
        header.addWidget(self.reset_button)

        code_side = QWidget()
        code_layout = QVBoxLayout(code_side)
        code_layout.setContentsMargins(0, 0, 0, 0)
        code_layout.setSpacing(0)
        code_layout.addWidget(self.editor, 1)
        code_layout.addWidget(self.find_bar)

        def titled(caption: str, view: QWidget) -> QWidget:
            box = QWidget()
            lay = QVBoxLayout(box)
            lay.setContentsMargins(0, 0, 0, 0)
            lay.setSpacing(0)
            lay.addWidget(_caption(caption))
            lay.addWidget(view, 1)
            return box

        side = QSplitter(Qt.Orientation.Vertical)
        side.addWidget(titled("Spec", self.spec_view))
        side.addWidget(titled("PyTorch reference", self.reference_view))
        side.setStretchFactor(0, 1)
        side.setStretchFactor(1, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("kernelEditorSplitter")
        self.splitter.addWidget(code_side)
        self.splitter.addWidget(side)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(True)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(header)
        layout.addWidget(self.splitter, 1)

        QShortcut(QKeySequence.StandardKey.Find, self, lambda: self.open_find(False),
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        QShortcut(QKeySequence("Ctrl+H"), self, lambda: self.open_find(True),
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)

        self.set_spec(spec)
        self.editor.setPlainText(code)
        self.editor.document().setModified(False)
        self.editor.textChanged.connect(self._on_text_changed)
        self.compile_result: KernelCheckResult | None = None
        self._compile_stale = False
        self._sized = False
        self.set_purity([])

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if not self._sized and self.isVisible() and self.width() > 300:
            self._sized = True  # the code gets most of the width; the spec side stays readable
            self.splitter.setSizes([int(self.width() * 0.64), int(self.width() * 0.36)])

    # ---- content -------------------------------------------------------------------------------------------
    def set_spec(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.spec_view.set_text(spec_summary(spec))
        self.reference_view.set_text(spec.reference.rstrip("\n") + "\n")
        ops = ", ".join(spec.operations)
        self.title.setText(f"<b>{spec.id}</b> &nbsp;<span style='color:{self.theme.dim_text}'>{spec.family} · "
                           f"{ops}</span>")
        self.title.setToolTip(spec.description)

    def code(self) -> str:
        return self.editor.toPlainText()

    def replace_code(self, code: str, *, undoable: bool = True) -> None:
        """Put `code` in the editor; as one undo step unless told otherwise (then the history restarts)."""
        if code == self.code():
            return
        if not undoable:
            self.editor.setPlainText(code)
            return
        cursor = QTextCursor(self.editor.document())
        line = self.editor.current_line()
        cursor.beginEditBlock()
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.insertText(code)
        cursor.endEditBlock()
        self.editor.go_to_line(min(line, self.editor.blockCount()), center=False)

    def _on_text_changed(self) -> None:
        if self.compile_result is not None and not self._compile_stale:
            self._compile_stale = True
            self.editor.set_diagnostics("compile", [])
            self._show_compile_label()
        self.codeEdited.emit(self.kernel_id, self.code())

    def open_find(self, replace: bool = False) -> None:
        self.find_bar.open_find(replace)

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        for h in (self.highlighter, self.spec_highlighter, self.reference_highlighter):
            h.set_style(theme.pygments_style)
        self.editor.set_severity_colours(QColor(theme.error), QColor(theme.warning))
        self.set_spec(self.spec)
        self._show_purity_label()
        self._show_compile_label()

    # ---- purity --------------------------------------------------------------------------------------------
    def set_purity(self, found: list[tuple[int, PurityDiagnostic]]) -> None:
        diags = [Diagnostic(line=line, column=d.column,
                            end_column=d.end_column, severity=d.severity, message=d.message, rule=d.rule,
                            hint=d.hint, source="purity") for line, d in found]
        self.editor.set_diagnostics("purity", diags)
        self._purity = diags
        self._show_purity_label()

    def _show_purity_label(self) -> None:
        diags = getattr(self, "_purity", [])
        if not self.in_model:
            why = self._not_in_model
            self.purity_label.setText(f"<span style='color:{self.theme.warning}'>{why}</span>")
            return
        errors = sum(d.severity == "error" for d in diags)
        warnings = len(diags) - errors
        if not diags:
            self.purity_label.setText("<span style='color:#5cc98a'>✓ pure</span>")
            self.purity_label.setToolTip("No PyTorch compute in this kernel's launch path")
        else:
            parts = []
            if errors:
                parts.append(f"<span style='color:{self.theme.error}'>✗ {errors} purity "
                             f"error{'s' if errors != 1 else ''}</span>")
            if warnings:
                parts.append(f"<span style='color:{self.theme.warning}'>{warnings} "
                             f"warning{'s' if warnings != 1 else ''}</span>")
            self.purity_label.setText(" ".join(parts))
            self.purity_label.setToolTip("\n".join(f"line {d.line}: {d.rule} {d.message}" for d in diags))

    # ---- compile check -------------------------------------------------------------------------------------
    def compile_started(self, arch: str) -> None:
        self.compile_result, self._compile_stale = None, False
        self.editor.set_diagnostics("compile", [])
        self.compile_label.setText(f"<span style='color:{self.theme.dim_text}'>compiling for {arch}…</span>")
        self.compile_action.setText("Cancel check")

    def set_compile_result(self, result: KernelCheckResult) -> None:
        self.compile_result, self._compile_stale = result, False
        self.compile_action.setText("Compile check")
        diags = []
        if not result.ok and result.line and result.stage != "cancelled":
            diags.append(Diagnostic(line=result.line, column=result.column or 0,
                                    end_column=(result.column or 0) + 1, severity="error",
                                    message=result.message, rule=f"compile ({result.stage})",
                                    source="compile"))
        self.editor.set_diagnostics("compile", diags)
        self._show_compile_label()

    def _show_compile_label(self) -> None:
        r = self.compile_result
        if r is None:
            if self.compile_action.text() == "Compile check":
                self.compile_label.setText("")
            return
        stale = " <i>(code changed since)</i>" if self._compile_stale else ""
        if r.ok:
            n = len({launch.kernel for launch in r.launches})
            text = (f"<span style='color:#5cc98a'>✓ compiles for {r.arch}</span> "
                    f"<span style='color:{self.theme.dim_text}'>({n} kernel{'s' if n != 1 else ''}, "
                    f"{r.seconds:.1f} s){stale}</span>")
            tip = "\n".join(f"{launch.kernel} grid={launch.grid} ({launch.cubin_bytes} bytes cubin, "
                            f"{launch.compile_s:.2f} s)" for launch in r.launches)
        elif r.stage == "cancelled":
            text, tip = f"<span style='color:{self.theme.dim_text}'>compile check cancelled</span>", ""
        else:
            where = f"line {r.line}: " if r.line else ""
            text = f"<span style='color:{self.theme.error}'>✗ {where}{_escape(r.message)}</span>{stale}"
            tip = r.detail[-3000:] if r.detail else r.message
        self.compile_label.setText(text)
        self.compile_label.setToolTip(tip)

    def compile_problems(self) -> list[KernelProblem]:
        r = self.compile_result
        if r is None or r.ok or r.stage == "cancelled" or self._compile_stale:
            return []
        return [KernelProblem(severity="error", message=f"[{self.kernel_id}] compile ({r.stage}): {r.message}",
                              file=self.kernel_id, line=r.line, column=r.column, detail=r.detail or None,
                              kernel=self.kernel_id, origin="compile", rule="compile")]

    def set_in_model(self, in_model: bool, why: str = "not in the model: kept, not composed") -> None:
        self.in_model = in_model
        self._not_in_model = why
        self.compile_action.setEnabled(in_model)
        self.reset_action.setEnabled(in_model)
        self._show_purity_label()


def _escape(text: str) -> str:
    import html

    return html.escape(text)


class EditorsPanel(QWidget):
    """The tabs of open kernel editors, fed by the workspace; runs compile checks."""

    problemsChanged = Signal()
    currentKernelChanged = Signal(str)
    compileFinished = Signal(object)  # KernelCheckResult
    compileVerdict = Signal(str, str, bool)  # kernel id, the code checked, it compiled (not for cancelled checks)

    def __init__(self, workspace: KernelWorkspace, theme: Theme, *, colour_index: Callable[[str], int],
                 arch: Callable[[], str], parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.theme = theme
        self._colour_index = colour_index
        self._arch = arch
        self.tabs = QTabWidget()
        self.tabs.setObjectName("kernelEditorTabs")
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.setDocumentMode(True)
        self.tabs.setUsesScrollButtons(True)
        self.tabs.setElideMode(Qt.TextElideMode.ElideMiddle)
        self.tabs.tabCloseRequested.connect(lambda index: self.close_kernel(self._editor_at(index).kernel_id))
        self.tabs.currentChanged.connect(self._on_current_changed)
        self.placeholder = QLabel("Double-click a kernel (Kernels pane or graph) to edit its cuTile source.\n"
                                  "Edits recompose the file and re-check its purity as you type.")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.tabs)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)
        self._editors: dict[str, KernelEditor] = {}
        self._checks: dict[str, CompileCheck] = {}
        self.compile_results: dict[str, KernelCheckResult] = {}
        workspace.sourcesReady.connect(self._on_sources_ready)
        workspace.editsReplaced.connect(self._on_edits_replaced)
        workspace.kernelEdited.connect(self._on_kernel_edited)
        workspace.composeFinished.connect(self._on_composed)
        workspace.cleared.connect(self._on_cleared)
        workspace.sourcesLost.connect(self._on_sources_lost)

    # ---- opening and closing -------------------------------------------------------------------------------
    def open_kernel(self, kernel_id: str, line: int | None = None) -> KernelEditor | None:
        editor = self._editors.get(kernel_id)
        if editor is None:
            dec = self.workspace.decomposition
            if dec is None or kernel_id not in self.workspace.generated:
                return None
            spec = dec.kernel(kernel_id)
            colour = self.theme.kernel_colour(self._colour_index(kernel_id))
            editor = KernelEditor(spec, self.workspace.code(kernel_id), self.theme, colour)
            editor.editor.set_severity_colours(QColor(self.theme.error), QColor(self.theme.warning))
            editor.codeEdited.connect(self.workspace.set_code)
            editor.compileRequested.connect(self.toggle_compile)
            editor.resetRequested.connect(self.reset_kernel)
            self._editors[kernel_id] = editor
            self.tabs.addTab(editor, swatch(colour), kernel_id)
            if self.workspace.result is not None:
                editor.set_purity(self.workspace.result.kernel_diagnostics(kernel_id))
            if kernel_id in self.compile_results:
                editor.set_compile_result(self.compile_results[kernel_id])
            self._update_tab(kernel_id)
            self.stack.setCurrentWidget(self.tabs)
        self.tabs.setCurrentWidget(editor)
        if line:
            editor.editor.go_to_line(line)
        editor.editor.setFocus()
        return editor

    def close_kernel(self, kernel_id: str) -> None:
        editor = self._editors.pop(kernel_id, None)
        if editor is None:
            return
        check = self._checks.pop(kernel_id, None)
        if check is not None:
            check.cancel()
            check.deleteLater()
        self.tabs.removeTab(self.tabs.indexOf(editor))
        editor.deleteLater()
        if not self._editors:
            self.stack.setCurrentWidget(self.placeholder)
        self.problemsChanged.emit()

    def close_all(self) -> None:
        for kid in list(self._editors):
            self.close_kernel(kid)

    def editor(self, kernel_id: str) -> KernelEditor | None:
        return self._editors.get(kernel_id)

    def editors(self) -> dict[str, KernelEditor]:
        return dict(self._editors)

    def current_editor(self) -> KernelEditor | None:
        widget = self.tabs.currentWidget()
        return widget if isinstance(widget, KernelEditor) else None

    def _editor_at(self, index: int) -> KernelEditor:
        return self.tabs.widget(index)  # type: ignore[return-value]

    def _on_current_changed(self, _index: int) -> None:
        editor = self.current_editor()
        self.currentKernelChanged.emit(editor.kernel_id if editor else "")

    def _update_tab(self, kernel_id: str) -> None:
        editor = self._editors.get(kernel_id)
        if editor is None:
            return
        index = self.tabs.indexOf(editor)
        edited = self.workspace.is_edited(kernel_id)
        self.tabs.setTabText(index, kernel_id + (EDITED_MARK if edited else ""))
        tip = f"{kernel_id}: {'edited' if edited else 'generated'}"
        if not editor.in_model:
            tip += " — no longer in the model (kept, not composed)"
        self.tabs.setTabToolTip(index, tip)

    # ---- workspace → editors -------------------------------------------------------------------------------
    def _on_sources_ready(self) -> None:
        dec = self.workspace.decomposition
        ids = set(self.workspace.generated)
        for kid, editor in self._editors.items():
            editor.set_in_model(kid in ids)
            if kid in ids:
                editor.set_spec(dec.kernel(kid))
                if not self.workspace.is_edited(kid):
                    editor.replace_code(self.workspace.code(kid), undoable=False)
            self._update_tab(kid)

    def _on_edits_replaced(self) -> None:
        for kid, editor in self._editors.items():
            editor.replace_code(self.workspace.code(kid))
            self._update_tab(kid)

    def _on_kernel_edited(self, kernel_id: str) -> None:
        self._update_tab(kernel_id)
        editor = self._editors.get(kernel_id)
        if editor is not None and editor.compile_result is not None:
            self.problemsChanged.emit()  # its compile problem went stale

    def _on_composed(self, result: ComposeResult) -> None:
        if result.composed is None:
            return
        for kid, editor in self._editors.items():
            editor.set_purity(result.kernel_diagnostics(kid))

    def _on_sources_lost(self) -> None:
        """The model no longer analyses: keep every editor (and its undo history) until it does again."""
        for check in self._checks.values():
            check.cancel()
            check.deleteLater()
        self._checks.clear()
        for kid, editor in self._editors.items():
            editor.set_in_model(False, "the analysis failed: your code is kept, not composed")
            editor.set_purity([])
            self._update_tab(kid)
        self.problemsChanged.emit()

    def _on_cleared(self) -> None:
        for check in self._checks.values():
            check.cancel()
            check.deleteLater()
        self._checks.clear()
        self.compile_results.clear()
        self.close_all()

    def purity_problems(self) -> list[KernelProblem]:
        result = self.workspace.result
        if result is None:
            return []
        problems = []
        for d in result.diagnostics:
            kid = result.kernel_at(d.line) or ""
            line = result.editor_line(kid, d.line) if kid else None
            problems.append(purity_problem(d, kid if line is not None else "", line))
        return problems

    def compile_problems(self) -> list[KernelProblem]:
        return [p for editor in self._editors.values() for p in editor.compile_problems()]

    # ---- actions -------------------------------------------------------------------------------------------
    def reset_kernel(self, kernel_id: str) -> None:
        editor = self._editors.get(kernel_id)
        generated = self.workspace.generated_code(kernel_id)
        if generated is None:
            return
        if editor is not None:
            editor.replace_code(generated)  # undoable: Ctrl+Z brings the edit back
        else:
            self.workspace.set_code(kernel_id, generated)

    def toggle_compile(self, kernel_id: str) -> None:
        if kernel_id in self._checks:
            self._checks[kernel_id].cancel()
        else:
            self.start_compile(kernel_id)

    def start_compile(self, kernel_id: str) -> bool:
        editor = self._editors.get(kernel_id)
        source = self.workspace.source_for(kernel_id)
        dec = self.workspace.decomposition
        if editor is None or source is None or dec is None or kernel_id in self._checks:
            return False
        arch = self._arch() or "sm_90"
        request = KernelCheckRequest(spec=dec.kernel(kernel_id),
                                     source=source.model_copy(update={"code": editor.code()}), arch=arch)
        check = CompileCheck(request, self)
        check.code = editor.code()
        check.done.connect(self._on_compile_done)
        self._checks[kernel_id] = check
        editor.compile_started(arch)
        check.begin()
        return True

    def compile_running(self, kernel_id: str | None = None) -> bool:
        return bool(self._checks) if kernel_id is None else kernel_id in self._checks

    def _on_compile_done(self, result: KernelCheckResult) -> None:
        check = self._checks.pop(result.kernel_id, None)
        if check is not None:
            check.deleteLater()
        if result.stage != "cancelled":
            self.compile_results[result.kernel_id] = result
            if check is not None:
                self.compileVerdict.emit(result.kernel_id, check.code, result.ok)
        editor = self._editors.get(result.kernel_id)
        if editor is not None:
            editor.set_compile_result(result)
        self.problemsChanged.emit()
        self.compileFinished.emit(result)

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        for kid, editor in self._editors.items():
            editor.set_theme(theme)
            self.tabs.setTabIcon(self.tabs.indexOf(editor), swatch(theme.kernel_colour(self._colour_index(kid))))

    def shutdown(self) -> None:
        for check in list(self._checks.values()):
            check.cancel()
        self._checks.clear()
