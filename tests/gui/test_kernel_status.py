"""The Graph pane's node statuses follow the real state: edits, live purity, compile checks, validation results."""

import pytest
from editor_helpers import PURITY_TIMEOUT_MS, insert_line, launch_body_line, wait_for_composition
from gui_helpers import MODELS, wait_for_analysis

from tilestudio.gui.kernel_status import PRECEDENCE, KernelFacts, resolve_status
from tilestudio.gui.project_controller import ProjectController

SMALL = MODELS / "fused_gemm_bias_relu.py"
RELU = "    x = F.relu(x)"
NOTE = "# tuned by hand"


@pytest.fixture(autouse=True)
def no_questions(settings, tmp_path, monkeypatch):
    settings.setValue("project/recoveryDir", str(tmp_path / "recovery"))
    monkeypatch.setattr(ProjectController, "ask_save_changes", lambda self, reason: "discard")
    monkeypatch.setattr(ProjectController, "ask_restore", lambda self, recovered: False)


def open_small(qtbot, window):
    window.open_model(str(SMALL))
    wait_for_analysis(qtbot, window)
    wait_for_composition(qtbot, window)
    qtbot.waitUntil(lambda: bool(window.graph_view.nodes), timeout=5000)
    return window.session.analysis.decomposition


def shown(window, kid) -> str:
    """The status the node draws (and the pane remembers): they must agree."""
    assert window.graph_view.nodes[kid].status == window.graph_view.status(kid)
    return window.graph_view.status(kid)


def kernel_check(kid, ok):
    return {"event": "kernel_check", "kernel": kid, "ok": ok, "max_abs_err": 0.0 if ok else 9.0,
            "max_rel_err": 0.0 if ok else 1.0, "message": "" if ok else "mismatch"}


def test_precedence_is_one_order_and_verdicts_hold_only_for_their_code():
    assert PRECEDENCE == ("impure", "fail", "pass", "compiled", "edited", "generated", "none")
    assert resolve_status(KernelFacts(has_kernel=False), "c") == "none"
    assert resolve_status(KernelFacts(), "c") == "generated"
    assert resolve_status(KernelFacts(edited=True), "c") == "edited"
    assert resolve_status(KernelFacts(edited=True, compiled=("c", True)), "c") == "compiled"
    assert resolve_status(KernelFacts(compiled=("c", False)), "c") == "fail"  # a failed compile check
    assert resolve_status(KernelFacts(compiled=("c", True), validated=("c", True)), "c") == "pass"
    assert resolve_status(KernelFacts(compiled=("c", True), validated=("c", False)), "c") == "fail"
    assert resolve_status(KernelFacts(validated=("c", True), impure=True), "c") == "impure"
    # a verdict about other code than the kernel's current code no longer holds
    assert resolve_status(KernelFacts(edited=True, validated=("old", True), compiled=("old", True)), "c") == "edited"


def test_edits_purity_and_validation_drive_the_node_statuses(qtbot, window, cached_analysis):
    dec = open_small(qtbot, window)
    kid, other = dec.kernels[0].id, (dec.kernels[1].id if len(dec.kernels) > 1 else None)
    assert shown(window, kid) == "generated"
    editor = window.open_editor(kid)

    insert_line(editor, 1, NOTE)  # an edit: "edited" at once, no debounce
    assert window.workspace.is_edited(kid) and shown(window, kid) == "edited"

    line = launch_body_line(editor.code(), kid)  # a torch call in the launch wrapper: impure after the debounce
    insert_line(editor, line, RELU)
    qtbot.waitUntil(lambda: shown(window, kid) == "impure", timeout=PURITY_TIMEOUT_MS)
    editor.editor.undo()  # the diagnostic goes with the next purity pass
    qtbot.waitUntil(lambda: shown(window, kid) == "edited", timeout=PURITY_TIMEOUT_MS)
    editor.editor.undo()  # back to the generated code
    assert not window.workspace.is_edited(kid) and shown(window, kid) == "generated"

    # validation results (fake events, as the validation child prints them)
    window.validation.handle_event(kernel_check(kid, True))
    assert shown(window, kid) == "pass"
    if other:
        window.validation.handle_event({"event": "compile", "kernel": other, "seconds": 0.2})
        assert shown(window, other) == "compiled"
        window.validation.handle_event(kernel_check(other, False))
        assert shown(window, other) == "fail"
    insert_line(editor, 1, NOTE)  # editing after PASS: the verdict was about other code
    assert shown(window, kid) == "edited"
    editor.editor.undo()  # the very code that passed
    assert shown(window, kid) == "pass"
    window.editing.reset_action.trigger()  # reset to generated on unedited code: nothing changes
    assert shown(window, kid) == "pass"

    insert_line(editor, line, RELU)  # impure outranks PASS
    qtbot.waitUntil(lambda: shown(window, kid) == "impure", timeout=PURITY_TIMEOUT_MS)
    window.editing.reset_action.trigger()  # reset to generated (undoable)
    qtbot.waitUntil(lambda: shown(window, kid) == "pass", timeout=PURITY_TIMEOUT_MS)

    # a new validation run starts from scratch: the last run's verdicts go
    window.validation.runningChanged.emit(True)
    assert shown(window, kid) == "generated"


def test_a_compile_check_marks_the_kernel_compiled_until_it_is_edited(qtbot, window, cached_analysis):
    pytest.importorskip("cuda.tile")
    dec = open_small(qtbot, window)
    kid = dec.kernels[0].id
    editor = window.open_editor(kid)
    insert_line(editor, 1, NOTE)
    assert shown(window, kid) == "edited"
    with qtbot.waitSignal(window.editors.compileFinished, timeout=120_000) as blocker:
        window.editing.compile_action.trigger()  # Ctrl+B
    assert blocker.args[0].ok, blocker.args[0].message
    assert shown(window, kid) == "compiled"
    editor.editor.undo()  # other code than the checked one
    assert shown(window, kid) == "generated"
    editor.editor.redo()
    assert shown(window, kid) == "compiled"

    # a failed compile check shows as FAIL
    editor.replace_code(editor.code().replace("ct.mma(", "ct.mmaa(", 1))
    with qtbot.waitSignal(window.editors.compileFinished, timeout=120_000) as blocker:
        window.editing.compile_action.trigger()
    assert not blocker.args[0].ok and shown(window, kid) == "fail"
