"""Validation parent: behaviour with a fake GPU child (canned events, crash, hang, garbage, cancel); no-GPU path."""

import json
import sys
import textwrap
import threading
import time

import pytest

from tilestudio.core.validate import Validation


def fake_child(tmp_path, body: str) -> list[str]:
    script = tmp_path / "fake_child.py"
    script.write_text("import json, os, sys, time, signal\n"
                      "def emit(**e):\n    print(json.dumps(e), flush=True)\n" + textwrap.dedent(body))
    return [sys.executable, str(script)]


def run(cmd, **kw):
    v = Validation("composed.py", child_cmd=cmd, **kw)
    events = list(v.run())
    return v.report, events


def test_canned_pass_is_folded_into_a_report(tmp_path):
    report, events = run(fake_child(tmp_path, """
        emit(event="environment", cuda_available=True, gpu="Fake H200", compute_capability="sm_90")
        emit(event="compile", kernel="k1", seconds=0.5)
        emit(event="kernel_check", kernel="k1", ok=True, max_abs_err=1e-6, max_rel_err=1e-5, message="")
        emit(event="end_to_end", ok=True, max_diff=1e-6, outputs=[{"index": 0, "ok": True, "max_diff": 1e-6}])
        emit(event="timings", eager_ms=2.0, cutile_ms=1.0, compile_ms=1.5, speedup_vs_eager=2.0,
             speedup_vs_compile=1.5, per_kernel_ms={"k1": 0.9})
        emit(event="finished", passed=True)
    """))
    assert report.status == "pass"
    assert report.environment["gpu"] == "Fake H200"
    assert report.kernels[0].id == "k1" and report.kernels[0].ok and report.kernels[0].time_ms == 0.9
    assert report.timings["speedup_vs_eager"] == 2.0
    assert [e["event"] for e in events][0] == "start"


def test_device_and_host_split_is_folded_and_printed(tmp_path):
    """Each forward's device work and host enqueue time and each kernel's device time reach the report; the CLI
    says when the cuTile forward is launch-bound and what it takes as one CUDA graph (or why it was not captured)."""
    from tilestudio.core.cli import timing_details

    report, _ = run(fake_child(tmp_path, """
        emit(event="timings", eager_ms=2.0, eager_device_ms=1.5, eager_host_ms=1.2, cutile_ms=0.8,
             cutile_device_ms=0.36, cutile_host_ms=0.55, cutile_graph_ms=0.38, speedup_vs_eager=2.5,
             per_kernel_ms={"k1": 0.09}, per_kernel_device_ms={"k1": 0.05})
        emit(event="finished", passed=True)
    """))
    assert report.kernels[0].time_ms == 0.09 and report.kernels[0].device_ms == 0.05
    lines = timing_details(report.timings)
    assert lines[0] == "device / host ms per forward: eager 1.500 / 1.200 | cuTile 0.360 / 0.550"
    assert "launch-bound" in lines[1] and "0.550 ms to enqueue 0.360 ms" in lines[1]
    assert lines[2] == "cuTile as one CUDA graph: 0.380 ms"
    lines = timing_details({"cutile_device_ms": 0.5, "cutile_host_ms": 0.1, "cutile_graph_error": "RuntimeError: x"})
    assert lines == ["device / host ms per forward: cuTile 0.500 / 0.100",
                     "cuTile as one CUDA graph: not captured (RuntimeError: x)"]


def test_failing_kernel_makes_the_run_fail(tmp_path):
    report, _ = run(fake_child(tmp_path, """
        emit(event="kernel_check", kernel="k1", ok=False, max_abs_err=3.0, max_rel_err=1.0, message="out: max abs err 3")
        emit(event="end_to_end", ok=False, max_diff=3.0, outputs=[])
        emit(event="finished", passed=False)
    """))
    assert report.status == "fail" and report.kernels[0].ok is False


def test_crash_by_signal_is_reported_and_parent_survives(tmp_path):
    report, events = run(fake_child(tmp_path, """
        emit(event="compile", kernel="k1", seconds=0.1)
        sys.stderr.write("Fatal Python error: Segmentation fault\\n"); sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    """))
    assert report.status == "error"
    crash = [e for e in events if e["event"] == "crash"]
    assert crash and crash[0]["signal"] == "SIGSEGV" and "Segmentation fault" in crash[0]["message"]


def test_hang_is_killed_at_the_timeout(tmp_path):
    start = time.monotonic()
    report, events = run(fake_child(tmp_path, """
        emit(event="compile", kernel="k1", seconds=0.1)
        os.system("sleep 60")  # a grandchild in the same group must die too
    """), timeout_s=2)
    assert time.monotonic() - start < 20
    assert report.status == "error"
    assert any(e["event"] == "timeout" for e in events)


def test_garbage_on_the_stream_is_reported_and_skipped(tmp_path):
    report, events = run(fake_child(tmp_path, """
        print("hello from user code", flush=True)
        print("{not json", flush=True)
        emit(event="end_to_end", ok=True, max_diff=0.0, outputs=[])
        emit(event="finished", passed=True)
    """))
    assert report.status == "pass"
    assert sum(e["event"] == "garbage" for e in events) == 2


def test_exit_without_finishing_is_a_crash(tmp_path):
    report, events = run(fake_child(tmp_path, """
        emit(event="compile", kernel="k1", seconds=0.1)
        sys.exit(3)
    """))
    assert report.status == "error"
    assert any(e["event"] == "crash" and "status 3" in e["message"] for e in events)


def test_cancel_kills_the_child(tmp_path):
    v = Validation("composed.py", child_cmd=fake_child(tmp_path, """
        emit(event="compile", kernel="k1", seconds=0.1)
        time.sleep(60)
    """), timeout_s=120)
    events = []
    start = time.monotonic()

    def consume():
        for ev in v.run():
            events.append(ev)

    t = threading.Thread(target=consume)
    t.start()
    while not any(e["event"] == "compile" for e in events):
        time.sleep(0.05)
    v.cancel()
    t.join(timeout=20)
    assert not t.is_alive() and time.monotonic() - start < 20
    assert v.report.status == "cancelled"


def test_no_gpu_gives_a_clear_message_and_the_dry_run(tmp_path, analyses):
    """The real child on this CPU machine: no_gpu, exit 2 from the CLI, and the dry run in its place."""
    import subprocess

    from corpus import corpus_files
    from tilestudio.core.composer import compose_model

    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    path = corpus_files("fused_gemm_bias_relu")[0]
    _, dec = analyses(path)
    out = tmp_path / "gemm_cutile.py"
    out.write_text(compose_model(str(path), dec).text)
    r = subprocess.run([sys.executable, "-m", "tilestudio", "validate", str(out), "--json"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 2
    events = [json.loads(l) for l in r.stdout.splitlines()]
    errors = [e for e in events if e["event"] == "error"]
    assert errors[0]["kind"] == "no_gpu" and "torch.cuda.is_available() is False" in errors[0]["message"]
    report = events[-1]
    assert report["status"] == "no_gpu" and report["dry_run"]["ok"] is True


def test_sigterm_during_a_cli_validation_cancels_the_child_instead_of_orphaning_it(tmp_path):
    import os
    import signal

    from tilestudio.core.cli import cancel_on_signals

    v = Validation("composed.py", child_cmd=fake_child(tmp_path, """
        emit(event="environment", cuda_available=True)
        time.sleep(60)
    """))
    events = []
    before = signal.getsignal(signal.SIGTERM)
    with cancel_on_signals(v.cancel):
        for ev in v.run():
            events.append(ev)
            if ev["event"] == "environment":
                os.kill(os.getpid(), signal.SIGTERM)  # what `kill` or a closing terminal sends
    assert v._proc.poll() is not None, "the child must be dead"
    assert v.report.status in ("cancelled", "error")
    assert signal.getsignal(signal.SIGTERM) is before  # the previous handler is back
