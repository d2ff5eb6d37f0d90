"""Wires the editing feature into the main window: the Kernel Editor and Composed docks, the workspace, problems,
navigation between them, and the Edit menu's editor actions. The main window calls `install_editing` once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QTabBar, QTreeWidgetItem, QWidget

from tilestudio.core.composer import compose_file

from .composed_pane import ComposedPane
from .editors import EditorsPanel, KernelEditor
from .editors_problems import COMPOSED_FILE, KernelProblem, ProblemsFeed
from .editors_workspace import ComposeResult, KernelWorkspace
from .problems_pane import Problem
from .theme import Theme

if TYPE_CHECKING:
    from .main_window import MainWindow


def configured_arch(window: "MainWindow") -> str:
    try:
        from .settings_dialog import AppSettings

        return AppSettings.load(window.settings).arch
    except Exception:  # noqa: BLE001 - the settings module is optional here
        return str(window.settings.value("build/arch", "sm_90"))


class StrayTabBarSweeper(QObject):
    """Hides dock tab bars that QMainWindow leaves behind when docks are re-tabified while it is laid out.

    Rebuilding the default layout (removing, splitting and tabifying docks before the window has its final size)
    can leave an extra copy of a tab bar that no dock group uses any more, painted over another pane. A tab bar in
    use sits right under (or over) the dock showing its current tab, with the same left edge and width.
    """

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.window = window
        self._timer = QTimer(self, singleShot=True, interval=50)
        self._timer.timeout.connect(self.sweep)
        window.installEventFilter(self)

    def sweep_soon(self) -> None:
        self._timer.start()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if watched is self.window and event.type() in (QEvent.Type.Show, QEvent.Type.Resize):
            self._timer.start()
        return False

    def sweep(self) -> int:
        if not self.window.isVisible():
            return 0
        docks = [d for d in self.window.findChildren(QDockWidget) if d.isVisible() and not d.isFloating()]
        hidden = 0
        for bar in self.window.findChildren(QTabBar):
            if bar.parent() is not self.window or not bar.isVisible() or bar.count() == 0:
                continue
            g = bar.geometry()
            used = any(abs(d.geometry().left() - g.left()) <= 2 and abs(d.geometry().width() - g.width()) <= 2
                       and (abs(d.geometry().bottom() + 1 - g.top()) <= 2
                            or abs(g.bottom() + 1 - d.geometry().top()) <= 2) for d in docks)
            if not used:
                bar.hide()
                hidden += 1
        return hidden


class EditingFeature(QObject):
    def __init__(self, window: "MainWindow"):
        super().__init__(window)
        self.window = window
        self.workspace = KernelWorkspace(self)
        self.panel = EditorsPanel(self.workspace, window.theme, colour_index=window.kernels.colour_index,
                                  arch=lambda: configured_arch(window))
        self.composed = ComposedPane(window.theme)
        self.feed = ProblemsFeed(window.problems, window.problems_dock, self)
        self.editors_dock = window._dock("Kernel Editor", "kernelEditorDock", self.panel)
        self.composed_dock = window._dock("Composed", "composedDock", self.composed)
        self._sweeper = StrayTabBarSweeper(window)
        self._build_actions()
        self._connect()

    # ---- actions -------------------------------------------------------------------------------------------
    def _build_actions(self) -> None:
        w = self.window
        self.edit_kernel_action = QAction("&Edit Kernel", w)
        self.edit_kernel_action.setShortcut(QKeySequence("Ctrl+Return"))
        self.edit_kernel_action.setStatusTip("Open the selected kernel's cuTile source in an editor tab")
        self.edit_kernel_action.triggered.connect(lambda: self.open_editor(w.kernels.selected_id()))
        self.compile_action = QAction("&Compile Check Kernel", w)
        self.compile_action.setShortcut(QKeySequence("Ctrl+B"))
        self.compile_action.setStatusTip("Compile the current kernel editor's code ahead of time (no GPU needed)")
        self.compile_action.triggered.connect(self._compile_current)
        self.reset_action = QAction("Reset Kernel to &Generated", w)
        self.reset_action.setStatusTip("Replace the current editor's code with the generated kernel (undoable)")
        self.reset_action.triggered.connect(self._reset_current)
        self.undo_action = QAction("&Undo", w)
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.undo_action.triggered.connect(lambda: self._editor_call("undo"))
        self.redo_action = QAction("&Redo", w)
        self.redo_action.setShortcut(QKeySequence.StandardKey.Redo)
        self.redo_action.triggered.connect(lambda: self._editor_call("redo"))
        # Ctrl+F/Ctrl+H belong to the focused pane (the graph has its own find): shown here, bound in the editors.
        self.find_action = QAction("&Find…\tCtrl+F", w)
        self.find_action.triggered.connect(lambda: self._find(False))
        self.replace_action = QAction("Find and &Replace…\tCtrl+H", w)
        self.replace_action.triggered.connect(lambda: self._find(True))
        self.show_composed_action = QAction("Show &Composed File", w)
        self.show_composed_action.triggered.connect(self.show_composed)
        self.close_editor_action = QAction("Close Kernel &Tab", w)
        self.close_editor_action.setShortcut(QKeySequence("Ctrl+W"))
        self.close_editor_action.triggered.connect(self._close_current)
        for action in (self.edit_kernel_action, self.compile_action, self.reset_action, self.close_editor_action):
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        # A focused text editor takes Undo/Redo first (it accepts the shortcut override); these window-level
        # actions reach the current kernel editor when the focus is elsewhere.
        w.addActions([self.edit_kernel_action, self.compile_action, self.undo_action, self.redo_action,
                      self.close_editor_action])

    def fill_edit_menu(self, menu) -> None:
        first = menu.actions()[0] if menu.actions() else None
        for action in (self.undo_action, self.redo_action, None, self.find_action, self.replace_action, None,
                       self.edit_kernel_action, self.compile_action, self.reset_action, self.close_editor_action,
                       self.show_composed_action, None):
            if action is None:
                menu.insertSeparator(first) if first else menu.addSeparator()
            elif first is not None:
                menu.insertAction(first, action)
            else:
                menu.addAction(action)

    def _target(self) -> QWidget | None:
        """The editor (kernel or composed) holding the focus, else the current kernel editor."""
        focus = QApplication.focusWidget()
        while focus is not None:
            if isinstance(focus, (KernelEditor, ComposedPane)):
                return focus
            focus = focus.parentWidget()
        return self.panel.current_editor()

    def _editor_call(self, name: str) -> None:
        target = self._target()
        if isinstance(target, KernelEditor):
            getattr(target.editor, name)()

    def _find(self, replace: bool) -> None:
        target = self._target()
        if target is not None:
            target.open_find(replace)

    def _compile_current(self) -> None:
        editor = self.panel.current_editor()
        if editor is not None:
            self.panel.toggle_compile(editor.kernel_id)

    def _reset_current(self) -> None:
        editor = self.panel.current_editor()
        if editor is not None:
            self.panel.reset_kernel(editor.kernel_id)

    def _close_current(self) -> None:
        editor = self.panel.current_editor()
        if editor is not None:
            self.panel.close_kernel(editor.kernel_id)

    # ---- wiring --------------------------------------------------------------------------------------------
    def _connect(self) -> None:
        w, ws = self.window, self.workspace
        w.session.sourceLoaded.connect(ws.set_model)
        w.session.analysisFinished.connect(lambda analysis: ws.set_decomposition(analysis.decomposition))
        w.session.analysisFailed.connect(lambda _info: ws.analysis_failed())
        ws.composeFinished.connect(self._on_composed)
        ws.cleared.connect(self._on_cleared)
        ws.sourcesLost.connect(self._on_cleared)  # the composed file and its problems go; the editors stay
        ws.sourcesReady.connect(lambda: self.composed_dock.setWindowTitle("Composed"))
        self.panel.problemsChanged.connect(lambda: self.feed.set_group("compile", self.panel.compile_problems()))
        self.panel.currentKernelChanged.connect(self._on_tab_changed)
        w.kernels.tree.itemActivated.connect(self._on_kernel_activated)
        w.kernels.kernelSelected.connect(self._scroll_composed_to)
        w.problems.problemActivated.connect(self._on_problem_activated)
        self.composed.kernelClicked.connect(self._select_kernel)
        self.composed.kernelActivated.connect(lambda kid, line: self.open_editor(kid, line))

    def _on_kernel_activated(self, item: QTreeWidgetItem, _column: int) -> None:
        kid = item.data(0, Qt.ItemDataRole.UserRole)
        if kid:
            self.open_editor(kid)

    def open_editor(self, kernel_id: str, line: int | None = None) -> KernelEditor | None:
        if not kernel_id:
            return None
        editor = self.panel.open_kernel(kernel_id, line)
        if editor is None:
            self.window.status_label.setText(f"{kernel_id}: the kernel sources are still being generated…"
                                             if self.window.session.analysis is not None and
                                             not self.workspace.ready else f"no kernel {kernel_id!r} to edit")
            return None
        self.editors_dock.show()
        self.editors_dock.raise_()
        editor.editor.setFocus()
        return editor

    def show_composed(self) -> None:
        self.composed_dock.show()
        self.composed_dock.raise_()

    def _select_kernel(self, kernel_id: str) -> None:
        if kernel_id and self.window.kernels.selected_id() != kernel_id:
            self.window.kernels.select(kernel_id)

    def _on_tab_changed(self, kernel_id: str) -> None:
        if kernel_id and self.workspace.ready and kernel_id in self.workspace.generated:
            self._select_kernel(kernel_id)

    def _scroll_composed_to(self, kernel_id: str) -> None:
        result = self.workspace.result
        if not kernel_id or result is None or result.composed is None:
            return
        span = result.composed.line_map.get(f"kernel:{kernel_id}")
        if span and not self.composed.view.hasFocus():
            self.composed.view.scroll_to_line_top(span[0])

    def _on_composed(self, result: ComposeResult) -> None:
        colours = {kid: self.window.kernels.colour_index(kid) for kid in self.workspace.kernel_ids()}
        self.composed.set_result(result, colours)
        if result.composed is None:
            return
        self.feed.set_group("purity", self.panel.purity_problems())
        n = sum(d.severity == "error" for d in result.diagnostics)
        self.composed_dock.setWindowTitle(f"Composed ({n} purity error{'s' if n != 1 else ''})" if n else "Composed")

    def _on_cleared(self) -> None:
        self.composed.clear()
        self.feed.clear()
        self.composed_dock.setWindowTitle("Composed")

    def _on_problem_activated(self, problem: Problem) -> None:
        if not isinstance(problem, KernelProblem):
            return
        if problem.kernel and problem.line:
            self.open_editor(problem.kernel, problem.line)
        elif problem.file == COMPOSED_FILE and problem.line:
            self.show_composed()
            self.composed.go_to_line(problem.line)
            self.composed.view.setFocus()

    # ---- for the main window and other features ------------------------------------------------------------
    def composed_text(self) -> str:
        """The composed file as of now, edits included (composed here if the worker's result is not current)."""
        ws = self.workspace
        if not ws.ready:
            return ""
        if ws.result is not None and not ws.composing:
            return ws.result.text
        return compose_file(ws.decomposition, ws.sources(), ws.original).text  # ~10 ms: no purity check

    def place_docks(self) -> None:
        """Kernel Editor in the middle (tabbed with Source), Composed on the right (tabbed with Spec)."""
        w = self.window
        for anchor, dock in ((w.source_dock, self.editors_dock), (w.spec_dock, self.composed_dock)):
            dock.show()
            w.tabifyDockWidget(anchor, dock)
        self._sweeper.sweep_soon()
        w.source_dock.raise_()
        w.spec_dock.raise_()

    def set_theme(self, theme: Theme) -> None:
        self.panel.set_theme(theme)
        self.composed.set_theme(theme)

    def shutdown(self) -> None:
        self.panel.shutdown()
        self.workspace.shutdown()

    @property
    def docks(self) -> list[QDockWidget]:
        return [self.editors_dock, self.composed_dock]
