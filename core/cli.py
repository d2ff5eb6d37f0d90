"""The `tilestudio` command line. Every command is a thin shell over core functions the GUI calls too.

Exit codes: 0 ok, 1 verification mismatch / violations, 2 bad input or error.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
import sys

from .errors import UserError
from .loader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", dest="model_name", default=None,
                   help="which nn.Module class to analyse when the file has several (default: Model)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds the user code may run")
    p.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB, help="memory cap of the child process")
    p.add_argument("--verbose", action="store_true", help="print tracebacks of errors")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tilestudio", description="PyTorch model → pure cuTile .py workbench")
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("open", help="launch the app (optionally on a model file or a .tstudio project)")
    p.add_argument("model_file", nargs="?")

    p = sub.add_parser("analyze", help="decompose a model into kernel specs")
    p.add_argument("model_file")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("-o", "--output", default=None, help="write the specs here instead of stdout")
    p.add_argument("--verify", action="store_true",
                   help="run the per-kernel references against the real model on the CPU")
    _add_run_options(p)

    p = sub.add_parser("screenshot", help="open a model in the main window offscreen and save a PNG of it")
    p.add_argument("model_file")
    p.add_argument("-o", "--output", required=True, help="PNG file to write")
    p.add_argument("--kernel", default=None, help="kernel id to select (default: the first kernel)")
    p.add_argument("--size", default="1600x1000", help="window size WIDTHxHEIGHT (default 1600x1000)")
    p.add_argument("--theme", choices=["dark", "light"], default=None, help="colour theme (default dark)")
    _add_run_options(p)

    p = sub.add_parser("compose", help="analyze + generate kernels + compose one runnable .py")
    p.add_argument("model_file")
    p.add_argument("-o", "--output", required=True)
    _add_run_options(p)

    p = sub.add_parser("check", help="purity diagnostics of a composed file (and a dry run with --dry-run)")
    p.add_argument("composed_file")
    p.add_argument("--dry-run", action="store_true", help="trace on fake tensors and AOT-compile every kernel")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--model-file", default=None, help="compare the original block with this model file")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB)
    p.add_argument("--verbose", action="store_true")

    p = sub.add_parser("validate", help="run a composed file on the local GPU: per-kernel + end-to-end + timings")
    p.add_argument("composed_file")
    p.add_argument("--json", action="store_true", help="print the event stream as JSON lines, then the report")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--atol", type=float, default=1e-2)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--no-torch-compile", action="store_true", help="skip the torch.compile baseline")
    p.add_argument("--verbose", action="store_true")

    p = sub.add_parser("bench", help="analyze, compose, dry-run and validate many models; print a table")
    p.add_argument("paths", nargs="+")
    p.add_argument("--json", dest="json_out", default=None)
    p.add_argument("--csv", dest="csv_out", default=None)
    p.add_argument("--out-dir", default=None, help="keep the composed files here")
    p.add_argument("--jobs", type=int, default=0, help="parallel CPU stages (default: CPU count)")
    p.add_argument("--no-dry-run", action="store_true")
    p.add_argument("--no-validate", action="store_true", help="stop after composing (and the __main__ runs)")
    p.add_argument("--main-jobs", type=int, default=0,
                   help="first run each composed file's own __main__ block, N at a time (warms the JIT cache)")
    p.add_argument("--gpu-jobs", type=int, default=1,
                   help="validations in flight at once; timed regions stay exclusive on the GPU (a shared lock)")
    p.add_argument("--no-torch-compile", action="store_true")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--verbose", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    if not argv or (argv[0] not in commands and not argv[0].startswith("-")):
        argv = ["open", *argv]
    args = parser.parse_args(argv)
    try:
        if args.command == "analyze":
            return _analyze(args)
        if args.command == "open":
            return _open(args)
        if args.command == "compose":
            return _compose(args)
        if args.command == "check":
            return _check(args)
        if args.command == "validate":
            return _validate(args)
        if args.command == "bench":
            from .bench import run_bench

            return run_bench(args)
        if args.command == "screenshot":
            return _screenshot(args)
    except UserError as err:
        print(err.info.one_line(), file=sys.stderr)
        if getattr(args, "verbose", False) and err.info.detail:
            print(err.info.detail, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    parser.print_help()
    return 2


def _write(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def _analyze(args: argparse.Namespace) -> int:
    from .analyze import analyze_file, verify_analysis
    from .render_text import render_json, render_text

    analysis = analyze_file(args.model_file, args.model_name, timeout_s=args.timeout, memory_mb=args.memory_mb)
    dec = analysis.decomposition
    _write(render_json(dec) if args.format == "json" else render_text(dec), args.output)
    if not args.verify:
        return 0
    report = verify_analysis(args.model_file, analysis, args.model_name, timeout_s=args.timeout,
                             memory_mb=args.memory_mb)
    return _print_verify(args.model_file, report)


def _print_verify(model_file: str, report: dict) -> int:
    for k in report["kernels"]:
        status = "ok" if k["ok"] else "MISMATCH"
        print(f"verify: kernel {k['id']}: {status} (max abs diff {k['max_abs_diff']:.3g}){' ' + k['note'] if k['note'] else ''}",
              file=sys.stderr)
    for o in report["outputs"]:
        status = "ok" if o["ok"] else "MISMATCH"
        print(f"verify: output {o['index']}: {status} (max abs diff {o['max_abs_diff']:.3g}){' ' + o['note'] if o['note'] else ''}",
              file=sys.stderr)
    if report["ok"]:
        print(f"verify: PASS - {len(report['kernels'])} kernel references match {model_file}", file=sys.stderr)
        return 0
    where = report.get("first_divergence")
    reason = f"first diverging kernel: {where}" if where else "the end-to-end output differs from Model.forward"
    print(f"{model_file}: verify FAIL - {reason}", file=sys.stderr)
    return 1


def _open(args: argparse.Namespace) -> int:
    try:
        from tilestudio.gui.app import run_app
    except ImportError as exc:
        print(f"tilestudio: the desktop app needs PySide6 ({exc}); install with: pip install 'tilestudio[gui]'",
              file=sys.stderr)
        return 2
    return run_app(args.model_file)


def _screenshot(args: argparse.Namespace) -> int:
    import os
    import re

    size = re.fullmatch(r"(\d+)[xX](\d+)", args.size)
    if not size:
        print(f"tilestudio: --size must look like 1600x1000, not {args.size!r}", file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        from tilestudio.gui.app import save_screenshot
    except ImportError as exc:
        print(f"tilestudio: screenshots need PySide6 ({exc}); install with: pip install 'tilestudio[gui]'",
              file=sys.stderr)
        return 2
    ok, message = save_screenshot(args.model_file, args.output, kernel=args.kernel, width=int(size.group(1)),
                                  height=int(size.group(2)), theme=args.theme, model_name=args.model_name,
                                  timeout_s=args.timeout, memory_mb=args.memory_mb)
    print(message, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 2


def _compose(args: argparse.Namespace) -> int:
    from .analyze import analyze_file
    from .composer import compose_model

    analysis = analyze_file(args.model_file, args.model_name, timeout_s=args.timeout, memory_mb=args.memory_mb)
    composed = compose_model(args.model_file, analysis.decomposition)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(composed.text)
    skeletons = [k for k in analysis.decomposition.kernels if k.unsupported]
    print(f"wrote {args.output}: {len(analysis.decomposition.kernels)} kernels"
          f"{f', {len(skeletons)} unsupported (skeletons)' if skeletons else ''}", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> int:
    import os

    from .errors import ErrorInfo
    from .purity import check_text

    path = args.composed_file
    if not os.path.isfile(path):
        raise UserError(ErrorInfo(kind="io", message="no such file", file=path))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    model_source = None
    if args.model_file:
        with open(args.model_file, encoding="utf-8") as f:
            model_source = f.read()
    diags = check_text(text, model_source)
    for d in diags:
        print(d.format(path) + (f" (hint: {d.hint})" if d.hint else ""))
    bad = any(d.severity == "error" for d in diags)
    if args.dry_run and not any(d.rule == "PUR014" for d in diags):
        from .loader import run_child

        result = run_child("dryrun", path, extra=["--arch", args.arch], timeout_s=args.timeout,
                           memory_mb=args.memory_mb)
        bad |= not _print_dry_run(path, result.payload["report"])
    print(f"{path}: {'FAIL' if bad else 'PASS'} ({len(diags)} diagnostic(s))", file=sys.stderr)
    return 1 if bad else 0


def _print_dry_run(path: str, report: dict) -> bool:
    print(f"dry run ({report['arch']}): {len(report['launches'])} launch(es)")
    print(f"  {'kernel':40s} {'grid':18s} {'compile':>8s}  arguments")
    for row in report["launches"]:
        status = f"{row['compile_s']:.2f}s" if row["ok"] else "ERROR"
        print(f"  {row['kernel']:40s} {str(tuple(row['grid'])):18s} {status:>8s}  {', '.join(row['args'])}")
        if not row["ok"]:
            print(f"{path}: compile error in {row['kernel']}: {row['message'].splitlines()[0]}")
    for v in report["violations"]:
        print(f"{path}:{v['line'] or 1}:1: PUR020 {v['op']} dispatched outside a kernel (PyTorch compute at run time)")
    if report["error"]:
        print(f"{path}:{report['error']['line'] or 1}:1: DRY001 forward raised: {report['error']['message']}")
    for note in report["output_mismatches"]:
        print(f"{path}: DRY002 {note}")
    return bool(report["ok"])


@contextlib.contextmanager
def cancel_on_signals(cancel):
    """While the block runs, SIGINT/SIGTERM call `cancel` (which kills child process groups) instead of killing us."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: cancel()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _validate(args: argparse.Namespace) -> int:
    import json

    from .validate import Validation

    run = Validation(args.composed_file, timeout_s=args.timeout, atol=args.atol, rtol=args.rtol, reps=args.reps,
                     torch_compile=not args.no_torch_compile)
    with cancel_on_signals(run.cancel):  # Ctrl+C / SIGTERM kill the GPU child's whole group, then report
        for ev in run.run():
            if args.json:
                print(json.dumps(ev, default=str), flush=True)
            else:
                line = format_event(ev)
                if line:
                    print(line, flush=True)
    report = run.report
    if args.json:
        print(json.dumps({"event": "report", **report.model_dump(mode="json")}))
    else:
        print_report(report)
    return {"pass": 0, "fail": 1}.get(report.status, 2)


def format_event(ev: dict) -> str | None:
    kind = ev.get("event")
    if kind == "environment":
        if not ev.get("cuda_available"):
            return None
        return (f"GPU {ev.get('gpu')} ({ev.get('compute_capability')}), driver {ev.get('driver')}, torch "
                f"{ev.get('torch')}, cuda.tile {ev.get('cuda_tile')}, tileiras {'found' if ev.get('tileiras') else 'NOT FOUND'}")
    if kind == "compile":
        return f"  compile {ev['kernel']}: {ev['seconds']:.2f} s"
    if kind == "kernel_check":
        status = "ok" if ev["ok"] else "FAIL"
        return (f"  check   {ev['kernel']}: {status} (max abs {ev['max_abs_err']:.3g}, rel {ev['max_rel_err']:.3g})"
                + (f" {ev['message']}" if ev.get("message") else ""))
    if kind == "end_to_end":
        return f"{'PASS' if ev['ok'] else 'FAIL'} - max diff: {ev['max_diff']}"
    if kind in ("error", "timeout", "crash", "garbage", "cancelled"):
        where = f" [{ev['kernel']}]" if ev.get("kernel") else ""
        line = f" (line {ev['line']})" if ev.get("line") else ""
        return f"{kind}{'/' + ev['kind'] if ev.get('kind') and ev.get('kind') != kind else ''}{where}{line}: {ev.get('message', '')}"
    if kind == "dry_run":
        return f"dry run instead: {'PASS' if ev.get('ok') else 'FAIL'} ({len(ev.get('launches', []))} launches)"
    return None


def timing_details(t: dict) -> list[str]:
    """Lines under the wall-clock summary: device work and host enqueue time per forward (gpu_timing), whether
    the cuTile forward is launch-bound, and its time as one CUDA graph (or why it could not be captured)."""
    lines = []
    names = [("eager", "eager"), ("cutile", "cuTile"), ("compile", "torch.compile")]
    split = [f"{label} {t[f'{key}_device_ms']:.3f} / {t[f'{key}_host_ms']:.3f}" for key, label in names
             if t.get(f"{key}_device_ms") is not None and t.get(f"{key}_host_ms") is not None]
    if split:
        lines.append("device / host ms per forward: " + " | ".join(split))
    device, host = t.get("cutile_device_ms"), t.get("cutile_host_ms")
    if device is not None and host is not None and host > device:
        lines.append(f"the cuTile forward is launch-bound: the host takes {host:.3f} ms to enqueue {device:.3f} ms of "
                     "GPU work")
    if t.get("cutile_graph_ms") is not None:
        lines.append(f"cuTile as one CUDA graph: {t['cutile_graph_ms']:.3f} ms")
    elif t.get("cutile_graph_error"):
        lines.append(f"cuTile as one CUDA graph: not captured ({t['cutile_graph_error']})")
    return lines


def print_report(report) -> None:
    t = report.timings
    if t:
        line = f"eager {t['eager_ms']:.3f} ms | cuTile {t['cutile_ms']:.3f} ms ({t['speedup_vs_eager']:.2f}x vs eager)"
        if "compile_ms" in t:
            line += f" | torch.compile {t['compile_ms']:.3f} ms ({t['speedup_vs_compile']:.2f}x vs compile)"
        print(line)
        for extra in timing_details(t):
            print(extra)
    print(f"{report.composed_file}: {report.status.upper()}", file=sys.stderr)
