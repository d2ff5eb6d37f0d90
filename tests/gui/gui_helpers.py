"""Shared constants and waits for the GUI tests (a plain module: conftest.py names clash across folders)."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "models"
ANALYSIS_TIMEOUT_MS = 60_000


def wait_for_analysis(qtbot, win, timeout=ANALYSIS_TIMEOUT_MS):
    """Wait until the latest analysis has delivered its result (success or problem)."""
    qtbot.waitUntil(lambda: not win.session.busy and (win.session.analysis or win.session.error) is not None,
                    timeout=timeout)
