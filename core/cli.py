"""The `tilestudio` command line. Every command is a thin shell over core functions the GUI calls too.

Exit codes: 0 ok, 1 verification mismatch / violations, 2 bad input or error.
"""

from __future__ import annotations

import argparse
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

    p = sub.add_parser("open", help="launch the app (optionally on a model file)")
    p.add_argument("model_file", nargs="?")

    p = sub.add_parser("analyze", help="decompose a model into kernel specs")
    p.add_argument("model_file")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("-o", "--output", default=None, help="write the specs here instead of stdout")
    p.add_argument("--verify", action="store_true",
                   help="run the per-kernel references against the real model on the CPU")
    _add_run_options(p)
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
