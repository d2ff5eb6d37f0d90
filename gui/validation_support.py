"""Qt-free helpers of the Validation pane: the validate command line, killing a process tree, texts of events."""

from __future__ import annotations

import json
import os
import signal

from .settings_dialog import AppSettings


def validate_command(python: str, composed_path: str, settings: AppSettings) -> list[str]:
    """The real runner: the CLI's validate command, streaming JSON lines."""
    return [python, "-m", "tilestudio", "validate", composed_path, "--json", "--timeout",
            f"{settings.validation_timeout_s:g}", "--atol", f"{settings.atol:g}", "--rtol", f"{settings.rtol:g}"]


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (Linux /proc; just `pid` elsewhere). Found by parent id, so children that
    started their own session (the GPU child) are included."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [pid]
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in tree:
            continue
        tree.append(p)
        todo.extend(children.get(p, []))
    return tree


def kill_tree(pid: int) -> list[int]:
    """Stop the tree first (so nothing forks while we look), then SIGKILL every process in it."""
    if not hasattr(signal, "SIGSTOP"):  # Windows: QProcess.kill() is all there is
        return [pid]
    frozen: list[int] = []
    for _ in range(3):
        tree = [p for p in process_tree(pid) if p not in frozen]
        if not tree:
            break
        for p in tree:
            _signal(p, signal.SIGSTOP)
        frozen += tree
    for p in frozen:
        _signal(p, signal.SIGKILL)
    return frozen


def _signal(pid: int, sig: int) -> None:
    if pid <= 1 or pid == os.getpid():
        return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def num(value, fmt: str) -> str:
    if value is None:
        return ""
    try:
        return format(float(value), fmt)
    except (TypeError, ValueError):
        return str(value)


def log_kind_for(status) -> str:
    return {"pass": "pass", "fail": "fail", "no_gpu": "warning"}.get(str(status), "error")


def timings_text(t: dict) -> str:
    parts = [f"eager {num(t.get('eager_ms'), '.3f')} ms"]
    if t.get("compile_ms") is not None:
        parts.append(f"torch.compile {num(t.get('compile_ms'), '.3f')} ms")
    parts.append(f"cuTile {num(t.get('cutile_ms'), '.3f')} ms")
    speed = []
    if t.get("speedup_vs_eager") is not None:
        speed.append(f"{t['speedup_vs_eager']:.2f}× vs eager")
    if t.get("speedup_vs_compile") is not None:
        speed.append(f"{t['speedup_vs_compile']:.2f}× vs torch.compile")
    return " | ".join(parts) + (f"  ({', '.join(speed)})" if speed else "")


def dry_run_text(d: dict) -> str:
    launches = d.get("launches", []) or []
    failed = sum(1 for row in launches if not row.get("ok"))
    text = f"dry run ({d.get('arch', '?')}): {'PASS' if d.get('ok') else 'FAIL'}, {len(launches)} launches"
    text += f", {failed} compile error{'s' if failed != 1 else ''}" if failed else ", all compiled"
    if d.get("violations"):
        text += f", {len(d['violations'])} purity violations"
    if d.get("error"):
        text += f"; error: {d['error'].get('message', '')}"
    return text


def quote(arg: str) -> str:
    return arg if arg and all(c.isalnum() or c in "-_./=:,+@" for c in arg) else json.dumps(arg)
