"""The main window's flows: open, select, bad input, drag-and-drop, reload, recent files, window state."""

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from gui_helpers import ANALYSIS_TIMEOUT_MS, MODELS, wait_for_analysis

from tilestudio.core.render_text import render_text

TRANSFORMER = MODELS / "arch_transformer_encoder_block.py"
SMALL = MODELS / "fused_gemm_bias_relu.py"

SYNTAX_ERROR = "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x)\n        return x\n\n\ndef get_inputs():\n    return [torch.randn(2)]\n"


def test_open_corpus_model_fills_the_kernel_list(qtbot, window):
    window.open_model(str(TRANSFORMER))
    assert window.session.busy and window.busy_bar.isVisibleTo(window)
    assert window.source.toPlainText() == TRANSFORMER.read_text()  # the source shows before the analysis ends
    qtbot.waitUntil(lambda: window.kernels.count() > 0, timeout=ANALYSIS_TIMEOUT_MS)
    dec = window.session.analysis.decomposition
    assert window.kernels.kernel_ids() == [k.id for k in dec.kernels]
    assert window.decomposition.toPlainText().rstrip("\n") == render_text(dec).rstrip("\n")
    assert not window.busy_bar.isVisibleTo(window)
    assert TRANSFORMER.name in window.windowTitle()
    assert window.problems.problems() == [] and window.banner_text() == ""
    assert f"{len(dec.kernels)} kernels" in window.kernel_count_label.text()


def test_selecting_a_kernel_shows_its_spec_and_source_lines(qtbot, window, cached_analysis):
    window.open_model(str(TRANSFORMER))
    qtbot.waitUntil(lambda: window.kernels.count() > 0, timeout=ANALYSIS_TIMEOUT_MS)
    dec = window.session.analysis.decomposition
    kernel = next(k for k in reversed(dec.kernels) if k.source_lines)
    assert window.kernels.select(kernel.id)
    assert window.selected_kernel() == kernel.id
    assert f"KERNEL SPEC: {kernel.id}" in window.spec_text()
    assert window.source.layer_lines("kernel") == sorted(set(kernel.source_lines))
    assert window.source.current_line() == min(kernel.source_lines)
    # the Decomposition pane scrolled to the same kernel
    heading = window.decomposition.find_line(f"KERNEL SPEC: {kernel.id}")
    assert heading is not None and abs(window.decomposition.current_line() - heading) <= 1

    # clicking a source line selects the kernel that covers it
    other = next(k for k in dec.kernels if k.source_lines and k.id != kernel.id
                 and not set(k.source_lines) & set(kernel.source_lines))
    window.source.lineClicked.emit(other.source_lines[0])
    assert window.selected_kernel() == other.id
    assert f"KERNEL SPEC: {other.id}" in window.spec_text()


def test_a_bad_file_becomes_a_problem_and_the_window_keeps_working(qtbot, window, tmp_path):
    bad = tmp_path / "broken_model.py"
    bad.write_text(SYNTAX_ERROR)
    window.open_model(str(bad))
    qtbot.waitUntil(lambda: len(window.problems.problems()) == 1, timeout=ANALYSIS_TIMEOUT_MS)
    problem = window.problems.problems()[0]
    error = window.session.error
    assert problem.severity == "error" and problem.message == error.one_line()
    assert "syntax error" in problem.message and problem.line == 5
    assert error.one_line() in window.banner_text()
    assert error.one_line() in window.status_label.text()
    assert window.kernels.count() == 0
    assert window.source.layer_lines("problem") == [5]

    # clicking the problem jumps the Source pane to its line
    window.source.go_to_line(1)
    item = window.problems.topLevelItem(0)
    qtbot.mouseClick(window.problems.viewport(), Qt.MouseButton.LeftButton,
                     pos=window.problems.visualItemRect(item).center())
    assert window.source.current_line() == 5

    # the app still works: a good model opens, the banner and the problem go away
    window.open_model(str(SMALL))
    qtbot.waitUntil(lambda: window.kernels.count() > 0, timeout=ANALYSIS_TIMEOUT_MS)
    assert window.problems.problems() == [] and window.banner_text() == ""
    assert window.source.layer_lines("problem") == []


def _drag_events(path: str):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(path)])
    enter = QDragEnterEvent(QPoint(200, 200), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    drop = QDropEvent(QPointF(200, 200), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    return mime, enter, drop


def test_dropping_a_model_file_starts_the_analysis(qtbot, window):
    mime, enter, drop = _drag_events(str(SMALL))
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    QApplication.sendEvent(window, drop)
    assert drop.isAccepted()
    assert window.session.path == str(SMALL)
    assert window.session.busy  # analysis started
    qtbot.waitUntil(lambda: window.kernels.count() > 0, timeout=ANALYSIS_TIMEOUT_MS)


def test_dropping_something_that_is_not_a_py_file_is_refused(window, tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    mime, enter, _drop = _drag_events(str(other))
    enter.setAccepted(False)
    QApplication.sendEvent(window, enter)
    assert not enter.isAccepted()
    assert window.session.path is None


def test_reload_reanalyses_and_keeps_the_selected_kernel(qtbot, window, cached_analysis, tmp_path):
    model = tmp_path / TRANSFORMER.name
    model.write_text(TRANSFORMER.read_text())
    window.open_model(str(model))
    qtbot.waitUntil(lambda: window.kernels.count() > 0, timeout=ANALYSIS_TIMEOUT_MS)
    chosen = window.kernels.kernel_ids()[2]
    window.kernels.select(chosen)
    assert window.reload_action.shortcut().toString() == "F5"
    with qtbot.waitSignal(window.session.analysisFinished, timeout=ANALYSIS_TIMEOUT_MS):
        window.reload_action.trigger()
        assert window.session.busy
    assert window.selected_kernel() == chosen
    assert f"KERNEL SPEC: {chosen}" in window.spec_text()


def test_a_newer_open_wins_over_a_slower_older_one(qtbot, window, cached_analysis, tmp_path):
    bad = tmp_path / "broken_model.py"
    bad.write_text(SYNTAX_ERROR)
    window.open_model(str(TRANSFORMER))
    window.open_model(str(bad))  # fails fast, while the transformer is still being analysed
    wait_for_analysis(qtbot, window)
    assert window.session.wait(2 * ANALYSIS_TIMEOUT_MS)
    QApplication.processEvents()
    assert window.session.path == str(bad)
    assert window.kernels.count() == 0 and len(window.problems.problems()) == 1


def test_recent_files_and_window_state_survive_a_restart(qtbot, window, cached_analysis, settings):
    from tilestudio.gui.main_window import MainWindow

    window.open_model(str(SMALL))
    wait_for_analysis(qtbot, window)
    window.open_model(str(TRANSFORMER))
    wait_for_analysis(qtbot, window)
    assert window.recent_files()[:2] == [str(TRANSFORMER), str(SMALL)]
    window.resize(760, 540)  # within the offscreen screen (800×600): restoreGeometry clamps to it
    window.problems_dock.hide()
    window.close()

    again = MainWindow(settings)
    qtbot.addWidget(again)
    try:
        assert again.recent_files()[:2] == [str(TRANSFORMER), str(SMALL)]
        assert (again.width(), again.height()) == (760, 540)
        again.show()
        assert again.problems_dock.isHidden()
        assert not again.banner_bar.isVisibleTo(again)
        again._fill_recent_menu()
        labels = [a.text() for a in again.recent_menu.actions()]
        assert any(TRANSFORMER.name in label for label in labels)
    finally:
        again.close()


def test_shortcuts_menus_and_about(qtbot, window):
    from PySide6.QtGui import QKeySequence

    from tilestudio.gui.about import about_html, versions

    assert window.open_action.shortcut() == QKeySequence(QKeySequence.StandardKey.Open)
    assert window.quit_action.shortcut().toString() == "Ctrl+Q"
    info = versions()
    assert {"TileStudio", "PyTorch", "PySide6", "cuda.tile"} <= set(info)
    assert info["TileStudio"] in about_html()
    assert not window.windowIcon().isNull()
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles == ["&File", "&Edit", "&View", "&Run", "&Help"]


def test_switching_theme_recolours_without_losing_the_analysis(qtbot, window, cached_analysis):
    window.open_model(str(SMALL))
    qtbot.waitUntil(lambda: window.kernels.count() > 0, timeout=ANALYSIS_TIMEOUT_MS)
    selected = window.selected_kernel()
    window.set_theme("light")
    assert window.theme.name == "light" and window.settings is not None
    assert window.selected_kernel() == selected and window.kernels.count() > 0
    window.set_theme("dark")
    assert QApplication.palette().base().color().name() == "#282c34"


def test_saving_the_model_file_reanalyses_it(qtbot, window, tmp_path, cached_analysis):
    model = tmp_path / SMALL.name
    model.write_text(SMALL.read_text())
    window.open_model(str(model))
    wait_for_analysis(qtbot, window)
    with qtbot.waitSignal(window.session.analysisStarted, timeout=10_000):
        model.write_text(SMALL.read_text())  # what an editor's save does
    wait_for_analysis(qtbot, window)
    assert window.kernels.count() > 0
