"""The main window: dockable panes around one open model, fed by a ModelSession.

Panes: Source (the model file, read-only), Kernels (the kernel specs), Spec (the selected kernel), Decomposition
(the whole text), Problems (errors and warnings). Selecting a kernel colours its source lines; clicking a source line
selects the kernel that covers it; activating a problem jumps to its line.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, Qt, QTimer
from PySide6.QtGui import (QAction, QActionGroup, QCloseEvent, QColor, QDragEnterEvent, QDragMoveEvent, QDropEvent,
                           QKeySequence)
from PySide6.QtWidgets import (QApplication, QDockWidget, QFileDialog, QLabel, QMainWindow, QMenu, QProgressBar,
                               QStyle, QToolBar, QWidget)

from tilestudio.core.analyze import Analysis
from tilestudio.core.errors import ErrorInfo
from tilestudio.core.render_text import render_kernel, render_text
from tilestudio.core.specs import Decomposition

from .about import show_about
from .banner import Banner
from .code_editor import CodeEditor
from .graph_view import GraphPane
from .editors_text import DeferredHighlighter, DeferredSpecHighlighter
from .highlighter import SpecHighlighter
from .kernels_pane import KernelsPane
from .model_pane import ModelPane
from .problems_pane import Problem, ProblemsPane, problems_from_decomposition
from .resources import app_icon, resource_path
from .session import ModelSession
from .settings_dialog import AppSettings, edit_settings
from .theme import DARK, THEMES, Theme, apply_theme
from .validation_pane import ValidationPane

STATE_VERSION = 2  # bump when docks are added or renamed, so an old saved layout is not half-applied
MAX_RECENT = 10
SOURCE_PLACEHOLDER = ("Drop a PyTorch model file (.py) here, or use File ▸ Open (Ctrl+O).\n\n"
                      "A model file defines class Model(nn.Module), get_inputs() and get_init_inputs().")


class MainWindow(QMainWindow):
    def __init__(self, settings: QSettings | None = None, *, session: ModelSession | None = None,
                 restore_state: bool = True, parent: QWidget | None = None):
        super().__init__(parent)
        self.settings = settings if settings is not None else QSettings()
        self.theme: Theme = THEMES.get(str(self.settings.value("view/theme", DARK.name)), DARK)
        self.session = session or ModelSession(self)
        self.setWindowTitle("TileStudio")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self.setDockNestingEnabled(True)
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowNestedDocks
                            | QMainWindow.DockOption.AllowTabbedDocks)
        # Every pane is a dock; the (empty) central widget only anchors them.
        central = QWidget()
        central.setMaximumSize(0, 0)
        self.setCentralWidget(central)
        central.hide()
        self._selected_kernel = ""  # kept across reloads, so F5 lands on the same kernel
        self._source_click_in_progress = False  # a click in Source selected the kernel: do not scroll Source
        self._build_panes()
        self._build_actions()
        self._build_menus()
        self._build_status_bar()
        self._connect_session()
        self._install_graph_view()
        self._install_validation()
        self._install_settings()
        self._install_editing()
        self._default_layout()
        self._needs_default_sizes = True
        if restore_state:
            self.restore_window_state()
        self._apply_theme(self.theme)

    # ---- construction --------------------------------------------------------------------------------------
    def _dock(self, title: str, name: str, widget: QWidget) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetClosable
                         | QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
        return dock

    def _build_panes(self) -> None:
        self.source = CodeEditor(read_only=True)
        self.source.setPlaceholderText(SOURCE_PLACEHOLDER)
        # A whole new text is highlighted a few lines per event-loop turn (gui/editors_text.py), not in one go.
        self.source_highlighter = DeferredHighlighter(self.source.document(), self.theme.pygments_style)
        self.kernels = KernelsPane(self.theme)
        self.kernels.filter.setAcceptDrops(False)
        self.spec = CodeEditor(read_only=True, line_numbers=False)
        self.spec.setPlaceholderText("Select a kernel to see its spec.")
        self.spec.setLineWrapMode(CodeEditor.LineWrapMode.WidgetWidth)
        self.spec_highlighter = SpecHighlighter(self.spec.document(), self.theme.pygments_style)
        self.decomposition = CodeEditor(read_only=True, line_numbers=False)
        self.decomposition.setPlaceholderText("The decomposition of the open model appears here.")
        self.decomposition_highlighter = DeferredSpecHighlighter(self.decomposition.document(),
                                                                 self.theme.pygments_style)
        self.problems = ProblemsPane()
        self.model_pane = ModelPane()
        self.banner = Banner(self.theme)

        self.source_dock = self._dock("Source", "sourceDock", self.source)
        self.kernels_dock = self._dock("Kernels", "kernelsDock", self.kernels)
        self.spec_dock = self._dock("Spec", "specDock", self.spec)
        self.decomposition_dock = self._dock("Decomposition", "decompositionDock", self.decomposition)
        self.problems_dock = self._dock("Problems", "problemsDock", self.problems)
        self.model_dock = self._dock("Model", "modelDock", self.model_pane)
        self.docks = [self.kernels_dock, self.source_dock, self.spec_dock, self.decomposition_dock,
                      self.problems_dock, self.model_dock]

        self.kernels.kernelSelected.connect(self._show_kernel)
        self.source.lineClicked.connect(self._on_source_line_clicked)
        self.problems.problemActivated.connect(self._on_problem_activated)
        self.banner.detailsRequested.connect(self._reveal_first_problem)

    def _build_actions(self) -> None:
        style = self.style()
        self.open_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_DialogOpenButton), "&Open…", self)
        self.open_action.setShortcut(QKeySequence.StandardKey.Open)
        self.open_action.setStatusTip("Open a PyTorch model file")
        self.open_action.triggered.connect(self.choose_model)
        self.reload_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_BrowserReload), "&Reload", self)
        self.reload_action.setShortcut(QKeySequence(Qt.Key.Key_F5))
        self.reload_action.setStatusTip("Analyse the model file again")
        self.reload_action.setEnabled(False)
        self.reload_action.triggered.connect(self.session.reload)
        self.example_action = QAction("Open &Example Model", self)
        self.example_action.triggered.connect(self.open_example)
        self.example_action.setEnabled(resource_path("examples", "transformer_block.py") is not None)
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setShortcut(QKeySequence("Ctrl+Q"))
        self.quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        self.quit_action.triggered.connect(self.close)
        self.about_action = QAction("&About TileStudio", self)
        self.about_action.setMenuRole(QAction.MenuRole.AboutRole)
        self.about_action.triggered.connect(lambda: show_about(self))
        self.reset_layout_action = QAction("&Reset Layout", self)
        self.reset_layout_action.triggered.connect(self.reset_layout)
        self.addActions([self.open_action, self.reload_action, self.quit_action])

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addAction(self.example_action)
        file_menu.addSeparator()
        file_menu.addAction(self.reload_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)

        view_menu = bar.addMenu("&View")
        for dock in self.docks:
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        theme_menu = view_menu.addMenu("&Theme")
        group = QActionGroup(self)
        self.theme_actions: dict[str, QAction] = {}
        for name in THEMES:
            action = theme_menu.addAction(name.capitalize())
            action.setCheckable(True)
            action.setChecked(name == self.theme.name)
            action.triggered.connect(lambda _checked=False, n=name: self.set_theme(n))
            group.addAction(action)
            self.theme_actions[name] = action
        view_menu.addAction(self.reset_layout_action)

        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.about_action)
        help_menu.addAction("About &Qt", QApplication.aboutQt)

        toolbar = QToolBar("Main", self)
        toolbar.setObjectName("mainToolBar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toolbar.addAction(self.open_action)
        toolbar.addAction(self.reload_action)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, toolbar)
        self.addToolBarBreak(Qt.ToolBarArea.TopToolBarArea)
        self.banner_bar = QToolBar("Messages", self)
        self.banner_bar.setObjectName("bannerBar")
        self.banner_bar.setMovable(False)
        self.banner_bar.setFloatable(False)
        self.banner_bar.toggleViewAction().setVisible(False)
        self.banner_bar.setStyleSheet("QToolBar { padding: 0; margin: 0; spacing: 0; }")
        self.banner_bar.addWidget(self.banner)
        self.banner_bar.hide()
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.banner_bar)
        self.banner.dismissed.connect(self.banner_bar.hide)

    def _build_status_bar(self) -> None:
        status = self.statusBar()
        self.status_label = QLabel("Ready: open a model file (Ctrl+O) or drop one on the window.")
        self.kernel_count_label = QLabel()
        self.busy_bar = QProgressBar()
        self.busy_bar.setRange(0, 0)  # indeterminate: the child process reports no progress
        self.busy_bar.setMaximumWidth(160)
        self.busy_bar.setMaximumHeight(14)
        self.busy_bar.setTextVisible(False)
        self.busy_bar.hide()
        status.addWidget(self.status_label, 1)
        status.addPermanentWidget(self.kernel_count_label)
        status.addPermanentWidget(self.busy_bar)

    def _connect_session(self) -> None:
        s = self.session
        self._analysis_ticket = 0  # bumped by every analysis result: deferred pane fills of an older one are dropped
        s.analysisStarted.connect(self._bump_ticket)
        s.analysisFinished.connect(self._bump_ticket)
        s.analysisFailed.connect(self._bump_ticket)
        s.sourceLoaded.connect(self._on_source_loaded)
        s.analysisStarted.connect(self._on_analysis_started)
        s.analysisFinished.connect(self._on_analysis_finished)
        s.analysisFailed.connect(self._on_analysis_failed)
        s.busyChanged.connect(self._on_busy_changed)

    def _bump_ticket(self, *_args) -> None:
        self._analysis_ticket += 1

    # ---- layout and window state ---------------------------------------------------------------------------
    def _default_layout(self) -> None:
        for dock in self.docks:
            self.removeDockWidget(dock)
        self.setCorner(Qt.Corner.TopRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.setCorner(Qt.Corner.TopLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.BottomDockWidgetArea)
        # Kernels over Problems/Model | Source | Spec/Decomposition. With the central widget hidden, a separate
        # bottom area would take all the spare height, so Problems is split under Kernels instead.
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.kernels_dock)
        self.splitDockWidget(self.kernels_dock, self.source_dock, Qt.Orientation.Horizontal)
        self.splitDockWidget(self.kernels_dock, self.problems_dock, Qt.Orientation.Vertical)
        self.tabifyDockWidget(self.problems_dock, self.model_dock)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.spec_dock)
        self.tabifyDockWidget(self.spec_dock, self.decomposition_dock)
        for dock in self.docks:
            dock.show()
        self.spec_dock.raise_()
        self.problems_dock.raise_()
        self._place_graph_and_validation()
        self.editing.place_docks()

    def apply_default_sizes(self) -> None:
        """Share the width between kernels, source and spec, and keep Problems short."""
        width = max(self.width(), 900)
        kernels, spec = int(width * 0.26), int(width * 0.30)
        self.resizeDocks([self.kernels_dock, self.source_dock, self.spec_dock],
                         [kernels, width - kernels - spec, spec], Qt.Orientation.Horizontal)
        problems = max(160, int(self.height() * 0.38))
        self.resizeDocks([self.kernels_dock, self.problems_dock], [self.height() - problems, problems],
                         Qt.Orientation.Vertical)

    def reset_layout(self) -> None:
        self._default_layout()
        self.apply_default_sizes()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self._needs_default_sizes:
            self._needs_default_sizes = False
            QTimer.singleShot(0, self.apply_default_sizes)

    def restore_window_state(self) -> None:
        geometry = self.settings.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1440, 900)
        state = self.settings.value("window/state")
        if isinstance(state, QByteArray) and not state.isEmpty() and self.restoreState(state, STATE_VERSION):
            self._needs_default_sizes = False
        self.banner_bar.hide()  # a banner belongs to the run that showed it

    def save_window_state(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState(STATE_VERSION))
        self.settings.setValue("view/theme", self.theme.name)
        self.settings.sync()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt API)
        self.save_window_state()
        self.session.shutdown()
        super().closeEvent(event)

    def createPopupMenu(self) -> QMenu:  # noqa: N802 (Qt API)
        menu = super().createPopupMenu()
        menu.removeAction(self.banner_bar.toggleViewAction())
        return menu

    # ---- theme ---------------------------------------------------------------------------------------------
    def set_theme(self, name: str) -> None:
        self.theme = THEMES.get(name, DARK)
        self._apply_theme(self.theme)
        self.theme_actions[self.theme.name].setChecked(True)
        if self.session.analysis is not None:
            self._on_analysis_finished(self.session.analysis)
        elif self.session.error is not None:
            self._on_analysis_failed(self.session.error)

    def _apply_theme(self, theme: Theme) -> None:
        app = QApplication.instance()
        if app is not None:
            apply_theme(app, theme)
        for highlighter in (self.source_highlighter, self.spec_highlighter, self.decomposition_highlighter):
            highlighter.set_style(theme.pygments_style)
        self.banner.set_theme(theme)
        self.kernels.theme = theme
        for hook in getattr(self, "theme_hooks", []):
            hook(theme)

    # ---- opening -------------------------------------------------------------------------------------------
    def choose_model(self) -> None:
        start = str(self.settings.value("files/lastDir", os.getcwd()))
        path, _ = QFileDialog.getOpenFileName(self, "Open model", start,
                                              "PyTorch model files (*.py);;All files (*)")
        if path:
            self.open_model(path)

    def open_example(self) -> None:
        path = resource_path("examples", "transformer_block.py")
        if path is not None:
            self.open_model(str(path))

    def open_model(self, path: str) -> None:
        if not self.project.may_open_model(path):  # unsaved kernel edits: ask first
            return
        path = os.path.abspath(path)
        self.settings.setValue("files/lastDir", os.path.dirname(path))
        if os.path.isfile(path):
            self._remember_recent(path)
        self.session.open(path)

    def recent_files(self) -> list[str]:
        value = self.settings.value("files/recent", [])
        if isinstance(value, str):  # QSettings gives a lone string for a one-element list in INI files
            value = [value]
        return [str(v) for v in (value or [])]

    def _remember_recent(self, path: str) -> None:
        recent = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("files/recent", recent[:MAX_RECENT])

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = [p for p in self.recent_files() if os.path.exists(p)]
        for index, path in enumerate(recent):
            label = f"&{index + 1}  {os.path.basename(path)}" if index < 9 else os.path.basename(path)
            action = self.recent_menu.addAction(label)
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _checked=False, p=path: self.open_model(p))
        if not recent:
            self.recent_menu.addAction("(no recent files)").setEnabled(False)
        self.recent_menu.addSeparator()
        self.recent_menu.addAction("Clear Recent Files", lambda: self.settings.setValue("files/recent", []))

    @staticmethod
    def _dropped_model(event: QDragEnterEvent | QDropEvent) -> str | None:
        mime = event.mimeData()
        if not mime.hasUrls():
            return None
        for url in mime.urls():
            if url.isLocalFile() and url.toLocalFile().endswith(".py"):
                return url.toLocalFile()
        return None

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 (Qt API)
        if self._dropped_model(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:  # noqa: N802 (Qt API)
        if self._dropped_model(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 (Qt API)
        path = self._dropped_model(event)
        if path:
            event.acceptProposedAction()
            self.open_model(path)

    # ---- session → panes -----------------------------------------------------------------------------------
    def _on_source_loaded(self, path: str, text: str) -> None:
        name = os.path.basename(path)
        self.setWindowTitle(f"{name} — TileStudio")
        self.setWindowFilePath(path)
        self.source_dock.setWindowTitle(f"Source — {name}")
        self.source_highlighter.restart()
        self.source.set_text(text)
        self.reload_action.setEnabled(True)

    def _on_analysis_started(self, path: str) -> None:
        self.status_label.setText(f"Analysing {os.path.basename(path)}…")
        if self.kernels.count() == 0:
            self.kernels.tree.set_placeholder("Analysing…")
        if not self.problems.problems():
            self.problems.set_placeholder("Analysing…")

    def _on_busy_changed(self, busy: bool) -> None:
        self.busy_bar.setVisible(busy)

    def _on_analysis_finished(self, analysis: Analysis) -> None:
        dec = analysis.decomposition
        self.hide_banner()
        self.kernels.set_decomposition(dec)
        self.decomposition_highlighter.restart()
        self.decomposition.set_text(render_text(dec))
        self.source.clear_layer("problem")
        self.source.set_gutter_marks(self._coverage_marks(dec))
        problems = problems_from_decomposition(dec, self.session.path or "")
        self.problems.set_problems(problems)
        self.problems.set_placeholder("No problems: every op of the forward pass is covered by a kernel spec.")
        self._later(self.model_pane.set_decomposition)(dec)
        (self.problems_dock if problems else self.model_dock).raise_()
        self.problems_dock.setWindowTitle(f"Problems ({len(problems)})" if problems else "Problems")
        n = len(dec.kernels)
        self.kernel_count_label.setText(f"{n} kernel{'s' if n != 1 else ''}")
        self.status_label.setText(f"Analysed {os.path.basename(self.session.path or '')}: {dec.model_class}, "
                                  f"{n} kernels in {len(dec.parallel_groups)} steps, {len(dec.glue)} glue steps "
                                  f"({self.session.seconds:.1f} s)")
        if self._selected_kernel and self.kernels.select(self._selected_kernel):
            return
        if dec.kernels:
            self.kernels.select(dec.kernels[0].id)

    def _later(self, fill):
        """`fill(value)` on the next event-loop turn, unless another analysis result came in meanwhile.

        Filling every pane in the turn that delivers the analysis, then painting them all, kept the GUI thread
        busy for ~100 ms on a loaded 2-core machine; the panes out of the user's first look (graph, model,
        validation rows) are filled a turn later, so the event loop breathes in between.
        """
        def deferred(value) -> None:
            ticket = self._analysis_ticket

            def run() -> None:
                if ticket == self._analysis_ticket:
                    fill(value)
            QTimer.singleShot(0, self, run)
        return deferred

    def _on_analysis_failed(self, info: ErrorInfo) -> None:
        self.kernels.set_decomposition(None)
        self.kernels.tree.set_placeholder("No kernels: the analysis failed (see Problems).")
        self.model_pane.set_decomposition(None)
        self.model_pane.set_placeholder("The analysis failed (see Problems).")
        self.decomposition.set_text("")
        self.spec.set_text("")
        self.source.set_gutter_marks({})
        self.kernel_count_label.setText("")
        problem = Problem.from_error(info)
        self.problems.set_problems([problem])
        self.problems_dock.setWindowTitle("Problems (1)")
        self.problems_dock.raise_()
        line = info.line if info.line and self._is_open_file(info.file) else None
        if line:
            self.source.set_line_layer("problem", {line: self.theme.error_line_colour()},
                                       underline=None, tooltip=info.message)
            self.source.set_gutter_marks({line: QColor(self.theme.error)})
            self.source.go_to_line(line)
        else:
            self.source.clear_layer("problem")
        self.banner.show_message(problem.message)
        self.banner_bar.show()
        self.status_label.setText(problem.message)

    def banner_text(self) -> str:
        """The message the banner shows, or "" when it is hidden."""
        return self.banner.text() if not self.banner_bar.isHidden() else ""

    def hide_banner(self) -> None:
        self.banner_bar.hide()

    def _is_open_file(self, file: str | None) -> bool:
        if not file or not self.session.path:
            return False
        return os.path.abspath(file) == self.session.path

    def _coverage_marks(self, dec: Decomposition) -> dict:
        marks = {}
        for index, k in enumerate(dec.kernels):
            for line in k.source_lines:
                marks.setdefault(line, self.theme.kernel_colour(index))
        return marks

    # ---- selection -----------------------------------------------------------------------------------------
    def _show_kernel(self, kernel_id: str) -> None:
        analysis = self.session.analysis
        if not kernel_id or analysis is None:
            self.spec.set_text("")
            self.spec_dock.setWindowTitle("Spec")
            self.source.clear_layer("kernel")
            return
        self._selected_kernel = kernel_id
        k = analysis.decomposition.kernel(kernel_id)
        self.spec.set_text(render_kernel(k))
        self.spec_dock.setWindowTitle(f"Spec — {k.id}")
        index = self.kernels.colour_index(k.id)
        colour = self.theme.kernel_line_colour(index)
        self.source.set_line_layer("kernel", {line: colour for line in k.source_lines})
        if k.source_lines and not self._source_click_in_progress:
            self.source.go_to_line(min(k.source_lines))
        heading = self.decomposition.find_line(f"KERNEL SPEC: {k.id}")
        if heading:
            self.decomposition.scroll_to_line_top(max(1, heading - 1))

    def _on_source_line_clicked(self, line: int) -> None:
        analysis = self.session.analysis
        if analysis is None:
            return
        covering = [k.id for k in analysis.decomposition.kernels if line in k.source_lines]
        if not covering or self.kernels.selected_id() in covering:
            return
        self._source_click_in_progress = True
        try:
            self.kernels.select(covering[0])
        finally:
            self._source_click_in_progress = False

    def _on_problem_activated(self, problem: Problem) -> None:
        if problem.line and self._is_open_file(problem.file):
            self.source_dock.show()
            self.source_dock.raise_()
            self.source.go_to_line(problem.line)
            self.source.setFocus()

    def _reveal_first_problem(self) -> None:
        self.problems_dock.show()
        self.problems_dock.raise_()
        problems = self.problems.problems()
        if problems:
            self.problems.setCurrentItem(self.problems.topLevelItem(0))
            self._on_problem_activated(problems[0])

    # ---- for tests and the screenshot command ----------------------------------------------------------------
    def selected_kernel(self) -> str:
        return self.kernels.selected_id()

    def spec_text(self) -> str:
        return self.spec.toPlainText()

    def finish_highlighting(self) -> None:
        """Highlight what the progressive highlighters have not reached yet (screenshots, tests)."""
        for highlighter in (self.source_highlighter, self.decomposition_highlighter,
                            getattr(getattr(self, "composed", None), "highlighter", None)):
            if highlighter is not None:
                highlighter.finish()

    # ---- graph, validation, settings -----------------------------------------------------------------------
    def _install_graph_view(self) -> None:
        self.graph_view = GraphPane(self.theme)
        self.graph_dock = self._dock("Graph", "graphDock", self.graph_view)
        self._add_dock_toggles([self.graph_dock])
        self.graph_view.kernelSelected.connect(self.kernels.select)
        self.graph_view.kernelActivated.connect(self._open_kernel_editor)
        self.kernels.kernelSelected.connect(lambda kid: self.graph_view.select(kid) if kid else None)
        self.session.analysisFinished.connect(self._later(lambda analysis: self.graph_view.set_decomposition(
            analysis.decomposition, os.path.splitext(os.path.basename(self.session.path or ""))[0],
            selected=self.kernels.selected_id())))
        self.session.analysisFailed.connect(lambda _info: self.graph_view.set_decomposition(None))
        self._graph_closer = _OnClose(self, lambda: self.graph_view.wait(10_000))

    def _open_kernel_editor(self, kernel_id: str) -> None:
        self.kernels.select(kernel_id)
        opener = getattr(self, "open_editor", None)
        if callable(opener):
            opener(kernel_id)

    def _install_validation(self) -> None:
        self.validation = ValidationPane(self.theme, settings_provider=lambda: AppSettings.load(self.settings))
        self.validation.composed_provider = self._current_composed_text
        self.validation_dock = self._dock("Validation", "validationDock", self.validation)
        self._add_dock_toggles([self.validation_dock])
        self.validation.kernelSelected.connect(lambda kid: self.kernels.select(kid) if kid else None)
        self.validation.runFinished.connect(
            lambda report: self.status_label.setText(f"Validation: {report.status.upper()} ({report.wall_s:.1f} s)"))
        self.session.analysisFinished.connect(self._later(
            lambda analysis: self.validation.set_model(self.session.path, analysis.decomposition)))
        self.session.analysisFailed.connect(lambda _info: self.validation.set_model(None, None))
        self.validate_action = QAction(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaPlay),
                                       "&Validate on GPU", self)
        self.validate_action.setShortcut(QKeySequence("Ctrl+R"))
        self.validate_action.setStatusTip("Run the composed file on this machine's GPU and check every kernel")
        self.validate_action.triggered.connect(self._start_validation)
        self.cancel_validation_action = QAction("&Cancel Validation", self)
        self.cancel_validation_action.setEnabled(False)
        self.cancel_validation_action.triggered.connect(self.validation.cancel)
        self.validation.runningChanged.connect(self.cancel_validation_action.setEnabled)
        self.addActions([self.validate_action, self.cancel_validation_action])
        run_menu = self._menu("&Run")
        run_menu.addAction(self.validate_action)
        run_menu.addAction(self.cancel_validation_action)
        self._validation_closer = _OnClose(self, self.validation.shutdown)

    def _start_validation(self) -> None:
        self.validation_dock.show()
        self.validation_dock.raise_()
        self.validation.run()

    def _sources_ready_for_validation(self) -> None:
        """New kernels: a validation run waiting for them gets the composed text (composed only then)."""
        if self.validation.waiting_for_sources:
            self.validation.composed_ready(self._current_composed_text())

    def _current_composed_text(self) -> str | None:
        """The composed file with the user's edits when the editors have one; None: compose the generated kernels."""
        provider = getattr(self, "composed_text", None)
        if callable(provider):
            return provider() or None
        result = getattr(getattr(self, "workspace", None), "result", None)
        return getattr(result, "text", None) or None

    def _install_settings(self) -> None:
        self.settings_action = QAction("&Settings…", self)
        self.settings_action.setShortcut(QKeySequence("Ctrl+,"))
        self.settings_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.settings_action.setStatusTip("Target architecture, tolerances, timeouts, validation interpreter, theme")
        self.settings_action.triggered.connect(self.open_settings)
        self.addAction(self.settings_action)
        self._menu("&Edit").addAction(self.settings_action)
        self.session.timeout_s = float(AppSettings.load(self.settings).analysis_timeout_s)

    def open_settings(self) -> None:
        values = edit_settings(self, self.settings)
        if values is not None:
            self.apply_settings(values)

    def apply_settings(self, values: AppSettings) -> None:
        self.session.timeout_s = float(values.analysis_timeout_s)
        if values.theme != self.theme.name:
            self.set_theme(values.theme)

    def _menu(self, title: str) -> QMenu:
        """The menu bar's menu with this title, created after the last existing menu but Help when missing."""
        bar = self.menuBar()
        actions = bar.actions()
        for action in actions:
            if action.menu() is not None and action.text().replace("&", "") == title.replace("&", ""):
                return action.menu()
        menu = QMenu(title, self)
        order = ["File", "Edit", "View", "Run", "Help"]
        rank = order.index(title.replace("&", "")) if title.replace("&", "") in order else len(order)
        before = next((a for a in actions if a.text().replace("&", "") in order
                       and order.index(a.text().replace("&", "")) > rank), None)
        if before is not None:
            bar.insertMenu(before, menu)
        else:
            bar.addMenu(menu)
        return menu

    def _add_dock_toggles(self, docks: list[QDockWidget]) -> None:
        self.docks.extend(docks)
        view = self._menu("&View")
        separator = next((a for a in view.actions() if a.isSeparator()), None)
        for dock in docks:
            view.insertAction(separator, dock.toggleViewAction()) if separator else view.addAction(
                dock.toggleViewAction())

    def _place_graph_and_validation(self) -> None:
        """Graph over the Spec/Decomposition tabs on the right; Validation under Source."""
        def split(anchor: QDockWidget, dock: QDockWidget, orientation: Qt.Orientation, before: bool) -> None:
            # splitDockWidget on a tabbed dock would add a tab: lift the tabs off, split, put them back.
            self.layout().activate()  # tab groups are only reported once the layout has been applied
            tabs = self.tabifiedDockWidgets(anchor)
            for d in tabs:
                self.removeDockWidget(d)
            if before:
                area = self.dockWidgetArea(anchor)
                self.removeDockWidget(anchor)
                self.addDockWidget(area, dock)
                self.splitDockWidget(dock, anchor, orientation)
            else:
                self.splitDockWidget(anchor, dock, orientation)
            for d in [anchor, dock, *tabs]:
                d.show()  # tabifying a hidden (removed) dock does nothing
            for d in tabs:
                self.tabifyDockWidget(anchor, d)
            anchor.raise_()

        split(self.spec_dock, self.graph_dock, Qt.Orientation.Vertical, before=True)
        split(self.source_dock, self.validation_dock, Qt.Orientation.Vertical, before=False)

    # ---- kernel editors, composed file, export, projects (gui/editors*.py, composed_pane.py, project_*.py) ----
    def _install_editing(self) -> None:
        from .editors_feature import EditingFeature
        from .kernel_status import KernelStatusTracker
        from .project_controller import ProjectController

        self.editing = EditingFeature(self)
        self.workspace = self.editing.workspace  # the latest composition: self.workspace.result.text
        # a validation started before the helper process has generated the kernels waits for them
        self.validation.compose_waiter = lambda: self.workspace.generating
        self.workspace.sourcesReady.connect(self._sources_ready_for_validation)
        self.workspace.sourcesLost.connect(
            lambda: self.validation.composed_ready(None, "the analysis failed: no kernels to validate"))
        self.workspace.cleared.connect(lambda: self.validation.composed_ready(None, "another model was opened"))
        self.composed = self.editing.composed
        self.editors = self.editing.panel
        self.open_editor = self.editing.open_editor
        self.composed_text = self.editing.composed_text
        self._add_dock_toggles(self.editing.docks)
        self.editing.fill_edit_menu(self._menu("&Edit"))
        self.project = ProjectController(self, self.editing)
        # the graph's node statuses (edited, compiled, PASS/FAIL, impure) follow the editors and the validation
        self.kernel_status = KernelStatusTracker(self.graph_view, self.workspace, self.editors, self.validation,
                                                 self.session, self)
        self.project.fill_file_menu(self._menu("&File"))
        self.theme_hooks = getattr(self, "theme_hooks", []) + [self.editing.set_theme]


class _OnClose(QObject):
    """Runs a callback when the watched window closes (the validation process must not outlive the window)."""

    def __init__(self, window: QWidget, callback):
        super().__init__(window)
        self.callback = callback
        window.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Close:
            self.callback()
        return False
