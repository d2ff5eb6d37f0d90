"""The About box: what is running, so that bug reports carry versions."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

from tilestudio import __version__ as tilestudio_version


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cuda_tile_version() -> str:
    # Metadata, not an import: importing cuda.tile would initialise CUDA in the GUI process.
    try:
        found = importlib.util.find_spec("cuda.tile") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return "not installed"
    return _dist_version("cuda-tile") or _dist_version("cuda_tile") or "installed (version unknown)"


def versions() -> dict[str, str]:
    return {
        "TileStudio": tilestudio_version,
        "Python": platform.python_version(),
        "PyTorch": _dist_version("torch") or "not installed",
        "PySide6": f"{pyside_version} (Qt {qVersion()})",
        "cuda.tile": _cuda_tile_version(),
        "pydantic": _dist_version("pydantic") or "not installed",
    }


def about_html() -> str:
    rows = "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{v}</td></tr>" for k, v in versions().items())
    return ("<h3>TileStudio</h3><p>A workbench that turns a PyTorch model file into one runnable, validated, "
            f"pure-cuTile <code>.py</code> file.</p><table>{rows}</table>")


def show_about(parent: QWidget) -> QMessageBox:
    box = QMessageBox(parent)
    box.setWindowTitle("About TileStudio")
    box.setIconPixmap(parent.windowIcon().pixmap(64, 64))
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(about_html())
    box.setStandardButtons(QMessageBox.StandardButton.Ok)
    box.setModal(False)
    box.open()
    return box
