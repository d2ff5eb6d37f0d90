"""Kernel editors, the composed pane, live purity, export, project files and crash recovery (pytest-qt)."""

import os
import shutil
import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication

from editor_helpers import PURITY_TIMEOUT_MS, insert_line, launch_body_line, wait_for_composition
from gui_helpers import ANALYSIS_TIMEOUT_MS, MODELS, wait_for_analysis

from tilestudio.core.composer import compose_file
from tilestudio.core.kernels import generate_kernel
from tilestudio.core.project import load_project, read_recovery, recovery_path
from tilestudio.gui.editors_problems import KernelProblem
from tilestudio.gui.editors_workspace import code_offsets
from tilestudio.gui.project_controller import ProjectController

TRANSFORMER = MODELS / "arch_transformer_encoder_block.py"
SMALL = MODELS / "fused_gemm_bias_relu.py"
RELU = "    x = F.relu(x)"


@pytest.fixture(autouse=True)
def editing_settings(settings, tmp_path, monkeypatch):
    """Recovery files in the test's folder, a quick autosave, and no modal question unless a test asks for one."""
    settings.setValue("project/recoveryDir", str(tmp_path / "recovery"))
    settings.setValue("project/autosaveMs", 150)
    monkeypatch.setattr(ProjectController, "ask_save_changes", lambda self, reason: "discard")
    monkeypatch.setattr(ProjectController, "ask_restore", lambda self, recovered: False)
    return settings


def open_small(qtbot, window, path=SMALL):
    window.open_model(str(path))
    wait_for_analysis(qtbot, window)
    wait_for_composition(qtbot, window)
    return window.session.analysis.decomposition


def double_click_kernel(qtbot, window, kernel_id):
    tree = window.kernels.tree
    item = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                if tree.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole) == kernel_id)
    rect = tree.visualItemRect(item)
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # a double click starts so
    qtbot.mouseDClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    return window.editors.editor(kernel_id)


def test_open_a_model_then_edit_its_kernels(qtbot, window, cached_analysis):
    dec = open_small(qtbot, window, TRANSFORMER)
    kernel = dec.kernels[1]
    editor = double_click_kernel(qtbot, window, kernel.id)
    assert editor is not None and window.editors.current_editor() is editor
    assert editor.code() == generate_kernel(kernel).code
    assert f"KERNEL SPEC: {kernel.id}" in editor.spec_view.toPlainText()
    assert "PyTorch Reference" not in editor.spec_view.toPlainText()  # it has its own view
    assert editor.reference_view.toPlainText().strip() == kernel.reference.strip()
    assert editor.reference_view.isReadOnly() and editor.spec_view.isReadOnly() and not editor.editor.isReadOnly()
    assert editor.splitter.count() == 2 and window.editing.editors_dock.isVisible()
    assert "pure" in editor.purity_label.text()

    # the same kernel opens once; the menu action opens the selected one
    assert window.open_editor(kernel.id) is editor and window.editors.tabs.count() == 1
    window.kernels.select(dec.kernels[0].id)
    window.editing.edit_kernel_action.trigger()
    assert window.editors.tabs.count() == 2 and window.editors.current_editor().kernel_id == dec.kernels[0].id
    assert window.selected_kernel() == dec.kernels[0].id

    # the composed pane shows exactly the composed file, each kernel's section tinted
    sources = {k.id: generate_kernel(k) for k in dec.kernels}
    expected = compose_file(dec, sources, TRANSFORMER.read_text())
    assert window.composed.text() == expected.text == window.composed.view.toPlainText()
    first, last = expected.line_map[f"kernel:{kernel.id}"]
    tinted = set(window.composed.view.tinted_lines())
    assert set(range(first, last + 1)) <= tinted and expected.line_map["composed"][0] not in tinted
    window.editing.show_composed()
    window.composed.view.scroll_to_line_top(first)
    qtbot.waitUntil(lambda: first in window.composed.view.layer_lines("sections"), timeout=1000)
    drawn = window.composed.view.layer_lines("sections")  # only the visible lines carry a decoration
    assert drawn and set(drawn) <= tinted and len(drawn) < len(tinted)
    assert window.composed.view.diagnostics() == [] and "pure" in window.composed.status.text()


def test_a_torch_call_in_a_launch_wrapper_is_underlined_live_and_undo_clears_it(qtbot, window, cached_analysis):
    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    line = launch_body_line(editor.code(), kid)
    start = time.perf_counter()
    insert_line(editor, line, RELU)
    qtbot.waitUntil(lambda: editor.editor.underlined_lines() == [line], timeout=PURITY_TIMEOUT_MS)
    assert time.perf_counter() - start < 1.0
    assert window.workspace.helper_running and window.workspace.helper_error == ""  # not the thread fallback
    assert window.workspace.is_edited(kid) and window.editors.tabs.tabText(0).endswith("●")

    # underline on the call itself, a gutter marker in the error colour, a tooltip with rule, message and hint
    (diag,) = editor.editor.diagnostics("purity")
    assert diag.rule == "PUR002" and "F.relu" in diag.message
    assert editor.code().split("\n")[line - 1][diag.column - 1:diag.end_column - 1] == "F.relu(x)"
    assert editor.editor.diagnostic_marks()[line].name() == editor.editor.error_colour.name()
    tip = editor.editor.tooltip_for_line(line)
    assert "PUR002" in tip and "F.relu" in tip and "hint:" in tip
    assert "1 purity error" in editor.purity_label.text()

    # the composed pane underlines the same call at its line in the file, and the problem is listed
    result = window.workspace.result
    composed_line = result.composed_line(kid, line)
    assert window.composed.text().split("\n")[composed_line - 1] == RELU
    assert window.composed.view.underlined_lines() == [composed_line]
    problems = [p for p in window.problems.problems() if isinstance(p, KernelProblem)]
    assert [(p.kernel, p.line, p.rule) for p in problems] == [(kid, line, "PUR002")]
    assert "Problems (1)" == window.problems_dock.windowTitle()

    # clicking the problem opens the editor at the line
    editor.editor.go_to_line(1)
    item = window.problems.topLevelItem(0)
    qtbot.mouseClick(window.problems.viewport(), Qt.MouseButton.LeftButton,
                     pos=window.problems.visualItemRect(item).center())
    assert editor.editor.current_line() == line

    # undo: the edit, the underline, the marker and the problem are gone
    editor.editor.undo()
    qtbot.waitUntil(lambda: editor.editor.underlined_lines() == [], timeout=PURITY_TIMEOUT_MS)
    qtbot.waitUntil(lambda: not any(isinstance(p, KernelProblem) for p in window.problems.problems()),
                    timeout=PURITY_TIMEOUT_MS)
    assert not window.workspace.is_edited(kid) and editor.editor.diagnostic_marks() == {}
    assert window.composed.view.underlined_lines() == [] and not window.editors.tabs.tabText(0).endswith("●")


def test_typing_never_waits_for_the_purity_check(qtbot, window, cached_analysis):
    dec = open_small(qtbot, window, TRANSFORMER)
    kid = dec.kernels[-1].id
    editor = window.open_editor(kid)
    line = launch_body_line(editor.code(), kid)
    original = editor.code()
    attempts = []
    # A purity check run on the GUI thread would stall a keystroke on every attempt; a stall from the machine's
    # load (a parallel test, a GC pause) does not repeat, so the best of three attempts is what is asserted.
    for _ in range(3):
        editor.editor.go_to_line(line)
        slowest = 0.0
        for ch in "    y = torch.relu(x)\n":
            start = time.perf_counter()
            qtbot.keyClicks(editor.editor, ch) if ch != "\n" else qtbot.keyClick(editor.editor, Qt.Key.Key_Return)
            QApplication.processEvents()
            slowest = max(slowest, time.perf_counter() - start)
        attempts.append(slowest)
        if slowest < 0.1:
            break
        editor.replace_code(original, undoable=False)
    assert min(attempts) < 0.1, f"the slowest keystroke took {[round(t * 1000) for t in attempts]} ms per attempt"
    qtbot.waitUntil(lambda: any(d.rule == "PUR003" for d in editor.editor.diagnostics("purity")),
                    timeout=PURITY_TIMEOUT_MS)


def test_section_offsets_follow_the_banner_header_exactly(qtbot, window, cached_analysis):
    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    src = generate_kernel(dec.kernels[0])
    for code in (src.code, "\n\n" + src.code + "\n\n\n"):  # the composer strips leading and trailing newlines
        composed = compose_file(dec, {kid: src.model_copy(update={"code": code})}, SMALL.read_text())
        offset = code_offsets(composed, {kid: code})[kid]
        lines, code_lines = composed.text.split("\n"), code.split("\n")
        first, last = composed.line_map[f"kernel:{kid}"]
        leading = len(code) - len(code.lstrip("\n"))
        body = code.strip("\n").split("\n")
        for editor_line in range(leading + 1, leading + len(body) + 1):
            assert lines[editor_line + offset - 1] == code_lines[editor_line - 1]
        code_start = leading + 1 + offset  # the composed line of the code's first line
        header = lines[first - 1:code_start - 1]
        assert len(header) in (5, 6) and all(h.startswith("#") for h in header)
        assert code_start + len(body) - 1 == last


def test_find_replace_and_reset_to_generated_are_undoable(qtbot, window, cached_analysis):
    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    generated = editor.code()
    editor.editor.setFocus()
    qtbot.keySequence(editor.editor, QKeySequence("Ctrl+H"))
    bar = editor.find_bar
    assert bar.isVisible() and bar.replace_row.isVisible()
    qtbot.keyClicks(bar.find_field, "pid")
    assert editor.editor.textCursor().selectedText() == "pid"
    qtbot.waitUntil(lambda: bar.count_label.text() == f"{generated.count('pid')} matches", timeout=1000)
    assert len(editor.editor._layers.get("find", [])) == generated.count("pid")  # every match highlighted
    bar.replace_field.setText("block_id")
    n = bar.replace_all()
    assert n == generated.count("pid") and "pid" not in editor.code()
    qtbot.keyClick(bar.find_field, Qt.Key.Key_Escape)
    assert not bar.isVisible()
    editor.editor.undo()  # Replace All is one step
    assert editor.code() == generated

    editor.replace_code(generated.replace("ct.mma(", "ct.mma( "))
    qtbot.waitUntil(lambda: window.workspace.is_edited(kid), timeout=1000)
    edited = editor.code()
    editor.reset_action.trigger()
    assert editor.code() == generated and not window.workspace.is_edited(kid)
    editor.editor.undo()
    assert editor.code() == edited and window.workspace.is_edited(kid)


def test_export_writes_the_composed_text_and_asks_when_purity_errors_remain(qtbot, window, cached_analysis,
                                                                           tmp_path, monkeypatch):
    dec = open_small(qtbot, window)
    out = tmp_path / "out" / "model_cutile.py"
    out.parent.mkdir()
    monkeypatch.setattr(ProjectController, "ask_export_path", lambda self: str(out))
    asked = []
    monkeypatch.setattr(ProjectController, "ask_export_despite_errors",
                        lambda self, errors: asked.append(errors) or answer[0])
    answer = [False]
    assert window.project.export_action.shortcut().toString() == "Ctrl+E"
    window.project.export_action.trigger()
    assert out.read_bytes().decode("utf-8") == window.composed.text() and not asked

    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    insert_line(editor, launch_body_line(editor.code(), kid), RELU)
    wait_for_composition(qtbot, window)
    before = out.read_text()
    assert window.project.export() is None  # the user said no
    assert len(asked) == 1 and asked[0][0].rule == "PUR002" and out.read_text() == before
    answer[0] = True
    assert window.project.export() == str(out)
    assert out.read_bytes().decode("utf-8") == window.composed.text() and RELU in out.read_text()

    # the diff is against the last export
    editor.editor.undo()
    wait_for_composition(qtbot, window)
    window.composed.diff_action.setChecked(True)
    diff = window.composed.diff_view.toPlainText()
    assert f"-{RELU}" in diff and diff.startswith("--- last export")
    assert window.composed.diff_view.isVisible() and "changed line" in window.composed.status.text()
    window.composed.diff_action.setChecked(False)
    assert window.composed.view.isVisible()


def test_export_while_composing_waits_for_the_latest_text(qtbot, window, cached_analysis, tmp_path, monkeypatch):
    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    out = tmp_path / "late.py"
    monkeypatch.setattr(ProjectController, "ask_export_despite_errors", lambda self, errors: True)
    editor = window.open_editor(kid)
    insert_line(editor, launch_body_line(editor.code(), kid), "    # a comment typed just before exporting")
    assert window.workspace.composing
    assert window.project.export(str(out)) is None  # deferred
    qtbot.waitUntil(out.exists, timeout=2000)
    assert "# a comment typed just before exporting" in out.read_text() and out.read_text() == window.composed.text()


def test_project_save_and_reopen_restores_the_edits(qtbot, window, cached_analysis, settings, tmp_path,
                                                    monkeypatch):
    from tilestudio.gui.main_window import MainWindow

    model = tmp_path / SMALL.name
    model.write_text(SMALL.read_text())
    dec = open_small(qtbot, window, model)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    insert_line(editor, launch_body_line(editor.code(), kid), "    # my tuned launch")
    edited = editor.code()
    qtbot.waitUntil(lambda: window.project.dirty, timeout=1000)
    assert window.isWindowModified()
    project_file = tmp_path / "demo.tstudio"
    monkeypatch.setattr(ProjectController, "ask_project_save_path", lambda self: str(project_file))
    window.project.save_action.trigger()
    assert project_file.exists() and not window.project.dirty and not window.isWindowModified()
    saved = load_project(str(project_file))
    assert saved.edits == {kid: edited} and saved.model_sha256 and saved.settings.arch == "sm_90"
    assert "demo" in window.windowTitle()

    again = MainWindow(settings)
    qtbot.addWidget(again)
    try:
        again.show()
        assert again.project.open_project(str(project_file))
        wait_for_analysis(qtbot, again)
        wait_for_composition(qtbot, again)
        assert again.workspace.edits == {kid: edited} and not again.project.dirty
        assert "# my tuned launch" in again.composed.text()
        assert again.open_editor(kid).code() == edited
        assert again.editors.tabs.tabText(0).endswith("●")
    finally:
        again.close()
        assert again.workspace.pool.activeThreadCount() == 0


def test_a_changed_model_keeps_the_project_edits_and_says_so(qtbot, window, cached_analysis, tmp_path,
                                                              monkeypatch):
    model = tmp_path / SMALL.name
    model.write_text(SMALL.read_text())
    dec = open_small(qtbot, window, model)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    insert_line(editor, launch_body_line(editor.code(), kid), "    # keep me")
    qtbot.waitUntil(lambda: window.project.dirty, timeout=1000)
    project_file = window.project.save(str(tmp_path / "p.tstudio"))
    edited = editor.code()
    window.open_model(str(MODELS / "fused_elementwise_chain.py"))  # another model; nothing unsaved
    wait_for_composition(qtbot, window)
    model.write_text(SMALL.read_text() + "\n# a comment added later\n")

    assert window.project.open_project(project_file)
    wait_for_analysis(qtbot, window)
    wait_for_composition(qtbot, window)
    assert window.workspace.edits == {kid: edited}
    assert "changed since the project was saved" in window.banner_text()
    assert "kept" in window.banner_text()


def test_unsaved_edits_are_not_dropped_on_close_or_open(qtbot, window, cached_analysis, monkeypatch):
    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    insert_line(editor, launch_body_line(editor.code(), kid), "    # unsaved")
    qtbot.waitUntil(lambda: window.project.dirty, timeout=1000)
    reasons = []
    monkeypatch.setattr(ProjectController, "ask_save_changes", lambda self, reason: reasons.append(reason) or "cancel")
    window.open_model(str(TRANSFORMER))
    assert window.session.path == str(SMALL) and window.workspace.is_edited(kid) and "TRANSFORMER" not in reasons
    assert not window.close() and window.isVisible()
    assert len(reasons) == 2 and "closing" in reasons[1]
    # reloading the same model keeps the edits without asking
    with qtbot.waitSignal(window.workspace.sourcesReady, timeout=ANALYSIS_TIMEOUT_MS):
        window.reload_action.trigger()
    assert window.workspace.is_edited(kid) and "# unsaved" in window.editors.editor(kid).code()
    assert len(reasons) == 2
    monkeypatch.setattr(ProjectController, "ask_save_changes", lambda self, reason: "discard")


def test_a_crash_leaves_a_recovery_file_that_is_offered_on_the_next_start(qtbot, window, cached_analysis, settings,
                                                                          tmp_path, monkeypatch):
    from tilestudio.gui.main_window import MainWindow

    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    insert_line(editor, launch_body_line(editor.code(), kid), "    # autosaved")
    edited = editor.code()
    folder = str(tmp_path / "recovery")
    qtbot.waitUntil(lambda: read_recovery(folder, str(SMALL)) is not None, timeout=2000)
    assert read_recovery(folder, str(SMALL)).edits == {kid: edited}
    crash_copy = tmp_path / "left_by_crash"
    shutil.copy(recovery_path(folder, str(SMALL)), crash_copy)
    window.close()  # "discard": a clean close removes the recovery file…
    assert not os.path.exists(recovery_path(folder, str(SMALL)))
    shutil.copy(crash_copy, recovery_path(folder, str(SMALL)))  # …a crash would have left it

    offered = []
    monkeypatch.setattr(ProjectController, "ask_restore", lambda self, recovered: offered.append(recovered) or True)
    again = MainWindow(settings)
    qtbot.addWidget(again)
    try:
        again.show()
        again.open_model(str(SMALL))
        qtbot.waitUntil(lambda: again.workspace.edits == {kid: edited}, timeout=ANALYSIS_TIMEOUT_MS)
        assert len(offered) == 1 and again.project.dirty
        assert again.open_editor(kid).code() == edited
        wait_for_composition(qtbot, again)
        assert "# autosaved" in again.composed.text()
    finally:
        again.close()


def test_a_declined_recovery_is_kept_aside(qtbot, window, cached_analysis, tmp_path):
    from tilestudio.core.project import ProjectFile, write_recovery

    folder = str(tmp_path / "recovery")
    write_recovery(folder, ProjectFile(model_path=str(SMALL), edits={"some_kernel": "x = 1\n"}))
    open_small(qtbot, window)
    assert window.workspace.edits == {}
    assert not os.path.exists(recovery_path(folder, str(SMALL)))
    assert os.path.exists(recovery_path(folder, str(SMALL)) + ".declined")


def test_compile_check_reports_errors_inline_and_passes_good_code(qtbot, window, cached_analysis):
    pytest.importorskip("cuda.tile")
    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    code = editor.code()
    bad_line = next(i for i, line in enumerate(code.split("\n"), 1) if "ct.mma(" in line)
    editor.replace_code(code.replace("ct.mma(", "ct.mmaa(", 1))
    with qtbot.waitSignal(window.editors.compileFinished, timeout=120_000) as blocker:
        editor.compile_action.trigger()
        assert window.editors.compile_running(kid) and "compiling for sm_90" in editor.compile_label.text()
    result = blocker.args[0]
    assert not result.ok and result.line == bad_line and "mmaa" in result.message
    assert "✗" in editor.compile_label.text() and f"line {bad_line}" in editor.compile_label.text()
    assert bad_line in editor.editor.underlined_lines("compile")
    compile_problems = [p for p in window.problems.problems() if isinstance(p, KernelProblem)
                        and p.origin == "compile"]
    assert [(p.kernel, p.line) for p in compile_problems] == [(kid, bad_line)]

    editor.editor.undo()  # back to the generated code: the stale verdict and its problem go
    assert editor.editor.underlined_lines("compile") == []
    assert not any(isinstance(p, KernelProblem) and p.origin == "compile" for p in window.problems.problems())
    with qtbot.waitSignal(window.editors.compileFinished, timeout=120_000) as blocker:
        window.editing.compile_action.trigger()
    assert blocker.args[0].ok and "✓ compiles for sm_90" in editor.compile_label.text()


def test_the_edit_menu_and_file_menu_carry_the_editing_actions(window):
    file_texts = [a.text() for a in window._menu("&File").actions()]
    for text in ("Open &Project…", "&Save Project", "Save Project &As…", "&Export Composed File…"):
        assert text in file_texts
    assert window.project.save_action.shortcut() == QKeySequence(QKeySequence.StandardKey.Save)
    assert window.project.save_as_action.shortcut().toString() == "Ctrl+Shift+S"
    edit_texts = [a.text() for a in window._menu("&Edit").actions()]
    assert "&Undo" in edit_texts and "&Edit Kernel" in edit_texts and "&Compile Check Kernel" in edit_texts
    view_texts = [a.text() for a in window._menu("&View").actions()]
    assert "Kernel Editor" in view_texts and "Composed" in view_texts


def test_purity_runs_in_a_helper_process_and_survives_its_death(qtbot, window, cached_analysis):
    dec = open_small(qtbot, window)
    workspace = window.workspace
    assert workspace.helper_running and workspace.helper.process.processId() > 0, workspace.helper_error
    workspace.helper.process.kill()  # the helper dies (OOM killer, a crash): composing moves to a thread
    qtbot.waitUntil(lambda: not workspace.helper_running, timeout=5000)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    line = launch_body_line(editor.code(), kid)
    insert_line(editor, line, RELU)
    qtbot.waitUntil(lambda: editor.editor.underlined_lines() == [line], timeout=3000)
    assert "exited" in workspace.helper_error


def test_switching_theme_recolours_the_editors_and_keeps_the_edits(qtbot, window, cached_analysis):
    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    line = launch_body_line(editor.code(), kid)
    insert_line(editor, line, RELU)
    qtbot.waitUntil(lambda: editor.editor.underlined_lines() == [line], timeout=PURITY_TIMEOUT_MS)
    window.set_theme("light")
    assert editor.highlighter.formats.style.__name__.lower().startswith("default")
    assert editor.editor.error_colour.name() == window.theme.error.lower()
    assert editor.editor.underlined_lines() == [line] and RELU in editor.code()
    qtbot.waitUntil(lambda: any(isinstance(p, KernelProblem) for p in window.problems.problems()), timeout=1000)
    window.set_theme("dark")


def test_a_model_that_stops_analysing_keeps_the_editors_and_their_edits(qtbot, window, cached_analysis, tmp_path):
    model = tmp_path / SMALL.name
    model.write_text(SMALL.read_text())
    dec = open_small(qtbot, window, model)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    insert_line(editor, launch_body_line(editor.code(), kid), "    # still mine")
    edited = editor.code()
    with qtbot.waitSignal(window.session.analysisFailed, timeout=ANALYSIS_TIMEOUT_MS):
        model.write_text(SMALL.read_text().replace("def forward(self, x):", "def forward(self, x)"))
    assert window.editors.editor(kid) is editor and editor.code() == edited
    assert not editor.in_model and "analysis failed" in editor.purity_label.text()
    assert window.workspace.edits == {kid: edited} and window.composed.text() == ""
    with qtbot.waitSignal(window.workspace.sourcesReady, timeout=ANALYSIS_TIMEOUT_MS):
        model.write_text(SMALL.read_text())
    wait_for_composition(qtbot, window)
    assert editor.in_model and "# still mine" in window.composed.text()
    editor.editor.undo()  # the undo history survived
    qtbot.waitUntil(lambda: not window.workspace.is_edited(kid), timeout=1000)
