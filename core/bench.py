"""`tilestudio bench PATH...`: analyze → compose → dry run → validate → time, for many models; one table.

CPU stages (analysis, composition, purity, dry run) run in parallel first. GPU validations then run `--gpu-jobs`
at a time (default 1): with more than one, the children share a lock file (TILESTUDIO_GPU_LOCK, see
validate_child.gpu_turn) that makes every timed region exclusive on the GPU while imports, JIT compilation and
torch.compile run in parallel. One model's failure never stops the batch.
"""

from __future__ import annotations

import csv
import glob
import json
import math
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from .errors import UserError


def _expand(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(glob.glob(os.path.join(p, "*.py")))
        else:
            out += sorted(glob.glob(p)) or [p]
    return out


TIMING_FIELDS = ["eager_ms", "compile_ms", "cutile_ms", "speedup_eager", "speedup_compile", "eager_device_ms",
                 "compile_device_ms", "cutile_device_ms", "speedup_eager_device"]


def timing_fields(t: dict[str, Any]) -> dict[str, Any]:
    """A bench row's timing columns from a validation's timings (all None before one ran): the wall clock of a
    forward (what a caller waits for, host enqueue included) and its device time (GPU work only), each for eager,
    torch.compile and cuTile, with the speed-ups over eager and torch.compile (wall) and over eager (device). The
    device figure tells a slow kernel from a forward that is only launch-bound."""
    row = {k: t.get(k) for k in ("eager_ms", "compile_ms", "cutile_ms", "eager_device_ms", "compile_device_ms",
                                 "cutile_device_ms")}
    row["speedup_eager"], row["speedup_compile"] = t.get("speedup_vs_eager"), t.get("speedup_vs_compile")
    e, c = row["eager_device_ms"], row["cutile_device_ms"]
    row["speedup_eager_device"] = e / c if e and c else None
    return {k: row[k] for k in TIMING_FIELDS}


def compose_stage(path: str, out_dir: str, dry: bool) -> dict[str, Any]:
    from .analyze import analyze_file
    from .composer import compose_model
    from .loader import run_child
    from .purity import check_text

    row: dict[str, Any] = {"model": os.path.basename(path), "kernels": 0, "pure": False, "status": "error",
                           "max_diff": None, **timing_fields({}), "error": ""}
    try:
        analysis = analyze_file(path)
        dec = analysis.decomposition
        row["kernels"] = len(dec.kernels)
        composed = compose_model(path, dec)
        out = os.path.join(out_dir, os.path.basename(path).removesuffix(".py") + "_cutile.py")
        with open(out, "w", encoding="utf-8") as f:
            f.write(composed.text)
        row["composed"] = out
        row["specs_json"] = dec.model_dump_json()
        with open(path, encoding="utf-8") as f:
            diags = check_text(composed.text, f.read())
        row["pure"] = not diags
        if diags:
            row["error"] = f"{diags[0].rule} {diags[0].message}"[:120]
        if dry:
            report = run_child("dryrun", out, timeout_s=600).payload["report"]
            row["dry_run_ok"] = report["ok"]
            row["pure"] &= not report["violations"]
            if not report["ok"] and not row["error"]:
                bad = [r for r in report["launches"] if not r["ok"]]
                row["error"] = ("compile: " + bad[0]["message"].splitlines()[0] if bad else
                                str(report["error"] or report["violations"] or report["output_mismatches"]))[:120]
        row["status"] = "composed"
    except UserError as err:
        row["error"] = err.info.one_line()[:160]
    except Exception as exc:  # noqa: BLE001 - one model never stops the batch
        row["error"] = f"internal: {type(exc).__name__}: {exc}"[:160]
    return row


def _gpu_stage(row: dict[str, Any], args) -> None:
    from .validate import Validation

    run = Validation(row["composed"], timeout_s=args.timeout, reps=args.reps,
                     torch_compile=not args.no_torch_compile, specs_json=row.get("specs_json"))
    with _LOCK:
        if _STOP.is_set():
            row["status"], row["error"] = "cancelled", "batch interrupted"
            return
        _ACTIVE.add(run)
    try:
        for _ in run.run():
            pass
    finally:
        with _LOCK:
            _ACTIVE.discard(run)
    rep = run.report
    row["status"] = rep.status
    if rep.end_to_end:
        row["max_diff"] = rep.end_to_end.get("max_diff")
    row.update(timing_fields(rep.timings))
    bad = [k for k in rep.kernels if k.ok is False]
    if bad and not row["error"]:
        row["error"] = f"kernel {bad[0].id}: {bad[0].message}"[:160]
    if rep.errors and not row["error"]:
        row["error"] = f"{rep.errors[0].get('kind')}: {rep.errors[0].get('message', '')}"[:160]
    if rep.status == "no_gpu":
        row["error"] = "no GPU: validation skipped (dry run only)"


def run_main(row: dict[str, Any], timeout: float) -> None:
    """Run the composed file's own `__main__` validation block (also warms cuTile's compile cache)."""
    import subprocess

    try:
        # `-c runpy` rather than `python FILE`: the frozen app's launcher dispatches -m/-c, while a bare file
        # argument would open the GUI on it
        run_file = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
        r = subprocess.run([sys.executable, "-c", run_file, row["composed"]], capture_output=True, text=True,
                           timeout=timeout,
                           start_new_session=True)
        lines = [l for l in r.stdout.splitlines() if l.startswith(("PASS", "FAIL"))]
        row["main"] = lines[0].split()[0] if lines else f"ERR({r.returncode})"
        if not lines:
            tail = [l for l in r.stderr.splitlines() if l.strip()][-1:] or [""]
            row["main_error"] = tail[0][:160]
    except subprocess.TimeoutExpired:
        row["main"] = "TIMEOUT"


_LOCK = threading.Lock()
_ACTIVE: set = set()  # validations in flight, cancelled together on SIGINT/SIGTERM
_STOP = threading.Event()


def _cancel_all() -> None:
    with _LOCK:
        _STOP.set()
        for run in list(_ACTIVE):
            run.cancel()


def _validate_one(row: dict[str, Any], args) -> dict[str, Any]:
    if row.get("composed"):
        try:
            _gpu_stage(row, args)
        except Exception as exc:  # noqa: BLE001 - one model never stops the batch
            row["status"], row["error"] = "error", f"validation: {type(exc).__name__}: {exc}"[:160]
    return row


def _progress(done: int, total: int, row: dict[str, Any]) -> None:
    """One line per model on a log; a redrawn bar plus the latest result on a terminal."""
    line = (f"{row['model']}: {row['status']} max_diff={_fmt(row['max_diff'], '.2e')} eager={_fmt(row['eager_ms'])} "
            f"compile={_fmt(row['compile_ms'])} cutile={_fmt(row['cutile_ms'])} {row['error'][:80]}")
    if sys.stderr.isatty():
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r\033[K[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {line[:90]}")
        if done == total:
            sys.stderr.write("\n")
    else:
        sys.stderr.write(f"[{done}/{total}] validated {line}\n")
    sys.stderr.flush()


def _validate_all(rows: list[dict[str, Any]], args, out_dir: str) -> None:
    jobs = max(1, getattr(args, "gpu_jobs", 1) or 1)
    if jobs > 1:
        os.environ["TILESTUDIO_GPU_LOCK"] = os.path.join(out_dir, ".gpu.lock")
    from .cli import cancel_on_signals

    _STOP.clear()
    try:
        with cancel_on_signals(_cancel_all), ThreadPoolExecutor(jobs) as pool:
            futures = [pool.submit(_validate_one, r, args) for r in rows]
            for done, fut in enumerate(as_completed(futures), 1):
                _progress(done, len(rows), fut.result())
    finally:
        if jobs > 1:
            os.environ.pop("TILESTUDIO_GPU_LOCK", None)


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _fmt(v: Any, spec: str = ".3f") -> str:
    return "-" if v is None else (format(v, spec) if isinstance(v, float) else str(v))


def run_bench(args) -> int:
    files = _expand(args.paths)
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="tilestudio-bench-")
    os.makedirs(out_dir, exist_ok=True)
    jobs = args.jobs or (os.cpu_count() or 2)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = [None] * len(files)  # type: ignore[list-item]
    with ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(compose_stage, f, out_dir, not args.no_dry_run): i for i, f in enumerate(files)}
        for n, fut in enumerate(futures, 1):
            i = futures[fut]
            rows[i] = fut.result()
            print(f"[{n}/{len(files)}] composed {rows[i]['model']}: {rows[i]['status']}"
                  f"{' - ' + rows[i]['error'] if rows[i]['error'] else ''}", file=sys.stderr, flush=True)
    if args.main_jobs:
        ready = [r for r in rows if r.get("composed")]
        with ThreadPoolExecutor(args.main_jobs) as pool:
            futures = {pool.submit(run_main, r, args.timeout): r for r in ready}
            # a line per finished main: a run stopped by an outer time limit still shows how far it got
            for n, fut in enumerate(as_completed(futures), 1):
                fut.result()
                r = futures[fut]
                print(f"[{n}/{len(ready)}] main {r['model']}: {r.get('main')} {r.get('main_error', '')}".rstrip(),
                      file=sys.stderr, flush=True)
        print(f"composed __main__ blocks: PASS {sum(r.get('main') == 'PASS' for r in rows)}/{len(rows)}",
              file=sys.stderr, flush=True)
    if not args.no_validate:
        _validate_all(rows, args, out_dir)
    header = ["model", "kernels", "pure", "main", "status", "max_diff"] + TIMING_FIELDS
    print(f"{'model':42s} {'kern':>4s} {'pure':>4s} {'main':>5s} {'result':>7s} {'max diff':>9s} {'eager ms':>9s} "
          f"{'compile ms':>10s} {'cuTile ms':>9s} {'vs eager':>8s} {'vs comp.':>8s} {'device vs eager':>15s}  note")
    for r in rows:
        print(f"{r['model'][:42]:42s} {r['kernels']:4d} {'yes' if r['pure'] else 'no':>4s} {r.get('main', '-')[:5]:>5s} "
              f"{r['status']:>7s} "
              f"{_fmt(r['max_diff'], '.2e'):>9s} {_fmt(r['eager_ms']):>9s} {_fmt(r['compile_ms']):>10s} "
              f"{_fmt(r['cutile_ms']):>9s} {_fmt(r['speedup_eager'], '.2f'):>8s} "
              f"{_fmt(r['speedup_compile'], '.2f'):>8s} {_fmt(r['speedup_eager_device'], '.2f'):>15s}  "
              f"{r['error'][:60]}")
    n = len(rows)
    passed = [r for r in rows if r["status"] == "pass"]
    fast1 = [r for r in passed if (r["speedup_eager"] or 0) > 1.0]
    ge = _geomean([r["speedup_eager"] for r in passed])
    gc = _geomean([r["speedup_compile"] for r in passed])
    gd = _geomean([r["speedup_eager_device"] for r in passed])
    print()
    if args.main_jobs:
        print(f"composed files' own __main__: PASS {sum(r.get('main') == 'PASS' for r in rows)}/{n}")
    wall = f"wall {time.perf_counter() - start:.0f} s"
    if args.no_validate:  # nothing was validated or timed: no PASS rate or speed-ups to report
        print(f"models: {n} | pure: {sum(r['pure'] for r in rows)}/{n} | validation skipped (--no-validate) | {wall}")
    else:
        print(f"models: {n} | pure: {sum(r['pure'] for r in rows)}/{n} | PASS: {len(passed)}/{n} "
              f"({100 * len(passed) / max(n, 1):.0f}%) | fast_1 (correct and faster than eager): "
              f"{len(fast1)}/{n} ({100 * len(fast1) / max(n, 1):.0f}%)")
        print(f"geomean speedup over passing models: vs eager {_fmt(ge, '.2f')}x | vs torch.compile "
              f"{_fmt(gc, '.2f')}x | vs eager in device time {_fmt(gd, '.2f')}x | {wall}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump([{k: v for k, v in r.items() if k != "specs_json"} for r in rows], f, indent=2, default=str)
    if args.csv_out:
        with open(args.csv_out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header + ["error"], extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    return 0
