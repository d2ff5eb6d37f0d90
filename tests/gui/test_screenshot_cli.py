"""`tilestudio screenshot` renders the main window offscreen into a PNG."""

import os
import subprocess
import sys

from gui_helpers import MODELS
from PySide6.QtGui import QImage

MODEL = MODELS / "arch_transformer_encoder_block.py"


def _run(*args):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, "-m", "tilestudio", "screenshot", *args], capture_output=True,
                          text=True, env=env, timeout=240)


def test_screenshot_writes_a_png_of_the_window(tmp_path):
    out = tmp_path / "shot.png"
    result = _run(str(MODEL), "-o", str(out), "--size", "1200x800")
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1200, 800)
    assert out.stat().st_size > 20_000  # a real picture, not a blank one


def test_screenshot_of_a_bad_model_still_writes_the_picture_and_exits_2(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def get_inputs(:\n")
    out = tmp_path / "bad.png"
    result = _run(str(bad), "-o", str(out))
    assert result.returncode == 2
    assert "syntax error" in result.stderr
    assert out.stat().st_size > 0

