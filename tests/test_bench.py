"""`tilestudio bench`: a batch survives bad models, prints the table and summary, writes JSON/CSV; the GPU lock
that lets several validations share one GPU keeps every timed region exclusive."""

import csv
import json
import os
import subprocess
import sys
import textwrap

from corpus import corpus_files

from tilestudio.core.cli import main


def test_batch_survives_a_bad_model_and_prints_the_summary(tmp_path, capsys):
    good = corpus_files("op_relu")[0] if corpus_files("op_relu") else corpus_files("op_")[0]
    bad = tmp_path / "syntax_error.py"
    bad.write_text("class Model(nn.Module:\n    pass\n")
    rc = main(["bench", str(good), str(bad), "--no-dry-run", "--no-torch-compile", "--gpu-jobs", "2",
               "--jobs", "2", "--out-dir", str(tmp_path / "out"), "--json", str(tmp_path / "b.json"),
               "--csv", str(tmp_path / "b.csv"), "--timeout", "120"])
    out, err = capsys.readouterr()
    assert rc == 0
    rows = json.loads((tmp_path / "b.json").read_text())
    assert [r["model"] for r in rows] == [good.name, "syntax_error.py"]
    assert rows[1]["status"] == "error" and "syntax_error.py:1" in rows[1]["error"]
    assert rows[0]["kernels"] >= 1 and rows[0]["pure"] is True
    assert rows[0]["status"] in ("pass", "fail", "no_gpu", "error")  # no_gpu here; pass on a GPU machine
    assert "models: 2 | pure: 1/2" in out and "geomean speedup" in out and "device vs eager" in out
    assert "[2/2] validated" in err
    with open(tmp_path / "b.csv", newline="") as f:
        assert [r["model"] for r in csv.DictReader(f)] == [good.name, "syntax_error.py"]


def test_no_validate_summary_says_validation_was_skipped(tmp_path, capsys):
    """--no-validate composes only: the summary must not claim a 0% PASS rate for models never validated."""
    good = corpus_files("op_relu")[0] if corpus_files("op_relu") else corpus_files("op_")[0]
    rc = main(["bench", str(good), "--no-dry-run", "--no-validate", "--jobs", "1", "--out-dir", str(tmp_path)])
    out, _ = capsys.readouterr()
    assert rc == 0
    assert "validation skipped (--no-validate)" in out
    assert "PASS: 0/1" not in out and "geomean speedup" not in out


WORKER = textwrap.dedent("""
    import json, os, sys, time
    from tilestudio.core.validate_child import gpu_turn
    log = []
    for i in range(6):
        exclusive = i % 2 == 0
        with gpu_turn(exclusive=exclusive):
            start = time.monotonic(); time.sleep(0.03); end = time.monotonic()
        log.append([exclusive, start, end])
    print(json.dumps(log))
""")


def test_main_runs_report_each_file_as_it_finishes(tmp_path, capsys):
    """--main-jobs prints a line per finished __main__ run (an outer time limit still leaves the lines so far)."""
    good = corpus_files("op_relu")[0] if corpus_files("op_relu") else corpus_files("op_")[0]
    rc = main(["bench", str(good), "--no-dry-run", "--no-validate", "--main-jobs", "1", "--jobs", "1",
               "--out-dir", str(tmp_path), "--timeout", "120"])
    _, err = capsys.readouterr()
    assert rc == 0
    line = next(l for l in err.splitlines() if l.startswith("[1/1] main "))
    assert good.name in line and line.split(": ", 1)[1].split()[0] in ("PASS", "FAIL", "ERR(1)", "ERR(2)")
    assert "composed __main__ blocks: PASS" in err


def test_gpu_lock_keeps_timed_regions_exclusive(tmp_path):
    env = {"TILESTUDIO_GPU_LOCK": str(tmp_path / "gpu.lock")}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, **env}) for _ in range(4)]
    logs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    intervals = [(who, ex, s, e) for who, log in enumerate(logs) for ex, s, e in log]
    for who, ex, s, e in intervals:
        if not ex:
            continue
        for other, _, s2, e2 in intervals:
            if other != who:
                assert e <= s2 or e2 <= s, "an exclusive (timed) region overlapped another validation's GPU work"


def test_shared_turns_coexist_and_an_exclusive_one_waits(tmp_path, monkeypatch):
    from tilestudio.core.validate_child import gpu_turn

    lock = str(tmp_path / "gpu.lock")
    monkeypatch.setenv("TILESTUDIO_GPU_LOCK", lock)
    probe = "from tilestudio.core.validate_child import gpu_turn\nwith gpu_turn(exclusive={}):\n    print('in')"
    env = {**os.environ, "TILESTUDIO_GPU_LOCK": lock}
    with gpu_turn(exclusive=False):
        shared = subprocess.run([sys.executable, "-c", probe.format(False)], env=env, capture_output=True,
                                text=True, timeout=60)
        assert shared.stdout.strip() == "in"
        waiting = subprocess.Popen([sys.executable, "-c", probe.format(True)], env=env, stdout=subprocess.PIPE,
                                   text=True)
        try:
            waiting.wait(timeout=3)
            raise AssertionError("an exclusive turn ran while a shared one was held")
        except subprocess.TimeoutExpired:
            pass
    assert waiting.communicate(timeout=60)[0].strip() == "in"


def test_composed_main_runs_through_dash_c_so_a_frozen_app_can_run_it(tmp_path):
    """The __main__ run uses `EXE -c ...` (the frozen launcher dispatches -c; a bare file would open the GUI)."""
    from tilestudio.core.bench import run_main

    composed = tmp_path / "m_cutile.py"
    composed.write_text('import sys\nif __name__ == "__main__":\n    print("FAIL - max diff: 3.0", sys.argv[0])\n')
    row = {"composed": str(composed)}
    run_main(row, timeout=60)
    assert row["main"] == "FAIL"
    crash = tmp_path / "crash_cutile.py"
    crash.write_text("raise SystemExit('boom at import')\n")
    row = {"composed": str(crash)}
    run_main(row, timeout=60)
    assert row["main"] == "ERR(1)" and "boom" in row["main_error"]


def test_rows_carry_device_time_beside_wall_clock():
    """A row's timing columns: wall clock and device time per forward, the speed-ups over eager and torch.compile
    (wall) and over eager in device time, which separates a slow kernel from a launch-bound forward."""
    from tilestudio.core.bench import TIMING_FIELDS, timing_fields

    empty = timing_fields({})
    assert list(empty) == TIMING_FIELDS and all(v is None for v in empty.values())
    row = timing_fields({"eager_ms": 0.6, "eager_device_ms": 0.13, "cutile_ms": 0.5, "cutile_device_ms": 0.05,
                         "compile_ms": 0.4, "compile_device_ms": 0.08, "speedup_vs_eager": 1.2,
                         "speedup_vs_compile": 0.8, "eager_host_ms": 0.5})
    assert row["speedup_eager"] == 1.2 and row["speedup_compile"] == 0.8
    assert abs(row["speedup_eager_device"] - 2.6) < 1e-9 and row["cutile_device_ms"] == 0.05
    assert "eager_host_ms" not in row
    assert timing_fields({"eager_device_ms": 0.1})["speedup_eager_device"] is None  # no cuTile time: no ratio
