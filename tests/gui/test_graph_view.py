"""The Graph pane: nodes and edges from a decomposition, statuses, selection, find, zoom, fit, export, big graphs;
and its wiring in the main window (selection everywhere, double-click opens the editor, validation statuses)."""

import pytest
from pane_helpers import chain_decomposition, decomposition, fake_runner, kernel, tiny_decomposition
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QWheelEvent
from PySide6.QtWidgets import QApplication

from tilestudio.gui.graph_view import STATUSES, SYNC_LAYOUT_MAX_NODES, GraphPane, NodeItem


@pytest.fixture
def pane(qtbot):
    p = GraphPane()
    qtbot.addWidget(p)
    p.resize(700, 600)
    p.show()
    qtbot.waitExposed(p)
    p.set_decomposition(tiny_decomposition(), "tiny_model")
    yield p
    assert p.wait(10_000)


def node_pos(pane, kid) -> QPoint:
    item = pane.nodes[kid]
    pane.view.centerOn(item)
    return pane.view.mapFromScene(item.sceneBoundingRect().center())


def test_nodes_and_edges_follow_the_decomposition(pane):
    dec = tiny_decomposition()
    assert set(pane.nodes) == {k.id for k in dec.kernels}
    assert sorted((e.source, e.target) for e in pane.edges) == sorted(
        (d, k.id) for k in dec.kernels for d in k.dependencies)
    layers = {kid: box.layer for kid, box in pane.layout_result.nodes.items()}
    assert layers["norm"] < layers["q"] == layers["k"] < layers["scores"] < layers["out"] < layers["odd_op"]
    # node boxes come from the layout, sized to their text
    for kid, item in pane.nodes.items():
        box = pane.layout_result.nodes[kid]
        assert (item.pos().x(), item.pos().y()) == (box.x, box.y)
        assert item.rect.width() == box.width >= 170
    assert pane.view.zoom() <= 1.0


def test_statuses_start_from_the_spec_and_are_set_by_the_other_panes(pane):
    assert pane.status("odd_op") == "none" and pane.status("q") == "generated"
    for status in STATUSES:
        assert pane.set_status("q", status)
        assert pane.nodes["q"].status == status
    assert pane.set_status("q", "PASS") and pane.status("q") == "pass"
    assert pane.set_status("k", "no kernel") and pane.status("k") == "none"
    assert pane.set_status("k", "FAIL") and pane.nodes["k"].status == "fail"
    with pytest.raises(ValueError):
        pane.set_status("k", "purple")
    assert not pane.set_status("not_a_kernel", "pass")
    # a re-analysis of the same model keeps the statuses; another model starts afresh
    pane.set_decomposition(tiny_decomposition())
    assert pane.status("q") == "pass" and pane.nodes["q"].status == "pass"
    pane.set_decomposition(decomposition([kernel("q"), kernel("z", ["q"])], sha="1" * 64))
    assert pane.statuses() == {"q": "generated", "z": "generated"}


def test_clicking_a_node_selects_its_kernel_and_double_click_activates_it(qtbot, pane):
    with qtbot.waitSignal(pane.kernelSelected, timeout=2000) as selected:
        qtbot.mouseClick(pane.view.viewport(), Qt.MouseButton.LeftButton, pos=node_pos(pane, "scores"))
    assert selected.args == ["scores"] and pane.selected_id() == "scores"
    active = {(e.source, e.target) for e in pane.edges if e.active}
    assert active == {("q", "scores"), ("k", "scores"), ("scores", "out")}
    with qtbot.waitSignal(pane.kernelActivated, timeout=2000) as activated:
        qtbot.mouseDClick(pane.view.viewport(), Qt.MouseButton.LeftButton, pos=node_pos(pane, "out"))
    assert activated.args == ["out"]


def test_select_from_outside_does_not_echo(qtbot, pane):
    with qtbot.assertNotEmitted(pane.kernelSelected):
        assert pane.select("k")
    assert pane.selected_id() == "k"
    assert not pane.select("nope") and pane.selected_id() == ""


def test_find_rings_matches_dims_the_rest_and_centres_the_next(qtbot, pane):
    pane.view.set_zoom(2.5)  # bigger than the pane, so centring has to scroll
    assert pane.find("linear") == 3  # q, k (linear), out (linear · add)
    assert pane.matches() == ["q", "k", "out"]
    assert pane.nodes["q"].match and not pane.nodes["norm"].match
    assert pane.nodes["norm"].opacity() < 0.5 and pane.nodes["q"].opacity() == 1.0
    assert pane.match_label.text() == "1/3"
    assert pane.find_next() == "k" and pane.find_next() == "out" and pane.find_next() == "q"
    centre = pane.view.mapToScene(pane.view.viewport().rect().center())
    assert (centre - pane.nodes["q"].sceneBoundingRect().center()).manhattanLength() < 40
    pane.find_box.setText("scores")
    assert pane.matches() == ["scores"]
    pane.find_box.setText("zzz")
    assert pane.matches() == [] and pane.match_label.text() == "no match"
    pane.find_box.setText("")
    assert all(item.opacity() == 1.0 and not item.match for item in pane.nodes.values())


def test_ctrl_f_focuses_the_find_box_and_escape_clears_it(qtbot, pane):
    pane.activateWindow()
    pane.view.setFocus()
    qtbot.waitUntil(lambda: pane.view.hasFocus(), timeout=2000)
    qtbot.keyClick(pane.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert pane.find_box.hasFocus()
    qtbot.keyClicks(pane.find_box, "norm")
    assert pane.matches() == ["norm"]
    qtbot.keyClick(pane.find_box, Qt.Key.Key_Escape)
    assert pane.find_box.text() == "" and pane.matches() == []


def test_zoom_with_wheel_and_keys_and_fit_with_f(qtbot, pane):
    pane.view.set_zoom(0.5)
    start = pane.view.zoom()
    pos = QPointF(pane.view.viewport().rect().center())
    wheel = QWheelEvent(pos, pane.view.viewport().mapToGlobal(pos), QPoint(0, 0), QPoint(0, 240),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(pane.view.viewport(), wheel)
    assert pane.view.zoom() > start and not pane.view.auto_zoom
    zoomed = pane.view.zoom()
    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert pane.view.zoom() == pytest.approx(zoomed / 1.25)
    qtbot.keyClick(pane.view, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert pane.view.zoom() == pytest.approx(zoomed)
    pane.view.set_zoom(3.0)
    qtbot.keyClick(pane.view, Qt.Key.Key_F)
    visible = pane.view.mapToScene(pane.view.viewport().rect()).boundingRect()
    assert visible.contains(pane.scene.itemsBoundingRect())
    assert pane.view.zoom() <= 1.0
    assert pane.zoom_label.text() == f"{round(pane.view.zoom() * 100)} %"


def test_export_png_and_svg(tmp_path, pane):
    pane.set_status("scores", "fail")
    png, svg = tmp_path / "graph.png", tmp_path / "graph.svg"
    assert pane.export_png(str(png))
    assert pane.export_svg(str(svg))
    assert png.stat().st_size > 5_000 and svg.stat().st_size > 5_000
    image = QImage(str(png))
    bounds = pane.scene.itemsBoundingRect()
    assert image.width() >= 2 * bounds.width() and image.height() >= 2 * bounds.height()
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "tiny_model: kernel graph" in text
    assert "scores" in text and "FAIL" in text  # node text is kept as text


def test_an_empty_graph_exports_nothing(qtbot, tmp_path):
    p = GraphPane()
    qtbot.addWidget(p)
    assert not p.export_png(str(tmp_path / "x.png")) and not p.export_svg(str(tmp_path / "x.svg"))
    assert not (tmp_path / "x.png").exists()


def test_a_big_graph_is_laid_out_on_a_worker(qtbot, pane):
    n = SYNC_LAYOUT_MAX_NODES + 150
    pane.select("q")
    with qtbot.waitSignal(pane.layoutReady, timeout=20_000):
        pane.set_decomposition(chain_decomposition(n), "big")
        assert not pane.nodes  # not laid out on the GUI thread
    assert len(pane.nodes) == n and all(isinstance(i, NodeItem) for i in pane.nodes.values())
    # an older request that finishes late is dropped
    with qtbot.waitSignal(pane.layoutReady, timeout=20_000):
        pane.set_decomposition(chain_decomposition(n, seed=1), "big")
        pane.set_decomposition(tiny_decomposition(), "tiny")
    assert pane.wait(20_000)
    QApplication.processEvents()
    assert set(pane.nodes) == {k.id for k in tiny_decomposition().kernels}


def test_the_pane_follows_the_application_theme(qtbot, pane):
    from tilestudio.gui.theme import DARK, LIGHT, apply_theme

    app = QApplication.instance()
    try:
        apply_theme(app, LIGHT)
        qtbot.waitUntil(lambda: pane.theme is LIGHT, timeout=2000)
        assert pane.view.backgroundBrush().color().name() == LIGHT.base
    finally:
        apply_theme(app, DARK)
    qtbot.waitUntil(lambda: pane.theme is DARK, timeout=2000)


# ---- in the main window ----------------------------------------------------------------------------------------
from gui_helpers import ANALYSIS_TIMEOUT_MS, MODELS  # noqa: E402

TRANSFORMER = MODELS / "arch_transformer_encoder_block.py"


def test_graph_and_kernel_list_select_each_other(qtbot, window, cached_analysis):
    window.open_model(str(TRANSFORMER))
    qtbot.waitUntil(lambda: window.kernels.count() > 0 and bool(window.graph_view.nodes), timeout=ANALYSIS_TIMEOUT_MS)
    dec = window.session.analysis.decomposition
    assert set(window.graph_view.nodes) == {k.id for k in dec.kernels}
    assert window.graph_view.selected_id() == window.selected_kernel() == dec.kernels[0].id
    last = dec.kernels[-1].id
    window.graph_dock.raise_()
    qtbot.mouseClick(window.graph_view.view.viewport(), Qt.MouseButton.LeftButton,
                     pos=node_pos(window.graph_view, last))
    assert window.selected_kernel() == last and f"KERNEL SPEC: {last}" in window.spec_text()
    window.kernels.select(dec.kernels[1].id)
    assert window.graph_view.selected_id() == dec.kernels[1].id


def test_double_click_opens_the_editor_when_the_window_has_one(qtbot, window, cached_analysis, monkeypatch):
    window.open_model(str(TRANSFORMER))
    qtbot.waitUntil(lambda: bool(window.graph_view.nodes), timeout=ANALYSIS_TIMEOUT_MS)
    opened = []
    monkeypatch.setattr(window, "open_editor", opened.append, raising=False)
    kid = window.session.analysis.decomposition.kernels[2].id
    window.graph_view.kernelActivated.emit(kid)
    assert opened == [kid] and window.selected_kernel() == kid


def test_validation_in_the_window_colours_the_graph(qtbot, window, cached_analysis, tmp_path, monkeypatch):
    window.open_model(str(TRANSFORMER))
    qtbot.waitUntil(lambda: bool(window.graph_view.nodes), timeout=ANALYSIS_TIMEOUT_MS)
    dec = window.session.analysis.decomposition
    monkeypatch.setattr(window, "_current_composed_text", lambda: "# composed\n")
    window.validation.composed_provider = window._current_composed_text
    first, second = dec.kernels[0].id, dec.kernels[1].id
    script = tmp_path / "fake.py"
    script.write_text(
        "import json\n"
        "def emit(**e): print(json.dumps(e), flush=True)\n"
        f"emit(event='compile', kernel={first!r}, seconds=0.3)\n"
        f"emit(event='kernel_check', kernel={first!r}, ok=True, max_abs_err=0.0, max_rel_err=0.0, message='')\n"
        f"emit(event='kernel_check', kernel={second!r}, ok=False, max_abs_err=9.0, max_rel_err=1.0, message='bad')\n"
        "emit(event='finished', passed=False)\n")
    import sys

    window.validation.command_factory = lambda path: [sys.executable, str(script), path]
    with qtbot.waitSignal(window.validation.runFinished, timeout=20_000):
        window.validate_action.trigger()
    assert window.graph_view.status(first) == "pass" and window.graph_view.status(second) == "fail"
    assert "Validation: FAIL" in window.status_label.text()
    # clicking a result row selects the kernel everywhere
    item = window.validation.table.topLevelItem(1)
    qtbot.mouseClick(window.validation.table.viewport(), Qt.MouseButton.LeftButton,
                     pos=window.validation.table.visualItemRect(item).topLeft() + QPoint(30, 8))
    assert window.selected_kernel() == second


def test_validation_started_while_kernels_generate_waits_for_the_helper(qtbot, window, cached_analysis, tmp_path,
                                                                         monkeypatch):
    """Validate before the helper process has generated the kernels: the window's run waits for the workspace's
    sources instead of generating them on a thread of the GUI process, then validates the composed text."""
    import sys

    from tilestudio.core import composer

    window.open_model(str(TRANSFORMER))
    qtbot.waitUntil(lambda: bool(window.graph_view.nodes), timeout=ANALYSIS_TIMEOUT_MS)
    monkeypatch.setattr(composer, "compose_model", lambda *a, **k: pytest.fail("composed in the GUI process"))
    composed = {"text": None}
    monkeypatch.setattr(window, "_current_composed_text", lambda: composed["text"])
    monkeypatch.setattr(window.workspace, "generating", True)
    seen = []
    script = tmp_path / "fake.py"
    script.write_text("import json, sys\nprint(json.dumps({'event': 'finished', 'passed': True}), flush=True)\n")
    window.validation.command_factory = lambda path: (seen.append(open(path).read()), [sys.executable, str(script)])[1]
    window.validate_action.trigger()
    assert window.validation.state == "composing" and window.validation.process is None
    composed["text"] = "# composed after generation\n"
    with qtbot.waitSignal(window.validation.runFinished, timeout=20_000):
        window.workspace.sourcesReady.emit()
    assert seen == ["# composed after generation\n"]


def test_the_fake_runner_helper_is_importable(tmp_path):
    assert callable(fake_runner(tmp_path, "pass"))


def test_resizing_the_window_never_loops_on_scroll_bars(qtbot, window, cached_analysis):
    """At some sizes the width-fitting zoom toggled the vertical scroll bar forever (reported hang)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    view = window.graph_view.view if hasattr(window.graph_view, "view") else window.graph_view
    assert view.verticalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOn
    for w, h in ((1680, 1050), (1200, 800), (1679, 1049), (900, 700)):
        window.resize(w, h)
        QApplication.processEvents()
