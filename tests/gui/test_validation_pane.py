"""The Validation pane with a fake runner: live events into the table and log, graph statuses, crash, cancel."""

import os
import signal
import sys

import pytest
from pane_helpers import alive, fake_runner, tiny_decomposition

from tilestudio.gui.settings_dialog import AppSettings
from tilestudio.gui.validation_pane import ValidationPane
from tilestudio.gui.validation_support import kill_tree, process_tree, validate_command

RUN_TIMEOUT_MS = 20_000


@pytest.fixture
def pane(qtbot, tmp_path):
    p = ValidationPane()
    qtbot.addWidget(p)
    p.resize(1100, 360)
    p.show()
    model = tmp_path / "tiny_model.py"
    model.write_text("# a model\n")
    p.set_model(str(model), tiny_decomposition())
    p.composed_provider = lambda: "# tilestudio composed file (fake)\n"
    p.statuses = {}
    p.kernelStatus.connect(lambda kid, status: p.statuses.__setitem__(kid, status))
    yield p
    p.shutdown()
    assert p.process is None or p.process.state() == p.process.ProcessState.NotRunning


def run_and_wait(qtbot, pane, tmp_path, scenario):
    pane.command_factory = fake_runner(tmp_path, scenario)
    with qtbot.waitSignal(pane.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        assert pane.run()
        assert pane.running and not pane.run_button.isEnabled() and pane.cancel_button.isEnabled()
    return finished.args[0]


def test_a_passing_run_fills_the_table_summary_and_graph_statuses(qtbot, pane, tmp_path):
    report = run_and_wait(qtbot, pane, tmp_path, "pass")
    assert report.status == "pass" and pane.state == "pass"
    assert pane.pill.text() == "PASS"
    assert pane.row("q") == ["q", "0.60", "ok", "1e-06", "2e-05", "0.200", ""]
    assert pane.row("odd_op")[2] == "—"  # no kernel, no result
    summary = pane.summary.text()
    assert "end-to-end PASS" in summary and "Fake H200 (sm_90)" in pane.environment.text()
    assert "2.00×</span> vs eager" in summary and "1.50×</span> vs torch.compile" in summary and "eager 2.000 ms" in summary
    assert pane.statuses == {kid: "pass" for kid in ["norm", "q", "k", "scores", "out"]}
    log = pane.log_text()
    assert "check   q: ok" in log and "PASS - max diff" in log and "finished: PASS" in log
    assert pane.run_button.isEnabled() and not pane.cancel_button.isEnabled()
    # the composed text was written to a temporary file that the runner was given
    assert report.composed_file.endswith("tiny_model_cutile.py")


def test_a_failing_kernel_turns_its_row_and_node_red(qtbot, pane, tmp_path):
    report = run_and_wait(qtbot, pane, tmp_path, "fail")
    assert report.status == "fail" and pane.pill.text() == "FAIL"
    assert pane.row("q")[2] == "FAIL" and "max abs err 3.5" in pane.row("q")[6]
    assert pane.statuses["q"] == "fail" and pane.statuses["norm"] == "pass"
    assert "end-to-end FAIL" in pane.summary.text()


def test_a_runner_killed_by_a_signal_is_an_error_and_the_pane_survives(qtbot, pane, tmp_path):
    report = run_and_wait(qtbot, pane, tmp_path, "crash")
    assert report.status == "error" and pane.state == "error"
    assert "SIGSEGV" in pane.log_text() and "SIGSEGV" in pane.summary.text()
    assert "Segmentation fault" in pane.log_text()  # stderr is shown
    assert pane.statuses == {"norm": "compiled"}
    # the pane still works: the next run passes
    assert run_and_wait(qtbot, pane, tmp_path, "pass").status == "pass"


@pytest.mark.skipif(sys.platform != "linux", reason="process-tree kill uses /proc")
def test_cancel_kills_a_hung_runner_and_its_children(qtbot, pane, tmp_path):
    pane.command_factory = fake_runner(tmp_path, "hang")
    pids = []
    pane.log.textChanged.connect(lambda: None)
    original = pane.handle_event

    def spy(ev):
        if ev.get("pids"):
            pids.extend(ev["pids"])
        original(ev)

    pane.handle_event = spy
    assert pane.run()
    qtbot.waitUntil(lambda: pane.row("norm")[1] == "0.10", timeout=RUN_TIMEOUT_MS)
    assert len(pids) == 3 and all(alive(p) for p in pids)
    assert pane.state == "running"
    with qtbot.waitSignal(pane.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        qtbot.mouseClick(pane.cancel_button, qtbot_left())
    assert finished.args[0].status == "cancelled" and pane.pill.text() == "CANCELLED"
    assert set(pids) <= set(pane.killed_pids)
    qtbot.waitUntil(lambda: not any(alive(p) for p in pids), timeout=5000)
    assert pane.run_button.isEnabled()


def test_without_a_gpu_the_no_gpu_message_and_dry_run_are_shown(qtbot, pane, tmp_path):
    report = run_and_wait(qtbot, pane, tmp_path, "no_gpu")
    assert report.status == "no_gpu" and pane.pill.text() == "NO GPU"
    summary = pane.summary.text()
    assert "no CUDA GPU" in summary and "dry run (sm_90): PASS, 5 launches, all compiled" in summary
    assert pane.row("scores")[1:3] == ["0.25", "compiles"]
    assert pane.statuses["scores"] == "compiled"
    assert "no CUDA GPU" in pane.log_text()


def test_composes_on_a_worker_when_no_composed_text_is_at_hand(qtbot, pane, tmp_path, monkeypatch):
    from types import SimpleNamespace

    from tilestudio.core import composer

    calls = []

    def fake_compose(path, dec, edits=None):
        calls.append((path, [k.id for k in dec.kernels]))
        return SimpleNamespace(text="# composed by the fake composer\n")

    monkeypatch.setattr(composer, "compose_model", fake_compose)
    pane.composed_provider = None
    seen = []
    pane.command_factory = lambda path: (seen.append(open(path).read()), fake_runner(tmp_path, "pass")(path))[1]
    with qtbot.waitSignal(pane.runFinished, timeout=RUN_TIMEOUT_MS):
        pane.run()
        assert pane.state == "composing"
    assert calls and calls[0][0] == pane.model_path
    assert seen == ["# composed by the fake composer\n"]
    assert pane.state == "pass"


def _no_compose_here(monkeypatch):
    from tilestudio.core import composer

    def fail(*_a, **_k):
        raise AssertionError("kernels were generated in the GUI process")

    monkeypatch.setattr(composer, "compose_model", fail)


def test_waits_for_the_helpers_kernels_instead_of_generating_them_here(qtbot, pane, tmp_path, monkeypatch):
    _no_compose_here(monkeypatch)
    pane.composed_provider = lambda: None
    pane.compose_waiter = lambda: True
    seen = []
    pane.command_factory = lambda path: (seen.append(open(path).read()), fake_runner(tmp_path, "pass")(path))[1]
    assert pane.run()
    qtbot.wait(200)
    assert pane.state == "composing" and pane.process is None and "waiting for the kernels" in pane.log_text()
    with qtbot.waitSignal(pane.runFinished, timeout=RUN_TIMEOUT_MS):
        pane.composed_ready("# composed once the helper was done\n")
    assert seen == ["# composed once the helper was done\n"] and pane.state == "pass"
    pane.composed_ready("# a later composition\n")  # no run waits: ignored
    assert seen == ["# composed once the helper was done\n"]


def test_a_waiting_run_reports_kernels_that_never_come(qtbot, pane, monkeypatch):
    _no_compose_here(monkeypatch)
    pane.composed_provider = lambda: None
    pane.compose_waiter = lambda: True
    with qtbot.waitSignal(pane.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        assert pane.run()
        pane.composed_ready(None, "the analysis failed: no kernels to validate")
    assert finished.args[0].status == "error" and "the analysis failed" in pane.log_text()


def test_cancelling_a_waiting_run_drops_the_late_kernels(qtbot, pane, tmp_path, monkeypatch):
    _no_compose_here(monkeypatch)
    pane.composed_provider = lambda: None
    pane.compose_waiter = lambda: True
    started = []
    pane.command_factory = lambda path: (started.append(path), fake_runner(tmp_path, "pass")(path))[1]
    assert pane.run()
    with qtbot.waitSignal(pane.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        pane.cancel()
    assert finished.args[0].status == "cancelled"
    pane.composed_ready("# too late\n")
    qtbot.wait(100)
    assert started == [] and pane.state == "cancelled"


def test_a_runner_that_cannot_start_is_reported(qtbot, pane, tmp_path):
    pane.command_factory = lambda path: [str(tmp_path / "no-such-python"), "-m", "tilestudio"]
    with qtbot.waitSignal(pane.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        pane.run()
    assert finished.args[0].status == "error" and "could not start" in pane.summary.text()


def test_run_needs_a_model(qtbot):
    p = ValidationPane()
    qtbot.addWidget(p)
    assert not p.run() and not p.run_button.isEnabled()
    assert "Open a model" in p.summary.text()


def test_the_real_command_uses_the_interpreter_and_tolerances_from_the_settings(tmp_path):
    s = AppSettings(python="/opt/py/bin/python3", atol=1e-4, rtol=2e-3, validation_timeout_s=90)
    assert validate_command(s.interpreter(), "/tmp/x_cutile.py", s) == [
        "/opt/py/bin/python3", "-m", "tilestudio", "validate", "/tmp/x_cutile.py", "--json", "--timeout", "90",
        "--atol", "0.0001", "--rtol", "0.002"]
    assert AppSettings().interpreter() == sys.executable


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_kill_tree_reaches_children_in_other_sessions():
    import subprocess

    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                               "c = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
                               "print(c.pid, flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert child in process_tree(parent.pid)
    killed = kill_tree(parent.pid)
    assert {parent.pid, child} <= set(killed)
    assert parent.wait(5) == -signal.SIGKILL
    for _ in range(100):
        if not alive(child):
            break
        os.sched_yield()
        import time

        time.sleep(0.05)
    assert not alive(child)


def qtbot_left():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton
